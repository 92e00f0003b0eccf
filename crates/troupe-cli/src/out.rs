//! Standard output at the edge. Every command writes through these, so
//! that a closed pipe (`troupe runs | head -1`) or a full disk is an error
//! the command returns, not a panic: `main` ends quietly on a broken pipe
//! (as ripgrep does) and reports other write errors.

use std::io::Write;

/// Writes `text` to stdout and flushes it.
pub fn print(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// Writes `text` and a newline to stdout.
pub fn println(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.write_all(b"\n")?;
    out.flush()
}

/// Whether an error is (or was caused by) a closed output pipe.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// `println!` to stdout through [`println`]: a write error is returned
/// (with `?`) instead of a panic.
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::out::println(&format!($($arg)*))?
    };
}
