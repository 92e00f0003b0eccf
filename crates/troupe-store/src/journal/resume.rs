//! Opening a run's journal: loading what a resumed run needs from the
//! store (its latest usable checkpoint, the event chunks after it and the
//! steps recorded after it, with the sub-steps of the steps it was waiting
//! for), so that its cost follows the tail of the history, not the whole.
//! Apart from `journal.rs` (the journal's writes) because resuming has
//! rules of its own (which checkpoint to trust, what to load), tested here.

use super::{Buffer, JournalOptions, StoreJournal};
use crate::checkpoint as stored_checkpoint;
use crate::codec::{self, Reader};
use crate::db::args;
use crate::writer::Fence;
use crate::{Store, StoreError};
use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use troupe_check::TypeTable;
use troupe_check::ir::StmtId;
use troupe_runtime::Recorded;

impl StoreJournal {
    pub(crate) fn open(
        store: &Store,
        run: i64,
        types: Arc<TypeTable>,
        options: JournalOptions,
    ) -> Result<StoreJournal, StoreError> {
        let corrupt = |message: String| StoreError::Corrupt {
            path: store.shown().to_owned(),
            message,
        };
        let (lifelines, fingerprint, pruned): (i64, String, i64) = store
            .with("load the run", |db| {
                db.query_opt(
                    "SELECT lifelines, fingerprint, pruned FROM runs WHERE id = ?1",
                    args![run],
                )?
                .map(|r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .transpose()
            })?
            .ok_or_else(|| StoreError::UnknownRun(Store::run_name(run)))?;
        let lifelines = lifelines.max(0) as usize;
        type Row = (i64, i64, String, i64, Vec<u8>);
        let latest: Option<Row> = store.with("load the checkpoint", |db| {
            let row = match options.part {
                None => db.query_opt(
                    "SELECT seq, chunk, fingerprint, steps_mark, CAST(data AS BLOB) FROM checkpoints
                     WHERE run = ?1 ORDER BY seq DESC LIMIT 1",
                    args![run],
                )?,
                Some((part, _)) => db.query_opt(
                    "SELECT seq, chunk, fingerprint, steps_mark, CAST(data AS BLOB) FROM part_checkpoints
                     WHERE run = ?1 AND part = ?2",
                    args![run, part],
                )?,
            };
            row.map(|r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
                .transpose()
        })?;
        // A checkpoint of another workflow, or one that does not decode, is
        // not followed: the run replays its history instead, unless the
        // history before it was pruned.
        let checkpoint = match latest {
            None => None,
            Some((seq, chunk, fp, mark, data)) => {
                let usable = if fp != fingerprint {
                    Err(format!("it is of workflow {fp}, the run of {fingerprint}"))
                } else {
                    stored_checkpoint::decode(&data).map_err(|e| e.to_string())
                };
                match usable {
                    Ok(cp) => Some((chunk, mark, cp)),
                    Err(why) if pruned > 0 => {
                        return Err(corrupt(format!(
                            "run {run}: the checkpoint at event {seq} cannot be used ({why}), and the history before it was pruned"
                        )));
                    }
                    Err(why) => {
                        tracing::warn!(run, seq, %why, "ignoring the run's checkpoint; replaying its history");
                        None
                    }
                }
            }
        };
        let (mut stored, first_chunk) = match &checkpoint {
            Some((chunk, _, cp)) => {
                let mut seen = cp.seen.clone();
                seen.resize(lifelines.max(seen.len()), 0);
                (seen, *chunk)
            }
            None => (vec![0u64; lifelines], 0),
        };
        let seen = stored.clone();
        let mut next_chunk = first_chunk;
        let mut mine: Option<i64> = None;
        // A part reads its own chunks only (every `parts`-th from its
        // number): the others' are no business of its replay.
        let chunks = match options.part {
            None => store.chunks(run, first_chunk, None)?,
            Some((part, parts)) => store.part_chunks(run, first_chunk, part, parts)?,
        };
        let mut tail: Vec<Vec<StmtId>> = vec![Vec::new(); stored.len()];
        for (chunk, data) in chunks {
            let events = codec::decode_events(&data)
                .map_err(|e| corrupt(format!("run {run}, event chunk {chunk}: {e}")))?;
            for (l, e) in events {
                if let Some(n) = stored.get_mut(l.0 as usize) {
                    *n += 1;
                }
                if let Some(t) = tail.get_mut(l.0 as usize) {
                    t.push(e.stmt());
                }
            }
            next_chunk = chunk + 1;
            if let Some((part, parts)) = options.part
                && chunk.rem_euclid(i64::from(parts.max(1))) == i64::from(part)
            {
                mine = Some(chunk);
            }
        }
        if let Some((part, parts)) = options.part {
            // After its last chunk, or where its checkpoint says its next
            // one goes, or its first.
            next_chunk = match (mine, &checkpoint) {
                (Some(c), _) => c + i64::from(parts.max(1)),
                (None, Some(_)) => first_chunk,
                (None, None) => i64::from(part),
            };
        }
        // The steps a resumed run may ask for: after a checkpoint, those
        // recorded after it and the ones it was waiting for.
        type StepRow = (String, String, Option<Vec<u8>>);
        let steps: Vec<StepRow> = store.with("load the steps", |db| {
            let select = "SELECT key, status, outputs FROM steps WHERE run = ?1";
            let row = |r: &crate::db::Row| Ok((r.get(0)?, r.get(1)?, r.get(2)?));
            match &checkpoint {
                None => db.query(select, args![run])?.iter().map(row).collect(),
                Some((_, mark, cp)) => {
                    let mut out: Vec<StepRow> = db
                        .query(&format!("{select} AND seq > ?2"), args![run, mark])?
                        .iter()
                        .map(row)
                        .collect::<Result<_, crate::db::DbError>>()?;
                    // With the sub-steps of a pending step (the turns and
                    // tool calls of a model's conversation, a `planner`
                    // call's plan and nested steps): keys under `key/`. (SQLite's LIKE ignores ASCII case, so it may
                    // load a few steps more; they are looked up by exact
                    // key, so they are never used.)
                    for key in &cp.checkpoint.pending {
                        let key = key.to_string();
                        let under = format!("{}/%", like_escape(&key));
                        for r in db.query(
                            &format!("{select} AND (key = ?2 OR key LIKE ?3 ESCAPE '\\')"),
                            args![run, key, under],
                        )? {
                            out.push(row(&r)?);
                        }
                    }
                    Ok(out)
                }
            }
        })?;
        let mut recorded = HashMap::new();
        for (key, status, outputs) in steps {
            let entry = match (status.as_str(), outputs) {
                ("done", Some(bytes)) => {
                    let values = Reader::new(&bytes)
                        .values()
                        .map_err(|e| corrupt(format!("run {run}, step {key}: {e}")))?;
                    Recorded::Done(values)
                }
                _ => Recorded::Started,
            };
            recorded.insert(key, entry);
        }
        let writer = store.writer().map_err(|message| StoreError::Open {
            path: store.shown().to_owned(),
            message,
        })?;
        let fence = options.owner.clone().map(|owner| {
            Arc::new(Fence {
                run,
                part: options.part.map(|(p, _)| p),
                owner,
            })
        });
        Ok(StoreJournal {
            store: store.downgrade(),
            fence,
            lost: Arc::new(AtomicBool::new(false)),
            run,
            writer,
            types,
            buffer: Mutex::new(Buffer {
                // Grown as events come: a run of a few steps must not
                // take a chunk's memory (1,000 concurrent runs spent a
                // fifth of their time having the kernel zero such pages).
                bytes: Vec::new(),
                count: 0,
                next_chunk,
                seen,
                stored,
            }),
            recorded,
            fingerprint,
            options,
            resume: Mutex::new(checkpoint.map(|(_, _, cp)| cp.checkpoint)),
            tail: Mutex::new(Some(tail)),
        })
    }
}

/// `text` as a literal in a LIKE pattern with `\` as the escape.
fn like_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::History;
    use crate::journal::tests::{act, stores};
    use troupe_check::Value;
    use troupe_check::ir::LifelineId;
    use troupe_runtime::{Checkpoint, LaneState, RunJournal};

    fn checkpoint(events: u64) -> Checkpoint {
        Checkpoint {
            lanes: vec![LaneState {
                pc: 0,
                done: false,
                values: Vec::new(),
                occurrences: Vec::new(),
                parts: Vec::new(),
                keyed: Vec::new(),
                view: None,
            }],
            channels: Vec::new(),
            steps: events,
            events,
            pending: Vec::new(),
            monitor: None,
            crossed: Vec::new(),
            tools: Vec::new(),
        }
    }

    /// Records `n` events with a checkpoint after every `every`, durably.
    fn record(j: &StoreJournal, n: u64, every: u64) {
        for i in 1..=n {
            j.event(LifelineId(0), &act());
            if i % every == 0 {
                j.checkpoint(checkpoint(i));
            }
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(RunJournal::flush(j)).unwrap();
    }

    fn open(store: &Store, run: i64, history: History) -> Result<StoreJournal, StoreError> {
        StoreJournal::open(
            store,
            run,
            Arc::new(TypeTable::default()),
            JournalOptions {
                history,
                ..JournalOptions::default()
            },
        )
    }

    fn damage(store: &Store) {
        store
            .with("damage", |db| {
                let sql = match db.dialect() {
                    crate::Dialect::Sqlite => {
                        "UPDATE checkpoints SET data = CAST(substr(data, 1, 3) || x'ff' || substr(data, 5) AS BLOB)"
                    }
                    crate::Dialect::Postgres => "UPDATE checkpoints SET data = set_byte(data, 3, 255)",
                };
                db.execute(sql, &[])
            })
            .unwrap();
    }

    #[test]
    fn the_latest_checkpoint_is_resumed_from_and_the_events_before_it_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        for (store, run, _db) in stores(dir.path()) {
            record(&open(&store, run, History::All).unwrap(), 2_500, 1_000);
            let j = open(&store, run, History::All).unwrap();
            assert_eq!(j.resumes_at(), Some(2_000), "{store:?}");
            let cp = j.resume_from().unwrap();
            assert_eq!(cp.events, 2_000);
            // The replayed tail is dropped, the events after it recorded once.
            for _ in 0..600 {
                j.event(LifelineId(0), &act());
            }
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            rt.block_on(RunJournal::flush(&j)).unwrap();
            assert_eq!(store.run(run).unwrap().events, 2_600);
        }
    }

    /// A run resumed from a checkpoint taken while a model's conversation
    /// was in flight gets the conversation's sub-steps recorded before the
    /// checkpoint (`A/assist#0/…`), and no other step's.
    #[test]
    fn the_sub_steps_of_a_pending_step_are_loaded_with_it() {
        use troupe_runtime::{StepKey, StepKind};
        let key = |action: &str, n| StepKey {
            lifeline: "A".into(),
            action: action.into(),
            occurrence: n,
        };
        let dir = tempfile::tempdir().unwrap();
        for (store, run, _db) in stores(dir.path()) {
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            let j = open(&store, run, History::All).unwrap();
            let steps = [
                key("assist#0/turn", 0),
                key("assist#0/get_user", 1),
                key("get_user#0/turn", 0),
                // Not under a pending step: `_` is no wildcard, and
                // `assist#00` is another step.
                key("getXuser#0/turn", 0),
                key("assist#00/turn", 0),
                key("other", 0),
            ];
            for k in &steps {
                rt.block_on(j.record(k, StepKind::Llm, &[], &[Value::Bool(true)]))
                    .unwrap();
            }
            let mut cp = checkpoint(1_000);
            cp.pending = vec![key("assist", 0), key("get_user", 0)];
            for _ in 0..1_000 {
                j.event(LifelineId(0), &act());
            }
            j.checkpoint(cp);
            rt.block_on(RunJournal::flush(&j)).unwrap();
            drop(j);
            let j = open(&store, run, History::All).unwrap();
            assert_eq!(j.resumes_at(), Some(1_000), "{store:?}");
            let loaded: Vec<bool> = steps.iter().map(|k| j.recorded(k).is_some()).collect();
            assert_eq!(loaded, [true, true, true, false, false, false], "{store:?}");
        }
    }

    #[test]
    fn a_damaged_checkpoint_is_ignored_while_the_history_is_whole() {
        let dir = tempfile::tempdir().unwrap();
        for (store, run, _db) in stores(dir.path()) {
            record(&open(&store, run, History::All).unwrap(), 2_500, 1_000);
            damage(&store);
            let j = open(&store, run, History::All).unwrap();
            assert_eq!(
                j.resumes_at(),
                None,
                "a damaged checkpoint was followed: {store:?}"
            );
            assert!(j.resume_from().is_none());
        }
    }

    #[test]
    fn a_checkpoint_of_another_workflow_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        for (store, run, _db) in stores(dir.path()) {
            record(&open(&store, run, History::All).unwrap(), 2_500, 1_000);
            store
                .with("refingerprint", |db| {
                    db.execute("UPDATE checkpoints SET fingerprint = 'other'", &[])
                })
                .unwrap();
            assert_eq!(open(&store, run, History::All).unwrap().resumes_at(), None);
        }
    }

    #[test]
    fn with_a_pruned_history_a_damaged_checkpoint_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        for (store, run, _db) in stores(dir.path()) {
            record(
                &open(&store, run, History::Keep(1_000)).unwrap(),
                20_000,
                1_000,
            );
            let detail = store.run(run).unwrap();
            assert!(detail.pruned > 0 && detail.events < 4_000, "{detail:?}");
            assert_eq!(
                detail.pruned + detail.events,
                20_000,
                "pruned {} kept {}",
                detail.pruned,
                detail.events
            );
            damage(&store);
            match open(&store, run, History::Keep(1_000)) {
                Err(StoreError::Corrupt { message, .. }) => {
                    assert!(message.contains("pruned"), "{message}");
                }
                other => panic!("expected a corrupt store, got {other:?}"),
            }
            assert!(store.forget_checkpoints(run).is_err());
        }
    }
}
