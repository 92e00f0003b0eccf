//! `StoreJournal`: a run's [`RunJournal`] in the store.
//!
//! Events are encoded into a buffer and handed to the writer in chunks of
//! about 64 KiB without waiting: a crash may lose the last chunks, which the
//! resumed run recomputes. Step results, effect starts and the end of the
//! run are durable before the corresponding future resolves.
//!
//! Every so many events the run hands the journal a checkpoint, written with
//! the buffered events in one transaction (so it marks an exact chunk
//! boundary). A resumed run continues from the latest checkpoint and
//! replays only the events after it; the journal drops each lifeline's
//! events up to the count already stored, so no event is recorded twice.
//! Opening the journal reads the checkpoint, the chunks after it and the
//! steps recorded after it: its cost follows the tail, not the history.
//! The checkpoint interval grows with the checkpoint's size, so that
//! writing checkpoints costs a small fraction of writing events.
//!
//! Opening a journal (loading what a resumed run needs) lives in
//! `resume.rs`, with the tests of resuming; this file holds the journal's
//! writes and the tests of their fencing.

use crate::checkpoint as stored_checkpoint;
use crate::codec;
use crate::writer::{Fence, LEASE_LOST, Op, Writer};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use troupe_check::ir::{LifelineId, StmtId};
use troupe_check::{TypeTable, Value};
use troupe_llm::BoxFuture;
use troupe_msc::Event;
use troupe_runtime::{Checkpoint, Recorded, RunError, RunJournal, StepKey, StepKind};

mod resume;

const CHUNK: usize = 64 * 1024;

/// Events between checkpoints at least (more when a checkpoint is large:
/// one byte of checkpoint per event).
const MIN_INTERVAL: u64 = 100_000;

/// How a run's journal keeps its history.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JournalOptions {
    pub history: History,
    /// Events between checkpoints; `None`: chosen by the journal (at least
    /// 100,000, more for a large state, fewer to honour `history`).
    pub checkpoint_every: Option<u64>,
    /// The journal of one part of a placed run: `(part, parts)`. It writes
    /// the chunks numbered `part + k × parts` and reads only those, keeps
    /// the part's latest checkpoint (`part_checkpoints`) and the whole
    /// history, and its end is the part's (see `placement.rs`).
    pub part: Option<(u32, u32)>,
    /// The owner of the lease the journal writes under (the run's, or with
    /// `part` the part's). With one, a write is applied only while that
    /// owner holds the lease, so a process that lost its lease without
    /// knowing yet (a zombie) can neither overwrite its successor's
    /// records nor record an effect as started; its writes fail with a
    /// lost lease ([`StoreJournal::lease_lost`]). `None`: unfenced (a
    /// journal of a run nobody else can claim).
    pub owner: Option<String>,
}

/// How much of a run's history the store keeps (see `retention.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum History {
    /// Every event.
    #[default]
    All,
    /// At least this many of the latest events, from a checkpoint on.
    Keep(u64),
}

pub struct StoreJournal {
    run: i64,
    writer: Writer,
    types: Arc<TypeTable>,
    buffer: Mutex<Buffer>,
    recorded: HashMap<String, Recorded>,
    fingerprint: String,
    options: JournalOptions,
    /// The checkpoint the resumed run continues from, until it asks.
    resume: Mutex<Option<Checkpoint>>,
    /// Per lifeline, the statements of the events stored after the resume
    /// point, in order, until the run asks (`RunJournal::recorded_order`).
    tail: Mutex<Option<Vec<Vec<StmtId>>>>,
    /// The lease its writes are made under (`JournalOptions::owner`).
    fence: Option<Arc<Fence>>,
    /// Set once a write was refused for a lost lease.
    lost: Arc<AtomicBool>,
    /// Where its timers' deadlines are read back (not kept open by it).
    store: crate::WeakStore,
}

impl std::fmt::Debug for StoreJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreJournal")
            .field("run", &self.run)
            .field("recorded", &self.recorded.len())
            .finish()
    }
}

