//! [`Watched`]: a run's journal that verifies the run online and streams its
//! events, keeping none of them. It checks each event against ⟦P⟧ as it
//! happens ([`troupe_msc::Monitor`]), hands it to an optional sink (a
//! printer), and passes the durable records to an optional inner journal
//! (the store). So a run's memory does not grow with its history, whether
//! it is verified, printed, recorded, or all three.

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
            sink,
            inner,
        }
    }

    /// The verdict on the events so far: `Ok(events)` when they make a run
    /// of the workflow (with `prefix`, the prefix of one).
    pub fn verdict(&self, prefix: bool) -> Result<u64, String> {
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

    fn recorded(&self, key: &StepKey) -> Option<Recorded> {
        self.inner.as_ref().and_then(|j| j.recorded(key))
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
