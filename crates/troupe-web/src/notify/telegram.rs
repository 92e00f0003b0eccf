//! Telegram: pending tasks are sent to one chat with the Bot API.
//!
//! - confirm: an inline keyboard with Yes and No; select: one button per
//!   option. A button's `callback_data` is `SHORT:CHOICE` (at most 64 bytes),
//!   where `SHORT` is a random token recorded with the announcement. A press
//!   is answered with `answerCallbackQuery`, then the message is edited to
//!   show the answer (and loses its buttons).
//! - input and edit: the message asks for a reply; replying to it (its
//!   `reply_to_message`) answers the task. Text is the answer; a task whose
//!   type is not `Text` takes JSON (`12`, `[1, 2]`), other text is refused.
//! - Updates come by `getUpdates` long polling; the offset is kept in the
//!   store's database, so a restart neither loses nor repeats updates.
//! - Only the allowed user ids may answer; everyone else is ignored.
//! - A task answered elsewhere first (web page, CLI, webhook) has its
//!   message edited to say so; a press that comes too late is told that
//!   someone answered first.

use super::{Announced, Backoff, NotifyDb, blocking};
use crate::answer::{self, AnswerError, AnswerInput};
use crate::html::clip;
use crate::{WebError, random_hex};
use serde_json::{Value, json};
use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;
use troupe_store::{Store, TaskRow};

/// The channel name in the announcement table.
pub const CHANNEL: &str = "telegram";
pub const DEFAULT_BASE_URL: &str = "https://api.telegram.org";

#[derive(Clone)]
pub struct TelegramConfig {
    pub bot_token: String,
    /// `https://api.telegram.org` (a test server or proxy otherwise).
    pub base_url: String,
    /// The chat tasks are announced in.
    pub chat_id: i64,
    /// Telegram user ids allowed to answer.
    pub allowed_users: Vec<i64>,
    /// `getUpdates` long-polling timeout.
    pub poll_timeout: Duration,
}

impl std::fmt::Debug for TelegramConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TelegramConfig")
            .field("base_url", &self.base_url)
            .field("chat_id", &self.chat_id)
            .field("allowed_users", &self.allowed_users)
            .finish_non_exhaustive()
    }
}

/// The Telegram adapter.
#[derive(Debug)]
pub struct Telegram {
    store: Store,
    db: Arc<NotifyDb>,
    config: TelegramConfig,
    http: reqwest::Client,
}

fn err(message: impl std::fmt::Display) -> WebError {
    WebError::Notify {
        channel: CHANNEL.into(),
        message: message.to_string(),
    }
}

/// The text of a task's message.
fn task_text(t: &TaskRow) -> String {
    let mut text = format!(
        "{}\n\n— {}/{} · {} · {}",
        clip(&t.prompt, 3000),
        t.lifeline,
        t.action,
        t.run,
        t.id
    );
    match t.kind.as_str() {
        "input" => text.push_str("\n\nReply to this message with your answer."),
        "edit" => {
            text.push_str("\n\nCurrent text:\n");
            text.push_str(&clip(t.prefill.as_deref().unwrap_or(""), 800));
            text.push_str("\n\nReply to this message with the edited text.");
        }
        _ => {}
    }
    text
}

fn who(from: &Value) -> String {
    match from.get("username").and_then(Value::as_str) {
        Some(u) => format!("@{u}"),
        None => from
            .get("id")
            .map(|i| i.to_string())
            .unwrap_or_else(|| "?".into()),
    }
}

impl Telegram {
    pub fn new(
        store: Store,
        db: Arc<NotifyDb>,
        config: TelegramConfig,
    ) -> Result<Telegram, WebError> {
        let http = reqwest::Client::builder()
            .timeout(config.poll_timeout + Duration::from_secs(15))
            .build()
            .map_err(err)?;
        Ok(Telegram {
            store,
            db,
            config,
            http,
        })
    }

