//! Durable troupe runs in one SQLite file, or in a PostgreSQL database
//! that many processes on many machines share.
//!
//! A store holds many runs. Per run it records the workflow source and a
//! fingerprint of its structure, the inputs, every event of every lifeline
//! (messages per channel in order, control decisions, action results — in
//! compact binary chunks), every step that must not be redone (LLM answers,
//! effects started and finished, human answers, tools), human tasks and their
//! answers, and the final result or error.
//!
//! Durability follows external synchrony: what stays inside the process and
//! is recomputed on resume (messages, decisions, pure steps) is committed in
//! batches by one writer thread that group-commits the writes of all runs;
//! what leaves the process or cannot be recomputed (an LLM answer, an effect's
//! start and end, a human task and answer, the result) is durable before the
//! run goes on. WAL with `synchronous=FULL` by default; files are created with
//! mode 0600; pragmas are read back after they are set.
//!
//! Both databases sit behind one seam (`db.rs`): the store's logic and its
//! SQL exist once. A `postgres://` address opens a PostgreSQL store
//! (`postgres.rs`: its schema, migrations and the claim of the next runnable
//! run by `FOR UPDATE SKIP LOCKED`).

mod announce;
mod checkpoint;
mod codec;
mod db;
mod deadline;
mod fleet;
mod fork;
mod gauges;
mod inbox;
mod journal;
mod keys;
mod lease;
mod owner;
mod pause;
mod placement;
mod postgres;
mod query;
mod retention;
mod schedule;
#[cfg(test)]
mod schemas_agree;
mod sqlite_schema;
mod state;
use sqlite_schema::{create_private, initialize};
#[doc(hidden)]
pub mod testing;
mod timer;
mod version;
mod writer;

pub use announce::Announced;
pub use codec::{DecodeError, decode_events, fnv64};
pub use fleet::{Wakeups, WorkerRow};
pub use fork::{ForkAt, Forked, Lineage};
pub use gauges::Gauges;
pub use inbox::StoreInbox;
pub use journal::{History, JournalOptions, StoreJournal};
pub use keys::Keyed;
pub use lease::{Claim, Held, Renewal, StopReason};
pub use owner::{Liveness, describe as describe_owner, liveness, new_owner_id, pid as owner_pid};
pub use pause::Pausing;
pub use placement::{NewPart, PartRow, PartStatus, StoreChannels};
pub use query::{Events, LlmCallRow, Parking, RunDetail, RunSummary, RunTotals, StepRow, TaskRow};
pub use state::{RunStatus, StepStatus, TaskKind, TaskStatus};
pub use writer::Fence;

pub use db::Dialect;
pub use postgres::{exists, is_postgres, redact};
pub use schedule::TickRow;
pub use timer::TimerRow;
pub use version::{NewVersion, Translate, VersionRow};

use db::{Db, DbError, DbErrorKind, SqliteDb, args};
use rusqlite::{Connection, OpenFlags, params};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use writer::Writer;

/// How hard each commit tries to survive a power loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// `synchronous=FULL`: a committed record survives a power loss.
    #[default]
    Full,
    /// `synchronous=NORMAL`: survives a crash of the process, may lose the
    /// last commits on power loss; several times faster.
    Normal,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open the store {path}: {message}")]
    Open { path: PathBuf, message: String },
    #[error("{path} is not a troupe store ({why}); choose another store with --store")]
    Foreign { path: PathBuf, why: String },
    #[error(
        "{path} is damaged ({message}); restore it from a backup or choose another store with --store"
    )]
    Corrupt { path: PathBuf, message: String },
    #[error(
        "the store {path} is locked by another process; try again, or stop the process that holds it"
    )]
    Locked { path: PathBuf },
    #[error(
        "the disk is full: nothing was lost, but {what} was not recorded; free some space and retry"
    )]
    DiskFull { what: String },
    #[error("no run `{0}` in this store; `troupe runs` lists them")]
    UnknownRun(String),
    #[error("no task `{0}` in this store; `troupe tasks` lists the pending ones")]
    UnknownTask(String),
    #[error("{0}")]
    Conflict(String),
    /// A live owner still runs the run (or one of its parts): what was
    /// asked may only be done once nothing runs it.
    #[error(
        "{run} is being run by {owner} (its lease ends in {}s): {what} only once nothing runs it; cancel it first (`troupe cancel {run}`), or wait for the lease to end",
        (.expires_in_ms + 999) / 1000
    )]
    Running {
        run: String,
        owner: String,
        expires_in_ms: i64,
        what: String,
    },
    #[error(
        "{path} was written by a newer troupe (schema {found}, this troupe knows up to {known}); upgrade troupe or choose another store with --store"
    )]
    Newer {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    #[error(
        "cannot reach the store {path}: {message}; is the database server running, and is the address right?"
    )]
    Unavailable { path: PathBuf, message: String },
    #[error("store error: {0}")]
    Sql(String),
}

