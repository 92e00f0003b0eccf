//! The durability seam: what a run tells its store, and what a resumed run
//! asks it.
//!
//! A run is deterministic given the results of its non-deterministic actions
//! (LLM calls, effects, human answers, tools): resuming a run replays it from
//! the start, taking those results from the journal instead of performing
//! them again. Messages, decisions and pure computations are recomputed, so a
//! journal may buffer their events and commit them in batches; it must make a
//! result durable before the run uses it, an effect's start durable before
//! the effect runs, and the run's end durable before [`RunJournal::finish`]
//! completes.

use crate::checkpoint::Checkpoint;
use crate::error::RunError;
use std::fmt;
use troupe_check::Value;
use troupe_check::ir::{LifelineId, StmtId};
use troupe_llm::BoxFuture;
use troupe_msc::Event;

/// Names one action call within a run, stably across restarts.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StepKey {
    pub lifeline: String,
    pub action: String,
    /// How many times this lifeline called this action before in the run.
    pub occurrence: u64,
}

impl fmt::Display for StepKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}#{}", self.lifeline, self.action, self.occurrence)
    }
}

impl StepKey {
    /// Parses the `Lifeline/action#n` form.
    pub fn parse(text: &str) -> Option<StepKey> {
        let (lifeline, rest) = text.split_once('/')?;
        let (action, n) = rest.rsplit_once('#')?;
        Some(StepKey {
            lifeline: lifeline.to_owned(),
            action: action.to_owned(),
            occurrence: n.parse().ok()?,
        })
    }

    /// Parses the key of a run's own step, `Lifeline/action#n`; `None`
    /// for a sub-step (`Lifeline/action#n/…`: a model's tool call, a
    /// plan's step) or anything else.
    pub fn parse_top_level(text: &str) -> Option<StepKey> {
        StepKey::parse(text).filter(|k| !k.action.contains('/'))
    }
}

/// What the journal knows of a step.
#[derive(Debug, Clone, PartialEq)]
pub enum Recorded {
    /// Finished with these outputs: use them, do not perform the action.
    Done(Vec<Value>),
    /// An effect started but its end was never recorded (a crash).
    Started,
}

/// The kind of action a step performed, as recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKind {
    Llm,
    Effect,
    Tool,
    Human,
    /// An `extern` answered by the mock backend.
    Mock,
    /// A `planner`: its outputs, its accepted plan's source and its nested
    /// run's trace.
    Plan,
    /// The built-in `sleep`: a durable timer.
    Timer,
}

impl StepKind {
    pub fn as_str(self) -> &'static str {
        match self {
            StepKind::Llm => "llm",
            StepKind::Effect => "effect",
            StepKind::Tool => "tool",
            StepKind::Human => "human",
            StepKind::Mock => "mock",
            StepKind::Plan => "plan",
            StepKind::Timer => "timer",
        }
    }

    /// Whether the step touches the outside world (its start is recorded).
    pub fn is_effect(self) -> bool {
        matches!(self, StepKind::Effect | StepKind::Tool)
    }
}

/// One call of a model, as it happened: what was asked, what came back,
/// what it cost. Recorded with the run (a replayed step does not call the
/// model again, so it records nothing).
#[derive(Debug, Clone, PartialEq)]
pub struct LlmCall {
    /// The backend and model that answered (or failed), e.g. `openai:gpt-4o-mini`.
    pub model: String,
    pub system: Option<String>,
    pub prompt: String,
    /// The model's answer as it came.
    pub answer: Option<String>,
    /// The outputs read from it, as JSON (`None` when the call failed).
    pub outputs: Option<serde_json::Value>,
    pub usage: Option<troupe_llm::Usage>,
    pub latency_ms: u64,
    /// Requests made (retries and re-asks included).
    pub attempts: u32,
    /// Why requests were repeated, in order.
    pub retries: Vec<String>,
    /// In US dollars, from the price table.
    pub cost_usd: Option<f64>,
    /// Why the call failed, when it did.
    pub error: Option<String>,
}

