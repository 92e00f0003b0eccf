//! troupe-host: the one owner of durable runs.
//!
//! The CLI, `troupe serve`, `troupe mcp serve` and the benchmarks are thin
//! layers over this crate. It owns a run's whole lifecycle:
//!
//! - **load once** ([`Compiled`]): parse, check, contract verification and
//!   the fingerprint together;
//! - **backends** ([`Host::engine`]): the model router from `troupe.toml`
//!   and the run's recorded settings, command `extern`s from `troupe.toml`,
//!   the durable human inbox, and MCP tools through [`ToolsFactory`];
//! - **runs**: [`Host::start`] (new, or resume the same unfinished run),
//!   [`Host::drive`], [`Host::answer`] (typed), [`Host::resolve`],
//!   [`Host::cancel`], [`Host::retry`], [`Host::delete`], [`Host::verify`];
//! - **fleets** ([`Host::enqueue`], [`Host::work`]): runs queued in a shared
//!   store and driven by whichever worker claims them.
//!
//! A process runs a run only while it holds the run's *lease* (see
//! `troupe_store::Claim`): claiming is an atomic compare-and-swap in the
//! store, the owner renews the lease while it runs, and a crashed owner's
//! lease expires after [`HostConfig::lease`]. So of any number of processes
//! that start or resume one run at the same moment, exactly one runs it.
//!
//! A run's settings ([`RunSettings`]) are recorded with it and used again on
//! resume unless explicitly overridden (and the override is recorded).

mod answer;
mod backends;
mod causal;
pub mod chosen;
mod compile;
mod drive;
mod error;
pub mod externs;
mod keeper;
pub mod metrics;
mod plans;
mod policy;
mod project;
pub mod schedule;
mod settings;
pub mod snapshot;
mod store_address;
mod upgrade;
mod worker;

pub use answer::{AnswerInput, example as example_answer};
pub use backends::{Backends, NoTools, ToolOptions, ToolSession, ToolsFactory};
pub use compile::Compiled;
pub use error::HostError;
pub use project::{
    ContractsSection, DEFAULT_CALL_TIMEOUT, McpSection, ProjectConfig, StoreSection, Unverified,
};
pub use settings::{DurabilitySetting, Overrides, RunSettings};
pub use store_address::{DEFAULT_STORE, STORE_ENV, store_address};
pub use upgrade::{Upgrade, Upgraded, chart_moves};
pub use worker::{WorkerConfig, WorkerEvent, WorkerReport};

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use troupe_check::Value;
use troupe_check::ir::{ActionKind, Program};
use troupe_llm::{BoxFuture, LlmBackend, LlmConfig, MockBackend, Router, parse_override};
use troupe_runtime::{
    Engine, EngineBuilder, Externs, HumanInbox, HumanTask, RunError, RunOptions, StepKey, ToolHost,
};
use troupe_store::{
    Claim, NewPart, NewRun, RunDetail, RunStatus, StepStatus, Store, StoreChannels, StoreError,
    StoreInbox, TaskKind, TaskRow, TaskStatus,
};

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

/// How `start` treats unfinished runs of the same workflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StartPolicy {
    /// Resume an unfinished run with the same fingerprint and inputs;
    /// refuse over one that waits for `resolve`; else report the newest
    /// such run that is done (a rerun performs nothing twice); otherwise
    /// start a new one.
    #[default]
    ResumeSame,
    /// Always start a new run.
    New,
}

/// What `start` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Started {
    pub run: i64,
    pub name: String,
    /// An unfinished run was claimed rather than a new one created.
    pub resumed: bool,
    /// The run is done already (the same workflow and inputs ran to the
    /// end): nothing is claimed or to be driven; its results are recorded.
    pub finished: bool,
}

/// How a driven run ended.
#[derive(Debug)]
pub enum RunEnd {
    Done {
        results: Vec<(String, Value)>,
        /// `Ok(events)` when the recorded execution is a run of the
        /// workflow; the error otherwise.
        verified: Result<u64, String>,
        /// The tool calls models chose that did not happen as asked, since
        /// this process took the run up ([`troupe_runtime::RunOutcome::unmade_calls`]).
        unmade: Vec<String>,
    },
    Failed(RunError),
    /// Waits for `troupe resolve`.
    NeedsResolution {
        step: String,
        message: String,
    },
    Cancelled {
        reason: String,
    },
    /// The lease expired and another process took the run over.
    LeaseLost,
    /// Every lifeline waited on a person for [`HostConfig::park_after`]:
    /// the run was given back, to go on with any worker once a person
    /// answers (`requeued`: one had answered already, so it is queued).
    Parked {
        requeued: bool,
    },
    /// One part of a placed run ended. `run` is how the whole run ended
    /// when this part was its last (verified, as [`RunEnd::Done`]'s).
    PartDone {
        part: u32,
        run: Option<Result<u64, String>>,
    },
    /// [`HostConfig::interrupt`] was triggered: the run stopped at a step
    /// boundary, its records durable and its lease given back, to be
    /// resumed by anyone (`troupe resume`).
    Interrupted,
    /// Someone paused it (`troupe pause`): it stopped at a step boundary
    /// and holds no lease; `troupe unpause` queues it again.
    Paused,
}

