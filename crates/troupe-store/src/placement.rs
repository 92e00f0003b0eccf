//! Placed runs: a run whose lifelines are pinned to worker labels runs in
//! parts, one per label, each claimed and driven by a worker with that
//! label, their messages travelling through the store.
//!
//! - **Parts** (`parts`): one row per part with its label (`""`: any
//!   worker), its lifelines, its own lease (the same compare-and-swap as a
//!   run's, [`Store::claim_part`] with `FOR UPDATE SKIP LOCKED` on
//!   PostgreSQL) and, once it ended, its lifelines' results. The run row of
//!   a placed run (`placed = 1`) is never claimed as a whole; it is done
//!   when its last part is (in the transaction that records that part's
//!   end, under the run row's lock), and failed when any part fails.
//! - **Messages** (`messages`): keyed by (run, sender, receiver, lane,
//!   number). A sender numbers its messages per channel (see
//!   `troupe_runtime::remote`); an insert of a number already there is
//!   dropped, so a part that restarts and replays repeats its sends
//!   harmlessly, and every message is delivered exactly once, in order. A
//!   receiver reads its channel from the number it needs on; on PostgreSQL
//!   a `NOTIFY` in the inserting transaction wakes it, on SQLite it polls.
//!   Messages go through the store's one writer, behind the part's own
//!   events and before the part's end.
//! - **Events**: each part journals its own lifelines' events into the
//!   run's chunks, numbered `part + k × parts` so that parts never write
//!   the same chunk.
//! - **Checkpoints** (`part_checkpoints`): each part's latest, taken as a
//!   run's are (every so many of its events), with its place on every
//!   channel to and from the other parts. A restarted part continues from
//!   it: it reads its own chunks after it, and the messages from the
//!   numbers it had reached, so its resumption does not grow with the
//!   run's history. Without one it replays its lifelines from the start,
//!   reading the messages it had received again.
//! - **Leases**: every write of a part (events, checkpoints, messages,
//!   its end) is applied only while its worker holds the part's lease
//!   (see `writer::Fence`): a worker that lost the lease without knowing
//!   yet changes nothing.

use crate::checkpoint::{decode_queued, encode_queued};
use crate::codec::Reader;
use crate::db::{Db, DbError, Val, args};
use crate::lease::millis;
use crate::writer::{Fence, Op, Writer};
use crate::{NOW_MS, Renewal, RunStatus, Store, StoreError};
use serde::Serialize;
use std::sync::Arc;
use std::time::Duration;
use troupe_check::ir::LifelineId;
use troupe_llm::BoxFuture;
use troupe_runtime::{Elsewhere, Queued, Remote, RemoteChannel};

/// A part of a new placed run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPart {
    /// The label a worker needs to claim it (`""`: any worker).
    pub label: String,
    /// Its lifelines, by name.
    pub lifelines: Vec<String>,
}

/// Where a part is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PartStatus {
    /// Not ended: claimable when its lease is free.
    Open,
    /// Its lifelines ended; their results are recorded.
    Done,
}

impl PartStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            PartStatus::Open => "open",
            PartStatus::Done => "done",
        }
    }

    fn parse(text: &str) -> Result<PartStatus, DbError> {
        match text {
            "open" => Ok(PartStatus::Open),
            "done" => Ok(PartStatus::Done),
            other => Err(DbError::other(format!("unknown part status {other:?}"))),
        }
    }
}

/// A part of a placed run, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PartRow {
    pub part: u32,
    pub label: String,
    pub lifelines: Vec<String>,
    pub status: PartStatus,
    /// Its lease holder while the lease is live.
    pub owner: Option<String>,
}

/// Whether a part of `run` runs under a live lease.
pub(crate) fn parts_running(db: &mut dyn Db, run: i64) -> Result<bool, DbError> {
    Ok(live_part(db, run)?.is_some())
}

/// The owner of a part of `run` under a live lease, with the milliseconds
/// its lease has left; `None` when no part of it runs.
pub(crate) fn live_part(db: &mut dyn Db, run: i64) -> Result<Option<(String, i64)>, DbError> {
    db.query_opt(
        &format!(
            "SELECT lease_owner, lease_expires - {NOW_MS} FROM parts WHERE run = ?1 AND status = 'open'
               AND lease_owner IS NOT NULL AND lease_expires > {NOW_MS} LIMIT 1"
        ),
        args![run],
    )?
    .map(|r| Ok((r.get(0)?, r.get(1)?)))
    .transpose()
}

