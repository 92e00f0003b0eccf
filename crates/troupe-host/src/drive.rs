//! Driving a claimed run: its engine, journal, lease renewal, pause and
//! interrupt, from its first step or its last checkpoint to how it ended.

use crate::keeper::Stop;
use crate::start::recorded_settings;
use crate::{DEFAULT_GRACE, Finished, Host, HostError, Notice, Overrides, RunEnd};
use std::sync::Arc;
use troupe_runtime::{HumanTask, RunError, RunOptions};
use troupe_store::{RunStatus, Store, StoreChannels, StoreInbox};

impl Host {
    /// Runs `run` (whose lease this process holds) to its end: with its
    /// recorded source, inputs and settings (plus `overrides`, recorded),
    /// replaying what it recorded, renewing the lease, stopping when asked
    /// to cancel. `answers` are scripted answers to its human tasks, keyed
    /// by `Lifeline.action` or `action`. Releases the lease at the end.
    pub async fn drive(
        &self,
        run: i64,
        overrides: &Overrides,
        answers: Option<serde_json::Map<String, serde_json::Value>>,
    ) -> Result<Finished, HostError> {
        // A second drive here returns before it touches the lease.
        let _driving = self.start_driving(run, None)?;
        let result = self.drive_claimed(run, None, overrides, answers).await;
        let _ = self.store.release(run, &self.config.owner);
        // A long-lived host (a worker) drives many runs: keep the cache to
        // the runs in flight.
        if let Ok(mut m) = self.recorded.lock() {
            m.remove(&run);
        }
        result
    }

    /// Runs part `part` of the placed run `run` (whose lease this process
    /// holds, `Store::claim_part`) to its end: its lifelines only, their
    /// messages to and from the other parts through the store. Releases
    /// the part's lease at the end. The part that ends last ends the run,
    /// and verifies the whole run's recorded execution.
    pub async fn drive_part(&self, run: i64, part: u32) -> Result<Finished, HostError> {
        let _driving = self.start_driving(run, Some(part))?;
        let result = self
            .drive_claimed(run, Some(part), &Overrides::default(), None)
            .await;
        let _ = self.store.release_part(run, part, &self.config.owner);
        // Stopped for a cancellation: the last part to stop records it.
        if matches!(&result, Ok(f) if matches!(f.end, RunEnd::Cancelled { .. })) {
            let _ = self.store.cancel_if_parts_stopped(run);
        }
        if let Ok(mut m) = self.recorded.lock() {
            m.remove(&run);
        }
        result
    }

