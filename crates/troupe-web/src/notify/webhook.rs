//! The generic webhook: each pending task is POSTed once, as JSON, to a
//! configured URL:
//!
//! ```json
//! { "event": "task", "task": { "id": "task-3", "kind": "confirm", "prompt": "…", "options": [], … },
//!   "answer_url": "http://127.0.0.1:7878/hooks/answer/task-3", "token": "…per-task secret…" }
//! ```
//!
//! While a task with `remind:` waits, each reminder is POSTed the same way
//! with `"event": "reminder"` and `"reminder": k` (1 for the first), once
//! per reminder across every `troupe serve` sharing the store; the token is
//! the announcement's.
//!
//! The receiver answers with `POST answer_url` and a JSON body such as
//! `{"token": "…", "yes": true}` (or `"no"`, `"value"`, `"json"`, `"answer"`,
//! optionally `"by"`), validated like `troupe answer`; no bearer token is
//! needed, the per-task token is. 200 with the task, 409 when someone
//! answered first, 400 for an invalid answer, 401 for a wrong token.

use super::{Backoff, NotifyDb, blocking};
use crate::{WebError, random_hex};
use std::sync::Arc;
use std::time::Duration;
use troupe_store::Store;

/// The channel name in the announcement table.
pub const CHANNEL: &str = "webhook";

#[derive(Debug, Clone)]
pub struct WebhookConfig {
    pub url: String,
    /// One extra header sent with every POST, `Name: value`.
    pub header: Option<String>,
}

/// The webhook adapter.
#[derive(Debug)]
pub struct Webhook {
    store: Store,
    db: Arc<NotifyDb>,
    config: WebhookConfig,
    public_url: String,
    http: reqwest::Client,
}

impl Webhook {
    /// `public_url` is where the receiver reaches `troupe serve`.
    pub fn new(
        store: Store,
        db: Arc<NotifyDb>,
        config: WebhookConfig,
        public_url: String,
    ) -> Result<Webhook, WebError> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(20))
            .build()
            .map_err(|e| WebError::Notify {
                channel: CHANNEL.into(),
                message: e.to_string(),
            })?;
        Ok(Webhook {
            store,
            db,
            config,
            public_url: public_url.trim_end_matches('/').to_owned(),
            http,
        })
    }

    fn err(message: impl std::fmt::Display) -> WebError {
        WebError::Notify {
            channel: CHANNEL.into(),
            // The receiver's URL may carry credentials (`user:pass@`).
            message: troupe_llm::redact_url_credentials(&message.to_string()).into_owned(),
        }
    }

    /// Announces every pending task not announced yet; returns how many were
    /// sent. A task whose POST fails is released and tried again next round.
    pub async fn announce(&self) -> Result<usize, WebError> {
        let store = self.store.clone();
        let tasks = blocking(move || Ok(store.tasks(false)?)).await?;
        let mut sent = 0;
        for task in tasks {
            let Some(n) = super::task_number(&task.id) else {
                continue;
            };
            let secret = random_hex(16)?;
            let short = random_hex(4)?;
            let db = self.db.clone();
            let s = secret.clone();
            if !blocking(move || db.claim(CHANNEL, n, &short, Some(&s))).await? {
                continue;
            }
            let doc = serde_json::json!({
                "event": "task",
                "task": task,
                "answer_url": format!("{}/hooks/answer/{}", self.public_url, task.id),
                "token": secret,
            });
            let outcome = self.post(&doc).await;
            let db = self.db.clone();
            match outcome {
                Ok(()) => {
                    blocking(move || db.sent(CHANNEL, n, "delivered", "")).await?;
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

    /// POSTs one event to the receiver.
    async fn post(&self, doc: &serde_json::Value) -> Result<(), WebError> {
        let mut req = self.http.post(&self.config.url).json(doc);
        if let Some((name, value)) = self
            .config
            .header
            .as_deref()
            .and_then(|h| h.split_once(':'))
        {
            req = req.header(name.trim(), value.trim());
        }
        match req.send().await {
            Ok(r) if r.status().is_success() => Ok(()),
            Ok(r) => Err(Self::err(format!(
                "{} answered {}",
                self.config.url,
                r.status()
            ))),
            Err(e) => Err(Self::err(format!("cannot reach {}: {e}", self.config.url))),
        }
    }

    /// Sends the reminders that are due (`remind:`), each claimed first so
    /// that it goes out once; returns how many were sent. A reminder whose
    /// POST fails is given back and tried again next round.
    pub async fn remind(&self) -> Result<usize, WebError> {
        let store = self.store.clone();
        let due = blocking(move || Ok(store.due_reminders(CHANNEL)?)).await?;
        let mut sent = 0;
        for (n, number) in due {
            let db = self.db.clone();
            if !blocking(move || db.claim_reminder(CHANNEL, n, number)).await? {
                continue;
            }
            let (store, db) = (self.store.clone(), self.db.clone());
            let (task, token) =
                blocking(move || Ok((store.task(&format!("task-{n}"))?, db.secret(CHANNEL, n)?)))
                    .await?;
            let doc = serde_json::json!({
                "event": "reminder",
                "reminder": number,
                "task": task,
                "answer_url": format!("{}/hooks/answer/{}", self.public_url, task.id),
                "token": token,
            });
            if let Err(e) = self.post(&doc).await {
                let db = self.db.clone();
                blocking(move || db.release_reminder(CHANNEL, n, number)).await?;
                return Err(e);
            }
            sent += 1;
        }
        Ok(sent)
    }

    /// Announces new tasks, and reminds of waiting ones, every second,
    /// forever.
    pub async fn run(self: Arc<Self>) {
        let mut backoff = Backoff::new();
        loop {
            let round = match self.announce().await {
                Ok(_) => self.remind().await,
                Err(e) => Err(e),
            };
            match round {
                Ok(_) => {
                    backoff.ok();
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                Err(e) => backoff.failed("webhook", &e).await,
            }
        }
    }
}