/// A driven run and the workflow it ran.
#[derive(Debug)]
pub struct Finished {
    pub run: i64,
    pub name: String,
    pub compiled: Arc<Compiled>,
    pub end: RunEnd,
}

/// How `resolve` settles a step.
#[derive(Debug, Clone)]
pub enum Resolution {
    /// The effect happened: these outputs (a JSON array, one item per
    /// output, or the value of a single output).
    Done(serde_json::Value),
    /// It did not: perform it again when the run resumes.
    Retry,
}

/// What `cancel` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cancel {
    /// The run had no live owner and is cancelled now.
    Cancelled,
    /// Its owner stops it at its next lease renewal.
    Requested { owner: String },
}

/// What a recorded program is compiled from: its file, its workflow and
/// its source.
type SourceKey = (String, String, String);

/// The owner of durable runs in one store.
#[derive(Clone)]
pub struct Host {
    store: Store,
    config: HostConfig,
    backends: Backends,
    /// Recorded programs by run, for typed answers.
    recorded: Arc<Mutex<HashMap<i64, Arc<Compiled>>>>,
    /// Recorded programs by what they were compiled from (file, workflow,
    /// source): the runs of one version compile it once (a thousand
    /// concurrent durable runs spent 4% of their time compiling it again).
    sources: Arc<Mutex<HashMap<SourceKey, Arc<Compiled>>>>,
    /// Renews the leases of what this host drives, all together.
    keeper: Arc<keeper::Keeper>,
    /// The runs (and parts) this process drives now. A lease that expired
    /// while its holder was busy (a starved process) is claimable by
    /// anyone, this process included; a second drive of the same run under
    /// the same owner would pass every lease check and repeat effects, so
    /// it is refused here.
    driving: DrivenHere,
    /// What this host did as a worker, for metrics.
    counters: Arc<metrics::WorkerCounters>,
}

/// The runs, and parts `(run, Some(part))`, a host drives now.
type DrivenHere = Arc<Mutex<std::collections::HashSet<(i64, Option<u32>)>>>;

/// Marks a run (or part) as driven by this process while it lives.
struct Driving {
    set: DrivenHere,
    key: (i64, Option<u32>),
}

impl Drop for Driving {
    fn drop(&mut self) {
        if let Ok(mut s) = self.set.lock() {
            s.remove(&self.key);
        }
    }
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("store", &self.store)
            .field("config", &self.config)
            .finish()
    }
}

impl Host {
    pub fn new(store: Store, config: HostConfig, tools: Arc<dyn ToolsFactory>) -> Host {
        Host {
            keeper: keeper::Keeper::new(store.clone(), config.owner.clone(), config.lease),
            store,
            backends: Backends::new(config.clone(), tools),
            config,
            recorded: Arc::default(),
            sources: Arc::default(),
            driving: Arc::default(),
            counters: Arc::default(),
        }
    }

    /// Whether this process drives `run` (or its part `part`) now.
    pub fn is_driving(&self, run: i64, part: Option<u32>) -> bool {
        self.driving.lock().is_ok_and(|s| s.contains(&(run, part)))
    }