impl StoreError {
    fn from_sql(path: &Path, what: &str, e: rusqlite::Error) -> StoreError {
        Self::from_db(path, what, db::sqlite_error(e))
    }

    fn from_db(path: &Path, what: &str, e: DbError) -> StoreError {
        match e.kind {
            DbErrorKind::Corrupt => StoreError::Corrupt {
                path: path.to_owned(),
                message: e.message,
            },
            DbErrorKind::Busy => StoreError::Locked {
                path: path.to_owned(),
            },
            DbErrorKind::DiskFull => StoreError::DiskFull {
                what: what.to_owned(),
            },
            DbErrorKind::Unavailable => StoreError::Unavailable {
                path: path.to_owned(),
                message: e.message,
            },
            DbErrorKind::Other => StoreError::Sql(format!("{what}: {}", e.message)),
        }
    }
}

/// A new human task, as the inbox records it.
#[derive(Debug, Clone)]
pub struct NewTask {
    pub run: i64,
    pub key: String,
    pub lifeline: String,
    pub action: String,
    pub kind: TaskKind,
    pub prompt: String,
    pub prefill: Option<String>,
    pub options: Vec<String>,
    /// The answer's type as the language writes it (`Int`, `[Text]`, …).
    pub ty: String,
    /// The JSON Schema of the answer, for forms and clients.
    pub schema: String,
    /// `(after, default)`: when nobody answers within `after` of the task's
    /// first recording, `default` is its answer, given by `timeout`.
    pub deadline: Option<(std::time::Duration, serde_json::Value)>,
    /// Announce the task again this often while it waits (`remind:`).
    pub remind: Option<std::time::Duration>,
}

/// Who answers a task whose deadline passed.
pub const BY_TIMEOUT: &str = "timeout";

/// Records a task, once: a resumed run asking again keeps the first
/// record, and with it the original deadline.
pub(crate) fn insert_task(db: &mut dyn Db, t: &NewTask) -> Result<(), DbError> {
    let (after, default) = match &t.deadline {
        Some((after, default)) => (Some(lease::millis(*after)), Some(default.to_string())),
        None => (None, None),
    };
    db.execute(
        &format!("INSERT INTO tasks(run, key, lifeline, action, kind, prompt, prefill, options, type, schema, status, created_at, due_at, default_answer, remind_ms, asked_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 'pending', strftime('%Y-%m-%dT%H:%M:%fZ','now'),
           CASE WHEN CAST(?11 AS BIGINT) IS NULL THEN NULL ELSE {NOW_MS} + CAST(?11 AS BIGINT) END, ?12,
           CAST(?13 AS BIGINT), {NOW_MS})
         ON CONFLICT(run, key) DO NOTHING"),
        args![
            t.run,
            &t.key,
            &t.lifeline,
            &t.action,
            t.kind.as_str(),
            &t.prompt,
            &t.prefill,
            serde_json::to_string(&t.options).unwrap_or_default(),
            &t.ty,
            &t.schema,
            after,
            &default,
            t.remind.map(lease::millis)
        ],
    )?;
    Ok(())
}

/// An open store. Cheap to clone; shareable across threads.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

/// A handle on a store that does not keep it open: a background thread
/// holds one, so that the store still closes (its connections, and with
/// the last of them SQLite's `-wal` and `-shm` files) when its owners let
/// it go.
#[derive(Clone)]
pub struct WeakStore(std::sync::Weak<Inner>);

impl std::fmt::Debug for WeakStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WeakStore").finish_non_exhaustive()
    }
}

impl WeakStore {
    /// The store, while anyone else still holds it open.
    pub fn upgrade(&self) -> Option<Store> {
        self.0.upgrade().map(|inner| Store { inner })
    }
}

