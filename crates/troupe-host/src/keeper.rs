//! One lease keeper per host: it renews the leases of every run and part
//! the host drives, and tells each why it must stop (its lease lost, a
//! cancellation asked for, or, for a part, its run ended elsewhere).
//!
//! A worker drives dozens of runs at once. Renewing each lease on its own
//! (and looking for its cancellation four times a second) cost the store
//! a statement per run per tick, each made from an async task holding a
//! runtime thread while it waited for the one store connection: on a
//! loaded machine renewals queued behind each other came after the lease,
//! and healthy runs were lost to other workers, each with an unfinished
//! effect for a person to settle. The keeper makes one renewal (two
//! statements) per period and one read per tick for all of them, on a
//! thread of its own and the store's lease connection
//! ([`Store::renew_all`]), so that neither busy runtime threads nor a
//! queue of queries delays it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;
use troupe_store::{StopReason, Store, WeakStore};

/// Why a drive must stop: a cancellation asked for (its reason), or its
/// lease lost.
pub(crate) enum Stop {
    Cancel(String),
    Lost,
}

/// A run driven whole `(run, None)`, or one of its parts `(run, Some(p))`.
type Key = (i64, Option<u32>);

pub(crate) struct Keeper {
    /// Weak: the keeping thread must not keep the store open once the
    /// host lets it go (a process would exit with SQLite's `-wal` and
    /// `-shm` files left beside the store).
    store: WeakStore,
    owner: String,
    lease: Duration,
    /// Leases renewed so far (a worker's metric).
    pub(crate) renewals: AtomicU64,
    state: Mutex<State>,
    /// Held by the keeping thread while it holds the store (a tick): the
    /// last drive to end waits for it, so that the store is let go of on
    /// the drive's side, not the thread's.
    tick: Mutex<()>,
}

/// A drive that waits to hear why to stop.
struct Watcher {
    tx: oneshot::Sender<Stop>,
    /// Triggered when a pause is asked: the run stops at its next step
    /// boundary, and keeps its lease (renewed here) until it has.
    halt: Option<troupe_runtime::Interrupt>,
}

/// How long a paused run's effects in flight may take to finish: a pause
/// waits for them (an effect has its own timeout).
const PAUSE_GRACE: Duration = Duration::from_secs(3600);

#[derive(Default)]
struct State {
    /// Who waits to hear why to stop, by what they drive.
    watchers: BTreeMap<Key, Watcher>,
    /// Whether the keeping task runs (it ends when nobody watches).
    running: bool,
}

impl Keeper {
    pub(crate) fn new(store: Store, owner: String, lease: Duration) -> Arc<Keeper> {
        Arc::new(Keeper {
            store: store.downgrade(),
            owner,
            lease,
            renewals: AtomicU64::new(0),
            state: Mutex::default(),
            tick: Mutex::new(()),
        })
    }

