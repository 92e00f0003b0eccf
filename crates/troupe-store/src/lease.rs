//! Ownership of runs by lease.
//!
//! A process runs a run only while it holds the run's lease: an owner id and
//! an expiry time on the database's clock. Claiming is one conditional
//! `UPDATE` (a compare-and-swap: it succeeds only when nobody holds a live
//! lease), so of any number of processes that try to claim a run at the
//! same moment exactly one wins. The owner renews its lease while it runs;
//! an owner that crashes stops renewing and its lease expires, after which
//! any process may claim the run. On one machine a claimant need not wait:
//! it asks whether the owner's process still lives (`owner.rs`, which a
//! reused process id does not fool).

use crate::db::{Db, DbError, args};
use crate::state::RunStatus;
use crate::{NOW_MS, Store, StoreError};
use std::time::Duration;

pub(crate) fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX / 4)
}

/// Why a driven run must stop ([`Store::stop_reasons`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// Someone asked to cancel it (or, for a part, its run ended
    /// elsewhere), for this reason.
    Cancel(String),
    /// Someone asked to pause it (`troupe pause`): it stops at its next
    /// step boundary and is recorded paused ([`Store::mark_paused`]).
    Pause,
}

/// The answer to a claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The caller holds the lease now.
    Claimed,
    /// Another owner holds a live lease.
    Owned {
        owner: String,
        /// Milliseconds until the lease expires, unless renewed.
        expires_in_ms: i64,
    },
    /// The run is in a state no claim changes (done, failed, cancelled, or
    /// waiting for `troupe resolve`).
    Unclaimable(RunStatus),
    /// The run is placed: its parts are claimed one by one by workers with
    /// their labels (`Store::claim_part`), never the run as a whole.
    Placed,
}

/// The answer to a renewal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Renewal {
    /// Still the owner; `cancel` is the reason if someone asked to cancel.
    Held { cancel: Option<String> },
    /// The lease was lost (it expired and another process claimed the run):
    /// the caller must stop at once.
    Lost,
}

/// The leases an owner still holds after [`Store::renew_all`], and of
/// those it does not, the ones it gave up because their run (or part)
/// ended rather than lost.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Held {
    pub runs: std::collections::BTreeSet<i64>,
    pub parts: std::collections::BTreeSet<(i64, u32)>,
    pub ended_runs: std::collections::BTreeSet<i64>,
    pub ended_parts: std::collections::BTreeSet<(i64, u32)>,
}

impl Held {
    /// Whether the lease on `run` (or its part `part`) is still held.
    pub fn holds(&self, run: i64, part: Option<u32>) -> bool {
        match part {
            None => self.runs.contains(&run),
            Some(p) => self.parts.contains(&(run, p)),
        }
    }

    /// Whether the lease on `run` (or its part `part`) was lost: neither
    /// held nor given up at its end.
    pub fn lost(&self, run: i64, part: Option<u32>) -> bool {
        let ended = match part {
            None => self.ended_runs.contains(&run),
            Some(p) => self.ended_parts.contains(&(run, p)),
        };
        !self.holds(run, part) && !ended
    }
}

/// Ids per `IN (…)` list: well under either database's limit on
/// parameters.
const IN_CHUNK: usize = 500;

/// `?k, ?k+1, …` for `ids`, appended to `params`.
fn in_list(ids: impl Iterator<Item = i64>, params: &mut Vec<crate::db::Val>) -> String {
    let mut list = Vec::new();
    for id in ids {
        params.push(id.into());
        list.push(format!("?{}", params.len()));
    }
    list.join(", ")
}

