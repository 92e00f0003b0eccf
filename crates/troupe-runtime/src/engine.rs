//! The engine: a compiled workflow with its action performers, and the
//! interpreter that runs it.
//!
//! Each lifeline of a run is a task of the run's own scheduler: it executes
//! its flat local program (`troupe_project::Op`) until it must wait — for a
//! message on a channel, or for an asynchronous action (LLM, effect, human) —
//! and the scheduler then runs another lifeline of the same run. Channels are
//! one FIFO queue per ordered pair of lifelines; control messages are their
//! own variant, carrying the decision and the construct's tag κ.
//!
//! Why not one tokio task per lifeline: a hand-off between tokio tasks costs a
//! wake-up (and across threads about a hundred times more), while a hand-off
//! between lifelines of the same run here is a push onto a `VecDeque`. A run
//! is one tokio task, so many runs spread over the worker threads while the
//! lifelines of one run never cross threads. The scheduler is deterministic
//! (or driven by a seed), so a run can be replayed exactly.

use crate::actions::{
    EffectCall, EffectFn, Externs, HumanInbox, HumanTask, NoContracts, NoHumans, PureFn, ToolCall,
    ToolHost, ToolPolicy, ToolRecord,
};
use crate::agent::{Agent, Offered, Runner, Stop};
use crate::checkpoint::{Channel, Checkpoint, LaneState, PartState, Queued};
use crate::error::{Location, RunError};
use crate::interrupt;
use crate::journal::{Recorded, RunJournal, StepKey, StepKind};
use crate::remote::{Elsewhere, Remote, RemoteChannel};
use crate::trace::{Trace, TraceEntry};
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument;
use troupe_check::eval::{EvalError, display, eval};
use troupe_check::ir::{
    ActionId, ActionKind, AnswerKind, Block, Call, LifelineId, Program, Recv, StmtId, StmtKind,
    Template, TemplatePart, VarId, Workflow,
};
use troupe_check::{Type, TypeTable, Value};
use troupe_llm::{CallKey, LlmBackend, LlmRequest, OutputSlot};
use troupe_msc::{Event, MemberOptions, Message, Semantics};
use troupe_project::{ControlTag, FlatProgram, Lanes, Op};
use troupe_syntax::{LineIndex, Span};

mod planner;
pub use planner::{PlanVerifier, plan_key, plan_run_key, render_for_model};

/// How a declared action is performed.
#[derive(Clone)]
enum Performer {
    PureExpr,
    PureHost(Arc<PureFn>),
    Effect(Arc<EffectFn>),
    /// An `extern` with no registered body, answered by a mock backend.
    Mock,
    Llm,
    Human,
    Tool(Arc<dyn ToolHost>),
    /// A `planner`: asks for a plan and runs it (see `planner`).
    Planner,
}

/// A compiled workflow, ready to run any number of times, concurrently.
/// Cheap to clone.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

struct Inner {
    program: Arc<Program>,
    workflow: usize,
    flat: Vec<FlatProgram>,
    performers: Vec<Performer>,
    llm: Arc<dyn LlmBackend>,
    mock: Option<Arc<dyn LlmBackend>>,
    humans: Arc<dyn HumanInbox>,
    timeouts: HashMap<String, Duration>,
    default_timeout: Option<Duration>,
    stmt_spans: Vec<Span>,
    lines: Option<LineIndex>,
    semantics: std::sync::OnceLock<Result<Semantics, String>>,
    /// The online monitor of the workflow, before any event.
    monitor: troupe_msc::Monitor,
    /// The program's types, shared with every LLM request.
    types: Arc<TypeTable>,
    /// The branches of the `par` regions (each message's channel is its
    /// statement's lane).
    lanes: Lanes,
    /// Per control tag, the lane of its construct (to put the messages of a
    /// checkpoint back on their channels).
    tag_lane: HashMap<ControlTag, u32>,
    /// Per lifeline, per op, the lane its action counts are kept in (empty
    /// when the workflow has no `par`).
    key_lane: Vec<Vec<u32>>,
    /// Per lifeline, whether it runs parts of a `par` concurrently.
    forks: Vec<bool>,
    /// The tools' contracts, for the calls models choose.
    policy: Arc<dyn ToolPolicy>,
    /// The host's checks of a generated plan beyond the language's.
    plan_verifier: Option<Arc<PlanVerifier>>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("workflow", &self.workflow().name)
            .field("llm", &self.inner.llm.describe())
            .finish()
    }
}

/// Builds an [`Engine`].
pub struct EngineBuilder {
    program: Program,
    source: Option<String>,
    workflow: Option<String>,
    externs: Externs,
    llm: Option<Arc<dyn LlmBackend>>,
    mock: Option<Arc<dyn LlmBackend>>,
    humans: Arc<dyn HumanInbox>,
    tools: Option<Arc<dyn ToolHost>>,
    policy: Arc<dyn ToolPolicy>,
    timeouts: HashMap<String, Duration>,
    default_timeout: Option<Duration>,
    plan_verifier: Option<Arc<PlanVerifier>>,
}

impl std::fmt::Debug for EngineBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineBuilder")
            .field("workflow", &self.workflow)
            .field("externs", &self.externs)
            .finish()
    }
}

impl EngineBuilder {
    /// Starts from a source text; fails with its rendered-free diagnostics
    /// when it does not check.
    pub fn from_source(text: &str) -> Result<EngineBuilder, Vec<troupe_syntax::Diagnostic>> {
        let (program, diagnostics) = troupe_check::check_text(text);
        let program = program.ok_or(diagnostics)?;
        let mut b = EngineBuilder::from_program(program);
        b.source = Some(text.to_owned());
        Ok(b)
    }

    pub fn from_program(program: Program) -> EngineBuilder {
        EngineBuilder {
            program,
            source: None,
            workflow: None,
            externs: Externs::new(),
            llm: None,
            mock: None,
            humans: Arc::new(NoHumans),
            tools: None,
            policy: Arc::new(NoContracts),
            timeouts: HashMap::new(),
            default_timeout: None,
            plan_verifier: None,
        }
    }

    /// The source text the program was checked from, so that run errors
    /// name their line.
    pub fn source(mut self, text: &str) -> Self {
        self.source = Some(text.to_owned());
        self
    }

    /// The program being built into an engine.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// Which workflow to run, when the file has several.
    pub fn workflow(mut self, name: &str) -> Self {
        self.workflow = Some(name.to_owned());
        self
    }

    pub fn externs(mut self, externs: Externs) -> Self {
        self.externs = externs;
        self
    }

    pub fn llm(mut self, backend: Arc<dyn LlmBackend>) -> Self {
        self.llm = Some(backend);
        self
    }

    /// Answer `extern` actions that have no registered body with this
    /// backend (typically the mock), instead of refusing to build.
    pub fn mock_unbound_externs(mut self, backend: Arc<dyn LlmBackend>) -> Self {
        self.mock = Some(backend);
        self
    }

    pub fn humans(mut self, inbox: Arc<dyn HumanInbox>) -> Self {
        self.humans = inbox;
        self
    }

    /// Where `tool` actions are performed (MCP servers).
    pub fn tools(mut self, host: Arc<dyn ToolHost>) -> Self {
        self.tools = Some(host);
        self
    }

    /// The tools' contracts, enforced on the calls a model chooses
    /// (default: none; each tool is then judged by what its server says).
    pub fn tool_policy(mut self, policy: Arc<dyn ToolPolicy>) -> Self {
        self.policy = policy;
        self
    }

    /// A deadline for every asynchronous action without one of its own.
    pub fn default_timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = Some(timeout);
        self
    }

    /// A deadline for one action, by name.
    pub fn timeout(mut self, action: &str, timeout: Duration) -> Self {
        self.timeouts.insert(action.to_owned(), timeout);
        self
    }

    /// The names of `extern` actions with no registered body.
    pub fn unbound_externs(&self) -> Vec<String> {
        self.program
            .actions
            .iter()
            .filter(|a| match &a.kind {
                ActionKind::Pure { body: None } => !self.externs.pure.contains_key(&a.name),
                ActionKind::Effect { .. } => !self.externs.effects.contains_key(&a.name),
                ActionKind::Tool(_) => self.tools.is_none(),
                _ => false,
            })
            .map(|a| a.name.clone())
            .collect()
    }

    /// Checks a generated plan must pass besides the language's (the host
    /// verifies the contracts of the tools a plan calls).
    pub fn plan_verifier(
        mut self,
        verify: impl Fn(&Program, &str) -> Vec<troupe_syntax::Diagnostic> + Send + Sync + 'static,
    ) -> Self {
        self.plan_verifier = Some(Arc::new(verify));
        self
    }

    pub fn build(self) -> Result<Engine, RunError> {
        let workflow = match &self.workflow {
            Some(name) => self
                .program
                .workflows
                .iter()
                .position(|w| &w.name == name)
                .ok_or_else(|| {
                    let names: Vec<_> = self
                        .program
                        .workflows
                        .iter()
                        .map(|w| w.name.as_str())
                        .collect();
                    RunError::Setup(format!(
                        "no workflow named `{name}`; the file has {}",
                        names.join(", ")
                    ))
                })?,
            None if self.program.workflows.len() == 1 => 0,
            None if self.program.workflows.is_empty() => {
                return Err(RunError::Setup("the file declares no workflow".into()));
            }
            None => {
                let names: Vec<_> = self
                    .program
                    .workflows
                    .iter()
                    .map(|w| w.name.as_str())
                    .collect();
                return Err(RunError::Setup(format!(
                    "the file has several workflows ({}); choose one with --workflow",
                    names.join(", ")
                )));
            }
        };
        let mut performers = Vec::with_capacity(self.program.actions.len());
        for action in &self.program.actions {
            let performer = match &action.kind {
                ActionKind::Pure { body: Some(_) } => Performer::PureExpr,
                ActionKind::Pure { body: None } => match self.externs.pure.get(&action.name) {
                    Some(f) => Performer::PureHost(f.clone()),
                    None => self.unbound(&action.name, "pure")?,
                },
                ActionKind::Effect { .. } => match self.externs.effects.get(&action.name) {
                    Some(f) => Performer::Effect(f.clone()),
                    None => self.unbound(&action.name, "effect")?,
                },
                ActionKind::Llm(_) => Performer::Llm,
                ActionKind::Planner(_) => Performer::Planner,
                ActionKind::Human(_) => Performer::Human,
                ActionKind::Tool(_) => match &self.tools {
                    Some(host) => Performer::Tool(host.clone()),
                    None => self.unbound(&action.name, "tool")?,
                },
            };
            performers.push(performer);
        }
        let wf = &self.program.workflows[workflow];
        let Projected {
            monitor,
            flat,
            lanes,
            tag_lane,
            key_lane,
            forks,
        } = projected(&self.program, wf)?;
        let mut stmt_spans = vec![Span::default(); wf.stmt_count as usize];
        collect_spans(&wf.body, &mut stmt_spans);
        let llm = match self.llm {
            Some(llm) => llm,
            None => match &self.mock {
                Some(mock) => mock.clone(),
                None if self
                    .program
                    .actions
                    .iter()
                    .any(|a| matches!(a.kind, ActionKind::Llm(_) | ActionKind::Planner(_))) =>
                {
                    return Err(RunError::Setup(
                        "the workflow calls a language model, but no LLM backend is configured"
                            .into(),
                    ));
                }
                None => Arc::new(NoModel),
            },
        };
        let types = Arc::new(self.program.types.clone());
        Ok(Engine {
            inner: Arc::new(Inner {
                types,
                lines: self.source.as_deref().map(LineIndex::new),
                program: Arc::new(self.program),
                workflow,
                flat,
                performers,
                llm,
                mock: self.mock,
                humans: self.humans,
                timeouts: self.timeouts,
                default_timeout: self.default_timeout,
                stmt_spans,
                semantics: std::sync::OnceLock::new(),
                monitor,
                lanes,
                tag_lane,
                key_lane,
                forks,
                policy: self.policy,
                plan_verifier: self.plan_verifier,
            }),
        })
    }

    fn unbound(&self, name: &str, kind: &str) -> Result<Performer, RunError> {
        if self.mock.is_some() {
            Ok(Performer::Mock)
        } else {
            Err(RunError::Setup(format!(
                "no body is registered for `{kind} {name}(…) extern`; register one with Externs::{kind}"
            )))
        }
    }
}

