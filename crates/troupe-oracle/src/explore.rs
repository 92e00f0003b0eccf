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
//! `par` regions run as the runtime runs them: at an `Op::Fork` a lifeline
//! gets one program counter per part (part 0 after the fork, the others
//! where the fork says), each part a thread of its own that may move
//! whenever it is enabled, and the lifeline goes on at the join once every
//! part has reached its `Op::EndPart`. So every interleaving of a
//! lifeline's parts is explored too, not only those of lifelines. Channels
//! are FIFO per (sender, receiver, lane), the lane being the innermost
//! `par` branch of the message's (or decision's) statement, computed from
//! the workflow's syntax by [`crate::global::branches_of`].
//!
//! `unroll` is per loop entry, as in [`crate::global::enumerate`]: the
//! count of a loop resets when its owner decides ⊥.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use troupe_check::ir::{LifelineId, StmtId, StmtKind, Workflow};
use troupe_msc::{Event, Execution, Message};
use troupe_project::{ControlTag, FlatProgram, Op};

/// What the exploration found.
#[derive(Debug, Clone, PartialEq)]
pub struct Exploration {
    /// The distinct complete executions (values abstracted): each
    /// lifeline's word in the order its events happened, so a lifeline
    /// with parts has one execution per interleaving of them.
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

/// One program counter of a lifeline: its main one, or one of its parts of
/// a `par`. While `pc` is at an [`Op::Fork`] whose parts run, `parts` holds
/// them (part 0 first); a part whose counter is at an [`Op::EndPart`] has
/// ended. A tree rather than a flat task list, so that one state has one
/// representation, whatever the order in which parts were spawned.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Thread {
    pc: usize,
    parts: Vec<Thread>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct State {
    /// Per lifeline, its counters.
    threads: Vec<Thread>,
    /// Consecutive ⊤ decisions of each loop, by statement id.
    counts: Vec<u32>,
    /// The non-empty channels, by `((from * n) + to) * lanes + lane`. Only
    /// those, so that a state is small to copy and to hash however many
    /// lanes the workflow has.
    chans: BTreeMap<usize, VecDeque<Msg>>,
    /// Per lifeline, its word so far, as a node of [`Words`].
    words: Vec<u32>,
}

/// Every word reached, as a trie: node 0 is the empty word, and node `i`
/// extends node `parent` by `event`. States hold node numbers, so that
/// copying and hashing a state does not cost the length of its history.
struct Words {
    nodes: Vec<(u32, Ev)>,
    index: HashMap<(u32, Ev), u32>,
}

impl Words {
    fn push(&mut self, word: u32, event: Ev) -> u32 {
        let next = self.nodes.len() as u32 + 1;
        *self.index.entry((word, event)).or_insert_with(|| {
            self.nodes.push((word, event));
            next
        })
    }

    fn word(&self, mut node: u32) -> Vec<Ev> {
        let mut out = Vec::new();
        while node != 0 {
            let (parent, e) = self.nodes[node as usize - 1];
            out.push(e);
            node = parent;
        }
        out.reverse();
        out
    }

    fn execution(&self, words: &[u32]) -> Execution {
        let words: Vec<Vec<Ev>> = words.iter().map(|&w| self.word(w)).collect();
        to_execution(&words)
    }
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
                StmtKind::Par { branches } => branches.iter().for_each(|b| walk(b, out)),
                StmtKind::Msg { .. } | StmtKind::Act { .. } => {}
            }
        }
    }
    let mut out = vec![false; workflow.stmt_count as usize];
    walk(&workflow.body, &mut out);
    out
}

/// Per statement, its lane: a dense number of the innermost `par` branch
/// around it (0 for none), from [`crate::global::branches_of`] — not from
/// `troupe_project::Lanes`, which the projection under test uses — and
/// the number of lanes.
fn lanes_of(workflow: &Workflow) -> (Vec<usize>, usize) {
    let mut numbers: HashMap<(StmtId, usize), usize> = HashMap::new();
    let of = crate::global::branches_of(workflow)
        .iter()
        .map(|path| {
            path.last().map_or(0, |b| {
                let next = numbers.len() + 1;
                *numbers.entry(*b).or_insert(next)
            })
        })
        .collect();
    (of, numbers.len() + 1)
}

