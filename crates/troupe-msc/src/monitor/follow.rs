//! A cursor following its lifeline's view: settling over what needs no
//! event (ends of blocks, arms entered once decided, `par` entered and
//! left), routing an event to the part whose branch holds it, taking it
//! when it is the next the view allows, and saying what was expected when
//! it is not.

use super::*;

/// Moves a cursor over what needs no event: ends of blocks, entering an arm
/// once the owner told everyone, entering a `par` (its parts start) and
/// leaving it once every part has ended.
pub(super) fn settle(plans: &[Vec<Op>], c: &mut Cursor) {
    loop {
        let Some(top) = c.frames.last() else { return };
        let plan = &plans[top.plan];
        if top.pos == plan.len() {
            let done = c.frames.pop().map(|f| f.arm);
            match (done, c.frames.last_mut()) {
                // The body ran: the owner decides again.
                (Some(Arm::LoopBody), Some(_)) => c.head = Head::Before,
                (Some(Arm::Branch | Arm::LoopExit), Some(parent)) => {
                    parent.pos += 1;
                    c.head = Head::Before;
                }
                _ => return,
            }
            continue;
        }
        match (&plan[top.pos], c.head) {
            (
                Op::Branch {
                    role: Role::Owner(notify),
                    arms,
                    is_loop,
                    ..
                },
                Head::Telling { d, told },
            ) if told == notify.len() => {
                let arm = if *is_loop {
                    if d { Arm::LoopBody } else { Arm::LoopExit }
                } else {
                    Arm::Branch
                };
                let plan = arms[usize::from(!d)];
                c.frames.push(Frame { plan, pos: 0, arm });
                c.head = Head::Before;
            }
            (Op::Par { parts, .. }, _) => {
                if c.parts.is_empty() {
                    c.parts = parts
                        .iter()
                        .map(|&(lane, plan)| {
                            (
                                lane,
                                Cursor {
                                    frames: vec![Frame {
                                        plan,
                                        pos: 0,
                                        arm: Arm::Part,
                                    }],
                                    head: Head::Before,
                                    seen: 0,
                                    parts: Vec::new(),
                                },
                            )
                        })
                        .collect();
                }
                let mut all_done = true;
                for (_, p) in &mut c.parts {
                    settle(plans, p);
                    all_done &= p.frames.is_empty();
                }
                if !all_done {
                    return;
                }
                c.parts.clear();
                if let Some(top) = c.frames.last_mut() {
                    top.pos += 1;
                }
            }
            _ => return,
        }
    }
}

/// The part (or the cursor itself) that takes an event of lane `lane`.
pub(super) fn route<'c>(mut c: &'c mut Cursor, lane: u32, lanes: &Lanes) -> &'c mut Cursor {
    loop {
        let Some(i) = c.parts.iter().position(|(l, _)| lanes.within(lane, *l)) else {
            return c;
        };
        c = &mut c.parts[i].1;
    }
}

pub(super) fn route_ref<'c>(mut c: &'c Cursor, lane: u32, lanes: &Lanes) -> &'c Cursor {
    loop {
        let Some(i) = c.parts.iter().position(|(l, _)| lanes.within(lane, *l)) else {
            return c;
        };
        c = &c.parts[i].1;
    }
}

/// The innermost cursor of the first part still running, for messages.
pub(super) fn leaf_of(mut c: &Cursor) -> &Cursor {
    while let Some((_, p)) = c.parts.iter().find(|(_, p)| !p.frames.is_empty()) {
        c = p;
    }
    c
}

