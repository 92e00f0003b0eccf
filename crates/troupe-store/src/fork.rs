//! Forking a run (`troupe fork RUN --at STEP`): a new run of the same
//! recorded workflow that takes the recorded results of the steps before
//! STEP and runs live from there.
//!
//! The new run is created with copies of those steps (done, with their
//! outputs) and with its lineage (the run it came from, and the step it
//! runs live from), in one transaction. Driving it is an ordinary resume:
//! the engine replays from the start and takes a recorded result wherever
//! a step's key has one, so no model, tool or person is asked again for
//! them, and performs every other step live. Steps are ordered by when
//! they were first recorded (`seq`); the sub-steps of a step (a model's
//! tool calls, a planner's plan) go with it.

use crate::db::{DbError, args};
use crate::{NewRun, Store, StoreError};
use serde::Serialize;

/// Where a fork runs live from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ForkAt {
    /// After every recorded step: all of them are taken.
    End,
    /// At the n-th top-level step in recorded order (1 is the first: no
    /// step is taken).
    Nth(u64),
    /// At the step with this key (`Lifeline/action#k`).
    Key(String),
}

/// A forked run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forked {
    pub run: i64,
    /// How many recorded steps (sub-steps included) it took.
    pub steps: u64,
    /// The step it runs live from; `None` past the last recorded one.
    pub at: Option<String>,
}

/// Where a run came from, as its status shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Lineage {
    /// `run-3`.
    pub forked_from: String,
    /// The step it ran live from, if any.
    pub at: Option<String>,
}

impl Store {
    /// Records `run` (a run of `from`'s recorded workflow) forked from
    /// `from` at `at` (see the module doc). Fails for an unknown run or
    /// step, or a run that is placed.
    pub fn fork_run(&self, run: &NewRun, from: i64, at: &ForkAt) -> Result<Forked, StoreError> {
        let name = Store::run_name(from);
        let known = self.with("find the run", |db| {
            Ok(db
                .query_opt("SELECT 1 FROM runs WHERE id = ?1", args![from])?
                .is_some())
        })?;
        if !known {
            return Err(StoreError::UnknownRun(name));
        }
        // The top-level steps in recorded order (their sub-steps sort with
        // them in `seq`).
        let mut top: Vec<(i64, String)> = self.with("read the steps", |db| {
            db.query(
                "SELECT seq, key FROM steps WHERE run = ?1 AND seq IS NOT NULL ORDER BY seq",
                args![from],
            )?
            .iter()
            .map(|r| Ok((r.get::<i64>(0)?, r.get::<String>(1)?)))
            .collect::<Result<Vec<_>, DbError>>()
        })?;
        top.retain(|(_, key)| troupe_runtime::StepKey::parse_top_level(key).is_some());
        let cut: Option<(i64, String)> = match at {
            ForkAt::End => None,
            ForkAt::Nth(0) => {
                return Err(StoreError::Conflict(
                    "steps are counted from 1 (`--at 1` takes none)".into(),
                ));
            }
            ForkAt::Nth(n) => match top.get(*n as usize - 1) {
                Some(step) => Some(step.clone()),
                None => {
                    return Err(StoreError::Conflict(format!(
                        "{name} recorded {} step(s); `--at` takes 1 to {} (`troupe status {name}` lists them)",
                        top.len(),
                        top.len()
                    )));
                }
            },
            ForkAt::Key(key) => match top.iter().find(|(_, k)| k == key) {
                Some(step) => Some(step.clone()),
                None => {
                    return Err(StoreError::Conflict(format!(
                        "{name} recorded no step {key}; `troupe status {name}` lists its steps"
                    )));
                }
            },
        };
        let before = cut.as_ref().map_or(i64::MAX, |(seq, _)| *seq);
        let at_key = cut.map(|(_, key)| key);
        let mut copied = 0u64;
        let id = self.create_run_then(run, |db, id| {
            copied = db.execute(
                "INSERT INTO steps(run, key, kind, lifeline, action, input_hash, status, outputs, outputs_json, started_at, finished_at, seq)
                 SELECT ?1, key, kind, lifeline, action, input_hash, status, outputs, outputs_json, started_at, finished_at, seq
                 FROM steps WHERE run = ?2 AND status = 'done' AND seq < ?3",
                args![id, from, before],
            )? as u64;
            db.execute(
                "UPDATE runs SET forked_from = ?2, forked_at = ?3 WHERE id = ?1",
                args![id, from, &at_key],
            )?;
            Ok(())
        })?;
        Ok(Forked {
            run: id,
            steps: copied,
            at: at_key,
        })
    }

