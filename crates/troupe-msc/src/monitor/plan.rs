//! Each lifeline's view of the global workflow, derived from the workflow
//! itself rather than from the projection's programs: its sends, receives
//! and actions, and for each construct it takes part in whether it decides
//! or is told, with the lifelines of each construct computed here.

use super::*;

/// The lifelines of each construct's blocks (both arms, nested constructs
/// included, owners too), by statement; returns those of `block`.
pub(super) fn lifelines_of(
    block: &Block,
    out: &mut BTreeMap<StmtId, Vec<LifelineId>>,
) -> Vec<LifelineId> {
    let mut all = Vec::new();
    for stmt in &block.stmts {
        match &stmt.kind {
            StmtKind::Msg { from, to, .. } => all.extend([*from, *to]),
            StmtKind::Act { at, .. } => all.push(*at),
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
                let mut inner = lifelines_of(a, out);
                inner.extend(lifelines_of(b, out));
                inner.sort_unstable();
                inner.dedup();
                all.push(*owner);
                all.extend(inner.iter().copied());
                // R excludes the owner.
                inner.retain(|l| l != owner);
                out.insert(stmt.id, inner);
            }
            StmtKind::Par { branches } => {
                for b in branches {
                    all.extend(lifelines_of(b, out));
                }
            }
        }
    }
    all.sort_unstable();
    all.dedup();
    all
}

/// Appends `l`'s view of `block` to `plans`; returns its index.
pub(super) fn plan(
    block: &Block,
    l: LifelineId,
    participants: &BTreeMap<StmtId, Vec<LifelineId>>,
    lanes: &Lanes,
    tag: &dyn Fn(StmtId) -> ControlTag,
    plans: &mut Vec<Vec<Op>>,
) -> usize {
    let index = plans.len();
    plans.push(Vec::new());
    let mut ops = Vec::new();
    for stmt in &block.stmts {
        match &stmt.kind {
            StmtKind::Msg { from, to, items } => {
                if *from == l {
                    ops.push(Op::Send {
                        to: *to,
                        stmt: stmt.id,
                        arity: items.len(),
                    });
                }
                if *to == l {
                    ops.push(Op::Recv {
                        from: *from,
                        stmt: stmt.id,
                        arity: items.len(),
                    });
                }
            }
            StmtKind::Act { at, .. } if *at == l => ops.push(Op::Act { stmt: stmt.id }),
            StmtKind::Act { .. } => {}
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
                let notify = participants.get(&stmt.id).cloned().unwrap_or_default();
                let role = if *owner == l {
                    Role::Owner(notify)
                } else if notify.contains(&l) {
                    Role::Told(*owner)
                } else {
                    // Not in the construct: nothing of it happens here.
                    continue;
                };
                let then = plan(a, l, participants, lanes, tag, plans);
                let otherwise = plan(b, l, participants, lanes, tag, plans);
                ops.push(Op::Branch {
                    stmt: stmt.id,
                    tag: tag(stmt.id),
                    role,
                    is_loop: matches!(stmt.kind, StmtKind::While { .. }),
                    arms: [then, otherwise],
                });
            }
            StmtKind::Par { branches } => {
                let mut parts = Vec::new();
                for (i, b) in branches.iter().enumerate() {
                    let lane = lanes.branch(stmt.id, i as u32);
                    let takes_part = lanes
                        .lane(lane)
                        .is_some_and(|x| x.lifelines.binary_search(&l).is_ok());
                    if takes_part {
                        parts.push((lane, plan(b, l, participants, lanes, tag, plans)));
                    }
                }
                if !parts.is_empty() {
                    ops.push(Op::Par {
                        stmt: stmt.id,
                        parts,
                    });
                }
            }
        }
    }
    plans[index] = ops;
    index
}
