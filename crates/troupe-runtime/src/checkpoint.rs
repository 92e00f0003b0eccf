//! Checkpoints: a run's whole state at one moment — every lifeline's
//! position, variables and action counts, what is on every channel, and
//! (from [`crate::Watched`]) the online monitor's state — from which a
//! resumed run continues instead of replaying its history. So resuming
//! costs the size of the state and the events since the last checkpoint,
//! not the run's length.
//!
//! A checkpoint is taken between two operations of the run's scheduler,
//! where the state is consistent. A lifeline waiting for an asynchronous
//! action is recorded *before* the action (its count of that action one
//! less, its position at the action): the resumed run starts the action
//! again under the same [`crate::StepKey`], and the journal answers with
//! the recorded result or refuses to repeat an effect, exactly as a replay
//! would. A checkpoint need not be durable at once: a crash before it is
//! resumes from an earlier one.
//!
//! A part of a placed run checkpoints the same way, with its own lifelines
//! only (the others are done as far as it knows) and its place on each
//! channel to and from the other parts: its messages were handed to the
//! transport before the checkpoint, so the checkpoint is durable after
//! them, and a resumed part sends on from the next number.

use crate::journal::StepKey;
use crate::remote::RemoteChannel;
use troupe_check::Value;
use troupe_check::ir::{LifelineId, StmtId};
use troupe_msc::MonitorState;
use troupe_msc::cpl::{Meta, View};
use troupe_project::ControlTag;

/// A run's state. See the module docs.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    /// Per lifeline, in ⊏ order.
    pub lanes: Vec<LaneState>,
    /// The channels with messages in flight.
    pub channels: Vec<Channel>,
    /// Operations executed before, over all lifelines.
    pub steps: u64,
    /// Events recorded before, over all lifelines.
    pub events: u64,
    /// The actions in flight (started again when the run resumes): the
    /// journal must keep what it recorded for them.
    pub pending: Vec<StepKey>,
    /// The online monitor's state, when the run is verified.
    pub monitor: Option<MonitorState>,
    /// One part of a placed run: per channel to or from another part, how
    /// many of its messages were sent (its sender runs here) or fetched
    /// (its receiver does; the fetched ones not yet received are in
    /// `channels`). A resumed part numbers its next sends and fetches on
    /// from these, instead of from 0 (see [`crate::Remote`]).
    pub crossed: Vec<(RemoteChannel, u64)>,
    /// The run's successful tool calls before it, which the contracts'
    /// `requires` and `precedes` consult: a run resumed from a checkpoint
    /// does not replay them, and must not forget them.
    pub tools: Vec<crate::ToolRecord>,
}

/// One lifeline's state.
#[derive(Debug, Clone, PartialEq)]
pub struct LaneState {
    /// Its position in its flat local program (of its first task; inside a
    /// `par`, the task that runs the lifeline's first part).
    pub pc: u32,
    /// Whether it has ended.
    pub done: bool,
    /// Its own variables, by slot (unbound ones are `None`).
    pub values: Vec<Option<Value>>,
    /// How many times it called each action it called: (action, count).
    pub occurrences: Vec<(u32, u64)>,
    /// Its other tasks: the parts of `par` regions it runs concurrently
    /// with the first, in the order they were started.
    pub parts: Vec<PartState>,
    /// Action counts kept per lane, where the lifeline runs several parts
    /// at once (see `troupe_project::Lanes::key_lane`): (lane, action, count).
    pub keyed: Vec<(u32, u32, u64)>,
    /// What it has causally seen, when the workflow has causal guards: a
    /// resumed run decides as the first run would.
    pub view: Option<View>,
}

/// A task of a lifeline that runs one part of a `par`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartState {
    /// Its position in the lifeline's flat program.
    pub pc: u32,
    /// The task that started it: 0 is the lifeline's first task, k its
    /// k-th part (in `LaneState::parts`, which lists parents first).
    pub parent: u32,
}

/// What is in flight from one lifeline to another, oldest first. The
/// branches of a `par` have channels of their own: one pair may have
/// several, each holding the messages of one lane (which the messages'
/// statements and tags tell).
#[derive(Debug, Clone, PartialEq)]
pub struct Channel {
    pub from: LifelineId,
    pub to: LifelineId,
    pub messages: Vec<Queued>,
}

/// A message on a channel. `meta`: what the sender had causally seen, when
/// the workflow has causal guards ([`troupe_msc::cpl::Meta`]); beside the
/// payload, never in it.
#[derive(Debug, Clone, PartialEq)]
pub enum Queued {
    Data {
        stmt: StmtId,
        values: Vec<Value>,
        meta: Option<Meta>,
    },
    Control {
        tag: ControlTag,
        decision: bool,
        meta: Option<Meta>,
    },
}

impl Queued {
    pub fn meta(&self) -> Option<&Meta> {
        match self {
            Queued::Data { meta, .. } | Queued::Control { meta, .. } => meta.as_ref(),
        }
    }
}