/// What an engine keeps of a workflow's projection: the flat local
/// programs, the online monitor, and the `par` bookkeeping.
struct Projected {
    monitor: troupe_msc::Monitor,
    flat: Vec<FlatProgram>,
    lanes: Lanes,
    tag_lane: HashMap<ControlTag, u32>,
    key_lane: Vec<Vec<u32>>,
    forks: Vec<bool>,
}

/// Projects `wf` of `program` once for an engine (the outer workflow's, or
/// a plan's).
fn projected(program: &Program, wf: &Workflow) -> Result<Projected, RunError> {
    let projection =
        troupe_project::project(program, wf).map_err(|e| RunError::Setup(e.to_string()))?;
    // The online monitor's plans, made once per engine from the same
    // projection; each run gets a fresh cursor over them.
    let monitor = troupe_msc::Monitor::with_projection(wf, &projection);
    let flat = projection.flatten();
    let lanes = projection.lanes.clone();
    let tag_lane = projection
        .constructs
        .iter()
        .map(|c| (c.tag, lanes.of(c.stmt)))
        .collect();
    let key_lane = if lanes.is_empty() {
        Vec::new()
    } else {
        flat.iter()
            .map(|f| {
                f.ops
                    .iter()
                    .map(|op| match op {
                        Op::Act { stmt, .. } => lanes.key_lane(f.lifeline, *stmt),
                        _ => 0,
                    })
                    .collect()
            })
            .collect()
    };
    let forks = flat
        .iter()
        .map(|f| {
            f.ops
                .iter()
                .any(|op| matches!(op, Op::Fork { parts, .. } if !parts.is_empty()))
        })
        .collect();
    Ok(Projected {
        monitor,
        flat,
        lanes,
        tag_lane,
        key_lane,
        forks,
    })
}

fn collect_spans(block: &Block, out: &mut [Span]) {
    for stmt in &block.stmts {
        if let Some(slot) = out.get_mut(stmt.id.0 as usize) {
            *slot = stmt.span;
        }
        match &stmt.kind {
            StmtKind::If {
                then, otherwise, ..
            } => {
                collect_spans(then, out);
                collect_spans(otherwise, out);
            }
            StmtKind::While { body, exit, .. } => {
                collect_spans(body, out);
                collect_spans(exit, out);
            }
            StmtKind::Par { branches } => branches.iter().for_each(|b| collect_spans(b, out)),
            StmtKind::Msg { .. } | StmtKind::Act { .. } => {}
        }
    }
}

/// A backend for workflows without `llm` actions.
#[derive(Debug)]
struct NoModel;

impl LlmBackend for NoModel {
    fn describe(&self) -> String {
        "none".into()
    }
    fn call<'a>(
        &'a self,
        _: &'a LlmRequest,
    ) -> troupe_llm::BoxFuture<'a, Result<troupe_llm::LlmAnswer, troupe_llm::LlmError>> {
        Box::pin(async {
            Err(troupe_llm::LlmError::Permanent {
                backend: "none".into(),
                message: "no LLM backend".into(),
            })
        })
    }
}

/// How the lifelines of a run take turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Schedule {
    /// Each ready lifeline runs until it must wait, in FIFO order.
    #[default]
    RunToBlock,
    /// A seeded random ready lifeline runs one operation at a time: for
    /// testing that every interleaving behaves.
    Random(u64),
}

#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The run's name, for people and messages (`run-3`).
    pub run_id: String,
    /// The run's identity, unique across runs and stores (a durable run's
    /// recorded one): the stem of every idempotency key it hands to
    /// effects and tools. `None`: a fresh one ([`new_run_uid`]), so that
    /// two in-memory runs never share a key.
    pub run_uid: Option<String>,
    /// Mixed into deterministic backends (the mock model).
    pub seed: u64,
    /// Record the trace (needed to verify the run).
    pub trace: bool,
    pub schedule: Schedule,
    /// Where the run is recorded durably (none: in memory only).
    pub journal: Option<Arc<dyn RunJournal>>,
    /// For one part of a placed run: which lifelines run here, and how the
    /// others are reached (none: every lifeline runs here). A part takes
    /// checkpoints of its own lifelines and its place on the channels
    /// between parts; a resumed part continues from its latest.
    pub remote: Option<Arc<dyn Remote>>,
    /// Stop with [`RunError::Parked`] once every action in flight has been
    /// a person's task for this long (and nothing else can move): a worker
    /// then gives the run back rather than hold a slot while people think.
    /// `None`: wait as long as it takes. Not for parts of placed runs.
    pub park_after: Option<std::time::Duration>,
    /// Stop at the next step boundary when triggered, with
    /// [`RunError::Interrupted`] (see [`crate::Interrupt`]).
    pub interrupt: Option<crate::Interrupt>,
}

impl std::fmt::Debug for dyn RunJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RunJournal")
    }
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            run_id: "run".into(),
            run_uid: None,
            seed: 0,
            trace: true,
            schedule: Schedule::RunToBlock,
            journal: None,
            remote: None,
            park_after: None,
            interrupt: None,
        }
    }
}

/// A fresh run identity: a random (version 4) UUID.
pub fn new_run_uid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// What a finished run produced.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The returned values, named as in `return`.
    pub results: Vec<(String, Value)>,
    pub trace: Option<Trace>,
    /// Operations executed, over all lifelines.
    pub steps: u64,
    /// The tool calls models chose that did not happen as asked (refused by
    /// a contract, declined by a person, failed, or malformed), one line
    /// each: a run can end well while its model's work did not.
    pub unmade_calls: Vec<String>,
}

impl Engine {
    pub fn program(&self) -> &Program {
        &self.inner.program
    }

    pub fn workflow(&self) -> &Workflow {
        &self.inner.program.workflows[self.inner.workflow]
    }

    pub fn types(&self) -> &TypeTable {
        &self.inner.program.types
    }

    /// Which LLM backend answers, for people.
    pub fn llm_description(&self) -> String {
        self.inner.llm.describe()
    }

    /// Reads inputs given as `name=value` texts (parsed by declared type)
    /// and/or a JSON object; every declared input must be given exactly once.
    pub fn parse_inputs(
        &self,
        pairs: &[(String, String)],
        json: Option<&serde_json::Value>,
    ) -> Result<Vec<Value>, RunError> {
        parse_inputs(self.workflow(), self.types(), pairs, json)
    }

    /// Runs the workflow once with `inputs` (in declaration order).
    pub async fn run(
        &self,
        inputs: Vec<Value>,
        options: RunOptions,
    ) -> Result<RunOutcome, RunError> {
        let journal = options.journal.clone();
        let run_id = options.run_id.clone();
        let span = tracing::info_span!(
            "run",
            run = %run_id,
            workflow = %self.workflow().name,
        );
        self.run_in(inputs, options, journal, run_id)
            .instrument(span)
            .await
    }

    async fn run_in(
        &self,
        inputs: Vec<Value>,
        options: RunOptions,
        journal: Option<Arc<dyn RunJournal>>,
        run_id: String,
    ) -> Result<RunOutcome, RunError> {
        let mut run = RunState::new(self.inner.clone(), options);
        // A resumed run continues from its latest checkpoint, if it has
        // one; otherwise it replays from the start.
        let resumed = match journal.as_ref().and_then(|j| j.resume_from()) {
            Some(checkpoint) => run
                .restore(checkpoint)
                .map_err(|message| RunError::Journal {
                    run: run_id.clone(),
                    message: format!("the checkpoint does not fit the workflow: {message}"),
                }),
            None => run.bind_inputs(inputs),
        };
        // A lifeline that runs parts concurrently replays its recorded
        // events in their recorded order (see `RunJournal::recorded_order`).
        if resumed.is_ok()
            && self.inner.forks.iter().any(|f| *f)
            && let Some(order) = journal.as_ref().and_then(|j| j.recorded_order())
        {
            for (l, stmts) in order.into_iter().enumerate() {
                if self.inner.forks.get(l).copied().unwrap_or(false) {
                    run.lanes[l].replay = stmts.iter().map(|s| self.inner.lanes.of(*s)).collect();
                }
            }
        }
        if let Some(every) = journal.as_ref().and_then(|j| j.checkpoint_every()) {
            run.next_checkpoint = run.events.saturating_add(every.max(1));
        }
        let outcome = match resumed {
            Ok(()) => run.drive().await,
            Err(e) => Err(e),
        };
        if let Some(journal) = journal {
            // A run that needs a person to settle an effect is not over.
            if !matches!(
                outcome,
                Err(RunError::NeedsResolution { .. }
                    | RunError::Journal { .. }
                    | RunError::Stopped { .. }
                    | RunError::Parked { .. }
                    | RunError::Interrupted { .. })
            ) {
                let ended = outcome.as_ref().map(|o| o.results.as_slice());
                journal
                    .finish(ended)
                    .await
                    .map_err(|message| RunError::Journal {
                        run: run_id.clone(),
                        message,
                    })?;
            }
        }
        outcome
    }

    /// Checks that a trace is a run of the workflow (⟦P⟧), in control mode:
    /// the owners' decisions are checked with the branches the lifelines
    /// took, so a run whose lifelines took another branch than their owner
    /// decided is rejected even when its erasure (without decisions) would
    /// be a run of the chart.
    pub fn verify(&self, run_id: &str, trace: &Trace) -> Result<(), RunError> {
        self.verify_with(run_id, trace, false)
    }

