//! How a host is configured and what it tells its caller: [`HostConfig`]
//! (lease, owner id, observer, embedded externs and model, parking,
//! interrupt) and the [`Notice`]s it sends while it works. Kept apart from
//! [`crate::Host`] so that a caller can read what it may set without reading
//! how runs are driven.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use troupe_llm::LlmBackend;
use troupe_runtime::Externs;

/// The lease a run is claimed for unless configured otherwise.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(15);

/// What the host tells its caller while it works, for the caller to show.
#[derive(Debug, Clone)]
pub enum Notice {
    /// No model is configured: the mock model answers.
    MockModel,
    /// These `extern`s answer with mock values.
    MockedExterns(Vec<String>),
    /// A run is resumed; this many recorded steps are not redone.
    Resuming {
        run: String,
        recorded_steps: usize,
        /// The events before the checkpoint it continues from (`None`: it
        /// replays from the start).
        checkpoint: Option<u64>,
    },
    /// A new run was started although unfinished runs of the same file
    /// exist (other inputs, or another version of the workflow).
    NewBeside { run: String, others: Vec<String> },
    /// Contract findings that appeared once the servers were listed (what
    /// they publish disagrees with the sidecar: W0606), not errors.
    ContractFindings {
        file: String,
        source: String,
        diagnostics: Vec<troupe_syntax::Diagnostic>,
    },
    /// The run waits on a person.
    Waiting {
        run: String,
        task: String,
        lifeline: String,
        action: String,
        kind: troupe_store::TaskKind,
        ty: String,
    },
}

pub type Observer = dyn Fn(&Notice) + Send + Sync;

/// How the host runs.
#[derive(Clone)]
pub struct HostConfig {
    /// How long a claim lasts without renewal; a crashed owner's runs are
    /// taken over after at most this long.
    pub lease: Duration,
    /// This process's owner id (fresh per process unless handed over, as
    /// `--detach` hands it to its child).
    pub owner: String,
    /// Where `troupe.toml` is looked for.
    pub config_dir: PathBuf,
    pub observer: Option<Arc<Observer>>,
    /// `extern` bodies registered by Rust code (a program embedding troupe,
    /// the benchmarks); commands from `troupe.toml` come on top.
    pub externs: Externs,
    /// A model backend that answers every model call of this host's runs
    /// instead of the configured ones (a program embedding troupe with its
    /// own backend, the crash test's counting model).
    pub llm: Option<Arc<dyn LlmBackend>>,
    /// Give a run back once every lifeline has waited on a person this
    /// long ([`RunEnd::Parked`]); any worker picks it up when a person
    /// answers. `None` (the default, and `troupe run`): wait in place.
    pub park_after: Option<Duration>,
    /// The owner id of the process that claimed this process's run and
    /// handed it over (`--detach`): its lease is taken over at the claim.
    pub adopt: Option<String>,
    /// Stops this host's runs at their next step boundary once triggered
    /// (the CLI triggers it on SIGINT and SIGTERM): they end
    /// [`RunEnd::Interrupted`] with their lease given back.
    pub interrupt: Option<troupe_runtime::Interrupt>,
}

impl std::fmt::Debug for HostConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostConfig")
            .field("lease", &self.lease)
            .field("owner", &self.owner)
            .field("config_dir", &self.config_dir)
            .finish()
    }
}

impl HostConfig {
    pub fn new(config_dir: PathBuf) -> HostConfig {
        HostConfig {
            lease: DEFAULT_LEASE,
            owner: new_owner_id(),
            config_dir,
            observer: None,
            externs: Externs::new(),
            llm: None,
            park_after: None,
            adopt: None,
            interrupt: None,
        }
    }
}

/// How long an effect in flight may finish once its run is interrupted,
/// when the process gave no interrupt of its own.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(10);

/// A fresh owner id for this process (see `troupe_store::new_owner_id`).
pub fn new_owner_id() -> String {
    troupe_store::new_owner_id()
}
