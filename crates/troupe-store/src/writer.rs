//! The group-commit writer: one thread owns the write connection, takes every
//! queued operation of every run, applies them in one transaction and
//! commits once, then tells each waiter its operation is durable.

use crate::db::{Db, DbError, args};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Condvar, Mutex};
use tokio::sync::oneshot;

/// One write.
#[derive(Debug)]
pub(crate) enum Op {
    Events {
        run: i64,
        chunk: i64,
        count: u32,
        data: Vec<u8>,
    },
    StepStarted {
        run: i64,
        key: String,
        kind: &'static str,
        lifeline: String,
        action: String,
        input_hash: String,
    },
    StepDone {
        run: i64,
        key: String,
        kind: &'static str,
        lifeline: String,
        action: String,
        input_hash: String,
        outputs: Vec<u8>,
        outputs_json: String,
    },
    /// An effect that failed cleanly: its start is forgotten.
    StepForget {
        run: i64,
        key: String,
    },
    Status {
        run: i64,
        status: crate::RunStatus,
    },
    Finish {
        run: i64,
        status: crate::RunStatus,
        result: Option<String>,
        error: Option<String>,
    },
    Task(crate::NewTask),
    /// A durable timer, due `after` ms from now unless already recorded.
    Timer {
        run: i64,
        key: String,
        after: i64,
    },
    /// Message `seq` of a placed run's channel between parts.
    Message {
        run: i64,
        channel: troupe_runtime::RemoteChannel,
        seq: u64,
        data: Vec<u8>,
    },
    /// A part of a placed run ended with these results (a JSON object).
    FinishPart {
        run: i64,
        part: u32,
        result: String,
    },
    /// A model call of `run`'s step `step`.
    LlmCall {
        run: i64,
        step: String,
        call: Box<troupe_runtime::LlmCall>,
    },
    /// A checkpoint of `run` after `seq` events, whose later events start
    /// at `chunk`. Older checkpoints go; with `keep`, so do the events
    /// before the newest checkpoint that leaves at least `keep` events
    /// after it.
    Checkpoint {
        run: i64,
        seq: u64,
        chunk: i64,
        fingerprint: String,
        data: Vec<u8>,
        keep: Option<u64>,
    },
    /// The checkpoint of part `part` of a placed run after `seq` of its
    /// events, whose later events start at its chunk `chunk`: it replaces
    /// the part's previous one (a part's history is kept whole).
    PartCheckpoint {
        run: i64,
        part: u32,
        seq: u64,
        chunk: i64,
        fingerprint: String,
        data: Vec<u8>,
    },
    /// Several operations that must share one transaction.
    Batch(Vec<Op>),
}

pub(crate) struct Request {
    pub op: Op,
    /// The lease the write is made under: without it held, the write is
    /// not applied (see [`Fence`]).
    pub fence: Option<Arc<Fence>>,
    pub done: Option<oneshot::Sender<Result<(), String>>>,
}

/// The lease a journal writes under. A process whose lease expired (it
/// was paused, or cut off from the database, for longer than the lease)
/// and whose run another process claimed is a *zombie*: it does not know
/// yet, and its queued writes would overwrite its successor's event
/// chunks, and its records of effects about to start would pass as the
/// successor's. So every write of a fenced journal is applied only in a
/// transaction that finds the lease still held by its owner, and the
/// holder's row is locked for that transaction (a claim waits for it to
/// commit): the writes of one owner all precede or all follow another's.
/// A fenced-out write fails with [`LEASE_LOST`] and changes nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    pub run: i64,
    /// The part of a placed run whose lease it is (`parts.lease_owner`);
    /// `None`: the run's own (`runs.lease_owner`).
    pub part: Option<u32>,
    pub owner: String,
}

/// How a fenced-out write fails (see [`Fence`]).
pub(crate) const LEASE_LOST: &str =
    "the run's lease was lost to another owner: this process stopped writing it";

