//! Participation and projection computed naively from the global workflow.
//!
//! lifelines(P) is a plain recursive walk (every sender, receiver, actor and
//! owner of P, nested constructs included), and R of a construct is
//! lifelines(then ∪ else) without the owner, in ⊏ order: LANGUAGE.md §5 word
//! for word, recomputed for every construct and every lifeline (quadratic,
//! and obviously so). [`local_programs`] projects each lifeline separately;
//! [`from_projection`] reads the real projection into the same tree, so a
//! test compares the two with `==`.

use std::collections::BTreeSet;
use troupe_check::ir::{Block, Call, Expr, LifelineId, Recv, StmtId, StmtKind, VarId, Workflow};
use troupe_project::{ConstructKind, Instr, Projection};

/// lifelines(P) of a block: everyone who sends, receives, acts or owns a
/// construct in it, at any depth.
pub fn lifelines(block: &Block) -> BTreeSet<LifelineId> {
    let mut out = BTreeSet::new();
    for s in &block.stmts {
        match &s.kind {
            StmtKind::Msg { from, to, .. } => {
                out.insert(*from);
                out.insert(*to);
            }
            StmtKind::Act { at, .. } => {
                out.insert(*at);
            }
            StmtKind::If {
                owner,
                then: a,
                otherwise: b,
                ..
            }
            | StmtKind::While {
                owner,
                body: a,
                exit: b,
                ..
            } => {
                out.insert(*owner);
                out.extend(lifelines(a));
                out.extend(lifelines(b));
            }
            StmtKind::Par { branches } => {
                for b in branches {
                    out.extend(lifelines(b));
                }
            }
        }
    }
    out
}

/// R of a construct: lifelines of both blocks, owner excluded, in ⊏ order.
pub fn recipients(owner: LifelineId, a: &Block, b: &Block) -> Vec<LifelineId> {
    let mut r = lifelines(a);
    r.extend(lifelines(b));
    r.remove(&owner);
    r.into_iter().collect()
}