    /// One Bot API call; returns its `result`.
    async fn call(&self, method: &str, body: Value) -> Result<Value, WebError> {
        let url = format!(
            "{}/bot{}/{method}",
            self.config.base_url.trim_end_matches('/'),
            self.config.bot_token
        );
        // The URL holds the bot token: never show it in an error.
        let response = self
            .http
            .post(url)
            .json(&body)
            .send()
            .await
            .map_err(|e| err(format!("{method}: {}", e.without_url())))?;
        let status = response.status();
        let doc: Value = response
            .json()
            .await
            .map_err(|e| err(format!("{method}: {status}: {}", e.without_url())))?;
        if doc.get("ok") != Some(&Value::Bool(true)) {
            let why = doc
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("no description");
            return Err(err(format!("{method}: {status}: {why}")));
        }
        Ok(doc.get("result").cloned().unwrap_or(Value::Null))
    }

    fn keyboard(t: &TaskRow, short: &str) -> Option<Value> {
        let button = |text: &str, choice: &str| json!({ "text": text, "callback_data": format!("{short}:{choice}") });
        match t.kind.as_str() {
            "confirm" => {
                Some(json!({ "inline_keyboard": [[button("Yes", "y"), button("No", "n")]] }))
            }
            "acknowledge" => Some(json!({ "inline_keyboard": [[button("Acknowledge", "y")]] })),
            "select" => {
                let rows: Vec<Value> = t
                    .options
                    .iter()
                    .enumerate()
                    .map(|(i, o)| json!([button(&clip(o, 60), &i.to_string())]))
                    .collect();
                Some(json!({ "inline_keyboard": rows }))
            }
            _ => Some(json!({ "force_reply": true, "selective": false })),
        }
    }

    /// Sends every pending task not announced yet; returns how many.
    pub async fn announce(&self) -> Result<usize, WebError> {
        let store = self.store.clone();
        let tasks = blocking(move || Ok(store.tasks(false)?)).await?;
        let mut sent = 0;
        for task in tasks {
            let Some(n) = super::task_number(&task.id) else {
                continue;
            };
            let short = random_hex(4)?;
            let db = self.db.clone();
            let s = short.clone();
            if !blocking(move || db.claim(CHANNEL, n, &s, None)).await? {
                continue;
            }
            let text = task_text(&task);
            let mut body = json!({ "chat_id": self.config.chat_id, "text": text });
            if let Some(k) = Self::keyboard(&task, &short) {
                body["reply_markup"] = k;
            }
            let db = self.db.clone();
            match self.call("sendMessage", body).await {
                Ok(msg) => {
                    let place = format!(
                        "{}:{}",
                        msg.pointer("/chat/id")
                            .and_then(Value::as_i64)
                            .unwrap_or(self.config.chat_id),
                        msg.get("message_id").and_then(Value::as_i64).unwrap_or(0)
                    );
                    blocking(move || db.sent(CHANNEL, n, &place, &text)).await?;
                    sent += 1;
                }
                Err(e) => {
                    blocking(move || db.release(CHANNEL, n)).await?;
                    return Err(e);
                }
            }
        }
        Ok(sent)
    }

    /// Sends the reminders that are due (`remind:`) as replies to the
    /// task's message, each claimed first so that it goes out once;
    /// returns how many. A reminder that cannot be sent is given back.
    pub async fn remind(&self) -> Result<usize, WebError> {
        let store = self.store.clone();
        let due = blocking(move || Ok(store.due_reminders(CHANNEL)?)).await?;
        let mut sent = 0;
        for (n, number) in due {
            let db = self.db.clone();
            if !blocking(move || db.claim_reminder(CHANNEL, n, number)).await? {
                continue;
            }
            let db = self.db.clone();
            let place = blocking(move || db.get(CHANNEL, n))
                .await?
                .and_then(|a| a.place);
            let Some((chat, message)) = place.as_deref().and_then(|p| p.split_once(':')) else {
                continue;
            };
            let chat = chat.parse::<i64>().unwrap_or(self.config.chat_id);
            let text = format!("Reminder {number}: this task still waits for an answer.");
            if let Err(e) = self.reply(chat, message.parse().unwrap_or(0), &text).await {
                let db = self.db.clone();
                blocking(move || db.release_reminder(CHANNEL, n, number)).await?;
                return Err(e);
            }
            sent += 1;
        }
        Ok(sent)
    }

