//! Random edits of a generated workflow, as people make them between two
//! versions: a statement inserted, removed or moved, the branches of an
//! `if` swapped, a guard changed, a lifeline added, an action renamed.
//!
//! The edited workflow is renumbered (statement ids in pre-order again) but
//! not checked: an edit may leave a variable read before it is bound.
//! Prefix membership and the projection do not evaluate expressions, so a
//! test of which recorded runs may move to the new version needs no more.
//! Meant for [`crate::generate`]'s sequential workflows (no `for`, `call`
//! or coregion records refer to statement ids).

use crate::seeds::Rng;
use troupe_check::Value;
use troupe_check::ir::{
    Block, Call, Expr, ExprKind, Lifeline, LifelineId, MsgItem, Program, Recv, Stmt, StmtId,
    StmtKind, UnaryOp,
};
use troupe_check::types::Type;

/// What an edit did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edit {
    Inserted,
    Removed,
    Moved,
    SwappedBranches,
    ChangedGuard,
    AddedLifeline,
    RenamedAction,
    /// The edit found nothing to change (e.g. no `if` to swap).
    Nothing,
}

/// `program` with one random edit of its first workflow.
pub fn edit(program: &Program, rng: &mut Rng) -> (Program, Edit) {
    let mut p = program.clone();
    let kind = rng.below(7);
    let done = {
        let w = &mut p.workflows[0];
        let lifelines = w.lifelines.len();
        match kind {
            0 => {
                let s = new_stmt(rng, lifelines);
                insert(&mut w.body, rng, s);
                Edit::Inserted
            }
            1 => match take(&mut w.body, rng) {
                Some(_) => Edit::Removed,
                None => Edit::Nothing,
            },
            2 => match take(&mut w.body, rng) {
                Some(s) => {
                    insert(&mut w.body, rng, s);
                    Edit::Moved
                }
                None => Edit::Nothing,
            },
            3 => {
                if with_construct(&mut w.body, rng, &mut |s| {
                    if let StmtKind::If {
                        then, otherwise, ..
                    } = &mut s.kind
                    {
                        std::mem::swap(then, otherwise);
                        true
                    } else {
                        false
                    }
                }) {
                    Edit::SwappedBranches
                } else {
                    Edit::Nothing
                }
            }
            4 => {
                if with_construct(&mut w.body, rng, &mut |s| match &mut s.kind {
                    StmtKind::If { guard, .. } | StmtKind::While { guard, .. } => {
                        let g = guard.clone();
                        *guard = Expr {
                            kind: ExprKind::Unary(UnaryOp::Not, Box::new(g)),
                            ty: Type::Bool,
                            span: Default::default(),
                        };
                        true
                    }
                    _ => false,
                }) {
                    Edit::ChangedGuard
                } else {
                    Edit::Nothing
                }
            }
            5 => {
                w.lifelines.push(Lifeline {
                    name: format!("Added{lifelines}"),
                    span: Default::default(),
                });
                let from = LifelineId(rng.below(lifelines) as u32);
                let s = msg(from, LifelineId(lifelines as u32));
                insert(&mut w.body, rng, s);
                Edit::AddedLifeline
            }
            _ => {
                let used = called(&w.body);
                if used.is_empty() {
                    Edit::Nothing
                } else {
                    let a = used[rng.below(used.len())];
                    p.actions[a as usize].name.push_str("_v2");
                    Edit::RenamedAction
                }
            }
        }
    };
    let w = &mut p.workflows[0];
    let mut next = 0;
    renumber(&mut w.body, &mut next);
    w.stmt_count = next;
    (p, done)
}

/// `msg from(0) -> to(_)`: a message that binds nothing.
fn msg(from: LifelineId, to: LifelineId) -> Stmt {
    Stmt {
        id: StmtId(0),
        span: Default::default(),
        kind: StmtKind::Msg {
            from,
            to,
            items: vec![MsgItem {
                send: Expr {
                    kind: ExprKind::Lit(Value::Int(0)),
                    ty: Type::Int,
                    span: Default::default(),
                },
                recv: Recv::Discard,
            }],
        },
    }
}

fn new_stmt(rng: &mut Rng, lifelines: usize) -> Stmt {
    let from = rng.below(lifelines);
    let to = (from + 1 + rng.below(lifelines - 1)) % lifelines;
    msg(LifelineId(from as u32), LifelineId(to as u32))
}