    /// [`Engine::verify`]; with `prefix`, an unfinished run is accepted when
    /// it is a prefix of a run. The trace is checked by the online monitor,
    /// event by event in its order: linear time, memory bounded by the
    /// workflow and the messages in flight.
    pub fn verify_with(&self, run_id: &str, trace: &Trace, prefix: bool) -> Result<(), RunError> {
        let mut monitor = self.monitor();
        let not_member = |e: Box<troupe_msc::NotMember>| RunError::NotMember {
            run: run_id.to_owned(),
            message: e.to_string(),
        };
        for e in &trace.entries {
            monitor.event(e.lifeline, &e.event).map_err(not_member)?;
        }
        monitor.finish(prefix).map_err(not_member)
    }

    /// Checks an execution whose lifelines were recorded apart (the parts
    /// of a placed run, each in its own process): its local words are put
    /// in an order in which they could have happened (every receive after
    /// its send, per channel and `par` lane), which the online monitor then
    /// checks. An execution with no such order is not a run.
    pub fn verify_execution(
        &self,
        run_id: &str,
        exec: &troupe_msc::Execution,
        prefix: bool,
    ) -> Result<(), RunError> {
        let lanes = &self.inner.lanes;
        let Some(events) = exec.linearize_lanes(&|s| lanes.of(s)) else {
            return Err(RunError::NotMember {
                run: run_id.to_owned(),
                message:
                    "its lifelines' events fit no order: a message is received that was never sent"
                        .into(),
            });
        };
        let trace = Trace::from_events(0, events);
        self.verify_with(run_id, &trace, prefix)
    }

    /// A fresh online monitor of this engine's workflow (its plans are
    /// shared, made once when the engine was built).
    pub fn monitor(&self) -> troupe_msc::Monitor {
        self.inner.monitor.fresh()
    }

    /// Checks a trace with the offline membership of the reference
    /// semantics (control mode): the monitor's oracle in tests.
    pub fn verify_offline(&self, run_id: &str, trace: &Trace) -> Result<(), RunError> {
        let semantics = self.inner.semantics.get_or_init(|| {
            Semantics::new(&self.inner.program, self.workflow()).map_err(|e| e.to_string())
        });
        let semantics = semantics.as_ref().map_err(|e| RunError::Setup(e.clone()))?;
        let exec = trace.execution(self.workflow().lifelines.len());
        semantics
            .check(
                &exec,
                &MemberOptions {
                    control: true,
                    prefix: false,
                },
            )
            .map_err(|e| RunError::NotMember {
                run: run_id.to_owned(),
                message: e.to_string(),
            })
    }
}

/// What travels on a channel (the same data a checkpoint keeps).
type Msg = Queued;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wait {
    Ready,
    /// For a message from a lifeline on a lane's channel.
    Recv(u32, u32),
    Action,
    /// The task that ran a lifeline's first part of a `par`, for the others.
    Join,
    /// A resumed run replays another part's recorded event first.
    Turn,
    Done,
}

/// A channel into a lifeline: (sender, lane).
type ChannelKey = (u32, u32);

/// A channel out of a lifeline: (receiver, sender, lane).
type ChannelKeyTo = (u32, u32, u32);

/// One channel into a lifeline, and the task waiting on it.
struct Inbox {
    key: ChannelKey,
    queue: VecDeque<Msg>,
    /// The task blocked on a receive from it (`NO_PARENT`: none).
    waiter: u32,
    /// From a lifeline of another part: the number of the next message to
    /// fetch, and whether a fetch is under way.
    fetched: u64,
    fetching: bool,
}

/// Messages fetched from another part: for `to`, on channel `key`.
type Arrival = (u32, ChannelKey, Result<Vec<Queued>, Elsewhere>);

/// The parent of a lifeline's first task.
const NO_PARENT: u32 = u32::MAX;

/// A lane's variables: only its own lifeline's, each at its slot.
struct LaneEnv {
    /// Per variable of the workflow, its slot at its own lifeline.
    slot_of: Arc<[u32]>,
    values: Vec<Option<Value>>,
}

impl LaneEnv {
    fn lookup(&self, var: troupe_check::ir::VarId) -> Option<&Value> {
        let slot = *<[u32]>::get(&self.slot_of, var.0 as usize)? as usize;
        <[Option<Value>]>::get(&self.values, slot)?.as_ref()
    }

    fn set(&mut self, var: troupe_check::ir::VarId, value: Value) {
        if let Some(slot) = self
            .slot_of
            .get(var.0 as usize)
            .and_then(|s| self.values.get_mut(*s as usize))
        {
            *slot = Some(value);
        }
    }
}

impl troupe_check::eval::Env for LaneEnv {
    fn get(&self, var: troupe_check::ir::VarId) -> Option<&Value> {
        self.lookup(var)
    }
}

/// One lifeline of a run: its variables and counts. Its tasks execute its
/// program: one, and one more for each further part of a `par` it runs.
struct Lane {
    env: LaneEnv,
    /// Per action: how many times this lifeline called it so far (in lane 0).
    occurrences: Vec<u64>,
    /// The counts kept per lane where it runs parts concurrently.
    keyed: BTreeMap<(u32, u32), u64>,
    /// Its live tasks, parents before their children; its first task (whose
    /// id is the lifeline's) comes first.
    tasks: Vec<u32>,
    /// While a resumed run replays: the lanes of the events it recorded
    /// before, in order (only for a lifeline with concurrent parts).
    replay: VecDeque<u32>,
}

/// A task of the run's scheduler: one lifeline executing one part of its
/// program.
struct Task {
    lane: u32,
    pc: u32,
    wait: Wait,
    /// The task that started it (`NO_PARENT` for a lifeline's first task).
    parent: u32,
    /// Its parts still running.
    children: u32,
    /// An action's result that came while another part's recorded event
    /// had to be replayed first.
    deferred: Option<Result<Vec<Value>, Failure>>,
    /// Where in the receiver's inbox list its last send, and in its own its
    /// last receive, found the channel: a loop sends and receives on the
    /// same channels round after round, so the lookups rarely search.
    hints: [u32; 2],
}

/// Why an asynchronous action did not produce values.
enum Failure {
    Action(String),
    Journal(String),
    /// A failure that is already a run error (a nested run's).
    Run(Box<RunError>),
    /// A non-idempotent tool call of a conversation (this step) started
    /// before a crash and never finished.
    NeedsResolution(String),
}

impl From<Stop> for Failure {
    fn from(stop: Stop) -> Failure {
        match stop {
            Stop::Failed(m) => Failure::Action(m),
            Stop::Journal(m) => Failure::Journal(m),
            Stop::NeedsResolution(step) => Failure::NeedsResolution(step),
        }
    }
}

type Pending = (u32, Result<Vec<Value>, Failure>);

struct RunState {
    engine: Arc<Inner>,
    options: RunOptions,
    /// The run's identity in idempotency keys ([`RunOptions::run_uid`]).
    uid: Arc<str>,
    lanes: Vec<Lane>,
    /// The tasks; task `i < lanes.len()` is lifeline `i`'s first task.
    tasks: Vec<Task>,
    /// Ended tasks' slots, for reuse.
    free: Vec<u32>,
    /// Per receiving lifeline, the FIFO queue of each (sender, lane) that
    /// has sent to it: channels are made on first use, so memory follows
    /// the channels a workflow uses, not the square of its lifelines. A
    /// lifeline receives from few others, so a linear search finds the queue.
    queues: Vec<Vec<Inbox>>,
    ready: VecDeque<u32>,
    /// Asynchronous actions in flight. Polled by the run's own task, so an
    /// action's completion wakes the run without crossing threads.
    pending: FuturesUnordered<troupe_llm::BoxFuture<'static, Pending>>,
    /// The tasks whose action in flight is a person's (see
    /// [`RunOptions::park_after`]).
    with_people: std::collections::BTreeSet<u32>,
    /// The tasks whose action in flight acts on the world (an effect, a
    /// tool): an interrupted run waits for these (see [`crate::Interrupt`]).
    effects: std::collections::BTreeSet<u32>,
    /// One part of a placed run: whether each lifeline runs here (empty:
    /// all do), the transport to the others, the fetches under way from
    /// them, and per channel to them how many messages were sent.
    local: Vec<bool>,
    remote: Option<Arc<dyn Remote>>,
    arrivals: FuturesUnordered<troupe_llm::BoxFuture<'static, Arrival>>,
    sent: BTreeMap<ChannelKeyTo, u64>,
    trace: Option<Vec<TraceEntry>>,
    /// One span per lifeline, the parent of its steps' spans.
    spans: Vec<tracing::Span>,
    clock: u64,
    steps: u64,
    /// Events recorded, over all lifelines (since the run began).
    events: u64,
    /// At how many events the next checkpoint is due (`u64::MAX`: never).
    next_checkpoint: u64,
    done: usize,
    rng: u64,
    /// The run's successful tool calls, for the `requires` relations of
    /// the calls models choose.
    tool_log: Arc<std::sync::Mutex<Vec<ToolRecord>>>,
    /// The model-chosen calls that did not happen ([`RunOutcome::unmade_calls`]).
    unmade: Arc<std::sync::Mutex<Vec<String>>>,
}

impl RunState {
    fn new(engine: Arc<Inner>, options: RunOptions) -> RunState {
        let wf = &engine.program.workflows[engine.workflow];
        let n = wf.lifelines.len();
        // Each variable lives at its own lifeline: a lane holds only those,
        // each at its slot (memory linear in variables, not lifelines × them).
        let mut counts = vec![0usize; n];
        let slot_of: Arc<[u32]> = wf
            .vars
            .iter()
            .map(|v| {
                let c = &mut counts[v.lifeline.0 as usize];
                *c += 1;
                (*c - 1) as u32
            })
            .collect();
        let lanes = (0..n)
            .map(|lane| Lane {
                env: LaneEnv {
                    slot_of: slot_of.clone(),
                    values: vec![None; counts[lane]],
                },
                occurrences: vec![0; engine.program.actions.len()],
                keyed: BTreeMap::new(),
                tasks: vec![lane as u32],
                replay: VecDeque::new(),
            })
            .collect();
        let remote = options.remote.clone();
        let local: Vec<bool> = match &remote {
            Some(r) => (0..n as u32).map(|l| r.is_local(LifelineId(l))).collect(),
            None => Vec::new(),
        };
        let tasks: Vec<Task> = (0..n)
            .map(|lane| Task {
                lane: lane as u32,
                pc: 0,
                // Another part's lifelines run there: here they count as done.
                wait: if local.get(lane) == Some(&false) {
                    Wait::Done
                } else {
                    Wait::Ready
                },
                parent: NO_PARENT,
                children: 0,
                deferred: None,
                hints: [0; 2],
            })
            .collect();
        let rng = match options.schedule {
            Schedule::Random(seed) => seed | 1,
            Schedule::RunToBlock => 1,
        };

        let spans = wf
            .lifelines
            .iter()
            .map(|l| tracing::info_span!("lifeline", lifeline = %l.name))
            .collect();
        RunState {
            uid: options.run_uid.clone().unwrap_or_else(new_run_uid).into(),
            spans,
            trace: options.trace.then(Vec::new),
            options,
            lanes,
            free: Vec::new(),
            queues: (0..n).map(|_| Vec::new()).collect(),
            ready: (0..n as u32)
                .filter(|&l| tasks[l as usize].wait == Wait::Ready)
                .collect(),
            done: tasks.iter().filter(|t| t.wait == Wait::Done).count(),
            tasks,
            pending: FuturesUnordered::new(),
            with_people: std::collections::BTreeSet::new(),
            effects: std::collections::BTreeSet::new(),
            local,
            remote,
            arrivals: FuturesUnordered::new(),
            sent: BTreeMap::new(),
            clock: 0,
            steps: 0,
            events: 0,
            next_checkpoint: u64::MAX,
            rng,
            engine,
            tool_log: Arc::default(),
            unmade: Arc::default(),
        }
    }

