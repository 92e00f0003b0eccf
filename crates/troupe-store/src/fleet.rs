//! A fleet of workers sharing one store (`troupe worker`): claiming the next
//! runnable run, announcing workers, and waking them when a run becomes
//! runnable.
//!
//! Claiming is the lease's compare-and-swap applied to "the oldest run that
//! is unfinished and unowned (or whose owner's lease expired)". On
//! PostgreSQL the candidate row is locked with `FOR UPDATE SKIP LOCKED`, so
//! concurrent workers each take a different run without waiting on one
//! another; SQLite serialises writers anyway. A worker that dies stops
//! renewing, its leases expire, and the others claim its runs.
//!
//! Waking: a PostgreSQL store sends `NOTIFY troupe_runnable` when a run is
//! queued, answered or reopened ([`crate::postgres::wake`]); workers
//! `LISTEN` and claim at once, sweeping every few seconds only for expired
//! leases. An SQLite store has no notifications: its workers sweep often.

use crate::db::{DbError, args};
use crate::{NOW_MS, Store, StoreError};
use serde::Serialize;
use std::time::Duration;

/// A worker, as it announced itself.
#[derive(Debug, Clone, Serialize)]
pub struct WorkerRow {
    pub id: String,
    pub host: String,
    pub pid: u32,
    pub labels: Vec<String>,
    pub started_at: String,
    /// Milliseconds since it last reported (a dead worker's grows).
    pub seen_ms_ago: i64,
    /// Runs it was driving at its last report.
    pub running: u64,
    /// Runs it has claimed since it started.
    pub claimed: u64,
    /// It is draining (SIGTERM) and claims nothing more.
    pub stopping: bool,
    /// Leases it holds now.
    pub leases: u64,
}

impl Store {
    /// Claims the oldest runnable run for `owner`, if there is one.
    pub fn claim_next(&self, owner: &str, lease: Duration) -> Result<Option<i64>, StoreError> {
        let lock = match self.dialect() {
            crate::Dialect::Sqlite => "",
            crate::Dialect::Postgres => " FOR UPDATE SKIP LOCKED",
        };
        let run = self.with("claim a run", |db| {
            db.query_opt(
                &format!(
                    "UPDATE runs SET lease_owner = ?1, lease_expires = {NOW_MS} + ?2,
                        status = CASE WHEN status = 'queued' THEN 'running' ELSE status END,
                        updated_at = strftime('%Y-%m-%dT%H:%M:%fZ','now')
                     WHERE id = (SELECT id FROM runs
                                 WHERE status IN ('queued', 'running', 'waiting') AND placed = 0
                                   AND (lease_owner IS NULL OR lease_expires < {NOW_MS})
                                 ORDER BY id LIMIT 1{lock})
                       AND status IN ('queued', 'running', 'waiting')
                       AND (lease_owner IS NULL OR lease_expires < {NOW_MS})
                     RETURNING id"
                ),
                args![owner, crate::lease::millis(lease)],
            )?
            .map(|r| r.get::<i64>(0))
            .transpose()
        })?;
        if run.is_some() {
            self.with("count the claim", |db| {
                db.execute(
                    "UPDATE workers SET claimed = claimed + 1 WHERE id = ?1",
                    args![owner],
                )
                .map(|_| ())
            })?;
        }
        Ok(run)
    }

    /// Announces a worker (again, after a restart with the same id).
    pub fn register_worker(
        &self,
        id: &str,
        host: &str,
        labels: &[String],
    ) -> Result<(), StoreError> {
        let labels = serde_json::to_string(labels).unwrap_or_else(|_| "[]".into());
        self.with("announce the worker", |db| {
            db.execute(
                &format!(
                    "INSERT INTO workers(id, host, pid, labels, started_at, seen, running, claimed, stopping)
                     VALUES (?1, ?2, ?3, ?4, strftime('%Y-%m-%dT%H:%M:%fZ','now'), {NOW_MS}, 0, 0, 0)
                     ON CONFLICT(id) DO UPDATE SET host = excluded.host, pid = excluded.pid,
                       labels = excluded.labels, started_at = excluded.started_at, seen = excluded.seen,
                       running = 0, stopping = 0"
                ),
                args![id, host, i64::from(std::process::id()), labels],
            )
            .map(|_| ())
        })
    }