struct Buffer {
    bytes: Vec<u8>,
    count: u32,
    next_chunk: i64,
    /// Events seen so far per lifeline in this process.
    seen: Vec<u64>,
    /// Events already in the store per lifeline (from before a restart).
    stored: Vec<u64>,
}

impl StoreJournal {
    /// Whether a write was refused because the journal's owner no longer
    /// holds the lease (see `JournalOptions::owner`): the run must stop,
    /// and its end is its successor's to record.
    pub fn lease_lost(&self) -> bool {
        self.lost.load(Ordering::Relaxed)
    }

    /// Queues `op` under the journal's lease without waiting.
    fn send(&self, op: Op) -> Result<(), String> {
        if self.lease_lost() {
            return Err(LEASE_LOST.to_owned());
        }
        self.writer.send_under(self.fence.as_ref(), op)
    }

    /// Queues `op` under the journal's lease; resolves once it is
    /// committed, or refused.
    fn send_durable(&self, op: Op) -> BoxFuture<'static, Result<(), String>> {
        let rx = self.writer.send_durable_under(self.fence.as_ref(), op);
        let lost = self.lost.clone();
        Box::pin(async move {
            let r = rx
                .await
                .unwrap_or_else(|_| Err("the store writer stopped".to_owned()));
            if matches!(&r, Err(e) if e == LEASE_LOST) {
                lost.store(true, Ordering::Relaxed);
            }
            r
        })
    }

    /// After how many events the checkpoint the run resumes from was taken
    /// (`None`: it replays from the start).
    pub fn resumes_at(&self) -> Option<u64> {
        self.resume.lock().ok()?.as_ref().map(|cp| cp.events)
    }

    /// Events between checkpoints, for a checkpoint of `bytes`.
    fn interval(&self, bytes: usize) -> u64 {
        if let Some(every) = self.options.checkpoint_every {
            return every.max(1);
        }
        let every = MIN_INTERVAL.max(bytes as u64);
        match self.options.history {
            History::All => every,
            // The retained window is `keep` plus one interval at most.
            History::Keep(keep) => every.min((keep / 2).max(1_000)),
        }
    }

    /// Steps already recorded when the journal was opened.
    pub fn recorded_steps(&self) -> usize {
        self.recorded.len()
    }

    /// The buffered events as one write, if there are any.
    fn take_chunk(&self, buf: &mut Buffer) -> Option<Op> {
        if buf.bytes.is_empty() {
            return None;
        }
        // The next buffer starts at the size this one reached: a long run
        // keeps chunk-sized buffers, a short one small ones.
        let room = buf.bytes.len().min(CHUNK + 1024);
        let data = std::mem::replace(&mut buf.bytes, Vec::with_capacity(room));
        let op = Op::Events {
            run: self.run,
            chunk: buf.next_chunk,
            count: buf.count,
            data,
        };
        buf.next_chunk += self
            .options
            .part
            .map_or(1, |(_, parts)| i64::from(parts.max(1)));
        buf.count = 0;
        Some(op)
    }

    /// Hands the buffered events to the writer.
    fn flush(&self, buf: &mut Buffer) -> Result<(), String> {
        match self.take_chunk(buf) {
            Some(op) => self.send(op),
            None => Ok(()),
        }
    }

    /// Queues the buffered events and `op` as one transaction, and waits
    /// for it to be durable: one commit per durable record.
    fn durable(&self, op: Op) -> BoxFuture<'static, Result<(), String>> {
        let op = match self.buffer.lock() {
            Ok(mut buf) => match self.take_chunk(&mut buf) {
                Some(events) => Ok(Op::Batch(vec![events, op])),
                None => Ok(op),
            },
            Err(_) => Err("the journal was poisoned".to_owned()),
        };
        match op {
            Ok(op) => self.send_durable(op),
            Err(e) => Box::pin(async move { Err(e) }),
        }
    }
}