    fn workflow(&self) -> &Workflow {
        &self.engine.program.workflows[self.engine.workflow]
    }

    /// Stops a run in which only people's tasks are in flight: a
    /// checkpoint of it as it waits (every task is at an action, so the
    /// resumed run asks the same tasks again under the same keys, and
    /// finds their answers), its records made durable.
    async fn park(&mut self) -> RunError {
        let run = self.options.run_id.clone();
        if self.next_checkpoint != u64::MAX {
            self.checkpoint();
        }
        if let Some(journal) = self.options.journal.clone()
            && let Err(message) = journal.flush().await
        {
            return RunError::Journal { run, message };
        }
        RunError::Parked { run }
    }

    /// Stops an interrupted run (see [`crate::Interrupt`]): the effects and
    /// tool calls in flight get the grace to finish (their futures record
    /// their results), the rest is dropped, the records made durable.
    async fn interrupted(&mut self) -> RunError {
        let run = self.options.run_id.clone();
        let grace = self
            .options
            .interrupt
            .as_ref()
            .map_or(std::time::Duration::ZERO, |i| i.grace());
        let deadline = tokio::time::Instant::now() + grace;
        while !self.effects.is_empty() {
            match tokio::time::timeout_at(deadline, self.pending.next()).await {
                Ok(Some((task, _))) => {
                    self.effects.remove(&task);
                }
                Ok(None) | Err(_) => break,
            }
        }
        // Whatever is still in flight is abandoned here, before the flush:
        // a model call's answer is not recorded, a person's task stays open.
        self.pending = FuturesUnordered::new();
        if let Some(journal) = self.options.journal.clone()
            && let Err(message) = journal.flush().await
        {
            return RunError::Journal { run, message };
        }
        tracing::info!(run = %run, "interrupted at a step boundary");
        RunError::Interrupted { run }
    }

    /// Hands the journal a checkpoint of the run as it is now (see
    /// [`crate::checkpoint`]).
    fn checkpoint(&mut self) {
        let Some(journal) = self.options.journal.clone() else {
            self.next_checkpoint = u64::MAX;
            return;
        };
        let engine = self.engine.clone();
        let wf = &engine.program.workflows[engine.workflow];
        let mut pending = Vec::new();
        let lanes = self
            .lanes
            .iter()
            .enumerate()
            .map(|(i, lane)| {
                let mut occurrences = lane.occurrences.clone();
                let mut keyed = lane.keyed.clone();
                // A task waiting for an action is recorded before it: the
                // resumed run starts it again under the same key.
                for &t in &lane.tasks {
                    let task = &self.tasks[t as usize];
                    let waiting = task.wait == Wait::Action || task.deferred.is_some();
                    if waiting
                        && let Some(Op::Act {
                            call: Call::Action { action, .. },
                            ..
                        }) = engine.flat[i].ops.get(task.pc as usize)
                    {
                        let key = engine.key_lane_at(i, task.pc);
                        let n = if key == 0 {
                            &mut occurrences[action.0 as usize]
                        } else {
                            keyed.entry((key, action.0)).or_default()
                        };
                        *n = n.saturating_sub(1);
                        pending.push(StepKey {
                            lifeline: wf.lifelines[i].name.clone(),
                            action: engine.program.action(*action).name.clone(),
                            occurrence: occurrence_key(key, *n),
                        });
                    }
                }
                let root = &self.tasks[i];
                let parts = lane.tasks[1..]
                    .iter()
                    .map(|&t| {
                        let task = &self.tasks[t as usize];
                        PartState {
                            pc: task.pc,
                            parent: lane
                                .tasks
                                .iter()
                                .position(|&p| p == task.parent)
                                .unwrap_or(0) as u32,
                        }
                    })
                    .collect();
                LaneState {
                    pc: root.pc,
                    done: root.wait == Wait::Done,
                    values: lane.env.values.clone(),
                    occurrences: occurrences
                        .iter()
                        .enumerate()
                        .filter(|(_, n)| **n > 0)
                        .map(|(a, n)| (a as u32, *n))
                        .collect(),
                    parts,
                    keyed: keyed
                        .into_iter()
                        .filter(|(_, n)| *n > 0)
                        .map(|((l, a), n)| (l, a, n))
                        .collect(),
                }
            })
            .collect();
        let channels = self
            .queues
            .iter()
            .enumerate()
            .flat_map(|(to, inbox)| {
                inbox
                    .iter()
                    .filter(|i| !i.queue.is_empty())
                    .map(move |i| Channel {
                        from: LifelineId(i.key.0),
                        to: LifelineId(to as u32),
                        messages: i.queue.iter().cloned().collect(),
                    })
            })
            .collect();
        // A part's place on the channels that cross to other parts.
        let mut crossed: Vec<(RemoteChannel, u64)> = self
            .sent
            .iter()
            .map(|(&(to, from, lane), &n)| {
                let channel = RemoteChannel {
                    from: LifelineId(from),
                    to: LifelineId(to),
                    lane,
                };
                (channel, n)
            })
            .collect();
        for (to, inbox) in self.queues.iter().enumerate() {
            for i in inbox.iter().filter(|i| i.fetched > 0) {
                let channel = RemoteChannel {
                    from: LifelineId(i.key.0),
                    to: LifelineId(to as u32),
                    lane: i.key.1,
                };
                crossed.push((channel, i.fetched));
            }
        }
        let checkpoint = Checkpoint {
            lanes,
            channels,
            steps: self.steps,
            events: self.events,
            pending,
            monitor: None,
            crossed,
            tools: self.tool_log.lock().map(|l| l.clone()).unwrap_or_default(),
        };
        self.next_checkpoint = match journal.checkpoint(checkpoint) {
            Some(every) => self.events.saturating_add(every.max(1)),
            None => u64::MAX,
        };
    }

    /// Puts the run in the state of `checkpoint`, after checking that it
    /// fits the workflow: as many lifelines, positions inside their
    /// programs, values of their variables' types, actions that exist.
    fn restore(&mut self, checkpoint: Checkpoint) -> Result<(), String> {
        let engine = self.engine.clone();
        let wf = &engine.program.workflows[engine.workflow];
        let types = &engine.program.types;
        let n = self.lanes.len();
        if checkpoint.lanes.len() != n {
            return Err(format!(
                "it has {} lifelines, the workflow {n}",
                checkpoint.lanes.len()
            ));
        }
        // Each lifeline's variables, by slot, to check the values' types.
        let mut vars_of: Vec<Vec<VarId>> = vec![Vec::new(); n];
        for (i, v) in wf.vars.iter().enumerate() {
            vars_of[v.lifeline.0 as usize].push(VarId(i as u32));
        }
        let actions = engine.program.actions.len();
        self.ready.clear();
        self.done = 0;
        self.tasks.truncate(n);
        self.free.clear();
        for (i, state) in checkpoint.lanes.into_iter().enumerate() {
            let name = &wf.lifelines[i].name;
            let len = engine.flat[i].ops.len();
            if state.pc as usize > len {
                return Err(format!("{name} is past the end of its program"));
            }
            if state.values.len() != vars_of[i].len() {
                return Err(format!("{name} has another number of variables"));
            }
            for (value, var) in state.values.iter().zip(&vars_of[i]) {
                if let Some(value) = value
                    && !value.conforms(&wf.var(*var).ty, types)
                {
                    return Err(format!("{name}'s {} has the wrong type", wf.var(*var).name));
                }
            }
            let lane = &mut self.lanes[i];
            lane.occurrences = vec![0; actions];
            for (action, count) in state.occurrences {
                *lane
                    .occurrences
                    .get_mut(action as usize)
                    .ok_or_else(|| format!("{name} called an action that does not exist"))? = count;
            }
            lane.keyed.clear();
            for (l, action, count) in state.keyed {
                if action as usize >= actions || l as usize >= engine.lanes.len() {
                    return Err(format!("{name} called an action that does not exist"));
                }
                lane.keyed.insert((l, action), count);
            }
            lane.env.values = state.values;
            lane.tasks = vec![i as u32];
            // Parts run inside a `par`: neither the first task of a
            // lifeline that ended, nor a part past the program's end.
            if state.done && !state.parts.is_empty() {
                return Err(format!("{name} ended with parts still running"));
            }
            let root = &mut self.tasks[i];
            root.pc = state.pc;
            root.children = 0;
            root.deferred = None;
            if state.done {
                root.wait = Wait::Done;
                self.done += 1;
            } else {
                root.wait = Wait::Ready;
                self.ready.push_back(i as u32);
            }
            for (k, part) in state.parts.iter().enumerate() {
                if part.pc as usize >= len || part.parent as usize > k {
                    return Err(format!("{name} has a part that no run reaches"));
                }
                let parent = self.lanes[i].tasks[part.parent as usize];
                let t = self.tasks.len() as u32;
                self.tasks.push(Task {
                    lane: i as u32,
                    pc: part.pc,
                    wait: Wait::Ready,
                    parent,
                    children: 0,
                    deferred: None,
                    hints: [0; 2],
                });
                self.tasks[parent as usize].children += 1;
                self.lanes[i].tasks.push(t);
                self.ready.push_back(t);
            }
        }
        for q in &mut self.queues {
            q.clear();
        }
        for channel in checkpoint.channels {
            let (from, to) = (channel.from.0, channel.to.0);
            if from as usize >= n || to as usize >= n {
                return Err("a channel between lifelines that do not exist".into());
            }
            let lane_of = |m: &Msg| match m {
                Msg::Data { stmt, .. } => engine.lanes.of(*stmt),
                Msg::Control { tag, .. } => engine.tag_lane.get(tag).copied().unwrap_or(0),
            };
            let Some(first) = channel.messages.first() else {
                continue;
            };
            let lane = lane_of(first);
            if channel.messages.iter().any(|m| lane_of(m) != lane) {
                return Err("a channel holds the messages of two branches".into());
            }
            self.queues[to as usize].push(Inbox {
                fetched: 0,
                fetching: false,
                key: (from, lane),
                queue: channel.messages.into(),
                waiter: NO_PARENT,
            });
        }
        self.sent.clear();
        let actions_known = checkpoint
            .tools
            .iter()
            .all(|t| (t.action.0 as usize) < actions);
        if !actions_known {
            return Err("a tool call of an action that does not exist".into());
        }
        if let Ok(mut log) = self.tool_log.lock() {
            *log = checkpoint.tools;
        }
        for (channel, count) in checkpoint.crossed {
            let (from, to) = (channel.from.0, channel.to.0);
            if from as usize >= n || to as usize >= n || channel.lane as usize >= engine.lanes.len()
            {
                return Err("a channel between lifelines that do not exist".into());
            }
            match (self.is_here(from), self.is_here(to)) {
                (true, false) => {
                    self.sent.insert((to, from, channel.lane), count);
                }
                (false, true) => {
                    let i = self.inbox(to, (from, channel.lane), 0);
                    self.queues[to as usize][i].fetched = count;
                }
                _ => return Err("a channel between parts that is not this part's".into()),
            }
        }
        self.steps = checkpoint.steps;
        self.events = checkpoint.events;
        self.clock = checkpoint.events;
        Ok(())
    }

