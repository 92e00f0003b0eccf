//! Durable runs, as thin layers over `troupe-host`: `run --store`, `resume`,
//! `retry`, `cancel`, `delete`, `answer`, `resolve`. This module parses
//! arguments and renders results; the host owns the lifecycle.//!
//! This file holds the store and host setup and `troupe run --store`;
//! `lifecycle.rs` the commands that act on a recorded run (resume, retry,
//! cancel, delete, answer, resolve) and `report.rs` how notices, errors
//! and a run's end are told.

use crate::ExitStatus;
use crate::commands::run::RunArgs;
use crate::terminal::sanitize;
use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use troupe_host::{
    DurabilitySetting, Host, HostConfig, HostError, Overrides, RunSettings, StartPolicy,
};
use troupe_store::{Durability, Store};

mod lifecycle;
mod report;

pub use lifecycle::{
    AnswerArgs, CancelArgs, DeleteArgs, ResolveArgs, ResumeArgs, RetryArgs, answer, cancel, delete,
    resolve, resume, retry,
};
pub(crate) use report::{note_diagnostics, report};
pub use report::{print_notice, print_warnings, report_error};

/// The store used when nothing names one.
pub use troupe_host::DEFAULT_STORE;

/// The environment variable that sets the lease (e.g. `TROUPE_LEASE=5s`).
pub const LEASE_ENV: &str = "TROUPE_LEASE";
/// The owner id of a `--detach`ing parent, whose lease its child takes over.
const OWNER_ENV: &str = "TROUPE_LEASE_OWNER";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum DurabilityArg {
    /// `synchronous=FULL`: every durable record survives a power loss.
    #[default]
    Full,
    /// `synchronous=NORMAL`: survives a crash of troupe; a power loss may
    /// lose the last commits. Faster.
    Normal,
}

impl From<DurabilityArg> for DurabilitySetting {
    fn from(d: DurabilityArg) -> DurabilitySetting {
        match d {
            DurabilityArg::Full => DurabilitySetting::Full,
            DurabilityArg::Normal => DurabilitySetting::Normal,
        }
    }
}

/// `--store DB`, for the commands that read a store.
#[derive(Debug, Args)]
pub struct StoreArg {
    /// The store: an SQLite file, or a PostgreSQL database that many
    /// processes share (`postgres://user@host/db`). Without it:
    /// `$TROUPE_STORE`, then `[store] path` in troupe.toml, then the file
    /// below.
    #[arg(long, value_name = "DB", default_value = DEFAULT_STORE)]
    pub store: PathBuf,
}

/// The store to use: `--store` when given, else `TROUPE_STORE`, else
/// `[store] path` in `troupe.toml`, else the default file (the host's one
/// resolution, `troupe_host::store_address`).
pub fn store_address(given: &Path) -> Result<PathBuf> {
    Ok(troupe_host::store_address(Some(given), Path::new("."))?)
}

impl StoreArg {
    pub fn open(&self) -> Result<Store> {
        let store = store_address(&self.store)?;
        if !troupe_store::exists(&store) {
            anyhow::bail!(
                "no store at {}; runs are recorded with `troupe run FILE --store {}`",
                store.display(),
                store.display()
            );
        }
        open_store(&store, Durability::Full)
    }

    pub fn host(&self) -> Result<Host> {
        host(self.open()?)
    }
}

pub fn run_id(text: &str) -> Result<i64> {
    Store::parse_run_id(text).with_context(|| format!("`{text}` is not a run id (e.g. run-3 or 3)"))
}

/// The host configuration of this process: the lease from `TROUPE_LEASE`,
/// the owner id (adopted from a `--detach`ing parent), notices on stderr.
pub fn host_config() -> Result<HostConfig> {
    let mut config = HostConfig::new(std::env::current_dir()?);
    if let Ok(text) = std::env::var(LEASE_ENV) {
        let lease = humantime::parse_duration(&text)
            .with_context(|| format!("{LEASE_ENV}={text:?} is not a duration such as 15s"))?;
        if lease < std::time::Duration::from_millis(300) || lease.as_secs() > 86_400 {
            anyhow::bail!("{LEASE_ENV} must be between 300ms and 24h, not {text}");
        }
        config.lease = lease;
    }
    // A `--detach`ed child: its parent claimed the run, and the child
    // takes the lease over under its own id (the parent's process ends).
    if let Ok(parent) = std::env::var(OWNER_ENV) {
        config.adopt = Some(parent);
    }
    // SIGINT and SIGTERM stop this process's runs at a step boundary.
    config.interrupt = Some(crate::signals::interrupt());
    config.observer = Some(Arc::new(print_notice));
    Ok(config)
}

