//! The SQLite store's schema: the first schema, its migrations in order,
//! and how a file becomes a store (created private, initialized, migrated,
//! or refused when it is not a troupe store or a newer troupe wrote it).
//! PostgreSQL's spelling of the same schema is in `postgres.rs`; the two
//! are compared column by column by `schemas_agree.rs`.

use crate::StoreError;
use rusqlite::Connection;
use std::path::Path;

/// `PRAGMA application_id` of troupe stores ("trup").
pub(crate) const APPLICATION_ID: i64 = 0x7472_7570;
/// The schema version this build writes; older stores are migrated on open.
pub(crate) const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64 + 1;

/// The first schema; [`MIGRATIONS`] bring it to [`SCHEMA_VERSION`]. A new
/// store is created by running both, so that old and new stores can never
/// differ.
pub(crate) const SCHEMA: &str = "
CREATE TABLE runs(
  id INTEGER PRIMARY KEY,
  workflow TEXT NOT NULL,
  file TEXT,
  source TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  canonical TEXT NOT NULL,
  inputs TEXT NOT NULL,
  inputs_bin BLOB NOT NULL,
  seed INTEGER NOT NULL,
  lifelines INTEGER NOT NULL,
  status TEXT NOT NULL,
  result TEXT,
  error TEXT,
  llm TEXT,
  owner_pid INTEGER,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
);
CREATE INDEX runs_status ON runs(status);
CREATE TABLE events(
  run INTEGER NOT NULL REFERENCES runs(id),
  chunk INTEGER NOT NULL,
  count INTEGER NOT NULL,
  data BLOB NOT NULL,
  PRIMARY KEY(run, chunk)
) WITHOUT ROWID;
CREATE TABLE steps(
  run INTEGER NOT NULL REFERENCES runs(id),
  key TEXT NOT NULL,
  kind TEXT NOT NULL,
  lifeline TEXT NOT NULL,
  action TEXT NOT NULL,
  input_hash TEXT NOT NULL,
  status TEXT NOT NULL,
  outputs BLOB,
  outputs_json TEXT,
  started_at TEXT,
  finished_at TEXT,
  PRIMARY KEY(run, key)
) WITHOUT ROWID;
CREATE TABLE tasks(
  id INTEGER PRIMARY KEY,
  run INTEGER NOT NULL REFERENCES runs(id),
  key TEXT NOT NULL,
  lifeline TEXT NOT NULL,
  action TEXT NOT NULL,
  kind TEXT NOT NULL,
  prompt TEXT NOT NULL,
  prefill TEXT,
  options TEXT NOT NULL,
  type TEXT NOT NULL,
  status TEXT NOT NULL,
  answer TEXT,
  answered_by TEXT,
  created_at TEXT NOT NULL,
  answered_at TEXT,
  UNIQUE(run, key)
);
CREATE INDEX tasks_status ON tasks(status);
";