    /// Whether `lifeline` runs in this process (every one of a whole run).
    fn is_here(&self, lifeline: u32) -> bool {
        self.local.get(lifeline as usize) != Some(&false)
    }

    fn bind_inputs(&mut self, inputs: Vec<Value>) -> Result<(), RunError> {
        let engine = self.engine.clone();
        let wf = &engine.program.workflows[engine.workflow];
        if inputs.len() != wf.inputs.len() {
            return Err(RunError::Input {
                name: "inputs".into(),
                message: format!(
                    "expected {} input(s), got {}",
                    wf.inputs.len(),
                    inputs.len()
                ),
            });
        }
        for (var, value) in wf.inputs.iter().zip(inputs) {
            let v = wf.var(*var);
            if !value.conforms(&v.ty, &engine.program.types) {
                return Err(RunError::Input {
                    name: v.name.clone(),
                    message: format!("expected {}", engine.program.types.display(&v.ty)),
                });
            }
            self.lanes[v.lifeline.0 as usize].env.set(*var, value);
        }
        Ok(())
    }

    async fn drive(mut self) -> Result<RunOutcome, RunError> {
        let n = self.lanes.len();
        let mut turns = 0u32;
        loop {
            while let Some(lane) = self.pick() {
                // Checked before each step: `lane`'s step is not started,
                // and is the first the resumed run takes.
                if self.options.interrupt.as_ref().is_some_and(|i| i.is_set()) {
                    return Err(self.interrupted().await);
                }
                self.step(lane)?;
                // A long computation must not hold its thread: every so
                // often it lets tokio run other tasks (a transport, a
                // lease renewal, other runs) if its budget is spent.
                turns = turns.wrapping_add(1);
                if turns.is_multiple_of(256) {
                    tokio::task::consume_budget().await;
                }
            }
            if self.done == n {
                break;
            }
            if self.arrivals.is_empty() {
                let next = match self.options.park_after {
                    // Nothing can move but people: wait for them so long.
                    Some(after)
                        if !self.pending.is_empty()
                            && self.pending.len() == self.with_people.len() =>
                    {
                        tokio::select! {
                            next = tokio::time::timeout(after, self.pending.next()) => match next {
                                Ok(next) => next,
                                Err(_) => return Err(self.park().await),
                            },
                            () = interrupt::triggered(self.options.interrupt.as_ref()) => {
                                return Err(self.interrupted().await);
                            }
                        }
                    }
                    _ => tokio::select! {
                        next = self.pending.next() => next,
                        () = interrupt::triggered(self.options.interrupt.as_ref()) => {
                            return Err(self.interrupted().await);
                        }
                    },
                };
                let Some((lane, result)) = next else {
                    return Err(self.deadlock());
                };
                self.complete(lane, result)?;
                continue;
            }
            // A part of a placed run also waits for other parts' messages.
            tokio::select! {
                Some((lane, result)) = self.pending.next(), if !self.pending.is_empty() => {
                    self.complete(lane, result)?;
                }
                Some(arrival) = self.arrivals.next() => self.arrive(arrival)?,
                () = interrupt::triggered(self.options.interrupt.as_ref()) => {
                    return Err(self.interrupted().await);
                }
            }
        }
        let engine = self.engine.clone();
        let wf = &engine.program.workflows[engine.workflow];
        let results = wf
            .results
            .iter()
            // A part of a placed run returns its own lifelines' results.
            .filter(|var| self.local.get(wf.var(**var).lifeline.0 as usize) != Some(&false))
            .map(|var| {
                let v = wf.var(*var);
                let value = self.lanes[v.lifeline.0 as usize]
                    .env
                    .lookup(*var)
                    .cloned()
                    .unwrap_or(Value::Bool(false));
                (v.name.clone(), value)
            })
            .collect();
        Ok(RunOutcome {
            results,
            trace: self.trace.map(|entries| Trace { entries }),
            steps: self.steps,
            unmade_calls: self.unmade.lock().map(|u| u.clone()).unwrap_or_default(),
        })
    }

    fn pick(&mut self) -> Option<u32> {
        match self.options.schedule {
            Schedule::RunToBlock => self.ready.pop_front(),
            Schedule::Random(_) => {
                if self.ready.is_empty() {
                    return None;
                }
                self.rng ^= self.rng << 13;
                self.rng ^= self.rng >> 7;
                self.rng ^= self.rng << 17;
                let i = (self.rng % self.ready.len() as u64) as usize;
                self.ready.swap_remove_back(i)
            }
        }
    }

    fn deadlock(&self) -> RunError {
        let wf = self.workflow();
        let waiting: Vec<String> = self
            .tasks
            .iter()
            .filter_map(|t| match t.wait {
                Wait::Recv(from, _) => Some(format!(
                    "{} waits for {}",
                    wf.lifelines[t.lane as usize].name, wf.lifelines[from as usize].name
                )),
                _ => None,
            })
            .collect();
        RunError::Protocol {
            run: self.options.run_id.clone(),
            lifeline: "(all)".into(),
            message: format!("deadlock: {}", waiting.join(", ")),
        }
    }

    fn location(&self, lane: u32, stmt: StmtId, action: Option<ActionId>) -> Location {
        let span = self
            .engine
            .stmt_spans
            .get(stmt.0 as usize)
            .copied()
            .unwrap_or_default();
        Location {
            lifeline: self.workflow().lifelines[lane as usize].name.clone(),
            action: action.map(|a| self.engine.program.action(a).name.clone()),
            line: self.engine.lines.as_ref().map_or(0, |l| l.line(span.start)),
        }
    }

    fn eval_error(&self, lane: u32, stmt: StmtId, e: EvalError) -> RunError {
        RunError::Eval {
            run: self.options.run_id.clone(),
            at: self.location(lane, stmt, None),
            message: e.message,
        }
    }

    /// Whether events are wanted at all (a trace or a journal).
    fn recording(&self) -> bool {
        self.trace.is_some() || self.options.journal.is_some()
    }

    fn record(&mut self, lane: u32, event: Event) {
        self.events += 1;
        let l = &mut self.lanes[lane as usize];
        if l.replay.pop_front().is_some() {
            // Another part may hold the next recorded event.
            for &t in &l.tasks {
                let task = &mut self.tasks[t as usize];
                if task.wait == Wait::Turn {
                    task.wait = Wait::Ready;
                    self.ready.push_back(t);
                }
            }
        }
        if let Some(journal) = &self.options.journal {
            journal.event(LifelineId(lane), &event);
        }
        if let Some(trace) = &mut self.trace {
            trace.push(TraceEntry {
                time: self.clock,
                lifeline: LifelineId(lane),
                event,
            });
            self.clock += 1;
        }
    }

    /// The index of channel `key` in `to`'s inbox list (made on first use),
    /// trying `hint` first.
    fn inbox(&mut self, to: u32, key: ChannelKey, hint: u32) -> usize {
        let inbox = &mut self.queues[to as usize];
        if inbox.get(hint as usize).is_some_and(|i| i.key == key) {
            return hint as usize;
        }
        match inbox.iter().position(|i| i.key == key) {
            Some(i) => i,
            None => {
                inbox.push(Inbox {
                    key,
                    queue: VecDeque::new(),
                    waiter: NO_PARENT,
                    fetched: 0,
                    fetching: false,
                });
                inbox.len() - 1
            }
        }
    }

    /// `task` (of lifeline `from`) puts `msg` on the channel of lane `chan`
    /// from `from` to `to`, and wakes the task of `to` that waits for it.
    fn push(&mut self, task: u32, to: u32, chan: u32, msg: Msg) {
        let from = self.tasks[task as usize].lane;
        if self.local.get(to as usize) == Some(&false) {
            return self.send_away(from, to, chan, msg);
        }
        let i = self.inbox(to, (from, chan), self.tasks[task as usize].hints[0]);
        self.tasks[task as usize].hints[0] = i as u32;
        let inbox = &mut self.queues[to as usize][i];
        inbox.queue.push_back(msg);
        let waiter = std::mem::replace(&mut inbox.waiter, NO_PARENT);
        if let Some(t) = self.tasks.get_mut(waiter as usize)
            && t.wait == Wait::Recv(from, chan)
        {
            t.wait = Wait::Ready;
            self.ready.push_back(waiter);
        }
    }

    /// The next message for `task` (of lifeline `to`) on the channel of
    /// lane `chan` from `from`; when there is none, the task is the
    /// channel's waiter (the caller makes it wait).
    fn pop(&mut self, task: u32, from: u32, chan: u32) -> Option<Msg> {
        let to = self.tasks[task as usize].lane;
        let i = self.inbox(to, (from, chan), self.tasks[task as usize].hints[1]);
        self.tasks[task as usize].hints[1] = i as u32;
        let inbox = &mut self.queues[to as usize][i];
        let msg = inbox.queue.pop_front();
        if msg.is_none() {
            inbox.waiter = task;
            if self.local.get(from as usize) == Some(&false) && !inbox.fetching {
                inbox.fetching = true;
                let seq = inbox.fetched;
                self.fetch(to, (from, chan), seq);
            }
        }
        msg
    }

    /// Hands a message for a lifeline of another part to the transport,
    /// numbered on its channel.
    fn send_away(&mut self, from: u32, to: u32, chan: u32, msg: Msg) {
        let Some(remote) = &self.remote else { return };
        let seq = self.sent.entry((to, from, chan)).or_default();
        remote.send(
            RemoteChannel {
                from: LifelineId(from),
                to: LifelineId(to),
                lane: chan,
            },
            *seq,
            &msg,
        );
        *seq += 1;
    }

