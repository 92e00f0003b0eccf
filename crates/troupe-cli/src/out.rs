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

/// Writes `text` to the file `output` (saying so on stderr), or to stdout
/// without one: what `-o FILE` means for every command that takes it.
pub fn write_or_print(output: Option<&std::path::Path>, text: &str) -> anyhow::Result<()> {
    use anyhow::Context as _;
    match output {
        Some(out) => {
            std::fs::write(out, text).with_context(|| format!("cannot write {}", out.display()))?;
            crate::note!("wrote {}", out.display());
        }
        None => print(text)?,
    }
    Ok(())
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

/// Writes `text` and a newline to stderr, losing it if stderr is closed or
/// full: diagnostics and progress are best effort, and a long-lived
/// process (a worker, a server) must outlive whoever read its log
/// (`troupe worker 2>&1 | head`, a supervisor that went away), where
/// `eprintln!` would panic.
pub fn note(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes());
    let _ = err.write_all(b"\n");
}

/// Writes `text` to stderr as it is, best effort (see [`note`]).
pub fn note_raw(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// `eprintln!` through [`note`]: never panics.
#[macro_export]
macro_rules! note {
    ($($arg:tt)*) => {
        $crate::out::note(&format!($($arg)*))
    };
}
