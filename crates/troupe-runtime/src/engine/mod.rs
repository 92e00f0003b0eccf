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
pub use troupe_project::lanes::LANE_OCCURRENCES;
use troupe_project::lanes::occurrence_key;
use troupe_project::{ControlTag, FlatProgram, Lanes, Op};
use troupe_syntax::{LineIndex, Span};

mod builder;
mod causal;
mod channels;
mod checkpoint;
mod inputs;
mod perform;
mod planner;
mod record;
mod scheduler;
mod step;
mod verify;
pub use builder::EngineBuilder;
use builder::{Projected, collect_spans, projected};
pub use inputs::parse_inputs;
use perform::render;
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
    /// The built-in `sleep`: waits out a durable timer.
    Sleep,
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
    /// The causal guards' monitor plan (`None`: the workflow has none, so
    /// lifelines keep no view and messages carry no metadata).
    guards: Option<Arc<troupe_msc::cpl::Guards>>,
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
    /// The causal guards' metadata on this process's messages (zero when
    /// the workflow has none).
    pub metadata: MetadataStats,
}

/// What the metadata of causal guards (`troupe_msc::cpl::Meta`) added to
/// messages: counted in the store's encoding of clocks and flags; the
/// `seen` values carried are the program's own values, counted apart.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MetadataStats {
    /// Messages that carried metadata.
    pub messages: u64,
    /// Their clocks and flags, in bytes, in all.
    pub bytes: u64,
    /// The largest one's clocks and flags.
    pub largest: u64,
    /// `seen` values each carries.
    pub seen_values: u64,
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
            otel.status_code = tracing::field::Empty,
            "error.type" = tracing::field::Empty,
        );
        let outcome = self
            .run_in(inputs, options, journal, run_id)
            .instrument(span.clone())
            .await;
        if let Some(kind) = outcome.as_ref().err().and_then(RunError::kind) {
            crate::genai::failed(&span, kind);
        }
        outcome
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
    with_people: BTreeMap<u32, crate::Asked>,
    /// Woken when an inbox says a person's task waits (see
    /// [`crate::Asked`]).
    asked: Arc<tokio::sync::Notify>,
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
    /// Events not handed to the journal yet: a step's events go in one
    /// batch ([`RunJournal::events`]), before any other call to the
    /// journal ([`RunState::journal`]).
    unsent: Vec<(LifelineId, Event)>,
    /// Whether the journal wants events ([`RunJournal::wants_events`]).
    journaling: bool,
    /// At how many events the next checkpoint is due (`u64::MAX`: never).
    next_checkpoint: u64,
    done: usize,
    rng: u64,
    /// The run's successful tool calls, for the `requires` relations of
    /// the calls models choose.
    tool_log: Arc<std::sync::Mutex<Vec<ToolRecord>>>,
    /// The model-chosen calls that did not happen ([`RunOutcome::unmade_calls`]).
    unmade: Arc<std::sync::Mutex<Vec<String>>>,
    /// Per lifeline, what it has causally seen (empty: no causal guards).
    views: Vec<troupe_msc::cpl::View>,
    /// What the causal metadata of the messages weighed.
    metadata: MetadataStats,
}

impl RunState {
    fn new(engine: Arc<Inner>, options: RunOptions) -> RunState {
        let journaling = options.journal.as_ref().is_some_and(|j| j.wants_events());
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
            with_people: BTreeMap::new(),
            asked: Arc::default(),
            effects: std::collections::BTreeSet::new(),
            local,
            remote,
            arrivals: FuturesUnordered::new(),
            sent: BTreeMap::new(),
            clock: 0,
            steps: 0,
            events: 0,
            unsent: Vec::new(),
            journaling,
            next_checkpoint: u64::MAX,
            rng,
            views: engine
                .guards
                .as_ref()
                .map(|g| (0..n as u32).map(|l| g.start(LifelineId(l))).collect())
                .unwrap_or_default(),
            engine,
            tool_log: Arc::default(),
            unmade: Arc::default(),
            metadata: MetadataStats::default(),
        }
    }

    fn workflow(&self) -> &Workflow {
        &self.engine.program.workflows[self.engine.workflow]
    }

    /// Whether `lifeline` runs in this process (every one of a whole run).
    fn is_here(&self, lifeline: u32) -> bool {
        self.local.get(lifeline as usize) != Some(&false)
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
