//! Pausing a run (`troupe pause`, `troupe unpause`).
//!
//! A paused run holds no lease and no process claims it: it is neither
//! queued nor runnable until it is unpaused. A run nobody drives is paused
//! at once. A run with a live owner is asked (`pause_requested`): its owner
//! sees the request with its next lease renewal, stops at its next step
//! boundary (an effect in flight finishes first) and records the pause
//! under its lease ([`Store::mark_paused`]), in the same transaction that
//! gives the lease back. Unpausing queues the run again, for `troupe
//! resume` or any worker, and withdraws a request not yet taken.

use crate::db::{Db, DbError, args};
use crate::lease::for_update;
use crate::{NOW_MS, RunStatus, Store, StoreError};

/// What [`Store::request_pause`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pausing {
    /// Nobody drove the run: it is paused now.
    Paused,
    /// `owner` drives it, and was asked to pause it at its next step
    /// boundary.
    Asked { owner: String },
    /// It was paused already.
    Already,
}

impl Store {
    /// Pauses `run`, or asks its live owner to (see the module doc).
    /// Refused for a run that ended, waits for `resolve`, or runs in parts.
    pub fn request_pause(&self, run: i64) -> Result<Pausing, StoreError> {
        let name = Store::run_name(run);
        self.transaction("pause the run", |tx| {
            let lock = for_update(&*tx);
            let Some(row) = tx.query_opt(
                &format!(
                    "SELECT status, lease_owner, lease_expires - {NOW_MS}, placed FROM runs WHERE id = ?1{lock}"
                ),
                args![run],
            )?
            else {
                return Ok(Err(StoreError::UnknownRun(name.clone())));
            };
            let (status, owner, left, placed): (String, Option<String>, i64, i64) =
                (row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?);
            let status: RunStatus = status.parse().unwrap_or(RunStatus::Failed);
            if status == RunStatus::Paused {
                return Ok(Ok(Pausing::Already));
            }
            if status.is_final() || status == RunStatus::NeedsResolution {
                return Ok(Err(StoreError::Conflict(format!(
                    "{name} is {status}; only an unfinished run can be paused"
                ))));
            }
            if placed != 0 {
                return Ok(Err(StoreError::Conflict(format!(
                    "{name} runs in parts on labelled workers, which cannot be paused yet; `troupe cancel {name}` stops it"
                ))));
            }
            // A live owner, unless its process is gone (on this machine).
            let live = owner.filter(|o| {
                left > 0 && crate::owner::liveness(o) != crate::owner::Liveness::Gone
            });
            Ok(Ok(match live {
                Some(owner) => {
                    tx.execute(
                        "UPDATE runs SET pause_requested = 1 WHERE id = ?1",
                        args![run],
                    )?;
                    Pausing::Asked { owner }
                }
                None => {
                    pause_now(tx, run)?;
                    Pausing::Paused
                }
            }))
        })?
    }

    /// Records `fence`'s run paused (its owner stopped it at a step
    /// boundary because a pause was asked) and gives its lease back, if the
    /// owner still holds it and the pause is still wanted; returns whether
    /// it did. An unpause that came first leaves the run as it was.
    pub fn mark_paused(&self, fence: &crate::Fence) -> Result<bool, StoreError> {
        self.with("record the pause", |db| {
            let changed = db.execute(
                "UPDATE runs SET status = 'paused', pause_requested = 0,
                    lease_owner = NULL, lease_expires = 0,
                    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ','now')
                 WHERE id = ?1 AND lease_owner = ?2 AND pause_requested <> 0",
                args![fence.run, &fence.owner],
            )?;
            Ok(changed == 1)
        })
    }

    /// Whether someone asked for `run` to be paused and it is not yet.
    pub fn pause_requested(&self, run: i64) -> Result<bool, StoreError> {
        self.with("read the run", |db| {
            Ok(db
                .query_opt(
                    "SELECT 1 FROM runs WHERE id = ?1 AND pause_requested <> 0",
                    args![run],
                )?
                .is_some())
        })
    }

