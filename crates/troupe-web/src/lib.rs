//! `troupe serve`: a small web server over a troupe store.
//!
//! - Pages (server-rendered HTML, inline CSS, a little vanilla JavaScript):
//!   `/` the runs (auto-refreshing), `/runs/{id}` a run with its sequence
//!   chart that updates live over server-sent events (`/runs/{id}/events`),
//!   its trace table and its result, `/inbox` the pending human tasks with a
//!   form that fits each (confirm, select, input, edit).
//! - A JSON API: `GET /api/runs`, `GET /api/runs/{id}`, `GET /api/tasks`,
//!   `POST /api/tasks/{id}/answer`.
//! - Notification adapters ([`notify`]): Telegram and a generic webhook,
//!   whose answers come back through `POST /hooks/answer/{task}`.
//!
//! Every page and API call needs the server's token: `Authorization: Bearer
//! T` from scripts; a browser signs in with it once (`?token=T` or the
//! sign-in form) and gets a session — an opaque id in an HttpOnly
//! SameSite=Strict cookie, with a CSRF token of its own that every
//! state-changing request must carry, see `src/auth.rs`.
//! Answers go through [`answer::submit`], which validates exactly like
//! `troupe answer` does; the first answer wins across all channels.

pub mod answer;
mod auth;
mod console;
mod guard;
pub mod health;
mod html;
mod live;
pub mod notify;
mod operate;
mod routes;

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use troupe_store::{Durability, Store, StoreError};

pub use answer::{AnswerError, AnswerInput};
pub use auth::SESSION_TTL;
pub use notify::{NotifyConfig, NotifyDb, TelegramConfig, WebhookConfig};
pub use routes::{router, router_with};

/// The store used when nothing names one (the host's).
pub use troupe_host::DEFAULT_STORE;
/// Where `serve` listens when `--bind` names nothing.
pub const DEFAULT_BIND: &str = "127.0.0.1:7878";

#[derive(Debug, thiserror::Error)]
pub enum WebError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// No store at this path: a server never creates one (the CLI says
    /// how runs are recorded in one).
    #[error("no store at {0}")]
    NoStore(String),
    #[error("cannot listen on {addr}: {message}")]
    Bind { addr: SocketAddr, message: String },
    #[error("{0}")]
    Io(String),
    #[error("{0}")]
    Config(String),
    #[error("notification store: {0}")]
    NotifyDb(String),
    /// A Telegram chat was given over a configuration without a
    /// `[notify.telegram]` section, and the bot token is not in the
    /// environment variable `var`.
    #[error("a Telegram chat needs the bot token in the environment variable {var}")]
    NoBotToken { var: &'static str },
    /// Telegram notifications with nobody allowed to answer (an empty
    /// `[notify.telegram] allowed_users`, and none given over it).
    #[error(
        "Telegram notifications need at least one allowed user ([notify.telegram] allowed_users): nobody else may answer"
    )]
    NoTelegramUsers,
    #[error("{channel}: {message}")]
    Notify { channel: String, message: String },
}

/// `troupe serve`'s settings (the CLI reads them from its flags and
/// environment).
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The store (an SQLite file); `TROUPE_STORE` and `[store] path`
    /// name it when this is the default.
    pub store: PathBuf,
    /// Where to listen.
    pub bind: SocketAddr,
    /// The access token; without one, a random one is made and the URL to
    /// open (with `?token=…`) is printed at start.
    pub token: Option<String>,
    /// The project file with a `[notify]` section (default: `troupe.toml`
    /// in the current directory, when it exists).
    pub config: Option<PathBuf>,
    /// The notification settings given over the file's, or `None` to run
    /// no notification adapter, whatever the configuration says.
    pub notify: Option<NotifyOverrides>,
}

/// Notification settings that override the `[notify]` section's.
#[derive(Debug, Clone, Default)]
pub struct NotifyOverrides {
    /// Announce tasks to this webhook (overrides `[notify.webhook] url`).
    pub webhook: Option<String>,
    /// Announce tasks to this Telegram chat (overrides `[notify.telegram]
    /// chat_id`); the bot token is read from `TELEGRAM_BOT_TOKEN`.
    pub telegram_chat: Option<i64>,
    /// Telegram user ids allowed to answer (added to `[notify.telegram]
    /// allowed_users`).
    pub telegram_allow: Vec<i64>,
    /// The Bot API base URL.
    pub telegram_base_url: Option<String>,
    /// The URL people and webhooks reach this server at (default
    /// `http://ADDR`), used in notifications.
    pub public_url: Option<String>,
}