impl Store {
    /// Claims `run` for `owner` for `lease`: succeeds when the run is
    /// unfinished and nobody holds its lease, `owner` already does, or the
    /// holder is gone. A holder on this machine is judged by its process
    /// (see [`crate::owner`]): gone, its run is taken at once; alive and
    /// running, never, however the clocks moved; stopped, or on another
    /// machine, once its lease has expired on the database's clock.
    pub fn claim(&self, run: i64, owner: &str, lease: Duration) -> Result<Claim, StoreError> {
        // Nobody holds it, or `owner` does: the common case, one statement.
        if self.claim_if(
            run,
            owner,
            lease,
            "lease_owner IS NULL OR lease_owner = ?2",
            None,
        )? {
            return Ok(Claim::Claimed);
        }
        let row = self.with("read the lease", |db| {
            db.query_opt(
                &format!(
                    "SELECT status, lease_owner, lease_expires - {NOW_MS}, placed FROM runs WHERE id = ?1"
                ),
                args![run],
            )?
            .map(|r| {
                Ok::<(String, Option<String>, i64, i64), DbError>((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                ))
            })
            .transpose()
        })?;
        let Some((status, lease_owner, left, placed)) = row else {
            return Err(StoreError::UnknownRun(Store::run_name(run)));
        };
        let status: RunStatus = status.parse().map_err(StoreError::Sql)?;
        if placed != 0 && !status.is_final() {
            return Ok(Claim::Placed);
        }
        let holder = match lease_owner {
            Some(holder) if !status.is_final() && status != RunStatus::NeedsResolution => holder,
            _ => return Ok(Claim::Unclaimable(status)),
        };
        let owned = |left: i64| Claim::Owned {
            owner: holder.clone(),
            expires_in_ms: left.max(0),
        };
        let taken = match crate::owner::liveness(&holder) {
            crate::owner::Liveness::Gone => {
                tracing::info!(run, holder, "the lease's owner is gone; taking the run");
                self.claim_if(run, owner, lease, "lease_owner = ?4", Some(&holder))?
            }
            crate::owner::Liveness::Alive => return Ok(owned(left)),
            crate::owner::Liveness::Stopped | crate::owner::Liveness::Unknown => self.claim_if(
                run,
                owner,
                lease,
                &format!("lease_owner = ?4 AND lease_expires < {NOW_MS}"),
                Some(&holder),
            )?,
        };
        Ok(if taken { Claim::Claimed } else { owned(left) })
    }

    /// The claim's compare-and-swap: `owner` takes the lease of the
    /// unfinished whole run `run` if `condition` holds of its lease (`?4`
    /// is `holder`).
    fn claim_if(
        &self,
        run: i64,
        owner: &str,
        lease: Duration,
        condition: &str,
        holder: Option<&str>,
    ) -> Result<bool, StoreError> {
        let mut params: Vec<crate::db::Val> = vec![run.into(), owner.into(), millis(lease).into()];
        if let Some(h) = holder {
            params.push(h.into());
        }
        let changed = self.with("claim the run", |db| {
            db.execute(
                &format!(
                    "UPDATE runs SET lease_owner = ?2, lease_expires = {NOW_MS} + ?3,
                        status = CASE WHEN status IN ('queued', 'parked') THEN 'running' ELSE status END,
                        updated_at = strftime('%Y-%m-%dT%H:%M:%fZ','now')
                     WHERE id = ?1 AND status IN ('queued', 'running', 'waiting', 'parked') AND placed = 0
                       AND ({condition})"
                ),
                &params,
            )
        })?;
        Ok(changed == 1)
    }

    /// Hands the lease of `run` from `from` to `to` (a `--detach`ed child
    /// taking over its parent's claim, so the parent's exit does not read as
    /// its owner being gone); false when `from` no longer holds it.
    pub fn hand_over(
        &self,
        run: i64,
        from: &str,
        to: &str,
        lease: Duration,
    ) -> Result<bool, StoreError> {
        self.claim_if(run, to, lease, "lease_owner = ?4", Some(from))
    }

    /// Extends `owner`'s lease on `run`, and says whether someone asked to
    /// cancel the run.
    pub fn renew(&self, run: i64, owner: &str, lease: Duration) -> Result<Renewal, StoreError> {
        let row = self.with("renew the lease", |db| {
            db.query_opt(
                &format!(
                    "UPDATE runs SET lease_expires = {NOW_MS} + ?3
                     WHERE id = ?1 AND lease_owner = ?2 RETURNING cancel_requested"
                ),
                args![run, owner, millis(lease)],
            )?
            .map(|r| r.get::<Option<String>>(0))
            .transpose()
        })?;
        Ok(match row {
            Some(cancel) => Renewal::Held { cancel },
            None => Renewal::Lost,
        })
    }

    /// Whether someone asked to cancel `run` (and why): a read, cheap
    /// enough for an owner to ask often between renewals.
    pub fn cancel_request(&self, run: i64) -> Result<Option<String>, StoreError> {
        self.with("read the run", |db| {
            Ok(db
                .query_opt(
                    "SELECT cancel_requested FROM runs WHERE id = ?1",
                    args![run],
                )?
                .map(|r| r.get::<Option<String>>(0))
                .transpose()?
                .flatten())
        })
    }