/// The handle runs use to queue writes.
#[derive(Clone)]
pub(crate) struct Writer {
    tx: SyncSender<Request>,
    /// The first commit failure: later writes fail with it, so that a run
    /// stops instead of going on with records that were not kept.
    failure: Arc<Mutex<Option<String>>>,
    /// Transactions committed so far.
    commits: Arc<std::sync::atomic::AtomicU64>,
    /// Bytes queued and not yet committed.
    queued: Arc<Queued>,
    /// The writer's thread, joined when the store closes.
    thread: Arc<Mutex<Option<std::thread::JoinHandle<()>>>>,
}

/// The bytes waiting for the writer: a sender waits while more than
/// [`QUEUED_BYTES`] are, so a run that produces events faster than the
/// disk takes them slows down instead of filling memory.
#[derive(Default)]
struct Queued {
    bytes: Mutex<usize>,
    drained: Condvar,
}

impl Queued {
    fn add(&self, n: usize) {
        let Ok(mut b) = self.bytes.lock() else { return };
        while *b > QUEUED_BYTES {
            b = match self.drained.wait(b) {
                Ok(b) => b,
                Err(_) => return,
            };
        }
        *b += n;
    }

    fn sub(&self, n: usize) {
        if let Ok(mut b) = self.bytes.lock() {
            *b = b.saturating_sub(n);
        }
        self.drained.notify_all();
    }
}

/// See [`Queued`]: 8 MiB, about 128 event chunks.
const QUEUED_BYTES: usize = 8 << 20;

impl Op {
    /// About how much memory the operation holds.
    fn bytes(&self) -> usize {
        match self {
            Op::Events { data, .. } | Op::Message { data, .. } => data.len() + 64,
            Op::Checkpoint { data, .. } | Op::PartCheckpoint { data, .. } => data.len(),
            Op::LlmCall { call, .. } => {
                call.prompt.len() + call.answer.as_ref().map_or(0, String::len) + 256
            }
            Op::StepDone {
                outputs,
                outputs_json,
                ..
            } => outputs.len() + outputs_json.len() + 128,
            Op::Batch(ops) => ops.iter().map(Op::bytes).sum(),
            _ => 128,
        }
    }
}

impl Op {
    /// The run the operation writes to (an empty batch: none).
    fn run(&self) -> i64 {
        match self {
            Op::Events { run, .. }
            | Op::StepStarted { run, .. }
            | Op::StepDone { run, .. }
            | Op::StepForget { run, .. }
            | Op::Status { run, .. }
            | Op::Finish { run, .. }
            | Op::Message { run, .. }
            | Op::FinishPart { run, .. }
            | Op::LlmCall { run, .. }
            | Op::Checkpoint { run, .. }
            | Op::PartCheckpoint { run, .. }
            | Op::Timer { run, .. } => *run,
            Op::Task(t) => t.run,
            Op::Batch(ops) => ops.first().map_or(i64::MIN, Op::run),
        }
    }
}

/// How often a batch that lost a lock conflict (a deadlock another
/// process's transaction was chosen to survive, a lock timeout) is tried
/// again before the writer gives up.
const RETRIES: u32 = 8;

/// Queued operations allowed before `send` waits for the writer: bounds
/// memory when runs produce events faster than the disk takes them.
const QUEUE: usize = 4096;
/// At most this many operations go into one transaction.
const BATCH: usize = 8192;

impl Writer {
    pub(crate) fn start(conn: Box<dyn Db>) -> Writer {
        let (tx, rx) = std::sync::mpsc::sync_channel(QUEUE);
        let failure = Arc::new(Mutex::new(None));
        let f = failure.clone();
        let commits = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counter = commits.clone();
        let queued = Arc::new(Queued::default());
        let drained = queued.clone();
        let thread = std::thread::Builder::new()
            .name("troupe-store-writer".into())
            .spawn(move || run(conn, rx, f, counter, drained))
            .map_err(|e| {
                if let Ok(mut slot) = failure.lock() {
                    *slot = Some(format!("cannot start the store writer: {e}"));
                }
            })
            .ok();
        Writer {
            tx,
            failure,
            commits,
            queued,
            thread: Arc::new(Mutex::new(thread)),
        }
    }

