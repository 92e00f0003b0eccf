//! ⟦P⟧: the executions of a global workflow, enumerated (bounded) or decided
//! (membership of a given tuple of local words).
//!
//! The workflow is compiled once into a control-flow graph of global steps
//! (message, action, choice, jump). A global path through it, with its choices,
//! projects to one local word per lifeline; ⟦P⟧ is the set of these tuples. With
//! `control` on, every choice also produces the owner's decision and the control
//! broadcast of the projection (owner sends `(d, κ)` to R in ⊏ order, each
//! lifeline of R receives it), i.e. the semantics of the projected system
//! before erasure.
//!
//! Membership walks the graph against the words with one cursor per lifeline.
//! At a choice it keeps only the branches that the words allow: a branch is
//! refuted when a lifeline that must act in it (on every path) has a next event
//! from elsewhere. What is left ambiguous (possible only without control events)
//! is explored depth-first with memoisation of visited states, so typical runs
//! are checked in one linear pass and no state is explored twice.
//!
//! This file holds the graph and the public types; `compile.rs` builds the
//! graph ([`Semantics::new`]), `enumerate.rs` enumerates it and `member.rs`
//! decides membership. The last two only read the graph, so neither needs
//! the other.

use crate::event::{Event, Execution};
use std::fmt;
use troupe_check::ir::{LifelineId, StmtId};
use troupe_project::{ConstructKind, ControlTag, Projection};

mod compile;
mod enumerate;
mod member;

#[derive(Debug, Clone)]
enum Node {
    Msg {
        stmt: StmtId,
        from: LifelineId,
        to: LifelineId,
        arity: usize,
    },
    Act {
        stmt: StmtId,
        at: LifelineId,
        outputs: usize,
    },
    /// Entry of a loop from outside: resets its unrolling counter.
    LoopEnter {
        slot: usize,
    },
    Choice(usize),
    Jump(usize),
    /// The start of a `par` (index into `Semantics::pars`).
    ParFork(usize),
    /// The end of branch `.1` of `par` `.0`.
    ParEnd(usize, usize),
}

/// A `par` of the graph: where each branch starts, and its pre-order range.
#[derive(Debug, Clone)]
struct Par {
    branches: Vec<ParBranch>,
    /// The node after the region.
    end: usize,
}

#[derive(Debug, Clone, Copy)]
struct ParBranch {
    start: usize,
    /// Pre-order range of the branch's statements, `lo..hi`.
    lo: u32,
    hi: u32,
}

#[derive(Debug, Clone)]
struct Choice {
    stmt: StmtId,
    kind: ConstructKind,
    owner: LifelineId,
    tag: ControlTag,
    notify: Vec<LifelineId>,
    slot: usize,
    /// Targets for ⊤ (then / body) and ⊥ (else / exit).
    target: [usize; 2],
    /// Pre-order ranges of the two blocks, `lo..hi`.
    range: [(u32, u32); 2],
    /// Lifelines that have an event in the block on every path through it,
    /// without and with control events.
    must: [Vec<LifelineId>; 2],
    must_control: [Vec<LifelineId>; 2],
    /// Whether the construct lies inside a loop, i.e. may be entered again.
    in_loop: bool,
}

impl Choice {
    fn side(d: bool) -> usize {
        usize::from(!d)
    }
}

/// The compiled semantics of one workflow.
#[derive(Debug, Clone)]
pub struct Semantics {
    lifelines: Vec<String>,
    nodes: Vec<Node>,
    choices: Vec<Choice>,
    pars: Vec<Par>,
    /// Pre-order position of each statement, indexed by `StmtId`.
    order: Vec<u32>,
    loops: usize,
    projection: Projection,
}

/// Options of [`Semantics::enumerate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnumOptions {
    /// Each loop runs at most this many iterations per entry.
    pub unroll: u32,
    /// Include decisions and control messages.
    pub control: bool,
    /// Stop after this many distinct executions.
    pub limit: usize,
}

impl Default for EnumOptions {
    fn default() -> Self {
        EnumOptions {
            unroll: 2,
            control: false,
            limit: 10_000,
        }
    }
}

/// The result of a bounded enumeration.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Enumeration {
    pub executions: Vec<Execution>,
    /// Whether the limit cut the enumeration short.
    pub truncated: bool,
}

/// Options of [`Semantics::check`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemberOptions {
    /// Check decisions and control messages too. When off, control events in
    /// the words are skipped (the check is on the erasure).
    pub control: bool,
    /// Accept prefixes: each word may stop early (a run in progress).
    pub prefix: bool,
}

/// Why a tuple of local words is not in ⟦P⟧: the first event that does not fit
/// (in the most advanced attempt), or why the words are not a valid execution.
#[derive(Debug, Clone, PartialEq)]
pub struct NotMember {
    /// The lifeline and index of the offending event; `None` for a problem of
    /// the whole execution.
    pub lifeline: Option<LifelineId>,
    pub index: usize,
    /// The offending event; `None` when the word ended too early.
    pub event: Option<Event>,
    /// What the workflow expected instead, in words.
    pub expected: String,
    /// Lifeline names, for display.
    pub lifeline_name: String,
    /// The offending event in words.
    pub event_text: String,
}

impl fmt::Display for NotMember {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.lifeline, &self.event) {
            (None, _) => write!(f, "{}", self.expected),
            (Some(_), Some(e)) => {
                write!(
                    f,
                    "event {} of {} ({e}) does not fit: {}",
                    self.index, self.lifeline_name, self.expected
                )
            }
            (Some(_), None) => {
                write!(
                    f,
                    "{} ends after {} events, but {}",
                    self.lifeline_name, self.index, self.expected
                )
            }
        }
    }
}

impl std::error::Error for NotMember {}

impl Semantics {
    /// The projection the control events follow.
    pub fn projection(&self) -> &Projection {
        &self.projection
    }

    pub fn lifeline_count(&self) -> usize {
        self.lifelines.len()
    }

    fn name(&self, l: LifelineId) -> String {
        self.lifelines
            .get(l.0 as usize)
            .cloned()
            .unwrap_or_else(|| format!("#{}", l.0))
    }

    fn pre(&self, stmt: StmtId) -> u32 {
        self.order.get(stmt.0 as usize).copied().unwrap_or(u32::MAX)
    }
}
