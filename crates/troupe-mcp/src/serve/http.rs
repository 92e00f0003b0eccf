//! `troupe mcp serve --http ADDR`: the server over Streamable HTTP (rmcp's
//! [`StreamableHttpService`]) on a loopback address, endpoint `/mcp`, with
//! the protections the MCP specification asks of a local HTTP server:
//!
//! - **Origin.** A request that carries an `Origin` header is served only
//!   when it is a loopback origin (`http(s)://localhost`, `127.0.0.1` or
//!   `[::1]`, any port) or one of [`HttpOptions::allow_origins`]; others
//!   (`http://evil.example`, `null`) get 403 — a web page cannot drive the
//!   server through the user's browser (DNS rebinding). A request without
//!   `Origin` comes from a non-browser client and is served. rmcp checks
//!   `Origin` (and `Host`: loopback names only) before anything else.
//! - **Token.** With [`HttpOptions::token`], every request needs
//!   `Authorization: Bearer TOKEN` (compared in constant time), else 401.
//! - **Sessions.** At most [`HttpOptions::max_sessions`] at once (an
//!   `initialize` beyond them gets 503 and a JSON-RPC error); a session idle
//!   for [`HttpOptions::session_idle`] is closed and its memory freed (its
//!   worker ends and rmcp drops it from the table), as is one the client
//!   ends with `DELETE`. Runs do not belong to sessions: they go on.
//! - **Malformed bodies.** A POST whose body is not JSON gets the JSON-RPC
//!   parse error (-32700), JSON that is not a JSON-RPC message gets
//!   invalid request (-32600), both with HTTP 400 — rmcp alone answers 415.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use futures_util::Stream;
use http::{HeaderValue, StatusCode, header};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::WorkerTransport;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker,
};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId};
use rmcp::transport::streamable_http_server::{
    SessionManager, StreamableHttpServerConfig, StreamableHttpService,
};
use serde_json::{Value as J, json};

use super::{ServeError, Server};

/// The most sessions served at once, by default.
pub const DEFAULT_MAX_SESSIONS: usize = 100;
/// How long a session may stay idle before it is closed, by default.
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(600);
/// The largest request body accepted (as rmcp's default).
pub const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// The origins a browser on this machine sends: any port of a loopback host.
const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

/// How to serve over HTTP.
#[derive(Clone)]
pub struct HttpOptions {
    /// Origins allowed besides the loopback ones, each `scheme://host[:port]`
    /// (`:*` for any port) or `null`.
    pub allow_origins: Vec<String>,
    /// The bearer token every request must carry, if any.
    pub token: Option<String>,
    /// The most sessions at once.
    pub max_sessions: usize,
    /// A session idle this long is closed.
    pub session_idle: Duration,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("allow_origins", &self.allow_origins)
            .field("token", &self.token.as_ref().map(|_| "…"))
            .field("max_sessions", &self.max_sessions)
            .field("session_idle", &self.session_idle)
            .finish()
    }
}

impl Default for HttpOptions {
    fn default() -> HttpOptions {
        HttpOptions {
            allow_origins: Vec::new(),
            token: None,
            max_sessions: DEFAULT_MAX_SESSIONS,
            session_idle: DEFAULT_SESSION_IDLE,
        }
    }
}

/// Checks an `--allow-origin` value: `null`, or `http(s)://host[:port|:*]`
/// without a path.
pub fn check_origin(origin: &str) -> Result<(), ServeError> {
    if origin == "null" {
        return Ok(());
    }
    let rest = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    let ok = rest.is_some_and(|r| {
        !r.is_empty()
            && !r.contains('/')
            && !r.contains('?')
            && !r.contains('#')
            && !r.contains('@')
            && !r.starts_with(':')
    });
    if ok {
        Ok(())
    } else {
        Err(ServeError::Input(format!(
            "`{origin}` is not an origin: write scheme://host[:port] (`:*` for any port), \
             e.g. https://app.example:8443 or http://localhost:*, or `null`"
        )))
    }
}

/// rmcp's local session manager with a bound on the sessions it holds.
pub struct Sessions {
    local: LocalSessionManager,
    max: usize,
    /// Held while a session is counted and created, so the bound is exact.
    creating: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions").field("max", &self.max).finish()
    }
}

impl Sessions {
    /// At most `max` sessions; each closed after `idle` without a message.
    pub fn new(max: usize, idle: Duration) -> Sessions {
        let mut local = LocalSessionManager::default();
        local.session_config.keep_alive = Some(idle);
        Sessions {
            local,
            max,
            creating: tokio::sync::Mutex::new(()),
        }
    }

    /// How many sessions are open.
    pub async fn len(&self) -> usize {
        self.local.sessions.read().await.len()
    }

    /// Whether no session is open.
    pub async fn is_empty(&self) -> bool {
        self.len().await == 0
    }

    /// Whether another session can be opened now.
    pub async fn has_room(&self) -> bool {
        self.len().await < self.max
    }
}

/// A session could not be served.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(
        "too many sessions: {0} are open; end one (DELETE /mcp with its Mcp-Session-Id) or wait until an idle one expires"
    )]
    Full(usize),
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

