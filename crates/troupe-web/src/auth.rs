//! Access control: every page and API call needs the server's token, as
//! `Authorization: Bearer T`, as the `troupe_token` cookie (HttpOnly,
//! SameSite=Strict), or as `?token=T` once, which sets that cookie. Tokens
//! are compared in constant time. `/hooks/…` carries per-task tokens of its
//! own and is checked by its handler.

use crate::{constant_time_eq, hex, html};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

pub(crate) const COOKIE: &str = "troupe_token";

/// The server's secret, and its cookie form (hex, so any token is a valid
/// cookie value).
#[derive(Debug)]
pub(crate) struct Token {
    raw: String,
    cookie: String,
}

impl Token {
    pub(crate) fn new(raw: String) -> Token {
        let cookie = hex(raw.as_bytes());
        Token { raw, cookie }
    }

    fn matches(&self, given: &str) -> bool {
        constant_time_eq(given.as_bytes(), self.raw.as_bytes())
    }

    fn matches_cookie(&self, given: &str) -> bool {
        constant_time_eq(given.as_bytes(), self.cookie.as_bytes())
    }
}

enum Credential {
    Valid { from_query: bool },
    Wrong,
    Missing,
}

fn credential(token: &Token, req: &Request) -> Credential {
    let mut seen = false;
    if let Some(auth) = req.headers().get(header::AUTHORIZATION) {
        seen = true;
        if let Some(t) = auth.to_str().ok().and_then(|v| v.strip_prefix("Bearer "))
            && token.matches(t.trim())
        {
            return Credential::Valid { from_query: false };
        }
    }
    for value in req.headers().get_all(header::COOKIE) {
        let Ok(value) = value.to_str() else { continue };
        for pair in value.split(';') {
            if let Some((name, v)) = pair.trim().split_once('=')
                && name == COOKIE
            {
                seen = true;
                if token.matches_cookie(v.trim()) {
                    return Credential::Valid { from_query: false };
                }
            }
        }
    }
    if let Some(t) = query_token(req.uri().query()) {
        seen = true;
        if token.matches(&t) {
            return Credential::Valid { from_query: true };
        }
    }
    if seen {
        Credential::Wrong
    } else {
        Credential::Missing
    }
}

/// The `token` parameter of a query string.
fn query_token(query: Option<&str>) -> Option<String> {
    let pairs: Vec<(String, String)> = serde_urlencoded_pairs(query?);
    pairs
        .into_iter()
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v)
}

fn serde_urlencoded_pairs(query: &str) -> Vec<(String, String)> {
    let uri = format!("/?{query}");
    let Ok(uri) = uri.parse::<axum::http::Uri>() else {
        return Vec::new();
    };
    axum::extract::Query::<Vec<(String, String)>>::try_from_uri(&uri)
        .map(|q| q.0)
        .unwrap_or_default()
}

/// The middleware.
pub(crate) async fn require_token(
    State(token): State<Arc<Token>>,
    req: Request,
    next: Next,
) -> Response {
    if req.uri().path().starts_with("/hooks/") {
        return next.run(req).await;
    }
    let api = req.uri().path().starts_with("/api/");
    match credential(&token, &req) {
        Credential::Valid { from_query } => {
            let set_cookie = from_query.then(|| {
                format!(
                    "{COOKIE}={}; Path=/; HttpOnly; SameSite=Strict",
                    token.cookie
                )
            });
            // A page opened with ?token=… is sent on without it, so the
            // token does not stay in the address bar or the history.
            let only_token = req
                .uri()
                .query()
                .is_some_and(|q| serde_urlencoded_pairs(q).len() == 1);
            let mut response = if from_query && only_token && req.method() == "GET" && !api {
                let path = req.uri().path().to_owned();
                (
                    StatusCode::SEE_OTHER,
                    [(header::LOCATION, path)],
                    "signed in",
                )
                    .into_response()
            } else {
                next.run(req).await
            };
            if let Some(c) = set_cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
                response.headers_mut().append(header::SET_COOKIE, c);
            }
            response
        }
        Credential::Wrong | Credential::Missing if api => (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            axum::Json(serde_json::json!({
                "error": "a valid token is needed: send `Authorization: Bearer TOKEN`"
            })),
        )
            .into_response(),
        c => {
            let why = match c {
                Credential::Wrong => "The token is wrong.",
                _ => "This page needs the server's token.",
            };
            let body = format!(
                "<h1>Not signed in</h1><p>{}</p><p>Open the URL that <code>troupe serve</code> printed when it started (it ends with <code>?token=…</code>).</p>",
                html::escape(why)
            );
            (
                StatusCode::UNAUTHORIZED,
                html::page("Not signed in", &body, ""),
            )
                .into_response()
        }
    }
}
