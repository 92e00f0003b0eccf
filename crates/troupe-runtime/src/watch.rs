//! [`Watched`]: a run's journal that verifies the run online and streams its
//! events, keeping none of them. It checks each event against ⟦P⟧ as it
//! happens ([`troupe_msc::Monitor`]), hands it to an optional sink (a
//! printer), and passes the durable records to an optional inner journal
//! (the store). So a run's memory does not grow with its history, whether
//! it is verified, printed, recorded, or all three.

use crate::checkpoint::Checkpoint;
use crate::error::RunError;
use crate::journal::{Recorded, RunJournal, StepKey, StepKind};
use std::sync::{Arc, Mutex};
use troupe_check::Value;
use troupe_check::ir::LifelineId;
use troupe_llm::BoxFuture;
use troupe_msc::{Event, Monitor};

/// Where a run's events go as they happen (a printer).
pub trait EventSink: Send + Sync {
    fn event(&self, lifeline: LifelineId, event: &Event);
}

/// A journal that verifies, streams, and delegates. See the module docs.
pub struct Watched {
    monitor: Option<Mutex<Monitor>>,
    /// Why the run cannot be verified although a monitor was asked for (it
    /// resumed from a checkpoint taken without one).
    unverifiable: Mutex<Option<String>>,
    sink: Option<Arc<dyn EventSink>>,
    inner: Option<Arc<dyn RunJournal>>,
}

impl std::fmt::Debug for Watched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watched")
            .field("inner", &self.inner.is_some())
            .finish()
    }
}

impl Watched {
    /// `monitor`: `None` verifies nothing (`--no-verify`).
    pub fn new(
        monitor: Option<Monitor>,
        sink: Option<Arc<dyn EventSink>>,
        inner: Option<Arc<dyn RunJournal>>,
    ) -> Watched {
        Watched {
            monitor: monitor.map(Mutex::new),
            unverifiable: Mutex::new(None),
            sink,
            inner,
        }
    }

    /// Marks the run as not verified, for a reason found outside the
    /// monitor (a causal decision that is not its guard's value on the
    /// recorded chart): [`Watched::verdict`] reports it.
    pub fn reject(&self, why: String) {
        if let Ok(mut u) = self.unverifiable.lock()
            && u.is_none()
        {
            *u = Some(why);
        }
    }

    /// The verdict on the events so far: `Ok(events)` when they make a run
    /// of the workflow (with `prefix`, the prefix of one).
    pub fn verdict(&self, prefix: bool) -> Result<u64, String> {
        if let Ok(guard) = self.unverifiable.lock()
            && let Some(why) = guard.as_ref()
        {
            return Err(why.clone());
        }
        let mut m = self
            .monitor
            .as_ref()
            .ok_or_else(|| "this run was not verified".to_owned())?
            .lock()
            .map_err(|_| "the monitor was poisoned".to_owned())?;
        m.finish(prefix).map_err(|e| e.to_string())?;
        Ok(m.events())
    }
}

impl RunJournal for Watched {
    fn event(&self, lifeline: LifelineId, event: &Event) {
        if let Some(Ok(mut m)) = self.monitor.as_ref().map(Mutex::lock) {
            // The first failure is kept; `verdict` reports it.
            let _ = m.event(lifeline, event);
        }
        if let Some(s) = &self.sink {
            s.event(lifeline, event);
        }
        if let Some(j) = &self.inner {
            j.event(lifeline, event);
        }
    }

    fn wants_events(&self) -> bool {
        self.monitor.is_some()
            || self.sink.is_some()
            || self.inner.as_ref().is_some_and(|j| j.wants_events())
    }

    /// One lock of the monitor for the whole batch: a lock per event was
    /// a sixth of `troupe run`'s time in the counter loop.
    fn events(&self, events: &[(LifelineId, Event)]) {
        if let Some(Ok(mut m)) = self.monitor.as_ref().map(Mutex::lock) {
            for (lifeline, event) in events {
                if m.event(*lifeline, event).is_err() {
                    break;
                }
            }
        }
        if let Some(s) = &self.sink {
            for (lifeline, event) in events {
                s.event(*lifeline, event);
            }
        }
        if let Some(j) = &self.inner {
            j.events(events);
        }
    }