struct Inner {
    /// The file, or the PostgreSQL address as given (with its password:
    /// other processes of this one open it again).
    path: PathBuf,
    /// What messages show of it: the address without its password.
    shown: PathBuf,
    durability: Durability,
    /// For queries and the occasional write of commands (answer, resolve).
    conn: Mutex<Box<dyn Db>>,
    /// Opens the writer's own connection.
    connector: Connector,
    /// The connection of lease renewals ([`Store::renew_all`]), opened on
    /// first use: a renewal must not wait behind the queries of the runs
    /// it keeps. `None`: it could not be opened, and renewals share
    /// `conn`.
    leases: OnceLock<Option<Mutex<Box<dyn Db>>>>,
    /// Started on first use by a run.
    writer: OnceLock<Result<Writer, String>>,
    /// Runs announced as runnable (PostgreSQL's notifications, fanned out
    /// to every waiting inbox of this process); started on first use.
    wakeups: OnceLock<Option<tokio::sync::broadcast::Sender<i64>>>,
    /// The same for the messages between the parts of placed runs.
    message_wakeups: OnceLock<Option<tokio::sync::broadcast::Sender<i64>>>,
}

/// How a store opens another connection to its database.
#[derive(Clone)]
enum Connector {
    Sqlite,
    Postgres(Arc<db::PgRuntime>),
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(Ok(writer)) = self.writer.take() {
            writer.close();
        }
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.inner.shown)
            .field("durability", &self.inner.durability)
            .finish()
    }
}

/// A run's identity, unique across stores and never reused: a random
/// (version 4) UUID.
pub fn new_uid() -> String {
    troupe_runtime::new_run_uid()
}

/// The SQL of "now" in milliseconds since the Unix epoch, from the
/// database's clock: every process that shares the store agrees on it.
pub(crate) const NOW_MS: &str = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)";