/// Every `if`/`while` of the workflow, in pre-order: statement, kind, owner, R.
pub fn constructs(
    workflow: &Workflow,
) -> Vec<(StmtId, ConstructKind, LifelineId, Vec<LifelineId>)> {
    fn walk(block: &Block, out: &mut Vec<(StmtId, ConstructKind, LifelineId, Vec<LifelineId>)>) {
        for s in &block.stmts {
            match &s.kind {
                StmtKind::If {
                    owner,
                    then: a,
                    otherwise: b,
                    ..
                } => {
                    out.push((s.id, ConstructKind::If, *owner, recipients(*owner, a, b)));
                    walk(a, out);
                    walk(b, out);
                }
                StmtKind::While {
                    owner,
                    body: a,
                    exit: b,
                    ..
                } => {
                    out.push((s.id, ConstructKind::While, *owner, recipients(*owner, a, b)));
                    walk(a, out);
                    walk(b, out);
                }
                StmtKind::Par { branches } => branches.iter().for_each(|b| walk(b, out)),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(&workflow.body, &mut out);
    out
}

/// One instruction of a reference local program: what the real projection's
/// [`Instr`] says, without tags (tags are checked apart: distinct per
/// construct, equal at the owner and every recipient).
#[derive(Debug, Clone, PartialEq)]
pub enum RefInstr {
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
    /// At the owner: evaluate `guard`, tell `notify` in order, then `yes` on
    /// ⊤ (then / body) or `no` on ⊥ (else / exit).
    Decide {
        stmt: StmtId,
        kind: ConstructKind,
        guard: Expr,
        notify: Vec<LifelineId>,
        yes: Vec<RefInstr>,
        no: Vec<RefInstr>,
    },
    /// At a recipient: receive the owner's decision and follow it.
    Follow {
        stmt: StmtId,
        kind: ConstructKind,
        from: LifelineId,
        yes: Vec<RefInstr>,
        no: Vec<RefInstr>,
    },
    /// A lifeline's parts of a `par`: (branch, its part) for each branch
    /// it has something to do in.
    Par {
        stmt: StmtId,
        parts: Vec<(u32, Vec<RefInstr>)>,
    },
}

/// The local program of every lifeline, projected one lifeline at a time.
pub fn local_programs(workflow: &Workflow) -> Vec<Vec<RefInstr>> {
    workflow
        .lifeline_ids()
        .map(|l| project_block(&workflow.body, l))
        .collect()
}

fn project_block(block: &Block, l: LifelineId) -> Vec<RefInstr> {
    let mut out = Vec::new();
    for s in &block.stmts {
        match &s.kind {
            StmtKind::Msg { from, to, items } => {
                if *from == l {
                    out.push(RefInstr::Send {
                        stmt: s.id,
                        to: *to,
                        items: items.iter().map(|i| i.send.clone()).collect(),
                    });
                }
                if *to == l {
                    out.push(RefInstr::Recv {
                        stmt: s.id,
                        from: *from,
                        binds: items.iter().map(|i| i.recv.clone()).collect(),
                    });
                }
            }
            StmtKind::Act { at, outputs, call } => {
                if *at == l {
                    out.push(RefInstr::Act {
                        stmt: s.id,
                        outputs: outputs.clone(),
                        call: call.clone(),
                    });
                }
            }
            StmtKind::If {
                owner,
                guard,
                then: a,
                otherwise: b,
            }
            | StmtKind::While {
                owner,
                guard,
                body: a,
                exit: b,
            } => {
                let kind = if matches!(s.kind, StmtKind::If { .. }) {
                    ConstructKind::If
                } else {
                    ConstructKind::While
                };
                let r = recipients(*owner, a, b);
                if *owner == l {
                    out.push(RefInstr::Decide {
                        stmt: s.id,
                        kind,
                        guard: guard.clone(),
                        notify: r,
                        yes: project_block(a, l),
                        no: project_block(b, l),
                    });
                } else if r.contains(&l) {
                    out.push(RefInstr::Follow {
                        stmt: s.id,
                        kind,
                        from: *owner,
                        yes: project_block(a, l),
                        no: project_block(b, l),
                    });
                }
            }
            StmtKind::Par { branches } => {
                let parts: Vec<(u32, Vec<RefInstr>)> = branches
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| lifelines(b).contains(&l))
                    .map(|(i, b)| (i as u32, project_block(b, l)))
                    .collect();
                if !parts.is_empty() {
                    out.push(RefInstr::Par { stmt: s.id, parts });
                }
            }
        }
    }
    out
}

/// The real projection read into the reference tree (tags dropped).
pub fn from_projection(p: &Projection) -> Vec<Vec<RefInstr>> {
    p.programs.iter().map(|lp| convert(&lp.body)).collect()
}

fn convert(body: &[Instr]) -> Vec<RefInstr> {
    body.iter()
        .map(|i| match i {
            Instr::Send { stmt, to, items } => RefInstr::Send {
                stmt: *stmt,
                to: *to,
                items: items.clone(),
            },
            Instr::Recv { stmt, from, binds } => RefInstr::Recv {
                stmt: *stmt,
                from: *from,
                binds: binds.clone(),
            },
            Instr::Act {
                stmt,
                outputs,
                call,
            } => RefInstr::Act {
                stmt: *stmt,
                outputs: outputs.clone(),
                call: (**call).clone(),
            },
            Instr::DecideIf(d) => RefInstr::Decide {
                stmt: d.stmt,
                kind: ConstructKind::If,
                guard: d.guard.clone(),
                notify: d.notify.clone(),
                yes: convert(&d.then),
                no: convert(&d.otherwise),
            },
            Instr::DecideWhile(d) => RefInstr::Decide {
                stmt: d.stmt,
                kind: ConstructKind::While,
                guard: d.guard.clone(),
                notify: d.notify.clone(),
                yes: convert(&d.body),
                no: convert(&d.exit),
            },
            Instr::Branch(b) => RefInstr::Follow {
                stmt: b.stmt,
                kind: ConstructKind::If,
                from: b.from,
                yes: convert(&b.then),
                no: convert(&b.otherwise),
            },
            Instr::Loop(b) => RefInstr::Follow {
                stmt: b.stmt,
                kind: ConstructKind::While,
                from: b.from,
                yes: convert(&b.body),
                no: convert(&b.exit),
            },
            Instr::Par(p) => RefInstr::Par {
                stmt: p.stmt,
                parts: p
                    .parts
                    .iter()
                    .map(|q| (q.branch, convert(&q.body)))
                    .collect(),
            },
        })
        .collect()
}

/// Every tag of the real projection, by construct statement and lifeline:
/// `(stmt, lifeline, tag)` for each decide and follow instruction.
pub fn tags_in(p: &Projection) -> Vec<(StmtId, LifelineId, u64)> {
    fn walk(body: &[Instr], l: LifelineId, out: &mut Vec<(StmtId, LifelineId, u64)>) {
        for i in body {
            let (stmt, tag, a, b) = match i {
                Instr::DecideIf(d) => (d.stmt, d.tag, &d.then, &d.otherwise),
                Instr::DecideWhile(d) => (d.stmt, d.tag, &d.body, &d.exit),
                Instr::Branch(x) => (x.stmt, x.tag, &x.then, &x.otherwise),
                Instr::Loop(x) => (x.stmt, x.tag, &x.body, &x.exit),
                Instr::Par(p) => {
                    for q in &p.parts {
                        walk(&q.body, l, out);
                    }
                    continue;
                }
                _ => continue,
            };
            out.push((stmt, l, tag.0));
            walk(a, l, out);
            walk(b, l, out);
        }
    }
    let mut out = Vec::new();
    for lp in &p.programs {
        walk(&lp.body, lp.lifeline, &mut out);
    }
    out
}

/// The exact size the projection must have (as `Projection::size` counts):
/// 2 per message (its send and its receive), 1 per action, and per
/// construct 1 (the decide) + |R| (its control sends) + |R| (one follow
/// instruction per recipient).
pub fn expected_size(workflow: &Workflow) -> usize {
    fn walk(block: &Block) -> usize {
        block
            .stmts
            .iter()
            .map(|s| match &s.kind {
                StmtKind::Msg { .. } => 2,
                StmtKind::Act { .. } => 1,
                StmtKind::If {
                    owner,
                    then: a,
                    otherwise: b,
                    ..
                }
                | StmtKind::While {
                    owner,
                    body: a,
                    exit: b,
                    ..
                } => 1 + 2 * recipients(*owner, a, b).len() + walk(a) + walk(b),
                // One `par` instruction per lifeline with a part in it.
                StmtKind::Par { branches } => {
                    let mut ls = BTreeSet::new();
                    for b in branches {
                        ls.extend(lifelines(b));
                    }
                    ls.len() + branches.iter().map(walk).sum::<usize>()
                }
            })
            .sum()
    }
    walk(&workflow.body)
}