    /// Asks the transport for the messages of channel `key` into `to`
    /// from number `seq` on.
    fn fetch(&mut self, to: u32, key: ChannelKey, seq: u64) {
        let Some(remote) = &self.remote else { return };
        let channel = RemoteChannel {
            from: LifelineId(key.0),
            to: LifelineId(to),
            lane: key.1,
        };
        let got = remote.receive(channel, seq);
        self.arrivals
            .push(Box::pin(async move { (to, key, got.await) }));
    }

    /// Messages fetched from another part arrived: they join their queue,
    /// and the task waiting on it goes on.
    fn arrive(&mut self, (to, key, got): Arrival) -> Result<(), RunError> {
        let msgs = got.map_err(|e| e.into_error(&self.options.run_id))?;
        let i = self.inbox(to, key, 0);
        let inbox = &mut self.queues[to as usize][i];
        inbox.fetching = false;
        inbox.fetched += msgs.len() as u64;
        inbox.queue.extend(msgs);
        if inbox.queue.is_empty() {
            // Nothing yet (a transport may answer empty): ask again.
            inbox.fetching = true;
            let seq = inbox.fetched;
            self.fetch(to, key, seq);
            return Ok(());
        }
        let waiter = std::mem::replace(&mut inbox.waiter, NO_PARENT);
        if let Some(t) = self.tasks.get_mut(waiter as usize)
            && t.lane == to
            && t.wait == Wait::Recv(key.0, key.1)
        {
            t.wait = Wait::Ready;
            self.ready.push_back(waiter);
        }
        Ok(())
    }

    /// Whether `lane` may record an event of statement `stmt` now: not
    /// while a resumed run replays another part's recorded event first.
    fn my_turn(&self, lane: u32, stmt: StmtId) -> bool {
        self.lanes[lane as usize]
            .replay
            .front()
            .is_none_or(|&l| l == self.engine.lanes.of(stmt))
    }

    /// Starts a task at `pc` of `lane`'s program, a part of `parent`'s `par`.
    fn spawn(&mut self, lane: u32, pc: u32, parent: u32) {
        let task = Task {
            lane,
            pc,
            wait: Wait::Ready,
            parent,
            children: 0,
            deferred: None,
            hints: [0; 2],
        };
        let t = match self.free.pop() {
            Some(t) => {
                self.tasks[t as usize] = task;
                t
            }
            None => {
                self.tasks.push(task);
                (self.tasks.len() - 1) as u32
            }
        };
        self.tasks[parent as usize].children += 1;
        self.lanes[lane as usize].tasks.push(t);
        self.ready.push_back(t);
    }

    /// A part other than the first ended: its task goes, and its parent
    /// goes on when it was the last.
    fn end_part(&mut self, task: u32) {
        let t = &mut self.tasks[task as usize];
        t.wait = Wait::Done;
        let (lane, parent) = (t.lane, t.parent);
        self.lanes[lane as usize].tasks.retain(|&x| x != task);
        self.free.push(task);
        if let Some(p) = self.tasks.get_mut(parent as usize) {
            p.children = p.children.saturating_sub(1);
            if p.children == 0 && p.wait == Wait::Join {
                p.wait = Wait::Ready;
                self.ready.push_back(parent);
            }
        }
    }

    /// Runs `task` until it waits, ends, or (random schedule) for one op.
    fn step(&mut self, task: u32) -> Result<(), RunError> {
        if let Some(result) = self.tasks[task as usize].deferred.take() {
            return self.complete(task, result);
        }
        let engine = self.engine.clone();
        let lane = self.tasks[task as usize].lane;
        let ops = &engine.flat[lane as usize].ops;
        let types = &engine.program.types;
        let one_op = matches!(self.options.schedule, Schedule::Random(_));
        let gated = !self.lanes[lane as usize].replay.is_empty();
        loop {
            // Between two operations the state is consistent: a checkpoint
            // taken here is one a resumed run can continue from.
            if self.events >= self.next_checkpoint {
                self.checkpoint();
            }
            let pc = self.tasks[task as usize].pc;
            let Some(op) = ops.get(pc as usize) else {
                self.tasks[task as usize].wait = Wait::Done;
                self.done += 1;
                return Ok(());
            };
            if gated {
                let stmt = match op {
                    Op::Send { stmt, .. }
                    | Op::Recv { stmt, .. }
                    | Op::Decide { stmt, .. }
                    | Op::Await { stmt, .. } => Some(*stmt),
                    Op::Act {
                        stmt,
                        call: Call::Expr(_),
                        ..
                    } => Some(*stmt),
                    Op::Act {
                        stmt,
                        call: Call::Action { action, .. },
                        ..
                    } => matches!(
                        engine.performers[action.0 as usize],
                        Performer::PureExpr | Performer::PureHost(_)
                    )
                    .then_some(*stmt),
                    _ => None,
                };
                if let Some(stmt) = stmt
                    && !self.my_turn(lane, stmt)
                {
                    self.tasks[task as usize].wait = Wait::Turn;
                    return Ok(());
                }
            }
            self.steps += 1;
            match op {
                Op::Send { stmt, to, items } => {
                    let env = &self.lanes[lane as usize].env;
                    let mut values = Vec::with_capacity(items.len());
                    for item in items {
                        values.push(
                            eval(item, env, types).map_err(|e| self.eval_error(lane, *stmt, e))?,
                        );
                    }
                    if self.recording() {
                        let msg = Message::Data {
                            stmt: *stmt,
                            values: Some(values.clone()),
                        };
                        self.record(lane, Event::Send { to: *to, msg });
                    }
                    self.push(
                        task,
                        to.0,
                        engine.lanes.of(*stmt),
                        Msg::Data {
                            stmt: *stmt,
                            values,
                        },
                    );
                    self.tasks[task as usize].pc += 1;
                }
                Op::Recv { stmt, from, binds } => {
                    match self.pop(task, from.0, engine.lanes.of(*stmt)) {
                        None => {
                            self.tasks[task as usize].wait =
                                Wait::Recv(from.0, engine.lanes.of(*stmt));
                            return Ok(());
                        }
                        Some(Msg::Data { stmt: got, values })
                            if got == *stmt && values.len() == binds.len() =>
                        {
                            if self.recording() {
                                let msg = Message::Data {
                                    stmt: *stmt,
                                    values: Some(values.clone()),
                                };
                                self.record(lane, Event::Recv { from: *from, msg });
                            }
                            let env = &mut self.lanes[lane as usize].env;
                            for (bind, value) in binds.iter().zip(values) {
                                if let Recv::Bind(var) = bind {
                                    env.set(*var, value);
                                }
                            }
                            self.tasks[task as usize].pc += 1;
                        }
                        Some(other) => {
                            return Err(self.protocol(
                                lane,
                                format!("expected the message of s{}, got {other:?}", stmt.0),
                            ));
                        }
                    }
                }
                Op::Act {
                    stmt,
                    outputs,
                    call,
                } => match call {
                    Call::Expr(e) => {
                        let value = eval(e, &self.lanes[lane as usize].env, types)
                            .map_err(|e| self.eval_error(lane, *stmt, e))?;
                        self.finish_act(task, *stmt, outputs, vec![value]);
                    }
                    Call::Action { action, args } => {
                        let env = &self.lanes[lane as usize].env;
                        let mut argv = Vec::with_capacity(args.len());
                        for a in args {
                            argv.push(
                                eval(a, env, types).map_err(|e| self.eval_error(lane, *stmt, e))?,
                            );
                        }
                        match &engine.performers[action.0 as usize] {
                            Performer::PureExpr => {
                                let ActionKind::Pure { body: Some(body) } =
                                    &engine.program.action(*action).kind
                                else {
                                    unreachable!(
                                        "PureExpr is only built for pure actions with a body"
                                    )
                                };
                                let value = eval(body, argv.as_slice(), types)
                                    .map_err(|e| self.eval_error(lane, *stmt, e))?;
                                self.finish_act(task, *stmt, outputs, vec![value]);
                            }
                            Performer::PureHost(f) => {
                                let values = f(&argv)
                                    .map_err(|m| self.action_error(lane, *stmt, *action, m))?;
                                let values = self.check_outputs(lane, *stmt, *action, values)?;
                                self.finish_act(task, *stmt, outputs, values);
                            }
                            performer => {
                                let performer = performer.clone();
                                self.start(task, *action, argv, performer)?;
                                self.tasks[task as usize].wait = Wait::Action;
                                return Ok(());
                            }
                        }
                    }
                },
                Op::Decide {
                    stmt,
                    guard,
                    tag,
                    notify,
                    on_false,
                } => {
                    let decision = match eval(guard, &self.lanes[lane as usize].env, types) {
                        Ok(Value::Bool(b)) => b,
                        Ok(other) => {
                            return Err(self.protocol(lane, format!("guard gave {other:?}")));
                        }
                        Err(e) => return Err(self.eval_error(lane, *stmt, e)),
                    };
                    if self.recording() {
                        self.record(
                            lane,
                            Event::Decide {
                                stmt: *stmt,
                                tag: *tag,
                                decision,
                            },
                        );
                    }
                    for r in notify {
                        if self.recording() {
                            let msg = Message::Control {
                                stmt: *stmt,
                                tag: *tag,
                                decision,
                            };
                            self.record(lane, Event::Send { to: *r, msg });
                        }
                        self.push(
                            task,
                            r.0,
                            engine.lanes.of(*stmt),
                            Msg::Control {
                                tag: *tag,
                                decision,
                            },
                        );
                    }
                    self.tasks[task as usize].pc = if decision { pc + 1 } else { *on_false };
                }
                Op::Await {
                    stmt,
                    from,
                    tag,
                    on_false,
                } => match self.pop(task, from.0, engine.lanes.of(*stmt)) {
                    None => {
                        self.tasks[task as usize].wait = Wait::Recv(from.0, engine.lanes.of(*stmt));
                        return Ok(());
                    }
                    Some(Msg::Control { tag: got, decision }) if got == *tag => {
                        if self.recording() {
                            let msg = Message::Control {
                                stmt: *stmt,
                                tag: *tag,
                                decision,
                            };
                            self.record(lane, Event::Recv { from: *from, msg });
                        }
                        self.tasks[task as usize].pc = if decision { pc + 1 } else { *on_false };
                    }
                    Some(other) => {
                        return Err(self.protocol(
                            lane,
                            format!("expected decision {tag} of s{}, got {other:?}", stmt.0),
                        ));
                    }
                },
                Op::Jump { target } => self.tasks[task as usize].pc = *target,
                Op::Fork { parts, .. } => {
                    for &start in parts {
                        self.spawn(lane, start, task);
                    }
                    self.tasks[task as usize].pc += 1;
                }
                Op::EndPart { fork, part, .. } => {
                    if *part != 0 {
                        self.end_part(task);
                        return Ok(());
                    }
                    if self.tasks[task as usize].children > 0 {
                        self.tasks[task as usize].wait = Wait::Join;
                        return Ok(());
                    }
                    let Some(Op::Fork { join, .. }) = ops.get(*fork as usize) else {
                        return Err(self.protocol(lane, "a part ends outside a `par`".into()));
                    };
                    self.tasks[task as usize].pc = *join;
                }
            }
            if one_op {
                self.ready.push_back(task);
                return Ok(());
            }
        }
    }

