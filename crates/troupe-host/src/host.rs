//! The [`Host`] itself: its store, configuration, backends, lease keeper and
//! caches, and the calls that need nothing more (the table of runs driven
//! here, the recorded programs, cancel, retry, delete, prune). Starting,
//! settling, driving and verifying runs are methods of `Host` too, each in
//! its own module beside this one.

use crate::{
    Backends, Cancel, Compiled, HostConfig, HostError, Notice, ToolsFactory, keeper, metrics,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use troupe_store::{RunStatus, Store};

/// What a recorded program is compiled from: its file, its workflow and
/// its source.
type SourceKey = (String, String, String);

/// The owner of durable runs in one store.
#[derive(Clone)]
pub struct Host {
    pub(crate) store: Store,
    pub(crate) config: HostConfig,
    pub(crate) backends: Backends,
    /// Recorded programs by run, for typed answers.
    pub(crate) recorded: Arc<Mutex<HashMap<i64, Arc<Compiled>>>>,
    /// Recorded programs by what they were compiled from (file, workflow,
    /// source): the runs of one version compile it once (a thousand
    /// concurrent durable runs spent 4% of their time compiling it again).
    sources: Arc<Mutex<HashMap<SourceKey, Arc<Compiled>>>>,
    /// Renews the leases of what this host drives, all together.
    pub(crate) keeper: Arc<keeper::Keeper>,
    /// The runs (and parts) this process drives now. A lease that expired
    /// while its holder was busy (a starved process) is claimable by
    /// anyone, this process included; a second drive of the same run under
    /// the same owner would pass every lease check and repeat effects, so
    /// it is refused here.
    driving: DrivenHere,
    /// What this host did as a worker, for metrics.
    pub(crate) counters: Arc<metrics::WorkerCounters>,
}

/// The runs, and parts `(run, Some(part))`, a host drives now.
type DrivenHere = Arc<Mutex<std::collections::HashSet<(i64, Option<u32>)>>>;

/// Marks a run (or part) as driven by this process while it lives.
pub(crate) struct Driving {
    set: DrivenHere,
    key: (i64, Option<u32>),
}

impl Drop for Driving {
    fn drop(&mut self) {
        if let Ok(mut s) = self.set.lock() {
            s.remove(&self.key);
        }
    }
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("store", &self.store)
            .field("config", &self.config)
            .finish()
    }
}

impl Host {
    pub fn new(store: Store, config: HostConfig, tools: Arc<dyn ToolsFactory>) -> Host {
        Host {
            keeper: keeper::Keeper::new(store.clone(), config.owner.clone(), config.lease),
            store,
            backends: Backends::new(config.clone(), tools),
            config,
            recorded: Arc::default(),
            sources: Arc::default(),
            driving: Arc::default(),
            counters: Arc::default(),
        }
    }

    /// Whether this process drives `run` (or its part `part`) now.
    pub fn is_driving(&self, run: i64, part: Option<u32>) -> bool {
        self.driving.lock().is_ok_and(|s| s.contains(&(run, part)))
    }

