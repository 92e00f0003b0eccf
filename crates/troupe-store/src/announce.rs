//! The notification adapters' records (Telegram, webhooks): which task was
//! announced where on which channel, with its short name and secret, and
//! each channel's own state (a poll offset). The tables are the store's, so
//! they live where its runs live — a file or a shared PostgreSQL database —
//! and `troupe serve` on any machine sees the same announcements.

use crate::db::{DbError, Row, args};
use crate::{NOW_MS, Store, StoreError};

/// One announcement of a task on a channel.
#[derive(Debug, Clone, PartialEq)]
pub struct Announced {
    pub task: i64,
    /// A short random token naming the task in the channel (Telegram's
    /// `callback_data`).
    pub short: String,
    /// A per-task secret (the webhook's answer token).
    pub secret: Option<String>,
    /// Where the announcement is (a Telegram message id), once sent.
    pub place: Option<String>,
    /// The text that was sent.
    pub text: Option<String>,
    pub closed: bool,
}

const COLUMNS: &str = "task, short, secret, place, text, closed";

fn announced(r: &Row) -> Result<Announced, DbError> {
    Ok(Announced {
        task: r.get(0)?,
        short: r.get(1)?,
        secret: r.get(2)?,
        place: r.get(3)?,
        text: r.get(4)?,
        closed: r.get::<i64>(5)? != 0,
    })
}

impl Store {
    /// Claims the announcement of `task` on `channel`; false when it was
    /// claimed before (by this process or another).
    pub fn announce_claim(
        &self,
        channel: &str,
        task: i64,
        short: &str,
        secret: Option<&str>,
    ) -> Result<bool, StoreError> {
        self.with("claim the announcement", |db| {
            db.execute(
                "INSERT INTO notify_announced(channel, task, short, secret) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT DO NOTHING",
                args![channel, task, short, secret],
            )
            .map(|n| n == 1)
        })
    }

    /// Forgets a claim whose announcement could not be sent.
    pub fn announce_release(&self, channel: &str, task: i64) -> Result<(), StoreError> {
        self.with("release the announcement", |db| {
            db.execute(
                "DELETE FROM notify_announced WHERE channel = ?1 AND task = ?2",
                args![channel, task],
            )
            .map(|_| ())
        })
    }

    /// Records where the announcement was sent and its text.
    pub fn announce_sent(
        &self,
        channel: &str,
        task: i64,
        place: &str,
        text: &str,
    ) -> Result<(), StoreError> {
        self.with("record the announcement", |db| {
            db.execute(
                "UPDATE notify_announced SET place = ?3, text = ?4 WHERE channel = ?1 AND task = ?2",
                args![channel, task, place, text],
            )
            .map(|_| ())
        })
    }

    /// Marks an announcement as settled (its message shows the answer).
    pub fn announce_close(&self, channel: &str, task: i64) -> Result<(), StoreError> {
        self.with("close the announcement", |db| {
            db.execute(
                "UPDATE notify_announced SET closed = 1 WHERE channel = ?1 AND task = ?2",
                args![channel, task],
            )
            .map(|_| ())
        })
    }

    /// The announcement of `task` on `channel`, or the one whose `column`
    /// (`short` or `place`) is `value`.
    fn announcement(
        &self,
        channel: &str,
        column: &str,
        value: crate::db::Val,
    ) -> Result<Option<Announced>, StoreError> {
        self.with("read the announcement", |db| {
            db.query_opt(
                &format!(
                    "SELECT {COLUMNS} FROM notify_announced WHERE channel = ?1 AND {column} = ?2"
                ),
                &[channel.into(), value],
            )?
            .map(|r| announced(&r))
            .transpose()
        })
    }

    pub fn announcement_of(
        &self,
        channel: &str,
        task: i64,
    ) -> Result<Option<Announced>, StoreError> {
        self.announcement(channel, "task", task.into())
    }

    pub fn announcement_by_short(
        &self,
        channel: &str,
        short: &str,
    ) -> Result<Option<Announced>, StoreError> {
        self.announcement(channel, "short", short.into())
    }

    pub fn announcement_by_place(
        &self,
        channel: &str,
        place: &str,
    ) -> Result<Option<Announced>, StoreError> {
        self.announcement(channel, "place", place.into())
    }

    /// Announcements sent and not settled yet.
    pub fn open_announcements(&self, channel: &str) -> Result<Vec<Announced>, StoreError> {
        self.with("list the announcements", |db| {
            db.query(
                &format!(
                    "SELECT {COLUMNS} FROM notify_announced WHERE channel = ?1 AND closed = 0 AND place IS NOT NULL ORDER BY task"
                ),
                args![channel],
            )?
            .iter()
            .map(announced)
            .collect()
        })
    }

    /// The reminders due on `channel`: for each announced task still
    /// pending whose `remind:` interval has passed once more since it was
    /// asked, the task and the number of the reminder to send (1 for the
    /// first). Reminder k falls due k intervals after the task was asked,
    /// so a channel that was down catches up one reminder per round rather
    /// than flooding. The work is that of the pending tasks (the loop starts
    /// from them, through `tasks_status`; SQLite's `CROSS JOIN` keeps that
    /// order), never of the announcements of answered tasks, which a
    /// webhook never closes.
    pub fn due_reminders(&self, channel: &str) -> Result<Vec<(i64, i64)>, StoreError> {
        self.with("find the due reminders", |db| {
            db.query(
                &format!(
                    "SELECT a.task, a.reminders + 1 FROM tasks t CROSS JOIN notify_announced a
                     WHERE t.status = 'pending' AND t.remind_ms IS NOT NULL AND t.asked_ms IS NOT NULL
                       AND a.channel = ?1 AND a.task = t.id AND a.closed = 0 AND a.place IS NOT NULL
                       AND t.asked_ms + (a.reminders + 1) * t.remind_ms <= {NOW_MS}
                     ORDER BY a.task"
                ),
                args![channel],
            )?
            .iter()
            .map(|r| Ok((r.get(0)?, r.get(1)?)))
            .collect()
        })
    }

