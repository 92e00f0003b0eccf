//! The generic webhook: each pending task is POSTed once, as JSON, to a
//! configured URL:
//!
//! ```json
//! { "event": "task", "task": { "id": "task-3", "kind": "confirm", "prompt": "…", "options": [], … },
//!   "answer_url": "http://127.0.0.1:7878/hooks/answer/task-3", "token": "…per-task secret…" }
//! ```
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
            let mut req = self.http.post(&self.config.url).json(&doc);
            if let Some((name, value)) = self
                .config
                .header
                .as_deref()
                .and_then(|h| h.split_once(':'))
            {
                req = req.header(name.trim(), value.trim());
            }
            let outcome = match req.send().await {
                Ok(r) if r.status().is_success() => Ok(()),
                Ok(r) => Err(Self::err(format!(
                    "{} answered {}",
                    self.config.url,
                    r.status()
                ))),
                Err(e) => Err(Self::err(format!("cannot reach {}: {e}", self.config.url))),
            };
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

    /// Announces new tasks every second, forever.
    pub async fn run(self: Arc<Self>) {
        let mut backoff = Backoff::new();
        loop {
            match self.announce().await {
                Ok(_) => {
                    backoff.ok();
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                Err(e) => backoff.failed("webhook", &e).await,
            }
        }
    }
}