/// Schema changes, in order: `MIGRATIONS[i]` takes a store from version
/// `i + 1` to `i + 2`. Each runs in the transaction that sets the new
/// `user_version`, so a crash leaves the old or the new schema.
pub(crate) const MIGRATIONS: &[&str] = &[
    // 2: leases instead of owner PIDs, a run's settings, cancellation,
    // typed tasks, and the notification adapters' tables (once created by
    // `troupe serve` itself).
    "
ALTER TABLE runs ADD COLUMN settings TEXT NOT NULL DEFAULT '{}';
ALTER TABLE runs ADD COLUMN lease_owner TEXT;
ALTER TABLE runs ADD COLUMN lease_expires INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN cancel_requested TEXT;
ALTER TABLE tasks ADD COLUMN schema TEXT;
CREATE INDEX tasks_run ON tasks(run);
CREATE TABLE IF NOT EXISTS notify_announced(
  channel TEXT NOT NULL,
  task INTEGER NOT NULL,
  short TEXT NOT NULL,
  secret TEXT,
  place TEXT,
  text TEXT,
  closed INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  PRIMARY KEY(channel, task)
);
CREATE UNIQUE INDEX IF NOT EXISTS notify_announced_short ON notify_announced(channel, short);
CREATE INDEX IF NOT EXISTS notify_announced_place ON notify_announced(channel, place);
CREATE TABLE IF NOT EXISTS notify_state(
  channel TEXT NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY(channel, key)
);
",
    // 3: checkpoints (resume from the latest instead of replaying the
    // history; retention keeps the events from one on), and steps numbered
    // in the order they were first recorded, so that a resumed run reads
    // only the steps after its checkpoint.
    "
CREATE TABLE checkpoints(
  run INTEGER NOT NULL REFERENCES runs(id),
  seq INTEGER NOT NULL,
  chunk INTEGER NOT NULL,
  fingerprint TEXT NOT NULL,
  steps_mark INTEGER NOT NULL,
  data BLOB NOT NULL,
  PRIMARY KEY(run, seq)
) WITHOUT ROWID;
ALTER TABLE steps ADD COLUMN seq INTEGER;
CREATE INDEX steps_seq ON steps(run, seq);
ALTER TABLE runs ADD COLUMN pruned INTEGER NOT NULL DEFAULT 0;
",
    // 4: model calls, as they happened (prompt, answer, tokens, cost).
    "
CREATE TABLE llm_calls(
  id INTEGER PRIMARY KEY,
  run INTEGER NOT NULL REFERENCES runs(id),
  step TEXT NOT NULL,
  model TEXT NOT NULL,
  system TEXT,
  prompt TEXT NOT NULL,
  answer TEXT,
  outputs TEXT,
  input_tokens INTEGER,
  output_tokens INTEGER,
  cached_input_tokens INTEGER,
  latency_ms INTEGER NOT NULL,
  attempts INTEGER NOT NULL,
  retries TEXT NOT NULL,
  cost_usd REAL,
  error TEXT,
  created_at TEXT NOT NULL
);
CREATE INDEX llm_calls_run ON llm_calls(run);
",
    // 5: the workers of a fleet (`troupe worker`), as they announce
    // themselves; PostgreSQL stores have them from the start.
    "
CREATE TABLE workers(
  id TEXT PRIMARY KEY,
  host TEXT NOT NULL,
  pid INTEGER NOT NULL,
  labels TEXT NOT NULL,
  started_at TEXT NOT NULL,
  seen INTEGER NOT NULL,
  running INTEGER NOT NULL DEFAULT 0,
  claimed INTEGER NOT NULL DEFAULT 0,
  stopping INTEGER NOT NULL DEFAULT 0
);
",
    // 6: placed runs, whose lifelines run in parts on labelled workers: the
    // parts with their leases, and the messages between parts.
    "
ALTER TABLE runs ADD COLUMN placed INTEGER NOT NULL DEFAULT 0;
CREATE TABLE parts(
  run INTEGER NOT NULL REFERENCES runs(id),
  part INTEGER NOT NULL,
  label TEXT NOT NULL,
  lifelines TEXT NOT NULL,
  status TEXT NOT NULL,
  lease_owner TEXT,
  lease_expires INTEGER NOT NULL DEFAULT 0,
  result TEXT,
  PRIMARY KEY(run, part)
);
CREATE INDEX parts_open ON parts(status, label);
CREATE TABLE messages(
  run INTEGER NOT NULL REFERENCES runs(id),
  sender INTEGER NOT NULL,
  receiver INTEGER NOT NULL,
  lane INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  data BLOB NOT NULL,
  PRIMARY KEY(run, sender, receiver, lane, seq)
);
",
    // 7: the latest checkpoint of each part of a placed run; the runs
    // being cancelled, for workers' sweeps.
    "
CREATE TABLE part_checkpoints(
  run INTEGER NOT NULL REFERENCES runs(id),
  part INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  chunk INTEGER NOT NULL,
  fingerprint TEXT NOT NULL,
  steps_mark INTEGER NOT NULL,
  data BLOB NOT NULL,
  PRIMARY KEY(run, part)
);
CREATE INDEX runs_cancelling ON runs(id) WHERE cancel_requested IS NOT NULL;
",
    // 8: a run's identity across stores (`RunDetail::uid`), in every
    // idempotency key it hands out; runs recorded before get one now.
    "
ALTER TABLE runs ADD COLUMN uid TEXT;
UPDATE runs SET uid = lower(hex(randomblob(16))) WHERE uid IS NULL;
CREATE UNIQUE INDEX runs_uid ON runs(uid);
",
    // 9: a pause asked of a run's live owner (`troupe pause`); the run a
    // run was forked from, and the step it ran live from (`troupe fork`).
    "
ALTER TABLE runs ADD COLUMN pause_requested INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN forked_from INTEGER;
ALTER TABLE runs ADD COLUMN forked_at TEXT;
",
    // 10: human tasks' deadlines: when (the store's clock, in ms) and
    // what the clock answers.
    "
ALTER TABLE tasks ADD COLUMN due_at INTEGER;
ALTER TABLE tasks ADD COLUMN default_answer TEXT;
CREATE INDEX tasks_due ON tasks(due_at) WHERE status = 'pending' AND due_at IS NOT NULL;
",
    // 11: durable timers (`sleep`): when each falls due, on the store's
    // clock (`timer.rs`).
    "
CREATE TABLE timers(
  run INTEGER NOT NULL REFERENCES runs(id),
  key TEXT NOT NULL,
  due_at INTEGER NOT NULL,
  PRIMARY KEY(run, key)
);
",
    // 12: reminders (`remind:` on `human`): how often a pending task is
    // announced again, from when it was asked (the store's clock, in ms),
    // and how many reminders each channel sent (`announce.rs`).
    "
ALTER TABLE tasks ADD COLUMN remind_ms INTEGER;
ALTER TABLE tasks ADD COLUMN asked_ms INTEGER;
ALTER TABLE notify_announced ADD COLUMN reminders INTEGER NOT NULL DEFAULT 0;
",
    // 13: schedules' ticks (`[[schedule]]`): one row per schedule and tick,
    // so that each tick starts one run (`schedule.rs`).
    "
CREATE TABLE schedule_ticks(
  schedule TEXT NOT NULL,
  tick INTEGER NOT NULL,
  run INTEGER,
  PRIMARY KEY(schedule, tick)
);
",
    // 14: a workflow's runs by status, and the finished runs by version
    // and inputs, for `troupe run FILE --store`'s search for a run to
    // continue (`Store::continuable`): its cost must not grow with the
    // store's finished runs.
    "
CREATE INDEX runs_workflow ON runs(workflow, status);
CREATE INDEX runs_done ON runs(fingerprint, inputs) WHERE status = 'done';
",
    // 15: a run's versions (`troupe upgrade`): each version it moved away
    // from, with its source, the events recorded under it and where each
    // lifeline stood when it moved; the run's current version number.
    "
CREATE TABLE run_versions(
  run INTEGER NOT NULL REFERENCES runs(id),
  version INTEGER NOT NULL,
  workflow TEXT NOT NULL,
  file TEXT,
  source TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  canonical TEXT NOT NULL,
  cut TEXT NOT NULL,
  events BLOB NOT NULL,
  moved_at TEXT NOT NULL,
  PRIMARY KEY(run, version)
);
ALTER TABLE runs ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
",
    // 16: idempotency keys of the runs clients started (an MCP call that
    // carries one starts at most one run).
    "
CREATE TABLE run_keys(
  key TEXT PRIMARY KEY,
  run INTEGER NOT NULL REFERENCES runs(id)
);
",
];