/// What a run's row says about its ending: status, cancellation request,
/// error.
pub(crate) type RunEnding = (String, Option<String>, Option<String>);

/// Why a part of `run` (whose row is `row`, `None` if it is gone) must
/// stop, if it must: the run ended in another part, or someone asked to
/// cancel it.
pub(crate) fn part_stops(run: i64, row: Option<RunEnding>) -> Option<String> {
    let name = Store::run_name(run);
    match row {
        None => Some(format!("{name} was deleted")),
        Some((_, Some(reason), _)) => Some(reason),
        Some((status, None, error)) => match status.parse::<RunStatus>() {
            Ok(RunStatus::Cancelled) => Some(format!(
                "{name} was cancelled: {}",
                error.as_deref().unwrap_or("no reason given")
            )),
            Ok(RunStatus::Failed) => Some(format!(
                "{name} failed in another part: {}",
                error.as_deref().unwrap_or("no error recorded")
            )),
            Ok(RunStatus::NeedsResolution) => Some(format!(
                "{name} waits for a person to settle an effect in another part (`troupe status {name}`)"
            )),
            Ok(RunStatus::Done) => Some(format!("{name} is done already")),
            Ok(_) => None,
            Err(e) => Some(e),
        },
    }
}

/// The labels a worker with `labels` may claim parts of, as the list of an
/// SQL `IN (…)`: none (`''`, the part for any worker) and each of its
/// labels, as parameters appended to `params`.
pub(crate) fn labels_allowed(labels: &[String], params: &mut Vec<Val>) -> String {
    let mut allowed = vec!["''".to_owned()];
    for label in labels {
        params.push(label.as_str().into());
        allowed.push(format!("?{}", params.len()));
    }
    allowed.join(", ")
}

/// Records the parts of run `run` (in the transaction that creates it).
pub(crate) fn insert_parts(db: &mut dyn Db, run: i64, parts: &[NewPart]) -> Result<(), DbError> {
    db.execute("UPDATE runs SET placed = 1 WHERE id = ?1", args![run])?;
    for (i, p) in parts.iter().enumerate() {
        let lifelines = serde_json::to_string(&p.lifelines).unwrap_or_else(|_| "[]".into());
        db.execute(
            "INSERT INTO parts(run, part, label, lifelines, status) VALUES (?1, ?2, ?3, ?4, 'open')",
            args![run, i as i64, p.label.as_str(), lifelines],
        )?;
    }
    Ok(())
}

/// Records that part `part` of `run` ended with `result` (a JSON object of
/// its lifelines' results); when it was the last, the run is done with
/// every part's results. Under the run row's lock, so that of two parts
/// ending at once exactly one sees itself the last.
pub(crate) fn finish_part(
    tx: &mut dyn Db,
    run: i64,
    part: u32,
    result: &str,
) -> Result<(), DbError> {
    // `NO KEY UPDATE`: the parts' finishers exclude one another, but not
    // the key-share locks their own batches' inserts (events, messages)
    // already took on the row through its foreign keys; `FOR UPDATE` would
    // conflict with those, and two parts ending at once would deadlock.
    // (SQLite serialises writers anyway.)
    let lock = match tx.dialect() {
        crate::Dialect::Sqlite => "",
        crate::Dialect::Postgres => " FOR NO KEY UPDATE",
    };
    tx.query(
        &format!("SELECT id FROM runs WHERE id = ?1{lock}"),
        args![run],
    )?;
    tx.execute(
        "UPDATE parts SET status = 'done', result = ?3 WHERE run = ?1 AND part = ?2",
        args![run, i64::from(part), result],
    )?;
    let results: Vec<(String, Option<String>)> = tx
        .query(
            "SELECT status, result FROM parts WHERE run = ?1 ORDER BY part",
            args![run],
        )?
        .iter()
        .map(|r| Ok((r.get(0)?, r.get(1)?)))
        .collect::<Result<_, DbError>>()?;
    if results.iter().any(|(status, _)| status != "done") {
        return Ok(());
    }
    let mut merged = serde_json::Map::new();
    for (_, result) in results {
        if let Some(serde_json::Value::Object(obj)) =
            result.as_deref().and_then(|r| serde_json::from_str(r).ok())
        {
            merged.extend(obj);
        }
    }
    tx.execute(
        "UPDATE runs SET status = 'done', result = ?2, updated_at = strftime('%Y-%m-%dT%H:%M:%fZ','now')
         WHERE id = ?1 AND status NOT IN ('done', 'failed', 'cancelled')",
        args![run, serde_json::Value::Object(merged).to_string()],
    )?;
    Ok(())
}