/// Whether thread `t` has nothing left to do: a part at its `EndPart`, a
/// lifeline's main counter past its program.
fn done(ops: &[Op], t: &Thread, part: bool) -> bool {
    t.parts.is_empty()
        && if part {
            matches!(ops.get(t.pc), Some(Op::EndPart { .. }))
        } else {
            t.pc >= ops.len()
        }
}

/// Moves `t` over what is no event: jumps, the start of a `par` (its parts
/// spawn, each settled) and its end (once every part has ended, the
/// counter goes on at the join). Idempotent.
fn settle(ops: &[Op], t: &mut Thread) {
    // A jump cycle without an event would be a projection bug; the hop
    // limit keeps it from hanging the explorer (the state is then stuck).
    let mut hops = 0;
    while hops <= ops.len() {
        hops += 1;
        match ops.get(t.pc) {
            Some(Op::Jump { target }) => t.pc = *target as usize,
            Some(Op::Fork { parts, join, .. }) => {
                if t.parts.is_empty() {
                    t.parts = std::iter::once(t.pc + 1)
                        .chain(parts.iter().map(|&p| p as usize))
                        .map(|pc| Thread {
                            pc,
                            parts: Vec::new(),
                        })
                        .collect();
                }
                for p in &mut t.parts {
                    settle(ops, p);
                }
                if !t.parts.iter().all(|p| done(ops, p, true)) {
                    return;
                }
                t.parts.clear();
                t.pc = *join as usize;
            }
            _ => return,
        }
    }
}

/// The paths (part indices from the lifeline's main counter down) of the
/// threads that may take a step: those not waiting for parts.
fn leaves(t: &Thread, path: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
    if t.parts.is_empty() {
        out.push(path.clone());
        return;
    }
    for (i, p) in t.parts.iter().enumerate() {
        path.push(i);
        leaves(p, path, out);
        path.pop();
    }
}

/// Takes the front of channel `c`, dropping the channel once empty.
fn pop(chans: &mut BTreeMap<usize, VecDeque<Msg>>, c: usize) {
    if let Some(q) = chans.get_mut(&c) {
        q.pop_front();
        if q.is_empty() {
            chans.remove(&c);
        }
    }
}