fn host(store: Store) -> Result<Host> {
    Ok(Host::new(
        store,
        host_config()?,
        Arc::new(troupe_mcp::McpTools),
    ))
}
/// The store this process opened, for the hints of [`store_hint`].
static STORE_PATH: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Opens the store at `path`; an error says, when it is so, that the
/// store's file, directory or file system is read-only and what to do.
pub fn open_store(path: &Path, durability: Durability) -> Result<Store> {
    let _ = STORE_PATH.set(path.to_owned());
    Store::open(path, durability).map_err(|e| {
        let message = e.to_string();
        match store_hint(&message) {
            Some(hint) => anyhow::anyhow!("{message}\n  hint: {hint}"),
            None => e.into(),
        }
    })
}

/// A hint for an error that a read-only store explains: the file is not
/// writable (mode 0400), its directory is not (SQLite creates the journal
/// files `DB-wal` and `DB-shm` beside it), or the file system is mounted
/// read-only. Probes the store that this process opened; `None` when the
/// error is of another kind or the store is writable after all.
pub fn store_hint(message: &str) -> Option<String> {
    let lower = message.to_ascii_lowercase();
    let about_access = [
        "readonly",
        "read-only",
        "permission denied",
        "os error 13",
        "os error 30",
        "unable to open database file",
    ]
    .iter()
    .any(|s| lower.contains(s));
    if !about_access {
        return None;
    }
    read_only_reason(STORE_PATH.get()?)
}

fn read_only_reason(path: &Path) -> Option<String> {
    use std::io::ErrorKind;
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| format!(" (mode {:04o})", m.permissions().mode() & 0o7777))
            .unwrap_or_default()
    };
    let read_only_fs = |p: &Path| {
        format!(
            "{} is on a read-only file system; copy the store to a writable disk and pass that copy with --store (reading commands such as `troupe runs` may still work on this one)",
            p.display()
        )
    };
    if path.exists() {
        match std::fs::OpenOptions::new().write(true).open(path) {
            Err(e) if e.kind() == ErrorKind::ReadOnlyFilesystem => return Some(read_only_fs(path)),
            Err(e) if e.kind() == ErrorKind::PermissionDenied => {
                return Some(format!(
                    "the store file {}{} is read-only: `chmod u+w {}` to record in it, or pass a writable copy with --store (reading commands such as `troupe runs` still work)",
                    path.display(),
                    mode(path),
                    path.display()
                ));
            }
            _ => {}
        }
    }
    // The directory that holds (or would hold) the store: its nearest
    // existing ancestor must let us create files.
    let mut dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_owned();
    while !dir.exists() {
        dir = dir
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_owned);
    }
    let probe = dir.join(format!(".troupe-write-probe-{}", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            None
        }
        Err(e) if e.kind() == ErrorKind::ReadOnlyFilesystem => Some(read_only_fs(&dir)),
        Err(e) if e.kind() == ErrorKind::PermissionDenied => Some(format!(
            "the directory {}{} is not writable, and the store needs it for its file and the journal files beside it ({}-wal, {}-shm): `chmod u+w {}`, or pass --store with a path in a writable directory",
            dir.display(),
            mode(&dir),
            path.display(),
            path.display(),
            dir.display()
        )),
        Err(_) => None,
    }
}
pub(crate) fn read_answers(
    path: Option<&Path>,
) -> Result<Option<serde_json::Map<String, serde_json::Value>>> {
    let Some(path) = path else { return Ok(None) };
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(Some(
        troupe_host::scripted_answers(&text).with_context(|| path.display().to_string())?,
    ))
}
/// The run settings of `troupe run`'s flags.
pub fn settings_of(args: &RunArgs) -> RunSettings {
    RunSettings {
        llm: args.llm.clone(),
        llm_for: args.llm_for.clone(),
        seed: args.seed,
        timeout_ms: args.timeout.map(|t| t.as_millis() as u64),
        durability: args.durability.into(),
        mock_externs: args.mock_externs,
        history_keep: args.history_keep,
        checkpoint_every: args.checkpoint_every,
        overrides: Vec::new(),
        placement: args.place.iter().cloned().collect(),
    }
}