/// How a server ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// It stopped serving by itself.
    Closed,
    /// The stop future resolved (the process was asked to stop), and the
    /// runs it drove reached their step boundary or their grace ran out.
    Stopped,
}

/// Everything a running server needs.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub token: String,
    pub notify: NotifyConfig,
    /// Announce the URL on stderr at start.
    pub announce: bool,
    /// How long a browser session lasts after sign-in ([`SESSION_TTL`]).
    pub session_ttl: std::time::Duration,
    /// Triggered when the process is asked to stop: the runs this server
    /// drives (retried or forked from the console) stop at their next step
    /// boundary and give their leases back.
    pub interrupt: Option<troupe_runtime::Interrupt>,
}

/// `troupe serve`: builds a runtime and serves until `stop` resolves (the
/// CLI's first SIGINT or SIGTERM, which also triggers `interrupt`).
pub fn run(
    options: RunOptions,
    interrupt: Option<troupe_runtime::Interrupt>,
    stop: impl std::future::Future<Output = ()> + Send,
) -> Result<Ended, WebError> {
    let mut notify = match &options.notify {
        None => NotifyConfig::default(),
        Some(_) => {
            let path = options
                .config
                .clone()
                .or_else(|| Some(PathBuf::from("troupe.toml")).filter(|p| p.exists()));
            match path {
                Some(p) => NotifyConfig::from_file(&p)?,
                None => NotifyConfig::default(),
            }
        }
    };
    if let Some(overrides) = &options.notify {
        notify.apply_overrides(overrides)?;
    }
    if notify.public_url.is_none() {
        notify.public_url = Some(format!("http://{}", options.bind));
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| WebError::Io(format!("cannot start the runtime: {e}")))?;
    // `--store`, else `TROUPE_STORE`, else `[store] path`, else the default.
    let store = troupe_host::store_address(Some(&options.store), std::path::Path::new("."))
        .map_err(|e| WebError::Config(e.to_string()))?;
    rt.block_on(serve_with(
        &store,
        options.bind,
        options.token,
        notify,
        interrupt,
        stop,
    ))
}

/// Serves the store at `store_path` on `bind` until interrupted (Ctrl-C),
/// with the notification adapters of `troupe.toml`'s `[notify]` section in
/// the current directory, if any.
pub async fn serve(
    store_path: &Path,
    bind: SocketAddr,
    token: Option<String>,
) -> Result<(), WebError> {
    let notify = match Some(PathBuf::from("troupe.toml")).filter(|p| p.exists()) {
        Some(p) => NotifyConfig::from_file(&p)?,
        None => NotifyConfig::default(),
    };
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    serve_with(store_path, bind, token, notify, None, stop)
        .await
        .map(|_| ())
}

/// [`serve`] with an explicit notification configuration, until `stop`
/// resolves; then the runs it drives get until their step boundary (at most
/// the grace of an effect in flight) to stop and give their leases back.
pub async fn serve_with(
    store_path: &Path,
    bind: SocketAddr,
    token: Option<String>,
    notify: NotifyConfig,
    interrupt: Option<troupe_runtime::Interrupt>,
    stop: impl std::future::Future<Output = ()>,
) -> Result<Ended, WebError> {
    if !troupe_store::exists(store_path) {
        return Err(WebError::NoStore(store_path.display().to_string()));
    }
    let store = Store::open(store_path, Durability::Full)?;
    if let Err(e) = std::fs::OpenOptions::new().write(true).open(store_path)
        && matches!(
            e.kind(),
            std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
        )
    {
        let _ = writeln!(
            std::io::stderr(),
            "warning: the store {} is read-only ({e}): the pages show its runs, but answers cannot be recorded",
            store_path.display()
        );
    }
    if !bind.ip().is_loopback() {
        let _ = writeln!(
            std::io::stderr(),
            "warning: listening on {bind}, which is not a loopback address: anyone who can reach it and has the token can answer tasks"
        );
    }
    let listener = tokio::net::TcpListener::bind(bind)
        .await
        .map_err(|e| WebError::Bind {
            addr: bind,
            message: e.to_string(),
        })?;
    // A token the user chose is theirs: it is not printed. A made one is,
    // once, so that the person who started the server can sign in.
    let (token, made) = match token {
        Some(t) if t.is_empty() => return Err(WebError::Config("the token is empty".into())),
        Some(t) => (t, false),
        None => (random_hex(24)?, true),
    };
    if !made {
        let _ = writeln!(
            std::io::stderr(),
            "troupe serve: open http://{bind}/ and sign in with your token (?token=…)"
        );
    }
    let options = ServeOptions {
        token,
        notify,
        announce: made,
        session_ttl: SESSION_TTL,
        interrupt,
    };
    // The project's schedules: this server starts their ticks' runs, queued
    // for workers (one process per tick, whichever is first).
    let dir = std::env::current_dir().unwrap_or_else(|_| ".".into());
    let host = troupe_host::Host::new(
        store.clone(),
        troupe_host::HostConfig::new(dir),
        Arc::new(troupe_host::NoTools),
    );
    let schedules = host
        .schedules()
        .map_err(|e| WebError::Config(e.to_string()))?;
    if !schedules.is_empty() {
        let _ = writeln!(
            std::io::stderr(),
            "troupe serve: keeping {} schedule(s); their runs are queued for workers",
            schedules.len()
        );
    }
    tokio::spawn(async move {
        host.keep_schedules(schedules, |fired| {
            let line = match fired {
                troupe_host::schedule::Fired::Started {
                    schedule,
                    tick,
                    run,
                } => format!(
                    "schedule {schedule}: started {} for {}",
                    Store::run_name(*run),
                    troupe_host::schedule::show_tick(*tick)
                ),
                troupe_host::schedule::Fired::Failed {
                    schedule,
                    tick,
                    why,
                } => format!(
                    "schedule {schedule}: the tick of {} did not start: {why}",
                    troupe_host::schedule::show_tick(*tick)
                ),
            };
            let _ = writeln!(std::io::stderr(), "{line}");
        })
        .await;
    });
    tokio::select! {
        r = serve_listener(listener, store, options) => r.map(|()| Ended::Closed),
        () = stop => {
            // The runs this server drives stop at their step boundary.
            let deadline = tokio::time::Instant::now() + troupe_host::DEFAULT_GRACE + std::time::Duration::from_secs(1);
            while routes::driving() > 0 && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            Ok(Ended::Stopped)
        }
    }
}