fn input_hash(args: &[Value]) -> String {
    let mut bytes = Vec::new();
    codec::encode_values(&mut bytes, args);
    format!("{:016x}", codec::fnv64(&bytes))
}

impl StoreJournal {
    /// Adds `event` to the buffer, unless a restarted run replays it (it is
    /// in the store already); writes the buffer once it holds a chunk.
    fn buffer_event(&self, buf: &mut Buffer, lifeline: LifelineId, event: &Event) {
        let l = lifeline.0 as usize;
        if l >= buf.seen.len() {
            buf.seen.resize(l + 1, 0);
            buf.stored.resize(l + 1, 0);
        }
        buf.seen[l] += 1;
        if buf.seen[l] <= buf.stored[l] {
            // Replayed after a restart: already in the store.
            return;
        }
        codec::encode_event(&mut buf.bytes, lifeline, event);
        buf.count += 1;
        if buf.bytes.len() >= CHUNK {
            // A failure here resurfaces at the next durable write.
            let _ = self.flush(buf);
        }
    }
}

impl RunJournal for StoreJournal {
    fn event(&self, lifeline: LifelineId, event: &Event) {
        if let Ok(mut buf) = self.buffer.lock() {
            self.buffer_event(&mut buf, lifeline, event);
        }
    }

    /// One lock of the buffer for a step's events: a lock per event was
    /// the journal's largest cost in the durable counter loop.
    fn events(&self, events: &[(LifelineId, Event)]) {
        if let Ok(mut buf) = self.buffer.lock() {
            for (lifeline, event) in events {
                self.buffer_event(&mut buf, *lifeline, event);
            }
        }
    }

    /// The stored events after the resume point: the ones a resumed run
    /// replays (and this journal drops), in each lifeline's order.
    fn recorded_order(&self) -> Option<Vec<Vec<StmtId>>> {
        self.tail.lock().ok()?.take()
    }

    fn recorded(&self, key: &StepKey) -> Option<Recorded> {
        self.recorded.get(&key.to_string()).cloned()
    }

    fn checkpoint_every(&self) -> Option<u64> {
        Some(self.interval(0))
    }

    fn llm_call(&self, key: &StepKey, call: &troupe_runtime::LlmCall) {
        // A failure here resurfaces at the next durable write.
        let _ = self.send(Op::LlmCall {
            run: self.run,
            step: key.to_string(),
            call: Box::new(call.clone()),
        });
    }

    fn checkpoint(&self, checkpoint: Checkpoint) -> Option<u64> {
        let mut buf = self.buffer.lock().ok()?;
        // While a resumed run replays events the store has, its cursor and
        // the store's chunks disagree: checkpoint once it has caught up.
        if buf.seen.iter().zip(&buf.stored).any(|(s, t)| s < t) {
            return Some(self.interval(0));
        }
        let data = stored_checkpoint::encode(&buf.seen, &checkpoint);
        let every = self.interval(data.len());
        let events = self.take_chunk(&mut buf);
        let op = match self.options.part {
            None => Op::Checkpoint {
                run: self.run,
                seq: checkpoint.events,
                chunk: buf.next_chunk,
                fingerprint: self.fingerprint.clone(),
                data,
                keep: match self.options.history {
                    History::All => None,
                    History::Keep(k) => Some(k),
                },
            },
            Some((part, _)) => Op::PartCheckpoint {
                run: self.run,
                part,
                seq: checkpoint.events,
                chunk: buf.next_chunk,
                fingerprint: self.fingerprint.clone(),
                data,
            },
        };
        let op = match events {
            Some(events) => Op::Batch(vec![events, op]),
            None => op,
        };
        // A failure here resurfaces at the next durable write.
        let _ = self.send(op);
        Some(every)
    }

    fn resume_from(&self) -> Option<Checkpoint> {
        self.resume.lock().ok()?.take()
    }

