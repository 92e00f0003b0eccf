//! A worker of a fleet (`troupe worker`): claims runnable runs from the
//! shared store, drives them, and gives them back when it stops.
//!
//! The loop: claim the oldest runnable run (new, resumable, or whose
//! owner's lease expired — `Store::claim_next`), else the oldest part of a
//! placed run whose label is one of the worker's (`Store::claim_part`),
//! drive it on this process's runtime beside the others it drives, and claim again when a slot frees
//! or a notification says a run became runnable; sweep every
//! [`WorkerConfig::sweep`] for leases that expired without a notification.
//! Every run's lease is renewed while it runs (`Host::drive`), so a worker
//! killed with SIGKILL simply stops renewing and its runs are claimed by
//! the others once their leases expire. On a graceful stop the worker
//! claims nothing more, lets the runs it drives finish for up to
//! [`WorkerConfig::drain`], then stops the rest at once and releases their
//! leases: another worker resumes them from their last durable record.

use crate::{Host, Overrides, RunEnd};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinSet;

/// How a worker runs.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// Runs driven at once at most.
    pub concurrency: usize,
    /// How often to look for runs without a notification.
    pub sweep: Duration,
    /// How long a graceful stop waits for the runs in flight.
    pub drain: Duration,
    /// The worker's labels, as `troupe workers` shows them.
    pub labels: Vec<String>,
    /// Stop after this many runs ended (for tests and batch jobs).
    pub max_runs: Option<u64>,
    /// Stop when no run is runnable (a batch worker).
    pub exit_when_idle: bool,
}

impl Default for WorkerConfig {
    fn default() -> WorkerConfig {
        WorkerConfig {
            concurrency: 32,
            sweep: Duration::from_secs(2),
            drain: Duration::from_secs(30),
            labels: Vec::new(),
            max_runs: None,
            exit_when_idle: false,
        }
    }
}

/// What a worker did, when it stopped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkerReport {
    pub claimed: u64,
    pub done: u64,
    pub failed: u64,
    /// Runs handed back unfinished when the worker stopped (or lost).
    pub released: u64,
    /// Runs given back while they waited on people (`--park-after`).
    pub parked: u64,
}

/// Something a worker tells its caller as it goes.
#[derive(Debug, Clone)]
pub enum WorkerEvent {
    Claimed {
        run: String,
    },
    /// A schedule's tick started a run (queued, for any worker).
    Scheduled {
        schedule: String,
        tick: i64,
        run: String,
    },
    /// A schedule's tick could not start its run.
    ScheduleFailed {
        schedule: String,
        tick: i64,
        why: String,
    },
    Ended {
        run: String,
        outcome: String,
    },
    Draining {
        running: usize,
    },
}