    /// Renews, in a statement or two, `owner`'s leases on the whole runs
    /// `runs` and the parts `parts` (what one process drives); returns the
    /// ones it still holds. One owner's leases renewed together cost the
    /// database two statements per renewal period however many runs the
    /// owner drives, rather than one each: on a loaded store, a renewal
    /// queued behind many others came too late, and lost a healthy run.
    pub fn renew_all(
        &self,
        owner: &str,
        runs: &[i64],
        parts: &[(i64, u32)],
        lease: Duration,
    ) -> Result<Held, StoreError> {
        let mut held = Held::default();
        self.with_leases("renew the leases", |db| {
            for chunk in runs.chunks(IN_CHUNK) {
                let mut params = vec![owner.into(), millis(lease).into()];
                let ids = in_list(chunk.iter().copied(), &mut params);
                for r in db.query(
                    &format!(
                        "UPDATE runs SET lease_expires = {NOW_MS} + ?2
                         WHERE lease_owner = ?1 AND id IN ({ids}) RETURNING id"
                    ),
                    &params,
                )? {
                    held.runs.insert(r.get(0)?);
                }
            }
            let mut of_parts: Vec<i64> = parts.iter().map(|(r, _)| *r).collect();
            of_parts.sort_unstable();
            of_parts.dedup();
            for chunk in of_parts.chunks(IN_CHUNK) {
                let mut params = vec![owner.into(), millis(lease).into()];
                let ids = in_list(chunk.iter().copied(), &mut params);
                for r in db.query(
                    &format!(
                        "UPDATE parts SET lease_expires = {NOW_MS} + ?2
                         WHERE lease_owner = ?1 AND status = 'open' AND run IN ({ids})
                         RETURNING run, part"
                    ),
                    &params,
                )? {
                    let part: i64 = r.get(1)?;
                    held.parts.insert((r.get(0)?, u32::try_from(part).unwrap_or(u32::MAX)));
                }
            }
            // A lease not renewed was lost, or given up as its run (or
            // part) ended by its owner's own writes: told apart here, as
            // rarely as leases are not renewed.
            let mut gone: Vec<i64> = runs
                .iter()
                .copied()
                .filter(|r| !held.runs.contains(r))
                .chain(
                    parts
                        .iter()
                        .filter(|p| !held.parts.contains(p))
                        .map(|(r, _)| *r),
                )
                .collect();
            gone.sort_unstable();
            gone.dedup();
            for chunk in gone.chunks(IN_CHUNK) {
                let mut params = vec![owner.into()];
                let ids = in_list(chunk.iter().copied(), &mut params);
                for r in db.query(
                    &format!(
                        "SELECT id FROM runs WHERE id IN ({ids}) AND (lease_owner IS NULL OR lease_owner = ?1)
                           AND status IN ('done', 'failed', 'cancelled', 'needs_resolution')"
                    ),
                    &params,
                )? {
                    held.ended_runs.insert(r.get(0)?);
                }
                for r in db.query(
                    &format!(
                        "SELECT run, part FROM parts WHERE run IN ({ids}) AND status <> 'open'
                           AND (lease_owner IS NULL OR lease_owner = ?1)"
                    ),
                    &params,
                )? {
                    let part: i64 = r.get(1)?;
                    held.ended_parts
                        .insert((r.get(0)?, u32::try_from(part).unwrap_or(u32::MAX)));
                }
            }
            Ok(())
        })?;
        Ok(held)
    }

    /// Why each of `runs` (driven whole) and of the runs of `parts` (driven
    /// in parts) must stop, for those that must: someone asked to cancel
    /// or to pause it, or, for a part, its run ended elsewhere. One read for
    /// all of them (see [`Store::renew_all`]).
    pub fn stop_reasons(
        &self,
        runs: &[i64],
        parts: &[i64],
    ) -> Result<std::collections::BTreeMap<i64, StopReason>, StoreError> {
        let mut all: Vec<i64> = runs.iter().chain(parts).copied().collect();
        all.sort_unstable();
        all.dedup();
        let mut rows = std::collections::BTreeMap::new();
        let mut pausing = std::collections::BTreeSet::new();
        self.with_leases("read the runs", |db| {
            for chunk in all.chunks(IN_CHUNK) {
                let mut params = Vec::new();
                let ids = in_list(chunk.iter().copied(), &mut params);
                for r in db.query(
                    &format!(
                        "SELECT id, status, cancel_requested, error, pause_requested FROM runs WHERE id IN ({ids})"
                    ),
                    &params,
                )? {
                    let ending: crate::placement::RunEnding = (r.get(1)?, r.get(2)?, r.get(3)?);
                    let id = r.get::<i64>(0)?;
                    if r.get::<i64>(4)? != 0 {
                        pausing.insert(id);
                    }
                    rows.insert(id, ending);
                }
            }
            Ok(())
        })?;
        let mut why = std::collections::BTreeMap::new();
        for run in runs {
            if let Some((_, Some(reason), _)) = rows.get(run) {
                why.insert(*run, StopReason::Cancel(reason.clone()));
            } else if pausing.contains(run) {
                why.insert(*run, StopReason::Pause);
            }
        }
        for run in parts {
            if let Some(reason) = crate::placement::part_stops(*run, rows.get(run).cloned()) {
                why.insert(*run, StopReason::Cancel(reason));
            }
        }
        Ok(why)
    }

