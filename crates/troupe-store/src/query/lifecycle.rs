//! The writes that move a run between statuses: settling an unfinished
//! effect, failing, marking for resolution, parking, reopening and
//! deleting. Apart from `query.rs` because each is a small transaction
//! with its own fencing rules, read together rather than among the reads.

use crate::codec;
use crate::db::{DbError, args};
use crate::state::{RunStatus, StepStatus};
use crate::{NOW_MS, Store, StoreError};
use troupe_check::Value;

use super::Parking;

impl Store {
    /// Settles an effect that started and never finished: `Some(outputs)`
    /// records it done with those outputs; `None` forgets the start so that
    /// the resumed run performs it again. Refused while a live owner holds
    /// the run's lease or one of its parts' ([`StoreError::Running`]): that
    /// owner may be performing the effect right now, and forgetting its
    /// start would have it performed twice. Checked in the transaction that
    /// settles it, with the run's row locked, so no claim slips between.
    pub fn resolve(
        &self,
        run: i64,
        key: &str,
        outputs: Option<(&[Value], serde_json::Value)>,
    ) -> Result<(), StoreError> {
        enum Outcome {
            Settled,
            NoRun,
            NoStep,
            Finished,
            Running(String, i64),
        }
        let outcome = self.transaction("settle the step", |tx| {
            let lock = crate::lease::for_update(&*tx);
            let Some((owner, left, placed)) = tx
                .query_opt(
                    &format!(
                        "SELECT lease_owner, lease_expires - {NOW_MS}, placed FROM runs WHERE id = ?1{lock}"
                    ),
                    args![run],
                )?
                .map(|r| {
                    Ok::<(Option<String>, i64, i64), DbError>((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .transpose()?
            else {
                return Ok(Outcome::NoRun);
            };
            if let Some(owner) = owner.filter(|_| left > 0) {
                return Ok(Outcome::Running(owner, left));
            }
            if placed != 0
                && let Some((owner, left)) = crate::placement::live_part(tx, run)?
            {
                return Ok(Outcome::Running(owner, left));
            }
            let status: Option<String> = tx
                .query_opt(
                    "SELECT status FROM steps WHERE run = ?1 AND key = ?2",
                    args![run, key],
                )?
                .map(|r| r.get(0))
                .transpose()?;
            match status.map(|s| s.parse::<StepStatus>().unwrap_or(StepStatus::Started)) {
                None => return Ok(Outcome::NoStep),
                Some(StepStatus::Done) => return Ok(Outcome::Finished),
                _ => {}
            }
            match &outputs {
                Some((values, json)) => {
                    let mut bin = Vec::new();
                    codec::encode_values(&mut bin, values);
                    tx.execute(
                        "UPDATE steps SET status = 'done', outputs = ?3, outputs_json = ?4, finished_at = strftime('%Y-%m-%dT%H:%M:%fZ','now')
                         WHERE run = ?1 AND key = ?2",
                        args![run, key, bin, json.to_string()],
                    )?;
                }
                None => {
                    tx.execute("DELETE FROM steps WHERE run = ?1 AND key = ?2", args![run, key])?;
                }
            }
            // Settled: the run may go on.
            tx.execute(
                "UPDATE runs SET status = 'queued', error = NULL WHERE id = ?1 AND status = 'needs_resolution'",
                args![run],
            )?;
            Ok(Outcome::Settled)
        })?;
        let name = Store::run_name(run);
        match outcome {
            Outcome::Settled => {
                crate::postgres::wake(self, run);
                Ok(())
            }
            Outcome::NoRun => Err(StoreError::UnknownRun(name)),
            Outcome::NoStep => Err(StoreError::Conflict(format!("{name} has no step {key}"))),
            Outcome::Finished => Err(StoreError::Conflict(format!(
                "step {key} of {name} already finished"
            ))),
            Outcome::Running(owner, expires_in_ms) => Err(StoreError::Running {
                run: name,
                owner,
                expires_in_ms,
                what: format!("its step {key} can be settled"),
            }),
        }
    }

    /// Records a run's settings (after an explicit override on resume).
    pub fn set_settings(&self, run: i64, settings: &str) -> Result<(), StoreError> {
        self.with("record the settings", |db| {
            db.execute(
                "UPDATE runs SET settings = ?2 WHERE id = ?1",
                args![run, settings],
            )
            .map(|_| ())
        })
    }

    /// Marks a run failed (e.g. when it cannot be resumed).
    pub fn fail(&self, run: i64, error: &str) -> Result<(), StoreError> {
        self.with("mark the run failed", |db| {
            db.execute(
                "UPDATE runs SET status = 'failed', error = ?2, lease_owner = NULL, lease_expires = 0,
                    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ','now') WHERE id = ?1",
                args![run, error],
            )
            .map(|_| ())
        })
    }

    /// Marks a run as waiting for a person to settle a step, if `fence`'s
    /// owner still holds the run's lease (or its part's); returns
    /// whether it did. A process that lost its lease (paused past it, or
    /// starved) must not: its successor may be performing that very step
    /// by now, and a run marked so would have a person settle a step that
    /// still runs.
    pub fn needs_resolution(&self, fence: &crate::Fence, error: &str) -> Result<bool, StoreError> {
        self.transaction("mark the run", |tx| {
            if !crate::writer::holds(tx, fence)? {
                return Ok(false);
            }
            tx.execute(
                "UPDATE runs SET status = 'needs_resolution', error = ?2, lease_owner = NULL, lease_expires = 0,
                    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ','now') WHERE id = ?1",
                args![fence.run, error],
            )?;
            Ok(true)
        })
    }

    /// Gives back a run whose every lifeline waits on a person, so that it
    /// holds no worker while it waits: the run is parked (no worker claims
    /// it until one of its tasks is answered), or, when a task of it was
    /// answered and the run has not taken the answer yet, queued again at
    /// once. Only while `fence`'s owner holds its lease.
    pub fn park(&self, fence: &crate::Fence) -> Result<Parking, StoreError> {
        let parking = self.transaction("park the run", |tx| {
            let lock = crate::lease::for_update(&*tx);
            // Locked first, then read in statements of their own: an
            // answer committed while this waited for the lock is seen.
            tx.query_opt(
                &format!("SELECT id FROM runs WHERE id = ?1{lock}"),
                args![fence.run],
            )?;
            if !crate::writer::holds(tx, fence)? {
                return Ok(Parking::Lost);
            }
            // An answer, or a due timer, the run has not taken yet: it
            // goes on at once instead.
            let answered = tx
                .query_opt(
                    &format!(
                        "SELECT 1 WHERE EXISTS (SELECT 1 FROM tasks t WHERE t.run = ?1 AND t.status = 'answered'
                           AND NOT EXISTS (SELECT 1 FROM steps s WHERE s.run = t.run AND s.key = t.key AND s.status = 'done'))
                         OR {}",
                        crate::timer::due_timer("?1")
                    ),
                    args![fence.run],
                )?
                .is_some();
            let status = if answered { "queued" } else { "parked" };
            tx.execute(
                "UPDATE runs SET status = ?2, lease_owner = NULL, lease_expires = 0,
                    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ','now') WHERE id = ?1",
                args![fence.run, status],
            )?;
            Ok(if answered {
                Parking::Requeued
            } else {
                Parking::Parked
            })
        })?;
        if parking == Parking::Requeued {
            crate::postgres::wake(self, fence.run);
        }
        Ok(parking)
    }

    /// Makes a failed run, or one whose unsettled step was resolved,
    /// claimable again (`troupe retry`, `troupe resolve`): its recorded
    /// steps stay, so it continues from its last durable step.
    pub fn reopen(&self, run: i64, from: &[RunStatus]) -> Result<(), StoreError> {
        let allowed: Vec<&str> = from.iter().map(|s| s.as_str()).collect();
        let changed = self.with("reopen the run", |db| {
            let mut changed = 0;
            for status in &allowed {
                changed += db.execute(
                    "UPDATE runs SET status = 'queued', error = NULL, result = NULL,
                        updated_at = strftime('%Y-%m-%dT%H:%M:%fZ','now')
                     WHERE id = ?1 AND status = ?2",
                    args![run, status],
                )?;
            }
            Ok(changed)
        })?;
        if changed == 0 {
            let detail = self.run(run)?;
            return Err(StoreError::Conflict(format!(
                "{} is {}; only a run that is {} can be reopened",
                detail.summary.name,
                detail.summary.status,
                allowed.join(" or ")
            )));
        }
        crate::postgres::wake(self, run);
        Ok(())
    }

    /// Deletes a run with its events, steps and tasks. A run with a live
    /// owner is refused (cancel it first).
    pub fn delete_run(&self, run: i64) -> Result<(), StoreError> {
        let detail = self.run(run)?;
        if detail.summary.owner.is_some() {
            return Err(StoreError::Conflict(format!(
                "{} is being run by {}; cancel it first (`troupe cancel {}`)",
                detail.summary.name,
                detail.summary.owner.as_deref().unwrap_or("?"),
                detail.summary.name
            )));
        }
        self.transaction("delete the run", |tx| {
            tx.execute(
                "DELETE FROM notify_announced WHERE task IN (SELECT id FROM tasks WHERE run = ?1)",
                args![run],
            )?;
            for table in [
                "events",
                "checkpoints",
                "steps",
                "tasks",
                "timers",
                "llm_calls",
                "parts",
                "messages",
                "run_versions",
                "run_keys",
            ] {
                tx.execute(&format!("DELETE FROM {table} WHERE run = ?1"), args![run])?;
            }
            // The tick stays (it must not start again); its run is gone.
            tx.execute(
                "UPDATE schedule_ticks SET run = NULL WHERE run = ?1",
                args![run],
            )?;
            tx.execute("DELETE FROM runs WHERE id = ?1", args![run])?;
            Ok(())
        })
    }

    /// The runs that ended (done, failed or cancelled) before the newest
    /// `keep` of them: what `troupe runs --prune` deletes.
    pub fn prunable(&self, keep: usize) -> Result<Vec<i64>, StoreError> {
        Ok(self
            .runs(None)?
            .into_iter()
            .filter(|r| r.status.is_final())
            .skip(keep)
            .map(|r| r.id)
            .collect())
    }
}
