//! A fake model server on loopback for the HTTP backends' tests.
//!
//! It answers the n-th request with the n-th scripted [`Reply`] (the last
//! one again when they run out) and records every request with its arrival
//! time, so tests can check what was sent and how long retries waited.

#![allow(dead_code)]

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use troupe_check::types::{EnumDef, EnumId};
use troupe_check::{Type, TypeTable};
use troupe_llm::{CallKey, HttpSettings, LlmRequest, OutputSlot};

#[derive(Debug, Clone)]
pub enum Reply {
    /// A status with a JSON body and extra headers.
    Json(u16, serde_json::Value, Vec<(&'static str, String)>),
    /// A status with a raw body.
    Raw(u16, &'static str),
    /// Wait, then reply.
    Slow(Duration, Box<Reply>),
}

pub fn ok(body: serde_json::Value) -> Reply {
    Reply::Json(200, body, vec![])
}

#[derive(Debug, Clone)]
pub struct Recorded {
    pub at: Instant,
    pub path: String,
    pub headers: HeaderMap,
    pub body: serde_json::Value,
}

struct Inner {
    replies: Vec<Reply>,
    log: Mutex<Vec<Recorded>>,
}

pub struct Fake {
    /// `http://127.0.0.1:PORT`
    pub url: String,
    inner: Arc<Inner>,
}

impl Fake {
    pub async fn start(replies: Vec<Reply>) -> Fake {
        let inner = Arc::new(Inner {
            replies,
            log: Mutex::new(Vec::new()),
        });
        let app = axum::Router::new()
            .fallback(handle)
            .with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Fake { url, inner }
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.inner.log.lock().unwrap().clone()
    }
}

async fn handle(
    State(inner): State<Arc<Inner>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let n = {
        let mut log = inner.log.lock().unwrap();
        log.push(Recorded {
            at: Instant::now(),
            path: uri.path().to_owned(),
            headers,
            body: serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null),
        });
        log.len() - 1
    };
    let reply = inner
        .replies
        .get(n)
        .or(inner.replies.last())
        .cloned()
        .unwrap_or(Reply::Raw(500, "no reply scripted"));
    respond(reply).await
}

async fn respond(reply: Reply) -> Response {
    let mut reply = reply;
    loop {
        match reply {
            Reply::Slow(d, next) => {
                tokio::time::sleep(d).await;
                reply = *next;
            }
            Reply::Json(status, body, headers) => {
                let mut r =
                    (StatusCode::from_u16(status).unwrap(), axum::Json(body)).into_response();
                for (k, v) in headers {
                    r.headers_mut().insert(k, v.parse().unwrap());
                }
                return r;
            }
            Reply::Raw(status, body) => {
                return (StatusCode::from_u16(status).unwrap(), body).into_response();
            }
        }
    }
}

/// Fast retries for tests.
pub fn settings() -> HttpSettings {
    HttpSettings {
        connect_timeout: Duration::from_secs(2),
        timeout: Duration::from_secs(5),
        max_retries: 2,
        backoff_base: Duration::from_millis(10),
        backoff_max: Duration::from_millis(50),
        max_retry_after: Duration::from_secs(5),
        max_tokens: None,
    }
}

pub fn types() -> Arc<TypeTable> {
    Arc::new(TypeTable {
        enums: vec![EnumDef {
            name: "Verdict".into(),
            values: vec!["approve".into(), "revise".into()],
        }],
        records: vec![],
    })
}

/// `make_plan(task) -> Text` at the Planner.
pub fn text_request() -> LlmRequest {
    let mut r = LlmRequest::new(
        CallKey::new("Planner", "make_plan", 0),
        "Write a plan for: a party",
        vec![OutputSlot::new("plan", Type::Text)],
        types(),
    );
    r.system = Some("You are a careful planner.".into());
    r
}

/// `review_plan(plan) -> (verdict: Verdict, notes: Text)` at the Reviewer.
pub fn review_request() -> LlmRequest {
    LlmRequest::new(
        CallKey::new("Reviewer", "review_plan", 0),
        "Review this plan: 1. eat cake",
        vec![
            OutputSlot::new("verdict", Type::Enum(EnumId(0))),
            OutputSlot::new("notes", Type::Text),
        ],
        types(),
    )
}

pub const KEY: &str = "sk-test-SECRET-0123456789";
