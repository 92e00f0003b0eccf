//! A run's versions (`troupe upgrade`): moving an unfinished run to
//! another version of its workflow, and the history of its moves.
//!
//! Whether a run may move is decided above the store (the new version's
//! monitor fed with the run's events, `troupe_msc::upgrade`); the store
//! makes the move one transaction: the version it leaves is kept (source,
//! fingerprint, the events recorded under it, where each lifeline stood),
//! its events are replaced by the same events as the new version's, its
//! checkpoints (states of the old version's programs) are dropped, and the
//! run takes the new source. A resumed run then replays its recorded
//! results under the new version from the start. The move happens only
//! while nothing runs the run, and only if the run recorded no event since
//! it was checked.

use crate::NOW_MS;
use crate::codec;
use crate::db::{DbError, args};
use crate::query::Events;
use crate::{Store, StoreError};
use serde::Serialize;
use troupe_check::ir::LifelineId;
use troupe_msc::Event;

/// The version a run moves to.
#[derive(Debug, Clone)]
pub struct NewVersion<'a> {
    pub workflow: &'a str,
    pub file: Option<&'a str>,
    pub source: &'a str,
    pub fingerprint: &'a str,
    pub canonical: &'a str,
    pub lifelines: usize,
    /// How many events the run had recorded when it was checked.
    pub checked: u64,
    /// Where each lifeline of the version it leaves stood: its name and
    /// its events so far.
    pub cut: &'a [(String, u64)],
}

/// One version of a run, as `troupe status` and `troupe verify` read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VersionRow {
    /// 1 for the version a run started with.
    pub version: i64,
    pub workflow: String,
    pub file: Option<String>,
    pub fingerprint: String,
    /// When the run moved away from it (`None`: the current version).
    pub moved_at: Option<String>,
    /// Where each lifeline stood when it moved away, by name: its events
    /// so far (empty for the current version).
    pub cut: Vec<(String, u64)>,
    #[serde(skip)]
    pub source: String,
}

/// Translates one recorded event into the new version's (or says why the
/// run cannot move after all).
pub type Translate<'a> = dyn FnMut(LifelineId, &Event) -> Result<(LifelineId, Event), String> + 'a;

/// Chunks of encoded events about as large as the journal writes them.
const CHUNK: usize = 64 * 1024;

enum Outcome {
    Moved(i64),
    Refused(StoreError),
}

