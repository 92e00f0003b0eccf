//! Every schedule and every decision of the projected programs, explored.
//!
//! The flat local programs (what the runtime executes) are run over FIFO
//! channels by a small abstract machine of this module: values are not
//! computed, and an owner may decide either way at every `Decide` (guards
//! abstracted, as in ⟦P⟧), except that a loop's owner decides ⊥ after
//! `unroll` consecutive ⊤ of that loop. From the initial state, every
//! enabled move of every lifeline is taken, depth first, with each visited
//! state remembered, so every reachable state is seen once: the result is
//! the set of all executions the projected system can produce under the
//! bound, and every state in which no lifeline can move but the run is not
//! over (a deadlock, or a message left in a channel) is reported.
//!
//! `unroll` is per loop entry, as in [`crate::global::enumerate`]: the
//! count of a loop resets when its owner decides ⊥.

use std::collections::{HashMap, HashSet, VecDeque};
use troupe_check::ir::{LifelineId, StmtId, StmtKind, Workflow};
use troupe_msc::{Event, Execution, Message};
use troupe_project::{ControlTag, FlatProgram, Op};

/// What the exploration found.
#[derive(Debug, Clone, PartialEq)]
pub struct Exploration {
    /// The distinct complete executions (values abstracted).
    pub executions: Vec<Execution>,
    /// States visited.
    pub states: usize,
}

