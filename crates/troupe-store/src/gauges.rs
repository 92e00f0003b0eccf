//! What a store holds now, for metrics (`/metrics` of `troupe worker
//! --health` and `troupe serve`): aggregates, each one indexed query, so
//! that their cost does not grow with the runs' histories.

use crate::{NOW_MS, RunStatus, Store, StoreError};
use std::collections::BTreeMap;

/// See the module doc.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Gauges {
    /// Runs by recorded status (`stalled` is not recorded: such runs count
    /// under the status they were left in).
    pub runs: BTreeMap<RunStatus, u64>,
    /// Runs (and parts) a worker could claim now.
    pub runnable: u64,
    /// People's tasks waiting for an answer.
    pub tasks_pending: u64,
    /// Of those, the ones whose deadline passed (the clock answers them at
    /// the next look).
    pub tasks_due: u64,
    /// Durable timers (`sleep`) of unfinished runs that fell due and have
    /// not fired yet (a parked run's wait for the next sweep).
    pub sleeps_due: u64,
}

impl Store {
    /// See [`Gauges`].
    pub fn gauges(&self) -> Result<Gauges, StoreError> {
        let (runs, pending, due, sleeps) = self.with("count the runs and tasks", |db| {
            let mut runs = BTreeMap::new();
            for r in db.query("SELECT status, count(*) FROM runs GROUP BY status", &[])? {
                let status: String = r.get(0)?;
                if let Ok(s) = status.parse::<RunStatus>() {
                    runs.insert(s, r.get::<i64>(1)?.max(0) as u64);
                }
            }
            let pending = db
                .query_one("SELECT count(*) FROM tasks WHERE status = 'pending'", &[])?
                .get::<i64>(0)?;
            let due = db
                .query_one(
                    &format!(
                        "SELECT count(*) FROM tasks WHERE status = 'pending' AND due_at IS NOT NULL AND due_at <= {NOW_MS}"
                    ),
                    &[],
                )?
                .get::<i64>(0)?;
            // From the unfinished runs (by `runs_status`), then their timers
            // (by key): finished runs' timers are history, never read.
            let sleeps = db
                .query_one(
                    &format!(
                        "SELECT count(*) FROM runs r CROSS JOIN timers t
                         WHERE r.status IN ('queued', 'running', 'waiting', 'parked', 'paused')
                           AND t.run = r.id AND t.due_at <= {NOW_MS}
                           AND NOT EXISTS (SELECT 1 FROM steps s WHERE s.run = t.run AND s.key = t.key AND s.status = 'done')"
                    ),
                    &[],
                )?
                .get::<i64>(0)?;
            Ok((runs, pending.max(0) as u64, due.max(0) as u64, sleeps.max(0) as u64))
        })?;
        Ok(Gauges {
            runs,
            runnable: self.runnable()?,
            tasks_pending: pending,
            tasks_due: due,
            sleeps_due: sleeps,
        })
    }
}
