//! Local programs as flat bytecode: one vector of operations with jump targets.
//!
//! A runtime executes this form with a program counter and no recursion or
//! allocation per step: an `if` is `Decide`/`Await` with a jump to the else part
//! and a `Jump` over it; a `while` is `Decide`/`Await` at its head, the body, a
//! `Jump` back to the head, then the exit part. The program ends when the
//! counter reaches `ops.len()`.

use crate::local::{Instr, LocalProgram};
use crate::tag::ControlTag;
use troupe_check::ir::{Call, Expr, LifelineId, Recv, StmtId, VarId};

/// One operation of a flat program.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    Send {
        stmt: StmtId,
        to: LifelineId,
        items: Vec<Expr>,
    },
    Recv {
        stmt: StmtId,
        from: LifelineId,
        binds: Vec<Recv>,
    },
    Act {
        stmt: StmtId,
        outputs: Vec<Option<VarId>>,
        call: Call,
    },
    /// Evaluate `guard`, send `(decision, tag)` to each of `notify` in order;
    /// continue at the next op on ⊤, at `on_false` on ⊥.
    Decide {
        stmt: StmtId,
        guard: Expr,
        tag: ControlTag,
        notify: Vec<LifelineId>,
        on_false: u32,
    },
    /// Receive `(decision, tag)` from `from`; next op on ⊤, `on_false` on ⊥.
    Await {
        stmt: StmtId,
        from: LifelineId,
        tag: ControlTag,
        on_false: u32,
    },
    Jump {
        target: u32,
    },
    /// The start of a lifeline's parts of a `par`: part 0 follows at the
    /// next op, part i (i ≥ 1) starts at `parts[i - 1]`; each ends with an
    /// [`Op::EndPart`]. The parts run concurrently (the part-0 task spawns
    /// the others); the lifeline continues at `join` once all have ended.
    Fork {
        stmt: StmtId,
        parts: Vec<u32>,
        join: u32,
    },
    /// The end of part `part` of the `Fork` at `fork`. Read sequentially
    /// (one part after another, as [`flat_steps`] does), the next part
    /// starts at `next` (the join after the last part).
    EndPart {
        fork: u32,
        part: u32,
        next: u32,
    },
}

/// The flat form of one lifeline's local program.
#[derive(Debug, Clone, PartialEq)]
pub struct FlatProgram {
    pub lifeline: LifelineId,
    pub ops: Vec<Op>,
}

impl FlatProgram {
    /// Lowers a tree-form program. Linear in its size.
    pub fn from_local(program: &LocalProgram) -> FlatProgram {
        // The static size bounds the number of ops (minus jumps) well enough
        // to avoid regrowing a vector of large ops.
        let mut ops = Vec::with_capacity(program.size());
        lower(&program.body, &mut ops);
        FlatProgram {
            lifeline: program.lifeline,
            ops,
        }
    }

    /// Lowers a tree-form program it consumes: expressions are moved, not
    /// cloned, so this is the cheap way when the tree is no longer needed.
    pub fn from_local_owned(program: LocalProgram) -> FlatProgram {
        let mut ops = Vec::with_capacity(program.size());
        lower_owned(program.body, &mut ops);
        FlatProgram {
            lifeline: program.lifeline,
            ops,
        }
    }
}