impl Host {
    /// Runs this host as a worker until `stop` resolves (then drains), or
    /// until its configuration says to stop.
    pub async fn work(
        self: Arc<Self>,
        config: WorkerConfig,
        stop: impl std::future::Future<Output = ()>,
        on_event: impl Fn(WorkerEvent),
    ) -> Result<WorkerReport, crate::HostError> {
        let store = self.store().clone();
        let owner = self.config().owner.clone();
        let lease = self.config().lease;
        let host_name = owner.split(':').next().unwrap_or("localhost").to_owned();
        store.register_worker(&owner, &host_name, &config.labels)?;
        let mut wakeups = store.listen()?;
        // The project's schedules: this worker starts their ticks' runs
        // (one process per tick, whichever is first; `crate::schedule`).
        let schedules = self.schedules()?;
        let mut next_tick = crate::schedule::next_wake(&schedules);
        let mut report = WorkerReport::default();
        let mut running: JoinSet<Driven> = JoinSet::new();
        tokio::pin!(stop);
        let mut last_report = tokio::time::Instant::now();
        let mut failed: Option<String> = None;
        loop {
            // Claim while there is room.
            while running.len() < config.concurrency
                && config.max_runs.is_none_or(|m| report.claimed < m)
            {
                // A whole run, else a part of a placed run this worker's
                // labels allow.
                let (run, part) = match store.claim_next(&owner, lease)? {
                    Some(run) => (run, None),
                    None => match store.claim_part(&owner, &config.labels, lease)? {
                        Some((run, part)) => (run, Some(part)),
                        None => break,
                    },
                };
                // Its own run whose lease expired while it was busy (a
                // starved worker): the claim renewed the lease, and the
                // drive under way goes on; a second would repeat it.
                if self.is_driving(run, part) {
                    continue;
                }
                report.claimed += 1;
                crate::metrics::WorkerCounters::add(&self.counters().claimed, 1);
                let name = match part {
                    None => troupe_store::Store::run_name(run),
                    Some(p) => format!("{} part {p}", troupe_store::Store::run_name(run)),
                };
                on_event(WorkerEvent::Claimed { run: name.clone() });
                let host = self.clone();
                running.spawn(async move {
                    let finished = match part {
                        None => host.drive(run, &Overrides::default(), None).await,
                        Some(p) => host.drive_part(run, p).await,
                    };
                    (name, finished)
                });
            }
            self.counters()
                .running
                .store(running.len() as u64, std::sync::atomic::Ordering::Relaxed);
            if last_report.elapsed() >= config.sweep {
                let _ = store.worker_report(&owner, running.len() as u64, false);
                // A placed run being cancelled whose parts' workers died
                // is cancelled once their leases expired.
                for run in store.cancelling_placed().unwrap_or_default() {
                    let _ = store.cancel_if_parts_stopped(run);
                }
                // People's deadlines that passed while nobody drove their
                // runs (parked): the clock answers, which queues the run.
                if let Err(e) = store.answer_due(None) {
                    tracing::warn!(target: "troupe::worker", error = %e, "cannot answer the due tasks");
                }
                // Timers that fell due in parked runs: queued again.
                if let Err(e) = store.wake_due_timers() {
                    tracing::warn!(target: "troupe::worker", error = %e, "cannot wake the runs whose timers are due");
                }
                // The worker's metrics, for logs and collectors.
                tracing::info!(
                    target: "troupe::worker",
                    worker = %owner,
                    runs_claimed = report.claimed,
                    runs_running = running.len(),
                    lease_renewals = self.renewals(),
                    queue_depth = store.runnable().unwrap_or(0),
                    "worker metrics"
                );
                last_report = tokio::time::Instant::now();
            }
            let done_enough = config
                .max_runs
                .is_some_and(|m| report.done + report.failed >= m);
            if done_enough && running.is_empty() {
                break;
            }
            if config.exit_when_idle
                && running.is_empty()
                && store.runnable_for(&config.labels)? == 0
            {
                break;
            }
            tokio::select! {
                Some(joined) = running.join_next(), if !running.is_empty() => {
                    on_event(self.tally(joined, &mut report));
                    // A writer that failed refuses every later record:
                    // claiming more would only fail them. Stop, hand back
                    // what runs, and let a supervisor restart the worker.
                    if let Some(why) = store.write_failure() {
                        tracing::error!(target: "troupe::worker", worker = %owner, %why, "the store cannot be written; stopping");
                        failed = Some(why);
                        break;
                    }
                }
                _ = wakeups.next(config.sweep) => {}
                () = tokio::time::sleep_until(next_tick), if !schedules.is_empty() => {
                    let now = crate::schedule::now_ms();
                    for fired in self.fire_schedules(&schedules, now) {
                        on_event(match fired {
                            crate::schedule::Fired::Started { schedule, tick, run } => {
                                WorkerEvent::Scheduled { schedule, tick, run: troupe_store::Store::run_name(run) }
                            }
                            crate::schedule::Fired::Failed { schedule, tick, why } => {
                                tracing::warn!(target: "troupe::worker", %schedule, tick, %why, "a schedule's tick did not start");
                                WorkerEvent::ScheduleFailed { schedule, tick, why }
                            }
                        });
                    }
                    next_tick = crate::schedule::next_wake(&schedules);
                }
                () = &mut stop => {
                    on_event(WorkerEvent::Draining { running: running.len() });
                    let _ = store.worker_report(&owner, running.len() as u64, true);
                    let deadline = tokio::time::Instant::now() + config.drain;
                    while let Ok(Some(joined)) =
                        tokio::time::timeout_at(deadline, running.join_next()).await
                    {
                        on_event(self.tally(joined, &mut report));
                    }
                    // The drain is over: what still runs is handed back below.
                    break;
                }
            }
        }
        // Whatever still runs stops here; its leases go back at once.
        report.released += running.len() as u64;
        running.abort_all();
        while running.join_next().await.is_some() {}
        let _ = store.release_all(&owner);
        let _ = store.unregister_worker(&owner);
        if let Some(why) = failed {
            return Err(crate::HostError::Store(
                troupe_store::StoreError::Unavailable {
                    path: store.shown().to_owned(),
                    message: format!("this worker can no longer write to it ({why}); restart it"),
                },
            ));
        }
        Ok(report)
    }
}