    /// Stops the writer once every handle is gone: it commits what is
    /// queued and closes its connection (so SQLite folds the WAL back into
    /// the store and removes it). Waits at most a moment for handles held
    /// elsewhere, never for ever.
    pub(crate) fn close(self) {
        let thread = self.thread.lock().ok().and_then(|mut t| t.take());
        drop(self);
        let Some(thread) = thread else { return };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while !thread.is_finished() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        if thread.is_finished() {
            let _ = thread.join();
        }
    }

    pub(crate) fn commits(&self) -> u64 {
        self.commits.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub(crate) fn failure(&self) -> Option<String> {
        self.failure.lock().ok().and_then(|f| f.clone())
    }

    /// Queues `op` without waiting for it to be durable.
    pub(crate) fn send(&self, op: Op) -> Result<(), String> {
        self.send_under(None, op)
    }

    /// Queues `op`, to be applied only under `fence` (see [`Fence`]),
    /// without waiting for it to be durable.
    pub(crate) fn send_under(&self, fence: Option<&Arc<Fence>>, op: Op) -> Result<(), String> {
        if let Some(f) = self.failure() {
            return Err(f);
        }
        self.queued.add(op.bytes());
        let req = Request {
            op,
            fence: fence.cloned(),
            done: None,
        };
        match self.tx.try_send(req) {
            Ok(()) => Ok(()),
            // The queue is full: wait for the writer (back-pressure).
            Err(TrySendError::Full(req)) => self
                .tx
                .send(req)
                .map_err(|_| "the store writer stopped".to_owned()),
            Err(TrySendError::Disconnected(_)) => Err("the store writer stopped".to_owned()),
        }
    }

    /// Queues `op`; the receiver resolves once it is committed.
    pub(crate) fn send_durable(&self, op: Op) -> oneshot::Receiver<Result<(), String>> {
        self.send_durable_under(None, op)
    }

    /// Queues `op`, to be applied only under `fence`; the receiver
    /// resolves once it is committed, or with [`LEASE_LOST`].
    pub(crate) fn send_durable_under(
        &self,
        fence: Option<&Arc<Fence>>,
        op: Op,
    ) -> oneshot::Receiver<Result<(), String>> {
        let (done, rx) = oneshot::channel();
        if let Some(f) = self.failure() {
            let _ = done.send(Err(f));
            return rx;
        }
        self.queued.add(op.bytes());
        let req = Request {
            op,
            fence: fence.cloned(),
            done: Some(done),
        };
        let req = match self.tx.try_send(req) {
            Ok(()) => return rx,
            Err(TrySendError::Full(req)) => req,
            Err(TrySendError::Disconnected(req)) => {
                if let Some(done) = req.done {
                    let _ = done.send(Err("the store writer stopped".to_owned()));
                }
                return rx;
            }
        };
        if let Err(e) = self.tx.send(req)
            && let Some(done) = e.0.done
        {
            let _ = done.send(Err("the store writer stopped".to_owned()));
        }
        rx
    }
}

fn run(
    mut conn: Box<dyn Db>,
    rx: Receiver<Request>,
    failure: Arc<Mutex<Option<String>>>,
    commits: Arc<std::sync::atomic::AtomicU64>,
    queued: Arc<Queued>,
) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < BATCH {
            match rx.try_recv() {
                Ok(r) => batch.push(r),
                Err(_) => break,
            }
        }
        // Operations of different runs commute (each run's keep their
        // order): applied in run order, the batches of two writers (two
        // processes driving parts of the same runs) take the runs' row
        // locks in one order, so they never deadlock each other.
        batch.sort_by_key(|r| r.op.run());
        let mut attempt = 0;
        let result = loop {
            match commit(conn.as_mut(), &batch) {
                // Rolled back as a whole: trying again applies it once.
                Err(e) if e.kind == crate::db::DbErrorKind::Busy && attempt < RETRIES => {
                    attempt += 1;
                    tracing::debug!(attempt, error = %e, "the store was busy; committing again");
                    std::thread::sleep(std::time::Duration::from_millis(2 << attempt));
                }
                r => break r.map_err(|e| format!("cannot commit to the store: {e}")),
            }
        };
        commits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Err(e) = &result
            && let Ok(mut slot) = failure.lock()
            && slot.is_none()
        {
            *slot = Some(e.clone());
        }
        queued.sub(batch.iter().map(|r| r.op.bytes()).sum());
        for (i, req) in batch.into_iter().enumerate() {
            if let Some(done) = req.done {
                let _ = done.send(match &result {
                    Ok(applied) if !applied[i] => Err(LEASE_LOST.to_owned()),
                    Ok(_) => Ok(()),
                    Err(e) => Err(e.clone()),
                });
            }
        }
    }
}

