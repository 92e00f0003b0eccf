//! Reading the store (runs, events, steps, tasks) and the writes of commands:
//! answering a task, settling an unfinished effect.
//!
//! This module holds the runs' own reads (their summaries and details,
//! steps and model calls); the rest lives in rooms of its own, so that no
//! file grows past what one reads at once: `events.rs` (a run's recorded
//! events and checkpoints), `tasks.rs` (human tasks and their answers) and
//! `lifecycle.rs` (the writes that move a run between statuses).

mod events;
mod lifecycle;
mod tasks;

pub use tasks::TaskRow;
pub(crate) use tasks::{parse_task_id, requeue_parked};

use crate::codec;
use crate::db::{DbError, Dialect, Row, args};
use crate::state::{RunStatus, StepStatus};
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
}