impl SessionManager for Sessions {
    type Error = SessionError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), SessionError> {
        let _creating = self.creating.lock().await;
        let open = self.len().await;
        if open >= self.max {
            return Err(SessionError::Full(open));
        }
        Ok(self.local.create_session().await?)
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, SessionError> {
        Ok(self.local.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, SessionError> {
        Ok(self.local.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), SessionError> {
        Ok(self.local.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, SessionError> {
        Ok(self.local.create_stream(id, message).await?)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), SessionError> {
        Ok(self.local.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, SessionError> {
        Ok(self.local.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, SessionError> {
        Ok(self.local.resume(id, last_event_id).await?)
    }
}

/// A bound Streamable HTTP endpoint.
pub struct HttpServing {
    /// The address it listens on.
    pub addr: SocketAddr,
    /// The sessions (for their count).
    pub sessions: Arc<Sessions>,
    listener: tokio::net::TcpListener,
    app: axum::Router,
}

impl std::fmt::Debug for HttpServing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServing")
            .field("addr", &self.addr)
            .finish()
    }
}

impl HttpServing {
    /// Serves until the process ends (or the future is dropped).
    pub async fn run(self) -> Result<(), ServeError> {
        axum::serve(self.listener, self.app)
            .await
            .map_err(|e| ServeError::Io {
                path: self.addr.to_string(),
                message: e.to_string(),
            })
    }
}

/// What the middleware needs.
struct Guard {
    token: Option<String>,
    sessions: Arc<Sessions>,
}

impl Server {
    /// Binds Streamable HTTP at `addr` (a loopback address; port 0 picks
    /// one); the endpoint is `http://ADDR/mcp`. Await [`HttpServing::run`].
    pub async fn bind_http(
        self,
        addr: SocketAddr,
        options: &HttpOptions,
    ) -> Result<HttpServing, ServeError> {
        if !addr.ip().is_loopback() {
            return Err(ServeError::Input(format!(
                "{addr} is not a loopback address: the server listens on 127.0.0.1 or [::1] only"
            )));
        }
        for origin in &options.allow_origins {
            check_origin(origin)?;
        }
        if options.max_sessions == 0 {
            return Err(ServeError::Input(
                "at least one session must be allowed".into(),
            ));
        }
        if options.token.as_deref().is_some_and(str::is_empty) {
            return Err(ServeError::Input("the token is empty".into()));
        }
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| ServeError::Io {
                path: addr.to_string(),
                message: e.to_string(),
            })?;
        let local = listener.local_addr().map_err(|e| ServeError::Io {
            path: addr.to_string(),
            message: e.to_string(),
        })?;
        let sessions = Arc::new(Sessions::new(options.max_sessions, options.session_idle));
        let origins: Vec<String> = LOOPBACK_ORIGINS
            .iter()
            .map(|o| o.to_string())
            .chain(options.allow_origins.iter().cloned())
            .collect();
        let config = StreamableHttpServerConfig::default()
            .with_allowed_origins(origins)
            .enforce_origin_validation()
            .with_max_request_body_bytes(MAX_BODY_BYTES);
        let server = self;
        let service =
            StreamableHttpService::new(move || Ok(server.for_session()), sessions.clone(), config);
        let guard = Arc::new(Guard {
            token: options.token.clone(),
            sessions: sessions.clone(),
        });
        let app = axum::Router::new()
            .route_service("/mcp", service)
            .layer(axum::middleware::from_fn_with_state(guard, guard_request));
        Ok(HttpServing {
            addr: local,
            sessions,
            listener,
            app,
        })
    }
}

/// A JSON-RPC error response with HTTP status `status`.
fn rpc_error(status: StatusCode, id: J, code: i64, message: String) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The token, the session bound and the body's JSON, before rmcp sees the request.
async fn guard_request(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    if let Some(token) = &guard.token {
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        if !given.is_some_and(|g| constant_time_eq(g.as_bytes(), token.as_bytes())) {
            let mut response = rpc_error(
                StatusCode::UNAUTHORIZED,
                J::Null,
                -32001,
                "unauthorized: send `Authorization: Bearer TOKEN` with the server's token".into(),
            );
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return response;
        }
    }
    let json_post = request.method() == http::Method::POST
        && request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v.split(';')
                    .next()
                    .is_some_and(|e| e.trim().eq_ignore_ascii_case("application/json"))
            });
    if !json_post {
        // rmcp answers the rest (GET streams, DELETE, a wrong content type: 415).
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Ok(b) => b,
        Err(_) => {
            return rpc_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                J::Null,
                -32600,
                format!("the request body is larger than {MAX_BODY_BYTES} bytes"),
            );
        }
    };
    let value: J = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                J::Null,
                -32700,
                format!("parse error: the body is not JSON ({e})"),
            );
        }
    };
    let id = value.get("id").cloned().unwrap_or(J::Null);
    let message: ClientJsonRpcMessage = match serde_json::from_value(value) {
        Ok(m) => m,
        Err(e) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                id,
                -32600,
                format!("invalid request: not a JSON-RPC 2.0 request or notification of MCP ({e})"),
            );
        }
    };
    let opens_session = parts
        .headers
        .get(rmcp::transport::common::http_header::HEADER_SESSION_ID)
        .is_none()
        && matches!(
            &message,
            ClientJsonRpcMessage::Request(r)
                if matches!(r.request, rmcp::model::ClientRequest::InitializeRequest(_))
        );
    if opens_session && !guard.sessions.has_room().await {
        return rpc_error(
            StatusCode::SERVICE_UNAVAILABLE,
            id,
            -32000,
            SessionError::Full(guard.sessions.len().await).to_string(),
        );
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_checked_before_serving() {
        for ok in [
            "null",
            "https://app.example",
            "https://app.example:8443",
            "http://localhost:*",
            "http://[::1]:3000",
        ] {
            assert!(check_origin(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "app.example",
            "ftp://x",
            "https://",
            "https://app.example/path",
            "http://user@host",
            "*",
        ] {
            assert!(check_origin(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn tokens_compare_exactly() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
        assert!(!constant_time_eq(b"", b"a"));
    }
}