    /// Keeps the lease of `run` (or its part `part`), which this process
    /// holds, until the run must stop; resolves with why. A pause asked
    /// meanwhile triggers `halt` instead (the lease is kept). Dropping the
    /// future gives up keeping it (the caller releases the lease).
    pub(crate) async fn until_stopped(
        self: &Arc<Self>,
        run: i64,
        part: Option<u32>,
        halt: Option<troupe_runtime::Interrupt>,
    ) -> Stop {
        let key = (run, part);
        let (tx, rx) = oneshot::channel();
        {
            let Ok(mut state) = self.state.lock() else {
                return Stop::Lost;
            };
            state.watchers.insert(key, Watcher { tx, halt });
            if !state.running {
                let keeper = self.clone();
                let spawned = std::thread::Builder::new()
                    .name("troupe-leases".into())
                    .spawn(move || keeper.keep());
                match spawned {
                    Ok(_) => state.running = true,
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot start the lease keeper");
                        return Stop::Lost;
                    }
                }
            }
        }
        let _unwatch = Unwatch {
            keeper: self.clone(),
            key,
        };
        match rx.await {
            Ok(stop) => stop,
            // Only the keeper sends, and it removes a watcher only as it
            // sends: nothing to hear any more.
            Err(_) => std::future::pending().await,
        }
    }

    /// The keeping thread: a look every tick, a renewal every third of
    /// the lease, measured on the clock (a process paused past its lease
    /// renews at its first tick awake, and learns at once that it lost
    /// it). Ends when nobody watches.
    fn keep(self: Arc<Self>) {
        let every = (self.lease / 3).max(Duration::from_millis(50));
        let look = every.min(Duration::from_millis(250));
        let mut renewed_at = Instant::now();
        // What the last renewal renewed.
        let mut renewed = std::collections::BTreeSet::new();
        // Runs (and parts) seen ended while still driven here.
        let mut ended = std::collections::BTreeSet::new();
        loop {
            std::thread::sleep(look);
            // Taken before the statements: a run claimed after them is not
            // among their answers, and must not read as lost.
            let keys: Vec<Key> = {
                let Ok(mut state) = self.state.lock() else {
                    return;
                };
                if state.watchers.is_empty() {
                    state.running = false;
                    return;
                }
                state.watchers.keys().copied().collect()
            };
            // A run claimed since the last renewal is renewed at once: its
            // claim may be older than the period (it was claimed, then
            // compiled and replayed before its drive began).
            let renew = renewed_at.elapsed() >= every || keys.iter().any(|k| !renewed.contains(k));
            let asked = Instant::now();
            let whole: Vec<i64> = keys.iter().filter(|k| k.1.is_none()).map(|k| k.0).collect();
            let parts: Vec<(i64, u32)> = keys
                .iter()
                .filter_map(|(r, p)| p.map(|p| (*r, p)))
                .collect();
            let answer = {
                let _tick = self.tick.lock();
                // Nobody holds the store any more: nothing to keep.
                let Some(store) = self.store.upgrade() else {
                    return;
                };
                let answer = (|| {
                    let held = if renew {
                        Some(store.renew_all(&self.owner, &whole, &parts, self.lease)?)
                    } else {
                        None
                    };
                    let of_parts: Vec<i64> = parts.iter().map(|(r, _)| *r).collect();
                    let why = store.stop_reasons(&whole, &of_parts)?;
                    Ok::<_, troupe_store::StoreError>((held, why))
                })();
                drop(store);
                answer
            };
            let (held, why) = match answer {
                Ok(answer) => answer,
                // A busy store: try again at the next tick; the lease is
                // three renewals long.
                Err(e) => {
                    tracing::warn!(error = %e, "cannot renew the leases");
                    continue;
                }
            };
            if let Some(held) = &held {
                renewed_at = asked;
                renewed = keys.iter().copied().collect();
                self.renewals.fetch_add(
                    (held.runs.len() + held.parts.len()) as u64,
                    Ordering::Relaxed,
                );
            }
            let Ok(mut state) = self.state.lock() else {
                return;
            };
            ended.retain(|k| state.watchers.contains_key(k));
            for key in keys {
                // A lease given up because the run ended is, most often,
                // its drive's own doing: it is ending, and hears nothing
                // now. A drive still here a renewal later was ended by
                // someone else (a cancellation while its lease had
                // lapsed): it stops as one that lost its lease.
                let lost = held.as_ref().is_some_and(|h| {
                    h.lost(key.0, key.1) || (!h.holds(key.0, key.1) && !ended.insert(key))
                });
                let stop = if lost {
                    Stop::Lost
                } else {
                    match why.get(&key.0) {
                        Some(StopReason::Cancel(reason)) => Stop::Cancel(reason.clone()),
                        // Only whole runs pause; the drive goes on to its
                        // next step boundary, its lease kept meanwhile.
                        Some(StopReason::Pause) if key.1.is_none() => {
                            if let Some(halt) =
                                state.watchers.get(&key).and_then(|w| w.halt.as_ref())
                                && !halt.is_set()
                            {
                                tracing::info!(
                                    run = key.0,
                                    "pause asked; stopping at the next step boundary"
                                );
                                halt.trigger_with(PAUSE_GRACE);
                            }
                            continue;
                        }
                        _ => continue,
                    }
                };
                if let Some(w) = state.watchers.remove(&key) {
                    if matches!(stop, Stop::Lost) {
                        tracing::warn!(run = key.0, "lost the lease of the run; stopping it");
                    }
                    let _ = w.tx.send(stop);
                }
            }
        }
    }
}

