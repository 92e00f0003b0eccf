//! What can go wrong owning durable runs, in the host's own vocabulary: no
//! flag names and no exit codes (the binary maps these to its own).

use std::path::PathBuf;
use troupe_store::{RunStatus, StoreError};
use troupe_syntax::Diagnostic;

#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file does not check; the diagnostics say why.
    #[error("{file} does not check ({} problem(s))", diagnostics.len())]
    DoesNotCheck {
        file: String,
        source_text: String,
        diagnostics: Vec<Diagnostic>,
    },
    /// The workflow breaks the contracts of the tools it calls.
    #[error("{file} breaks the contracts of the tools it calls ({} error(s))", diagnostics.len())]
    Contracts {
        file: String,
        source_text: String,
        diagnostics: Vec<Diagnostic>,
    },
    /// The tools the servers list fail the lint at error level (an
    /// instruction aimed at the model in a description, a definition that
    /// changed since it was locked, …): the run is refused before any call.
    #[error(
        "the servers' tools fail the lint, so nothing was run:\n{}\n  hint: review the tools; if a rule is wrong for them, `[contracts] allow = [\"RULE\"]` in troupe.toml accepts it (`troupe contracts lint` shows the whole report)",
        findings.join("\n")
    )]
    UnsafeTools { findings: Vec<String> },
    #[error("{file} has no workflow `{name}`; it has {}", available.join(", "))]
    NoSuchWorkflow {
        file: String,
        name: String,
        available: Vec<String>,
    },
    #[error("{file} declares no workflow")]
    NoWorkflow { file: String },
    /// Several workflows and none chosen.
    #[error("{file} declares several workflows ({}); choose one", available.join(", "))]
    WhichWorkflow {
        file: String,
        available: Vec<String>,
    },
    #[error("input: {0}")]
    Input(String),
    /// A snapshot file that cannot be read as one (`troupe diff`).
    #[error("{0}")]
    Snapshot(String),
    #[error(
        "no implementation for the extern action(s) {}: give each a command in troupe.toml ([externs.NAME] command = [...]) or run with mocked externs",
        names.join(", ")
    )]
    UnboundExterns { names: Vec<String> },
    #[error("troupe.toml: {0}")]
    Config(String),
    /// A placement (`--place`, `[placement]`) that does not fit the run.
    #[error("placement: {0}")]
    Placement(String),
    #[error(transparent)]
    Llm(#[from] troupe_llm::ConfigError),
    /// Another process holds the run's lease.
    #[error("{run} is being run by {} ({owner}; its lease runs for {} more unless renewed); wait for it, or cancel it{}", troupe_store::describe_owner(owner), humantime::format_duration(std::time::Duration::from_millis(*expires_in_ms as u64)), owned_hint(owner))]
    Owned {
        run: String,
        owner: String,
        expires_in_ms: i64,
    },
    /// This process drives the run (or the part) already: its lease
    /// expired while it was busy and it claimed it again. One drive goes
    /// on; a second would repeat its steps under the same owner.
    #[error("{run} is being run by this process already")]
    AlreadyDriving { run: String },
    /// A run waits for a person to settle an unfinished effect.
    #[error(
        "{run} waits for a person to settle the effect {step} (did it happen or not?): {message}"
    )]
    NeedsResolution {
        run: String,
        step: String,
        message: String,
    },
    /// A placed run is driven part by part by workers, never whole.
    #[error(
        "{run} is placed: its parts run on workers with their labels (`troupe worker --labels …`), not in this process; `troupe status {run}` shows its parts"
    )]
    Placed { run: String },
    #[error("{run} is {status}; {hint}")]
    WrongState {
        run: String,
        status: RunStatus,
        hint: String,
    },
    /// An answer of the wrong type: the task stays pending.
    #[error("{task} expects {expected} ({why}); for example {example}")]
    InvalidAnswer {
        task: String,
        expected: String,
        why: String,
        /// A value that fits, as JSON.
        example: serde_json::Value,
        /// How the task is answered: a confirmation takes yes or no.
        confirm: bool,
    },
    #[error("the recorded source of {run} no longer checks: {message}")]
    Recorded { run: String, message: String },
    #[error(transparent)]
    Run(#[from] troupe_runtime::RunError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot start the run's runtime: {0}")]
    Runtime(#[source] std::io::Error),
}

/// What to do about a live owner: one on this machine is never waited out
/// (its process is asked), so it must be stopped to take its run at once.
fn owned_hint(owner: &str) -> String {
    match troupe_store::liveness(owner) {
        troupe_store::Liveness::Alive | troupe_store::Liveness::Stopped => {
            match troupe_store::owner_pid(owner) {
                Some(pid) => format!(
                    " (it runs on this machine: stopping it, `kill {pid}`, lets the run be continued at once)"
                ),
                None => String::new(),
            }
        }
        _ => String::new(),
    }
}