    /// Unpauses `run`: a paused run is queued again (any worker, or `troupe
    /// resume`, continues it); a pause asked and not yet taken is
    /// withdrawn. Returns whether the run was paused.
    pub fn unpause(&self, run: i64) -> Result<bool, StoreError> {
        let name = Store::run_name(run);
        let (was_paused, withdrawn) = self.transaction("unpause the run", |tx| {
            let paused = tx.execute(
                "UPDATE runs SET status = 'queued', pause_requested = 0,
                    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ','now')
                 WHERE id = ?1 AND status = 'paused'",
                args![run],
            )?;
            let withdrawn = tx.execute(
                "UPDATE runs SET pause_requested = 0 WHERE id = ?1 AND pause_requested <> 0",
                args![run],
            )?;
            Ok((paused == 1, withdrawn == 1))
        })?;
        if was_paused {
            crate::postgres::wake(self, run);
            return Ok(true);
        }
        if withdrawn {
            return Ok(false);
        }
        let status = self.run(run)?.summary.status;
        Err(StoreError::Conflict(format!(
            "{name} is {status}, not paused; nothing to unpause"
        )))
    }
}

/// Pauses `run` now: nobody drives it.
fn pause_now(tx: &mut dyn Db, run: i64) -> Result<(), DbError> {
    tx.execute(
        "UPDATE runs SET status = 'paused', pause_requested = 0,
            lease_owner = NULL, lease_expires = 0,
            updated_at = strftime('%Y-%m-%dT%H:%M:%fZ','now')
         WHERE id = ?1",
        args![run],
    )
    .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{bare_run, both};
    use crate::{Claim, Durability, Fence};
    use std::time::Duration;

    #[test]
    fn a_run_is_paused_at_once_or_by_its_owner_and_claimed_by_nobody_until_unpaused() {
        let dir = tempfile::tempdir().unwrap();
        let lease = Duration::from_secs(60);
        for (store, _db) in both(dir.path(), Durability::Normal) {
            // Nobody drives it: paused at once, and claimed by nobody.
            let idle = store.create_run(&bare_run("f")).unwrap();
            assert_eq!(store.request_pause(idle).unwrap(), Pausing::Paused);
            assert_eq!(store.request_pause(idle).unwrap(), Pausing::Already);
            let s = store.run(idle).unwrap().summary;
            assert_eq!((s.status, s.owner), (RunStatus::Paused, None));
            assert_eq!(store.claim_next("w", lease).unwrap(), None, "{store:?}");
            assert!(matches!(
                store.claim(idle, "w", lease).unwrap(),
                Claim::Unclaimable(RunStatus::Paused)
            ));
            assert_eq!(store.runnable().unwrap(), 0);
            // Unpaused: queued, claimed by the next worker.
            assert!(store.unpause(idle).unwrap());
            assert!(store.unpause(idle).is_err(), "not paused any more");
            assert_eq!(store.claim_next("w", lease).unwrap(), Some(idle));

            // Driven: its owner is asked, and only it records the pause.
            let driven = store.create_run(&bare_run("g")).unwrap();
            assert_eq!(store.claim(driven, "owner", lease).unwrap(), Claim::Claimed);
            assert_eq!(
                store.request_pause(driven).unwrap(),
                Pausing::Asked {
                    owner: "owner".into()
                }
            );
            assert!(store.pause_requested(driven).unwrap());
            let fence = |owner: &str| Fence {
                run: driven,
                part: None,
                owner: owner.into(),
            };
            assert!(!store.mark_paused(&fence("stranger")).unwrap());
            assert!(store.mark_paused(&fence("owner")).unwrap());
            let s = store.run(driven).unwrap().summary;
            assert_eq!((s.status, s.owner), (RunStatus::Paused, None));
            assert!(!store.pause_requested(driven).unwrap());

            // A request withdrawn before the owner took it: nothing paused.
            assert!(store.unpause(driven).unwrap());
            assert_eq!(store.claim(driven, "owner", lease).unwrap(), Claim::Claimed);
            store.request_pause(driven).unwrap();
            assert!(!store.unpause(driven).unwrap(), "withdrawn, not paused");
            assert!(!store.mark_paused(&fence("owner")).unwrap());
            assert_ne!(store.run(driven).unwrap().summary.status, RunStatus::Paused);

            // An ended run cannot be paused.
            store.release(driven, "owner").unwrap();
            store
                .request_cancel(driven, "test")
                .expect("cancelled at once: nobody drives it");
            assert!(matches!(
                store.request_pause(driven),
                Err(StoreError::Conflict(_))
            ));
        }
    }
}
