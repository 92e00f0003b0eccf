//! Human tasks' deadlines (`timeout:` and `default:` on a `human` action).
//!
//! A task with a deadline records when it falls due (`due_at`, on the
//! store's clock, from the task's first recording: a resumed run asking
//! again keeps it) and what the clock answers (`default_answer`). When it
//! is due, the default is recorded exactly as a person's answer is, by
//! `timeout`, under the same rule: the first answer wins, whoever gives it
//! (the two updates are conditional on the task still being pending, with
//! the run's row locked first). The run's own owner fires its tasks as it
//! waits; a worker's sweep fires those of runs nobody drives (parked), and
//! the answer queues such a run again.

use crate::db::args;
use crate::query::requeue_parked;
use crate::{BY_TIMEOUT, NOW_MS, Store, StoreError};

impl Store {
    /// Milliseconds until task `id` falls due (negative once it has); `None`
    /// for a task without a deadline or one already answered.
    pub fn due_in(&self, id: &str) -> Result<Option<i64>, StoreError> {
        let n = crate::query::parse_task_id(id)
            .ok_or_else(|| StoreError::UnknownTask(id.to_owned()))?;
        self.with("read the task", |db| {
            db
                .query_opt(
                    &format!(
                        "SELECT due_at - {NOW_MS} FROM tasks WHERE id = ?1 AND status = 'pending' AND due_at IS NOT NULL"
                    ),
                    args![n],
                )?
                .map(|r| r.get::<i64>(0))
                .transpose()
        })
    }