impl Store {
    /// Moves `run` to `to` (see the module doc); returns its new version
    /// number.
    pub fn move_run(
        &self,
        run: i64,
        to: &NewVersion<'_>,
        translate: &mut Translate<'_>,
    ) -> Result<i64, StoreError> {
        let name = Store::run_name(run);
        let detail = self.run(run)?;
        if let Some(owner) = &detail.summary.owner {
            return Err(StoreError::Running {
                run: name,
                owner: owner.clone(),
                expires_in_ms: detail.summary.lease_expires_in_ms,
                what: "it moves to another version".into(),
            });
        }
        // A lease whose owner is gone on this machine holds nothing.
        let gone = self
            .with("read the lease", |db| {
                db.query_opt("SELECT lease_owner FROM runs WHERE id = ?1", args![run])?
                    .map(|r| r.get::<Option<String>>(0))
                    .transpose()
            })?
            .flatten()
            .filter(|o| crate::owner::liveness(o) == crate::owner::Liveness::Gone)
            .unwrap_or_default();
        // A refusal after the first write rolls the transaction back: its
        // reason waits here.
        let mut late: Option<String> = None;
        let outcome = self.transaction("move the run to another version", |tx| {
            let row = tx.query_opt(
                &format!(
                    "SELECT status, placed, pruned, version, workflow, file, source, fingerprint, canonical,
                       CASE WHEN lease_owner IS NULL OR lease_expires <= {NOW_MS} OR lease_owner = ?2 THEN 1 ELSE 0 END
                     FROM runs WHERE id = ?1"
                ),
                args![run, &gone],
            )?;
            let Some(row) = row else {
                return Ok(Outcome::Refused(StoreError::UnknownRun(name.clone())));
            };
            let status: String = row.get(0)?;
            let status: crate::RunStatus = status.parse().map_err(DbError::other)?;
            let refuse = |why: String| Ok(Outcome::Refused(StoreError::Conflict(why)));
            if matches!(status, crate::RunStatus::Done | crate::RunStatus::Cancelled) {
                return refuse(format!(
                    "{name} is {status}: only an unfinished run moves to another version"
                ));
            }
            if row.get::<i64>(1)? != 0 {
                return refuse(format!(
                    "{name} runs in parts on labelled workers, which cannot move to another version yet"
                ));
            }
            if row.get::<i64>(2)? != 0 {
                return refuse(format!(
                    "{name}'s history before its checkpoint was pruned (--history-keep): a move replays the whole history, so it cannot move"
                ));
            }
            if row.get::<i64>(9)? == 0 {
                return refuse(format!(
                    "{name} was claimed while it was checked; pause it (`troupe pause {name}`) and upgrade it then"
                ));
            }
            let version: i64 = row.get(3)?;
            // The events as recorded under the version it leaves, encoded
            // (a few bytes an event); the new ones are written a chunk at
            // a time as they are translated.
            let old: Vec<Vec<u8>> = tx
                .query(
                    "SELECT CAST(data AS BLOB) FROM events WHERE run = ?1 ORDER BY chunk",
                    args![run],
                )?
                .iter()
                .map(|r| r.get::<Vec<u8>>(0))
                .collect::<Result<_, _>>()?;
            tx.execute("DELETE FROM events WHERE run = ?1", args![run])?;
            tx.execute("DELETE FROM checkpoints WHERE run = ?1", args![run])?;
            let (mut count, mut chunk, mut n) = (0u64, 0i64, 0i64);
            let mut data = Vec::new();
            for blob in &old {
                let events = codec::decode_events(blob)
                    .map_err(|e| DbError::other(format!("run {run}'s events: {e}")))?;
                for (l, e) in &events {
                    let (nl, moved) = match translate(*l, e) {
                        Ok(m) => m,
                        Err(why) => {
                            late = Some(why);
                            return Err(DbError::other("the move was refused"));
                        }
                    };
                    codec::encode_event(&mut data, nl, &moved);
                    count += 1;
                    n += 1;
                    if data.len() >= CHUNK {
                        tx.execute(
                            "INSERT INTO events(run, chunk, count, data) VALUES (?1, ?2, ?3, ?4)",
                            args![run, chunk, n, std::mem::take(&mut data)],
                        )?;
                        chunk += 1;
                        n = 0;
                    }
                }
            }
            if n > 0 {
                tx.execute(
                    "INSERT INTO events(run, chunk, count, data) VALUES (?1, ?2, ?3, ?4)",
                    args![run, chunk, n, data],
                )?;
            }
            if count != to.checked {
                late = Some(format!(
                    "{name} recorded {} more event(s) while it was checked; try again",
                    count.saturating_sub(to.checked)
                ));
                return Err(DbError::other("the move was refused"));
            }
            tx.execute(
                "INSERT INTO run_versions(run, version, workflow, file, source, fingerprint, canonical, cut, events, moved_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, strftime('%Y-%m-%dT%H:%M:%fZ','now'))",
                args![
                    run,
                    version,
                    &row.get::<String>(4)?,
                    &row.get::<Option<String>>(5)?,
                    &row.get::<String>(6)?,
                    &row.get::<String>(7)?,
                    &row.get::<String>(8)?,
                    serde_json::to_string(to.cut).unwrap_or_default(),
                    old.concat()
                ],
            )?;
            tx.execute(
                "UPDATE runs SET workflow = ?2, file = ?3, source = ?4, fingerprint = ?5, canonical = ?6,
                   lifelines = ?7, version = ?8, updated_at = strftime('%Y-%m-%dT%H:%M:%fZ','now')
                 WHERE id = ?1",
                args![
                    run,
                    to.workflow,
                    to.file,
                    to.source,
                    to.fingerprint,
                    to.canonical,
                    to.lifelines as i64,
                    version + 1
                ],
            )?;
            Ok(Outcome::Moved(version + 1))
        });
        if let Some(why) = late {
            return Err(StoreError::Conflict(why));
        }
        match outcome? {
            Outcome::Moved(v) => Ok(v),
            Outcome::Refused(e) => Err(e),
        }
    }

    /// The versions of `run`, oldest first, the current one last.
    pub fn versions(&self, run: i64) -> Result<Vec<VersionRow>, StoreError> {
        let detail = self.run(run)?;
        let mut rows = self.with("read the run's versions", |db| {
            db.query(
                "SELECT version, workflow, file, fingerprint, moved_at, cut, source FROM run_versions
                 WHERE run = ?1 ORDER BY version",
                args![run],
            )?
            .iter()
            .map(|r| {
                let cut: String = r.get(5)?;
                Ok(VersionRow {
                    version: r.get(0)?,
                    workflow: r.get(1)?,
                    file: r.get(2)?,
                    fingerprint: r.get(3)?,
                    moved_at: r.get(4)?,
                    cut: serde_json::from_str(&cut).unwrap_or_default(),
                    source: r.get(6)?,
                })
            })
            .collect::<Result<Vec<_>, DbError>>()
        })?;
        let current = self.with("read the run's version", |db| {
            db.query_one("SELECT version FROM runs WHERE id = ?1", args![run])?
                .get::<i64>(0)
        })?;
        rows.push(VersionRow {
            version: current,
            workflow: detail.summary.workflow.clone(),
            file: detail.summary.file.clone(),
            fingerprint: detail.fingerprint.clone(),
            moved_at: None,
            cut: Vec::new(),
            source: detail.source.clone(),
        });
        Ok(rows)
    }

