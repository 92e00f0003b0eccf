//! Ownership of runs by lease.
//!
//! A process runs a run only while it holds the run's lease: an owner id and
//! an expiry time on the database's clock. Claiming is one conditional
//! `UPDATE` (a compare-and-swap: it succeeds only when nobody holds a live
//! lease), so of any number of processes that try to claim a run at the
//! same moment exactly one wins. The owner renews its lease while it runs;
//! an owner that crashes stops renewing and its lease expires, after which
//! any process may claim the run. Nothing depends on process ids, which the
//! system reuses.

use crate::db::{Db, DbError, args};
use crate::state::RunStatus;
use crate::{NOW_MS, Store, StoreError};
use std::time::Duration;

pub(crate) fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX / 4)
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

impl Store {
    /// Claims `run` for `owner` for `lease`: succeeds when the run is
    /// unfinished and nobody holds a live lease (or `owner` already does).
    pub fn claim(&self, run: i64, owner: &str, lease: Duration) -> Result<Claim, StoreError> {
        let changed = self.with("claim the run", |db| {
            db.execute(
                &format!(
                    "UPDATE runs SET lease_owner = ?2, lease_expires = {NOW_MS} + ?3,
                        status = CASE WHEN status = 'queued' THEN 'running' ELSE status END,
                        updated_at = strftime('%Y-%m-%dT%H:%M:%fZ','now')
                     WHERE id = ?1 AND status IN ('queued', 'running', 'waiting') AND placed = 0
                       AND (lease_owner IS NULL OR lease_owner = ?2 OR lease_expires < {NOW_MS})"
                ),
                args![run, owner, millis(lease)],
            )
        })?;
        if changed == 1 {
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
        match lease_owner {
            Some(owner) if !status.is_final() && status != RunStatus::NeedsResolution => {
                Ok(Claim::Owned {
                    owner,
                    expires_in_ms: left.max(0),
                })
            }
            _ => Ok(Claim::Unclaimable(status)),
        }
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