fn at_path<'t>(mut t: &'t mut Thread, path: &[usize]) -> &'t mut Thread {
    for &i in path {
        t = &mut t.parts[i];
    }
    t
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
    let (lane_of, lanes) = lanes_of(workflow);
    let lane = |s: StmtId| lane_of.get(s.0 as usize).copied().unwrap_or(0);
    let chan = |from: usize, to: usize, s: StmtId| (from * n + to) * lanes + lane(s);
    let mut start = State {
        threads: vec![
            Thread {
                pc: 0,
                parts: Vec::new(),
            };
            n
        ],
        counts: vec![0; workflow.stmt_count as usize],
        chans: BTreeMap::new(),
        words: vec![0; n],
    };
    for (l, prog) in flat.iter().enumerate() {
        settle(&prog.ops, &mut start.threads[l]);
    }
    let mut trie = Words {
        nodes: Vec::new(),
        index: HashMap::new(),
    };
    let mut visited: HashSet<State> = HashSet::new();
    let mut found: HashSet<Vec<u32>> = HashSet::new();
    let mut order: Vec<Vec<u32>> = Vec::new();
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
            let ops = &prog.ops;
            let mut paths = Vec::new();
            leaves(&st.threads[l], &mut Vec::new(), &mut paths);
            for path in paths {
                let pc = path.iter().fold(&st.threads[l], |t, &i| &t.parts[i]).pc;
                let Some(op) = ops.get(pc) else {
                    continue;
                };
                // The state after this thread's step: its counter at `to`,
                // the lifeline settled again (a part may have ended).
                let step = |st: &State, to: usize| {
                    let mut next = st.clone();
                    at_path(&mut next.threads[l], &path).pc = to;
                    settle(ops, &mut next.threads[l]);
                    next
                };
                let lu = l as u32;
                match op {
                    Op::Send { stmt, to, .. } => {
                        let mut next = step(&st, pc + 1);
                        let m = Msg::Data(*stmt);
                        next.chans
                            .entry(chan(l, to.0 as usize, *stmt))
                            .or_default()
                            .push_back(m);
                        next.words[l] = trie.push(next.words[l], Ev::Send(to.0, m));
                        stack.push(next);
                        moved = true;
                    }
                    Op::Act { stmt, .. } => {
                        let mut next = step(&st, pc + 1);
                        next.words[l] = trie.push(next.words[l], Ev::Act(*stmt));
                        stack.push(next);
                        moved = true;
                    }
                    Op::Recv { stmt, from, .. } => {
                        let c = chan(from.0 as usize, l, *stmt);
                        match st.chans.get(&c).and_then(VecDeque::front) {
                            None => {}
                            Some(&m @ Msg::Data(s)) if s == *stmt => {
                                let mut next = step(&st, pc + 1);
                                pop(&mut next.chans, c);
                                next.words[l] = trie.push(next.words[l], Ev::Recv(from.0, m));
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
                                    execution: trie.execution(&st.words),
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
                            let mut next = step(&st, if d { pc + 1 } else { *on_false as usize });
                            next.words[l] = trie.push(next.words[l], Ev::Decide(*stmt, tag.0, d));
                            let m = Msg::Control(*stmt, tag.0, d);
                            for r in notify {
                                next.chans
                                    .entry(chan(l, r.0 as usize, *stmt))
                                    .or_default()
                                    .push_back(m);
                                next.words[l] = trie.push(next.words[l], Ev::Send(r.0, m));
                            }
                            if lp {
                                next.counts[s] = if d { next.counts[s] + 1 } else { 0 };
                            }
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
                        let c = chan(from.0 as usize, l, *stmt);
                        match st.chans.get(&c).and_then(VecDeque::front) {
                            None => {}
                            Some(&m @ Msg::Control(s, t, d)) if s == *stmt && t == tag.0 => {
                                let mut next =
                                    step(&st, if d { pc + 1 } else { *on_false as usize });
                                pop(&mut next.chans, c);
                                next.words[l] = trie.push(next.words[l], Ev::Recv(from.0, m));
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
                                    execution: trie.execution(&st.words),
                                });
                            }
                        }
                    }
                    // An ended part waits for its siblings; settling moved
                    // every other counter onto an event.
                    Op::EndPart { .. } | Op::Fork { .. } | Op::Jump { .. } => {}
                }
            }
        }
        if !moved {
            let waiting: Vec<LifelineId> = (0..n)
                .filter(|&l| !done(&flat[l].ops, &st.threads[l], false))
                .map(|l| LifelineId(l as u32))
                .collect();
            let undelivered = st.chans.values().map(VecDeque::len).sum();
            if !waiting.is_empty() || undelivered > 0 {
                return Err(ExploreError::Stuck {
                    waiting,
                    undelivered,
                    execution: trie.execution(&st.words),
                });
            }
            if found.insert(st.words.clone()) {
                order.push(st.words.clone());
            }
        }
    }
    Ok(Exploration {
        executions: order.iter().map(|w| trie.execution(w)).collect(),
        states: visited.len(),
    })
}

#[cfg(test)]
mod tests {
    //! The explorer on hand-written workflows whose schedules can be
    //! counted by hand, and on a projection broken by hand: the explorer
    //! must see every interleaving of a lifeline's parts, keep the
    //! branches' channels apart, and report a run that cannot end.

    use super::*;

    fn flat(src: &str) -> (Workflow, Vec<FlatProgram>) {
        let (program, diags) = troupe_check::check_text(src);
        let program = program.unwrap_or_else(|| panic!("{diags:?}"));
        let w = program.workflows[0].clone();
        let p = troupe_project::project(&program, &w).unwrap();
        (w, p.flatten())
    }