fn lower_owned(block: Vec<Instr>, ops: &mut Vec<Op>) {
    for instr in block {
        match instr {
            Instr::Send { stmt, to, items } => ops.push(Op::Send { stmt, to, items }),
            Instr::Recv { stmt, from, binds } => ops.push(Op::Recv { stmt, from, binds }),
            Instr::Act {
                stmt,
                outputs,
                call,
            } => ops.push(Op::Act {
                stmt,
                outputs,
                call: *call,
            }),
            Instr::DecideIf(d) => {
                let d = *d;
                let head = ops.len();
                ops.push(Op::Decide {
                    stmt: d.stmt,
                    guard: d.guard,
                    tag: d.tag,
                    notify: d.notify,
                    on_false: 0,
                });
                lower_if_owned(ops, head, d.then, d.otherwise);
            }
            Instr::Branch(b) => {
                let b = *b;
                let head = ops.len();
                ops.push(Op::Await {
                    stmt: b.stmt,
                    from: b.from,
                    tag: b.tag,
                    on_false: 0,
                });
                lower_if_owned(ops, head, b.then, b.otherwise);
            }
            Instr::DecideWhile(d) => {
                let d = *d;
                let head = ops.len();
                ops.push(Op::Decide {
                    stmt: d.stmt,
                    guard: d.guard,
                    tag: d.tag,
                    notify: d.notify,
                    on_false: 0,
                });
                lower_while_owned(ops, head, d.body, d.exit);
            }
            Instr::Loop(l) => {
                let l = *l;
                let head = ops.len();
                ops.push(Op::Await {
                    stmt: l.stmt,
                    from: l.from,
                    tag: l.tag,
                    on_false: 0,
                });
                lower_while_owned(ops, head, l.body, l.exit);
            }
            Instr::Par(p) => {
                let p = *p;
                let head = ops.len();
                ops.push(Op::Fork {
                    stmt: p.stmt,
                    parts: Vec::new(),
                    join: 0,
                });
                for (i, part) in p.parts.into_iter().enumerate() {
                    start_part(ops, head, i);
                    lower_owned(part.body, ops);
                    end_part(ops, head, i);
                }
                finish_fork(ops, head);
            }
        }
    }
}

/// Records that part `i` of the fork at `head` starts at the next op.
fn start_part(ops: &mut [Op], head: usize, i: usize) {
    let at = pos(ops);
    if i > 0
        && let Some(Op::Fork { parts, .. }) = ops.get_mut(head)
    {
        parts.push(at);
    }
}

fn end_part(ops: &mut Vec<Op>, head: usize, i: usize) {
    ops.push(Op::EndPart {
        fork: u32::try_from(head).unwrap_or(u32::MAX),
        part: i as u32,
        next: 0,
    });
}

/// Patches the join of the fork at `head` and the `next` of its parts' ends.
fn finish_fork(ops: &mut [Op], head: usize) {
    let join = pos(ops);
    let starts = match ops.get_mut(head) {
        Some(Op::Fork { parts, join: j, .. }) => {
            *j = join;
            parts.clone()
        }
        _ => return,
    };
    let fork = u32::try_from(head).unwrap_or(u32::MAX);
    for op in ops.iter_mut().skip(head) {
        if let Op::EndPart {
            fork: f,
            part,
            next,
        } = op
            && *f == fork
        {
            *next = starts.get(*part as usize).copied().unwrap_or(join);
        }
    }
}

fn lower_if_owned(ops: &mut Vec<Op>, head: usize, then: Vec<Instr>, otherwise: Vec<Instr>) {
    lower_owned(then, ops);
    if otherwise.is_empty() {
        let end = pos(ops);
        patch(ops, head, end);
    } else {
        let jump = ops.len();
        ops.push(Op::Jump { target: 0 });
        let else_start = pos(ops);
        patch(ops, head, else_start);
        lower_owned(otherwise, ops);
        let end = pos(ops);
        patch(ops, jump, end);
    }
}

fn lower_while_owned(ops: &mut Vec<Op>, head: usize, body: Vec<Instr>, exit: Vec<Instr>) {
    lower_owned(body, ops);
    ops.push(Op::Jump {
        target: u32::try_from(head).unwrap_or(u32::MAX),
    });
    let exit_start = pos(ops);
    patch(ops, head, exit_start);
    lower_owned(exit, ops);
}

fn pos(ops: &[Op]) -> u32 {
    u32::try_from(ops.len()).unwrap_or(u32::MAX)
}

