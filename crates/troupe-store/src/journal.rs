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

use crate::checkpoint as stored_checkpoint;
use crate::codec::{self, Reader};
use crate::db::args;
use crate::writer::{Fence, LEASE_LOST, Op, Writer};
use crate::{Store, StoreError};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use troupe_check::ir::{LifelineId, StmtId};
use troupe_check::{TypeTable, Value};
use troupe_llm::BoxFuture;
use troupe_msc::Event;
use troupe_runtime::{Checkpoint, Recorded, RunError, RunJournal, StepKey, StepKind};

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
    pub(crate) fn open(
        store: &Store,
        run: i64,
        types: Arc<TypeTable>,
        options: JournalOptions,
    ) -> Result<StoreJournal, StoreError> {
        let corrupt = |message: String| StoreError::Corrupt {
            path: store.shown().to_owned(),
            message,
        };
        let (lifelines, fingerprint, pruned): (i64, String, i64) = store
            .with("load the run", |db| {
                db.query_opt(
                    "SELECT lifelines, fingerprint, pruned FROM runs WHERE id = ?1",
                    args![run],
                )?
                .map(|r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .transpose()
            })?
            .ok_or_else(|| StoreError::UnknownRun(Store::run_name(run)))?;
        let lifelines = lifelines.max(0) as usize;
        type Row = (i64, i64, String, i64, Vec<u8>);
        let latest: Option<Row> = store.with("load the checkpoint", |db| {
            let row = match options.part {
                None => db.query_opt(
                    "SELECT seq, chunk, fingerprint, steps_mark, CAST(data AS BLOB) FROM checkpoints
                     WHERE run = ?1 ORDER BY seq DESC LIMIT 1",
                    args![run],
                )?,
                Some((part, _)) => db.query_opt(
                    "SELECT seq, chunk, fingerprint, steps_mark, CAST(data AS BLOB) FROM part_checkpoints
                     WHERE run = ?1 AND part = ?2",
                    args![run, part],
                )?,
            };
            row.map(|r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
                .transpose()
        })?;
        // A checkpoint of another workflow, or one that does not decode, is
        // not followed: the run replays its history instead, unless the
        // history before it was pruned.
        let checkpoint = match latest {
            None => None,
            Some((seq, chunk, fp, mark, data)) => {
                let usable = if fp != fingerprint {
                    Err(format!("it is of workflow {fp}, the run of {fingerprint}"))
                } else {
                    stored_checkpoint::decode(&data).map_err(|e| e.to_string())
                };
                match usable {
                    Ok(cp) => Some((chunk, mark, cp)),
                    Err(why) if pruned > 0 => {
                        return Err(corrupt(format!(
                            "run {run}: the checkpoint at event {seq} cannot be used ({why}), and the history before it was pruned"
                        )));
                    }
                    Err(why) => {
                        tracing::warn!(run, seq, %why, "ignoring the run's checkpoint; replaying its history");
                        None
                    }
                }
            }
        };
        let (mut stored, first_chunk) = match &checkpoint {
            Some((chunk, _, cp)) => {
                let mut seen = cp.seen.clone();
                seen.resize(lifelines.max(seen.len()), 0);
                (seen, *chunk)
            }
            None => (vec![0u64; lifelines], 0),
        };
        let seen = stored.clone();
        let mut next_chunk = first_chunk;
        let mut mine: Option<i64> = None;
        // A part reads its own chunks only (every `parts`-th from its
        // number): the others' are no business of its replay.
        let chunks = match options.part {
            None => store.chunks(run, first_chunk, None)?,
            Some((part, parts)) => store.part_chunks(run, first_chunk, part, parts)?,
        };
        let mut tail: Vec<Vec<StmtId>> = vec![Vec::new(); stored.len()];
        for (chunk, data) in chunks {
            let events = codec::decode_events(&data)
                .map_err(|e| corrupt(format!("run {run}, event chunk {chunk}: {e}")))?;
            for (l, e) in events {
                if let Some(n) = stored.get_mut(l.0 as usize) {
                    *n += 1;
                }
                if let Some(t) = tail.get_mut(l.0 as usize) {
                    t.push(e.stmt());
                }
            }
            next_chunk = chunk + 1;
            if let Some((part, parts)) = options.part
                && chunk.rem_euclid(i64::from(parts.max(1))) == i64::from(part)
            {
                mine = Some(chunk);
            }
        }
        if let Some((part, parts)) = options.part {
            // After its last chunk, or where its checkpoint says its next
            // one goes, or its first.
            next_chunk = match (mine, &checkpoint) {
                (Some(c), _) => c + i64::from(parts.max(1)),
                (None, Some(_)) => first_chunk,
                (None, None) => i64::from(part),
            };
        }
        // The steps a resumed run may ask for: after a checkpoint, those
        // recorded after it and the ones it was waiting for.
        type StepRow = (String, String, Option<Vec<u8>>);
        let steps: Vec<StepRow> = store.with("load the steps", |db| {
            let select = "SELECT key, status, outputs FROM steps WHERE run = ?1";
            let row = |r: &crate::db::Row| Ok((r.get(0)?, r.get(1)?, r.get(2)?));
            match &checkpoint {
                None => db.query(select, args![run])?.iter().map(row).collect(),
                Some((_, mark, cp)) => {
                    let mut out: Vec<StepRow> = db
                        .query(&format!("{select} AND seq > ?2"), args![run, mark])?
                        .iter()
                        .map(row)
                        .collect::<Result<_, crate::db::DbError>>()?;
                    // With the sub-steps of a pending step (the turns and
                    // tool calls of a model's conversation, a `planner`
                    // call's plan and nested steps): keys under `key/`. (SQLite's LIKE ignores ASCII case, so it may
                    // load a few steps more; they are looked up by exact
                    // key, so they are never used.)
                    for key in &cp.checkpoint.pending {
                        let key = key.to_string();
                        let under = format!("{}/%", like_escape(&key));
                        for r in db.query(
                            &format!("{select} AND (key = ?2 OR key LIKE ?3 ESCAPE '\\')"),
                            args![run, key, under],
                        )? {
                            out.push(row(&r)?);
                        }
                    }
                    Ok(out)
                }
            }
        })?;
        let mut recorded = HashMap::new();
        for (key, status, outputs) in steps {
            let entry = match (status.as_str(), outputs) {
                ("done", Some(bytes)) => {
                    let values = Reader::new(&bytes)
                        .values()
                        .map_err(|e| corrupt(format!("run {run}, step {key}: {e}")))?;
                    Recorded::Done(values)
                }
                _ => Recorded::Started,
            };
            recorded.insert(key, entry);
        }
        let writer = store.writer().map_err(|message| StoreError::Open {
            path: store.shown().to_owned(),
            message,
        })?;
        let fence = options.owner.clone().map(|owner| {
            Arc::new(Fence {
                run,
                part: options.part.map(|(p, _)| p),
                owner,
            })
        });
        Ok(StoreJournal {
            store: store.downgrade(),
            fence,
            lost: Arc::new(AtomicBool::new(false)),
            run,
            writer,
            types,
            buffer: Mutex::new(Buffer {
                // Grown as events come: a run of a few steps must not
                // take a chunk's memory (1,000 concurrent runs spent a
                // fifth of their time having the kernel zero such pages).
                bytes: Vec::new(),
                count: 0,
                next_chunk,
                seen,
                stored,
            }),
            recorded,
            fingerprint,
            options,
            resume: Mutex::new(checkpoint.map(|(_, _, cp)| cp.checkpoint)),
            tail: Mutex::new(Some(tail)),
        })
    }

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

/// `text` as a literal in a LIKE pattern with `\` as the escape.
fn like_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Claim, Durability};
    use troupe_check::ir::StmtId;
    use troupe_runtime::{Checkpoint, LaneState};

    /// A run in each kind of store.
    fn stores(dir: &std::path::Path) -> Vec<(Store, i64, Option<crate::testing::TestDatabase>)> {
        crate::testing::both(dir, Durability::Normal)
            .into_iter()
            .map(|(store, db)| {
                let run = store.create_run(&crate::testing::bare_run("fp")).unwrap();
                (store, run, db)
            })
            .collect()
    }

    fn act() -> Event {
        Event::Act {
            stmt: StmtId(0),
            outputs: None,
        }
    }

    fn checkpoint(events: u64) -> Checkpoint {
        Checkpoint {
            lanes: vec![LaneState {
                pc: 0,
                done: false,
                values: Vec::new(),
                occurrences: Vec::new(),
                parts: Vec::new(),
                keyed: Vec::new(),
                view: None,
            }],
            channels: Vec::new(),
            steps: events,
            events,
            pending: Vec::new(),
            monitor: None,
            crossed: Vec::new(),
            tools: Vec::new(),
        }
    }

    /// Records `n` events with a checkpoint after every `every`, durably.
    fn record(j: &StoreJournal, n: u64, every: u64) {
        for i in 1..=n {
            j.event(LifelineId(0), &act());
            if i % every == 0 {
                j.checkpoint(checkpoint(i));
            }
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(RunJournal::flush(j)).unwrap();
    }

    fn open(store: &Store, run: i64, history: History) -> Result<StoreJournal, StoreError> {
        StoreJournal::open(
            store,
            run,
            Arc::new(TypeTable::default()),
            JournalOptions {
                history,
                ..JournalOptions::default()
            },
        )
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

    fn damage(store: &Store) {
        store
            .with("damage", |db| {
                let sql = match db.dialect() {
                    crate::Dialect::Sqlite => {
                        "UPDATE checkpoints SET data = CAST(substr(data, 1, 3) || x'ff' || substr(data, 5) AS BLOB)"
                    }
                    crate::Dialect::Postgres => "UPDATE checkpoints SET data = set_byte(data, 3, 255)",
                };
                db.execute(sql, &[])
            })
            .unwrap();
    }

    #[test]
    fn the_latest_checkpoint_is_resumed_from_and_the_events_before_it_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        for (store, run, _db) in stores(dir.path()) {
            record(&open(&store, run, History::All).unwrap(), 2_500, 1_000);
            let j = open(&store, run, History::All).unwrap();
            assert_eq!(j.resumes_at(), Some(2_000), "{store:?}");
            let cp = j.resume_from().unwrap();
            assert_eq!(cp.events, 2_000);
            // The replayed tail is dropped, the events after it recorded once.
            for _ in 0..600 {
                j.event(LifelineId(0), &act());
            }
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            rt.block_on(RunJournal::flush(&j)).unwrap();
            assert_eq!(store.run(run).unwrap().events, 2_600);
        }
    }

    /// A run resumed from a checkpoint taken while a model's conversation
    /// was in flight gets the conversation's sub-steps recorded before the
    /// checkpoint (`A/assist#0/…`), and no other step's.
    #[test]
    fn the_sub_steps_of_a_pending_step_are_loaded_with_it() {
        use troupe_runtime::{StepKey, StepKind};
        let key = |action: &str, n| StepKey {
            lifeline: "A".into(),
            action: action.into(),
            occurrence: n,
        };
        let dir = tempfile::tempdir().unwrap();
        for (store, run, _db) in stores(dir.path()) {
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            let j = open(&store, run, History::All).unwrap();
            let steps = [
                key("assist#0/turn", 0),
                key("assist#0/get_user", 1),
                key("get_user#0/turn", 0),
                // Not under a pending step: `_` is no wildcard, and
                // `assist#00` is another step.
                key("getXuser#0/turn", 0),
                key("assist#00/turn", 0),
                key("other", 0),
            ];
            for k in &steps {
                rt.block_on(j.record(k, StepKind::Llm, &[], &[Value::Bool(true)]))
                    .unwrap();
            }
            let mut cp = checkpoint(1_000);
            cp.pending = vec![key("assist", 0), key("get_user", 0)];
            for _ in 0..1_000 {
                j.event(LifelineId(0), &act());
            }
            j.checkpoint(cp);
            rt.block_on(RunJournal::flush(&j)).unwrap();
            drop(j);
            let j = open(&store, run, History::All).unwrap();
            assert_eq!(j.resumes_at(), Some(1_000), "{store:?}");
            let loaded: Vec<bool> = steps.iter().map(|k| j.recorded(k).is_some()).collect();
            assert_eq!(loaded, [true, true, true, false, false, false], "{store:?}");
        }
    }

    #[test]
    fn a_damaged_checkpoint_is_ignored_while_the_history_is_whole() {
        let dir = tempfile::tempdir().unwrap();
        for (store, run, _db) in stores(dir.path()) {
            record(&open(&store, run, History::All).unwrap(), 2_500, 1_000);
            damage(&store);
            let j = open(&store, run, History::All).unwrap();
            assert_eq!(
                j.resumes_at(),
                None,
                "a damaged checkpoint was followed: {store:?}"
            );
            assert!(j.resume_from().is_none());
        }
    }

    #[test]
    fn a_checkpoint_of_another_workflow_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        for (store, run, _db) in stores(dir.path()) {
            record(&open(&store, run, History::All).unwrap(), 2_500, 1_000);
            store
                .with("refingerprint", |db| {
                    db.execute("UPDATE checkpoints SET fingerprint = 'other'", &[])
                })
                .unwrap();
            assert_eq!(open(&store, run, History::All).unwrap().resumes_at(), None);
        }
    }

    #[test]
    fn with_a_pruned_history_a_damaged_checkpoint_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        for (store, run, _db) in stores(dir.path()) {
            record(
                &open(&store, run, History::Keep(1_000)).unwrap(),
                20_000,
                1_000,
            );
            let detail = store.run(run).unwrap();
            assert!(detail.pruned > 0 && detail.events < 4_000, "{detail:?}");
            assert_eq!(
                detail.pruned + detail.events,
                20_000,
                "pruned {} kept {}",
                detail.pruned,
                detail.events
            );
            damage(&store);
            match open(&store, run, History::Keep(1_000)) {
                Err(StoreError::Corrupt { message, .. }) => {
                    assert!(message.contains("pruned"), "{message}");
                }
                other => panic!("expected a corrupt store, got {other:?}"),
            }
            assert!(store.forget_checkpoints(run).is_err());
        }
    }
}
