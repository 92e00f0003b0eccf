//! A request to stop runs at their next step boundary (Ctrl-C, SIGTERM).
//!
//! One handle per process, shared by every run it drives: `trigger` is
//! seen by a run's scheduler before it starts its next step (an atomic
//! load per step) and wakes it where it waits for actions. An interrupted
//! run starts nothing more, gives the effects and tool calls in flight
//! [`Interrupt::grace`] to finish (their results are recorded as usual),
//! abandons model calls and people's tasks (a resumed run asks them again
//! under the same keys), makes its records durable and stops with
//! [`crate::RunError::Interrupted`]. An effect still running after the
//! grace stays recorded as started, as after a crash.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// See the module doc.
#[derive(Debug, Clone)]
pub struct Interrupt(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    set: AtomicBool,
    notify: tokio::sync::Notify,
    /// In milliseconds: a trigger may set it (a pause waits longer for
    /// effects than a Ctrl-C).
    grace_ms: AtomicU64,
}

impl Interrupt {
    /// A handle not yet triggered, whose runs give effects in flight
    /// `grace` to finish once it is.
    pub fn new(grace: Duration) -> Interrupt {
        Interrupt(Arc::new(Inner {
            set: AtomicBool::new(false),
            notify: tokio::sync::Notify::new(),
            grace_ms: AtomicU64::new(grace.as_millis().min(u64::MAX as u128) as u64),
        }))
    }

    /// Asks every run of this handle to stop at its next step boundary.
    pub fn trigger(&self) {
        self.0.set.store(true, Ordering::SeqCst);
        self.0.notify.notify_waiters();
    }

    /// As [`Interrupt::trigger`], giving effects in flight `grace` (unless
    /// it was triggered already).
    pub fn trigger_with(&self, grace: Duration) {
        if !self.is_set() {
            self.0.grace_ms.store(
                grace.as_millis().min(u64::MAX as u128) as u64,
                Ordering::SeqCst,
            );
        }
        self.trigger();
    }

    pub fn is_set(&self) -> bool {
        self.0.set.load(Ordering::Relaxed)
    }

    pub fn grace(&self) -> Duration {
        Duration::from_millis(self.0.grace_ms.load(Ordering::SeqCst))
    }

    /// Resolves once the handle is triggered (at once if it was).
    pub async fn wait(&self) {
        loop {
            let notified = self.0.notify.notified();
            tokio::pin!(notified);
            // Registered before the flag is read: a trigger in between
            // still wakes this waiter.
            notified.as_mut().enable();
            if self.0.set.load(Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
    }
}

/// Resolves when `interrupt` (if any) is triggered; never without one.
pub(crate) async fn triggered(interrupt: Option<&Interrupt>) {
    match interrupt {
        Some(i) => i.wait().await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_waiter_wakes_at_the_trigger_and_a_late_one_at_once() {
        let i = Interrupt::new(Duration::from_secs(1));
        assert!(!i.is_set());
        let waiter = tokio::spawn({
            let i = i.clone();
            async move { i.wait().await }
        });
        tokio::task::yield_now().await;
        i.trigger();
        waiter.await.unwrap();
        assert!(i.is_set());
        // Already triggered: resolves without another trigger.
        i.wait().await;
    }
}