/// Applies `batch` in one transaction; says of each request whether it
/// was applied (`false`: fenced out, see [`Fence`]). A lost lease is the
/// writing run's, never the batch's: the other runs' writes go in.
fn commit(db: &mut dyn Db, batch: &[Request]) -> Result<Vec<bool>, DbError> {
    db.transaction(|tx| {
        let mut applied = Vec::with_capacity(batch.len());
        // Fences checked in this transaction: few, as the batch is sorted
        // by run.
        let mut checked: Vec<(&Fence, bool)> = Vec::new();
        for req in batch {
            let held = match &req.fence {
                None => true,
                Some(f) => match checked.iter().find(|(g, _)| *g == f.as_ref()) {
                    Some(&(_, held)) => held,
                    None => {
                        let held = holds(tx, f)?;
                        if !held {
                            tracing::warn!(run = f.run, part = ?f.part, owner = %f.owner, "a write under a lost lease was not applied");
                        }
                        checked.push((f, held));
                        held
                    }
                },
            };
            if held {
                apply(tx, &req.op)?;
            }
            applied.push(held);
        }
        Ok(applied)
    })
}

/// Whether `fence`'s owner holds its lease, locking the holder's row for
/// the transaction (PostgreSQL; a SQLite write transaction excludes every
/// other writer already).
pub(crate) fn holds(tx: &mut dyn Db, fence: &Fence) -> Result<bool, DbError> {
    let lock = crate::lease::for_share(&*tx);
    let row = match fence.part {
        None => tx.query_opt(
            &format!("SELECT 1 FROM runs WHERE id = ?1 AND lease_owner = ?2{lock}"),
            args![fence.run, &fence.owner],
        )?,
        Some(part) => tx.query_opt(
            &format!("SELECT 1 FROM parts WHERE run = ?1 AND part = ?2 AND lease_owner = ?3{lock}"),
            args![fence.run, part, &fence.owner],
        )?,
    };
    Ok(row.is_some())
}