/// Serves on an already bound listener (tests bind port 0). Starts the
/// configured notification adapters.
pub async fn serve_listener(
    listener: tokio::net::TcpListener,
    store: Store,
    options: ServeOptions,
) -> Result<(), WebError> {
    let addr = listener
        .local_addr()
        .map_err(|e| WebError::Io(e.to_string()))?;
    let db = Arc::new(NotifyDb::open(&store)?);
    let adapters = notify::start(&store, &db, &options.notify)?;
    if options.announce {
        let _ = writeln!(
            std::io::stderr(),
            "troupe serve: {} on http://{addr}/ — open http://{addr}/?token={}",
            store.path().display(),
            options.token
        );
        for a in &adapters {
            let _ = writeln!(std::io::stderr(), "notifications: {a}");
        }
    }
    // The health routes need no session (supervisors, Prometheus).
    let probe = Arc::new(health::StoreProbe {
        store: store.clone(),
        host: None,
    });
    let app = health::health_router(probe).merge(routes::router_app(
        store,
        options.token,
        db,
        options.session_ttl,
        options.interrupt,
    ));
    serve_connections(listener, app).await
}

/// How long a client may take to send a request's headers; a connection
/// that sends them slower (or never) is closed, so that idle or trickling
/// clients cannot hold the server's connections.
pub const HEADER_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Accepts connections and serves each with HTTP/1.1 under
/// [`HEADER_READ_TIMEOUT`] (what `axum::serve` does, plus the timeout).
pub(crate) async fn serve_connections(
    listener: tokio::net::TcpListener,
    app: axum::Router,
) -> Result<(), WebError> {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            // Out of file descriptors and the like: wait, and go on.
            Err(_) => {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        tokio::spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
    }
}

/// `n` random bytes from the operating system, as lowercase hex.
pub fn random_hex(n: usize) -> Result<String, WebError> {
    use std::io::Read;
    let mut buf = vec![0u8; n];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .map_err(|e| WebError::Io(format!("cannot read random bytes: {e}")))?;
    Ok(hex(&buf))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Compares two secrets in time that depends only on their lengths.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y));
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_store_is_an_error_not_a_new_file() {
        let dir = std::env::temp_dir().join(format!("troupe-web-none-{}", std::process::id()));
        let options = RunOptions {
            store: dir.join("none.db"),
            bind: DEFAULT_BIND.parse().unwrap(),
            token: None,
            config: None,
            notify: None,
        };
        assert!(matches!(
            run(options, None, std::future::pending()),
            Err(WebError::NoStore(_))
        ));
        assert!(!dir.join("none.db").exists());
    }

    #[test]
    fn secrets_compare_by_content() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
        assert_eq!(random_hex(8).unwrap().len(), 16);
        assert_ne!(random_hex(8).unwrap(), random_hex(8).unwrap());
    }
}