/// The sub-blocks of `s`, in order.
fn children(s: &Stmt) -> Vec<&Block> {
    match &s.kind {
        StmtKind::If {
            then, otherwise, ..
        } => vec![then, otherwise],
        StmtKind::While { body, exit, .. } => vec![body, exit],
        StmtKind::Par { branches } => branches.iter().collect(),
        StmtKind::Msg { .. } | StmtKind::Act { .. } => Vec::new(),
    }
}

fn children_mut(s: &mut Stmt) -> Vec<&mut Block> {
    match &mut s.kind {
        StmtKind::If {
            then, otherwise, ..
        } => vec![then, otherwise],
        StmtKind::While { body, exit, .. } => vec![body, exit],
        StmtKind::Par { branches } => branches.iter_mut().collect(),
        StmtKind::Msg { .. } | StmtKind::Act { .. } => Vec::new(),
    }
}

/// The lengths of the blocks of `block`, itself first, in pre-order.
fn block_lens(block: &Block, out: &mut Vec<usize>) {
    out.push(block.stmts.len());
    for s in &block.stmts {
        for c in children(s) {
            block_lens(c, out);
        }
    }
}

/// The `n`-th block of `block` in pre-order (itself is the 0th).
fn nth_block<'b>(block: &'b mut Block, n: &mut usize) -> Option<&'b mut Block> {
    if *n == 0 {
        return Some(block);
    }
    *n -= 1;
    for s in &mut block.stmts {
        for c in children_mut(s) {
            if let Some(b) = nth_block(c, n) {
                return Some(b);
            }
        }
    }
    None
}

fn insert(body: &mut Block, rng: &mut Rng, s: Stmt) {
    let mut lens = Vec::new();
    block_lens(body, &mut lens);
    let mut i = rng.below(lens.len());
    let at = rng.below(lens[i] + 1);
    if let Some(b) = nth_block(body, &mut i) {
        b.stmts.insert(at, s);
    }
}

/// The messages and actions of `block` as (block in pre-order, index).
fn simple_spots(block: &Block, next: &mut usize, out: &mut Vec<(usize, usize)>) {
    let me = *next;
    *next += 1;
    for (i, s) in block.stmts.iter().enumerate() {
        if matches!(s.kind, StmtKind::Msg { .. } | StmtKind::Act { .. }) {
            out.push((me, i));
        }
        for c in children(s) {
            simple_spots(c, next, out);
        }
    }
}

/// Removes a random message or action.
fn take(body: &mut Block, rng: &mut Rng) -> Option<Stmt> {
    let mut spots = Vec::new();
    simple_spots(body, &mut 0, &mut spots);
    if spots.is_empty() {
        return None;
    }
    let (mut b, i) = spots[rng.below(spots.len())];
    Some(nth_block(body, &mut b)?.stmts.remove(i))
}

/// Applies `f` to a random construct it accepts (tried from a random
/// statement on, in pre-order).
fn with_construct(body: &mut Block, rng: &mut Rng, f: &mut dyn FnMut(&mut Stmt) -> bool) -> bool {
    fn count(b: &Block) -> usize {
        b.stmts
            .iter()
            .map(|s| 1 + children(s).into_iter().map(count).sum::<usize>())
            .sum()
    }
    /// Offers statements from the `skip`-th on to `f`, until it accepts one.
    fn go(b: &mut Block, skip: &mut usize, f: &mut dyn FnMut(&mut Stmt) -> bool) -> bool {
        for s in &mut b.stmts {
            if *skip == 0 {
                if f(s) {
                    return true;
                }
            } else {
                *skip -= 1;
            }
            for c in children_mut(s) {
                if go(c, skip, f) {
                    return true;
                }
            }
        }
        false
    }
    let n = count(body);
    if n == 0 {
        return false;
    }
    let mut skip = rng.below(n);
    go(body, &mut skip, f) || go(body, &mut 0, f)
}

/// The actions called in `block`.
fn called(block: &Block) -> Vec<u32> {
    fn go(b: &Block, out: &mut Vec<u32>) {
        for s in &b.stmts {
            if let StmtKind::Act {
                call: Call::Action { action, .. },
                ..
            } = &s.kind
                && !out.contains(&action.0)
            {
                out.push(action.0);
            }
            children(s).into_iter().for_each(|c| go(c, out));
        }
    }
    let mut out = Vec::new();
    go(block, &mut out);
    out
}

/// Statement ids in pre-order again.
fn renumber(block: &mut Block, next: &mut u32) {
    for s in &mut block.stmts {
        s.id = StmtId(*next);
        *next += 1;
        children_mut(s).into_iter().for_each(|c| renumber(c, next));
    }
}