/// Records message `seq` of `channel` (a repeat is dropped), and wakes
/// the receivers of a PostgreSQL store when the transaction commits.
pub(crate) fn insert_message(
    tx: &mut dyn Db,
    run: i64,
    channel: RemoteChannel,
    seq: u64,
    data: &[u8],
) -> Result<(), DbError> {
    let added = tx.execute(
        "INSERT INTO messages(run, sender, receiver, lane, seq, data) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT DO NOTHING",
        args![
            run,
            i64::from(channel.from.0),
            i64::from(channel.to.0),
            i64::from(channel.lane),
            seq as i64,
            data.to_vec()
        ],
    )?;
    if added > 0 && tx.dialect() == crate::Dialect::Postgres {
        // Delivered at commit, once per payload per transaction.
        tx.query(
            &format!(
                "SELECT 1 FROM pg_notify('{}', ?1)",
                crate::postgres::MESSAGE_CHANNEL
            ),
            args![run.to_string()],
        )?;
    }
    Ok(())
}

impl Store {
    /// The parts of `run` (none: it is not placed).
    pub fn parts(&self, run: i64) -> Result<Vec<PartRow>, StoreError> {
        self.with("read the run's parts", |db| {
            db.query(
                &format!(
                    "SELECT part, label, lifelines, status,
                       CASE WHEN lease_expires > {NOW_MS} THEN lease_owner END
                     FROM parts WHERE run = ?1 ORDER BY part"
                ),
                args![run],
            )?
            .iter()
            .map(|r| {
                let lifelines: String = r.get(2)?;
                let status: String = r.get(3)?;
                Ok(PartRow {
                    part: r.get::<i64>(0)?.clamp(0, i64::from(u32::MAX)) as u32,
                    label: r.get(1)?,
                    lifelines: serde_json::from_str(&lifelines).unwrap_or_default(),
                    status: PartStatus::parse(&status)?,
                    owner: r.get(4)?,
                })
            })
            .collect()
        })
    }

    /// How many messages crossed between the parts of `run` (each once).
    pub fn crossed(&self, run: i64) -> Result<u64, StoreError> {
        self.with("count the run's messages", |db| {
            db.query_one("SELECT count(*) FROM messages WHERE run = ?1", args![run])?
                .get::<i64>(0)
                .map(|n| n.max(0) as u64)
        })
    }

    /// Claims the oldest claimable part of a placed run for `owner`, whose
    /// labels are `labels`: open, its run unfinished and not being
    /// cancelled, its lease free or expired, and its label one of
    /// `labels` (or none).
    pub fn claim_part(
        &self,
        owner: &str,
        labels: &[String],
        lease: Duration,
    ) -> Result<Option<(i64, u32)>, StoreError> {
        let lock = match self.dialect() {
            crate::Dialect::Sqlite => "",
            crate::Dialect::Postgres => " FOR UPDATE OF p SKIP LOCKED",
        };
        let mut params: Vec<Val> = vec![owner.into(), millis(lease).into()];
        let allowed = labels_allowed(labels, &mut params);
        let claimed = self.with("claim a part", |db| {
            let row = db.query_opt(
                &format!(
                    "UPDATE parts SET lease_owner = ?1, lease_expires = {NOW_MS} + ?2
                     WHERE (run, part) = (SELECT p.run, p.part FROM parts p JOIN runs r ON r.id = p.run
                                 WHERE p.status = 'open' AND p.label IN ({allowed})
                                   AND r.status IN ('queued', 'running', 'waiting')
                                   AND r.cancel_requested IS NULL
                                   AND (p.lease_owner IS NULL OR p.lease_expires < {NOW_MS})
                                 ORDER BY p.run, p.part LIMIT 1{lock})
                       AND (lease_owner IS NULL OR lease_expires < {NOW_MS})
                     RETURNING run, part"
                ),
                &params,
            )?;
            let Some(row) = row else { return Ok(None) };
            let (run, part): (i64, i64) = (row.get(0)?, row.get(1)?);
            db.execute(
                "UPDATE runs SET status = 'running', updated_at = strftime('%Y-%m-%dT%H:%M:%fZ','now')
                 WHERE id = ?1 AND status = 'queued'",
                args![run],
            )?;
            db.execute(
                "UPDATE workers SET claimed = claimed + 1 WHERE id = ?1",
                args![owner],
            )?;
            Ok(Some((run, part.clamp(0, i64::from(u32::MAX)) as u32)))
        })?;
        Ok(claimed)
    }

