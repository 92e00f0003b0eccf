//! Access control: sessions, and a CSRF token bound to each.
//!
//! Every page and API call needs the server's token once. A script sends it
//! with every request as `Authorization: Bearer T`; a browser signs in with
//! it (`?token=T` once, or the sign-in form) and gets a *session*: an opaque
//! random id in an HttpOnly, SameSite=Strict cookie, unrelated to the token,
//! that expires ([`SESSION_TTL`] after sign-in) and ends at sign-out or when
//! the server stops. Each session has its own random CSRF token, which the
//! pages put in their forms (a hidden `csrf` field) and in a `<meta>` for
//! scripts (the `X-CSRF-Token` header); a request that changes state on the
//! strength of the cookie alone is refused without it. That is the second
//! line behind the same-origin rule of [`crate::guard`]: a hostile page on
//! another port of the same host gets the cookie sent along (the ports are
//! the same *site*) but can never read the token. Bearer requests carry the
//! secret itself, which no other page can add, and need no CSRF token.
//! Secrets are compared in constant time. `/hooks/…` carries per-task
//! tokens of its own and is checked by its handler.

use crate::{constant_time_eq, html, random_hex};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The session cookie.
pub(crate) const COOKIE: &str = "troupe_session";
/// The form field and the header that carry the CSRF token.
pub(crate) const CSRF_FIELD: &str = "csrf";
pub(crate) const CSRF_HEADER: &str = "x-csrf-token";
/// How long a session lasts after sign-in.
pub const SESSION_TTL: Duration = Duration::from_secs(12 * 60 * 60);
/// At most this many sessions are kept; signing in beyond it ends the one
/// closest to expiry.
const MAX_SESSIONS: usize = 1024;
/// The largest form body read to find its CSRF field.
const MAX_FORM: usize = 1 << 20;

/// What the middleware hands to the handlers of a request that came with a
/// session: its CSRF token, for the forms of the page.
#[derive(Debug, Clone)]
pub(crate) struct Csrf(pub(crate) String);

#[derive(Debug)]
struct Session {
    csrf: String,
    expires: Instant,
}

/// The server's secret and the live sessions.
#[derive(Debug)]
pub(crate) struct Auth {
    token: String,
    ttl: Duration,
    sessions: Mutex<HashMap<String, Session>>,
}

/// A new session: the cookie's id and the CSRF token bound to it.
#[derive(Debug)]
struct NewSession {
    id: String,
}

impl Auth {
    pub(crate) fn new(token: String, ttl: Duration) -> Auth {
        Auth {
            token,
            ttl,
            sessions: Mutex::new(HashMap::new()),
        }
    }

    fn matches(&self, given: &str) -> bool {
        constant_time_eq(given.as_bytes(), self.token.as_bytes())
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Opens a session at `now`.
    fn open_at(&self, now: Instant) -> Result<NewSession, String> {
        let id = random_hex(32).map_err(|e| e.to_string())?;
        let csrf = random_hex(32).map_err(|e| e.to_string())?;
        let mut sessions = self.sessions();
        sessions.retain(|_, s| s.expires > now);
        if sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = sessions
                .iter()
                .min_by_key(|(_, s)| s.expires)
                .map(|(k, _)| k.clone())
        {
            sessions.remove(&oldest);
        }
        sessions.insert(
            id.clone(),
            Session {
                csrf,
                expires: now + self.ttl,
            },
        );
        Ok(NewSession { id })
    }

    /// The CSRF token of the live session `id` at `now`; an expired session
    /// is forgotten.
    fn lookup_at(&self, id: &str, now: Instant) -> Lookup {
        let mut sessions = self.sessions();
        let Some((key, s)) = sessions
            .iter()
            .find(|(k, _)| constant_time_eq(k.as_bytes(), id.as_bytes()))
        else {
            return Lookup::Unknown;
        };
        if s.expires <= now {
            let key = key.clone();
            sessions.remove(&key);
            return Lookup::Expired;
        }
        Lookup::Live(s.csrf.clone())
    }

    fn close(&self, id: &str) {
        self.sessions().remove(id);
    }

    fn cookie(&self, id: &str) -> String {
        format!(
            "{COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}",
            self.ttl.as_secs()
        )
    }
}

enum Lookup {
    Live(String),
    Expired,
    Unknown,
}

enum Credential {
    /// `Authorization: Bearer` with the token.
    Bearer,
    /// A live session cookie, with its id and CSRF token.
    Session {
        id: String,
        csrf: String,
    },
    /// `?token=T` with the right token: sign in.
    Query,
    Expired,
    Wrong,
    Missing,
}

fn session_cookie(req: &Request) -> Option<String> {
    for value in req.headers().get_all(header::COOKIE) {
        let Ok(value) = value.to_str() else { continue };
        for pair in value.split(';') {
            if let Some((name, v)) = pair.trim().split_once('=')
                && name == COOKIE
            {
                return Some(v.trim().to_owned());
            }
        }
    }
    None
}

fn credential(auth: &Auth, req: &Request) -> Credential {
    let mut seen = false;
    if let Some(value) = req.headers().get(header::AUTHORIZATION) {
        seen = true;
        if let Some(t) = value.to_str().ok().and_then(|v| v.strip_prefix("Bearer "))
            && auth.matches(t.trim())
        {
            return Credential::Bearer;
        }
    }
    let mut expired = false;
    if let Some(id) = session_cookie(req) {
        seen = true;
        match auth.lookup_at(&id, Instant::now()) {
            Lookup::Live(csrf) => return Credential::Session { id, csrf },
            Lookup::Expired => expired = true,
            Lookup::Unknown => {}
        }
    }
    if let Some(t) = query_token(req.uri().query()) {
        seen = true;
        if auth.matches(&t) {
            return Credential::Query;
        }
    }
    match (expired, seen) {
        (true, _) => Credential::Expired,
        (false, true) => Credential::Wrong,
        (false, false) => Credential::Missing,
    }
}

/// The `token` parameter of a query string.
fn query_token(query: Option<&str>) -> Option<String> {
    urlencoded_pairs(query?)
        .into_iter()
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v)
}