/// Where a queued run's lifelines run: `[placement]` of `troupe.toml`
/// (only the lifelines `workflow` has: the table serves a whole project),
/// then `--place` on top.
fn placement_of(
    args: &RunArgs,
    workflow: &troupe_check::ir::Workflow,
) -> Result<std::collections::BTreeMap<String, String>> {
    let mut placement = std::collections::BTreeMap::new();
    if let Ok(text) = std::fs::read_to_string(troupe_llm::config::CONFIG_FILE) {
        let table: toml::Table = text
            .parse()
            .with_context(|| format!("cannot read {}", troupe_llm::config::CONFIG_FILE))?;
        if let Some(t) = table.get("placement") {
            let toml::Value::Table(t) = t else {
                anyhow::bail!(
                    "{}: [placement] must be a table of LIFELINE = \"LABEL\"",
                    troupe_llm::config::CONFIG_FILE
                );
            };
            for (lifeline, label) in t {
                let toml::Value::String(label) = label else {
                    anyhow::bail!(
                        "{}: [placement] {lifeline} must be a label, as a string (e.g. {lifeline} = \"eu\")",
                        troupe_llm::config::CONFIG_FILE
                    );
                };
                if workflow.lifelines.iter().any(|l| &l.name == lifeline) {
                    placement.insert(lifeline.clone(), label.clone());
                }
            }
        }
    }
    placement.extend(args.place.iter().cloned());
    Ok(placement)
}

/// `--history-keep EVENTS`: a count of at least 1,000 (fewer would prune
/// at nearly every checkpoint).
pub fn parse_history_keep(s: &str) -> Result<u64, String> {
    let n: u64 =
        s.trim().replace('_', "").parse().map_err(|_| {
            format!("{s:?} is not a count of events: give e.g. 1000000 or 1_000_000")
        })?;
    if n < 1_000 {
        return Err(format!("{n} is too few: keep at least 1000 events"));
    }
    Ok(n)
}

/// `troupe run FILE --store DB`.
pub fn run(args: &RunArgs, store_path: &Path, color: crate::ColorChoice) -> Result<ExitStatus> {
    let settings = settings_of(args);
    // With --json, a failure is also one JSON object on stdout.
    let report_error = |e: &HostError, color| -> Result<ExitStatus> {
        let status = report_error(e, color);
        if args.json {
            let doc = crate::commands::run::host_error_json(e, &args.file);
            crate::out::println(&doc.to_string())?;
        }
        Ok(status)
    };
    let compiled = match args.compile() {
        Ok(c) => c,
        Err(e) => return report_error(&e, color),
    };
    print_warnings(&compiled, color);
    let json_inputs = args
        .input_json
        .as_deref()
        .map(serde_json::from_str::<serde_json::Value>)
        .transpose()
        .context("--input-json is not valid JSON")?;
    let inputs = match compiled.parse_inputs(&args.inputs, json_inputs.as_ref()) {
        Ok(i) => i,
        Err(e) => return report_error(&e, color),
    };
    let mut settings = settings;
    if args.detach {
        settings.placement = placement_of(args, compiled.workflow())?;
    }
    let placed = !settings.placement.is_empty();
    let store_path = &store_address(store_path)?;
    let store = open_store(store_path, settings.durability.into())?;
    let host = host(store)?;
    if args.detach && (placed || host.store().dialect() == troupe_store::Dialect::Postgres) {
        // A shared store: queue the run for the workers (`troupe worker`).
        let started = match host.enqueue(&compiled, inputs, &settings) {
            Ok(s) => s,
            Err(e) => return report_error(&e, color),
        };
        crate::out::println(&started.name)?;
        let labels: std::collections::BTreeSet<&String> = settings.placement.values().collect();
        let whom = if placed {
            let labels: Vec<&str> = labels.iter().map(|l| l.as_str()).collect();
            format!(
                "in parts for workers labelled {} (`troupe worker --labels …`)",
                labels.join(", ")
            )
        } else {
            "for a worker (`troupe worker --store …`)".to_owned()
        };
        crate::note!(
            "queued {} in {} {whom}; follow it with `troupe status {}`",
            started.name,
            host.store().shown().display(),
            started.name
        );
        return Ok(ExitStatus::Success);
    }
    let policy = if args.new {
        StartPolicy::New
    } else {
        StartPolicy::ResumeSame
    };
    let started = match host.start(&compiled, inputs, &settings, policy) {
        Ok(s) => s,
        Err(e) => return report_error(&e, color),
    };
    let name = &started.name;
    if started.finished {
        return done_already(&host, &started, args.json);
    }
    if args.detach {
        return detach(&host, store_path, name, args);
    }
    if started.resumed {
        crate::note!(
            "continuing {name} (unfinished, same workflow and inputs); pass --new to start another run"
        );
    } else {
        crate::note!("recording {name} in {}", host.store().shown().display());
    }
    let answers = read_answers(args.answers.as_deref())?;
    let overrides = Overrides::default();
    let drive = host.drive(started.run, &overrides, answers);
    let finished = match crate::signals::block_on("the run", drive)? {
        Ok(f) => f,
        Err(e) => return report_error(&e, color),
    };
    report(&finished, args.json)
}