fn apply(tx: &mut dyn Db, op: &Op) -> Result<(), DbError> {
    match op {
        Op::Events {
            run,
            chunk,
            count,
            data,
        } => {
            tx.execute(
                "INSERT INTO events(run, chunk, count, data) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(run, chunk) DO UPDATE SET count = excluded.count, data = excluded.data",
                args![run, chunk, count, data],
            )?;
        }
        Op::StepStarted {
            run,
            key,
            kind,
            lifeline,
            action,
            input_hash,
        } => {
            tx.execute("INSERT INTO steps(run, key, kind, lifeline, action, input_hash, status, started_at, seq)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'started', strftime('%Y-%m-%dT%H:%M:%fZ','now'),
                   (SELECT coalesce(max(seq), 0) + 1 FROM steps WHERE run = ?1))
                 ON CONFLICT(run, key) DO NOTHING", args![run, key, kind, lifeline, action, input_hash])?;
        }
        Op::StepDone {
            run,
            key,
            kind,
            lifeline,
            action,
            input_hash,
            outputs,
            outputs_json,
        } => {
            tx.execute("INSERT INTO steps(run, key, kind, lifeline, action, input_hash, status, outputs, outputs_json, started_at, finished_at, seq)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'done', ?7, ?8, strftime('%Y-%m-%dT%H:%M:%fZ','now'), strftime('%Y-%m-%dT%H:%M:%fZ','now'),
                   (SELECT coalesce(max(seq), 0) + 1 FROM steps WHERE run = ?1))
                 ON CONFLICT(run, key) DO UPDATE SET status = 'done', outputs = excluded.outputs,
                   outputs_json = excluded.outputs_json, finished_at = excluded.finished_at", args![run, key, kind, lifeline, action, input_hash, outputs, outputs_json])?;
        }
        Op::StepForget { run, key } => {
            tx.execute(
                "DELETE FROM steps WHERE run = ?1 AND key = ?2 AND status = 'started'",
                args![run, key],
            )?;
        }
        Op::Status { run, status } => {
            tx.execute("UPDATE runs SET status = ?2, updated_at = strftime('%Y-%m-%dT%H:%M:%fZ','now')
                 WHERE id = ?1 AND status NOT IN ('done', 'failed', 'cancelled', 'needs_resolution')", args![run, status.as_str()])?;
        }
        Op::Finish {
            run,
            status,
            result,
            error,
        } => {
            tx.execute("UPDATE runs SET status = ?2, result = ?3, error = ?4, updated_at = strftime('%Y-%m-%dT%H:%M:%fZ','now')
                 WHERE id = ?1 AND status <> 'cancelled'", args![run, status.as_str(), result, error])?;
        }
        Op::Task(t) => crate::insert_task(tx, t)?,
        Op::Timer { run, key, after } => crate::timer::insert_timer(tx, *run, key, *after)?,
        Op::Message {
            run,
            channel,
            seq,
            data,
        } => crate::placement::insert_message(tx, *run, *channel, *seq, data)?,
        Op::FinishPart { run, part, result } => {
            crate::placement::finish_part(tx, *run, *part, result)?;
        }
        Op::LlmCall { run, step, call } => {
            let retries = serde_json::to_string(&call.retries).unwrap_or_else(|_| "[]".into());
            let usage = call.usage;
            tx.execute("INSERT INTO llm_calls(run, step, model, system, prompt, answer, outputs, input_tokens,
                   output_tokens, cached_input_tokens, latency_ms, attempts, retries, cost_usd, error, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15,
                   strftime('%Y-%m-%dT%H:%M:%fZ','now'))", args![
                run,
                step,
                &call.model,
                &call.system,
                &call.prompt,
                &call.answer,
                call.outputs.as_ref().map(|o| o.to_string()),
                usage.map(|u| u.input_tokens as i64),
                usage.map(|u| u.output_tokens as i64),
                usage.map(|u| u.cached_input_tokens as i64),
                call.latency_ms as i64,
                call.attempts,
                retries,
                call.cost_usd,
                &call.error,
            ])?;
        }
        Op::Checkpoint {
            run,
            seq,
            chunk,
            fingerprint,
            data,
            keep,
        } => {
            let seq = *seq as i64;
            // The steps recorded before this point stay where they are:
            // a resumed run reads those after the mark, and the pending
            // ones the checkpoint names.
            tx.execute("INSERT INTO checkpoints(run, seq, chunk, fingerprint, steps_mark, data)
                 VALUES (?1, ?2, ?3, ?4, (SELECT coalesce(max(seq), 0) FROM steps WHERE run = ?1), ?5)
                 ON CONFLICT(run, seq) DO UPDATE SET chunk = excluded.chunk, fingerprint = excluded.fingerprint,
                   steps_mark = excluded.steps_mark, data = excluded.data", args![run, seq, chunk, fingerprint, data])?;
            crate::retention::apply(tx, *run, seq, *keep)?;
        }
        Op::PartCheckpoint {
            run,
            part,
            seq,
            chunk,
            fingerprint,
            data,
        } => {
            tx.execute("INSERT INTO part_checkpoints(run, part, seq, chunk, fingerprint, steps_mark, data)
                 VALUES (?1, ?2, ?3, ?4, ?5, (SELECT coalesce(max(seq), 0) FROM steps WHERE run = ?1), ?6)
                 ON CONFLICT(run, part) DO UPDATE SET seq = excluded.seq, chunk = excluded.chunk,
                   fingerprint = excluded.fingerprint, steps_mark = excluded.steps_mark, data = excluded.data",
                args![run, part, *seq as i64, chunk, fingerprint, data])?;
        }
        Op::Batch(ops) => {
            for op in ops {
                apply(tx, op)?;
            }
        }
    }
    Ok(())
}
