//! Local programs in tree form: what one lifeline does, in its own order.
//!
//! Every instruction keeps the `StmtId` of the global statement it comes from,
//! so that events recorded by a runtime can be traced back to the workflow and
//! checked against its MSC semantics. Expressions stay IR [`Expr`]s.

use crate::tag::ControlTag;
use troupe_check::ir::{Call, Expr, LifelineId, Recv, StmtId, VarId};

/// One instruction of a local program.
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
        call: Call,
    },
    /// At the owner of an `if`: evaluate `guard`, send `(decision, tag)` to each
    /// lifeline of `notify` in order, then run the chosen branch.
    DecideIf {
        stmt: StmtId,
        guard: Expr,
        tag: ControlTag,
        notify: Vec<LifelineId>,
        then: Vec<Instr>,
        otherwise: Vec<Instr>,
    },
    /// At the owner of a `while`: before every iteration and before the exit,
    /// evaluate `guard` and send `(decision, tag)` to each lifeline of `notify`.
    DecideWhile {
        stmt: StmtId,
        guard: Expr,
        tag: ControlTag,
        notify: Vec<LifelineId>,
        body: Vec<Instr>,
        exit: Vec<Instr>,
    },
    /// At a lifeline told about an `if`: receive the decision from `from`, run
    /// this lifeline's part of the chosen branch.
    Branch {
        stmt: StmtId,
        from: LifelineId,
        tag: ControlTag,
        then: Vec<Instr>,
        otherwise: Vec<Instr>,
    },
    /// At a lifeline told about a `while`: receive a decision from `from`; on ⊤
    /// run the body part and receive again, on ⊥ run the exit part.
    Loop {
        stmt: StmtId,
        from: LifelineId,
        tag: ControlTag,
        body: Vec<Instr>,
        exit: Vec<Instr>,
    },
}

impl Instr {
    pub fn stmt(&self) -> StmtId {
        match self {
            Instr::Send { stmt, .. }
            | Instr::Recv { stmt, .. }
            | Instr::Act { stmt, .. }
            | Instr::DecideIf { stmt, .. }
            | Instr::DecideWhile { stmt, .. }
            | Instr::Branch { stmt, .. }
            | Instr::Loop { stmt, .. } => *stmt,
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
            Instr::DecideIf {
                notify,
                then,
                otherwise,
                ..
            } => 1 + notify.len() + block_size(then) + block_size(otherwise),
            Instr::DecideWhile {
                notify, body, exit, ..
            } => 1 + notify.len() + block_size(body) + block_size(exit),
            Instr::Branch {
                then, otherwise, ..
            } => 1 + block_size(then) + block_size(otherwise),
            Instr::Loop { body, exit, .. } => 1 + block_size(body) + block_size(exit),
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