    /// Edits a task's message to end with `note` (and drops its buttons);
    /// marks the announcement settled.
    async fn settle(&self, a: &Announced, note: &str) -> Result<(), WebError> {
        let db = self.db.clone();
        let task = a.task;
        blocking(move || db.close(CHANNEL, task)).await?;
        let Some((chat, message)) = a.place.as_deref().and_then(|p| p.split_once(':')) else {
            return Ok(());
        };
        let text = format!("{}\n\n{note}", a.text.as_deref().unwrap_or(""));
        self.call(
            "editMessageText",
            json!({
                "chat_id": chat.parse::<i64>().unwrap_or(self.config.chat_id),
                "message_id": message.parse::<i64>().unwrap_or(0),
                "text": clip(&text, 4000),
            }),
        )
        .await
        .map(|_| ())
    }

    /// Edits the messages of tasks that were answered elsewhere.
    pub async fn sweep(&self) -> Result<(), WebError> {
        let db = self.db.clone();
        let open = blocking(move || db.open_announcements(CHANNEL)).await?;
        for a in open {
            let store = self.store.clone();
            let id = format!("task-{}", a.task);
            let task = blocking(move || Ok(store.task(&id)?)).await?;
            if task.status != troupe_store::TaskStatus::Pending {
                let note = format!(
                    "✅ Answered: {} (by {})",
                    clip(task.answer.as_deref().unwrap_or("?"), 200),
                    task.answered_by.as_deref().unwrap_or("someone")
                );
                if let Err(e) = self.settle(&a, &note).await {
                    let _ = writeln!(std::io::stderr(), "notifications: telegram: {e}");
                }
            }
        }
        Ok(())
    }

    fn allowed(&self, from: &Value) -> bool {
        from.get("id")
            .and_then(Value::as_i64)
            .is_some_and(|id| self.config.allowed_users.contains(&id))
    }

    async fn submit(
        &self,
        task: i64,
        input: AnswerInput,
        by: String,
    ) -> Result<Result<TaskRow, AnswerError>, WebError> {
        let store = self.store.clone();
        let id = format!("task-{task}");
        blocking(move || Ok(answer::submit(&store, &id, input, &by))).await
    }

    async fn answer_callback(&self, id: &str, text: &str) -> Result<(), WebError> {
        self.call(
            "answerCallbackQuery",
            json!({ "callback_query_id": id, "text": clip(text, 190) }),
        )
        .await
        .map(|_| ())
    }

    async fn on_callback(&self, cb: &Value) -> Result<(), WebError> {
        let id = cb.get("id").and_then(Value::as_str).unwrap_or("");
        let from = cb.get("from").cloned().unwrap_or(Value::Null);
        if !self.allowed(&from) {
            return self
                .answer_callback(id, "You are not allowed to answer tasks here.")
                .await;
        }
        let data = cb.get("data").and_then(Value::as_str).unwrap_or("");
        let Some((short, choice)) = data.split_once(':') else {
            return self.answer_callback(id, "Unknown button.").await;
        };
        let db = self.db.clone();
        let s = short.to_owned();
        let Some(a) = blocking(move || db.by_short(CHANNEL, &s)).await? else {
            return self
                .answer_callback(id, "This task is not known here.")
                .await;
        };
        let store = self.store.clone();
        let tid = format!("task-{}", a.task);
        let task = blocking(move || Ok(store.task(&tid)?)).await?;
        let (input, label) = match choice {
            "y" => (AnswerInput::Yes, "Yes".to_owned()),
            "n" => (AnswerInput::No, "No".to_owned()),
            i => match i.parse::<usize>().ok().and_then(|i| task.options.get(i)) {
                Some(o) => (AnswerInput::Value(o.clone()), o.clone()),
                None => return self.answer_callback(id, "Unknown choice.").await,
            },
        };
        let by = format!("telegram:{}", who(&from));
        match self.submit(a.task, input, by).await? {
            Ok(_) => {
                self.answer_callback(id, &format!("Recorded: {label}"))
                    .await?;
                self.settle(&a, &format!("✅ {label} (by {})", who(&from)))
                    .await
            }
            Err(AnswerError::Conflict(m)) => {
                self.answer_callback(id, "Someone answered first.").await?;
                self.settle(&a, &format!("⚠ Already answered: {m}")).await
            }
            Err(AnswerError::Invalid(m) | AnswerError::Unknown(m)) => {
                self.answer_callback(id, &format!("Not recorded: {m}"))
                    .await
            }
            Err(AnswerError::Store(e)) => {
                self.answer_callback(id, "Not recorded: the store is busy; try again.")
                    .await?;
                Err(e.into())
            }
        }
    }