fn patch(ops: &mut [Op], at: usize, target: u32) {
    match ops.get_mut(at) {
        Some(Op::Decide { on_false, .. } | Op::Await { on_false, .. }) => *on_false = target,
        Some(Op::Jump { target: t }) => *t = target,
        _ => {}
    }
}

fn lower(block: &[Instr], ops: &mut Vec<Op>) {
    for instr in block {
        match instr {
            Instr::Send { stmt, to, items } => ops.push(Op::Send {
                stmt: *stmt,
                to: *to,
                items: items.clone(),
            }),
            Instr::Recv { stmt, from, binds } => ops.push(Op::Recv {
                stmt: *stmt,
                from: *from,
                binds: binds.clone(),
            }),
            Instr::Act {
                stmt,
                outputs,
                call,
            } => {
                ops.push(Op::Act {
                    stmt: *stmt,
                    outputs: outputs.clone(),
                    call: (**call).clone(),
                });
            }
            Instr::DecideIf(d) => {
                let head = ops.len();
                ops.push(Op::Decide {
                    stmt: d.stmt,
                    guard: d.guard.clone(),
                    tag: d.tag,
                    notify: d.notify.clone(),
                    on_false: 0,
                });
                lower_if(ops, head, &d.then, &d.otherwise);
            }
            Instr::Branch(b) => {
                let head = ops.len();
                ops.push(Op::Await {
                    stmt: b.stmt,
                    from: b.from,
                    tag: b.tag,
                    on_false: 0,
                });
                lower_if(ops, head, &b.then, &b.otherwise);
            }
            Instr::DecideWhile(d) => {
                let head = ops.len();
                ops.push(Op::Decide {
                    stmt: d.stmt,
                    guard: d.guard.clone(),
                    tag: d.tag,
                    notify: d.notify.clone(),
                    on_false: 0,
                });
                lower_while(ops, head, &d.body, &d.exit);
            }
            Instr::Loop(l) => {
                let head = ops.len();
                ops.push(Op::Await {
                    stmt: l.stmt,
                    from: l.from,
                    tag: l.tag,
                    on_false: 0,
                });
                lower_while(ops, head, &l.body, &l.exit);
            }
            Instr::Par(p) => {
                let head = ops.len();
                ops.push(Op::Fork {
                    stmt: p.stmt,
                    parts: Vec::new(),
                    join: 0,
                });
                for (i, part) in p.parts.iter().enumerate() {
                    start_part(ops, head, i);
                    lower(&part.body, ops);
                    end_part(ops, head, i);
                }
                finish_fork(ops, head);
            }
        }
    }
}

fn lower_if(ops: &mut Vec<Op>, head: usize, then: &[Instr], otherwise: &[Instr]) {
    lower(then, ops);
    if otherwise.is_empty() {
        let end = pos(ops);
        patch(ops, head, end);
    } else {
        let jump = ops.len();
        ops.push(Op::Jump { target: 0 });
        let else_start = pos(ops);
        patch(ops, head, else_start);
        lower(otherwise, ops);
        let end = pos(ops);
        patch(ops, jump, end);
    }
}

fn lower_while(ops: &mut Vec<Op>, head: usize, body: &[Instr], exit: &[Instr]) {
    lower(body, ops);
    ops.push(Op::Jump {
        target: u32::try_from(head).unwrap_or(u32::MAX),
    });
    let exit_start = pos(ops);
    patch(ops, head, exit_start);
    lower(exit, ops);
}

/// One observable step of a local program, for comparing the two forms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Send(StmtId, LifelineId),
    Recv(StmtId, LifelineId),
    Act(StmtId),
    /// A decision taken (at the owner) or received, with the decision.
    Decide(StmtId, bool),
    Await(StmtId, bool),
    /// The start of a lifeline's parts of a `par`.
    Fork(StmtId),
}