    /// The events `run` recorded under its past version `version`, as that
    /// version's, in recorded order.
    pub fn version_events(&self, run: i64, version: i64) -> Result<Events, StoreError> {
        let data: Vec<u8> = self.with("read a version's events", |db| {
            match db.query_opt(
                "SELECT CAST(events AS BLOB) FROM run_versions WHERE run = ?1 AND version = ?2",
                args![run, version],
            )? {
                Some(r) => r.get(0),
                None => Ok(Vec::new()),
            }
        })?;
        codec::decode_events(&data).map_err(|e| StoreError::Corrupt {
            path: self.shown().to_owned(),
            message: format!("run {run}, version {version}: {e}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{bare_run, both};
    use crate::{Durability, RunStatus};
    use std::time::Duration;
    use troupe_check::Value;
    use troupe_check::ir::StmtId;

    fn act(stmt: u32, n: i64) -> Event {
        Event::Act {
            stmt: StmtId(stmt),
            outputs: Some(vec![Value::Int(n)]),
        }
    }

    #[test]
    fn a_run_moves_once_nothing_runs_it_and_keeps_the_version_it_left() {
        let dir = tempfile::tempdir().unwrap();
        for (store, _db) in both(dir.path(), Durability::Normal) {
            let run = store.create_run(&bare_run("v1")).unwrap();
            let recorded = vec![(LifelineId(0), act(0, 1)), (LifelineId(0), act(2, 2))];
            let mut data = Vec::new();
            for (l, e) in &recorded {
                codec::encode_event(&mut data, *l, e);
            }
            store
                .with("record", |db| {
                    db.execute(
                        "INSERT INTO events(run, chunk, count, data) VALUES (?1, 0, 2, ?2)",
                        args![run, data],
                    )
                })
                .unwrap();
            let moved = vec![(LifelineId(1), act(1, 1)), (LifelineId(1), act(4, 2))];
            let to = NewVersion {
                workflow: "w",
                file: Some("w2.troupe"),
                source: "the new source",
                fingerprint: "v2",
                canonical: "",
                lifelines: 2,
                checked: 2,
                cut: &[("A".to_owned(), 2)],
            };
            // The move of the test: each event to lifeline 1, statement + 1.
            let mut translate = |_: LifelineId, e: &Event| -> Result<(LifelineId, Event), String> {
                match e {
                    Event::Act { stmt, outputs } => Ok((
                        LifelineId(1),
                        Event::Act {
                            stmt: StmtId(stmt.0 + 1 + u32::from(stmt.0 == 2)),
                            outputs: outputs.clone(),
                        },
                    )),
                    _ => Err("not an action".into()),
                }
            };
            // A live owner runs it: nothing moves.
            let me = crate::new_owner_id();
            assert_eq!(
                store.claim(run, &me, Duration::from_secs(60)).unwrap(),
                crate::Claim::Claimed
            );
            assert!(matches!(
                store.move_run(run, &to, &mut translate),
                Err(StoreError::Running { .. })
            ));
            store.release(run, &me).unwrap();
            // It recorded more than was checked: nothing moves.
            let stale = NewVersion {
                checked: 1,
                ..to.clone()
            };
            assert!(matches!(
                store.move_run(run, &stale, &mut translate),
                Err(StoreError::Conflict(m)) if m.contains("more event")
            ));
            assert_eq!(store.run(run).unwrap().fingerprint, "v1");
            // Refused after the old events were read and deleted: rolled
            // back, nothing lost.
            let mut events = Vec::new();
            store
                .for_each_event(run, |l, e| events.push((l, e.clone())))
                .unwrap();
            assert_eq!(events, recorded, "a refused move changes nothing");
            assert_eq!(store.move_run(run, &to, &mut translate).unwrap(), 2);
            let detail = store.run(run).unwrap();
            assert_eq!(
                (
                    detail.fingerprint.as_str(),
                    detail.source.as_str(),
                    detail.summary.version
                ),
                ("v2", "the new source", 2)
            );
            let mut now = Vec::new();
            store
                .for_each_event(run, |l, e| now.push((l, e.clone())))
                .unwrap();
            assert_eq!(now, moved);
            let versions = store.versions(run).unwrap();
            assert_eq!(versions.len(), 2);
            assert_eq!(
                (
                    versions[0].version,
                    versions[0].fingerprint.as_str(),
                    &versions[0].cut
                ),
                (1, "v1", &vec![("A".to_owned(), 2)])
            );
            assert!(versions[0].moved_at.is_some() && versions[1].moved_at.is_none());
            assert_eq!(store.version_events(run, 1).unwrap(), recorded);
            // A finished run stays where it ended.
            store
                .with("finish", |db| {
                    db.execute("UPDATE runs SET status = 'done' WHERE id = ?1", args![run])
                })
                .unwrap();
            assert_eq!(store.run(run).unwrap().summary.status, RunStatus::Done);
            let again = NewVersion {
                fingerprint: "v3",
                ..to.clone()
            };
            assert!(matches!(
                store.move_run(run, &again, &mut translate),
                Err(StoreError::Conflict(m)) if m.contains("only an unfinished run")
            ));
            store.delete_run(run).unwrap();
            assert!(store.versions(run).is_err());
        }
    }
}