type Driven = (String, Result<crate::Finished, crate::HostError>);

impl Host {
    /// [`tally`], and the host's metrics with it.
    fn tally(
        &self,
        joined: Result<Driven, tokio::task::JoinError>,
        report: &mut WorkerReport,
    ) -> WorkerEvent {
        let before = report.clone();
        let lost = matches!(&joined, Ok((_, Ok(f))) if matches!(f.end, RunEnd::LeaseLost));
        let event = tally(joined, report);
        let c = self.counters();
        use crate::metrics::WorkerCounters as W;
        W::add(&c.done, report.done - before.done);
        W::add(&c.failed, report.failed - before.failed);
        W::add(&c.parked, report.parked - before.parked);
        W::add(&c.released, report.released - before.released);
        W::add(&c.leases_lost, u64::from(lost));
        event
    }
}

/// Counts how a driven run ended, and says so.
fn tally(joined: Result<Driven, tokio::task::JoinError>, report: &mut WorkerReport) -> WorkerEvent {
    let (run, outcome) = match joined {
        Ok((run, Ok(f))) => {
            let outcome = match &f.end {
                RunEnd::Done {
                    verified: Ok(_), ..
                } => {
                    report.done += 1;
                    "done".to_owned()
                }
                RunEnd::Done {
                    verified: Err(e), ..
                } => {
                    report.failed += 1;
                    format!("done, but it does not verify: {e}")
                }
                RunEnd::Failed(e) => {
                    report.failed += 1;
                    format!("failed: {e}")
                }
                RunEnd::NeedsResolution { step, .. } => {
                    report.failed += 1;
                    format!("needs resolution of {step}")
                }
                RunEnd::Cancelled { reason } => {
                    report.failed += 1;
                    format!("cancelled: {reason}")
                }
                RunEnd::LeaseLost => {
                    report.released += 1;
                    "lost its lease to another worker".to_owned()
                }
                RunEnd::Paused => {
                    report.released += 1;
                    "paused by an operator (`troupe unpause` lets it go on)".to_owned()
                }
                RunEnd::Interrupted => {
                    report.released += 1;
                    "interrupted at a step boundary; handed back".to_owned()
                }
                RunEnd::Parked { requeued: false } => {
                    report.parked += 1;
                    "parked: every lifeline waits on a person; any worker goes on once one answers"
                        .to_owned()
                }
                RunEnd::Parked { requeued: true } => {
                    report.parked += 1;
                    "given back: a person answered as it was parking; queued again".to_owned()
                }
                RunEnd::PartDone { part, run: None } => {
                    report.done += 1;
                    format!("part {part} done; the run waits for its other parts")
                }
                RunEnd::PartDone {
                    part,
                    run: Some(Ok(_)),
                } => {
                    report.done += 1;
                    format!("part {part} done, the last: the run is done")
                }
                RunEnd::PartDone {
                    part,
                    run: Some(Err(e)),
                } => {
                    report.failed += 1;
                    format!("part {part} done, the last, but the run does not verify: {e}")
                }
            };
            (run, outcome)
        }
        Ok((run, Err(e))) => {
            report.failed += 1;
            (run, format!("error: {e}"))
        }
        Err(e) => {
            report.failed += 1;
            ("?".to_owned(), format!("the run's task ended: {e}"))
        }
    };
    WorkerEvent::Ended { run, outcome }
}