    /// Extends `owner`'s lease on a part. A run that ended (another part
    /// failed) or that someone asked to cancel reads as a cancellation.
    pub fn renew_part(
        &self,
        run: i64,
        part: u32,
        owner: &str,
        lease: Duration,
    ) -> Result<Renewal, StoreError> {
        let held = self.with("renew the part's lease", |db| {
            Ok(db.execute(
                &format!(
                    "UPDATE parts SET lease_expires = {NOW_MS} + ?4
                     WHERE run = ?1 AND part = ?2 AND lease_owner = ?3 AND status = 'open'"
                ),
                args![run, i64::from(part), owner, millis(lease)],
            )? > 0)
        })?;
        if !held {
            return Ok(Renewal::Lost);
        }
        Ok(Renewal::Held {
            cancel: self.stopped_elsewhere(run)?,
        })
    }

    /// Gives up `owner`'s lease on a part.
    pub fn release_part(&self, run: i64, part: u32, owner: &str) -> Result<(), StoreError> {
        self.with("release the part's lease", |db| {
            db.execute(
                "UPDATE parts SET lease_owner = NULL, lease_expires = 0
                 WHERE run = ?1 AND part = ?2 AND lease_owner = ?3",
                args![run, i64::from(part), owner],
            )
            .map(|_| ())
        })
    }

    /// Records a placed run cancelled once someone asked to cancel it and
    /// none of its parts runs under a live lease any more: called by each
    /// part's worker after it stopped its part (the last one's call does
    /// it), and by workers' sweeps for parts whose worker died. Returns
    /// whether it did.
    pub fn cancel_if_parts_stopped(&self, run: i64) -> Result<bool, StoreError> {
        self.transaction("finish the cancellation", |tx| {
            let lock = crate::lease::for_update(&*tx);
            let row = tx.query_opt(
                &format!(
                    "SELECT status, cancel_requested FROM runs WHERE id = ?1 AND placed = 1{lock}"
                ),
                args![run],
            )?;
            let Some(row) = row else { return Ok(false) };
            let (status, reason): (String, Option<String>) = (row.get(0)?, row.get(1)?);
            let final_ = status.parse::<RunStatus>().is_ok_and(RunStatus::is_final);
            let Some(reason) = reason.filter(|_| !final_) else {
                return Ok(false);
            };
            if parts_running(tx, run)? {
                return Ok(false);
            }
            crate::lease::cancel_now(tx, run, &reason)?;
            Ok(true)
        })
    }

    /// The placed runs someone asked to cancel that are not cancelled yet
    /// (for workers' sweeps: see [`Store::cancel_if_parts_stopped`]).
    pub fn cancelling_placed(&self) -> Result<Vec<i64>, StoreError> {
        self.with("find the runs being cancelled", |db| {
            db.query(
                "SELECT id FROM runs WHERE cancel_requested IS NOT NULL AND placed = 1
                   AND status IN ('queued', 'running', 'waiting') ORDER BY id",
                &[],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect()
        })
    }

    /// Why a part of `run` must stop, if it must: the run ended, or
    /// someone asked to cancel it.
    pub fn stopped_elsewhere(&self, run: i64) -> Result<Option<String>, StoreError> {
        let row: Option<RunEnding> = self.with("read the run", |db| {
            db.query_opt(
                "SELECT status, cancel_requested, error FROM runs WHERE id = ?1",
                args![run],
            )?
            .map(|r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .transpose()
        })?;
        Ok(part_stops(run, row))
    }

    /// The stored messages of `channel` from number `seq` on, at most
    /// `limit`, in order, without a gap.
    fn messages(
        &self,
        run: i64,
        channel: RemoteChannel,
        seq: u64,
        limit: usize,
    ) -> Result<Vec<Vec<u8>>, StoreError> {
        let rows: Vec<(i64, Vec<u8>)> = self.with("read the run's messages", |db| {
            db.query(
                "SELECT seq, CAST(data AS BLOB) FROM messages
                 WHERE run = ?1 AND sender = ?2 AND receiver = ?3 AND lane = ?4 AND seq >= ?5
                 ORDER BY seq LIMIT ?6",
                args![
                    run,
                    i64::from(channel.from.0),
                    i64::from(channel.to.0),
                    i64::from(channel.lane),
                    seq as i64,
                    limit as i64
                ],
            )?
            .iter()
            .map(|r| Ok((r.get(0)?, r.get(1)?)))
            .collect()
        })?;
        // Numbers are written in order by one writer per sender, but a
        // sender that restarted may still be catching up: stop at a gap.
        Ok(rows
            .into_iter()
            .enumerate()
            .take_while(|(i, (n, _))| *n == seq as i64 + *i as i64)
            .map(|(_, (_, data))| data)
            .collect())
    }
}

/// The messages of one part of a placed run, through the store.
pub struct StoreChannels {
    store: Store,
    run: i64,
    local: Vec<bool>,
    writer: Writer,
    /// How often a receiver looks without a notification.
    poll: Duration,
    /// The part's lease the messages are sent under (see
    /// [`StoreChannels::under`]).
    fence: Option<Arc<Fence>>,
}

impl std::fmt::Debug for StoreChannels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreChannels")
            .field("run", &self.run)
            .field("local", &self.local)
            .finish()
    }
}