    fn begin_effect(
        &self,
        key: &StepKey,
        kind: StepKind,
        args: &[Value],
    ) -> BoxFuture<'static, Result<(), String>> {
        self.durable(Op::StepStarted {
            run: self.run,
            key: key.to_string(),
            kind: kind.as_str(),
            lifeline: key.lifeline.clone(),
            action: key.action.clone(),
            input_hash: input_hash(args),
        })
    }

    fn record(
        &self,
        key: &StepKey,
        kind: StepKind,
        args: &[Value],
        outputs: &[Value],
    ) -> BoxFuture<'static, Result<(), String>> {
        let mut bin = Vec::new();
        codec::encode_values(&mut bin, outputs);
        let json =
            serde_json::Value::Array(outputs.iter().map(|v| v.to_json(&self.types)).collect());
        self.durable(Op::StepDone {
            run: self.run,
            key: key.to_string(),
            kind: kind.as_str(),
            lifeline: key.lifeline.clone(),
            action: key.action.clone(),
            input_hash: input_hash(args),
            outputs: bin,
            outputs_json: json.to_string(),
        })
    }

    fn timer(
        &self,
        key: &StepKey,
        after: std::time::Duration,
    ) -> BoxFuture<'static, Result<std::time::Duration, String>> {
        let key = key.to_string();
        let recorded = self.durable(Op::Timer {
            run: self.run,
            key: key.clone(),
            after: crate::lease::millis(after),
        });
        let (store, run) = (self.store.clone(), self.run);
        Box::pin(async move {
            recorded.await?;
            let store = store.upgrade().ok_or("the store was closed")?;
            store
                .timer_left(run, &key)
                .map_err(|e| e.to_string())?
                .ok_or_else(|| format!("the timer of {key} was not recorded"))
        })
    }

    fn forget_effect(&self, key: &StepKey) -> BoxFuture<'static, Result<(), String>> {
        self.durable(Op::StepForget {
            run: self.run,
            key: key.to_string(),
        })
    }

    fn flush(&self) -> BoxFuture<'static, Result<(), String>> {
        let op = match self.buffer.lock() {
            Ok(mut buf) => self.take_chunk(&mut buf),
            Err(_) => return Box::pin(async { Err("the journal was poisoned".to_owned()) }),
        };
        // With nothing buffered, an empty batch still waits for what was
        // handed to the writer before (event chunks, checkpoints): the
        // writer commits in order.
        self.send_durable(op.unwrap_or(Op::Batch(Vec::new())))
    }

    fn finish(
        &self,
        outcome: Result<&[(String, Value)], &RunError>,
    ) -> BoxFuture<'static, Result<(), String>> {
        let op = match outcome {
            Ok(results) => {
                let obj: serde_json::Map<String, serde_json::Value> = results
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_json(&self.types)))
                    .collect();
                if let Some((part, _)) = self.options.part {
                    return self.durable(Op::FinishPart {
                        run: self.run,
                        part,
                        result: serde_json::Value::Object(obj).to_string(),
                    });
                }
                Op::Finish {
                    run: self.run,
                    status: crate::RunStatus::Done,
                    result: Some(serde_json::Value::Object(obj).to_string()),
                    error: None,
                }
            }
            Err(e) => Op::Finish {
                run: self.run,
                status: crate::RunStatus::Failed,
                result: None,
                error: Some(e.to_string()),
            },
        };
        self.durable(op)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Claim, Durability, Store, StoreError};
    use troupe_check::ir::StmtId;

    /// A run in each kind of store.
    pub(super) fn stores(
        dir: &std::path::Path,
    ) -> Vec<(Store, i64, Option<crate::testing::TestDatabase>)> {
        crate::testing::both(dir, Durability::Normal)
            .into_iter()
            .map(|(store, db)| {
                let run = store.create_run(&crate::testing::bare_run("fp")).unwrap();
                (store, run, db)
            })
            .collect()
    }

    pub(super) fn act() -> Event {
        Event::Act {
            stmt: StmtId(0),
            outputs: None,
        }
    }

    fn owned_by(store: &Store, run: i64, owner: &str) -> StoreJournal {
        StoreJournal::open(
            store,
            run,
            Arc::new(TypeTable::default()),
            JournalOptions {
                owner: Some(owner.into()),
                ..JournalOptions::default()
            },
        )
        .unwrap()
    }

    /// A zombie: the owner whose lease expired and whose run another
    /// process claimed, still writing. Its writes change nothing (without
    /// the fence its first event chunk overwrote its successor's, and its
    /// effect counted as recorded), and the writer goes on for the others.
    #[test]
    fn a_journal_whose_lease_was_taken_over_writes_nothing_more() {
        use troupe_runtime::{StepKey, StepKind};
        let dir = tempfile::tempdir().unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let effect = |n| StepKey {
            lifeline: "A".into(),
            action: "deposit".into(),
            occurrence: n,
        };
        for (store, run, _db) in stores(dir.path()) {
            let short = std::time::Duration::from_millis(1);
            assert_eq!(store.claim(run, "zombie", short).unwrap(), Claim::Claimed);
            let zombie = owned_by(&store, run, "zombie");
            // While it holds the lease, its writes go in.
            rt.block_on(zombie.begin_effect(&effect(0), StepKind::Effect, &[]))
                .unwrap();
            std::thread::sleep(std::time::Duration::from_millis(5));
            let long = std::time::Duration::from_secs(60);
            assert_eq!(store.claim(run, "heir", long).unwrap(), Claim::Claimed);
            let heir = owned_by(&store, run, "heir");
            for _ in 0..10 {
                heir.event(LifelineId(0), &act());
            }
            rt.block_on(RunJournal::flush(&heir)).unwrap();

            for _ in 0..3 {
                zombie.event(LifelineId(0), &act());
            }
            let refused = rt.block_on(RunJournal::flush(&zombie)).unwrap_err();
            assert_eq!(refused, LEASE_LOST, "{store:?}");
            assert!(zombie.lease_lost());
            let refused = rt
                .block_on(zombie.begin_effect(&effect(1), StepKind::Effect, &[]))
                .unwrap_err();
            assert_eq!(refused, LEASE_LOST);
            rt.block_on(zombie.finish(Ok(&[]))).unwrap_err();

            // The heir's records are whole; the zombie's later ones absent.
            let detail = store.run(run).unwrap();
            assert_eq!(detail.events, 10, "{store:?}");
            assert_eq!(
                detail.summary.status,
                crate::RunStatus::Running,
                "not ended by the zombie"
            );
            let keys: Vec<String> = store
                .steps(run)
                .unwrap()
                .into_iter()
                .map(|s| s.key)
                .collect();
            assert_eq!(keys, vec!["A/deposit#0".to_owned()], "{store:?}");
            // The heir goes on, and so does every other run: the refusal
            // was the zombie's, not the writer's.
            rt.block_on(heir.begin_effect(&effect(1), StepKind::Effect, &[]))
                .unwrap();
            assert_eq!(store.write_failure(), None);
            let other = store.create_run(&crate::testing::bare_run("fp")).unwrap();
            assert_eq!(store.claim(other, "zombie", long).unwrap(), Claim::Claimed);
            rt.block_on(RunJournal::flush(&owned_by(&store, other, "zombie")))
                .unwrap();
        }
    }

    /// An effect whose start is recorded and whose end is not is settled
    /// by a person only once nothing runs its run, and a run is marked as
    /// waiting for that only by its lease's holder. Without the checks, a
    /// starved owner that had seen the start marked the run while its heir
    /// performed the step again, and the person's "retry" forgot the heir's
    /// start: the effect happened twice (seen once in the fleet test).
    #[test]
    fn a_started_effect_is_settled_only_once_nothing_runs_it() {
        use crate::Fence;
        use troupe_runtime::{StepKey, StepKind};
        let dir = tempfile::tempdir().unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let step = StepKey {
            lifeline: "A".into(),
            action: "deposit".into(),
            occurrence: 0,
        };
        let key = step.to_string();
        let fence = |run, owner: &str| Fence {
            run,
            part: None,
            owner: owner.into(),
        };
        for (store, run, _db) in stores(dir.path()) {
            let short = std::time::Duration::from_millis(1);
            assert_eq!(store.claim(run, "starved", short).unwrap(), Claim::Claimed);
            rt.block_on(owned_by(&store, run, "starved").begin_effect(
                &step,
                StepKind::Effect,
                &[],
            ))
            .unwrap();
            std::thread::sleep(std::time::Duration::from_millis(5));
            let long = std::time::Duration::from_secs(60);
            assert_eq!(store.claim(run, "heir", long).unwrap(), Claim::Claimed);

            // The starved owner wakes: it marks nothing, cancels nothing.
            assert!(!store.needs_resolution(&fence(run, "starved"), "…").unwrap());
            assert!(!store.mark_cancelled(&fence(run, "starved"), "…").unwrap());
            let summary = store.run(run).unwrap().summary;
            assert_eq!(summary.status, crate::RunStatus::Running, "{store:?}");
            assert_eq!(summary.owner.as_deref(), Some("heir"));
            // Nobody settles the step while the heir runs it.
            let e = store.resolve(run, &key, None).unwrap_err();
            assert!(
                matches!(&e, StoreError::Running { owner, .. } if owner == "heir"),
                "{e}"
            );
            assert!(e.to_string().contains("troupe cancel run-"), "{e}");
            assert_eq!(store.steps(run).unwrap().len(), 1, "the start is kept");

            // The heir finds the start and marks the run; now it settles.
            assert!(store.needs_resolution(&fence(run, "heir"), "…").unwrap());
            let summary = store.run(run).unwrap().summary;
            assert_eq!(summary.status, crate::RunStatus::NeedsResolution);
            assert_eq!(summary.owner, None);
            store.resolve(run, &key, None).unwrap();
            assert!(store.steps(run).unwrap().is_empty(), "{store:?}");
            // Settled, it may go on.
            assert_eq!(store.claim(run, "next", long).unwrap(), Claim::Claimed);
        }
    }

    /// A run every lifeline of which waits on a person is given back and
    /// claimed by no worker until someone answers; then any worker goes on
    /// with it. An answer its run has not taken yet when it parks has it
    /// queued again at once, so that no answer is left unheard; only the
    /// holder of its lease parks it.
    #[test]
    fn a_run_waiting_on_people_is_parked_until_one_answers() {
        use crate::{Fence, Parking};
        let dir = tempfile::tempdir().unwrap();
        let fence = |run, owner: &str| Fence {
            run,
            part: None,
            owner: owner.into(),
        };
        let lease = std::time::Duration::from_secs(60);
        for (store, run, _db) in stores(dir.path()) {
            let task = crate::testing::confirm_task(run, "A/ok#0", None);
            store
                .with("record the task", |db| crate::insert_task(db, &task))
                .unwrap();
            assert_eq!(store.claim(run, "w1", lease).unwrap(), Claim::Claimed);
            assert_eq!(store.park(&fence(run, "stranger")).unwrap(), Parking::Lost);
            assert_eq!(store.park(&fence(run, "w1")).unwrap(), Parking::Parked);
            let summary = store.run(run).unwrap().summary;
            assert_eq!(summary.status, crate::RunStatus::Parked, "{store:?}");
            assert_eq!(summary.owner, None);
            assert_eq!(store.claim_next("w2", lease).unwrap(), None, "{store:?}");
            assert_eq!(store.runnable().unwrap(), 0, "not counted as runnable");

            let id = store.task_row_id(run, "A/ok#0").unwrap().unwrap();
            store
                .answer(&format!("task-{id}"), &serde_json::json!(true), "someone")
                .unwrap();
            assert_eq!(store.claim_next("w2", lease).unwrap(), Some(run));
            // Answered, and the run has not taken the answer yet.
            assert_eq!(store.park(&fence(run, "w2")).unwrap(), Parking::Requeued);
            assert_eq!(store.claim_next("w3", lease).unwrap(), Some(run));
        }
    }
}