    /// A worker's report: alive, driving `running` runs, draining or not.
    pub fn worker_report(&self, id: &str, running: u64, stopping: bool) -> Result<(), StoreError> {
        self.with("report the worker", |db| {
            db.execute(
                &format!(
                    "UPDATE workers SET seen = {NOW_MS}, running = ?2, stopping = ?3 WHERE id = ?1"
                ),
                args![id, running as i64, i64::from(stopping)],
            )
            .map(|_| ())
        })
    }

    /// Gives up every lease `owner` holds (a worker that stops); returns
    /// how many runs it handed back.
    pub fn release_all(&self, owner: &str) -> Result<u64, StoreError> {
        self.with("release the leases", |db| {
            Ok(db.execute(
                "UPDATE runs SET lease_owner = NULL, lease_expires = 0 WHERE lease_owner = ?1",
                args![owner],
            )? + db.execute(
                "UPDATE parts SET lease_owner = NULL, lease_expires = 0 WHERE lease_owner = ?1",
                args![owner],
            )?)
        })
    }

    /// Forgets a worker that stopped.
    pub fn unregister_worker(&self, id: &str) -> Result<(), StoreError> {
        self.with("forget the worker", |db| {
            db.execute("DELETE FROM workers WHERE id = ?1", args![id])
                .map(|_| ())
        })
    }

    /// The workers, with the leases they hold now.
    pub fn workers(&self) -> Result<Vec<WorkerRow>, StoreError> {
        self.with("list the workers", |db| {
            db.query(
                &format!(
                    "SELECT w.id, w.host, w.pid, w.labels, w.started_at, {NOW_MS} - w.seen, w.running,
                       w.claimed, w.stopping,
                       (SELECT count(*) FROM runs r WHERE r.lease_owner = w.id AND r.lease_expires > {NOW_MS})
                       + (SELECT count(*) FROM parts p WHERE p.lease_owner = w.id AND p.lease_expires > {NOW_MS})
                     FROM workers w ORDER BY w.started_at, w.id"
                ),
                &[],
            )?
            .iter()
            .map(|r| {
                let labels: String = r.get(3)?;
                Ok(WorkerRow {
                    id: r.get(0)?,
                    host: r.get(1)?,
                    pid: r.get::<i64>(2)?.clamp(0, i64::from(u32::MAX)) as u32,
                    labels: serde_json::from_str(&labels).unwrap_or_default(),
                    started_at: r.get(4)?,
                    seen_ms_ago: r.get(5)?,
                    running: r.get::<i64>(6)?.max(0) as u64,
                    claimed: r.get::<i64>(7)?.max(0) as u64,
                    stopping: r.get::<i64>(8)? != 0,
                    leases: r.get::<i64>(9)?.max(0) as u64,
                })
            })
            .collect::<Result<Vec<_>, DbError>>()
        })
    }

    /// Runs and parts of placed runs that some worker could claim now: the
    /// queue's depth.
    pub fn runnable(&self) -> Result<u64, StoreError> {
        self.runnable_where("", Vec::new())
    }

    /// [`Store::runnable`], of what a worker with `labels` could claim.
    pub fn runnable_for(&self, labels: &[String]) -> Result<u64, StoreError> {
        let mut params = Vec::new();
        let allowed = crate::placement::labels_allowed(labels, &mut params);
        self.runnable_where(&format!(" AND p.label IN ({allowed})"), params)
    }

