//! The notification adapters' records (Telegram, webhooks): which task was
//! announced where on which channel, with its short name and secret, and
//! each channel's own state (a poll offset). The tables are the store's, so
//! they live where its runs live — a file or a shared PostgreSQL database —
//! and `troupe serve` on any machine sees the same announcements.

use crate::db::{DbError, Row, args};
use crate::{Store, StoreError};

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