/// Reports a run that is done already, as `troupe run` of the same
/// workflow and inputs finds it: its recorded results, verified again;
/// nothing is performed (a supervisor's restart is harmless).
fn done_already(host: &Host, started: &troupe_host::Started, json: bool) -> Result<ExitStatus> {
    let name = &started.name;
    let summary = host.store().run(started.run)?.summary;
    let results = summary.result.unwrap_or(serde_json::Value::Null);
    let verified = host.verify(started.run)?;
    if json {
        let doc = serde_json::json!({
            "run": name,
            "status": "done",
            "results": results,
            "verified": verified.is_ok(),
            "rerun": true,
        });
        crate::out::println(&serde_json::to_string_pretty(&doc)?)?;
    } else if let serde_json::Value::Object(results) = &results {
        let mut text = String::new();
        for (k, v) in results {
            let shown = match v {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            text += &format!("{k} = {}\n", sanitize(&shown));
        }
        crate::out::print(&text)?;
    }
    crate::note!(
        "{name} ran to its end already with the same workflow and inputs; nothing was performed again (pass --new to start another run)"
    );
    match verified {
        Ok(_) => Ok(ExitStatus::Success),
        Err(e) => {
            crate::note!("error: {}", sanitize(&e));
            Ok(ExitStatus::Failure)
        }
    }
}

/// Hands the claimed run to a child process that adopts this process's
/// lease (its owner id), so no other process can take it in between.
fn detach(host: &Host, store_path: &Path, name: &str, args: &RunArgs) -> Result<ExitStatus> {
    let log = detach_log(store_path, name);
    let out = open_private(&log).with_context(|| format!("cannot create {}", log.display()))?;
    let mut cmd = std::process::Command::new(std::env::current_exe()?);
    cmd.arg("resume").arg(name).arg("--store").arg(store_path);
    if let Some(a) = &args.answers {
        cmd.arg("--answers").arg(a);
    }
    use std::os::unix::process::CommandExt;
    cmd.env(OWNER_ENV, &host.config().owner)
        .stdin(std::process::Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .process_group(0);
    let mut child = cmd.spawn().context("cannot start the background run")?;
    // This process's exit would read as the run's owner being gone: it
    // waits until the child holds the lease (or ended without it).
    let run = run_id(name)?;
    loop {
        let owner = host.store().run(run)?.summary.owner;
        if owner.as_deref() != Some(host.config().owner.as_str()) {
            break;
        }
        if child.try_wait()?.is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    crate::out::println(name)?;
    crate::note!(
        "started {name} in the background (pid {}); follow it with `troupe status {name}`, its log is {}",
        child.id(),
        log.display()
    );
    Ok(ExitStatus::Success)
}

/// `DB.run-3.log` beside the store: one log per store and run.
fn detach_log(store: &Path, name: &str) -> PathBuf {
    let file = store
        .file_name()
        .map_or_else(|| "troupe.db".into(), |f| f.to_string_lossy().into_owned());
    store.with_file_name(format!("{file}.{name}.log"))
}

fn open_private(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
}