    /// Claims reminder `number` of `task` on `channel`: false when another
    /// process (or an earlier round) claimed it, so each reminder is sent
    /// at most once however many `troupe serve` share the store.
    pub fn remind_claim(&self, channel: &str, task: i64, number: i64) -> Result<bool, StoreError> {
        self.with("claim the reminder", |db| {
            db.execute(
                "UPDATE notify_announced SET reminders = ?3 WHERE channel = ?1 AND task = ?2 AND reminders = ?3 - 1",
                args![channel, task, number],
            )
            .map(|n| n == 1)
        })
    }

    /// Gives back a claimed reminder that could not be sent (tried again
    /// next round).
    pub fn remind_release(&self, channel: &str, task: i64, number: i64) -> Result<(), StoreError> {
        self.with("release the reminder", |db| {
            db.execute(
                "UPDATE notify_announced SET reminders = ?3 - 1 WHERE channel = ?1 AND task = ?2 AND reminders = ?3",
                args![channel, task, number],
            )
            .map(|_| ())
        })
    }

    /// How many reminders of `task` `channel` sent.
    pub fn reminders_sent(&self, channel: &str, task: i64) -> Result<i64, StoreError> {
        self.with("count the reminders", |db| {
            db.query_opt(
                "SELECT reminders FROM notify_announced WHERE channel = ?1 AND task = ?2",
                args![channel, task],
            )?
            .map_or(Ok(0), |r| r.get(0))
        })
    }

    /// A channel's own state under `key`.
    pub fn channel_state(&self, channel: &str, key: &str) -> Result<Option<String>, StoreError> {
        self.with("read the channel's state", |db| {
            db.query_opt(
                "SELECT value FROM notify_state WHERE channel = ?1 AND key = ?2",
                args![channel, key],
            )?
            .map(|r| r.get(0))
            .transpose()
        })
    }

    pub fn set_channel_state(
        &self,
        channel: &str,
        key: &str,
        value: &str,
    ) -> Result<(), StoreError> {
        self.with("record the channel's state", |db| {
            db.execute(
                "INSERT INTO notify_state(channel, key, value) VALUES (?1, ?2, ?3)
                 ON CONFLICT(channel, key) DO UPDATE SET value = excluded.value",
                args![channel, key, value],
            )
            .map(|_| ())
        })
    }

    /// The declared answer type of a task (`Text`, `Int`, …).
    pub fn task_type(&self, task: i64) -> Result<Option<String>, StoreError> {
        self.with("read the task", |db| {
            db.query_opt("SELECT type FROM tasks WHERE id = ?1", args![task])?
                .map(|r| r.get(0))
                .transpose()
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{bare_run, both, confirm_task};
    use crate::{Durability, NewTask};
    use std::time::Duration;

    fn reminded(run: i64, key: &str, every: Duration) -> NewTask {
        NewTask {
            remind: Some(every),
            ..confirm_task(run, key, None)
        }
    }

    #[test]
    fn reminders_fall_due_by_interval_and_are_claimed_once_each() {
        let dir = tempfile::tempdir().unwrap();
        for (store, _db) in both(dir.path(), Durability::Normal) {
            let run = store.create_run(&bare_run("f")).unwrap();
            let record = |t: NewTask| {
                store
                    .with("record the task", |db| crate::insert_task(db, &t))
                    .unwrap();
                store.task_row_id(run, &t.key).unwrap().unwrap()
            };
            // Every millisecond (so that several are due at once), every
            // hour, and never.
            let fast = record(reminded(run, "A/ok#0", Duration::from_millis(1)));
            let slow = record(reminded(run, "A/ok#1", Duration::from_secs(3600)));
            let never = record(confirm_task(run, "A/ok#2", None));
            // Not announced yet: nothing to remind of.
            assert!(store.due_reminders("webhook").unwrap().is_empty());
            for task in [fast, slow, never] {
                assert!(
                    store
                        .announce_claim("webhook", task, &format!("s{task}"), None)
                        .unwrap()
                );
                store
                    .announce_sent("webhook", task, "delivered", "")
                    .unwrap();
            }
            std::thread::sleep(Duration::from_millis(5));
            // One at a time, in order; each claimed once.
            assert_eq!(store.due_reminders("webhook").unwrap(), vec![(fast, 1)]);
            assert!(store.remind_claim("webhook", fast, 1).unwrap());
            assert!(!store.remind_claim("webhook", fast, 1).unwrap());
            assert_eq!(store.due_reminders("webhook").unwrap(), vec![(fast, 2)]);
            // A failed send gives it back.
            assert!(store.remind_claim("webhook", fast, 2).unwrap());
            store.remind_release("webhook", fast, 2).unwrap();
            assert_eq!(store.reminders_sent("webhook", fast).unwrap(), 1);
            assert_eq!(store.due_reminders("webhook").unwrap(), vec![(fast, 2)]);
            // Settled: no more.
            store.announce_close("webhook", fast).unwrap();
            assert!(store.due_reminders("webhook").unwrap().is_empty());
            assert_eq!(store.reminders_sent("webhook", slow).unwrap(), 0);
        }
    }
}
