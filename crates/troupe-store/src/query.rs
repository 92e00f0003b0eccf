//! Reading the store (runs, events, steps, tasks) and the writes of commands:
//! answering a task, settling an unfinished effect.

use crate::codec;
use crate::db::{Db, DbError, Dialect, Row, args};
use crate::state::{RunStatus, StepStatus, TaskKind, TaskStatus};
use crate::{NOW_MS, Store, StoreError};
use serde::Serialize;
use std::collections::BTreeMap;
use troupe_check::Value;
use troupe_check::ir::LifelineId;
use troupe_msc::Event;

#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    pub id: i64,
    pub name: String,
    pub workflow: String,
    pub file: Option<String>,
    /// `stalled` when it is unfinished and no live owner holds its lease.
    pub status: RunStatus,
    pub result: Option<serde_json::Value>,
    /// The whole error of a failed run (or why it was cancelled).
    pub error: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    /// The owner holding a live lease, if any.
    pub owner: Option<String>,
    /// Milliseconds until the owner's lease expires (0 without an owner).
    pub lease_expires_in_ms: i64,
    /// Its workflow's version: 1 as started, one more per `troupe upgrade`.
    pub version: i64,
}

/// What [`Store::park`] did with a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parking {
    /// Parked until one of its tasks is answered.
    Parked,
    /// A task of it was answered meanwhile: queued again, for any worker.
    Requeued,
    /// Its owner no longer held its lease: nothing changed.
    Lost,
}

/// Events of a run, with their lifelines, in the order they were recorded.
pub type Events = Vec<(LifelineId, Event)>;

#[derive(Debug, Clone, Serialize)]
pub struct RunDetail {
    #[serde(flatten)]
    pub summary: RunSummary,
    pub source: String,
    pub fingerprint: String,
    pub canonical: String,
    pub inputs: serde_json::Value,
    #[serde(skip)]
    pub input_values: Vec<Value>,
    pub seed: u64,
    pub lifelines: usize,
    pub llm: Option<String>,
    /// The run's settings (JSON), as recorded when it started.
    pub settings: serde_json::Value,
    /// Someone asked to cancel the run, with this reason.
    pub cancel_requested: Option<String>,
    /// The run's identity across stores, never reused (a UUID): in every
    /// idempotency key the run hands out. `name` (`run-3`) is for people.
    pub uid: String,
    /// The run it was forked from (`troupe fork`), and where.
    pub lineage: Option<crate::Lineage>,
    /// Events in the store (the retained history).
    pub events: u64,
    /// Events pruned by retention before the retained history (which
    /// starts at a checkpoint).
    pub pruned: u64,
    pub steps: Vec<StepRow>,
    /// The human tasks the run waits on.
    pub pending_tasks: Vec<TaskRow>,
}

/// One model call, as recorded.
#[derive(Debug, Clone, Serialize)]
pub struct LlmCallRow {
    /// The step that called the model (`Lifeline/action#n`).
    pub step: String,
    pub model: String,
    pub system: Option<String>,
    pub prompt: String,
    pub answer: Option<String>,
    pub outputs: Option<serde_json::Value>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cached_input_tokens: Option<u64>,
    pub latency_ms: u64,
    pub attempts: u32,
    pub retries: Vec<String>,
    pub cost_usd: Option<f64>,
    pub error: Option<String>,
    pub at: String,
}

