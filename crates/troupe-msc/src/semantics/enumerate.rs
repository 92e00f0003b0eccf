//! Bounded enumeration of ⟦P⟧: every path through the graph up to the
//! bounds, each projected to one tuple of local words (with the control
//! broadcast of every choice when asked), deduplicated. The reference the
//! projection's soundness and completeness are tested against.

use super::{Choice, EnumOptions, Enumeration, Node, Semantics};
use crate::event::{Event, Execution, Message};
use std::collections::HashSet;
use troupe_check::ir::LifelineId;
use troupe_project::ConstructKind;

impl Semantics {
    /// Bounded enumeration of ⟦P⟧, up to equivalence (distinct tuples of words).
    /// A lifeline's events in different branches of a `par` may happen in
    /// any order; each enumerated execution stands for all of those
    /// orders and lists them branch after branch (membership accepts every
    /// order).
    pub fn enumerate(&self, opts: &EnumOptions) -> Enumeration {
        struct St {
            pc: usize,
            exec: Execution,
            counts: Vec<u32>,
        }
        let n = self.lifelines.len();
        let mut out = Enumeration::default();
        let mut seen = HashSet::new();
        let mut paths = 0usize;
        let path_budget = opts.limit.saturating_mul(64).max(1024);
        let mut stack = vec![St {
            pc: 0,
            exec: Execution::new(n),
            counts: vec![0; self.loops],
        }];
        'paths: while let Some(mut st) = stack.pop() {
            loop {
                let Some(node) = self.nodes.get(st.pc) else {
                    paths += 1;
                    if seen.insert(st.exec.key()) {
                        out.executions.push(st.exec);
                        if out.executions.len() >= opts.limit {
                            out.truncated = !stack.is_empty();
                            break 'paths;
                        }
                    }
                    if paths >= path_budget {
                        out.truncated = !stack.is_empty();
                        break 'paths;
                    }
                    continue 'paths;
                };
                match node {
                    Node::Msg { stmt, from, to, .. } => {
                        let data = Message::Data {
                            stmt: *stmt,
                            values: None,
                        };
                        push(
                            &mut st.exec,
                            *from,
                            Event::Send {
                                to: *to,
                                msg: data.clone(),
                            },
                        );
                        push(
                            &mut st.exec,
                            *to,
                            Event::Recv {
                                from: *from,
                                msg: data,
                            },
                        );
                        st.pc += 1;
                    }
                    Node::Act { stmt, at, .. } => {
                        push(
                            &mut st.exec,
                            *at,
                            Event::Act {
                                stmt: *stmt,
                                outputs: None,
                            },
                        );
                        st.pc += 1;
                    }
                    Node::LoopEnter { slot } => {
                        if let Some(c) = st.counts.get_mut(*slot) {
                            *c = 0;
                        }
                        st.pc += 1;
                    }
                    Node::Jump(t) => st.pc = *t,
                    // One interleaving stands for all: the branches one
                    // after another (see `enumerate`).
                    Node::ParFork(p) => {
                        st.pc = self
                            .pars
                            .get(*p)
                            .map_or(st.pc + 1, |p| p.branches.first().map_or(p.end, |b| b.start));
                    }
                    Node::ParEnd(p, b) => {
                        st.pc = self.pars.get(*p).map_or(st.pc + 1, |p| {
                            p.branches.get(b + 1).map_or(p.end, |b| b.start)
                        });
                    }
                    Node::Choice(c) => {
                        let Some(ch) = self.choices.get(*c) else {
                            continue 'paths;
                        };
                        let is_loop = ch.kind == ConstructKind::While;
                        let count = st.counts.get(ch.slot).copied().unwrap_or(0);
                        let may_yes = !is_loop || count < opts.unroll;
                        if may_yes {
                            // ⊥ is explored later from a copy; ⊤ continues here.
                            let mut other = St {
                                pc: ch.target[1],
                                exec: st.exec.clone(),
                                counts: st.counts.clone(),
                            };
                            if opts.control {
                                self.emit_control(&mut other.exec, ch, false);
                            }
                            stack.push(other);
                            if is_loop && let Some(c) = st.counts.get_mut(ch.slot) {
                                *c += 1;
                            }
                        }
                        let d = may_yes;
                        if opts.control {
                            self.emit_control(&mut st.exec, ch, d);
                        }
                        st.pc = ch.target[Choice::side(d)];
                    }
                }
            }
        }
        out
    }

    fn emit_control(&self, exec: &mut Execution, ch: &Choice, d: bool) {
        push(
            exec,
            ch.owner,
            Event::Decide {
                stmt: ch.stmt,
                tag: ch.tag,
                decision: d,
            },
        );
        let msg = Message::Control {
            stmt: ch.stmt,
            tag: ch.tag,
            decision: d,
        };
        for &r in &ch.notify {
            push(
                exec,
                ch.owner,
                Event::Send {
                    to: r,
                    msg: msg.clone(),
                },
            );
        }
        for &r in &ch.notify {
            push(
                exec,
                r,
                Event::Recv {
                    from: ch.owner,
                    msg: msg.clone(),
                },
            );
        }
    }
}

fn push(exec: &mut Execution, l: LifelineId, e: Event) {
    if let Some(w) = exec.words.get_mut(l.0 as usize) {
        w.push(e);
    }
}