    /// Gives up `owner`'s lease on `run` (the run ended, or the owner stops).
    pub fn release(&self, run: i64, owner: &str) -> Result<(), StoreError> {
        self.with("release the lease", |db| {
            db.execute(
                "UPDATE runs SET lease_owner = NULL, lease_expires = 0 WHERE id = ?1 AND lease_owner = ?2",
                args![run, owner],
            )
            .map(|_| ())
        })
    }

    /// Asks for `run` to be cancelled. A run with a live owner is cancelled
    /// by that owner at its next renewal (it stops its in-flight actions
    /// and records the reason); a placed run with parts under live leases,
    /// by the last of their workers to stop them
    /// ([`Store::cancel_if_parts_stopped`]); a run without either is
    /// cancelled here. So a run reads as cancelled only once nothing of it
    /// runs any more. Returns whether the run was cancelled here (`false`:
    /// its owners will).
    pub fn request_cancel(&self, run: i64, reason: &str) -> Result<bool, StoreError> {
        self.transaction("cancel the run", |tx| {
            let lock = for_update(&*tx);
            let row = tx.query_opt(
                &format!(
                    "SELECT status, lease_owner, lease_expires - {NOW_MS}, placed FROM runs WHERE id = ?1{lock}"
                ),
                args![run],
            )?;
            let Some(row) = row else {
                return Ok(None);
            };
            let (status, owner, left, placed): (String, Option<String>, i64, i64) =
                (row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?);
            let status: RunStatus = status.parse().unwrap_or(RunStatus::Failed);
            if status.is_final() {
                return Ok(Some(Err(status)));
            }
            let live_owner =
                (owner.is_some() && left > 0) || (placed != 0 && crate::placement::parts_running(tx, run)?);
            if live_owner {
                tx.execute(
                    "UPDATE runs SET cancel_requested = ?2 WHERE id = ?1",
                    args![run, reason],
                )?;
            } else {
                cancel_now(tx, run, reason)?;
            }
            Ok(Some(Ok(!live_owner)))
        })?
        .ok_or_else(|| StoreError::UnknownRun(Store::run_name(run)))?
        .map_err(|status| {
            StoreError::Conflict(format!(
                "{} is {status} already; nothing to cancel",
                Store::run_name(run)
            ))
        })
    }

    /// Records the run cancelled with `reason` (by its owner, after it
    /// stopped its actions), closes its pending tasks and releases the
    /// lease, if `fence`'s owner still holds it; returns whether it did. An
    /// owner that lost the lease leaves the cancellation to its successor,
    /// which is asked the same (the request stays on the run).
    pub fn mark_cancelled(&self, fence: &crate::Fence, reason: &str) -> Result<bool, StoreError> {
        self.transaction("record the cancellation", |tx| {
            if !crate::writer::holds(tx, fence)? {
                return Ok(false);
            }
            cancel_now(tx, fence.run, reason)?;
            Ok(true)
        })
    }
}

/// ` FOR UPDATE` where the database locks rows (SQLite's `IMMEDIATE`
/// transaction already holds the whole file).
pub(crate) fn for_update(db: &dyn Db) -> &'static str {
    match db.dialect() {
        crate::Dialect::Sqlite => "",
        crate::Dialect::Postgres => " FOR UPDATE",
    }
}

/// ` FOR SHARE` where the database locks rows (see [`for_update`]).
pub(crate) fn for_share(db: &dyn Db) -> &'static str {
    match db.dialect() {
        crate::Dialect::Sqlite => "",
        crate::Dialect::Postgres => " FOR SHARE",
    }
}

pub(crate) fn cancel_now(tx: &mut dyn Db, run: i64, reason: &str) -> Result<(), DbError> {
    tx.execute(
        "UPDATE runs SET status = 'cancelled', error = ?2, cancel_requested = NULL,
            lease_owner = NULL, lease_expires = 0,
            updated_at = strftime('%Y-%m-%dT%H:%M:%fZ','now')
         WHERE id = ?1",
        args![run, format!("cancelled: {reason}")],
    )?;
    tx.execute(
        "UPDATE tasks SET status = 'cancelled' WHERE run = ?1 AND status = 'pending'",
        args![run],
    )?;
    Ok(())
}