    /// Marks `run` (or its part) as driven here, unless it is already.
    pub(crate) fn start_driving(&self, run: i64, part: Option<u32>) -> Result<Driving, HostError> {
        let mut set = self
            .driving
            .lock()
            .map_err(|_| HostError::Config("the host's run table was poisoned".into()))?;
        if !set.insert((run, part)) {
            return Err(HostError::AlreadyDriving {
                run: Store::run_name(run),
            });
        }
        Ok(Driving {
            set: self.driving.clone(),
            key: (run, part),
        })
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn backends(&self) -> &Backends {
        &self.backends
    }

    pub fn config(&self) -> &HostConfig {
        &self.config
    }

    /// What this host did as a worker ([`metrics::render`]).
    pub fn counters(&self) -> &metrics::WorkerCounters {
        &self.counters
    }

    /// Leases this host renewed so far.
    pub fn renewals(&self) -> u64 {
        self.keeper
            .renewals
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    pub(crate) fn notify(&self, notice: Notice) {
        if let Some(o) = &self.config.observer {
            o(&notice);
        }
    }

    /// The recorded program of `run` (cached).
    pub fn recorded(&self, run: i64) -> Result<Arc<Compiled>, HostError> {
        if let Some(c) = self.recorded.lock().ok().and_then(|m| m.get(&run).cloned()) {
            return Ok(c);
        }
        let detail = self.store.run(run)?;
        self.recorded_from(&detail)
    }

    /// Forgets the cached program of `run` (it moved to another version).
    pub(crate) fn forget_recorded(&self, run: i64) {
        if let Ok(mut m) = self.recorded.lock() {
            m.remove(&run);
        }
    }

    /// [`Host::recorded`] of the run `detail` describes.
    pub(crate) fn recorded_from(
        &self,
        detail: &troupe_store::RunDetail,
    ) -> Result<Arc<Compiled>, HostError> {
        let run = detail.summary.id;
        if let Some(c) = self.recorded.lock().ok().and_then(|m| m.get(&run).cloned()) {
            return Ok(c);
        }
        let key = (
            detail.summary.file.clone().unwrap_or_default(),
            detail.summary.workflow.clone(),
            detail.source.clone(),
        );
        let shared = self.sources.lock().ok().and_then(|m| m.get(&key).cloned());
        let compiled = match shared {
            Some(c) => c,
            None => {
                let c = Arc::new(Compiled::recorded(detail)?);
                if let Ok(mut m) = self.sources.lock() {
                    // Versions come and go in a long-lived server: keep
                    // the recent ones only.
                    if m.len() >= 64 {
                        m.clear();
                    }
                    m.insert(key, c.clone());
                }
                c
            }
        };
        if let Ok(mut m) = self.recorded.lock() {
            m.insert(run, compiled.clone());
        }
        Ok(compiled)
    }

    /// Cancels `run`: at once when nobody runs it; otherwise its owner stops
    /// its in-flight actions at its next renewal and records `reason`.
    pub fn cancel(&self, run: i64, reason: &str) -> Result<Cancel, HostError> {
        if self.store.request_cancel(run, reason)? {
            return Ok(Cancel::Cancelled);
        }
        let owner = self.store.run(run)?.summary.owner.unwrap_or_default();
        Ok(Cancel::Requested { owner })
    }

    /// Makes a failed run claimable again; recorded steps are kept, so it
    /// continues from its last durable step. Claims it for this process.
    pub fn retry(&self, run: i64) -> Result<(), HostError> {
        self.store.reopen(run, &[RunStatus::Failed])?;
        self.claim(run)
    }

    pub fn delete(&self, run: i64) -> Result<(), HostError> {
        self.store.delete_run(run)?;
        if let Ok(mut m) = self.recorded.lock() {
            m.remove(&run);
        }
        Ok(())
    }

    /// Deletes ended runs beyond the newest `keep`; returns their ids.
    pub fn prune(&self, keep: usize) -> Result<Vec<i64>, HostError> {
        let ids = self.store.prunable(keep)?;
        for id in &ids {
            self.delete(*id)?;
        }
        Ok(ids)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NoTools, Overrides, RunSettings, StartPolicy};
    use std::time::Duration;
    use troupe_check::Value;

    /// A process whose lease expired while it was busy, and that claimed
    /// the run again (as a starved worker does), does not drive it a
    /// second time beside the first: under the same owner the second
    /// drive would pass every lease check and repeat the run's effects.
    #[test]
    fn a_run_is_never_driven_twice_by_one_process() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("s.db"), troupe_store::Durability::Normal).unwrap();
        let host = Host::new(
            store,
            HostConfig::new(dir.path().to_owned()),
            Arc::new(NoTools),
        );
        let source = "human ok(n: Int) -> Bool { ask: \"ok {n}?\" }\n\
                      workflow w(n: Int @ A) {\n  lifelines A\n  act A: r = ok(n)\n  return r @ A\n}\n";
        let compiled = Compiled::from_source(source.into(), "w.troupe", dir.path(), None).unwrap();
        let started = host
            .start(
                &compiled,
                vec![Value::Int(1)],
                &RunSettings::default(),
                StartPolicy::New,
            )
            .unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let overrides = Overrides::default();
        rt.block_on(async {
            let first = host.drive(started.run, &overrides, None);
            tokio::pin!(first);
            // The first drive starts and waits for its person.
            tokio::select! {
                _ = &mut first => panic!("the run ended without its answer"),
                () = tokio::time::sleep(Duration::from_millis(200)) => {}
            }
            assert!(host.is_driving(started.run, None));
            // (A second drive would wait for the person too: bounded, so
            // that it fails instead of hanging.)
            let second = tokio::time::timeout(
                Duration::from_secs(10),
                host.drive(started.run, &overrides, None),
            )
            .await;
            assert!(
                matches!(second, Ok(Err(HostError::AlreadyDriving { .. }))),
                "{second:?}"
            );
            // The refused drive left the first one's lease alone.
            let owner = host.store().run(started.run).unwrap().summary.owner;
            assert_eq!(owner.as_deref(), Some(host.config().owner.as_str()));
        });
    }
}