fn urlencoded_pairs(text: &str) -> Vec<(String, String)> {
    let uri = format!("/?{text}");
    let Ok(uri) = uri.parse::<axum::http::Uri>() else {
        return Vec::new();
    };
    axum::extract::Query::<Vec<(String, String)>>::try_from_uri(&uri)
        .map(|q| q.0)
        .unwrap_or_default()
}

fn changes_state(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// The middleware.
pub(crate) async fn require_token(
    State(auth): State<Arc<Auth>>,
    req: Request,
    next: Next,
) -> Response {
    let path = req.uri().path().to_owned();
    if path.starts_with("/hooks/") || path.starts_with("/assets/") {
        return next.run(req).await;
    }
    if path == "/login" && req.method() == Method::POST {
        return login(&auth, req).await;
    }
    let api = path.starts_with("/api/");
    match credential(&auth, &req) {
        Credential::Bearer => next.run(req).await,
        Credential::Session { id, csrf } => {
            if path == "/logout" && req.method() == Method::POST {
                let (req, ok) = csrf_given(req, &csrf).await;
                if !ok {
                    return csrf_refused(api);
                }
                drop(req);
                auth.close(&id);
                return see_other("/", Some(format!("{COOKIE}=; Path=/; Max-Age=0")));
            }
            let mut req = if changes_state(req.method()) {
                let (req, ok) = csrf_given(req, &csrf).await;
                if !ok {
                    return csrf_refused(api);
                }
                req
            } else {
                req
            };
            req.extensions_mut().insert(Csrf(csrf));
            next.run(req).await
        }
        Credential::Query => {
            let session = match auth.open_at(Instant::now()) {
                Ok(s) => s,
                Err(e) => return (StatusCode::INTERNAL_SERVER_ERROR, e).into_response(),
            };
            let cookie = auth.cookie(&session.id);
            // The page is opened again without the token, so that it does
            // not stay in the address bar or the history; other
            // parameters are kept.
            let rest: Vec<(String, String)> = urlencoded_pairs(req.uri().query().unwrap_or(""))
                .into_iter()
                .filter(|(k, _)| k != "token")
                .collect();
            let mut location = path;
            if !rest.is_empty() {
                location.push('?');
                location.push_str(&encode_pairs(&rest));
            }
            see_other(&location, Some(cookie))
        }
        Credential::Wrong | Credential::Missing | Credential::Expired if api => (
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
                Credential::Expired => "Your session has expired; sign in again.",
                _ => "This page needs the server's token.",
            };
            sign_in_page(StatusCode::UNAUTHORIZED, why, &path)
        }
    }
}

fn encode_pairs(pairs: &[(String, String)]) -> String {
    fn enc(s: &str) -> String {
        let mut out = String::new();
        for b in s.bytes() {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                out.push(b as char);
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
        out
    }
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect::<Vec<_>>()
        .join("&")
}

fn see_other(location: &str, cookie: Option<String>) -> Response {
    let mut r = (StatusCode::SEE_OTHER, "signed in").into_response();
    if let Ok(l) = HeaderValue::from_str(location) {
        r.headers_mut().insert(header::LOCATION, l);
    }
    if let Some(c) = cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
        r.headers_mut().append(header::SET_COOKIE, c);
    }
    r
}