    async fn reply(&self, chat: i64, to: i64, text: &str) -> Result<(), WebError> {
        self.call(
            "sendMessage",
            json!({ "chat_id": chat, "text": text, "reply_to_message_id": to }),
        )
        .await
        .map(|_| ())
    }

    async fn on_message(&self, msg: &Value) -> Result<(), WebError> {
        let from = msg.get("from").cloned().unwrap_or(Value::Null);
        let (Some(chat), Some(reply_to), Some(own_id), Some(text)) = (
            msg.pointer("/chat/id").and_then(Value::as_i64),
            msg.pointer("/reply_to_message/message_id")
                .and_then(Value::as_i64),
            msg.get("message_id").and_then(Value::as_i64),
            msg.get("text").and_then(Value::as_str),
        ) else {
            return Ok(());
        };
        if !self.allowed(&from) {
            return Ok(());
        }
        let db = self.db.clone();
        let place = format!("{chat}:{reply_to}");
        let Some(a) = blocking(move || db.by_place(CHANNEL, &place)).await? else {
            return Ok(());
        };
        let db = self.db.clone();
        let n = a.task;
        let ty = blocking(move || db.task_type(n)).await?;
        let outcome = match answer::text_input(ty.as_deref(), text) {
            Ok(input) => {
                self.submit(a.task, input, format!("telegram:{}", who(&from)))
                    .await?
            }
            Err(e) => Err(e),
        };
        match outcome {
            Ok(_) => {
                self.settle(
                    &a,
                    &format!("✅ Answered by {}: {}", who(&from), clip(text, 300)),
                )
                .await
            }
            Err(AnswerError::Conflict(m)) => {
                self.reply(chat, own_id, &format!("Someone answered first: {m}"))
                    .await?;
                self.settle(&a, &format!("⚠ Already answered: {m}")).await
            }
            Err(AnswerError::Invalid(m) | AnswerError::Unknown(m)) => {
                self.reply(chat, own_id, &format!("Not recorded: {m}"))
                    .await
            }
            Err(AnswerError::Store(e)) => Err(e.into()),
        }
    }

    /// One `getUpdates` round (long polling up to `timeout`); handles every
    /// update and persists the offset after each. Returns how many came.
    pub async fn poll(&self, timeout: Duration) -> Result<usize, WebError> {
        let db = self.db.clone();
        let offset: i64 = blocking(move || db.state(CHANNEL, "offset"))
            .await?
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let updates = self
            .call(
                "getUpdates",
                json!({
                    "offset": offset,
                    "timeout": timeout.as_secs(),
                    "allowed_updates": ["message", "callback_query"],
                }),
            )
            .await?;
        let updates = updates.as_array().cloned().unwrap_or_default();
        for u in &updates {
            let Some(update_id) = u.get("update_id").and_then(Value::as_i64) else {
                continue;
            };
            let handled = if let Some(cb) = u.get("callback_query") {
                self.on_callback(cb).await
            } else if let Some(m) = u.get("message") {
                self.on_message(m).await
            } else {
                Ok(())
            };
            if let Err(e) = handled {
                let _ = writeln!(
                    std::io::stderr(),
                    "notifications: telegram: update {update_id}: {e}"
                );
            }
            let db = self.db.clone();
            let next = (update_id + 1).to_string();
            blocking(move || db.set_state(CHANNEL, "offset", &next)).await?;
        }
        Ok(updates.len())
    }

    /// Announces and sweeps every second, and long-polls for updates, forever.
    pub async fn run(self: Arc<Self>) {
        let announcer = self.clone();
        tokio::spawn(async move {
            let mut backoff = Backoff::new();
            loop {
                let round = async {
                    announcer.announce().await?;
                    announcer.remind().await?;
                    announcer.sweep().await
                };
                match round.await {
                    Ok(()) => {
                        backoff.ok();
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                    Err(e) => backoff.failed("telegram", &e).await,
                }
            }
        });
        let mut backoff = Backoff::new();
        loop {
            match self.poll(self.config.poll_timeout).await {
                Ok(_) => backoff.ok(),
                Err(e) => backoff.failed("telegram getUpdates", &e).await,
            }
        }
    }
}