/// Applies `event` to cursor `c` when it fits what `c` expects next.
pub(super) fn take(plans: &[Vec<Op>], c: &mut Cursor, event: &Event) -> Option<Took> {
    if !c.parts.is_empty() {
        // At a `par`, but the event is of no part of it.
        return None;
    }
    let top = c.frames.last()?.clone();
    let op = plans[top.plan].get(top.pos)?;
    let advance = |c: &mut Cursor| {
        if let Some(top) = c.frames.last_mut() {
            top.pos += 1;
        }
    };
    match (op, event, c.head) {
        (Op::Send { to, stmt, arity }, Event::Send { to: t, msg }, _)
            if to == t && data_fits(msg, *stmt, *arity) =>
        {
            advance(c);
            Some(Took::Sent(*to, InFlight::of(msg)))
        }
        (Op::Recv { from, stmt, arity }, Event::Recv { from: f, msg }, _)
            if from == f && data_fits(msg, *stmt, *arity) =>
        {
            advance(c);
            Some(Took::Received(*from))
        }
        (Op::Act { stmt }, Event::Act { stmt: s, .. }, _) if stmt == s => {
            advance(c);
            Some(Took::Nothing)
        }
        (
            Op::Branch {
                stmt,
                tag,
                role: Role::Owner(_),
                ..
            },
            Event::Decide {
                stmt: s,
                tag: t,
                decision,
            },
            Head::Before,
        ) if stmt == s && tag == t => {
            c.head = Head::Telling {
                d: *decision,
                told: 0,
            };
            Some(Took::Nothing)
        }
        (
            Op::Branch {
                stmt,
                tag,
                role: Role::Owner(notify),
                ..
            },
            Event::Send {
                to,
                msg:
                    msg @ Message::Control {
                        stmt: s,
                        tag: t,
                        decision,
                    },
            },
            Head::Telling { d, told },
        ) if stmt == s && tag == t && *decision == d && notify.get(told) == Some(to) => {
            c.head = Head::Telling { d, told: told + 1 };
            Some(Took::Sent(*to, InFlight::of(msg)))
        }
        (
            Op::Branch {
                stmt,
                tag,
                role: Role::Told(owner),
                arms,
                is_loop,
            },
            Event::Recv {
                from,
                msg:
                    Message::Control {
                        stmt: s,
                        tag: t,
                        decision,
                    },
            },
            Head::Before,
        ) if stmt == s && tag == t && owner == from => {
            let d = *decision;
            let arm = if *is_loop {
                if d { Arm::LoopBody } else { Arm::LoopExit }
            } else {
                Arm::Branch
            };
            c.frames.push(Frame {
                plan: arms[usize::from(!d)],
                pos: 0,
                arm,
            });
            Some(Took::Received(*from))
        }
        _ => None,
    }
}

/// What cursor `c` expects next, in words.
pub(super) fn expected(plans: &[Vec<Op>], c: &Cursor, names: &[String]) -> String {
    let name = |l: &LifelineId| {
        names
            .get(l.0 as usize)
            .cloned()
            .unwrap_or_else(|| format!("#{}", l.0))
    };
    let Some(top) = c.frames.last() else {
        return "the run had ended for it".into();
    };
    let Some(op) = plans[top.plan].get(top.pos) else {
        return "the end of a block".into();
    };
    match (op, c.head) {
        (Op::Send { to, stmt, .. }, _) => {
            format!("a send to {} (statement {})", name(to), stmt.0)
        }
        (Op::Recv { from, stmt, .. }, _) => {
            format!("a receive from {} (statement {})", name(from), stmt.0)
        }
        (Op::Act { stmt }, _) => format!("the action of statement {}", stmt.0),
        (
            Op::Branch {
                stmt,
                role: Role::Owner(_),
                ..
            },
            Head::Before,
        ) => format!("its decision of statement {}", stmt.0),
        (
            Op::Branch {
                stmt,
                role: Role::Owner(notify),
                ..
            },
            Head::Telling { d, told },
        ) => format!(
            "telling {} its decision {d} of statement {}",
            notify.get(told).map(name).unwrap_or_default(),
            stmt.0
        ),
        (
            Op::Branch {
                stmt,
                role: Role::Told(owner),
                ..
            },
            _,
        ) => format!("the decision of statement {} from {}", stmt.0, name(owner)),
        (Op::Par { stmt, .. }, _) => {
            format!("an event of its parts of the `par` of statement {}", stmt.0)
        }
    }
}

fn data_fits(msg: &Message, stmt: StmtId, arity: usize) -> bool {
    match msg {
        Message::Data { stmt: s, values } => {
            *s == stmt && values.as_ref().is_none_or(|v| v.len() == arity)
        }
        Message::Control { .. } => false,
    }
}