    fn runnable_where(&self, parts: &str, params: Vec<crate::db::Val>) -> Result<u64, StoreError> {
        self.with("count the runnable runs", |db| {
            db.query_one(
                &format!(
                    "SELECT (SELECT count(*) FROM runs WHERE status IN ('queued', 'running', 'waiting')
                       AND placed = 0 AND (lease_owner IS NULL OR lease_expires < {NOW_MS}))
                     + (SELECT count(*) FROM parts p JOIN runs r ON r.id = p.run
                       WHERE p.status = 'open' AND r.status IN ('queued', 'running', 'waiting')
                       AND (p.lease_owner IS NULL OR p.lease_expires < {NOW_MS}){parts})"
                ),
                &params,
            )?
            .get::<i64>(0)
            .map(|n| n.max(0) as u64)
        })
    }

    /// Tells the workers that `run` was queued (PostgreSQL only).
    pub fn announce_runnable(&self, run: i64) {
        crate::postgres::wake(self, run);
    }

    /// Notifications of runs announced runnable (an answered task among
    /// them), shared by everything in this process that waits: one
    /// listening connection however many runs wait. `None` on SQLite,
    /// which has no notifications (its waiters poll).
    pub fn subscribe(&self) -> Option<tokio::sync::broadcast::Receiver<i64>> {
        self.fan_out(&self.inner.wakeups, crate::postgres::WAKE_CHANNEL)
    }

    /// [`Store::subscribe`] for the messages between the parts of placed
    /// runs (their runs' ids).
    pub(crate) fn subscribe_messages(&self) -> Option<tokio::sync::broadcast::Receiver<i64>> {
        self.fan_out(
            &self.inner.message_wakeups,
            crate::postgres::MESSAGE_CHANNEL,
        )
    }

    /// One listening connection on `channel` per process, made on first
    /// use, fanned out to every subscriber.
    fn fan_out(
        &self,
        slot: &std::sync::OnceLock<Option<tokio::sync::broadcast::Sender<i64>>>,
        channel: &'static str,
    ) -> Option<tokio::sync::broadcast::Receiver<i64>> {
        slot.get_or_init(|| {
            let crate::Connector::Postgres(rt) = &self.inner.connector else {
                return None;
            };
            let (mut rx, keep) =
                match crate::postgres::listen(rt, self.path(), self.shown(), channel) {
                    Ok(l) => l,
                    Err(e) => {
                        tracing::warn!(error = %e, channel, "cannot listen; waiters poll");
                        return None;
                    }
                };
            let (tx, _) = tokio::sync::broadcast::channel(1024);
            let fan = tx.clone();
            rt.spawn(async move {
                let _keep = keep;
                while let Some(run) = rx.recv().await {
                    let _ = fan.send(run);
                }
            });
            Some(tx)
        })
        .as_ref()
        .map(tokio::sync::broadcast::Sender::subscribe)
    }

    /// Listens for runs becoming runnable.
    pub fn listen(&self) -> Result<Wakeups, StoreError> {
        match &self.inner.connector {
            crate::Connector::Sqlite => Ok(Wakeups {
                rx: None,
                _keep: None,
            }),
            crate::Connector::Postgres(rt) => {
                let (rx, keep) = crate::postgres::listen(
                    rt,
                    self.path(),
                    self.shown(),
                    crate::postgres::WAKE_CHANNEL,
                )?;
                Ok(Wakeups {
                    rx: Some(rx),
                    _keep: Some(keep),
                })
            }
        }
    }
}

/// Notifications of runnable runs (see [`Store::listen`]).
pub struct Wakeups {
    rx: Option<tokio::sync::mpsc::UnboundedReceiver<i64>>,
    /// The listening connection, open while this lives.
    _keep: Option<Box<dyn std::any::Any + Send>>,
}

impl std::fmt::Debug for Wakeups {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wakeups")
            .field("listening", &self.rx.is_some())
            .finish()
    }
}

impl Wakeups {
    /// Whether the store notifies (PostgreSQL) or must be swept (SQLite).
    pub fn notifies(&self) -> bool {
        self.rx.is_some()
    }

    /// Waits for a notification or `timeout`, whichever comes first;
    /// returns the run that was announced, if one was.
    pub async fn next(&mut self, timeout: Duration) -> Option<i64> {
        match &mut self.rx {
            Some(rx) => tokio::time::timeout(timeout, rx.recv())
                .await
                .ok()
                .flatten(),
            None => {
                tokio::time::sleep(timeout).await;
                None
            }
        }
    }
}

/// Waits until `wakeups` announces `run`, or at most `timeout`; without
/// notifications (SQLite, or no listening connection), sleeps `poll`. A
/// receiver that missed announcements (lagged) returns at once, so that its
/// caller looks now.
pub(crate) async fn wait_for_run(
    wakeups: &mut Option<tokio::sync::broadcast::Receiver<i64>>,
    run: i64,
    timeout: Duration,
    poll: Duration,
) {
    use tokio::sync::broadcast::error::RecvError;
    let Some(rx) = wakeups else {
        return tokio::time::sleep(poll).await;
    };
    let _ = tokio::time::timeout(timeout, async {
        loop {
            match rx.recv().await {
                Ok(r) if r == run => break,
                Ok(_) => {}
                Err(RecvError::Lagged(_)) => break,
                Err(RecvError::Closed) => {
                    tokio::time::sleep(poll).await;
                    break;
                }
            }
        }
    })
    .await;
}
