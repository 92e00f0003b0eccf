//! Notification adapters: tell people about pending human tasks where they
//! are, and take their answers back.
//!
//! - [`telegram`]: the Telegram Bot API (buttons for confirm and select,
//!   replies for input and edit, `getUpdates` long polling).
//! - [`webhook`]: POST each task as JSON to a URL; answers come back through
//!   `POST /hooks/answer/{task}` with a per-task token.
//!
//! A task with `remind:` is announced again at that interval while it
//! waits, each reminder claimed in the store like an announcement.
//!
//! Each task is announced once per channel, even across restarts: what was
//! announced is kept in the store's database, in the tables
//! `notify_announced` and `notify_state` (part of the store's schema and
//! its migrations), through a connection of this crate's own. An announcement is claimed
//! before it is sent and released when sending fails, so a crash between
//! the send and its record can lose at most that one announcement — never
//! repeat it. The first answer wins across all channels (`Store::answer`).
//!
//! Configuration: flags of `troupe serve`, or the `[notify]` section of
//! `troupe.toml`:
//!
//! ```toml
//! [notify]
//! public_url = "http://127.0.0.1:7878"   # where people and webhooks reach `troupe serve`
//!
//! [notify.telegram]
//! chat_id = -1001234567890               # where tasks are announced
//! allowed_users = [11111111, 22222222]   # who may answer; others are ignored
//! bot_token_env = "TELEGRAM_BOT_TOKEN"   # the variable's NAME (this is the default)
//! base_url = "https://api.telegram.org"  # the default; a proxy or a test server
//! poll_timeout_secs = 25                 # getUpdates long polling
//!
//! [notify.webhook]
//! url = "https://hooks.example.org/troupe"
//! header = "Authorization: Bearer …"      # optional, sent with every POST
//! ```

pub mod telegram;
pub mod webhook;

use crate::{NotifyOverrides, WebError};
use serde::Deserialize;
use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use troupe_store::Store;

pub use telegram::{Telegram, TelegramConfig};
pub use webhook::{Webhook, WebhookConfig};

/// Which adapters `serve` runs.
#[derive(Debug, Clone, Default)]
pub struct NotifyConfig {
    /// The URL people and webhooks reach the server at.
    pub public_url: Option<String>,
    pub telegram: Option<TelegramConfig>,
    pub webhook: Option<WebhookConfig>,
}