/// Whether `req` carries the session's CSRF token, in the header or in the
/// `csrf` field of a form body; the request is rebuilt with its body.
async fn csrf_given(req: Request, csrf: &str) -> (Request, bool) {
    if let Some(v) = req.headers().get(CSRF_HEADER) {
        let ok = constant_time_eq(v.as_bytes(), csrf.as_bytes());
        return (req, ok);
    }
    let form = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    if !form {
        return (req, false);
    }
    let (parts, body) = req.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_FORM).await else {
        return (Request::from_parts(parts, Body::empty()), false);
    };
    let ok = std::str::from_utf8(&bytes).is_ok_and(|text| {
        urlencoded_pairs(text)
            .iter()
            .any(|(k, v)| k == CSRF_FIELD && constant_time_eq(v.as_bytes(), csrf.as_bytes()))
    });
    (Request::from_parts(parts, Body::from(bytes)), ok)
}

fn csrf_refused(api: bool) -> Response {
    let msg = "refused: this request needs the page's CSRF token (send the form from this server's own page, or the X-CSRF-Token header); reload the page and try again";
    if api {
        (
            StatusCode::FORBIDDEN,
            axum::Json(serde_json::json!({ "error": msg })),
        )
            .into_response()
    } else {
        (
            StatusCode::FORBIDDEN,
            html::page(
                "Refused",
                &format!("<h1>Refused</h1><p>{}</p>", html::escape(msg)),
                "",
                None,
            ),
        )
            .into_response()
    }
}

fn sign_in_page(status: StatusCode, why: &str, next: &str) -> Response {
    let next = if next.starts_with('/') && !next.starts_with("//") && next != "/login" {
        next
    } else {
        "/"
    };
    let body = format!(
        "<h1>Not signed in</h1><p>{}</p>\
<form method=\"post\" action=\"/login\" class=\"card\"><input type=\"hidden\" name=\"next\" value=\"{}\">\
<label>Token <input type=\"password\" name=\"token\" autocomplete=\"off\"></label> <button type=\"submit\">Sign in</button></form>\
<p class=\"meta\">Or open the URL that <code>troupe serve</code> printed when it made a token (it ends with <code>?token=…</code>).</p>",
        html::escape(why),
        html::escape(next)
    );
    (status, html::page("Not signed in", &body, "", None)).into_response()
}

/// `POST /login` with the sign-in form's `token` (and `next`).
async fn login(auth: &Auth, req: Request) -> Response {
    let (_, body) = req.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_FORM).await else {
        return sign_in_page(StatusCode::BAD_REQUEST, "The form is too large.", "/");
    };
    let pairs = std::str::from_utf8(&bytes)
        .map(urlencoded_pairs)
        .unwrap_or_default();
    let field = |name: &str| {
        pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let next = field("next")
        .filter(|n| n.starts_with('/') && !n.starts_with("//") && !n.starts_with("/\\"))
        .unwrap_or("/");
    if !field("token").is_some_and(|t| auth.matches(t.trim())) {
        return sign_in_page(StatusCode::UNAUTHORIZED, "The token is wrong.", next);
    }
    match auth.open_at(Instant::now()) {
        Ok(s) => see_other(next, Some(auth.cookie(&s.id))),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_random_bound_to_their_csrf_token_and_expire() {
        let auth = Auth::new("t".into(), Duration::from_secs(60));
        let now = Instant::now();
        let a = auth.open_at(now).unwrap();
        let b = auth.open_at(now).unwrap();
        assert_ne!(a.id, b.id);
        assert_eq!(a.id.len(), 64);
        let Lookup::Live(ca) = auth.lookup_at(&a.id, now) else {
            panic!("a is live")
        };
        let Lookup::Live(cb) = auth.lookup_at(&b.id, now) else {
            panic!("b is live")
        };
        assert_ne!(ca, cb, "each session has its own CSRF token");
        assert_ne!(ca, a.id);
        assert!(matches!(auth.lookup_at("00", now), Lookup::Unknown));
        let later = now + Duration::from_secs(61);
        assert!(matches!(auth.lookup_at(&a.id, later), Lookup::Expired));
        assert!(
            matches!(auth.lookup_at(&a.id, now), Lookup::Unknown),
            "an expired session is forgotten"
        );
        auth.close(&b.id);
        assert!(matches!(auth.lookup_at(&b.id, now), Lookup::Unknown));
    }

    #[test]
    fn sessions_are_bounded() {
        let auth = Auth::new("t".into(), Duration::from_secs(60));
        let now = Instant::now();
        let first = auth.open_at(now).unwrap();
        for i in 0..MAX_SESSIONS {
            auth.open_at(now + Duration::from_millis(i as u64 + 1))
                .unwrap();
        }
        assert_eq!(auth.sessions().len(), MAX_SESSIONS);
        assert!(matches!(auth.lookup_at(&first.id, now), Lookup::Unknown));
    }
}