    /// Two branches between the same two lifelines: A's two sends and B's
    /// two receives each happen in either order, independently, because
    /// each branch has its own channel. One channel per pair would tie
    /// B's order to A's (2 executions, or a receive finding the other
    /// branch's message).
    #[test]
    fn parts_interleave_and_each_branch_has_its_own_channel() {
        let (w, flat) = flat(
            "workflow two(x: Int @ A) {\n\
               par { msg A(x) -> B(y) } and { msg A(x) -> B(z) }\n\
               act B: s = y + z\n\
             }",
        );
        let x = explore(&w, &flat, 1, 1000).unwrap();
        assert_eq!(x.executions.len(), 4, "{:#?}", x.executions);
        let words: HashSet<_> = x.executions.iter().map(|e| e.key()).collect();
        assert_eq!(words.len(), 4);
        // All four are the one run of the chart, up to the interleaving
        // of parts.
        let ordered: HashSet<_> = x
            .executions
            .iter()
            .map(|e| crate::global::branch_order(&w, e).key())
            .collect();
        assert_eq!(ordered.len(), 1);
    }

    /// A `par` in a loop: the parts are spawned again at every round, and
    /// the loop's bound holds (one round: 1 + 2 × 2 executions for the
    /// owner's two orders of its sends and the receiver's two orders).
    #[test]
    fn parts_of_a_par_in_a_loop_spawn_at_every_round() {
        let (w, flat) = flat(
            "workflow round(x: Int @ A) {\n\
               act A: k = 0\n\
               while k < x @ A {\n\
                 par { msg A(x) -> B(y) } and { msg A(x) -> B(z) }\n\
                 act A: k = k + 1\n\
               }\n\
             }",
        );
        let one = explore(&w, &flat, 1, 10_000).unwrap();
        assert_eq!(one.executions.len(), 1 + 4);
        let two = explore(&w, &flat, 2, 10_000).unwrap();
        assert_eq!(two.executions.len(), 1 + 4 + 16);
    }

    /// B's projection with its second part cut off: A's message of that
    /// branch is never received, and the explorer says so.
    #[test]
    fn a_part_left_out_leaves_its_message_behind() {
        let (w, mut flat) = flat(
            "workflow two(x: Int @ A) {\n\
               par { msg A(x) -> B(y) } and { msg A(x) -> B(z) }\n\
             }",
        );
        let b = &mut flat[1].ops;
        // Fork, Recv (part 0), EndPart, Recv (part 1), EndPart.
        assert_eq!(b.len(), 5, "{b:?}");
        b.truncate(3);
        if let Op::Fork { parts, join, .. } = &mut b[0] {
            parts.clear();
            *join = 3;
        }
        if let Op::EndPart { next, .. } = &mut b[2] {
            *next = 3;
        }
        match explore(&w, &flat, 1, 1000) {
            Err(ExploreError::Stuck { undelivered, .. }) => assert_eq!(undelivered, 1),
            other => panic!("{other:?}"),
        }
    }

    /// A's parts run one after the other, receive first: then B waits for
    /// A's send in the first branch while A waits for B's in the second,
    /// and the explorer reports the deadlock it found.
    #[test]
    fn parts_run_in_sequence_can_deadlock_and_it_is_reported() {
        let (w, mut flat) = flat(
            "workflow cross(x: Int @ A, u: Int @ B) {\n\
               par { msg A(x) -> B(y) } and { msg B(u) -> A(z) }\n\
             }",
        );
        assert!(explore(&w, &flat, 1, 1000).is_ok());
        // A: Fork, Send, EndPart, Recv, EndPart; B: Fork, Recv, EndPart,
        // Send, EndPart. Each made sequential, receive first.
        for program in &mut flat {
            let ops = &program.ops;
            let (first, second) = (ops[1].clone(), ops[3].clone());
            let (recv, send) = if matches!(first, Op::Recv { .. }) {
                (first, second)
            } else {
                (second, first)
            };
            program.ops = vec![recv, send];
        }
        match explore(&w, &flat, 1, 1000) {
            Err(ExploreError::Stuck {
                waiting,
                undelivered,
                ..
            }) => {
                assert_eq!(waiting.len(), 2);
                assert_eq!(undelivered, 0);
            }
            other => panic!("{other:?}"),
        }
    }
}
