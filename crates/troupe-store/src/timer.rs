//! Durable timers: the built-in `sleep` (LANGUAGE.md §7).
//!
//! A timer is a row of `timers`: the step it belongs to and when it falls
//! due, on the store's clock (every process sharing the store agrees on
//! it), recorded when the step first runs and never moved, so a resumed
//! run waits only what is left. The step's own record (`steps`, `done`)
//! says it fired: a timer fires once however many processes look at it.
//! The run's owner waits in process; a run that waits on timers and people
//! alone is given back (parked, see `Store::park`), and a worker's sweep
//! queues it again once one of its timers is due ([`Store::wake_due_timers`]).

use crate::db::{Db, DbError, args};
use crate::{NOW_MS, Store, StoreError};
use std::time::Duration;

/// The SQL condition "run `?1` has a due timer whose step has not fired",
/// for the statements that decide whether a run may park.
pub(crate) fn due_timer(run: &str) -> String {
    format!(
        "EXISTS (SELECT 1 FROM timers t WHERE t.run = {run} AND t.due_at <= {NOW_MS}
           AND NOT EXISTS (SELECT 1 FROM steps s WHERE s.run = t.run AND s.key = t.key AND s.status = 'done'))"
    )
}

/// Records the timer of step `key` of `run`, due `after` from now, unless
/// it is recorded already (a resumed run keeps the first deadline).
pub(crate) fn insert_timer(
    db: &mut dyn Db,
    run: i64,
    key: &str,
    after: i64,
) -> Result<(), DbError> {
    db.execute(
        &format!(
            "INSERT INTO timers(run, key, due_at) VALUES (?1, ?2, {NOW_MS} + CAST(?3 AS BIGINT))
             ON CONFLICT(run, key) DO NOTHING"
        ),
        args![run, key, after],
    )?;
    Ok(())
}

/// A recorded timer, as `troupe status` shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TimerRow {
    /// The step it belongs to.
    pub key: String,
    /// When it falls due: milliseconds since the Unix epoch, on the store's
    /// clock.
    pub due_at: i64,
    /// Milliseconds until then on the same clock (negative once past).
    pub due_in_ms: i64,
    /// Whether its step is done.
    pub fired: bool,
}

impl Store {
    /// The timers of `run`, in the order they fall due.
    pub fn timers(&self, run: i64) -> Result<Vec<TimerRow>, StoreError> {
        self.with("read the timers", |db| {
            db.query(
                &format!("SELECT t.key, t.due_at, t.due_at - {NOW_MS},
                   CAST(CASE WHEN EXISTS (SELECT 1 FROM steps s WHERE s.run = t.run AND s.key = t.key AND s.status = 'done')
                     THEN 1 ELSE 0 END AS BIGINT)
                 FROM timers t WHERE t.run = ?1 ORDER BY t.due_at, t.key"),
                args![run],
            )?
            .iter()
            .map(|r| {
                Ok(TimerRow {
                    key: r.get(0)?,
                    due_at: r.get(1)?,
                    due_in_ms: r.get(2)?,
                    fired: r.get::<i64>(3)? != 0,
                })
            })
            .collect()
        })
    }

    /// How long until the timer of step `key` of `run` is due (zero once it
    /// is); `None` when no such timer is recorded.
    pub fn timer_left(&self, run: i64, key: &str) -> Result<Option<Duration>, StoreError> {
        let ms: Option<i64> = self.with("read the timer", |db| {
            db.query_opt(
                &format!("SELECT due_at - {NOW_MS} FROM timers WHERE run = ?1 AND key = ?2"),
                args![run, key],
            )?
            .map(|r| r.get::<i64>(0))
            .transpose()
        })?;
        Ok(ms.map(|ms| Duration::from_millis(ms.max(0) as u64)))
    }

    /// Queues again the parked runs one of whose timers is due: a worker's
    /// sweep, for runs nobody drives. Returns them. The work is that of the
    /// parked runs, not of every timer ever recorded.
    pub fn wake_due_timers(&self) -> Result<Vec<i64>, StoreError> {
        let woken: Vec<i64> = self.transaction("wake the runs whose timers are due", |tx| {
            let due = due_timer("r.id");
            let rows = tx.query(
                &format!("SELECT r.id FROM runs r WHERE r.status = 'parked' AND {due}"),
                &[],
            )?;
            let mut woken = Vec::with_capacity(rows.len());
            for r in rows {
                let run: i64 = r.get(0)?;
                // Conditional: a person's answer may have queued it already.
                let changed = tx.execute(
                    "UPDATE runs SET status = 'queued', updated_at = strftime('%Y-%m-%dT%H:%M:%fZ','now')
                     WHERE id = ?1 AND status = 'parked'",
                    args![run],
                )?;
                if changed > 0 {
                    woken.push(run);
                }
            }
            Ok(woken)
        })?;
        for &run in &woken {
            crate::postgres::wake(self, run);
        }
        Ok(woken)
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{bare_run, both};
    use crate::{Durability, RunStatus};
    use std::time::Duration;

    fn status(store: &crate::Store, run: i64) -> RunStatus {
        store.run(run).unwrap().summary.status
    }

    #[test]
    fn a_timer_keeps_its_first_deadline_and_wakes_only_parked_runs_once_due() {
        let dir = tempfile::tempdir().unwrap();
        for (store, _db) in both(dir.path(), Durability::Normal) {
            let run = store.create_run(&bare_run("f")).unwrap();
            let record = |after: i64| {
                store
                    .with("record the timer", |db| {
                        super::insert_timer(db, run, "A/sleep#0", after)
                    })
                    .unwrap()
            };
            record(3_600_000);
            let first = store.timer_left(run, "A/sleep#0").unwrap().unwrap();
            assert!(first > Duration::from_secs(3_500), "{first:?}");
            // Asked again (a resumed run): the first deadline stays.
            record(1);
            let again = store.timer_left(run, "A/sleep#0").unwrap().unwrap();
            assert!(again > Duration::from_secs(3_500), "{again:?}");
            assert_eq!(store.timer_left(run, "A/sleep#1").unwrap(), None);
            // Not due: a parked run stays parked.
            store
                .with("park", |db| {
                    db.execute(
                        "UPDATE runs SET status = 'parked' WHERE id = ?1",
                        crate::db::args![run],
                    )
                })
                .unwrap();
            assert!(store.wake_due_timers().unwrap().is_empty());
            assert_eq!(status(&store, run), RunStatus::Parked);
            // Due: woken once.
            store
                .with("record a due timer", |db| {
                    super::insert_timer(db, run, "A/sleep#1", -1)
                })
                .unwrap();
            assert_eq!(
                store.timer_left(run, "A/sleep#1").unwrap(),
                Some(Duration::ZERO)
            );
            assert_eq!(store.wake_due_timers().unwrap(), vec![run]);
            assert_eq!(status(&store, run), RunStatus::Queued);
            assert!(store.wake_due_timers().unwrap().is_empty());
            // Parked again after the due timer's step fired: not woken by it.
            store
                .with("fire the step", |db| {
                    db.execute(
                        "INSERT INTO steps(run, key, kind, lifeline, action, input_hash, status)
                         VALUES (?1, 'A/sleep#1', 'timer', 'A', 'sleep', '', 'done')",
                        crate::db::args![run],
                    )?;
                    db.execute(
                        "UPDATE runs SET status = 'parked' WHERE id = ?1",
                        crate::db::args![run],
                    )
                })
                .unwrap();
            assert!(store.wake_due_timers().unwrap().is_empty());
            assert_eq!(status(&store, run), RunStatus::Parked);
        }
    }
}