impl StoreChannels {
    /// The transport of the part of `run` that runs the lifelines marked
    /// in `local`.
    pub fn new(store: &Store, run: i64, local: Vec<bool>) -> Result<StoreChannels, StoreError> {
        let writer = store.writer().map_err(|message| StoreError::Open {
            path: store.shown().to_owned(),
            message,
        })?;
        let poll = match store.dialect() {
            // Notified: the poll only catches a lost notification.
            crate::Dialect::Postgres => Duration::from_secs(1),
            crate::Dialect::Sqlite => Duration::from_millis(20),
        };
        Ok(StoreChannels {
            store: store.clone(),
            run,
            local,
            writer,
            poll,
            fence: None,
        })
    }

    /// Sends only while `owner` holds the lease of part `part`: a part
    /// whose lease was lost (a zombie) would otherwise deliver messages
    /// computed from steps its successor never recorded, and as the first
    /// copy of each, they would be the ones received.
    pub fn under(mut self, part: u32, owner: &str) -> StoreChannels {
        self.fence = Some(Arc::new(Fence {
            run: self.run,
            part: Some(part),
            owner: owner.to_owned(),
        }));
        self
    }
}

impl Remote for StoreChannels {
    fn is_local(&self, lifeline: LifelineId) -> bool {
        self.local
            .get(lifeline.0 as usize)
            .copied()
            .unwrap_or(false)
    }

    fn send(&self, channel: RemoteChannel, seq: u64, message: &Queued) {
        let mut data = Vec::new();
        encode_queued(&mut data, message);
        // A failure here resurfaces at the part's next durable write.
        let _ = self.writer.send_under(
            self.fence.as_ref(),
            Op::Message {
                run: self.run,
                channel,
                seq,
                data,
            },
        );
    }