/// Creates the file with mode 0600 if it does not exist yet. An existing
/// empty file (one `touch`ed, or left by an interrupted creation) is about
/// to become a store: its mode is made 0600 first, so that runs never land
/// in a file others can read.
pub(crate) fn create_private(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let meta = std::fs::metadata(path)?;
            if meta.is_file() && meta.len() == 0 && meta.permissions().mode() & 0o077 != 0 {
                std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
            }
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// Creates the schema in a new file, migrates an older store, and refuses
/// a file that is not a troupe store or that a newer troupe wrote.
pub(crate) fn initialize(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let sql = |e| StoreError::from_sql(path, "read the schema", e);
    // Look and create under one write lock: two processes opening a new
    // file at once must not both create the schema.
    conn.execute_batch("BEGIN IMMEDIATE").map_err(sql)?;
    let looked = (|| -> Result<i64, StoreError> {
        let app: i64 = conn
            .query_row("PRAGMA application_id", [], |r| r.get(0))
            .map_err(sql)?;
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(sql)?;
        let tables: i64 = conn
            .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
            .map_err(sql)?;
        if app == 0 && tables == 0 {
            conn.execute_batch(&format!(
                "{SCHEMA} PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = 1;"
            ))
            .map_err(|e| StoreError::from_sql(path, "create the schema", e))?;
            return Ok(1);
        }
        if app != APPLICATION_ID {
            let why = if app == 0 {
                "an SQLite database of another program".to_owned()
            } else {
                format!("application id {app:#x}")
            };
            return Err(StoreError::Foreign {
                path: path.to_owned(),
                why,
            });
        }
        Ok(version)
    })();
    let version = match looked {
        Ok(v) => {
            conn.execute_batch("COMMIT").map_err(sql)?;
            v
        }
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            return Err(e);
        }
    };
    if version > SCHEMA_VERSION {
        return Err(StoreError::Newer {
            path: path.to_owned(),
            found: version,
            known: SCHEMA_VERSION,
        });
    }
    migrate(conn, path, version)
}

/// Brings a store from `version` to [`SCHEMA_VERSION`], one migration per
/// transaction. Two processes opening an old store at once: the second
/// waits for the first's `BEGIN IMMEDIATE`, then finds the new version.
fn migrate(conn: &Connection, path: &Path, mut version: i64) -> Result<(), StoreError> {
    while version < SCHEMA_VERSION {
        let step = |e| StoreError::from_sql(path, "migrate the store", e);
        conn.execute_batch("BEGIN IMMEDIATE").map_err(step)?;
        let current: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(step)?;
        if current != version {
            // Another process migrated meanwhile.
            conn.execute_batch("COMMIT").map_err(step)?;
            version = current;
            continue;
        }
        let sql = MIGRATIONS[(version - 1) as usize];
        let next = version + 1;
        let result = conn.execute_batch(&format!("{sql} PRAGMA user_version = {next};"));
        match result {
            Ok(()) => conn.execute_batch("COMMIT").map_err(step)?,
            Err(e) => {
                let _ = conn.execute_batch("ROLLBACK");
                return Err(step(e));
            }
        }
        tracing::info!(path = %path.display(), from = version, to = next, "migrated the store");
        version = next;
    }
    Ok(())
}