/// What a run spent: model calls, tokens, cost, time with models and with
/// people.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RunTotals {
    pub llm_calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_input_tokens: u64,
    /// `None` when no call had a known price.
    pub cost_usd: Option<f64>,
    pub model_ms: u64,
    /// From each task's creation to its answer (or to now, while pending).
    pub human_wait_ms: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct StepRow {
    /// `Lifeline/action#n`: the key `troupe resolve` takes.
    pub key: String,
    pub kind: String,
    pub status: StepStatus,
    pub input_hash: String,
    pub outputs: Option<serde_json::Value>,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TaskRow {
    pub id: String,
    pub run: String,
    pub key: String,
    pub lifeline: String,
    pub action: String,
    pub kind: TaskKind,
    pub prompt: String,
    pub prefill: Option<String>,
    pub options: Vec<String>,
    /// The answer's type as the language writes it (`Int`, `[Text]`, …).
    #[serde(rename = "type")]
    pub ty: String,
    /// The answer's JSON Schema.
    pub schema: Option<serde_json::Value>,
    pub status: TaskStatus,
    pub answer: Option<String>,
    pub answered_by: Option<String>,
    pub created_at: String,
    pub answered_at: Option<String>,
}

/// How many columns [`summary_columns`] selects.
const SUMMARY_WIDTH: usize = 11;

fn summary_columns() -> String {
    format!(
        "id, workflow, file, status, result, error, created_at, updated_at, \
         CASE WHEN placed <> 0 THEN (SELECT min(p.lease_owner) FROM parts p \
                WHERE p.run = runs.id AND p.lease_owner IS NOT NULL AND p.lease_expires > {NOW_MS}) \
              WHEN lease_owner IS NOT NULL AND lease_expires > {NOW_MS} THEN lease_owner END, \
         CASE WHEN placed <> 0 THEN COALESCE((SELECT max(p.lease_expires) - {NOW_MS} FROM parts p \
                WHERE p.run = runs.id AND p.lease_expires > {NOW_MS}), 0) \
              WHEN lease_expires > {NOW_MS} THEN lease_expires - {NOW_MS} ELSE 0 END, version"
    )
}

fn summary(r: &Row) -> Result<RunSummary, DbError> {
    let id: i64 = r.get(0)?;
    let stored: String = r.get(3)?;
    // An owner on this machine whose process is gone holds nothing, however
    // long its lease would run (see `owner.rs`).
    let owner: Option<String> = r
        .get::<Option<String>>(8)?
        .filter(|o| crate::owner::liveness(o) != crate::owner::Liveness::Gone);
    let mut status: RunStatus = stored.parse().unwrap_or(RunStatus::Failed);
    // Started and nobody holds a live lease (of a placed run: of any of
    // its parts): stalled. A queued run waits for a worker, as it should.
    if matches!(status, RunStatus::Running | RunStatus::Waiting) && owner.is_none() {
        status = RunStatus::Stalled;
    }
    let result: Option<String> = r.get(4)?;
    Ok(RunSummary {
        id,
        name: Store::run_name(id),
        workflow: r.get(1)?,
        file: r.get(2)?,
        status,
        result: result.and_then(|s| serde_json::from_str(&s).ok()),
        error: r.get(5)?,
        created_at: r.get(6)?,
        updated_at: r.get(7)?,
        lease_expires_in_ms: if owner.is_some() { r.get(9)? } else { 0 },
        owner,
        version: r.get(10)?,
    })
}

const TASK_COLUMNS: &str = "id, run, key, lifeline, action, kind, prompt, prefill, options, status, answer, answered_by, created_at, answered_at, type, schema";

fn task(r: &Row) -> Result<TaskRow, DbError> {
    let id: i64 = r.get(0)?;
    let run: i64 = r.get(1)?;
    let options: String = r.get(8)?;
    let kind: String = r.get(5)?;
    let status: String = r.get(9)?;
    let schema: Option<String> = r.get(15)?;
    Ok(TaskRow {
        id: format!("task-{id}"),
        run: Store::run_name(run),
        key: r.get(2)?,
        lifeline: r.get(3)?,
        action: r.get(4)?,
        kind: kind.parse().unwrap_or(TaskKind::Input),
        prompt: r.get(6)?,
        prefill: r.get(7)?,
        options: serde_json::from_str(&options).unwrap_or_default(),
        ty: r.get(14)?,
        schema: schema.and_then(|s| serde_json::from_str(&s).ok()),
        status: status.parse().unwrap_or(TaskStatus::Pending),
        answer: r.get(10)?,
        answered_by: r.get(11)?,
        created_at: r.get(12)?,
        answered_at: r.get(13)?,
    })
}

pub(crate) fn parse_task_id(text: &str) -> Option<i64> {
    text.trim().trim_start_matches("task-").parse().ok()
}

impl Store {
    /// Runs, newest first, optionally with one status.
    pub fn runs(&self, status: Option<RunStatus>) -> Result<Vec<RunSummary>, StoreError> {
        let all = self.with("list the runs", |db| {
            db.query(
                &format!("SELECT {} FROM runs ORDER BY id DESC", summary_columns()),
                &[],
            )?
            .iter()
            .map(summary)
            .collect::<Result<Vec<_>, _>>()
        })?;
        Ok(all
            .into_iter()
            .filter(|r| status.is_none_or(|s| r.status == s))
            .collect())
    }

    /// The runs `troupe run FILE --store` may continue instead of starting
    /// another: the unfinished runs of `workflow` from `file`, newest
    /// first, and the newest run of them done with this `fingerprint` and
    /// these `inputs` (canonical JSON). Two queries on the runs' workflow
    /// and status: the cost does not grow with the store's finished runs.
    pub fn continuable(
        &self,
        workflow: &str,
        file: &str,
        fingerprint: &str,
        inputs: &str,
    ) -> Result<(Vec<RunSummary>, Option<RunSummary>), StoreError> {
        // The unfinished statuses as a list the index can seek (`NOT IN`
        // the final ones would read every finished run of the workflow).
        let unfinished: Vec<String> = RunStatus::ALL
            .iter()
            .filter(|s| !s.is_final())
            .map(|s| format!("'{}'", s.as_str()))
            .collect();
        self.with("find a run to continue", |db| {
            let unfinished = db
                .query(
                    &format!(
                        "SELECT {} FROM runs WHERE workflow = ?1 AND status IN ({}) \
                         AND file = ?2 ORDER BY id DESC",
                        summary_columns(),
                        unfinished.join(", ")
                    ),
                    args![workflow, file],
                )?
                .iter()
                .map(summary)
                .collect::<Result<Vec<_>, _>>()?;
            // By the finished runs' index (`runs_done`): PostgreSQL's holds
            // the inputs' digest.
            let digest = match db.dialect() {
                Dialect::Sqlite => "",
                Dialect::Postgres => "AND md5(inputs) = md5(?4) ",
            };
            let done = db
                .query_opt(
                    &format!(
                        "SELECT {} FROM runs WHERE status = 'done' AND fingerprint = ?3 {digest}\
                         AND inputs = ?4 AND workflow = ?1 AND file = ?2 ORDER BY id DESC LIMIT 1",
                        summary_columns()
                    ),
                    args![workflow, file, fingerprint, inputs],
                )?
                .map(|r| summary(&r))
                .transpose()?;
            Ok((unfinished, done))
        })
    }

    pub fn run(&self, id: i64) -> Result<RunDetail, StoreError> {
        // The detail's columns follow the summary's.
        const W: usize = SUMMARY_WIDTH;
        let row = self.with("read the run", |db| {
            let Some(r) = db.query_opt(
                &format!("SELECT {}, source, fingerprint, canonical, inputs, inputs_bin, seed, lifelines, llm, settings, cancel_requested, uid, forked_from, forked_at FROM runs WHERE id = ?1", summary_columns()),
                args![id],
            )? else {
                return Ok(None);
            };
            let inputs: String = r.get(W + 3)?;
            let bin: Vec<u8> = r.get(W + 4)?;
            let seed: i64 = r.get(W + 5)?;
            let lifelines: i64 = r.get(W + 6)?;
            let settings: String = r.get(W + 8)?;
            Ok(Some((
                summary(&r)?,
                r.get::<String>(W)?,
                r.get::<String>(W + 1)?,
                r.get::<String>(W + 2)?,
                inputs,
                bin,
                seed,
                lifelines,
                r.get::<Option<String>>(W + 7)?,
                settings,
                r.get::<Option<String>>(W + 9)?,
                r.get::<Option<String>>(W + 10)?,
                r.get::<Option<i64>>(W + 11)?.map(|from| crate::Lineage {
                    forked_from: Store::run_name(from),
                    at: r.get::<Option<String>>(W + 12).ok().flatten(),
                }),
            )))
        })?;
        let Some((
            summary,
            source,
            fingerprint,
            canonical,
            inputs,
            bin,
            seed,
            lifelines,
            llm,
            settings,
            cancel_requested,
            uid,
            lineage,
        )) = row
        else {
            return Err(StoreError::UnknownRun(Store::run_name(id)));
        };
        let input_values = codec::Reader::new(&bin)
            .values()
            .map_err(|e| StoreError::Corrupt {
                path: self.shown().to_owned(),
                message: format!("inputs of run {id}: {e}"),
            })?;
        let (events, pruned, _) = self.count_events(id)?;
        let (events, pruned) = (events as i64, pruned as i64);
        Ok(RunDetail {
            summary,
            source,
            fingerprint,
            canonical,
            inputs: serde_json::from_str(&inputs).unwrap_or(serde_json::Value::Null),
            input_values,
            seed: seed as u64,
            lifelines: lifelines.max(0) as usize,
            llm,
            settings: serde_json::from_str(&settings).unwrap_or(serde_json::Value::Null),
            cancel_requested,
            // Only a store written outside troupe lacks it.
            uid: uid.unwrap_or_else(|| Store::run_name(id)),
            lineage,
            events: events.max(0) as u64,
            pruned: pruned.max(0) as u64,
            steps: self.steps(id)?,
            pending_tasks: self.run_tasks(id, true)?,
        })
    }

    /// The outputs of a run's finished steps by key, decoded from the copy
    /// a resumed run replays ([`StepRow::outputs`] is the JSON copy people
    /// read). A copy that does not decode is a corrupt store.
    pub fn step_values(&self, run: i64) -> Result<BTreeMap<String, Vec<Value>>, StoreError> {
        let rows: Vec<(String, Option<Vec<u8>>)> = self.with("read the steps' outputs", |db| {
            db.query(
                "SELECT key, outputs FROM steps WHERE run = ?1 AND status = 'done'",
                args![run],
            )?
            .iter()
            .map(|r| Ok((r.get(0)?, r.get(1)?)))
            .collect()
        })?;
        rows.into_iter()
            .filter_map(|(key, bytes)| bytes.map(|b| (key, b)))
            .map(|(key, bytes)| {
                let values =
                    codec::Reader::new(&bytes)
                        .values()
                        .map_err(|e| StoreError::Corrupt {
                            path: self.shown().to_owned(),
                            message: format!("run {run}, step {key}: {e}"),
                        })?;
                Ok((key, values))
            })
            .collect()
    }

    pub fn steps(&self, run: i64) -> Result<Vec<StepRow>, StoreError> {
        self.with("read the steps", |db| {
            db.query(
                "SELECT key, kind, status, input_hash, outputs_json, started_at, finished_at FROM steps WHERE run = ?1 ORDER BY started_at, key",
                args![run],
            )?
            .iter()
            .map(|r| {
                let outputs: Option<String> = r.get(4)?;
                let status: String = r.get(2)?;
                Ok(StepRow {
                    key: r.get(0)?,
                    kind: r.get(1)?,
                    status: status.parse().unwrap_or(StepStatus::Started),
                    input_hash: r.get(3)?,
                    outputs: outputs.and_then(|s| serde_json::from_str(&s).ok()),
                    started_at: r.get(5)?,
                    finished_at: r.get(6)?,
                })
            })
            .collect()
        })
    }

    /// Event chunks `(chunk, data)` of a run from `from_chunk` on, at most
    /// `limit` of them.
    pub(crate) fn chunks(
        &self,
        run: i64,
        from_chunk: i64,
        limit: Option<usize>,
    ) -> Result<Vec<(i64, Vec<u8>)>, StoreError> {
        self.with("read the events", |db| {
            let rows = match limit {
                Some(n) => db.query(
                    "SELECT chunk, data FROM events WHERE run = ?1 AND chunk >= ?2 ORDER BY chunk LIMIT ?3",
                    args![run, from_chunk, n as i64],
                )?,
                None => db.query(
                    "SELECT chunk, data FROM events WHERE run = ?1 AND chunk >= ?2 ORDER BY chunk",
                    args![run, from_chunk],
                )?,
            };
            rows.iter().map(|r| Ok((r.get(0)?, r.get(1)?))).collect()
        })
    }

    /// The event chunks of part `part` of `parts` of a placed run from
    /// `from_chunk` on (a part writes the chunks `part + k × parts`).
    pub(crate) fn part_chunks(
        &self,
        run: i64,
        from_chunk: i64,
        part: u32,
        parts: u32,
    ) -> Result<Vec<(i64, Vec<u8>)>, StoreError> {
        self.with("read the part's events", |db| {
            db.query(
                "SELECT chunk, data FROM events WHERE run = ?1 AND chunk >= ?2 AND chunk % ?3 = ?4 ORDER BY chunk",
                args![run, from_chunk, parts.max(1), part],
            )?
            .iter()
            .map(|r| Ok((r.get(0)?, r.get(1)?)))
            .collect()
        })
    }

    /// The recorded events of a run, in the order they were recorded, from
    /// chunk `from_chunk` on; also returns the next chunk number (for `--follow`).
    pub fn events(
        &self,
        run: i64,
        from_chunk: i64,
    ) -> Result<(Vec<(LifelineId, Event)>, i64), StoreError> {
        let chunks = self.chunks(run, from_chunk, None)?;
        self.decode_chunks(run, from_chunk, chunks)
    }

    /// At most `max_chunks` chunks of a run's events from chunk
    /// `from_chunk` on, and the next chunk number: a page of a long run.
    pub fn events_page(
        &self,
        run: i64,
        from_chunk: i64,
        max_chunks: usize,
    ) -> Result<(Vec<(LifelineId, Event)>, i64), StoreError> {
        let chunks = self.chunks(run, from_chunk, Some(max_chunks))?;
        self.decode_chunks(run, from_chunk, chunks)
    }

    /// The retained events of a run with indices in `range` (counted from
    /// the first retained event), reading only the chunks that hold them;
    /// also returns how many events are retained and the chunk after the
    /// last one (to follow the run from there).
    pub fn events_range(
        &self,
        run: i64,
        range: std::ops::Range<u64>,
    ) -> Result<(Events, u64, i64), StoreError> {
        let (total, _, next_chunk) = self.count_events(run)?;
        // From the newest chunk back, until the range's start: a window
        // near the end (what pages show) reads only the last chunks.
        let counts: Vec<(i64, i64)> = self.with("count the events", |db| {
            db.query(
                "SELECT chunk, count FROM events WHERE run = ?1 AND chunk < ?2 ORDER BY chunk DESC",
                args![run, next_chunk],
            )?
            .iter()
            .map(|r| Ok((r.get(0)?, r.get(1)?)))
            .collect()
        })?;
        let mut chunks = Vec::new();
        let mut end = total;
        for (chunk, n) in counts {
            let n = n.max(0) as u64;
            let start = end.saturating_sub(n);
            if start < range.end && end > range.start {
                chunks.push((chunk, start));
            }
            if start <= range.start {
                break;
            }
            end = start;
        }
        let mut out = Vec::new();
        for (chunk, start) in chunks.into_iter().rev() {
            let (events, _) = self.events_page(run, chunk, 1)?;
            for (i, e) in events.into_iter().enumerate() {
                if range.contains(&(start + i as u64)) {
                    out.push(e);
                }
            }
        }
        Ok((out, total, next_chunk))
    }

    /// How many events of a run the store holds, how many retention
    /// pruned, and the chunk after the last: from the latest checkpoint
    /// (which knows how many came before it) and the chunks after it, so
    /// counting a long run does not read its history.
    fn count_events(&self, run: i64) -> Result<(u64, u64, i64), StoreError> {
        self.with("count the events", |db| {
            let r = db.query_one(
                "SELECT r.pruned, k.seq, k.chunk FROM runs r
                 LEFT JOIN (SELECT seq, chunk FROM checkpoints WHERE run = ?1 ORDER BY seq DESC LIMIT 1) k ON 1 = 1
                 WHERE r.id = ?1",
                args![run],
            )?;
            let pruned: i64 = r.get(0)?;
            let seq: Option<i64> = r.get(1)?;
            let chunk: Option<i64> = r.get(2)?;
            let (before, from) = match seq.zip(chunk) {
                Some((seq, chunk)) => ((seq - pruned).max(0), chunk),
                None => (0, 0),
            };
            let r = db.query_one(
                "SELECT CAST(coalesce(sum(count), 0) AS BIGINT), max(chunk) FROM events WHERE run = ?1 AND chunk >= ?2",
                args![run, from],
            )?;
            let (tail, last): (i64, Option<i64>) = (r.get(0)?, r.get(1)?);
            let next = last.map_or(from, |l| l + 1);
            Ok(((before + tail).max(0) as u64, pruned.max(0) as u64, next))
        })
    }

    fn decode_chunks(
        &self,
        run: i64,
        from_chunk: i64,
        chunks: Vec<(i64, Vec<u8>)>,
    ) -> Result<(Vec<(LifelineId, Event)>, i64), StoreError> {
        let mut out = Vec::new();
        let mut next = from_chunk;
        for (chunk, data) in chunks {
            let events = codec::decode_events(&data).map_err(|e| StoreError::Corrupt {
                path: self.shown().to_owned(),
                message: format!("run {run}, chunk {chunk}: {e}"),
            })?;
            out.extend(events);
            next = chunk + 1;
        }
        Ok((out, next))
    }

    /// Streams the recorded events of a run, in the order they were
    /// recorded, one chunk in memory at a time.
    pub fn for_each_event(
        &self,
        run: i64,
        f: impl FnMut(LifelineId, &Event),
    ) -> Result<u64, StoreError> {
        self.for_each_event_from(run, 0, f)
    }

    /// [`Store::for_each_event`] from chunk `first` on.
    pub fn for_each_event_from(
        &self,
        run: i64,
        first: i64,
        mut f: impl FnMut(LifelineId, &Event),
    ) -> Result<u64, StoreError> {
        let mut n = 0u64;
        let mut next = first;
        loop {
            // A page of chunks at a time: memory follows the page, not
            // the history.
            let page = self.chunks(run, next, Some(4))?;
            let Some((last, _)) = page.last() else {
                return Ok(n);
            };
            next = last + 1;
            for (chunk, data) in page {
                let events = codec::decode_events(&data).map_err(|e| StoreError::Corrupt {
                    path: self.shown().to_owned(),
                    message: format!("run {run}, chunk {chunk}: {e}"),
                })?;
                for (l, e) in &events {
                    f(*l, e);
                    n += 1;
                }
            }
        }
    }

    /// The latest checkpoint of a run: after how many events, and its size
    /// in bytes.
    pub fn checkpoints(&self, run: i64) -> Result<Option<(u64, u64)>, StoreError> {
        self.with("read the checkpoints", |db| {
            db.query_opt(
                "SELECT seq, CAST(length(data) AS BIGINT) FROM checkpoints WHERE run = ?1 ORDER BY seq DESC LIMIT 1",
                args![run],
            )?
            .map(|r| Ok((r.get::<i64>(0)? as u64, r.get::<i64>(1)? as u64)))
            .transpose()
        })
    }

    /// Prunes a run's history to the last `keep` events at least, from a
    /// checkpoint on (see `retention.rs`); returns the events pruned now.
    /// A run without a checkpoint that old keeps its history.
    pub fn prune_history(&self, run: i64, keep: u64) -> Result<u64, StoreError> {
        let before = self.run(run)?.pruned;
        self.transaction("prune the history", |tx| {
            let total: i64 = tx
                .query_one(
                    "SELECT pruned + CAST(coalesce((SELECT sum(count) FROM events WHERE run = ?1), 0) AS BIGINT)
                     FROM runs WHERE id = ?1",
                    args![run],
                )?
                .get(0)?;
            crate::retention::apply(tx, run, total, Some(keep))
        })?;
        Ok(self.run(run)?.pruned - before)
    }

    /// A run's model calls, oldest first.
    pub fn llm_calls(&self, run: i64) -> Result<Vec<LlmCallRow>, StoreError> {
        self.with("read the model calls", |db| {
            db.query(
                "SELECT step, model, system, prompt, answer, outputs, input_tokens, output_tokens,
                   cached_input_tokens, latency_ms, attempts, retries, cost_usd, error, created_at
                 FROM llm_calls WHERE run = ?1 ORDER BY id",
                args![run],
            )?
            .iter()
            .map(|r| {
                let outputs: Option<String> = r.get(5)?;
                let retries: String = r.get(11)?;
                let count = |i: usize| -> Result<Option<u64>, DbError> {
                    Ok(r.get::<Option<i64>>(i)?.map(|n| n.max(0) as u64))
                };
                Ok(LlmCallRow {
                    step: r.get(0)?,
                    model: r.get(1)?,
                    system: r.get(2)?,
                    prompt: r.get(3)?,
                    answer: r.get(4)?,
                    outputs: outputs.and_then(|o| serde_json::from_str(&o).ok()),
                    input_tokens: count(6)?,
                    output_tokens: count(7)?,
                    cached_input_tokens: count(8)?,
                    latency_ms: r.get::<i64>(9)?.max(0) as u64,
                    attempts: r.get(10)?,
                    retries: serde_json::from_str(&retries).unwrap_or_default(),
                    cost_usd: r.get(12)?,
                    error: r.get(13)?,
                    at: r.get(14)?,
                })
            })
            .collect()
        })
    }

    /// Every run's totals (runs without calls or tasks are absent).
    pub fn run_totals(&self) -> Result<BTreeMap<i64, RunTotals>, StoreError> {
        let mut totals: BTreeMap<i64, RunTotals> = BTreeMap::new();
        let dialect = self.dialect();
        self.with("sum the model calls", |db| {
            let rows = db.query(
                "SELECT run, count(*), CAST(coalesce(sum(input_tokens), 0) AS BIGINT), CAST(coalesce(sum(output_tokens), 0) AS BIGINT),
                   CAST(coalesce(sum(cached_input_tokens), 0) AS BIGINT), sum(cost_usd), CAST(coalesce(sum(latency_ms), 0) AS BIGINT)
                 FROM llm_calls GROUP BY run",
                &[],
            )?;
            for r in &rows {
                let n = |i: usize| -> Result<u64, DbError> { Ok(r.get::<i64>(i)?.max(0) as u64) };
                let t = totals.entry(r.get(0)?).or_default();
                t.llm_calls = n(1)?;
                t.input_tokens = n(2)?;
                t.output_tokens = n(3)?;
                t.cached_input_tokens = n(4)?;
                t.cost_usd = r.get(5)?;
                t.model_ms = n(6)?;
            }
            // Times are ISO 8601 text in both databases; each measures
            // the span its own way.
            let span = match dialect {
                crate::Dialect::Sqlite => {
                    "CAST((julianday(coalesce(answered_at, strftime('%Y-%m-%dT%H:%M:%fZ','now')))
                       - julianday(created_at)) * 86400000 AS INTEGER)"
                }
                crate::Dialect::Postgres => {
                    "CAST(extract(epoch FROM (coalesce(CAST(answered_at AS TIMESTAMP), clock_timestamp() AT TIME ZONE 'UTC')
                       - CAST(created_at AS TIMESTAMP))) * 1000 AS BIGINT)"
                }
            };
            let rows = db.query(
                &format!("SELECT run, CAST(coalesce(sum({span}), 0) AS BIGINT) FROM tasks GROUP BY run"),
                &[],
            )?;
            for r in &rows {
                totals.entry(r.get(0)?).or_default().human_wait_ms = r.get::<i64>(1)?.max(0) as u64;
            }
            Ok(())
        })?;
        Ok(totals)
    }

    /// Deletes a run's checkpoints: it then resumes by replaying its whole
    /// history (a baseline for benchmarks; a way out of a checkpoint one
    /// does not trust). Refused when retention pruned the history.
    pub fn forget_checkpoints(&self, run: i64) -> Result<(), StoreError> {
        if self.run(run)?.pruned > 0 {
            return Err(StoreError::Conflict(format!(
                "{}: its history before its checkpoint was pruned; the checkpoint is all there is",
                Store::run_name(run)
            )));
        }
        self.with("delete the checkpoints", |db| {
            db.execute("DELETE FROM checkpoints WHERE run = ?1", args![run])?;
            db.execute("DELETE FROM part_checkpoints WHERE run = ?1", args![run])
                .map(|_| ())
        })
    }

    /// Where a run's retained history starts when retention pruned its
    /// beginning: the checkpoint there (its monitor state is where a
    /// verification of the window starts) and the first chunk after it.
    /// `None` when nothing was pruned.
    pub fn history_start(
        &self,
        run: i64,
    ) -> Result<Option<(troupe_runtime::Checkpoint, i64)>, StoreError> {
        let row: Option<(i64, Vec<u8>)> = self.with("read the checkpoints", |db| {
            db.query_opt(
                "SELECT k.chunk, CAST(k.data AS BLOB) FROM checkpoints k JOIN runs r ON r.id = k.run
                 WHERE k.run = ?1 AND r.pruned > 0 AND k.seq = r.pruned",
                args![run],
            )?
            .map(|r| Ok((r.get(0)?, r.get(1)?)))
            .transpose()
        })?;
        let pruned = self.run(run)?.pruned;
        match row {
            Some((chunk, data)) => crate::checkpoint::decode(&data)
                .map(|s| Some((s.checkpoint, chunk)))
                .map_err(|e| StoreError::Corrupt {
                    path: self.shown().to_owned(),
                    message: format!("run {run}: the checkpoint its history starts at: {e}"),
                }),
            None if pruned > 0 => Err(StoreError::Corrupt {
                path: self.shown().to_owned(),
                message: format!(
                    "run {run}: its history was pruned but the checkpoint it starts at is missing"
                ),
            }),
            None => Ok(None),
        }
    }

    /// Pending tasks (all tasks with `all`), oldest first.
    pub fn tasks(&self, all: bool) -> Result<Vec<TaskRow>, StoreError> {
        let filter = if all { "" } else { "WHERE status = 'pending'" };
        self.with("list the tasks", |db| {
            db.query(
                &format!("SELECT {TASK_COLUMNS} FROM tasks {filter} ORDER BY id"),
                &[],
            )?
            .iter()
            .map(task)
            .collect()
        })
    }

    /// The tasks of one run (only the pending ones with `pending`), oldest first.
    pub fn run_tasks(&self, run: i64, pending: bool) -> Result<Vec<TaskRow>, StoreError> {
        let filter = if pending {
            "AND status = 'pending'"
        } else {
            ""
        };
        self.with("list the run's tasks", |db| {
            db.query(
                &format!("SELECT {TASK_COLUMNS} FROM tasks WHERE run = ?1 {filter} ORDER BY id"),
                args![run],
            )?
            .iter()
            .map(task)
            .collect()
        })
    }

    pub fn task(&self, id: &str) -> Result<TaskRow, StoreError> {
        let n = parse_task_id(id).ok_or_else(|| StoreError::UnknownTask(id.to_owned()))?;
        self.with("read the task", |db| {
            db.query_opt(
                &format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = ?1"),
                args![n],
            )?
            .map(|r| task(&r))
            .transpose()
        })?
        .ok_or_else(|| StoreError::UnknownTask(id.to_owned()))
    }

    /// Records the answer of a pending task. The first answer wins:
    /// answering a task that is already answered is a `Conflict` that says
    /// by whom and when. The store does not know the task's type: callers
    /// validate the answer first (`troupe-host` does, for every channel).
    pub fn answer(
        &self,
        id: &str,
        answer: &serde_json::Value,
        by: &str,
    ) -> Result<TaskRow, StoreError> {
        let n = parse_task_id(id).ok_or_else(|| StoreError::UnknownTask(id.to_owned()))?;
        let changed = self.transaction("answer the task", |tx| {
            // The run's row first, locked: a worker parking the run at the
            // same moment (`Store::park`) either sees this answer or is
            // seen parked by it, never neither.
            let lock = crate::lease::for_update(&*tx);
            tx.query_opt(
                &format!(
                    "SELECT r.id FROM runs r WHERE r.id = (SELECT run FROM tasks WHERE id = ?1){lock}"
                ),
                args![n],
            )?;
            let changed = tx.execute(
                "UPDATE tasks SET status = 'answered', answer = ?2, answered_by = ?3, answered_at = strftime('%Y-%m-%dT%H:%M:%fZ','now')
                 WHERE id = ?1 AND status = 'pending'",
                args![n, answer.to_string(), by],
            )?;
            if changed > 0 {
                requeue_parked(tx, n)?;
            }
            Ok(changed)
        })?;
        let row = self.task(id)?;
        if changed == 0 {
            if row.status == TaskStatus::Cancelled {
                return Err(StoreError::Conflict(format!(
                    "{id} was cancelled with its run {}; nothing to answer",
                    row.run
                )));
            }
            return Err(StoreError::Conflict(format!(
                "{id} was already answered by {} at {}; the first answer wins",
                row.answered_by.as_deref().unwrap_or("someone"),
                row.answered_at.as_deref().unwrap_or("?")
            )));
        }
        crate::postgres::wake(self, Store::parse_run_id(&row.run).unwrap_or(0));
        Ok(row)
    }

    /// Settles an effect that started and never finished: `Some(outputs)`
    /// records it done with those outputs; `None` forgets the start so that
    /// the resumed run performs it again. Refused while a live owner holds
    /// the run's lease or one of its parts' ([`StoreError::Running`]): that
    /// owner may be performing the effect right now, and forgetting its
    /// start would have it performed twice. Checked in the transaction that
    /// settles it, with the run's row locked, so no claim slips between.
    pub fn resolve(
        &self,
        run: i64,
        key: &str,
        outputs: Option<(&[Value], serde_json::Value)>,
    ) -> Result<(), StoreError> {
        enum Outcome {
            Settled,
            NoRun,
            NoStep,
            Finished,
            Running(String, i64),
        }
        let outcome = self.transaction("settle the step", |tx| {
            let lock = crate::lease::for_update(&*tx);
            let Some((owner, left, placed)) = tx
                .query_opt(
                    &format!(
                        "SELECT lease_owner, lease_expires - {NOW_MS}, placed FROM runs WHERE id = ?1{lock}"
                    ),
                    args![run],
                )?
                .map(|r| {
                    Ok::<(Option<String>, i64, i64), DbError>((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .transpose()?
            else {
                return Ok(Outcome::NoRun);
            };
            if let Some(owner) = owner.filter(|_| left > 0) {
                return Ok(Outcome::Running(owner, left));
            }
            if placed != 0
                && let Some((owner, left)) = crate::placement::live_part(tx, run)?
            {
                return Ok(Outcome::Running(owner, left));
            }
            let status: Option<String> = tx
                .query_opt(
                    "SELECT status FROM steps WHERE run = ?1 AND key = ?2",
                    args![run, key],
                )?
                .map(|r| r.get(0))
                .transpose()?;
            match status.map(|s| s.parse::<StepStatus>().unwrap_or(StepStatus::Started)) {
                None => return Ok(Outcome::NoStep),
                Some(StepStatus::Done) => return Ok(Outcome::Finished),
                _ => {}
            }
            match &outputs {
                Some((values, json)) => {
                    let mut bin = Vec::new();
                    codec::encode_values(&mut bin, values);
                    tx.execute(
                        "UPDATE steps SET status = 'done', outputs = ?3, outputs_json = ?4, finished_at = strftime('%Y-%m-%dT%H:%M:%fZ','now')
                         WHERE run = ?1 AND key = ?2",
                        args![run, key, bin, json.to_string()],
                    )?;
                }
                None => {
                    tx.execute("DELETE FROM steps WHERE run = ?1 AND key = ?2", args![run, key])?;
                }
            }
            // Settled: the run may go on.
            tx.execute(
                "UPDATE runs SET status = 'queued', error = NULL WHERE id = ?1 AND status = 'needs_resolution'",
                args![run],
            )?;
            Ok(Outcome::Settled)
        })?;
        let name = Store::run_name(run);
        match outcome {
            Outcome::Settled => {
                crate::postgres::wake(self, run);
                Ok(())
            }
            Outcome::NoRun => Err(StoreError::UnknownRun(name)),
            Outcome::NoStep => Err(StoreError::Conflict(format!("{name} has no step {key}"))),
            Outcome::Finished => Err(StoreError::Conflict(format!(
                "step {key} of {name} already finished"
            ))),
            Outcome::Running(owner, expires_in_ms) => Err(StoreError::Running {
                run: name,
                owner,
                expires_in_ms,
                what: format!("its step {key} can be settled"),
            }),
        }
    }

    /// Records a run's settings (after an explicit override on resume).
    pub fn set_settings(&self, run: i64, settings: &str) -> Result<(), StoreError> {
        self.with("record the settings", |db| {
            db.execute(
                "UPDATE runs SET settings = ?2 WHERE id = ?1",
                args![run, settings],
            )
            .map(|_| ())
        })
    }

    /// Marks a run failed (e.g. when it cannot be resumed).
    pub fn fail(&self, run: i64, error: &str) -> Result<(), StoreError> {
        self.with("mark the run failed", |db| {
            db.execute(
                "UPDATE runs SET status = 'failed', error = ?2, lease_owner = NULL, lease_expires = 0,
                    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ','now') WHERE id = ?1",
                args![run, error],
            )
            .map(|_| ())
        })
    }

    /// Marks a run as waiting for a person to settle a step, if `fence`'s
    /// owner still holds the run's lease (or its part's); returns
    /// whether it did. A process that lost its lease (paused past it, or
    /// starved) must not: its successor may be performing that very step
    /// by now, and a run marked so would have a person settle a step that
    /// still runs.
    pub fn needs_resolution(&self, fence: &crate::Fence, error: &str) -> Result<bool, StoreError> {
        self.transaction("mark the run", |tx| {
            if !crate::writer::holds(tx, fence)? {
                return Ok(false);
            }
            tx.execute(
                "UPDATE runs SET status = 'needs_resolution', error = ?2, lease_owner = NULL, lease_expires = 0,
                    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ','now') WHERE id = ?1",
                args![fence.run, error],
            )?;
            Ok(true)
        })
    }

    /// Gives back a run whose every lifeline waits on a person, so that it
    /// holds no worker while it waits: the run is parked (no worker claims
    /// it until one of its tasks is answered), or, when a task of it was
    /// answered and the run has not taken the answer yet, queued again at
    /// once. Only while `fence`'s owner holds its lease.
    pub fn park(&self, fence: &crate::Fence) -> Result<Parking, StoreError> {
        let parking = self.transaction("park the run", |tx| {
            let lock = crate::lease::for_update(&*tx);
            // Locked first, then read in statements of their own: an
            // answer committed while this waited for the lock is seen.
            tx.query_opt(
                &format!("SELECT id FROM runs WHERE id = ?1{lock}"),
                args![fence.run],
            )?;
            if !crate::writer::holds(tx, fence)? {
                return Ok(Parking::Lost);
            }
            // An answer, or a due timer, the run has not taken yet: it
            // goes on at once instead.
            let answered = tx
                .query_opt(
                    &format!(
                        "SELECT 1 WHERE EXISTS (SELECT 1 FROM tasks t WHERE t.run = ?1 AND t.status = 'answered'
                           AND NOT EXISTS (SELECT 1 FROM steps s WHERE s.run = t.run AND s.key = t.key AND s.status = 'done'))
                         OR {}",
                        crate::timer::due_timer("?1")
                    ),
                    args![fence.run],
                )?
                .is_some();
            let status = if answered { "queued" } else { "parked" };
            tx.execute(
                "UPDATE runs SET status = ?2, lease_owner = NULL, lease_expires = 0,
                    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ','now') WHERE id = ?1",
                args![fence.run, status],
            )?;
            Ok(if answered {
                Parking::Requeued
            } else {
                Parking::Parked
            })
        })?;
        if parking == Parking::Requeued {
            crate::postgres::wake(self, fence.run);
        }
        Ok(parking)
    }

    /// Makes a failed run, or one whose unsettled step was resolved,
    /// claimable again (`troupe retry`, `troupe resolve`): its recorded
    /// steps stay, so it continues from its last durable step.
    pub fn reopen(&self, run: i64, from: &[RunStatus]) -> Result<(), StoreError> {
        let allowed: Vec<&str> = from.iter().map(|s| s.as_str()).collect();
        let changed = self.with("reopen the run", |db| {
            let mut changed = 0;
            for status in &allowed {
                changed += db.execute(
                    "UPDATE runs SET status = 'queued', error = NULL, result = NULL,
                        updated_at = strftime('%Y-%m-%dT%H:%M:%fZ','now')
                     WHERE id = ?1 AND status = ?2",
                    args![run, status],
                )?;
            }
            Ok(changed)
        })?;
        if changed == 0 {
            let detail = self.run(run)?;
            return Err(StoreError::Conflict(format!(
                "{} is {}; only a run that is {} can be reopened",
                detail.summary.name,
                detail.summary.status,
                allowed.join(" or ")
            )));
        }
        crate::postgres::wake(self, run);
        Ok(())
    }

    /// Deletes a run with its events, steps and tasks. A run with a live
    /// owner is refused (cancel it first).
    pub fn delete_run(&self, run: i64) -> Result<(), StoreError> {
        let detail = self.run(run)?;
        if detail.summary.owner.is_some() {
            return Err(StoreError::Conflict(format!(
                "{} is being run by {}; cancel it first (`troupe cancel {}`)",
                detail.summary.name,
                detail.summary.owner.as_deref().unwrap_or("?"),
                detail.summary.name
            )));
        }
        self.transaction("delete the run", |tx| {
            tx.execute(
                "DELETE FROM notify_announced WHERE task IN (SELECT id FROM tasks WHERE run = ?1)",
                args![run],
            )?;
            for table in [
                "events",
                "checkpoints",
                "steps",
                "tasks",
                "timers",
                "llm_calls",
                "parts",
                "messages",
                "run_versions",
                "run_keys",
            ] {
                tx.execute(&format!("DELETE FROM {table} WHERE run = ?1"), args![run])?;
            }
            // The tick stays (it must not start again); its run is gone.
            tx.execute(
                "UPDATE schedule_ticks SET run = NULL WHERE run = ?1",
                args![run],
            )?;
            tx.execute("DELETE FROM runs WHERE id = ?1", args![run])?;
            Ok(())
        })
    }

    /// The runs that ended (done, failed or cancelled) before the newest
    /// `keep` of them: what `troupe runs --prune` deletes.
    pub fn prunable(&self, keep: usize) -> Result<Vec<i64>, StoreError> {
        Ok(self
            .runs(None)?
            .into_iter()
            .filter(|r| r.status.is_final())
            .skip(keep)
            .map(|r| r.id)
            .collect())
    }
}

/// The run of task `n` goes on with any worker, if it was parked: one of
/// its tasks was just answered (by a person or the clock).
pub(crate) fn requeue_parked(tx: &mut dyn Db, n: i64) -> Result<(), DbError> {
    tx.execute(
        "UPDATE runs SET status = 'queued', updated_at = strftime('%Y-%m-%dT%H:%M:%fZ','now')
         WHERE id = (SELECT run FROM tasks WHERE id = ?1) AND status = 'parked'",
        args![n],
    )?;
    Ok(())
}