    fn receive(
        &self,
        channel: RemoteChannel,
        seq: u64,
    ) -> BoxFuture<'static, Result<Vec<Queued>, Elsewhere>> {
        let store = self.store.clone();
        let (run, poll) = (self.run, self.poll);
        Box::pin(async move {
            // Subscribed before the first look, so that a message between
            // the look and the wait still wakes it.
            let mut wakeups = store.subscribe_messages();
            let fail = |e: StoreError| Elsewhere(e.to_string());
            let mut looks = 0u64;
            loop {
                let rows = store.messages(run, channel, seq, 512).map_err(fail)?;
                if !rows.is_empty() {
                    let mut out = Vec::with_capacity(rows.len());
                    for (i, data) in rows.iter().enumerate() {
                        let mut r = Reader::new(data);
                        out.push(decode_queued(&mut r).map_err(|e| {
                            Elsewhere(format!(
                                "{}: message {} from lifeline #{} is damaged: {e}",
                                Store::run_name(run),
                                seq + i as u64,
                                channel.from.0
                            ))
                        })?);
                    }
                    return Ok(out);
                }
                // A run that ended elsewhere sends nothing more.
                if looks.is_multiple_of(8)
                    && let Some(why) = store.stopped_elsewhere(run).map_err(fail)?
                {
                    return Err(Elsewhere(why));
                }
                looks += 1;
                crate::fleet::wait_for_run(&mut wakeups, run, poll, poll).await;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Claim, Durability, JournalOptions, testing};
    use std::sync::Arc;
    use troupe_check::Value;
    use troupe_runtime::RunJournal;

    /// The channel from lifeline A to lifeline B of [`placed_run`].
    fn channel_a_to_b() -> RemoteChannel {
        RemoteChannel {
            from: LifelineId(0),
            to: LifelineId(1),
            lane: 0,
        }
    }

    /// A data message carrying `n`.
    fn msg(n: i64) -> Queued {
        Queued::Data {
            stmt: troupe_check::ir::StmtId(7),
            values: vec![Value::Int(n)],
            meta: None,
        }
    }

    fn placed_run(store: &Store) -> i64 {
        let mut run = testing::bare_run("");
        run.lifelines = 3;
        run.parts = vec![
            NewPart {
                label: "a".into(),
                lifelines: vec!["A".into()],
            },
            NewPart {
                label: "b".into(),
                lifelines: vec!["B".into()],
            },
            NewPart {
                label: String::new(),
                lifelines: vec!["C".into()],
            },
        ];
        store.create_run(&run).unwrap()
    }

    /// One owner's leases, on whole runs and on parts, renewed at once:
    /// those it holds come back, one another owner took does not; and one
    /// read says which must stop, and why.
    #[test]
    fn leases_are_renewed_together_and_stops_read_together() {
        let dir = tempfile::tempdir().unwrap();
        for (store, _db) in testing::both(dir.path(), Durability::Normal) {
            let lease = Duration::from_secs(30);
            let mine = store.create_run(&testing::bare_run("")).unwrap();
            let taken = store.create_run(&testing::bare_run("")).unwrap();
            let placed = placed_run(&store);
            assert_eq!(store.claim(mine, "me", lease).unwrap(), Claim::Claimed);
            assert_eq!(store.claim(taken, "other", lease).unwrap(), Claim::Claimed);
            assert_eq!(
                store.claim_part("me", &["a".into()], lease).unwrap(),
                Some((placed, 0))
            );
            let held = store
                .renew_all("me", &[mine, taken], &[(placed, 0), (placed, 1)], lease)
                .unwrap();
            assert_eq!(held.runs.into_iter().collect::<Vec<_>>(), vec![mine]);
            assert_eq!(
                held.parts.into_iter().collect::<Vec<_>>(),
                vec![(placed, 0)]
            );
            assert!(store.stop_reasons(&[mine], &[placed]).unwrap().is_empty());
            assert!(!store.request_cancel(mine, "enough").unwrap());
            assert!(!store.request_cancel(placed, "that too").unwrap());
            let why = store.stop_reasons(&[mine, taken], &[placed]).unwrap();
            let cancel = |r: &str| Some(crate::StopReason::Cancel(r.into()));
            assert_eq!(why.get(&mine).cloned(), cancel("enough"));
            assert_eq!(why.get(&placed).cloned(), cancel("that too"));
            assert_eq!(why.len(), 2, "{why:?}");
            // A lease given up at the run's end is not lost; one taken is.
            let expected = vec![(taken, None), (placed, Some(1))];
            assert_eq!(held_lost(&store, mine, taken, placed), expected);
            store.fail(mine, "ended").unwrap();
            assert_eq!(
                held_lost(&store, mine, taken, placed),
                expected,
                "{store:?}"
            );
        }
    }

    /// Which of the runs and parts of the test above read as lost.
    fn held_lost(store: &Store, mine: i64, taken: i64, placed: i64) -> Vec<(i64, Option<u32>)> {
        let lease = Duration::from_secs(30);
        let held = store
            .renew_all("me", &[mine, taken], &[(placed, 0), (placed, 1)], lease)
            .unwrap();
        let all = [
            (mine, None),
            (taken, None),
            (placed, Some(0)),
            (placed, Some(1)),
        ];
        all.into_iter().filter(|(r, p)| held.lost(*r, *p)).collect()
    }

    #[test]
    fn parts_are_claimed_once_each_and_only_by_their_labels() {
        let dir = tempfile::tempdir().unwrap();
        for (store, _db) in testing::both(dir.path(), Durability::Normal) {
            let run = placed_run(&store);
            let lease = Duration::from_secs(5);
            // Never claimed whole, neither by a worker nor by `resume`.
            assert_eq!(store.claim_next("w", lease).unwrap(), None);
            assert_eq!(store.claim(run, "w", lease).unwrap(), Claim::Placed);
            // A worker without the labels gets only the part for anyone.
            assert_eq!(
                store.claim_part("z", &["z".into()], lease).unwrap(),
                Some((run, 2))
            );
            assert_eq!(store.claim_part("z", &["z".into()], lease).unwrap(), None);
            assert_eq!(store.runnable_for(&["z".into()]).unwrap(), 0);
            assert_eq!(store.runnable().unwrap(), 2);
            // Concurrent claimers with both labels: each part once.
            let got: Vec<Option<(i64, u32)>> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..8)
                    .map(|i| {
                        let store = store.clone();
                        s.spawn(move || {
                            store
                                .claim_part(&format!("w{i}"), &["a".into(), "b".into()], lease)
                                .unwrap()
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let mut won: Vec<u32> = got.iter().flatten().map(|(_, p)| *p).collect();
            won.sort_unstable();
            assert_eq!(won, vec![0, 1], "{got:?}");
            let parts = store.parts(run).unwrap();
            assert!(parts.iter().all(|p| p.owner.is_some()), "{parts:?}");
            // Only the holder renews; a released part is claimable again.
            assert_eq!(store.renew_part(run, 2, "x", lease).unwrap(), Renewal::Lost);
            assert_eq!(
                store.renew_part(run, 2, "z", lease).unwrap(),
                Renewal::Held { cancel: None }
            );
            store.release_part(run, 2, "z").unwrap();
            assert_eq!(store.claim_part("y", &[], lease).unwrap(), Some((run, 2)));
            // A run cancelled meanwhile tells its parts to stop, and reads
            // as cancelled only once none runs under a live lease.
            assert!(!store.request_cancel(run, "enough").unwrap());
            assert!(matches!(
                store.renew_part(run, 2, "y", lease).unwrap(),
                Renewal::Held { cancel: Some(_) }
            ));
            assert_eq!(store.runnable().unwrap(), 0);
            assert_eq!(store.cancelling_placed().unwrap(), vec![run]);
            let parts = store.parts(run).unwrap();
            for p in parts.iter().filter(|p| p.owner.is_some()) {
                assert!(!store.cancel_if_parts_stopped(run).unwrap(), "{parts:?}");
                assert_ne!(store.run(run).unwrap().summary.status, RunStatus::Cancelled);
                store
                    .release_part(run, p.part, p.owner.as_deref().unwrap())
                    .unwrap();
            }
            assert!(store.cancel_if_parts_stopped(run).unwrap());
            assert_eq!(store.run(run).unwrap().summary.status, RunStatus::Cancelled);
            assert_eq!(store.cancelling_placed().unwrap(), Vec::<i64>::new());
            assert!(!store.cancel_if_parts_stopped(run).unwrap(), "once");
        }
    }

    #[test]
    fn messages_are_kept_once_per_number_and_read_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        for (store, _db) in testing::both(dir.path(), Durability::Normal) {
            let run = placed_run(&store);
            let a = StoreChannels::new(&store, run, vec![true, false, false]).unwrap();
            let b = StoreChannels::new(&store, run, vec![false, true, false]).unwrap();
            let ch = channel_a_to_b();
            // The receiver waits before anything was sent.
            let waiting = b.receive(ch, 0);
            a.send(ch, 0, &msg(10));
            a.send(ch, 1, &msg(11));
            // A restarted sender repeats number 0 (here with other content,
            // which a deterministic replay never has): the first stays.
            a.send(ch, 0, &msg(99));
            a.send(ch, 2, &msg(12));
            let first = rt.block_on(waiting).unwrap();
            assert_eq!(first[0], msg(10));
            // Sends are written in the background, so one look may see a
            // prefix; the receiver reads on from where that prefix ended.
            let mut all = Vec::new();
            while all.len() < 3 {
                all.extend(rt.block_on(b.receive(ch, all.len() as u64)).unwrap());
            }
            assert_eq!(all, vec![msg(10), msg(11), msg(12)]);
            assert_eq!(rt.block_on(b.receive(ch, 2)).unwrap(), vec![msg(12)]);
            assert_eq!(store.crossed(run).unwrap(), 3);
            // Another lane is another channel.
            let other = RemoteChannel { lane: 1, ..ch };
            a.send(other, 0, &msg(20));
            assert_eq!(rt.block_on(b.receive(other, 0)).unwrap(), vec![msg(20)]);
            // A receiver waiting on a run that ended elsewhere gives up.
            store.request_cancel(run, "stop it").unwrap();
            let gone = rt.block_on(b.receive(ch, 3)).unwrap_err();
            assert!(gone.0.contains("stop it"), "{gone:?}");
        }
    }

    /// A part whose lease expired and was claimed by another worker (a
    /// zombie) sends nothing more: its successor's messages are the ones
    /// received, and its end does not count.
    #[test]
    fn a_zombie_part_sends_nothing_and_does_not_end_its_part() {
        let dir = tempfile::tempdir().unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        for (store, _db) in testing::both(dir.path(), Durability::Normal) {
            let run = placed_run(&store);
            let short = Duration::from_millis(1);
            assert_eq!(
                store.claim_part("zombie", &["a".into()], short).unwrap(),
                Some((run, 0))
            );
            std::thread::sleep(Duration::from_millis(5));
            let long = Duration::from_secs(60);
            assert_eq!(
                store.claim_part("heir", &["a".into()], long).unwrap(),
                Some((run, 0))
            );
            let local = vec![true, false, false];
            let zombie = StoreChannels::new(&store, run, local.clone())
                .unwrap()
                .under(0, "zombie");
            let heir = StoreChannels::new(&store, run, local)
                .unwrap()
                .under(0, "heir");
            let b = StoreChannels::new(&store, run, vec![false, true, false]).unwrap();
            let ch = channel_a_to_b();
            zombie.send(ch, 0, &msg(666));
            heir.send(ch, 0, &msg(1));
            assert_eq!(rt.block_on(b.receive(ch, 0)).unwrap(), vec![msg(1)]);
            let j = store
                .journal_with(
                    run,
                    Arc::new(troupe_check::TypeTable::default()),
                    JournalOptions {
                        part: Some((0, 3)),
                        owner: Some("zombie".into()),
                        ..JournalOptions::default()
                    },
                )
                .unwrap();
            let r = [("x".to_owned(), Value::Int(1))];
            rt.block_on(j.finish(Ok(&r))).unwrap_err();
            assert!(j.lease_lost());
            let parts = store.parts(run).unwrap();
            assert_eq!(parts[0].status, PartStatus::Open, "{parts:?}");
            assert_eq!(parts[0].owner.as_deref(), Some("heir"));
            // Nor does it mark the run waiting for a person, and nobody
            // settles a step while the heir runs its part.
            let fence = crate::Fence {
                run,
                part: Some(0),
                owner: "zombie".into(),
            };
            assert!(!store.needs_resolution(&fence, "…").unwrap());
            assert_ne!(
                store.run(run).unwrap().summary.status,
                crate::RunStatus::NeedsResolution
            );
            let e = store.resolve(run, "A/deposit#0", None).unwrap_err();
            assert!(
                matches!(&e, StoreError::Running { owner, .. } if owner == "heir"),
                "{e}"
            );
        }
    }

    #[test]
    fn the_last_part_to_end_ends_the_run_with_every_result() {
        let dir = tempfile::tempdir().unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        for (store, db) in testing::both(dir.path(), Durability::Normal) {
            for _ in 0..10 {
                let mut run = testing::bare_run("");
                run.lifelines = 2;
                run.parts = ["x", "y"]
                    .iter()
                    .map(|l| NewPart {
                        label: (*l).into(),
                        lifelines: vec![l.to_uppercase()],
                    })
                    .collect();
                let run = store.create_run(&run).unwrap();
                // Two processes on PostgreSQL (two writers), one on SQLite.
                let other = match &db {
                    Some(db) => Store::open(&db.url, Durability::Normal).unwrap(),
                    None => store.clone(),
                };
                let types = Arc::new(troupe_check::TypeTable::default());
                let part = |p: u32| JournalOptions {
                    part: Some((p, 2)),
                    ..JournalOptions::default()
                };
                let j0 = store.journal_with(run, types.clone(), part(0)).unwrap();
                let j1 = other.journal_with(run, types, part(1)).unwrap();
                let r0 = [("x".to_owned(), Value::Int(1))];
                let r1 = [("y".to_owned(), Value::Int(2))];
                let (a, b) =
                    rt.block_on(async { tokio::join!(j0.finish(Ok(&r0)), j1.finish(Ok(&r1))) });
                a.unwrap();
                b.unwrap();
                let detail = store.run(run).unwrap();
                assert_eq!(detail.summary.status, RunStatus::Done);
                assert_eq!(
                    detail.summary.result,
                    Some(serde_json::json!({ "x": 1, "y": 2 }))
                );
            }
        }
    }
}
