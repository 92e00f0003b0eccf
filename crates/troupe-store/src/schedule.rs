//! Schedules' ticks (`[[schedule]]` in `troupe.toml`): one row per
//! schedule and tick, unique, written in the transaction that creates the
//! tick's run. However many workers and servers look at a schedule, each
//! tick starts one run: the second to try finds the row and creates
//! nothing. Tick times are milliseconds since the Unix epoch; which ticks
//! fall due is the host's business (`troupe_host::schedule`).

use crate::db::args;
use crate::{NewRun, RunStatus, Store, StoreError};

/// A tick of a schedule, and the run it started.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TickRow {
    /// When the tick fell due (ms since the Unix epoch).
    pub tick: i64,
    /// The run it started (`None` once that run was deleted).
    pub run: Option<i64>,
}

impl Store {
    /// Starts tick `tick` of `schedule`: records the tick and creates its
    /// run, queued for any worker, in one transaction. `None` when the tick
    /// was started already (by this process or another): nothing created.
    pub fn start_tick(
        &self,
        schedule: &str,
        tick: i64,
        run: &NewRun,
    ) -> Result<Option<i64>, StoreError> {
        let id = self.transaction("start the schedule's tick", |db| {
            let fresh = db.execute(
                "INSERT INTO schedule_ticks(schedule, tick) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
                args![schedule, tick],
            )?;
            if fresh == 0 {
                return Ok(None);
            }
            let id = crate::insert_run(db, run, RunStatus::Queued, None, 0)?;
            if !run.parts.is_empty() {
                crate::placement::insert_parts(db, id, &run.parts)?;
            }
            db.execute(
                "UPDATE schedule_ticks SET run = ?3 WHERE schedule = ?1 AND tick = ?2",
                args![schedule, tick, id],
            )?;
            Ok(Some(id))
        })?;
        if let Some(id) = id {
            crate::postgres::wake(self, id);
        }
        Ok(id)
    }

    /// The latest tick of `schedule` that was started, if any.
    pub fn last_tick(&self, schedule: &str) -> Result<Option<i64>, StoreError> {
        self.with("read the schedule's last tick", |db| {
            db.query_opt(
                "SELECT MAX(tick) FROM schedule_ticks WHERE schedule = ?1",
                args![schedule],
            )?
            .map(|r| r.get::<Option<i64>>(0))
            .transpose()
            .map(Option::flatten)
        })
    }

    /// The latest `limit` ticks of `schedule`, newest first.
    pub fn ticks(&self, schedule: &str, limit: usize) -> Result<Vec<TickRow>, StoreError> {
        self.with("read the schedule's ticks", |db| {
            db.query(
                "SELECT tick, run FROM schedule_ticks WHERE schedule = ?1 ORDER BY tick DESC LIMIT ?2",
                args![schedule, limit as i64],
            )?
            .iter()
            .map(|r| {
                Ok(TickRow {
                    tick: r.get(0)?,
                    run: r.get(1)?,
                })
            })
            .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{bare_run, both};
    use crate::{Durability, RunStatus};

    #[test]
    fn a_tick_starts_one_run_however_many_try() {
        let dir = tempfile::tempdir().unwrap();
        for (store, _db) in both(dir.path(), Durability::Normal) {
            assert_eq!(store.last_tick("nightly").unwrap(), None);
            let first = store.start_tick("nightly", 1_000, &bare_run("f")).unwrap();
            let run = first.expect("the first start creates the run");
            assert_eq!(store.run(run).unwrap().summary.status, RunStatus::Queued);
            // Tried again, from this store or another process: nothing.
            assert_eq!(
                store.start_tick("nightly", 1_000, &bare_run("f")).unwrap(),
                None
            );
            // Another schedule's tick at the same time is its own.
            assert!(
                store
                    .start_tick("hourly", 1_000, &bare_run("f"))
                    .unwrap()
                    .is_some()
            );
            assert!(
                store
                    .start_tick("nightly", 2_000, &bare_run("f"))
                    .unwrap()
                    .is_some()
            );
            assert_eq!(store.last_tick("nightly").unwrap(), Some(2_000));
            let ticks = store.ticks("nightly", 10).unwrap();
            assert_eq!(
                ticks.iter().map(|t| t.tick).collect::<Vec<_>>(),
                vec![2_000, 1_000]
            );
            assert_eq!(ticks[1].run, Some(run));
            assert_eq!(store.runs(None).unwrap().len(), 3);
        }
    }
}