    fn protocol(&self, lane: u32, message: String) -> RunError {
        RunError::Protocol {
            run: self.options.run_id.clone(),
            lifeline: self.workflow().lifelines[lane as usize].name.clone(),
            message,
        }
    }

    fn action_error(&self, lane: u32, stmt: StmtId, action: ActionId, message: String) -> RunError {
        RunError::Action {
            run: self.options.run_id.clone(),
            at: self.location(lane, stmt, Some(action)),
            message,
        }
    }

    /// Checks an action's outputs against its declared types.
    fn check_outputs(
        &self,
        lane: u32,
        stmt: StmtId,
        action: ActionId,
        values: Vec<Value>,
    ) -> Result<Vec<Value>, RunError> {
        let decl = self.engine.program.action(action);
        let types = &self.engine.program.types;
        if values.len() != decl.outputs.len() {
            let msg = format!(
                "returned {} value(s) but declares {} output(s)",
                values.len(),
                decl.outputs.len()
            );
            return Err(self.action_error(lane, stmt, action, msg));
        }
        for (v, out) in values.iter().zip(&decl.outputs) {
            if !v.conforms(&out.ty, types) {
                let msg = format!(
                    "output `{}` should be {}, but is {}",
                    out.name,
                    types.display(&out.ty),
                    v.to_json(types)
                );
                return Err(self.action_error(lane, stmt, action, msg));
            }
        }
        Ok(values)
    }

    fn finish_act(
        &mut self,
        task: u32,
        stmt: StmtId,
        outputs: &[Option<VarId>],
        values: Vec<Value>,
    ) {
        let lane = self.tasks[task as usize].lane;
        if self.recording() {
            self.record(
                lane,
                Event::Act {
                    stmt,
                    outputs: Some(values.clone()),
                },
            );
        }
        let l = &mut self.lanes[lane as usize];
        for (out, value) in outputs.iter().zip(values) {
            if let Some(var) = out {
                l.env.set(*var, value);
            }
        }
        self.tasks[task as usize].pc += 1;
    }

    /// Starts an asynchronous action on the run's task set, or takes its
    /// result from the journal when a resumed run already has it.
    fn start(
        &mut self,
        task: u32,
        action: ActionId,
        args: Vec<Value>,
        performer: Performer,
    ) -> Result<(), RunError> {
        let engine = self.engine.clone();
        let decl = engine.program.action(action);
        let (lane, pc) = {
            let t = &self.tasks[task as usize];
            (t.lane, t.pc)
        };
        let occurrence = {
            let key = engine.key_lane_at(lane as usize, pc);
            let l = &mut self.lanes[lane as usize];
            let occ = if key == 0 {
                &mut l.occurrences[action.0 as usize]
            } else {
                l.keyed.entry((key, action.0)).or_default()
            };
            let k = *occ;
            *occ += 1;
            occurrence_key(key, k)
        };
        let lifeline = self.workflow().lifelines[lane as usize].name.clone();
        let step = StepKey {
            lifeline,
            action: decl.name.clone(),
            occurrence,
        };
        let (kind, idempotent) = match (&performer, &decl.kind) {
            (Performer::Llm, _) => (StepKind::Llm, true),
            (Performer::Human, _) => (StepKind::Human, false),
            (Performer::Mock, _) => (StepKind::Mock, true),
            // Safe to repeat: its plan and its nested steps are journaled.
            (Performer::Planner, _) => (StepKind::Plan, true),
            (Performer::Tool(_), ActionKind::Tool(t)) => (StepKind::Tool, t.idempotent),
            (_, ActionKind::Effect { idempotent }) => (StepKind::Effect, *idempotent),
            _ => (StepKind::Effect, false),
        };
        let journal = self.options.journal.clone();
        if let Some(journal) = &journal {
            match journal.recorded(&step) {
                Some(Recorded::Done(values)) => {
                    if kind == StepKind::Tool {
                        self.log_tool(action, &args, &values);
                    }
                    self.pending
                        .push(Box::pin(async move { (task, Ok(values)) }));
                    return Ok(());
                }
                // A crash between "started" and "finished": repeat only what
                // is safe to repeat (the idempotency key stays the same).
                Some(Recorded::Started) if !idempotent => {
                    return Err(RunError::NeedsResolution {
                        run: self.options.run_id.clone(),
                        step: step.to_string(),
                    });
                }
                Some(Recorded::Started) | None => {}
            }
        }
        let span = tracing::info_span!(
            parent: &self.spans[lane as usize],
            "step",
            step = %step,
            kind = kind.as_str(),
        );
        if let (Performer::Llm, ActionKind::Llm(llm)) = (&performer, &decl.kind)
            && !llm.tools.is_empty()
        {
            let agent = self.agent(&engine, action, &step, &args);
            let timeout = engine
                .timeouts
                .get(&decl.name)
                .copied()
                .or(engine.default_timeout);
            let fut = async move {
                let run = agent.run();
                let values = match timeout {
                    Some(t) => match tokio::time::timeout(t, run).await {
                        Ok(r) => r?,
                        Err(_) => return Err(Failure::Action(format!("timed out after {t:?}"))),
                    },
                    None => run.await?,
                };
                if let Some(journal) = &journal {
                    journal
                        .record(&step, kind, &args, &values)
                        .await
                        .map_err(Failure::Journal)?;
                }
                Ok(values)
            };
            self.pending
                .push(Box::pin(async move { (task, fut.instrument(span).await) }));
            return Ok(());
        }
        if let Performer::Planner = performer {
            let call = planner::PlannerCall {
                engine: engine.clone(),
                action,
                step: step.clone(),
                args: args.clone(),
                run_id: self.options.run_id.clone(),
                uid: self.uid.clone(),
                seed: self.options.seed,
                journal: journal.clone(),
            };
            let fut = async move {
                let values = call.perform().await?;
                if let Some(journal) = &journal {
                    journal
                        .record(&step, kind, &args, &values)
                        .await
                        .map_err(Failure::Journal)?;
                }
                Ok(values)
            };
            self.pending
                .push(Box::pin(async move { (task, fut.instrument(span).await) }));
            return Ok(());
        }
        let log = (kind == StepKind::Tool).then(|| (self.tool_log.clone(), action, args.clone()));
        let make = self.performance(&engine, action, &step, &args, performer);
        let timeout = engine
            .timeouts
            .get(&decl.name)
            .copied()
            .or(engine.default_timeout);
        let outputs: Vec<Type> = decl.outputs.iter().map(|p| p.ty.clone()).collect();
        let types = engine.types.clone();
        let fut = async move {
            if let (Some(journal), true) = (&journal, kind.is_effect()) {
                journal
                    .begin_effect(&step, kind, &args)
                    .await
                    .map_err(Failure::Journal)?;
            }
            if let (Some(journal), StepKind::Human) = (&journal, kind) {
                journal.flush().await.map_err(Failure::Journal)?;
            }
            let perform = make();
            let (values, timed_out) = match timeout {
                Some(t) => match tokio::time::timeout(t, perform).await {
                    Ok(r) => (r, false),
                    Err(_) => (Err(format!("timed out after {t:?}")), true),
                },
                None => (perform.await, false),
            };
            let values = match values {
                Ok(v) => v,
                Err(e) => {
                    // An effect that said it failed may run again on retry. A
                    // timeout, or a tool call (whose error may be a lost
                    // connection), says nothing of what happened: the start
                    // stays, and a person settles it.
                    if let (Some(journal), StepKind::Effect, false) = (&journal, kind, timed_out) {
                        journal
                            .forget_effect(&step)
                            .await
                            .map_err(Failure::Journal)?;
                    }
                    return Err(Failure::Action(e));
                }
            };
            // Only a well-typed result is worth recording; the run reports
            // the mismatch with its location.
            let well_typed = values.len() == outputs.len()
                && values
                    .iter()
                    .zip(&outputs)
                    .all(|(v, t)| v.conforms(t, &types));
            if let (Some(journal), true) = (&journal, well_typed) {
                journal
                    .record(&step, kind, &args, &values)
                    .await
                    .map_err(Failure::Journal)?;
            }
            if let (Some((tool_log, action, args)), true) = (log, well_typed)
                && let Ok(mut l) = tool_log.lock()
            {
                l.push(ToolRecord {
                    action,
                    args,
                    outputs: values.clone(),
                });
            }
            Ok(values)
        };
        match kind {
            StepKind::Human => {
                self.with_people.insert(task);
            }
            StepKind::Effect | StepKind::Tool => {
                self.effects.insert(task);
            }
            _ => {}
        }
        self.pending
            .push(Box::pin(async move { (task, fut.instrument(span).await) }));
        Ok(())
    }