/// Why the exploration failed.
#[derive(Debug, Clone, PartialEq)]
pub enum ExploreError {
    /// No lifeline can move, yet the run is not over.
    Stuck {
        /// Lifelines not at the end of their program.
        waiting: Vec<LifelineId>,
        /// Messages left in channels.
        undelivered: usize,
        /// The words so far.
        execution: Execution,
    },
    /// The workflow has a `par`: this explorer runs one program counter
    /// per lifeline, so it does not explore concurrent parts.
    Concurrent,
    /// A lifeline received something its program did not expect.
    Protocol {
        lifeline: LifelineId,
        message: String,
        execution: Execution,
    },
    /// More states than the budget.
    Budget,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Msg {
    Data(StmtId),
    Control(StmtId, u64, bool),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Ev {
    Send(u32, Msg),
    Recv(u32, Msg),
    Act(StmtId),
    Decide(StmtId, u64, bool),
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct State {
    pcs: Vec<usize>,
    /// Consecutive ⊤ decisions of each loop, by statement id.
    counts: Vec<u32>,
    /// Channel `from * n + to`.
    chans: Vec<VecDeque<Msg>>,
    words: Vec<Vec<Ev>>,
}

fn to_message(m: Msg) -> Message {
    match m {
        Msg::Data(stmt) => Message::Data { stmt, values: None },
        Msg::Control(stmt, tag, decision) => Message::Control {
            stmt,
            tag: ControlTag(tag),
            decision,
        },
    }
}

fn to_execution(words: &[Vec<Ev>]) -> Execution {
    Execution {
        words: words
            .iter()
            .map(|w| {
                w.iter()
                    .map(|e| match *e {
                        Ev::Send(to, m) => Event::Send {
                            to: LifelineId(to),
                            msg: to_message(m),
                        },
                        Ev::Recv(from, m) => Event::Recv {
                            from: LifelineId(from),
                            msg: to_message(m),
                        },
                        Ev::Act(stmt) => Event::Act {
                            stmt,
                            outputs: None,
                        },
                        Ev::Decide(stmt, tag, decision) => Event::Decide {
                            stmt,
                            tag: ControlTag(tag),
                            decision,
                        },
                    })
                    .collect()
            })
            .collect(),
    }
}

/// Which statements are `while` loops.
fn loops(workflow: &Workflow) -> Vec<bool> {
    fn walk(block: &troupe_check::ir::Block, out: &mut Vec<bool>) {
        for s in &block.stmts {
            match &s.kind {
                StmtKind::While { body, exit, .. } => {
                    out[s.id.0 as usize] = true;
                    walk(body, out);
                    walk(exit, out);
                }
                StmtKind::If {
                    then, otherwise, ..
                } => {
                    walk(then, out);
                    walk(otherwise, out);
                }
                _ => {}
            }
        }
    }
    let mut out = vec![false; workflow.stmt_count as usize];
    walk(&workflow.body, &mut out);
    out
}

/// Explores the flat programs `flat` (indexed by lifeline) of `workflow`,
/// visiting at most `budget` states.
pub fn explore(
    workflow: &Workflow,
    flat: &[FlatProgram],
    unroll: u32,
    budget: usize,
) -> Result<Exploration, ExploreError> {
    let n = flat.len();
    let is_loop = loops(workflow);
    let settle = |st: &mut State| {
        for (l, prog) in flat.iter().enumerate() {
            let mut hops = 0;
            while let Some(Op::Jump { target }) = prog.ops.get(st.pcs[l]) {
                st.pcs[l] = *target as usize;
                hops += 1;
                if hops > prog.ops.len() {
                    break;
                }
            }
        }
    };
    let mut start = State {
        pcs: vec![0; n],
        counts: vec![0; workflow.stmt_count as usize],
        chans: vec![VecDeque::new(); n * n],
        words: vec![Vec::new(); n],
    };
    settle(&mut start);
    let mut visited: HashSet<State> = HashSet::new();
    let mut found: HashMap<Vec<Vec<Ev>>, ()> = HashMap::new();
    let mut order: Vec<Vec<Vec<Ev>>> = Vec::new();
    let mut stack = vec![start];
    while let Some(st) = stack.pop() {
        if !visited.insert(st.clone()) {
            continue;
        }
        if visited.len() > budget {
            return Err(ExploreError::Budget);
        }
        let mut moved = false;
        for (l, prog) in flat.iter().enumerate() {
            let Some(op) = prog.ops.get(st.pcs[l]) else {
                continue;
            };
            let lu = l as u32;
            match op {
                Op::Send { stmt, to, .. } => {
                    let mut next = st.clone();
                    let m = Msg::Data(*stmt);
                    next.chans[l * n + to.0 as usize].push_back(m);
                    next.words[l].push(Ev::Send(to.0, m));
                    next.pcs[l] += 1;
                    settle(&mut next);
                    stack.push(next);
                    moved = true;
                }
                Op::Act { stmt, .. } => {
                    let mut next = st.clone();
                    next.words[l].push(Ev::Act(*stmt));
                    next.pcs[l] += 1;
                    settle(&mut next);
                    stack.push(next);
                    moved = true;
                }
                Op::Recv { stmt, from, .. } => {
                    let c = from.0 as usize * n + l;
                    match st.chans[c].front() {
                        None => {}
                        Some(&m @ Msg::Data(s)) if s == *stmt => {
                            let mut next = st.clone();
                            next.chans[c].pop_front();
                            next.words[l].push(Ev::Recv(from.0, m));
                            next.pcs[l] += 1;
                            settle(&mut next);
                            stack.push(next);
                            moved = true;
                        }
                        Some(other) => {
                            return Err(ExploreError::Protocol {
                                lifeline: LifelineId(lu),
                                message: format!(
                                    "expected s{} from #{}, found {other:?}",
                                    stmt.0, from.0
                                ),
                                execution: to_execution(&st.words),
                            });
                        }
                    }
                }
                Op::Decide {
                    stmt,
                    tag,
                    notify,
                    on_false,
                    ..
                } => {
                    let s = stmt.0 as usize;
                    let lp = is_loop.get(s).copied().unwrap_or(false);
                    for d in [true, false] {
                        if d && lp && st.counts[s] >= unroll {
                            continue;
                        }
                        let mut next = st.clone();
                        next.words[l].push(Ev::Decide(*stmt, tag.0, d));
                        let m = Msg::Control(*stmt, tag.0, d);
                        for r in notify {
                            next.chans[l * n + r.0 as usize].push_back(m);
                            next.words[l].push(Ev::Send(r.0, m));
                        }
                        if lp {
                            next.counts[s] = if d { next.counts[s] + 1 } else { 0 };
                        }
                        next.pcs[l] = if d {
                            next.pcs[l] + 1
                        } else {
                            *on_false as usize
                        };
                        settle(&mut next);
                        stack.push(next);
                        moved = true;
                    }
                }
                Op::Await {
                    stmt,
                    from,
                    tag,
                    on_false,
                } => {
                    let c = from.0 as usize * n + l;
                    match st.chans[c].front() {
                        None => {}
                        Some(&m @ Msg::Control(s, t, d)) if s == *stmt && t == tag.0 => {
                            let mut next = st.clone();
                            next.chans[c].pop_front();
                            next.words[l].push(Ev::Recv(from.0, m));
                            next.pcs[l] = if d {
                                next.pcs[l] + 1
                            } else {
                                *on_false as usize
                            };
                            settle(&mut next);
                            stack.push(next);
                            moved = true;
                        }
                        Some(other) => {
                            return Err(ExploreError::Protocol {
                                lifeline: LifelineId(lu),
                                message: format!(
                                    "expected the decision of s{} from #{}, found {other:?}",
                                    stmt.0, from.0
                                ),
                                execution: to_execution(&st.words),
                            });
                        }
                    }
                }
                Op::Fork { .. } | Op::EndPart { .. } => return Err(ExploreError::Concurrent),
                Op::Jump { .. } => unreachable!("settled"),
            }
        }
        if !moved {
            let waiting: Vec<LifelineId> = (0..n)
                .filter(|&l| st.pcs[l] < flat[l].ops.len())
                .map(|l| LifelineId(l as u32))
                .collect();
            let undelivered = st.chans.iter().map(VecDeque::len).sum();
            if !waiting.is_empty() || undelivered > 0 {
                return Err(ExploreError::Stuck {
                    waiting,
                    undelivered,
                    execution: to_execution(&st.words),
                });
            }
            if found.insert(st.words.clone(), ()).is_none() {
                order.push(st.words);
            }
        }
    }
    Ok(Exploration {
        executions: order.iter().map(|w| to_execution(w)).collect(),
        states: visited.len(),
    })
}