    /// Answers with their defaults, by `timeout`, the pending tasks that
    /// are due: of run `run`, or of every run. Returns the tasks answered;
    /// a task a person answered first is not among them.
    pub fn answer_due(&self, run: Option<i64>) -> Result<Vec<String>, StoreError> {
        let due: Vec<i64> = self.with("find the due tasks", |db| {
            let sql = format!(
                "SELECT id FROM tasks WHERE status = 'pending' AND due_at IS NOT NULL AND due_at <= {NOW_MS}"
            );
            let rows = match run {
                Some(r) => db.query(&format!("{sql} AND run = ?1"), args![r])?,
                None => db.query(&sql, &[])?,
            };
            rows.iter().map(|r| r.get(0)).collect()
        })?;
        let mut answered = Vec::new();
        for n in due {
            let (changed, run) = self.transaction("answer the task by its deadline", |tx| {
                // The run's row first, locked, as a person's answer does.
                let lock = crate::lease::for_update(&*tx);
                let run: Option<i64> = tx
                    .query_opt(
                        &format!(
                            "SELECT r.id FROM runs r WHERE r.id = (SELECT run FROM tasks WHERE id = ?1){lock}"
                        ),
                        args![n],
                    )?
                    .map(|r| r.get(0))
                    .transpose()?;
                let changed = tx.execute(
                    &format!(
                        "UPDATE tasks SET status = 'answered', answer = default_answer, answered_by = ?2,
                            answered_at = strftime('%Y-%m-%dT%H:%M:%fZ','now')
                         WHERE id = ?1 AND status = 'pending' AND due_at <= {NOW_MS}"
                    ),
                    args![n, BY_TIMEOUT],
                )?;
                if changed > 0 {
                    requeue_parked(tx, n)?;
                }
                Ok((changed, run))
            })?;
            if changed > 0 {
                if let Some(run) = run {
                    crate::postgres::wake(self, run);
                }
                answered.push(format!("task-{n}"));
            }
        }
        Ok(answered)
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{bare_run, both};
    use crate::{Durability, NewTask, TaskStatus};
    use std::time::Duration;

    fn task(run: i64, key: &str, after: Duration) -> NewTask {
        crate::testing::confirm_task(run, key, Some((after, serde_json::json!(false))))
    }

    #[test]
    fn a_due_task_is_answered_by_the_clock_once_and_a_person_first_wins() {
        let dir = tempfile::tempdir().unwrap();
        for (store, _db) in both(dir.path(), Durability::Normal) {
            let run = store.create_run(&bare_run("f")).unwrap();
            let record = |t: &NewTask| {
                store
                    .with("record the task", |db| crate::insert_task(db, t))
                    .unwrap()
            };
            // Not due yet: nothing happens.
            record(&task(run, "A/ok#0", Duration::from_secs(3600)));
            let id = format!(
                "task-{}",
                store.task_row_id(run, "A/ok#0").unwrap().unwrap()
            );
            assert!(store.due_in(&id).unwrap().unwrap() > 3_000_000);
            assert!(store.answer_due(None).unwrap().is_empty());
            // Asked again (a resumed run): the first deadline stays.
            let before = store.due_in(&id).unwrap().unwrap();
            record(&task(run, "A/ok#0", Duration::from_millis(1)));
            assert!(store.due_in(&id).unwrap().unwrap() > before - 60_000);

            // Due at once: answered by the clock with the default, once.
            record(&task(run, "A/ok#1", Duration::from_millis(1)));
            let due = format!(
                "task-{}",
                store.task_row_id(run, "A/ok#1").unwrap().unwrap()
            );
            std::thread::sleep(Duration::from_millis(5));
            assert_eq!(store.answer_due(Some(run)).unwrap(), vec![due.clone()]);
            let row = store.task(&due).unwrap();
            assert_eq!(row.status, TaskStatus::Answered);
            assert_eq!(row.answer.as_deref(), Some("false"));
            assert_eq!(row.answered_by.as_deref(), Some(crate::BY_TIMEOUT));
            assert!(store.answer_due(None).unwrap().is_empty());
            // A person after the clock: refused, the clock's answer stands.
            assert!(store.answer(&due, &serde_json::json!(true), "ada").is_err());

            // A person first: the clock answers nothing.
            record(&task(run, "A/ok#2", Duration::from_millis(1)));
            let raced = format!(
                "task-{}",
                store.task_row_id(run, "A/ok#2").unwrap().unwrap()
            );
            store
                .answer(&raced, &serde_json::json!(true), "ada")
                .unwrap();
            std::thread::sleep(Duration::from_millis(5));
            assert!(store.answer_due(None).unwrap().is_empty());
            assert_eq!(
                store.task(&raced).unwrap().answered_by.as_deref(),
                Some("ada")
            );
        }
    }

    /// 50 trials of a person answering at the deadline, from another
    /// thread: exactly one answer is recorded each time, and it is the one
    /// whose update went first.
    #[test]
    fn a_person_answering_at_the_deadline_and_the_clock_record_one_answer() {
        let dir = tempfile::tempdir().unwrap();
        for (store, _db) in both(dir.path(), Durability::Normal) {
            let run = store.create_run(&bare_run("f")).unwrap();
            let (mut by_person, mut by_clock) = (0, 0);
            for k in 0..50 {
                let key = format!("A/ok#{k}");
                store
                    .with("record the task", |db| {
                        crate::insert_task(db, &task(run, &key, Duration::from_millis(2)))
                    })
                    .unwrap();
                let id = format!("task-{}", store.task_row_id(run, &key).unwrap().unwrap());
                std::thread::sleep(Duration::from_millis(2));
                let (person, clock) = std::thread::scope(|s| {
                    let person = s.spawn(|| store.answer(&id, &serde_json::json!(true), "ada"));
                    let clock = s.spawn(|| store.answer_due(Some(run)).unwrap());
                    (person.join().unwrap(), clock.join().unwrap())
                });
                let row = store.task(&id).unwrap();
                match row.answered_by.as_deref() {
                    Some("ada") => {
                        by_person += 1;
                        assert!(person.is_ok() && clock.is_empty(), "{k}");
                        assert_eq!(row.answer.as_deref(), Some("true"));
                    }
                    Some(crate::BY_TIMEOUT) => {
                        by_clock += 1;
                        assert!(person.is_err() && clock == vec![id.clone()], "{k}");
                        assert_eq!(row.answer.as_deref(), Some("false"));
                    }
                    other => panic!("{k}: answered by {other:?}"),
                }
            }
            assert_eq!(by_person + by_clock, 50);
            eprintln!("{store:?}: {by_person} by the person, {by_clock} by the clock");
        }
    }
}