impl Store {
    /// Opens (or creates) the store at `path`: an SQLite file, or a
    /// PostgreSQL database when `path` is a `postgres://` address.
    pub fn open(path: impl AsRef<Path>, durability: Durability) -> Result<Store, StoreError> {
        let path = path.as_ref().to_owned();
        if let Some(url) = path.to_str().filter(|p| is_postgres(p)) {
            return postgres::open(url, durability);
        }
        let open_err = |message: String| StoreError::Open {
            path: path.clone(),
            message,
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|e| open_err(format!("cannot create {}: {e}", parent.display())))?;
        }
        create_private(&path).map_err(|e| open_err(e.to_string()))?;
        let conn = Self::connect(&path, durability)?;
        initialize(&conn, &path)?;
        Ok(Store::assemble(
            path.clone(),
            path,
            durability,
            Box::new(SqliteDb { conn }),
            Connector::Sqlite,
        ))
    }

    fn assemble(
        path: PathBuf,
        shown: PathBuf,
        durability: Durability,
        conn: Box<dyn Db>,
        connector: Connector,
    ) -> Store {
        Store {
            inner: Arc::new(Inner {
                path,
                shown,
                durability,
                conn: Mutex::new(conn),
                connector,
                leases: OnceLock::new(),
                writer: OnceLock::new(),
                wakeups: OnceLock::new(),
                message_wakeups: OnceLock::new(),
            }),
        }
    }

    /// A handle that does not keep the store open ([`WeakStore`]).
    pub fn downgrade(&self) -> WeakStore {
        WeakStore(Arc::downgrade(&self.inner))
    }

    /// Which database the store is in.
    pub fn dialect(&self) -> Dialect {
        match self.inner.connector {
            Connector::Sqlite => Dialect::Sqlite,
            Connector::Postgres(_) => Dialect::Postgres,
        }
    }

    /// The store as messages name it (a PostgreSQL address without its
    /// password).
    pub fn shown(&self) -> &Path {
        &self.inner.shown
    }

    /// Another connection to the store's database.
    fn reconnect(&self) -> Result<Box<dyn Db>, StoreError> {
        match &self.inner.connector {
            Connector::Sqlite => Ok(Box::new(SqliteDb {
                conn: Self::connect(&self.inner.path, self.inner.durability)?,
            })),
            Connector::Postgres(rt) => postgres::connect(
                rt,
                &self.inner.path,
                &self.inner.shown,
                self.inner.durability,
            )
            .map(|db| Box::new(db) as Box<dyn Db>),
        }
    }

    /// A connection with the store's pragmas set and verified.
    fn connect(path: &Path, durability: Durability) -> Result<Connection, StoreError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags)
            .map_err(|e| StoreError::from_sql(path, "open", e))?;
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(|e| StoreError::from_sql(path, "busy_timeout", e))?;
        // The store runs a few dozen distinct statements; rusqlite keeps 16
        // prepared by default, so a run's lifecycle parsed its SQL again
        // and again (5% of 1,000 concurrent durable runs' time).
        conn.set_prepared_statement_cache_capacity(128);
        // The query planner's stability guarantee: a plan never depends on
        // bound values. Without it, a query whose terms could match a
        // partial index's (`tasks_due`: `status = 'pending'`) was marked to
        // be planned again whenever its bindings were cleared, which
        // rusqlite does each time a cached statement returns to the cache:
        // every such query was parsed again on every use (18% of 1,000
        // concurrent durable runs' time). The partial indexes' own queries
        // spell their conditions as literals, so they still use them.
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
            true,
        )
        .map_err(|e| StoreError::from_sql(path, "enable_qpsg", e))?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(|e| StoreError::from_sql(path, "journal_mode", e))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Open {
                path: path.to_owned(),
                message: format!("journal_mode is {mode}, not wal"),
            });
        }
        let (level, want) = match durability {
            Durability::Full => ("FULL", 2),
            Durability::Normal => ("NORMAL", 1),
        };
        conn.execute_batch(&format!(
            "PRAGMA synchronous = {level}; PRAGMA foreign_keys = ON;"
        ))
        .map_err(|e| StoreError::from_sql(path, "synchronous", e))?;
        // An invalid pragma value is silently ignored: read it back.
        let got: i64 = conn
            .query_row("PRAGMA synchronous", [], |r| r.get(0))
            .map_err(|e| StoreError::from_sql(path, "synchronous", e))?;
        if got != want {
            return Err(StoreError::Open {
                path: path.to_owned(),
                message: format!("synchronous is {got}, not {want}"),
            });
        }
        Ok(conn)
    }

    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    pub fn durability(&self) -> Durability {
        self.inner.durability
    }

    /// The file, or the address the store was opened with.
    pub(crate) fn with<T>(
        &self,
        what: &str,
        f: impl FnOnce(&mut dyn Db) -> Result<T, DbError>,
    ) -> Result<T, StoreError> {
        let mut conn = self
            .inner
            .conn
            .lock()
            .map_err(|_| StoreError::Sql("the store connection was poisoned".into()))?;
        f(conn.as_mut()).map_err(|e| StoreError::from_db(&self.inner.shown, what, e))
    }

    /// `with`, on the connection of lease renewals.
    pub(crate) fn with_leases<T>(
        &self,
        what: &str,
        f: impl FnOnce(&mut dyn Db) -> Result<T, DbError>,
    ) -> Result<T, StoreError> {
        let leases = self.inner.leases.get_or_init(|| match self.reconnect() {
            Ok(db) => Some(Mutex::new(db)),
            Err(e) => {
                tracing::warn!(error = %e, "no connection of its own for lease renewals");
                None
            }
        });
        let Some(conn) = leases else {
            return self.with(what, f);
        };
        let mut conn = conn
            .lock()
            .map_err(|_| StoreError::Sql("the store connection was poisoned".into()))?;
        f(conn.as_mut()).map_err(|e| StoreError::from_db(&self.inner.shown, what, e))
    }

    /// `with`, in one transaction.
    pub(crate) fn transaction<T>(
        &self,
        what: &str,
        f: impl FnOnce(&mut dyn Db) -> Result<T, DbError>,
    ) -> Result<T, StoreError> {
        self.with(what, |db| db.transaction(f))
    }

    /// Transactions the group-commit writer has committed in this process.
    pub fn commits(&self) -> u64 {
        self.inner
            .writer
            .get()
            .and_then(|w| w.as_ref().ok())
            .map_or(0, Writer::commits)
    }

    /// Why this process's writer can write no more, if it cannot: it
    /// failed a commit it could not retry, and refuses every later write
    /// rather than lose one out of order. A long-lived process (a worker)
    /// should stop and be restarted.
    pub fn write_failure(&self) -> Option<String> {
        match self.inner.writer.get()? {
            Ok(w) => w.failure(),
            Err(e) => Some(e.clone()),
        }
    }

    /// The baseline of the durable benchmarks: `n` single-row inserts into a
    /// fresh database at `path`, each its own committed transaction, with
    /// the same pragmas as a store.
    pub fn raw_commit_baseline(
        path: &Path,
        n: u32,
        durability: Durability,
    ) -> Result<std::time::Duration, StoreError> {
        let _ = std::fs::remove_file(path);
        create_private(path).map_err(|e| StoreError::Open {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        let conn = Self::connect(path, durability)?;
        let sql = |e| StoreError::from_sql(path, "baseline", e);
        conn.execute_batch("CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB)")
            .map_err(sql)?;
        let started = std::time::Instant::now();
        for i in 0..n {
            conn.execute("INSERT INTO t(v) VALUES (?1)", params![format!("row {i}")])
                .map_err(sql)?;
        }
        Ok(started.elapsed())
    }

    pub(crate) fn writer(&self) -> Result<Writer, String> {
        self.inner
            .writer
            .get_or_init(|| {
                self.reconnect()
                    .map(Writer::start)
                    .map_err(|e| e.to_string())
            })
            .clone()
    }
}

/// A fingerprint of a workflow's structure (its statements and the
/// signatures of its actions), with the canonical text it is taken of.
/// Stable across processes and insensitive to comments and layout.
pub fn fingerprint(
    program: &troupe_check::ir::Program,
    workflow: &troupe_check::ir::Workflow,
) -> (String, String) {
    let names = troupe_project::Names::new(program, workflow);
    let types = &program.types;
    let mut canonical = String::new();
    for a in &program.actions {
        let params: Vec<String> = a
            .params
            .iter()
            .map(|p| format!("{}: {}", p.name, types.display(&p.ty)))
            .collect();
        let outputs: Vec<String> = a
            .outputs
            .iter()
            .map(|p| format!("{}: {}", p.name, types.display(&p.ty)))
            .collect();
        canonical.push_str(&format!(
            "{} {}({}) -> ({})\n",
            a.kind.label(),
            a.name,
            params.join(", "),
            outputs.join(", ")
        ));
    }
    let inputs: Vec<String> = workflow
        .inputs
        .iter()
        .map(|v| {
            let var = workflow.var(*v);
            format!(
                "{}: {} @ {}",
                var.name,
                types.display(&var.ty),
                workflow.lifeline(var.lifeline).name
            )
        })
        .collect();
    let lifelines: Vec<&str> = workflow.lifelines.iter().map(|l| l.name.as_str()).collect();
    canonical.push_str(&format!(
        "workflow {}({}) lifelines {}\n",
        workflow.name,
        inputs.join(", "),
        lifelines.join(", ")
    ));
    canonical.push_str(&names.block(&workflow.body, 1));
    (
        format!("{:016x}", codec::fnv64(canonical.as_bytes())),
        canonical,
    )
}

/// Explains how two canonical forms differ: the first line that changed.
pub fn explain_change(old: &str, new: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    let i = a
        .iter()
        .zip(&b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    let shown = |l: Option<&&str>| l.map_or("(nothing)".to_owned(), |s| format!("`{}`", s.trim()));
    format!(
        "the first difference is at line {} of the canonical form: was {}, now {}",
        i + 1,
        shown(a.get(i)),
        shown(b.get(i))
    )
}

/// What a new run records.
#[derive(Debug, Clone)]
pub struct NewRun {
    pub workflow: String,
    pub file: Option<String>,
    pub source: String,
    pub fingerprint: String,
    /// The canonical form the fingerprint is taken of, to explain changes.
    pub canonical: String,
    pub inputs_json: String,
    pub inputs: Vec<troupe_check::Value>,
    pub seed: u64,
    pub lifelines: usize,
    /// The default model's spec, as shown in listings.
    pub llm: String,
    /// The run's settings (models, seed, timeouts, durability) as JSON,
    /// used again when it resumes.
    pub settings: String,
    /// The lease the new run is created under: `(owner, lease)`. `None`
    /// records it `queued` for any process to claim.
    pub owner: Option<(String, std::time::Duration)>,
    /// A placed run's parts (none: the run runs whole). A placed run is
    /// queued for its parts' workers, whatever `owner` says.
    pub parts: Vec<NewPart>,
}

/// Inserts the row of a new run (not its parts) with `status`, claimed by
/// `owner` for `lease_ms` or not; its id.
pub(crate) fn insert_run(
    db: &mut dyn db::Db,
    run: &NewRun,
    status: RunStatus,
    owner: Option<&str>,
    lease_ms: i64,
) -> Result<i64, db::DbError> {
    let mut bin = Vec::new();
    codec::encode_values(&mut bin, &run.inputs);
    db.query_one(
        &format!(
            "INSERT INTO runs(workflow, file, source, fingerprint, canonical, inputs, inputs_bin, seed, lifelines, status, llm, settings, lease_owner, lease_expires, uid)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, CASE WHEN CAST(?13 AS TEXT) IS NULL THEN 0 ELSE {NOW_MS} + ?14 END, ?15)
             RETURNING id"
        ),
        args![
            &run.workflow,
            &run.file,
            &run.source,
            &run.fingerprint,
            &run.canonical,
            &run.inputs_json,
            bin,
            run.seed as i64,
            run.lifelines as i64,
            status.as_str(),
            &run.llm,
            &run.settings,
            owner,
            lease_ms,
            new_uid(),
        ],
    )?
    .get(0)
}

impl Store {
    /// Records a new run (durably) and returns its id. With an owner, the
    /// run is created already claimed by it, in the same statement.
    pub fn create_run(&self, run: &NewRun) -> Result<i64, StoreError> {
        self.create_run_then(run, |_, _| Ok(()))
    }

    /// [`Store::create_run`], doing `then` with the new run's id in the
    /// same transaction.
    pub(crate) fn create_run_then(
        &self,
        run: &NewRun,
        then: impl FnOnce(&mut dyn db::Db, i64) -> Result<(), db::DbError>,
    ) -> Result<i64, StoreError> {
        let (status, owner, lease_ms) = match &run.owner {
            Some((owner, lease)) if run.parts.is_empty() => (
                RunStatus::Running,
                Some(owner.as_str()),
                lease::millis(*lease),
            ),
            _ => (RunStatus::Queued, None, 0),
        };
        let queued = owner.is_none();
        let id = self.transaction("create the run", |db| {
            let id = insert_run(db, run, status, owner, lease_ms)?;
            if !run.parts.is_empty() {
                placement::insert_parts(db, id, &run.parts)?;
            }
            then(db, id)?;
            Ok(id)
        })?;
        if queued {
            postgres::wake(self, id);
        }
        Ok(id)
    }

    /// The journal of `run`, loaded with what it already recorded.
    pub fn journal(
        &self,
        run: i64,
        types: Arc<troupe_check::TypeTable>,
    ) -> Result<Arc<StoreJournal>, StoreError> {
        self.journal_with(run, types, JournalOptions::default())
    }

    /// [`Store::journal`], with its history kept and checkpointed as
    /// `options` say.
    pub fn journal_with(
        &self,
        run: i64,
        types: Arc<troupe_check::TypeTable>,
        options: JournalOptions,
    ) -> Result<Arc<StoreJournal>, StoreError> {
        journal::StoreJournal::open(self, run, types, options).map(Arc::new)
    }

    /// Parses `run-7` or `7`.
    pub fn parse_run_id(text: &str) -> Option<i64> {
        text.trim().trim_start_matches("run-").parse().ok()
    }

    pub fn run_name(id: i64) -> String {
        format!("run-{id}")
    }

    pub(crate) fn task_row_id(&self, run: i64, key: &str) -> Result<Option<i64>, StoreError> {
        self.with("find the task", |db| {
            db.query_opt(
                "SELECT id FROM tasks WHERE run = ?1 AND key = ?2",
                args![run, key],
            )?
            .map(|r| r.get(0))
            .transpose()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite_schema::{APPLICATION_ID, SCHEMA, SCHEMA_VERSION};

    fn version(path: &Path) -> i64 {
        Connection::open(path)
            .unwrap()
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap()
    }

    /// A cached query that could match a partial index's condition with
    /// its bound value (`tasks_due`: `status = 'pending'`) is not planned
    /// again each time it is reused: the store's connections have the
    /// query planner's stability guarantee (see `Store::connect`).
    #[test]
    fn a_cached_query_is_not_prepared_again_on_reuse() {
        use rusqlite::StatementStatus;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        drop(Store::open(&path, Durability::Full).unwrap());
        let conn = Store::connect(&path, Durability::Full).unwrap();
        let sql = "SELECT count(*) FROM tasks WHERE run = ?1 AND status = ?2";
        for _ in 0..3 {
            let n: i64 = conn
                .prepare_cached(sql)
                .unwrap()
                .query_row(rusqlite::params![1, "pending"], |r| r.get(0))
                .unwrap();
            assert_eq!(n, 0);
        }
        let stmt = conn.prepare_cached(sql).unwrap();
        assert_eq!(stmt.get_status(StatementStatus::RePrepare), 0);
    }

    #[test]
    fn an_older_store_is_migrated_and_a_newer_one_refused() {
        let dir = tempfile::tempdir().unwrap();
        // A store as the first troupe wrote it, with a run in it.
        let old = dir.path().join("v1.db");
        let conn = Connection::open(&old).unwrap();
        conn.execute_batch(&format!(
            "{SCHEMA} PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = 1;
             INSERT INTO runs(workflow, source, fingerprint, canonical, inputs, inputs_bin, seed, lifelines, status)
             VALUES ('w', 'src', 'f', 'c', '{{}}', x'', 0, 1, 'running');"
        ))
        .unwrap();
        drop(conn);
        let store = Store::open(&old, Durability::Full).unwrap();
        assert_eq!(version(&old), SCHEMA_VERSION);
        let runs = store.runs(None).unwrap();
        // Its old owner (a process id) means nothing now: it is stalled.
        assert_eq!(runs[0].status, RunStatus::Stalled);
        assert_eq!(runs[0].owner, None);
        drop(store);
        // Opening again changes nothing.
        Store::open(&old, Durability::Full).unwrap();
        assert_eq!(version(&old), SCHEMA_VERSION);

        let newer = dir.path().join("v99.db");
        Store::open(&newer, Durability::Full).unwrap();
        Connection::open(&newer)
            .unwrap()
            .execute_batch("PRAGMA user_version = 99")
            .unwrap();
        let e = Store::open(&newer, Durability::Full).unwrap_err();
        assert!(matches!(e, StoreError::Newer { found: 99, .. }), "{e}");
        assert!(e.to_string().contains("newer troupe"), "{e}");
    }

    #[test]
    fn an_empty_file_becomes_a_private_store() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("touched.db");
        std::fs::write(&path, b"").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        Store::open(&path, Durability::Full).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn exactly_one_of_many_claims_wins_until_the_lease_expires() {
        let dir = tempfile::tempdir().unwrap();
        for (store, _db) in testing::both(dir.path(), Durability::Normal) {
            let run = store.create_run(&testing::bare_run("")).unwrap();
            // Long enough that no stall of a loaded machine expires it early.
            let lease = std::time::Duration::from_secs(2);
            let wins: Vec<bool> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..8)
                    .map(|i| {
                        let store = store.clone();
                        s.spawn(move || {
                            store.claim(run, &format!("owner-{i}"), lease).unwrap()
                                == Claim::Claimed
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            assert_eq!(wins.iter().filter(|w| **w).count(), 1, "{wins:?}");
            let winner = format!("owner-{}", wins.iter().position(|w| *w).unwrap());
            assert!(matches!(
                store.claim(run, "late", lease).unwrap(),
                Claim::Owned { owner, .. } if owner == winner
            ));
            assert_eq!(
                store.renew(run, "late", lease).unwrap(),
                Renewal::Lost,
                "only the owner renews"
            );
            assert_eq!(
                store.renew(run, &winner, lease).unwrap(),
                Renewal::Held { cancel: None }
            );
            // The owner stops renewing: after the lease, another may claim.
            std::thread::sleep(lease + std::time::Duration::from_millis(200));
            assert_eq!(store.claim(run, "late", lease).unwrap(), Claim::Claimed);
            assert_eq!(store.renew(run, &winner, lease).unwrap(), Renewal::Lost);
        }
    }
}
