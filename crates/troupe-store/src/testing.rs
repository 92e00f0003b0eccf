//! Test support shared by the crates whose tests run against both stores:
//! a fresh PostgreSQL database per test on the test server
//! (`.ci/start-postgres.sh`), dropped when the test ends. Not for
//! production use.

use crate::db::{Db, PgRuntime};
use std::sync::OnceLock;

/// The server the tests use: `$TROUPE_TEST_POSTGRES`, or the one
/// `.ci/start-postgres.sh` starts (it is started here when it is not up).
pub fn server_url() -> String {
    if let Ok(url) = std::env::var("TROUPE_TEST_POSTGRES") {
        return url;
    }
    static STARTED: OnceLock<()> = OnceLock::new();
    STARTED.get_or_init(|| {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../.ci/start-postgres.sh");
        // Its output is not captured: the server it starts lives on and
        // would keep a captured pipe open.
        let status = std::process::Command::new("bash")
            .arg(script)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .status()
            .expect("run .ci/start-postgres.sh");
        assert!(
            status.success(),
            "cannot start the test PostgreSQL server: run `bash .ci/install-postgres.sh`"
        );
    });
    let port = std::env::var("TROUPE_PG_PORT").unwrap_or_else(|_| "54329".into());
    format!("postgres://troupe@127.0.0.1:{port}/postgres")
}

/// A database of one test's own, dropped with it.
#[derive(Debug)]
pub struct TestDatabase {
    pub url: String,
    name: String,
    server: String,
}

impl TestDatabase {
    pub fn new() -> TestDatabase {
        TestDatabase::on(&server_url())
    }

    /// A fresh database on the server `server` (a `postgres://` address
    /// whose user may create databases).
    pub fn on(server: &str) -> TestDatabase {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let server = server.to_owned();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let name = format!(
            "troupe_test_{}_{}_{nanos}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        admin(&server, &format!("CREATE DATABASE {name}"));
        let (base, _) = server.rsplit_once('/').expect("a database in the URL");
        TestDatabase {
            url: format!("{base}/{name}"),
            name,
            server,
        }
    }
}

impl Default for TestDatabase {
    fn default() -> TestDatabase {
        TestDatabase::new()
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        admin(
            &self.server,
            &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
        );
    }
}

fn admin(server: &str, sql: &str) {
    let rt = PgRuntime::start().expect("a runtime for the PostgreSQL client");
    let mut db = rt
        .connect(server)
        .unwrap_or_else(|e| panic!("cannot reach the test PostgreSQL server {server}: {e}"));
    (&mut db as &mut dyn Db)
        .batch(sql)
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// A store of each kind for one test: an SQLite file in `dir`, and a
/// PostgreSQL database of the test's own (kept alive beside its store).
pub fn both(
    dir: &std::path::Path,
    durability: crate::Durability,
) -> Vec<(crate::Store, Option<TestDatabase>)> {
    let sqlite = crate::Store::open(dir.join("s.db"), durability).expect("an SQLite store");
    let db = TestDatabase::new();
    let postgres = crate::Store::open(&db.url, durability).expect("a PostgreSQL store");
    vec![(sqlite, None), (postgres, Some(db))]
}

/// A queued run of a workflow `w` with one lifeline and no inputs, with
/// fingerprint `fp`: what the store's own tests record.
pub fn bare_run(fingerprint: &str) -> crate::NewRun {
    crate::NewRun {
        workflow: "w".into(),
        file: None,
        source: String::new(),
        fingerprint: fingerprint.into(),
        canonical: String::new(),
        inputs_json: "{}".into(),
        inputs: Vec::new(),
        seed: 0,
        lifelines: 1,
        llm: "mock".into(),
        settings: "{}".into(),
        owner: None,
        parts: Vec::new(),
    }
}

/// A person's yes-or-no task `A/ok#k`-like, keyed `key`, of run `run`, with
/// `deadline` (after, default): what the store's own tests record.
pub fn confirm_task(
    run: i64,
    key: &str,
    deadline: Option<(std::time::Duration, serde_json::Value)>,
) -> crate::NewTask {
    crate::NewTask {
        run,
        key: key.into(),
        lifeline: "A".into(),
        action: "ok".into(),
        kind: crate::TaskKind::Confirm,
        prompt: "ok?".into(),
        prefill: None,
        options: Vec::new(),
        ty: "Bool".into(),
        schema: "{}".into(),
        deadline,
        remind: None,
    }
}