#[derive(Debug, Default, Deserialize)]
struct ProjectFile {
    #[serde(default)]
    notify: Option<NotifySection>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct NotifySection {
    public_url: Option<String>,
    telegram: Option<TelegramSection>,
    webhook: Option<WebhookSection>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct TelegramSection {
    chat_id: Option<i64>,
    #[serde(default)]
    allowed_users: Vec<i64>,
    bot_token_env: Option<String>,
    base_url: Option<String>,
    poll_timeout_secs: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct WebhookSection {
    url: String,
    header: Option<String>,
}

const DEFAULT_TOKEN_ENV: &str = "TELEGRAM_BOT_TOKEN";

impl NotifyConfig {
    /// The `[notify]` section of a project file (other sections are ignored;
    /// unknown keys inside `[notify]` are errors).
    pub fn from_file(path: &Path) -> Result<NotifyConfig, WebError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| WebError::Config(format!("cannot read {}: {e}", path.display())))?;
        NotifyConfig::from_toml(&text)
            .map_err(|m| WebError::Config(format!("{}: {m}", path.display())))
    }

    /// Parses the `[notify]` section of a project file's text.
    pub fn from_toml(text: &str) -> Result<NotifyConfig, String> {
        let file: ProjectFile = toml::from_str(text).map_err(|e| e.to_string())?;
        let Some(n) = file.notify else {
            return Ok(NotifyConfig::default());
        };
        let telegram = match n.telegram {
            None => None,
            Some(t) => {
                let env = t.bot_token_env.unwrap_or_else(|| DEFAULT_TOKEN_ENV.into());
                let chat_id = t
                    .chat_id
                    .ok_or("[notify.telegram] needs `chat_id` (where tasks are announced)")?;
                let bot_token = std::env::var(&env).map_err(|_| {
                    format!(
                        "[notify.telegram] needs the bot token in the environment variable {env}"
                    )
                })?;
                Some(TelegramConfig {
                    bot_token,
                    base_url: t
                        .base_url
                        .unwrap_or_else(|| telegram::DEFAULT_BASE_URL.into()),
                    chat_id,
                    allowed_users: t.allowed_users,
                    poll_timeout: Duration::from_secs(t.poll_timeout_secs.unwrap_or(25).min(50)),
                })
            }
        };
        let webhook = n.webhook.map(|w| WebhookConfig {
            url: w.url,
            header: w.header,
        });
        Ok(NotifyConfig {
            public_url: n.public_url,
            telegram,
            webhook,
        })
    }

    /// Applies settings given over the file's (`troupe serve`'s flags).
    pub fn apply_overrides(&mut self, args: &NotifyOverrides) -> Result<(), WebError> {
        if let Some(u) = &args.public_url {
            self.public_url = Some(u.clone());
        }
        if let Some(url) = &args.webhook {
            let header = self.webhook.take().and_then(|w| w.header);
            self.webhook = Some(WebhookConfig {
                url: url.clone(),
                header,
            });
        }
        if let Some(chat) = args.telegram_chat {
            match &mut self.telegram {
                Some(t) => t.chat_id = chat,
                None => {
                    let bot_token =
                        std::env::var(DEFAULT_TOKEN_ENV).map_err(|_| WebError::NoBotToken {
                            var: DEFAULT_TOKEN_ENV,
                        })?;
                    self.telegram = Some(TelegramConfig {
                        bot_token,
                        base_url: telegram::DEFAULT_BASE_URL.into(),
                        chat_id: chat,
                        allowed_users: Vec::new(),
                        poll_timeout: Duration::from_secs(25),
                    });
                }
            }
        }
        if let Some(t) = &mut self.telegram {
            t.allowed_users.extend(&args.telegram_allow);
            if let Some(u) = &args.telegram_base_url {
                t.base_url = u.clone();
            }
        }
        if let Some(t) = &self.telegram
            && t.allowed_users.is_empty()
        {
            return Err(WebError::NoTelegramUsers);
        }
        Ok(())
    }
}

/// Starts the configured adapters on the current tokio runtime; returns a
/// line describing each.
pub fn start(
    store: &Store,
    db: &Arc<NotifyDb>,
    config: &NotifyConfig,
) -> Result<Vec<String>, WebError> {
    let mut started = Vec::new();
    if let Some(t) = &config.telegram {
        let tg = Arc::new(Telegram::new(store.clone(), db.clone(), t.clone())?);
        started.push(format!(
            "Telegram chat {} ({} allowed user(s))",
            t.chat_id,
            t.allowed_users.len()
        ));
        tokio::spawn(tg.run());
    }
    if let Some(w) = &config.webhook {
        let public = config
            .public_url
            .clone()
            .unwrap_or_else(|| "http://127.0.0.1:7878".into());
        let hook = Arc::new(Webhook::new(store.clone(), db.clone(), w.clone(), public)?);
        started.push(format!(
            "webhook {}",
            troupe_llm::redact_url_credentials(&w.url)
        ));
        tokio::spawn(hook.run());
    }
    Ok(started)
}

/// `task-7` or `7` → 7.
pub fn task_number(id: &str) -> Option<i64> {
    id.trim().trim_start_matches("task-").parse().ok()
}

pub use troupe_store::Announced;

/// The adapters' records, in the store (which owns their tables, in a file
/// or a shared database alike). Every call is one short statement.
#[derive(Debug)]
pub struct NotifyDb {
    store: troupe_store::Store,
}

impl NotifyDb {
    pub fn open(store: &troupe_store::Store) -> Result<NotifyDb, WebError> {
        Ok(NotifyDb {
            store: store.clone(),
        })
    }

    /// Claims the announcement of `task` on `channel`; false when it was
    /// claimed before (by this process or an earlier one).
    pub fn claim(
        &self,
        channel: &str,
        task: i64,
        short: &str,
        secret: Option<&str>,
    ) -> Result<bool, WebError> {
        Ok(self.store.announce_claim(channel, task, short, secret)?)
    }

    /// Forgets a claim whose announcement could not be sent.
    pub fn release(&self, channel: &str, task: i64) -> Result<(), WebError> {
        Ok(self.store.announce_release(channel, task)?)
    }