    fn recorded(&self, key: &StepKey) -> Option<Recorded> {
        self.inner.as_ref().and_then(|j| j.recorded(key))
    }

    fn llm_call(&self, key: &StepKey, call: &crate::journal::LlmCall) {
        if let Some(j) = &self.inner {
            j.llm_call(key, call);
        }
    }

    fn recorded_order(&self) -> Option<Vec<Vec<troupe_check::ir::StmtId>>> {
        self.inner.as_ref().and_then(|j| j.recorded_order())
    }

    fn checkpoint_every(&self) -> Option<u64> {
        self.inner.as_ref().and_then(|j| j.checkpoint_every())
    }

    /// Adds the monitor's state, so that a resumed run is verified from
    /// where this one is. A run that already failed verification takes no
    /// more checkpoints: resuming it replays from before the failure and
    /// fails again, instead of continuing from a state that hides it.
    fn checkpoint(&self, mut checkpoint: Checkpoint) -> Option<u64> {
        let inner = self.inner.as_ref()?;
        if let Some(m) = &self.monitor {
            let m = m.lock().ok()?;
            if m.failure().is_some() {
                return inner.checkpoint_every();
            }
            checkpoint.monitor = Some(m.snapshot());
        }
        inner.checkpoint(checkpoint)
    }

    /// Restores the monitor from the checkpoint's state, so the resumed run
    /// is verified from there on; without one (taken unverified), the run
    /// reports that it cannot be verified.
    fn resume_from(&self) -> Option<Checkpoint> {
        let checkpoint = self.inner.as_ref()?.resume_from()?;
        if let Some(m) = &self.monitor {
            let restored = match &checkpoint.monitor {
                Some(state) => m
                    .lock()
                    .map_err(|_| "the monitor was poisoned".to_owned())
                    .and_then(|mut m| m.restore(state).map(|r| *m = r)),
                None => Err("it resumed from a checkpoint taken without verification".to_owned()),
            };
            if let (Err(why), Ok(mut u)) = (restored, self.unverifiable.lock()) {
                *u = Some(format!("this run cannot be verified: {why}"));
            }
        }
        Some(checkpoint)
    }

    fn begin_effect(
        &self,
        key: &StepKey,
        kind: StepKind,
        args: &[Value],
    ) -> BoxFuture<'static, Result<(), String>> {
        match &self.inner {
            Some(j) => j.begin_effect(key, kind, args),
            None => Box::pin(async { Ok(()) }),
        }
    }

    fn record(
        &self,
        key: &StepKey,
        kind: StepKind,
        args: &[Value],
        outputs: &[Value],
    ) -> BoxFuture<'static, Result<(), String>> {
        match &self.inner {
            Some(j) => j.record(key, kind, args, outputs),
            None => Box::pin(async { Ok(()) }),
        }
    }

    fn forget_effect(&self, key: &StepKey) -> BoxFuture<'static, Result<(), String>> {
        match &self.inner {
            Some(j) => j.forget_effect(key),
            None => Box::pin(async { Ok(()) }),
        }
    }

    fn timer(
        &self,
        key: &StepKey,
        after: std::time::Duration,
    ) -> BoxFuture<'static, Result<std::time::Duration, String>> {
        match &self.inner {
            Some(j) => j.timer(key, after),
            None => Box::pin(async move { Ok(after) }),
        }
    }

    fn flush(&self) -> BoxFuture<'static, Result<(), String>> {
        match &self.inner {
            Some(j) => j.flush(),
            None => Box::pin(async { Ok(()) }),
        }
    }

    fn finish(
        &self,
        outcome: Result<&[(String, Value)], &RunError>,
    ) -> BoxFuture<'static, Result<(), String>> {
        match &self.inner {
            Some(j) => j.finish(outcome),
            None => Box::pin(async { Ok(()) }),
        }
    }
}
