//! Shared test helpers: a store in a temp dir, durable runs driven through
//! the library (as `troupe run --store` does), and a server on 127.0.0.1.

#![allow(dead_code)]

pub mod browser;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use troupe_store::{Durability, Store, TaskRow};
use troupe_web::{NotifyConfig, ServeOptions};

pub const APPROVAL: &str = include_str!("../../../../../examples/local_approval.troupe");

/// One task of each kind, each on its own lifeline, so all are pending at once.
pub const KINDS: &str = r#"
enum Size { small, large }
human approve(plan: Text) -> Bool { ask: "Approve {plan}?" }
human pick(plan: Text) -> Size { ask: "Which size for {plan}?" }
human remark(plan: Text) -> Text { ask: "A remark on {plan}?" }
human count(plan: Text) -> Int { ask: "How many for {plan}?" }
human rewrite(plan: Text) -> Text { ask: "Edit the plan", prefill: "{plan}" }

workflow kinds(plan: Text @ A) {
  lifelines A, B, C, D, E, F
  msg A(plan) -> B(plan)
  msg A(plan) -> C(plan)
  msg A(plan) -> D(plan)
  msg A(plan) -> E(plan)
  msg A(plan) -> F(plan)
  act B: ok = approve(plan)
  act C: size = pick(plan)
  act D: note = remark(plan)
  act E: text = rewrite(plan)
  act F: n = count(plan)
  msg B(ok) -> A(ok)
  msg C(size) -> A(size)
  msg D(note) -> A(note)
  msg E(text) -> A(text)
  msg F(n) -> A(n)
  return text @ A
}
"#;

pub fn open_store(dir: &tempfile::TempDir) -> Store {
    Store::open(dir.path().join("troupe.db"), Durability::Normal).expect("open the store")
}

/// Records a new run of the first workflow of `source` and drives it on a
/// thread of its own (its own runtime, like a `troupe run --store` process).
pub fn start_run(
    store: &Store,
    source: &str,
    inputs: &[(&str, &str)],
) -> (i64, std::thread::JoinHandle<Result<String, String>>) {
    let compiled = troupe_host::Compiled::from_source(
        source.to_owned(),
        "test.troupe",
        std::path::Path::new("."),
        None,
    )
    .unwrap_or_else(|e| panic!("the test workflow does not load: {e}"));
    let pairs: Vec<(String, String)> = inputs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let values = compiled.parse_inputs(&pairs, None).expect("inputs");
    let mut config = troupe_host::HostConfig::new(std::env::temp_dir());
    config.lease = Duration::from_secs(5);
    let host = troupe_host::Host::new(store.clone(), config, Arc::new(troupe_host::NoTools));
    let settings = troupe_host::RunSettings {
        llm: Some("mock".into()),
        mock_externs: true,
        ..troupe_host::RunSettings::default()
    };
    let started = host
        .start(&compiled, values, &settings, troupe_host::StartPolicy::New)
        .expect("start the run");
    let run = started.run;
    let handle = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        let finished = rt
            .block_on(host.drive(run, &troupe_host::Overrides::default(), None))
            .map_err(|e| e.to_string())?;
        match finished.end {
            troupe_host::RunEnd::Done { results, .. } => Ok(format!("{results:?}")),
            other => Err(format!("{other:?}")),
        }
    });
    (run, handle)
}

/// Waits until `run` has `n` pending tasks; returns them.
pub fn wait_tasks(store: &Store, run: i64, n: usize) -> Vec<TaskRow> {
    let name = Store::run_name(run);
    let start = Instant::now();
    loop {
        let tasks: Vec<TaskRow> = store
            .tasks(false)
            .expect("tasks")
            .into_iter()
            .filter(|t| t.run == name)
            .collect();
        if tasks.len() >= n {
            return tasks;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{name} did not ask for {n} task(s) in time (has {})",
            tasks.len()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until the run's status is `status`.
pub fn wait_status(store: &Store, run: i64, status: &str) {
    let start = Instant::now();
    loop {
        let now = store.run(run).expect("run").summary.status;
        if now.as_str() == status {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "run-{run} is {now}, not {status}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Serves `store` on a free loopback port.
pub async fn serve(store: &Store, token: &str) -> SocketAddr {
    serve_with(store, token, NotifyConfig::default()).await
}

pub async fn serve_with(store: &Store, token: &str, notify: NotifyConfig) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let options = ServeOptions {
        token: token.to_owned(),
        notify,
        announce: false,
        session_ttl: troupe_web::SESSION_TTL,
        interrupt: None,
    };
    let store = store.clone();
    tokio::spawn(async move {
        if let Err(e) = troupe_web::serve_listener(listener, store, options).await {
            eprintln!("server stopped: {e}");
        }
    });
    addr
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client")
}