    /// The run `run` was forked from, and where, if it was.
    pub fn lineage(&self, run: i64) -> Result<Option<Lineage>, StoreError> {
        self.with("read the run", |db| {
            let Some(r) = db.query_opt(
                "SELECT forked_from, forked_at FROM runs WHERE id = ?1 AND forked_from IS NOT NULL",
                args![run],
            )?
            else {
                return Ok(None);
            };
            Ok(Some(Lineage {
                forked_from: Store::run_name(r.get::<i64>(0)?),
                at: r.get::<Option<String>>(1)?,
            }))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{bare_run, both};
    use crate::{Durability, StepStatus};

    #[test]
    fn a_fork_takes_the_steps_before_its_cut_with_their_sub_steps_and_records_its_lineage() {
        let dir = tempfile::tempdir().unwrap();
        for (store, _db) in both(dir.path(), Durability::Normal) {
            let from = store.create_run(&bare_run("f")).unwrap();
            let done = |key: &str| {
                store
                    .with("record", |db| {
                        db.execute(
                            "INSERT INTO steps(run, key, kind, lifeline, action, input_hash, status, outputs, outputs_json, started_at, finished_at, seq)
                             VALUES (?1, ?2, 'llm', 'A', 'x', '', 'done', ?3, '1', 't', 't',
                               (SELECT coalesce(max(seq), 0) + 1 FROM steps WHERE run = ?1))",
                            args![from, key, vec![1u8, 2, 3]],
                        )
                    })
                    .unwrap();
            };
            done("A/x#0");
            done("A/y#0/TOOL#0");
            done("A/y#0");
            done("A/x#1");
            done("A/z#0");
            let keys = |run: i64| -> Vec<String> {
                let mut k: Vec<String> = store
                    .steps(run)
                    .unwrap()
                    .into_iter()
                    .map(|s| s.key)
                    .collect();
                k.sort();
                k
            };
            // At the third top-level step: the first two, and the second's
            // tool call.
            let f = store
                .fork_run(&bare_run("f"), from, &ForkAt::Nth(3))
                .unwrap();
            assert_eq!(f.at.as_deref(), Some("A/x#1"));
            assert_eq!(f.steps, 3);
            assert_eq!(keys(f.run), ["A/x#0", "A/y#0", "A/y#0/TOOL#0"]);
            assert!(
                store
                    .steps(f.run)
                    .unwrap()
                    .iter()
                    .all(|s| s.status == StepStatus::Done)
            );
            assert_eq!(
                store.lineage(f.run).unwrap(),
                Some(Lineage {
                    forked_from: format!("run-{from}"),
                    at: Some("A/x#1".into())
                })
            );
            assert_eq!(store.lineage(from).unwrap(), None);
            // By key; at the first step (nothing taken); past the end.
            let k = store
                .fork_run(&bare_run("f"), from, &ForkAt::Key("A/z#0".into()))
                .unwrap();
            assert_eq!(k.steps, 4);
            let first = store
                .fork_run(&bare_run("f"), from, &ForkAt::Nth(1))
                .unwrap();
            assert_eq!(first.steps, 0);
            let end = store.fork_run(&bare_run("f"), from, &ForkAt::End).unwrap();
            assert_eq!((end.steps, end.at), (5, None));
            // Unknown steps, a step out of range, and a sub-step are refused.
            for at in [
                ForkAt::Nth(0),
                ForkAt::Nth(5),
                ForkAt::Key("A/q#0".into()),
                ForkAt::Key("A/y#0/TOOL#0".into()),
            ] {
                assert!(
                    matches!(
                        store.fork_run(&bare_run("f"), from, &at),
                        Err(StoreError::Conflict(_))
                    ),
                    "{at:?}"
                );
            }
        }
    }
}