    /// Marks `run` (or its part) as driven here, unless it is already.
    fn start_driving(&self, run: i64, part: Option<u32>) -> Result<Driving, HostError> {
        let mut set = self
            .driving
            .lock()
            .map_err(|_| HostError::Config("the host's run table was poisoned".into()))?;
        if !set.insert((run, part)) {
            return Err(HostError::AlreadyDriving {
                run: Store::run_name(run),
            });
        }
        Ok(Driving {
            set: self.driving.clone(),
            key: (run, part),
        })
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn backends(&self) -> &Backends {
        &self.backends
    }

    pub fn config(&self) -> &HostConfig {
        &self.config
    }

    /// Leases this host renewed so far.
    /// What this host did as a worker ([`metrics::render`]).
    pub fn counters(&self) -> &metrics::WorkerCounters {
        &self.counters
    }

    pub fn renewals(&self) -> u64 {
        self.keeper
            .renewals
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    fn notify(&self, notice: Notice) {
        if let Some(o) = &self.config.observer {
            o(&notice);
        }
    }

    /// Starts a run of `compiled` with `inputs`, or (by `policy`) claims the
    /// unfinished run with the same fingerprint and inputs. The caller then
    /// holds the lease and drives the run ([`Host::drive`]).
    pub fn start(
        &self,
        compiled: &Compiled,
        inputs: Vec<Value>,
        settings: &RunSettings,
        policy: StartPolicy,
    ) -> Result<Started, HostError> {
        let inputs_json = compiled.inputs_json(&inputs);
        let wf = compiled.workflow();
        let mut others = Vec::new();
        // The unfinished runs of the workflow, and the newest run of the
        // same workflow and inputs that is done: read by workflow and
        // status, not every run of the store.
        let (unfinished, done) = match policy {
            StartPolicy::ResumeSame => self.store.continuable(
                &wf.name,
                &compiled.file,
                &compiled.fingerprint,
                &inputs_json.to_string(),
            )?,
            _ => (Vec::new(), None),
        };
        for r in unfinished {
            let detail = self.store.run(r.id)?;
            let same = detail.fingerprint == compiled.fingerprint && detail.inputs == inputs_json;
            if !same {
                others.push(format!(
                    "{} ({}, {})",
                    r.name,
                    r.status,
                    if detail.fingerprint != compiled.fingerprint {
                        "another version of the workflow"
                    } else {
                        "other inputs"
                    }
                ));
                continue;
            }
            match r.status {
                RunStatus::NeedsResolution => {
                    return Err(needs_resolution(&detail));
                }
                _ => match self
                    .store
                    .claim(r.id, &self.config.owner, self.config.lease)?
                {
                    Claim::Claimed => {
                        return Ok(Started {
                            run: r.id,
                            name: r.name,
                            resumed: true,
                            finished: false,
                        });
                    }
                    Claim::Owned {
                        owner,
                        expires_in_ms,
                    } => {
                        return Err(HostError::Owned {
                            run: r.name,
                            owner,
                            expires_in_ms,
                        });
                    }
                    Claim::Unclaimable(RunStatus::NeedsResolution) => {
                        return Err(needs_resolution(&self.store.run(r.id)?));
                    }
                    // It ended meanwhile, or it runs in parts: start
                    // a new one.
                    Claim::Unclaimable(_) | Claim::Placed => {}
                },
            }
        }
        if let Some(r) = done {
            return Ok(Started {
                run: r.id,
                name: r.name,
                resumed: false,
                finished: true,
            });
        }
        // A new run needs an implementation of every extern and models it
        // can reach (a resumed one is checked with its recorded settings
        // when it is driven): refused before it is recorded.
        let unbound = self.backends.unbound_externs(compiled)?;
        if !unbound.is_empty() && !settings.mock_externs {
            return Err(HostError::UnboundExterns { names: unbound });
        }
        self.backends.check_models(settings)?;
        let run = self.create(
            compiled,
            inputs,
            settings,
            Some((self.config.owner.clone(), self.config.lease)),
        )?;
        let name = Store::run_name(run);
        if !others.is_empty() {
            self.notify(Notice::NewBeside {
                run: name.clone(),
                others,
            });
        }
        Ok(Started {
            run,
            name,
            resumed: false,
            finished: false,
        })
    }

    /// Records a new run queued for any worker to claim (`troupe run
    /// --detach` on a shared store): nothing runs in this process.
    pub fn enqueue(
        &self,
        compiled: &Compiled,
        inputs: Vec<Value>,
        settings: &RunSettings,
    ) -> Result<Started, HostError> {
        let unbound = self.backends.unbound_externs(compiled)?;
        if !unbound.is_empty() && !settings.mock_externs {
            return Err(HostError::UnboundExterns { names: unbound });
        }
        self.backends.check_models(settings)?;
        let run = self.create(compiled, inputs, settings, None)?;
        Ok(Started {
            run,
            name: Store::run_name(run),
            resumed: false,
            finished: false,
        })
    }

    /// Records a new run, claimed by `owner` or queued.
    /// Starts a new run of `compiled` on a client's behalf under its
    /// idempotency key `key`, claimed by this host, unless the key started
    /// a run already: then that run, neither created nor claimed
    /// ([`troupe_store::Keyed`]). A key names one call: a key that started a
    /// run of another workflow is refused.
    pub fn start_keyed(
        &self,
        compiled: &Compiled,
        inputs: Vec<Value>,
        settings: &RunSettings,
        key: &str,
    ) -> Result<troupe_store::Keyed, HostError> {
        let existing = |run: i64| -> Result<troupe_store::Keyed, HostError> {
            let detail = self.store.run(run)?;
            if detail.summary.workflow != compiled.workflow().name {
                return Err(HostError::Input(format!(
                    "the idempotency key {key:?} started {} of workflow `{}`; a key names one call, so give this call a key of its own",
                    detail.summary.name, detail.summary.workflow
                )));
            }
            Ok(troupe_store::Keyed::Existing(run))
        };
        if let Some(run) = self.store.run_for_key(key)? {
            return existing(run);
        }
        let unbound = self.backends.unbound_externs(compiled)?;
        if !unbound.is_empty() && !settings.mock_externs {
            return Err(HostError::UnboundExterns { names: unbound });
        }
        self.backends.check_models(settings)?;
        let new = new_run(
            compiled,
            inputs,
            settings,
            Some((self.config.owner.clone(), self.config.lease)),
        )?;
        match self.store.create_run_keyed(&new, key)? {
            troupe_store::Keyed::Existing(run) => existing(run),
            created => Ok(created),
        }
    }

    fn create(
        &self,
        compiled: &Compiled,
        inputs: Vec<Value>,
        settings: &RunSettings,
        owner: Option<(String, Duration)>,
    ) -> Result<i64, HostError> {
        Ok(self
            .store
            .create_run(&new_run(compiled, inputs, settings, owner)?)?)
    }

    /// Starts a run forked from `from` (see `troupe_store::ForkAt`): the
    /// same recorded workflow and settings, its inputs with `inputs`
    /// overriding the recorded ones, taking the recorded results of the
    /// steps before `at`. The caller then holds its lease and drives it
    /// ([`Host::drive`]): those steps are replayed, the rest run live.
    pub fn fork(
        &self,
        from: i64,
        at: &troupe_store::ForkAt,
        inputs: &[(String, String)],
    ) -> Result<(Started, troupe_store::Forked), HostError> {
        let detail = self.store.run(from)?;
        if !self.store.parts(from)?.is_empty() {
            return Err(HostError::Placement(format!(
                "{} runs in parts on labelled workers, which cannot be forked yet",
                detail.summary.name
            )));
        }
        let compiled = self.recorded(from)?;
        let values = compiled.parse_inputs(inputs, Some(&detail.inputs))?;
        let settings = recorded_settings(&detail);
        let new = new_run(
            &compiled,
            values,
            &settings,
            Some((self.config.owner.clone(), self.config.lease)),
        )?;
        let forked = self.store.fork_run(&new, from, at)?;
        Ok((
            Started {
                run: forked.run,
                name: Store::run_name(forked.run),
                resumed: false,
                finished: false,
            },
            forked,
        ))
    }

    /// Claims `run` for this process: fails with who owns it, or why it
    /// cannot go on.
    pub fn claim(&self, run: i64) -> Result<(), HostError> {
        if let Some(parent) = &self.config.adopt
            && self
                .store
                .hand_over(run, parent, &self.config.owner, self.config.lease)?
        {
            return Ok(());
        }
        match self
            .store
            .claim(run, &self.config.owner, self.config.lease)?
        {
            Claim::Claimed => Ok(()),
            Claim::Owned {
                owner,
                expires_in_ms,
            } => Err(HostError::Owned {
                run: Store::run_name(run),
                owner,
                expires_in_ms,
            }),
            Claim::Unclaimable(RunStatus::NeedsResolution) => {
                Err(needs_resolution(&self.store.run(run)?))
            }
            Claim::Placed => Err(HostError::Placed {
                run: Store::run_name(run),
            }),
            Claim::Unclaimable(status) => Err(HostError::WrongState {
                run: Store::run_name(run),
                status,
                hint: match status {
                    RunStatus::Failed => "it can be retried from its last durable step".to_owned(),
                    RunStatus::Paused => format!(
                        "it is paused; `troupe unpause {}` lets it go on",
                        Store::run_name(run)
                    ),
                    _ => "nothing to resume".into(),
                },
            }),
        }
    }

    /// The recorded program of `run` (cached).
    pub fn recorded(&self, run: i64) -> Result<Arc<Compiled>, HostError> {
        if let Some(c) = self.recorded.lock().ok().and_then(|m| m.get(&run).cloned()) {
            return Ok(c);
        }
        let detail = self.store.run(run)?;
        self.recorded_from(&detail)
    }

    /// Forgets the cached program of `run` (it moved to another version).
    pub(crate) fn forget_recorded(&self, run: i64) {
        if let Ok(mut m) = self.recorded.lock() {
            m.remove(&run);
        }
    }

    /// [`Host::recorded`] of the run `detail` describes.
    pub(crate) fn recorded_from(
        &self,
        detail: &troupe_store::RunDetail,
    ) -> Result<Arc<Compiled>, HostError> {
        let run = detail.summary.id;
        if let Some(c) = self.recorded.lock().ok().and_then(|m| m.get(&run).cloned()) {
            return Ok(c);
        }
        let key = (
            detail.summary.file.clone().unwrap_or_default(),
            detail.summary.workflow.clone(),
            detail.source.clone(),
        );
        let shared = self.sources.lock().ok().and_then(|m| m.get(&key).cloned());
        let compiled = match shared {
            Some(c) => c,
            None => {
                let c = Arc::new(Compiled::recorded(detail)?);
                if let Ok(mut m) = self.sources.lock() {
                    // Versions come and go in a long-lived server: keep
                    // the recent ones only.
                    if m.len() >= 64 {
                        m.clear();
                    }
                    m.insert(key, c.clone());
                }
                c
            }
        };
        if let Ok(mut m) = self.recorded.lock() {
            m.insert(run, compiled.clone());
        }
        Ok(compiled)
    }

    /// Validates and records an answer to `task`: read as the task's
    /// expected type, recorded in canonical form; the first answer wins.
    /// A wrongly typed answer is refused and the task stays pending.
    pub fn answer(&self, task: &str, input: AnswerInput, by: &str) -> Result<TaskRow, HostError> {
        let row = self.store.task(task)?;
        if row.status != TaskStatus::Pending {
            return Err(HostError::Store(StoreError::Conflict(match row.status {
                TaskStatus::Cancelled => {
                    format!("{} was cancelled with its run {}", row.id, row.run)
                }
                _ => format!(
                    "{} was already answered by {} at {}; the first answer wins",
                    row.id,
                    row.answered_by.as_deref().unwrap_or("someone"),
                    row.answered_at.as_deref().unwrap_or("?")
                ),
            })));
        }
        let run =
            Store::parse_run_id(&row.run).ok_or_else(|| StoreError::UnknownRun(row.run.clone()))?;
        let compiled = self.recorded(run)?;
        let action = compiled
            .program
            .actions
            .iter()
            .find(|a| a.name == row.action)
            .ok_or_else(|| HostError::Recorded {
                run: row.run.clone(),
                message: format!("it has no action `{}`", row.action),
            })?;
        // A confirmation of a tool call a model chose names the tool.
        let value = if row.kind == TaskKind::Confirm && !matches!(action.kind, ActionKind::Human(_))
        {
            answer::validate_confirmation(&row.id, &input)?
        } else {
            answer::validate(&row.id, action, compiled.types(), &input)?
        };
        Ok(self.store.answer(&row.id, &value, by)?)
    }

    /// Settles an effect that started and never finished, validating the
    /// outputs of `Resolution::Done` against the action's declaration; the
    /// run can then be resumed.
    pub fn resolve(&self, run: i64, step: &str, how: Resolution) -> Result<(), HostError> {
        match how {
            Resolution::Retry => self.store.resolve(run, step, None)?,
            Resolution::Done(json) => {
                let compiled = self.recorded(run)?;
                let key = StepKey::parse(step).ok_or_else(|| {
                    HostError::Input(format!("`{step}` is not a step; a step looks like Lifeline/action#0 (the run's status lists its steps)"))
                })?;
                // A tool call a model chose is a sub-step
                // `Lifeline/action#k/TOOL#n` of its action's step; a step of
                // a plan's nested run is `Lifeline/planner#k/L/action#n`
                // (one of the program's own actions). Segments of the
                // action part: even for a chosen call, odd otherwise.
                let segments: Vec<&str> = key.action.split('/').collect();
                let name = segments.last().copied().unwrap_or(key.action.as_str());
                let chosen = segments.len().is_multiple_of(2);
                let action = compiled
                    .program
                    .actions
                    .iter()
                    .find(|a| a.name == name && (!chosen || matches!(a.kind, ActionKind::Tool(_))))
                    .ok_or_else(|| {
                        HostError::Input(format!("the workflow has no action `{name}`"))
                    })?;
                let items = match (&json, action.outputs.len()) {
                    (serde_json::Value::Array(items), n) if n != 1 => items.clone(),
                    (j, _) => vec![j.clone()],
                };
                if items.len() != action.outputs.len() {
                    return Err(HostError::Input(format!(
                        "`{}` has {} output(s); the answer gave {}",
                        action.name,
                        action.outputs.len(),
                        items.len()
                    )));
                }
                let values = items
                    .iter()
                    .zip(&action.outputs)
                    .map(|(j, p)| {
                        Value::from_json(j, &p.ty, compiled.types())
                            .map_err(|e| HostError::Input(format!("output `{}`: {e}", p.name)))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                if chosen {
                    // Recorded as the conversation records a call's outcome.
                    let outcome = serde_json::json!({"ok": items});
                    let values = [Value::Json(Arc::new(outcome.clone()))];
                    self.store.resolve(
                        run,
                        step,
                        Some((&values, serde_json::Value::Array(vec![outcome]))),
                    )?;
                } else {
                    self.store.resolve(
                        run,
                        step,
                        Some((&values, serde_json::Value::Array(items))),
                    )?;
                }
            }
        }
        Ok(())
    }

    /// Cancels `run`: at once when nobody runs it; otherwise its owner stops
    /// its in-flight actions at its next renewal and records `reason`.
    pub fn cancel(&self, run: i64, reason: &str) -> Result<Cancel, HostError> {
        if self.store.request_cancel(run, reason)? {
            return Ok(Cancel::Cancelled);
        }
        let owner = self.store.run(run)?.summary.owner.unwrap_or_default();
        Ok(Cancel::Requested { owner })
    }

    /// Makes a failed run claimable again; recorded steps are kept, so it
    /// continues from its last durable step. Claims it for this process.
    pub fn retry(&self, run: i64) -> Result<(), HostError> {
        self.store.reopen(run, &[RunStatus::Failed])?;
        self.claim(run)
    }

    pub fn delete(&self, run: i64) -> Result<(), HostError> {
        self.store.delete_run(run)?;
        if let Ok(mut m) = self.recorded.lock() {
            m.remove(&run);
        }
        Ok(())
    }

    /// Deletes ended runs beyond the newest `keep`; returns their ids.
    pub fn prune(&self, keep: usize) -> Result<Vec<i64>, HostError> {
        let ids = self.store.prunable(keep)?;
        for id in &ids {
            self.delete(*id)?;
        }
        Ok(ids)
    }

    /// Checks a recorded run against ⟦P⟧: `Ok` when it is a run (a prefix
    /// of one when it is unfinished). A run whose history was pruned is
    /// checked from the checkpoint its retained window starts at. Each of
    /// its `planner` calls is checked against its recorded plan: the plan
    /// checks, and its nested run's recorded trace is a run of it (see
    /// `plans.rs`).
    pub fn verify(&self, run: i64) -> Result<Result<Verified, String>, HostError> {
        let compiled = self.recorded(run)?;
        let engine = EngineBuilder::from_program((*compiled.program).clone())
            .workflow(&compiled.workflow().name)
            .mock_unbound_externs(Arc::new(MockBackend::new()))
            .build()?;
        let detail = self.store.run(run)?;
        let done = detail.summary.status == RunStatus::Done;
        let mut calls = plans::PlannerCalls::new(&compiled.program, compiled.workflow());
        let placed = !self.store.parts(run)?.is_empty();
        let outer = if placed {
            verify_placed(&self.store, run, &engine, !done, calls.as_mut())
        } else {
            verify_recorded(&self.store, run, &engine, !done, calls.as_mut())
        };
        let mut verified = match outer
            .and_then(|v| causal::verify(&self.store, &detail, &engine, placed).map(|()| v))
        {
            Ok(v) => v,
            Err(e) => return Ok(Err(e)),
        };
        verified.plans = match plans::verify(
            &self.store,
            run,
            &compiled.program,
            compiled.workflow(),
            &compiled.file,
            calls.as_ref(),
        )? {
            Ok(n) => n,
            Err(e) => return Ok(Err(e)),
        };
        if placed {
            // A placed run keeps one version (it cannot be upgraded).
            return Ok(Ok(verified));
        }
        // A run that moved to other versions: what it recorded under each
        // version it left is checked against that version, as the prefix
        // of a run it was when it moved.
        let versions = self.store.versions(run)?;
        let name = Store::run_name(run);
        for (past, next) in versions.iter().zip(versions.iter().skip(1)) {
            let compiled = Compiled::recorded_source(
                &name,
                past.source.clone(),
                past.file.as_deref(),
                &past.workflow,
            )?;
            let mut monitor = troupe_msc::Monitor::new(&compiled.program, compiled.workflow())
                .map_err(|e| HostError::Recorded {
                    run: name.clone(),
                    message: e.to_string(),
                })?;
            let events = self.store.version_events(run, past.version)?;
            let checked = events
                .iter()
                .try_for_each(|(l, e)| monitor.event(*l, e))
                .and_then(|()| monitor.finish(true));
            if let Err(e) = checked {
                return Ok(Err(format!(
                    "{name}: what it recorded under version {} (before it moved to version {}) is not a prefix of a run of that version: {e}",
                    past.version, next.version
                )));
            }
        }
        Ok(Ok(Verified {
            versions: versions.len() as u32,
            ..verified
        }))
    }
}

enum Stop {
    Cancel(String),
    Lost,
}

/// The settings a run was recorded with (a run recorded before settings
/// were, its model and seed).
fn recorded_settings(detail: &troupe_store::RunDetail) -> RunSettings {
    serde_json::from_value(detail.settings.clone()).unwrap_or_else(|_| RunSettings {
        llm: detail.llm.clone().filter(|l| l != "default"),
        seed: detail.seed,
        ..RunSettings::default()
    })
}

/// The record of a new run of `compiled`, claimed by `owner` or queued.
fn new_run(
    compiled: &Compiled,
    inputs: Vec<Value>,
    settings: &RunSettings,
    owner: Option<(String, Duration)>,
) -> Result<NewRun, HostError> {
    let settings_json = serde_json::to_string(settings)
        .map_err(|e| HostError::Config(format!("cannot record the run's settings: {e}")))?;
    let wf = compiled.workflow();
    let parts = parts_of(compiled, &settings.placement)?;
    if !parts.is_empty() && owner.is_some() {
        return Err(HostError::Placement(
            "a run with placed lifelines runs in parts on labelled workers, not in this process: queue it with `--detach` on a store the workers share".into(),
        ));
    }
    Ok(NewRun {
        workflow: wf.name.clone(),
        file: Some(compiled.file.clone()),
        source: compiled.source.clone(),
        fingerprint: compiled.fingerprint.clone(),
        canonical: compiled.canonical.clone(),
        inputs_json: compiled.inputs_json(&inputs).to_string(),
        inputs,
        seed: settings.seed,
        lifelines: wf.lifelines.len(),
        llm: settings.llm_label(),
        settings: settings_json,
        owner,
        parts,
    })
}

/// The parts of a run placed by `placement` (lifeline → label): one per
/// label, in the order of their first lifelines, the unpinned lifelines
/// together in a part any worker may claim. None without a placement.
fn parts_of(
    compiled: &Compiled,
    placement: &std::collections::BTreeMap<String, String>,
) -> Result<Vec<NewPart>, HostError> {
    if placement.is_empty() {
        return Ok(Vec::new());
    }
    let wf = compiled.workflow();
    let names: Vec<&str> = wf.lifelines.iter().map(|l| l.name.as_str()).collect();
    for (lifeline, label) in placement {
        if !names.contains(&lifeline.as_str()) {
            return Err(HostError::Placement(format!(
                "`{lifeline}` is not a lifeline of workflow `{}`; pin one of its lifelines: {}",
                wf.name,
                names.join(", ")
            )));
        }
        if !valid_label(label) {
            return Err(HostError::Placement(format!(
                "`{lifeline}` is pinned to {label:?}: a label is one word of letters, digits, `-`, `_`, `.` or `:` (as `troupe worker --labels` takes them)"
            )));
        }
    }
    let mut parts: Vec<NewPart> = Vec::new();
    for name in names {
        let label = placement.get(name).cloned().unwrap_or_default();
        match parts.iter_mut().find(|p| p.label == label) {
            Some(p) => p.lifelines.push(name.to_owned()),
            None => parts.push(NewPart {
                label,
                lifelines: vec![name.to_owned()],
            }),
        }
    }
    Ok(parts)
}

/// Whether `label` is a worker label: one non-empty word.
pub fn valid_label(label: &str) -> bool {
    !label.is_empty()
        && label.len() <= 64
        && label
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
}

fn needs_resolution(detail: &RunDetail) -> HostError {
    // The step the run stopped at is named in its recorded error; other
    // steps may be started too (idempotent effects in flight when it
    // stopped), and they need no person.
    let error = detail.summary.error.as_deref().unwrap_or_default();
    let started = || {
        detail
            .steps
            .iter()
            .filter(|s| s.status == StepStatus::Started)
    };
    let step = started()
        .find(|s| error.contains(&format!("the effect {} started", s.key)))
        .or_else(|| started().next())
        .map_or_else(|| "?".to_owned(), |s| s.key.clone());
    HostError::NeedsResolution {
        run: detail.summary.name.clone(),
        step,
        message: detail.summary.error.clone().unwrap_or_default(),
    }
}

/// Checks a recorded run's events against ⟦P⟧ (as a prefix of a run with
/// `prefix`, for a run that has not finished), streaming them from the
/// store through the online monitor: one chunk in memory at a time.
fn verify_recorded(
    store: &Store,
    run: i64,
    engine: &Engine,
    prefix: bool,
    mut calls: Option<&mut plans::PlannerCalls>,
) -> Result<Verified, String> {
    let name = Store::run_name(run);
    // A pruned history starts at a checkpoint: the monitor continues from
    // the state it had there (the events before were checked online, as
    // the run made them, and are gone).
    let (mut monitor, from, chunk) = match store.history_start(run).map_err(|e| e.to_string())? {
        None => (engine.monitor(), 0, 0),
        Some((checkpoint, chunk)) => {
            let state = checkpoint.monitor.as_ref().ok_or_else(|| {
                format!(
                    "{name}: its retained history starts at a checkpoint taken without verification"
                )
            })?;
            let monitor = engine
                .monitor()
                .restore(state)
                .map_err(|e| format!("{name}: its retained history's checkpoint: {e}"))?;
            (monitor, checkpoint.events, chunk)
        }
    };
    let mut first: Option<String> = None;
    store
        .for_each_event_from(run, chunk, |l, e| {
            if first.is_none()
                && let Err(e) = monitor.event(l, e)
            {
                first = Some(e.to_string());
            }
            if let Some(c) = calls.as_deref_mut() {
                c.see(l, e);
            }
        })
        .map_err(|e| e.to_string())?;
    if let Some(e) = first {
        return Err(format!(
            "{}: the execution is not in ⟦P⟧: {e}",
            Store::run_name(run)
        ));
    }
    monitor
        .finish(prefix)
        .map_err(|e| format!("{}: the execution is not in ⟦P⟧: {e}", Store::run_name(run)))?;
    Ok(Verified {
        events: monitor.events(),
        from,
        versions: 1,
        plans: 0,
    })
}

/// [`verify_recorded`] for a placed run: its parts recorded their
/// lifelines' events apart, so the events are gathered per lifeline and
/// put in an order in which they could have happened before the monitor
/// checks them. A placed run keeps its whole history (no checkpoints).
fn verify_placed(
    store: &Store,
    run: i64,
    engine: &Engine,
    prefix: bool,
    mut calls: Option<&mut plans::PlannerCalls>,
) -> Result<Verified, String> {
    let name = Store::run_name(run);
    let mut exec = troupe_msc::Execution::new(engine.workflow().lifelines.len());
    let events = store
        .for_each_event_from(run, 0, |l, e| {
            if let Some(word) = exec.words.get_mut(l.0 as usize) {
                word.push(e.clone());
            }
            if let Some(c) = calls.as_deref_mut() {
                c.see(l, e);
            }
        })
        .map_err(|e| e.to_string())?;
    engine
        .verify_execution(&name, &exec, prefix)
        .map_err(|e| e.to_string())?;
    Ok(Verified {
        events,
        from: 0,
        versions: 1,
        plans: 0,
    })
}

/// What a verification of a recorded run covered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verified {
    /// Events of the run up to its last recorded one.
    pub events: u64,
    /// Events before the checked window: retention pruned them, and they
    /// were checked online as the run made them (0: the whole history).
    pub from: u64,
    /// The workflow versions the run ran under, each checked (1: it never
    /// moved, `troupe upgrade`).
    pub versions: u32,
    /// The `planner` calls whose recorded plan was checked again and whose
    /// nested run's recorded trace is a run of it.
    pub plans: u32,
}

/// Scripted answers from a JSON object keyed by `Lifeline.action` or
/// `action` (a list answers successive tasks).
pub fn scripted_answers(
    text: &str,
) -> Result<serde_json::Map<String, serde_json::Value>, HostError> {
    match serde_json::from_str(text) {
        Ok(serde_json::Value::Object(map)) => Ok(map),
        Ok(_) => Err(HostError::Input(
            "answers: expected a JSON object keyed by `Lifeline.action` or `action`".into(),
        )),
        Err(e) => Err(HostError::Input(format!("answers are not JSON: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process whose lease expired while it was busy, and that claimed
    /// the run again (as a starved worker does), does not drive it a
    /// second time beside the first: under the same owner the second
    /// drive would pass every lease check and repeat the run's effects.
    #[test]
    fn a_run_is_never_driven_twice_by_one_process() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("s.db"), troupe_store::Durability::Normal).unwrap();
        let host = Host::new(
            store,
            HostConfig::new(dir.path().to_owned()),
            Arc::new(NoTools),
        );
        let source = "human ok(n: Int) -> Bool { ask: \"ok {n}?\" }\n\
                      workflow w(n: Int @ A) {\n  lifelines A\n  act A: r = ok(n)\n  return r @ A\n}\n";
        let compiled = Compiled::from_source(source.into(), "w.troupe", dir.path(), None).unwrap();
        let started = host
            .start(
                &compiled,
                vec![Value::Int(1)],
                &RunSettings::default(),
                StartPolicy::New,
            )
            .unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let overrides = Overrides::default();
        rt.block_on(async {
            let first = host.drive(started.run, &overrides, None);
            tokio::pin!(first);
            // The first drive starts and waits for its person.
            tokio::select! {
                _ = &mut first => panic!("the run ended without its answer"),
                () = tokio::time::sleep(Duration::from_millis(200)) => {}
            }
            assert!(host.is_driving(started.run, None));
            // (A second drive would wait for the person too: bounded, so
            // that it fails instead of hanging.)
            let second = tokio::time::timeout(
                Duration::from_secs(10),
                host.drive(started.run, &overrides, None),
            )
            .await;
            assert!(
                matches!(second, Ok(Err(HostError::AlreadyDriving { .. }))),
                "{second:?}"
            );
            // The refused drive left the first one's lease alone.
            let owner = host.store().run(started.run).unwrap().summary.owner;
            assert_eq!(owner.as_deref(), Some(host.config().owner.as_str()));
        });
    }

    /// One keeper holds the leases of every run a host drives (one renewal
    /// for all of them), and stops only the run that must stop: a
    /// cancelled one is cancelled, one whose lease another owner took
    /// stops writing, and the rest run on under their leases.
    #[test]
    fn one_keeper_renews_every_run_and_stops_only_those_that_must_stop() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("s.db"), troupe_store::Durability::Normal).unwrap();
        let mut config = HostConfig::new(dir.path().to_owned());
        let lease = Duration::from_millis(1500);
        config.lease = lease;
        let host = Host::new(store.clone(), config, Arc::new(NoTools));
        let source = "human ok(n: Int) -> Bool { ask: \"ok {n}?\" }\n\
                      workflow w(n: Int @ A) {\n  lifelines A\n  act A: r = ok(n)\n  return r @ A\n}\n";
        let compiled = Compiled::from_source(source.into(), "w.troupe", dir.path(), None).unwrap();
        let runs: Vec<i64> = (0..3)
            .map(|n| {
                host.start(
                    &compiled,
                    vec![Value::Int(n)],
                    &RunSettings::default(),
                    StartPolicy::New,
                )
                .unwrap()
                .run
            })
            .collect();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let overrides = Overrides::default();
        let me = host.config().owner.clone();
        let ends = rt.block_on(async {
            let control = async {
                // Past two leases, each still held by this host.
                tokio::time::sleep(lease * 2 + lease / 2).await;
                for &run in &runs {
                    let summary = store.run(run).unwrap().summary;
                    assert_eq!(summary.owner.as_deref(), Some(me.as_str()), "{run}");
                }
                assert!(host.renewals() >= 3, "{}", host.renewals());
                assert!(!store.request_cancel(runs[0], "enough").unwrap());
                store.release(runs[1], &me).unwrap();
                assert_eq!(
                    store.claim(runs[1], "thief", lease * 40).unwrap(),
                    Claim::Claimed
                );
                // The third runs on; then it is cancelled too.
                tokio::time::sleep(lease).await;
                assert!(host.is_driving(runs[2], None));
                assert!(!store.request_cancel(runs[2], "done with it").unwrap());
            };
            // Bounded, so that a run never stopped fails the test rather
            // than hang it.
            let (a, b, c, ()) = tokio::time::timeout(Duration::from_secs(60), async {
                tokio::join!(
                    host.drive(runs[0], &overrides, None),
                    host.drive(runs[1], &overrides, None),
                    host.drive(runs[2], &overrides, None),
                    control,
                )
            })
            .await
            .expect("every run stopped");
            [a, b, c].map(|r| r.unwrap().end)
        });
        assert!(
            matches!(&ends[0], RunEnd::Cancelled { reason } if reason == "enough"),
            "{:?}",
            ends[0]
        );
        assert!(matches!(ends[1], RunEnd::LeaseLost), "{:?}", ends[1]);
        assert!(matches!(ends[2], RunEnd::Cancelled { .. }), "{:?}", ends[2]);
        let owner = |run| store.run(run).unwrap().summary.owner;
        assert_eq!(
            owner(runs[1]).as_deref(),
            Some("thief"),
            "the thief's lease stays"
        );
        assert_eq!(
            store.run(runs[0]).unwrap().summary.status,
            RunStatus::Cancelled
        );
    }
}