    /// Records where the announcement was sent and its text.
    pub fn sent(&self, channel: &str, task: i64, place: &str, text: &str) -> Result<(), WebError> {
        Ok(self.store.announce_sent(channel, task, place, text)?)
    }

    /// Claims reminder `number` of `task` on `channel` (see
    /// `Store::remind_claim`).
    pub fn claim_reminder(&self, channel: &str, task: i64, number: i64) -> Result<bool, WebError> {
        Ok(self.store.remind_claim(channel, task, number)?)
    }

    /// Gives back a reminder that could not be sent.
    pub fn release_reminder(&self, channel: &str, task: i64, number: i64) -> Result<(), WebError> {
        Ok(self.store.remind_release(channel, task, number)?)
    }

    /// Marks an announcement as settled (its message shows the answer).
    pub fn close(&self, channel: &str, task: i64) -> Result<(), WebError> {
        Ok(self.store.announce_close(channel, task)?)
    }

    pub fn get(&self, channel: &str, task: i64) -> Result<Option<Announced>, WebError> {
        Ok(self.store.announcement_of(channel, task)?)
    }

    pub fn by_short(&self, channel: &str, short: &str) -> Result<Option<Announced>, WebError> {
        Ok(self.store.announcement_by_short(channel, short)?)
    }

    pub fn by_place(&self, channel: &str, place: &str) -> Result<Option<Announced>, WebError> {
        Ok(self.store.announcement_by_place(channel, place)?)
    }

    /// Announcements sent and not settled yet.
    pub fn open_announcements(&self, channel: &str) -> Result<Vec<Announced>, WebError> {
        Ok(self.store.open_announcements(channel)?)
    }

    /// The per-task secret of `task` on `channel`.
    pub fn secret(&self, channel: &str, task: i64) -> Result<Option<String>, WebError> {
        Ok(self.get(channel, task)?.and_then(|a| a.secret))
    }

    pub fn state(&self, channel: &str, key: &str) -> Result<Option<String>, WebError> {
        Ok(self.store.channel_state(channel, key)?)
    }

    pub fn set_state(&self, channel: &str, key: &str, value: &str) -> Result<(), WebError> {
        Ok(self.store.set_channel_state(channel, key, value)?)
    }

    /// The declared answer type of a task (`Text`, `Int`, …), from the
    /// store's task table.
    pub fn task_type(&self, task: i64) -> Result<Option<String>, WebError> {
        Ok(self.store.task_type(task)?)
    }
}

/// Waits between rounds of an adapter's loop; grows on failures.
#[derive(Debug)]
pub(crate) struct Backoff {
    failures: u32,
}

impl Backoff {
    pub(crate) fn new() -> Backoff {
        Backoff { failures: 0 }
    }

    pub(crate) fn ok(&mut self) {
        self.failures = 0;
    }

    pub(crate) async fn failed(&mut self, what: &str, e: &WebError) {
        self.failures = self.failures.saturating_add(1);
        let secs = 1u64 << self.failures.min(5);
        let _ = writeln!(
            std::io::stderr(),
            "notifications: {what}: {e}; retrying in {secs} s"
        );
        tokio::time::sleep(Duration::from_secs(secs)).await;
    }
}

/// Runs a blocking closure off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, WebError> + Send + 'static,
) -> Result<T, WebError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| WebError::Io(format!("a blocking task failed: {e}")))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_notify_section() {
        let c = NotifyConfig::from_toml(
            "[llm]\ndefault = \"mock\"\n[notify]\npublic_url = \"http://127.0.0.1:9\"\n[notify.webhook]\nurl = \"http://127.0.0.1:1/h\"\n",
        )
        .unwrap();
        assert_eq!(c.public_url.as_deref(), Some("http://127.0.0.1:9"));
        assert_eq!(c.webhook.unwrap().url, "http://127.0.0.1:1/h");
        assert!(c.telegram.is_none());
        assert!(NotifyConfig::from_toml("[notify]\nbogus = 1\n").is_err());
        assert!(NotifyConfig::from_toml("").unwrap().webhook.is_none());
        assert!(
            NotifyConfig::from_toml(
                "[notify.telegram]\nchat_id = 1\nbot_token_env = \"TROUPE_WEB_SURELY_UNSET_VAR\"\n"
            )
            .is_err()
        );
    }
}