/// The steps a tree-form program takes when every decision is answered by
/// `decide`, stopping after `fuel` steps.
pub fn tree_steps(
    body: &[Instr],
    decide: &mut dyn FnMut(StmtId) -> bool,
    fuel: &mut usize,
) -> Vec<Step> {
    let mut out = Vec::new();
    tree_walk(body, decide, fuel, &mut out);
    out
}

fn tree_walk(
    body: &[Instr],
    decide: &mut dyn FnMut(StmtId) -> bool,
    fuel: &mut usize,
    out: &mut Vec<Step>,
) {
    for instr in body {
        // (statement, owner side?, is loop, ⊤ block, ⊥ block)
        let construct = match instr {
            Instr::DecideIf(d) => Some((d.stmt, true, false, &d.then, &d.otherwise)),
            Instr::DecideWhile(d) => Some((d.stmt, true, true, &d.body, &d.exit)),
            Instr::Branch(b) => Some((b.stmt, false, false, &b.then, &b.otherwise)),
            Instr::Loop(l) => Some((l.stmt, false, true, &l.body, &l.exit)),
            _ => None,
        };
        if *fuel == 0 {
            return;
        }
        if let Instr::Par(p) = instr {
            // The parts one after another, as `flat_steps` reads them.
            *fuel -= 1;
            out.push(Step::Fork(p.stmt));
            for part in &p.parts {
                tree_walk(&part.body, decide, fuel, out);
            }
            continue;
        }
        match construct {
            Some((stmt, owner, is_loop, yes, no)) => loop {
                if *fuel == 0 {
                    return;
                }
                *fuel -= 1;
                let d = decide(stmt);
                out.push(if owner {
                    Step::Decide(stmt, d)
                } else {
                    Step::Await(stmt, d)
                });
                if d {
                    tree_walk(yes, decide, fuel, out);
                    if !is_loop {
                        break;
                    }
                } else {
                    tree_walk(no, decide, fuel, out);
                    break;
                }
            },
            None => {
                *fuel -= 1;
                match instr {
                    Instr::Send { stmt, to, .. } => out.push(Step::Send(*stmt, *to)),
                    Instr::Recv { stmt, from, .. } => out.push(Step::Recv(*stmt, *from)),
                    Instr::Act { stmt, .. } => out.push(Step::Act(*stmt)),
                    _ => {}
                }
            }
        }
    }
}

/// The steps the flat program takes under the same contract as [`tree_steps`].
pub fn flat_steps(
    program: &FlatProgram,
    decide: &mut dyn FnMut(StmtId) -> bool,
    fuel: &mut usize,
) -> Vec<Step> {
    let mut out = Vec::new();
    let mut pc = 0usize;
    while let Some(op) = program.ops.get(pc) {
        match op {
            Op::Jump { target } | Op::EndPart { next: target, .. } => {
                pc = *target as usize;
                continue;
            }
            _ if *fuel == 0 => break,
            _ => {}
        }
        *fuel -= 1;
        pc = match op {
            Op::Send { stmt, to, .. } => {
                out.push(Step::Send(*stmt, *to));
                pc + 1
            }
            Op::Recv { stmt, from, .. } => {
                out.push(Step::Recv(*stmt, *from));
                pc + 1
            }
            Op::Act { stmt, .. } => {
                out.push(Step::Act(*stmt));
                pc + 1
            }
            Op::Decide { stmt, on_false, .. } | Op::Await { stmt, on_false, .. } => {
                let d = decide(*stmt);
                out.push(if matches!(op, Op::Decide { .. }) {
                    Step::Decide(*stmt, d)
                } else {
                    Step::Await(*stmt, d)
                });
                if d { pc + 1 } else { *on_false as usize }
            }
            Op::Fork { stmt, .. } => {
                out.push(Step::Fork(*stmt));
                pc + 1
            }
            Op::Jump { target } | Op::EndPart { next: target, .. } => *target as usize,
        };
    }
    out
}
