//! SIGINT and SIGTERM for the commands that drive runs.
//!
//! The first signal asks every run this process drives to stop at its next
//! step boundary ([`troupe_runtime::Interrupt`]): effects in flight get a
//! grace period, model calls and people's tasks are abandoned unrecorded,
//! the journal is flushed and the lease given back, so the same command (or
//! `troupe resume`) continues at once. The second signal ends the process
//! where it stands, with the conventional status (130 or 143); its lease is
//! then taken at once by the next claimant on this machine, which sees its
//! process gone.
//!
//! Only the CLI knows signals: libraries see an [`Interrupt`] handle.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;
use troupe_runtime::Interrupt;

/// How long an effect or tool call in flight may still run once a run is
/// interrupted; after it, the step stays recorded as started (as after a
/// crash) and is settled when the run is resumed.
pub const GRACE: Duration = troupe_host::DEFAULT_GRACE;

/// The process's one interrupt handle, shared by every host it opens.
pub fn interrupt() -> Interrupt {
    static HANDLE: OnceLock<Interrupt> = OnceLock::new();
    HANDLE.get_or_init(|| Interrupt::new(GRACE)).clone()
}

/// The first signal received (its number), or 0.
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// The signal that interrupted this process's runs, if one did: SIGINT (2)
/// or SIGTERM (15).
pub fn received() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        n => Some(n),
    }
}

const SIGINT: i32 = 2;
const SIGTERM: i32 = 15;

/// Resolves at the first SIGINT or SIGTERM, after triggering [`interrupt`]
/// and saying what happens next; from then on a second signal ends the
/// process at once. Must be polled inside a tokio runtime with signals
/// enabled; it installs the handlers when first polled.
pub async fn first_signal(what: &'static str) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        // No handler could be installed: the default disposition stays,
        // and a signal ends the process as it always did.
        return std::future::pending().await;
    };
    let first = tokio::select! {
        _ = int.recv() => SIGINT,
        _ = term.recv() => SIGTERM,
    };
    RECEIVED.store(first, Ordering::SeqCst);
    interrupt().trigger();
    crate::note!(
        "{}: stopping {what} at the next step boundary (effects in flight get {}s); signal again to stop at once",
        name(first),
        GRACE.as_secs()
    );
    tokio::spawn(async move {
        let second = tokio::select! {
            _ = int.recv() => SIGINT,
            _ = term.recv() => SIGTERM,
        };
        crate::note!("{}: stopping at once", name(second));
        std::process::exit(128 + first);
    });
}

fn name(signal: i32) -> &'static str {
    match signal {
        SIGINT => "interrupted (SIGINT)",
        _ => "terminated (SIGTERM)",
    }
}

/// Runs `future` on a fresh runtime; the first SIGINT or SIGTERM meanwhile
/// interrupts the runs it drives (see the module doc).
pub fn block_on<F: std::future::Future>(
    what: &'static str,
    future: F,
) -> std::io::Result<F::Output> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    Ok(runtime.block_on(async {
        let watcher = tokio::spawn(first_signal(what));
        let output = future.await;
        watcher.abort();
        output
    }))
}