/// Stops keeping a lease when its drive ends.
struct Unwatch {
    keeper: Arc<Keeper>,
    key: Key,
}

impl Drop for Unwatch {
    fn drop(&mut self) {
        let last = self.keeper.state.lock().is_ok_and(|mut state| {
            state.watchers.remove(&self.key);
            state.watchers.is_empty()
        });
        // The last: wait out a tick in progress, which holds the store.
        if last {
            drop(self.keeper.tick.lock());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Compiled, Host, HostConfig, NoTools, Overrides, RunEnd, RunSettings, StartPolicy};
    use troupe_check::Value;
    use troupe_store::{Claim, RunStatus};

    /// One keeper holds the leases of every run a host drives (one renewal
    /// for all of them), and stops only the run that must stop: a
    /// cancelled one is cancelled, one whose lease another owner took
    /// stops writing, and the rest run on under their leases.
    #[test]
    fn one_keeper_renews_every_run_and_stops_only_those_that_must_stop() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("s.db"), troupe_store::Durability::Normal).unwrap();
        let mut config = HostConfig::new(dir.path().to_owned());
        let lease = Duration::from_millis(1500);
        config.lease = lease;
        let host = Host::new(store.clone(), config, Arc::new(NoTools));
        let source = "human ok(n: Int) -> Bool { ask: \"ok {n}?\" }\n\
                      workflow w(n: Int @ A) {\n  lifelines A\n  act A: r = ok(n)\n  return r @ A\n}\n";
        let compiled = Compiled::from_source(source.into(), "w.troupe", dir.path(), None).unwrap();
        let runs: Vec<i64> = (0..3)
            .map(|n| {
                host.start(
                    &compiled,
                    vec![Value::Int(n)],
                    &RunSettings::default(),
                    StartPolicy::New,
                )
                .unwrap()
                .run
            })
            .collect();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let overrides = Overrides::default();
        let me = host.config().owner.clone();
        let ends = rt.block_on(async {
            let control = async {
                // Past two leases, each still held by this host.
                tokio::time::sleep(lease * 2 + lease / 2).await;
                for &run in &runs {
                    let summary = store.run(run).unwrap().summary;
                    assert_eq!(summary.owner.as_deref(), Some(me.as_str()), "{run}");
                }
                assert!(host.renewals() >= 3, "{}", host.renewals());
                assert!(!store.request_cancel(runs[0], "enough").unwrap());
                store.release(runs[1], &me).unwrap();
                assert_eq!(
                    store.claim(runs[1], "thief", lease * 40).unwrap(),
                    Claim::Claimed
                );
                // The third runs on; then it is cancelled too.
                tokio::time::sleep(lease).await;
                assert!(host.is_driving(runs[2], None));
                assert!(!store.request_cancel(runs[2], "done with it").unwrap());
            };
            // Bounded, so that a run never stopped fails the test rather
            // than hang it.
            let (a, b, c, ()) = tokio::time::timeout(Duration::from_secs(60), async {
                tokio::join!(
                    host.drive(runs[0], &overrides, None),
                    host.drive(runs[1], &overrides, None),
                    host.drive(runs[2], &overrides, None),
                    control,
                )
            })
            .await
            .expect("every run stopped");
            [a, b, c].map(|r| r.unwrap().end)
        });
        assert!(
            matches!(&ends[0], RunEnd::Cancelled { reason } if reason == "enough"),
            "{:?}",
            ends[0]
        );
        assert!(matches!(ends[1], RunEnd::LeaseLost), "{:?}", ends[1]);
        assert!(matches!(ends[2], RunEnd::Cancelled { .. }), "{:?}", ends[2]);
        let owner = |run| store.run(run).unwrap().summary.owner;
        assert_eq!(
            owner(runs[1]).as_deref(),
            Some("thief"),
            "the thief's lease stays"
        );
        assert_eq!(
            store.run(runs[0]).unwrap().summary.status,
            RunStatus::Cancelled
        );
    }
}