    /// What performing an action means: a function that starts it (called
    /// only once the journal allows, so that nothing runs before its start
    /// is recorded).
    fn performance(
        &self,
        engine: &Arc<Inner>,
        action: ActionId,
        step: &StepKey,
        args: &[Value],
        performer: Performer,
    ) -> Box<dyn FnOnce() -> troupe_llm::BoxFuture<'static, Result<Vec<Value>, String>> + Send>
    {
        let decl = engine.program.action(action);
        let types = &engine.program.types;
        let outputs: Vec<OutputSlot> = decl
            .outputs
            .iter()
            .map(|p| OutputSlot {
                name: p.name.clone(),
                ty: p.ty.clone(),
            })
            .collect();
        let key = CallKey {
            lifeline: step.lifeline.clone(),
            action: step.action.clone(),
            occurrence: step.occurrence,
        };
        let seed = self.options.seed;
        let run = self.options.run_id.clone();
        let idempotency_key = || format!("{}/{step}", self.uid);
        let llm_request =
            |system: Option<String>, prompt: String, model, temperature, retries| LlmRequest {
                key: key.clone(),
                seed,
                system,
                prompt,
                outputs: outputs.clone(),
                types: engine.types.clone(),
                model,
                temperature,
                retries,
                tools: Vec::new(),
                conversation: Vec::new(),
                plan: None,
            };
        match (performer, &decl.kind) {
            (Performer::Llm, ActionKind::Llm(llm)) => {
                let request = llm_request(
                    llm.system.as_ref().map(|t| render(t, args, types)),
                    render(&llm.prompt, args, types),
                    llm.model.clone(),
                    llm.temperature,
                    llm.retries,
                );
                let backend = engine.llm.clone();
                let journal = self.options.journal.clone();
                let step = step.clone();
                Box::new(move || {
                    Box::pin(async move {
                        crate::agent::model_call(&*backend, &request, journal.as_deref(), &step)
                            .await
                            .map(|a| a.values)
                            .map_err(|e| e.to_string())
                    })
                })
            }
            (Performer::Mock, _) => {
                let request = llm_request(None, String::new(), None, None, None);
                let backend = engine.mock.clone().unwrap_or_else(|| engine.llm.clone());
                Box::new(move || {
                    Box::pin(async move {
                        backend
                            .call(&request)
                            .await
                            .map(|a| a.values)
                            .map_err(|e| e.to_string())
                    })
                })
            }
            (Performer::Tool(host), ActionKind::Tool(tool)) => {
                let arguments = decl
                    .params
                    .iter()
                    .zip(args)
                    .map(|(p, v)| (p.name.clone(), v.to_json(types)))
                    .collect();
                let call = ToolCall {
                    server: tool.server.clone(),
                    tool: tool.remote.clone(),
                    arguments,
                    outputs,
                    types: engine.types.clone(),
                    idempotency_key: idempotency_key(),
                };
                Box::new(move || host.call(call))
            }
            (Performer::Effect(f), _) => {
                let call = EffectCall {
                    args: args.to_vec(),
                    idempotency_key: idempotency_key(),
                };
                Box::new(move || f(call))
            }
            (Performer::Human, ActionKind::Human(h)) => {
                let ty = decl.outputs.first().map_or(Type::Text, |p| p.ty.clone());
                let options = match &ty {
                    Type::Enum(id) => types.enum_def(*id).values.clone(),
                    _ => Vec::new(),
                };
                let task = HumanTask {
                    key: step.to_string(),
                    run,
                    lifeline: step.lifeline.clone(),
                    action: decl.name.clone(),
                    prompt: render(&h.ask, args, types),
                    prefill: h.prefill.as_ref().map(|t| render(t, args, types)),
                    answer: h.answer,
                    options,
                    ty: ty.clone(),
                    deadline: h.deadline.clone(),
                };
                let inbox = engine.humans.clone();
                let types = engine.types.clone();
                let answer_kind = h.answer;
                Box::new(move || {
                    Box::pin(async move {
                        let answer = inbox.ask(task).await?;
                        if answer_kind == AnswerKind::Acknowledge {
                            // The empty record: the action has no outputs.
                            return match &answer {
                                serde_json::Value::Object(o) if o.is_empty() => Ok(Vec::new()),
                                other => Err(format!(
                                    "an acknowledgement is answered with {{}}, not {other}"
                                )),
                            };
                        }
                        let answer = match (answer_kind, &answer) {
                            // A confirm may be answered with yes/no text.
                            (AnswerKind::Confirm, serde_json::Value::String(s)) => {
                                Value::parse(s, &ty, &types)?
                            }
                            _ => Value::from_json(&answer, &ty, &types)?,
                        };
                        Ok(vec![answer])
                    })
                })
            }
            _ => Box::new(|| Box::pin(async { Err("no performer for this action".to_owned()) })),
        }
    }

    /// Keeps a `tool` action's call for the contract checks of later
    /// calls that models choose.
    fn log_tool(&self, action: ActionId, args: &[Value], outputs: &[Value]) {
        if let Ok(mut l) = self.tool_log.lock() {
            l.push(ToolRecord {
                action,
                args: args.to_vec(),
                outputs: outputs.to_vec(),
            });
        }
    }

    /// The conversation of an `llm` action with `tools:`.
    fn agent(
        &self,
        engine: &Arc<Inner>,
        action: ActionId,
        step: &StepKey,
        args: &[Value],
    ) -> Agent {
        let decl = engine.program.action(action);
        let types = &engine.program.types;
        let ActionKind::Llm(llm) = &decl.kind else {
            unreachable!("agents are made for llm actions only")
        };
        let slots = |params: &[troupe_check::ir::Param]| -> Vec<OutputSlot> {
            params
                .iter()
                .map(|p| OutputSlot {
                    name: p.name.clone(),
                    ty: p.ty.clone(),
                })
                .collect()
        };
        let offered = llm
            .tools
            .iter()
            .filter_map(|id| {
                let t = engine.program.action(*id);
                let ActionKind::Tool(tool) = &t.kind else {
                    return None;
                };
                let runner = match engine.performers.get(id.0 as usize)? {
                    Performer::Tool(host) => Runner::Host(host.clone()),
                    _ => Runner::Mock(engine.mock.clone().unwrap_or_else(|| engine.llm.clone())),
                };
                Some(Offered {
                    action: *id,
                    name: t.name.clone(),
                    params: t
                        .params
                        .iter()
                        .zip(tool.defaults.iter().chain(std::iter::repeat(&None)))
                        .map(|(p, d)| (p.name.clone(), p.ty.clone(), d.clone()))
                        .collect(),
                    outputs: slots(&t.outputs),
                    tool: tool.clone(),
                    runner,
                })
            })
            .collect();
        let request = LlmRequest {
            key: CallKey {
                lifeline: step.lifeline.clone(),
                action: step.action.clone(),
                occurrence: step.occurrence,
            },
            seed: self.options.seed,
            system: llm.system.as_ref().map(|t| render(t, args, types)),
            prompt: render(&llm.prompt, args, types),
            outputs: slots(&decl.outputs),
            types: engine.types.clone(),
            model: llm.model.clone(),
            temperature: llm.temperature,
            retries: llm.retries,
            tools: Vec::new(),
            conversation: Vec::new(),
            plan: None,
        };
        Agent {
            step: step.clone(),
            run: self.options.run_id.clone(),
            uid: self.uid.clone(),
            request,
            offered,
            backend: engine.llm.clone(),
            journal: self.options.journal.clone(),
            humans: engine.humans.clone(),
            policy: engine.policy.clone(),
            log: self.tool_log.clone(),
            unmade: self.unmade.clone(),
            types: engine.types.clone(),
            max_steps: llm.max_steps.unwrap_or(crate::agent::DEFAULT_MAX_STEPS),
        }
    }

    /// An asynchronous action of `task` finished.
    fn complete(&mut self, task: u32, result: Result<Vec<Value>, Failure>) -> Result<(), RunError> {
        self.with_people.remove(&task);
        self.effects.remove(&task);
        let engine = self.engine.clone();
        let (lane, pc) = {
            let t = &self.tasks[task as usize];
            (t.lane, t.pc)
        };
        let Some(Op::Act {
            stmt,
            outputs,
            call: Call::Action { action, .. },
        }) = engine.flat[lane as usize].ops.get(pc as usize)
        else {
            return Err(self.protocol(
                lane,
                "an action finished, but the lifeline is not at an action".into(),
            ));
        };
        // While a resumed run replays, another part's recorded event may
        // have to come first: the result waits for its turn.
        if !self.my_turn(lane, *stmt) {
            let t = &mut self.tasks[task as usize];
            t.deferred = Some(result);
            t.wait = Wait::Turn;
            return Ok(());
        }
        let values = result.map_err(|f| match f {
            Failure::Action(m) => self.action_error(lane, *stmt, *action, m),
            Failure::Journal(message) => RunError::Journal {
                run: self.options.run_id.clone(),
                message,
            },
            Failure::NeedsResolution(step) => RunError::NeedsResolution {
                run: self.options.run_id.clone(),
                step,
            },
            Failure::Run(e) => *e,
        })?;
        let values = self.check_outputs(lane, *stmt, *action, values)?;
        self.finish_act(task, *stmt, outputs, values);
        self.tasks[task as usize].wait = Wait::Ready;
        self.ready.push_back(task);
        Ok(())
    }
}

/// The occurrence of a [`StepKey`]: the count itself in lane 0 (every
/// workflow without concurrent parts), else `lane × 10¹² + count`, so that
/// keys of different lanes never meet, stay stable across runs and still
/// read as numbers (`Bank/deposit#2000000000005`: lane 2, the sixth call).
pub const LANE_OCCURRENCES: u64 = 1_000_000_000_000;

fn occurrence_key(lane: u32, count: u64) -> u64 {
    if lane == 0 {
        count
    } else {
        u64::from(lane)
            .saturating_mul(LANE_OCCURRENCES)
            .saturating_add(count % LANE_OCCURRENCES)
    }
}

impl Inner {
    /// The lane in which lifeline `lane` counts the action at `pc`.
    fn key_lane_at(&self, lane: usize, pc: u32) -> u32 {
        self.key_lane
            .get(lane)
            .and_then(|k| k.get(pc as usize))
            .copied()
            .unwrap_or(0)
    }
}

/// Fills a template's `{param}` holes with the arguments.
fn render(t: &Template, args: &[Value], types: &TypeTable) -> String {
    let mut out = String::new();
    for part in &t.parts {
        match part {
            TemplatePart::Text(s) => out.push_str(s),
            TemplatePart::Param(i) => {
                if let Some(v) = args.get(*i as usize) {
                    out.push_str(&display(v, types));
                }
            }
        }
    }
    out
}

/// Reads the inputs of `wf` given as `name=value` texts (parsed by declared
/// type) and/or a JSON object; every declared input must be given exactly
/// once. Needs no engine: callers parse inputs before they record a run.
pub fn parse_inputs(
    wf: &Workflow,
    types: &TypeTable,
    pairs: &[(String, String)],
    json: Option<&serde_json::Value>,
) -> Result<Vec<Value>, RunError> {
    let mut values: Vec<Option<Value>> = vec![None; wf.inputs.len()];
    let index = |name: &str| wf.inputs.iter().position(|v| wf.var(*v).name == name);
    let unknown = |name: &str| {
        let names: Vec<_> = wf.inputs.iter().map(|v| wf.var(*v).name.as_str()).collect();
        RunError::Input {
            name: name.to_owned(),
            message: format!("no such input; the inputs are {}", names.join(", ")),
        }
    };
    if let Some(json) = json {
        let obj = json.as_object().ok_or_else(|| RunError::Input {
            name: "--input-json".into(),
            message: "expected a JSON object".into(),
        })?;
        for (name, v) in obj {
            let i = index(name).ok_or_else(|| unknown(name))?;
            let ty = &wf.var(wf.inputs[i]).ty;
            values[i] = Some(Value::from_json(v, ty, types).map_err(|m| RunError::Input {
                name: name.clone(),
                message: m,
            })?);
        }
    }
    for (name, text) in pairs {
        let i = index(name).ok_or_else(|| unknown(name))?;
        let ty = &wf.var(wf.inputs[i]).ty;
        values[i] = Some(Value::parse(text, ty, types).map_err(|m| RunError::Input {
            name: name.clone(),
            message: m,
        })?);
    }
    values
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            v.ok_or_else(|| {
                let var = wf.var(wf.inputs[i]);
                RunError::Input {
                    name: var.name.clone(),
                    message: format!(
                        "missing; give it with --input {}=… ({})",
                        var.name,
                        types.display(&var.ty)
                    ),
                }
            })
        })
        .collect()
}