    pub(crate) async fn drive_claimed(
        &self,
        run: i64,
        part: Option<u32>,
        overrides: &Overrides,
        answers: Option<serde_json::Map<String, serde_json::Value>>,
    ) -> Result<Finished, HostError> {
        let detail = self.store.run(run)?;
        let name = detail.summary.name.clone();
        let compiled = self.recorded_from(&detail)?;
        // A part of a placed run: its number, how many there are, and which
        // lifelines it runs.
        let placed = match part {
            None => None,
            Some(p) => {
                let parts = self.store.parts(run)?;
                let me = parts
                    .iter()
                    .find(|x| x.part == p)
                    .ok_or_else(|| HostError::Config(format!("{name} has no part {p}")))?;
                let local: Vec<bool> = compiled
                    .workflow()
                    .lifelines
                    .iter()
                    .map(|l| me.lifelines.contains(&l.name))
                    .collect();
                Some((p, parts.len() as u32, local))
            }
        };
        let mut settings = recorded_settings(&detail);
        let before = settings.clone();
        settings.apply(overrides);
        if settings != before {
            let json = serde_json::to_string(&settings)
                .map_err(|e| HostError::Config(format!("cannot record the settings: {e}")))?;
            self.store.set_settings(run, &json)?;
        }
        // The run's own durability, whatever the store was opened with.
        let store =
            if troupe_store::Durability::from(settings.durability) != self.store.durability() {
                Store::open(self.store.path(), settings.durability.into())?
            } else {
                self.store.clone()
            };
        let observer = self.config.observer.clone();
        let types = Arc::new(compiled.types().clone());
        let run_name = name.clone();
        let mut inbox = StoreInbox::new(store.clone(), run, types.clone()).on_wait(Arc::new(
            move |id: &str, task: &HumanTask| {
                if let Some(o) = &observer {
                    o(&Notice::Waiting {
                        run: run_name.clone(),
                        task: id.to_owned(),
                        lifeline: task.lifeline.clone(),
                        action: task.action.clone(),
                        kind: task.answer.into(),
                        ty: types.display(&task.ty).to_string(),
                    });
                }
            },
        ));
        if let Some(a) = answers {
            inbox = inbox.scripted(a);
        }
        let (engine, tools) = self
            .backends
            .engine(&compiled, &settings, &name, Arc::new(inbox))
            .await?;
        let mut journal_options = match &placed {
            None => settings.journal(),
            // A part keeps its whole history (the run is verified whole
            // when its last part ends), and checkpoints as often as a run.
            Some((p, n, _)) => troupe_store::JournalOptions {
                part: Some((*p, *n)),
                checkpoint_every: settings.checkpoint_every,
                ..troupe_store::JournalOptions::default()
            },
        };
        // Written only while this process holds the lease: a zombie's
        // writes are refused (see `JournalOptions::owner`).
        journal_options.owner = Some(self.config.owner.clone());
        let stored =
            store.journal_with(run, Arc::new(compiled.types().clone()), journal_options)?;
        let fenced = stored.clone();
        let fence = troupe_store::Fence {
            run,
            part,
            owner: self.config.owner.clone(),
        };
        let recorded_steps = stored.recorded_steps();
        let checkpoint = stored.resumes_at();
        // Verified online as it goes (a resumed run continues the monitor
        // from its checkpoint, or replays its events from the start),
        // recorded by the store; nothing keeps the events in memory.
        // A part sees only its own lifelines: the whole run is verified
        // from the store when its last part ends.
        let journal = Arc::new(troupe_runtime::Watched::new(
            placed.is_none().then(|| engine.monitor()),
            None,
            Some(stored as Arc<dyn troupe_runtime::RunJournal>),
        ));
        if recorded_steps > 0 || detail.events > 0 {
            self.notify(Notice::Resuming {
                run: name.clone(),
                recorded_steps,
                checkpoint,
            });
        }
        let remote = match placed {
            Some((p, _, local)) => Some(Arc::new(
                StoreChannels::new(&store, run, local)?.under(p, &self.config.owner),
            ) as Arc<dyn troupe_runtime::Remote>),
            None => None,
        };
        // Stops the run at its next step boundary: a pause asked of it, or
        // the process's interrupt.
        let halt = troupe_runtime::Interrupt::new(
            self.config
                .interrupt
                .as_ref()
                .map_or(DEFAULT_GRACE, |i| i.grace()),
        );
        let options = RunOptions {
            run_id: name.clone(),
            run_uid: Some(detail.uid.clone()),
            seed: detail.seed,
            trace: false,
            journal: Some(journal.clone()),
            // Parts wait on each other's messages too: only whole runs park.
            park_after: self.config.park_after.filter(|_| part.is_none()),
            remote,
            interrupt: Some(halt.clone()),
            ..RunOptions::default()
        };
        let renewal = self.renew_until_stopped(run, part, halt.clone());
        // The process's interrupt (SIGINT, SIGTERM) halts this run too.
        let forward = async {
            if let Some(process) = &self.config.interrupt {
                process.wait().await;
                halt.trigger_with(process.grace());
            }
            std::future::pending::<()>().await
        };
        let outcome = tokio::select! {
            outcome = engine.run(detail.input_values.clone(), options) => Ok(outcome),
            stop = renewal => Err(stop),
            () = forward => unreachable!("never resolves"),
        };
        if let Some(close) = tools.close {
            close().await;
        }
        let end = match outcome {
            // A write was refused: another process holds the lease now,
            // and the run's end is its to record.
            _ if fenced.lease_lost() => {
                tracing::warn!(run, "lost the lease of the run; stopped writing it");
                RunEnd::LeaseLost
            }
            Ok(Ok(_)) if let Some(p) = part => {
                let done = self.store.run(run)?.summary.status == RunStatus::Done;
                RunEnd::PartDone {
                    part: p,
                    run: if done {
                        Some(self.verify(run)?.map(|v| v.events))
                    } else {
                        None
                    },
                }
            }
            Ok(Ok(o)) => RunEnd::Done {
                verified: journal.verdict(false),
                results: o.results,
                unmade: o.unmade_calls,
            },
            // Another part ended the run, or someone cancelled it.
            Ok(Err(RunError::Stopped { message, .. })) => RunEnd::Cancelled { reason: message },
            Ok(Err(RunError::NeedsResolution { step, .. })) => {
                let message = format!(
                    "the effect {step} started before a crash and did not finish; it is not declared idempotent"
                );
                // Only while this process still holds the lease: one that
                // lost it (starved past it since it looked at the step)
                // would mark a run whose successor may be performing that
                // step by now.
                if self.store.needs_resolution(&fence, &message)? {
                    RunEnd::NeedsResolution { step, message }
                } else {
                    tracing::warn!(run, "lost the lease of the run; left it to its new owner");
                    RunEnd::LeaseLost
                }
            }
            Ok(Err(RunError::Parked { .. })) => match self.store.park(&fence)? {
                troupe_store::Parking::Parked => RunEnd::Parked { requeued: false },
                troupe_store::Parking::Requeued => RunEnd::Parked { requeued: true },
                troupe_store::Parking::Lost => {
                    tracing::warn!(run, "lost the lease of the run; left it to its new owner");
                    RunEnd::LeaseLost
                }
            },
            // Halted for a pause asked of it: recorded paused, its lease
            // given back with it.
            Ok(Err(RunError::Interrupted { .. }))
                if part.is_none() && self.store.mark_paused(&fence)? =>
            {
                RunEnd::Paused
            }
            // `drive` and `drive_part` give the lease back as for any end.
            Ok(Err(RunError::Interrupted { .. })) => RunEnd::Interrupted,
            Ok(Err(e)) => RunEnd::Failed(e),
            Err(Stop::Cancel(reason)) => {
                // A placed run is cancelled at once (it has no owner); a
                // part stops because it was.
                if part.is_none() && !self.store.mark_cancelled(&fence, &reason)? {
                    tracing::warn!(
                        run,
                        "lost the lease of the run; left its cancellation to its new owner"
                    );
                    RunEnd::LeaseLost
                } else {
                    RunEnd::Cancelled { reason }
                }
            }
            Err(Stop::Lost) => RunEnd::LeaseLost,
        };
        Ok(Finished {
            run,
            name,
            compiled,
            end,
        })
    }

    /// Keeps the lease on `run` (or its part) with every other this host
    /// holds; resolves when the run must stop (a cancellation request, the
    /// lease lost, or for a part its run ended elsewhere).
    pub(crate) async fn renew_until_stopped(
        &self,
        run: i64,
        part: Option<u32>,
        halt: troupe_runtime::Interrupt,
    ) -> Stop {
        self.keeper.until_stopped(run, part, Some(halt)).await
    }
}