/// A run's durable record. One instance per run.
pub trait RunJournal: Send + Sync {
    /// An event of `lifeline`, in the order of that lifeline's word. A
    /// resumed run replays its events from the start: the journal drops
    /// those it has already recorded.
    fn event(&self, lifeline: LifelineId, event: &Event);

    /// Whether the journal wants the run's events at all: a journal that
    /// neither records, verifies nor shows them (`troupe run --no-verify`)
    /// spares the engine building them.
    fn wants_events(&self) -> bool {
        true
    }

    /// Events of one step of the run, in order: what [`RunJournal::event`]
    /// takes one at a time. The engine hands them over in batches before
    /// any other call to the journal, so a journal sees the same order
    /// either way; one that locks per call locks once per batch.
    fn events(&self, events: &[(LifelineId, Event)]) {
        for (lifeline, event) in events {
            self.event(*lifeline, event);
        }
    }

    /// What the journal recorded for `key`, if anything.
    fn recorded(&self, key: &StepKey) -> Option<Recorded>;

    /// Durably records that an effect is about to run.
    fn begin_effect(
        &self,
        key: &StepKey,
        kind: StepKind,
        args: &[Value],
    ) -> BoxFuture<'static, Result<(), String>>;

    /// Durably records a step's result.
    fn record(
        &self,
        key: &StepKey,
        kind: StepKind,
        args: &[Value],
        outputs: &[Value],
    ) -> BoxFuture<'static, Result<(), String>>;

    /// Forgets the start of an effect that ended with an error it reported
    /// itself (it did not happen, or it undid itself): a retried run
    /// performs it again instead of waiting for a person to settle it.
    fn forget_effect(&self, key: &StepKey) -> BoxFuture<'static, Result<(), String>> {
        let _ = key;
        Box::pin(async { Ok(()) })
    }

    /// Records the deadline of the timer of step `key`, `after` from now,
    /// unless one is recorded already, and returns how long is left until
    /// the recorded one: a resumed run waits only what is left, however
    /// many times it resumes. The default keeps nothing: the whole wait.
    fn timer(
        &self,
        key: &StepKey,
        after: std::time::Duration,
    ) -> BoxFuture<'static, Result<std::time::Duration, String>> {
        let _ = key;
        Box::pin(async move { Ok(after) })
    }

    /// Makes the events recorded so far durable. Called before the run
    /// waits on a person, so that whoever looks at a waiting run sees how
    /// it got there.
    fn flush(&self) -> BoxFuture<'static, Result<(), String>> {
        Box::pin(async { Ok(()) })
    }

    /// Events the run may record between two checkpoints; `None` (the
    /// default): this journal takes no checkpoints.
    fn checkpoint_every(&self) -> Option<u64> {
        None
    }

    /// Takes a checkpoint of the run. It need not be durable when this
    /// returns (a crash before it is resumes from an earlier one). Returns
    /// the events until the next checkpoint (`None`: no more).
    fn checkpoint(&self, checkpoint: Checkpoint) -> Option<u64> {
        let _ = checkpoint;
        None
    }

    /// The checkpoint a resumed run continues from, taken out of the
    /// journal (asked once, when the run starts). The journal then drops
    /// the events before it, and answers for the steps it names as
    /// pending.
    fn resume_from(&self) -> Option<Checkpoint> {
        None
    }

    /// The statements of the events each lifeline recorded before the run
    /// resumed (after the checkpoint it resumes from, or all of them), in
    /// each lifeline's order, indexed by lifeline. A lifeline that runs the
    /// parts of a `par` concurrently could interleave them otherwise than
    /// before; the resumed run follows this order while it replays, so the
    /// journal's per-lifeline count of events already recorded stays true.
    /// The default, `None`: the journal records nothing before a resume.
    fn recorded_order(&self) -> Option<Vec<Vec<StmtId>>> {
        None
    }

    /// Records a model call of step `key`. Not durable by itself; it is
    /// kept before the step's result is (the journal keeps order).
    fn llm_call(&self, key: &StepKey, call: &LlmCall) {
        let _ = (key, call);
    }

    /// Flushes everything and durably records how the run ended.
    fn finish(
        &self,
        outcome: Result<&[(String, Value)], &RunError>,
    ) -> BoxFuture<'static, Result<(), String>>;
}
