//! Local programs in tree form: what one lifeline does, in its own order.
//!
//! Every instruction keeps the `StmtId` of the global statement it comes from,
//! so that events recorded by a runtime can be traced back to the workflow and
//! checked against its MSC semantics. Expressions stay IR [`Expr`]s.

use crate::tag::ControlTag;
use troupe_check::ir::{Call, Expr, LifelineId, Recv, StmtId, VarId};

/// One instruction of a local program. Kept small (40 bytes): the rare,
/// large construct instructions are boxed, which halves the memory (and time)
/// of projecting large workflows.
#[derive(Debug, Clone, PartialEq)]
pub enum Instr {
    /// Evaluate `items` and send them as one data message to `to`.
    Send {
        stmt: StmtId,
        to: LifelineId,
        items: Vec<Expr>,
    },
    /// Receive one data message from `from` and bind (or check) its items.
    Recv {
        stmt: StmtId,
        from: LifelineId,
        binds: Vec<Recv>,
    },
    /// Perform an action (or a pure computation) on local variables.
    Act {
        stmt: StmtId,
        outputs: Vec<Option<VarId>>,
        call: Box<Call>,
    },
    /// At the owner of an `if`.
    DecideIf(Box<DecideIf>),
    /// At the owner of a `while`.
    DecideWhile(Box<DecideWhile>),
    /// At a lifeline told about an `if`.
    Branch(Box<Branch>),
    /// At a lifeline told about a `while`.
    Loop(Box<Loop>),
    /// At a lifeline with a part in one or more branches of a `par`.
    Par(Box<LocalPar>),
}

/// A lifeline's parts of a `par`: one per branch it has something to do in,
/// in branch order. They run concurrently; the lifeline goes on after the
/// `par` when all of them have ended.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalPar {
    pub stmt: StmtId,
    pub parts: Vec<Part>,
}

/// One part of a [`LocalPar`].
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    /// The branch of the `par` (0-based).
    pub branch: u32,
    /// The branch's lane (see [`crate::lanes`]).
    pub lane: u32,
    pub body: Vec<Instr>,
}

/// The owner of an `if` evaluates `guard`, sends `(decision, tag)` to each
/// lifeline of `notify` in order, then runs its part of the chosen branch.
#[derive(Debug, Clone, PartialEq)]
pub struct DecideIf {
    pub stmt: StmtId,
    pub guard: Expr,
    pub tag: ControlTag,
    pub notify: Vec<LifelineId>,
    pub then: Vec<Instr>,
    pub otherwise: Vec<Instr>,
}

/// The owner of a `while`, before every iteration and before the exit,
/// evaluates `guard` and sends `(decision, tag)` to each lifeline of `notify`.
#[derive(Debug, Clone, PartialEq)]
pub struct DecideWhile {
    pub stmt: StmtId,
    pub guard: Expr,
    pub tag: ControlTag,
    pub notify: Vec<LifelineId>,
    pub body: Vec<Instr>,
    pub exit: Vec<Instr>,
}

/// A lifeline told about an `if` receives the decision from `from` and runs
/// its part of the chosen branch.
#[derive(Debug, Clone, PartialEq)]
pub struct Branch {
    pub stmt: StmtId,
    pub from: LifelineId,
    pub tag: ControlTag,
    pub then: Vec<Instr>,
    pub otherwise: Vec<Instr>,
}

/// A lifeline told about a `while` receives a decision from `from`; on ⊤ it
/// runs its part of the body and receives again, on ⊥ its part of the exit.
#[derive(Debug, Clone, PartialEq)]
pub struct Loop {
    pub stmt: StmtId,
    pub from: LifelineId,
    pub tag: ControlTag,
    pub body: Vec<Instr>,
    pub exit: Vec<Instr>,
}

impl Instr {
    pub fn stmt(&self) -> StmtId {
        match self {
            Instr::Send { stmt, .. } | Instr::Recv { stmt, .. } | Instr::Act { stmt, .. } => *stmt,
            Instr::DecideIf(d) => d.stmt,
            Instr::DecideWhile(d) => d.stmt,
            Instr::Branch(b) => b.stmt,
            Instr::Loop(l) => l.stmt,
            Instr::Par(p) => p.stmt,
        }
    }
}

/// The local program of one lifeline.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalProgram {
    pub lifeline: LifelineId,
    pub body: Vec<Instr>,
}

impl LocalProgram {
    /// Instructions plus the control sends and receives they imply statically:
    /// a decide counts 1 + |notify|, everything else 1.
    pub fn size(&self) -> usize {
        block_size(&self.body)
    }
}

pub(crate) fn block_size(block: &[Instr]) -> usize {
    block
        .iter()
        .map(|i| match i {
            Instr::Send { .. } | Instr::Recv { .. } | Instr::Act { .. } => 1,
            Instr::DecideIf(d) => {
                1 + d.notify.len() + block_size(&d.then) + block_size(&d.otherwise)
            }
            Instr::DecideWhile(d) => 1 + d.notify.len() + block_size(&d.body) + block_size(&d.exit),
            Instr::Branch(b) => 1 + block_size(&b.then) + block_size(&b.otherwise),
            Instr::Loop(l) => 1 + block_size(&l.body) + block_size(&l.exit),
            Instr::Par(p) => 1 + p.parts.iter().map(|q| block_size(&q.body)).sum::<usize>(),
        })
        .sum()
}

/// Whether a construct is an `if` or a `while`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ConstructKind {
    If,
    While,
}

/// What the projection decided for one owned construct: its tag and who is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlInfo {
    pub stmt: StmtId,
    pub kind: ConstructKind,
    pub owner: LifelineId,
    pub tag: ControlTag,
    /// R = (lifelines(P) ∪ lifelines(Q)) \ {owner}, in ⊏ order.
    pub notify: Vec<LifelineId>,
}
