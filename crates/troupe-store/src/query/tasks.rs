//! Human tasks: reading them, and recording a person's answer (the first
//! answer wins). Apart from `query.rs` because a task has its own row,
//! columns and rules, and `deadline.rs` answers them too (by the clock).

use crate::db::{Db, DbError, Row, args};
use crate::state::{TaskKind, TaskStatus};
use crate::{Store, StoreError};
use serde::Serialize;

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
