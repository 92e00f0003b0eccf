//! The causal past logic's semantics on a recorded execution: each causal
//! guard's value at each decision, computed from the causal order of the
//! MSC (each lifeline's order, and every receive after its send), not from
//! the monitor's metadata. `troupe verify` compares it with the recorded
//! decisions.
//!
//! Each event gets its vector clock from the execution itself — a receive
//! takes the clock of the send it matches, FIFO per channel and lane — so
//! "the latest event of B causally visible to e" is B's event number
//! `clock(e)[B]`, and "some event in the strict past of e satisfied φ" is
//! "on some lifeline B, the first event satisfying φ comes before the
//! `clock(e)[B]`-th". The values a lifeline's variables have after each
//! event are replayed from the recorded inputs, receives and actions.

use super::{Guards, Node, NodeId};
use crate::event::{Event, Execution, Message};
use std::collections::{HashMap, VecDeque};
use troupe_check::Value;
use troupe_check::eval::{Env, eval};
use troupe_check::ir::{LifelineId, Recv, StmtId, StmtKind, VarId, Workflow};
use troupe_check::types::TypeTable;

/// One decision of a causal guard in a recorded execution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub lifeline: LifelineId,
    /// The decision's index in its lifeline's word.
    pub event: usize,
    pub stmt: StmtId,
    pub recorded: bool,
    /// The guard's value by the logic's semantics.
    pub value: bool,
}

/// Why the semantics could not be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DenoteError {
    #[error("the execution has no causal order: a receive without its send")]
    NoOrder,
    #[error("the run has {0} input(s), the workflow {1}")]
    Inputs(usize, usize),
}

/// Every decision of a causal guard in `execution`, with the guard's value
/// there. Empty when the workflow has no causal guard.
pub fn decisions(
    workflow: &Workflow,
    types: &TypeTable,
    execution: &Execution,
    inputs: &[Value],
    lane: &dyn Fn(StmtId) -> u32,
) -> Result<Vec<Decision>, DenoteError> {
    let Some(guards) = Guards::new(workflow) else {
        return Ok(Vec::new());
    };
    if inputs.len() != workflow.inputs.len() {
        return Err(DenoteError::Inputs(inputs.len(), workflow.inputs.len()));
    }
    let order = execution
        .linearize_lanes(lane)
        .ok_or(DenoteError::NoOrder)?;
    let stmts = workflow.stmts_by_id();
    let n = execution.words.len();
    let nodes = guards.nodes();
    let mut env: Vec<Option<Value>> = vec![None; workflow.vars.len()];
    for (v, x) in workflow.inputs.iter().zip(inputs) {
        env[v.0 as usize] = Some(x.clone());
    }
    // Per lifeline, per event: its clock and its located nodes' values.
    let mut clocks: Vec<Vec<Vec<u32>>> = vec![Vec::new(); n];
    let mut values: Vec<Vec<Vec<bool>>> = vec![Vec::new(); n];
    // Per `seen` slot, the variable's values by event of its lifeline (an
    // entry where it changed).
    let seen_slots = guards.seen_slots();
    let mut history: Vec<Vec<(u32, Option<Value>)>> = vec![Vec::new(); seen_slots.len()];
    // Per node, per lifeline: the first of its events satisfying the node.
    let mut first: Vec<Vec<Option<u32>>> = vec![vec![None; n]; nodes.len()];
    let mut in_flight: HashMap<(usize, usize, u32), VecDeque<Vec<u32>>> = HashMap::new();
    let mut out = Vec::new();

    for (l, event) in order {
        let li = l.0 as usize;
        let index = clocks[li].len();
        let mut clock = clocks[li].last().cloned().unwrap_or_else(|| vec![0; n]);
        match &event {
            Event::Recv { from, msg } => {
                let key = (from.0 as usize, li, lane(msg.stmt()));
                let sent = in_flight
                    .get_mut(&key)
                    .and_then(VecDeque::pop_front)
                    .ok_or(DenoteError::NoOrder)?;
                for (c, s) in clock.iter_mut().zip(&sent) {
                    *c = (*c).max(*s);
                }
                if let Message::Data {
                    stmt,
                    values: Some(got),
                } = msg
                    && let Some(Some(s)) = stmts.get(stmt.0 as usize)
                    && let StmtKind::Msg { items, .. } = &s.kind
                {
                    for (item, v) in items.iter().zip(got) {
                        if let Recv::Bind(x) = item.recv {
                            env[x.0 as usize] = Some(v.clone());
                        }
                    }
                }
            }
            Event::Act {
                stmt,
                outputs: Some(got),
            } => {
                if let Some(Some(s)) = stmts.get(stmt.0 as usize)
                    && let StmtKind::Act { outputs, .. } = &s.kind
                {
                    for (o, v) in outputs.iter().zip(got) {
                        if let Some(x) = o {
                            env[x.0 as usize] = Some(v.clone());
                        }
                    }
                }
            }
            _ => {}
        }
        clock[li] += 1;
        if let Event::Send { to, msg } = &event {
            in_flight
                .entry((li, to.0 as usize, lane(msg.stmt())))
                .or_default()
                .push_back(clock.clone());
        }
        // The latest visible event of `b`, by number (None: none).
        let latest = |b: usize| clock[b].checked_sub(1);
        let mut now = vec![false; nodes.len()];
        for (id, node) in nodes.iter().enumerate() {
            if !guards.located(id as NodeId, l) {
                continue;
            }
            let prev = |m: NodeId| index > 0 && values[li][index - 1][m as usize];
            now[id] = match node {
                Node::Atom(e) => {
                    let atom_env = Recorded {
                        env: &env,
                        me: l,
                        latest: &latest,
                        slots: seen_slots,
                        history: &history,
                    };
                    matches!(eval(e, &atom_env, types), Ok(Value::Bool(true)))
                }
                Node::On(b) => *b == l,
                Node::Not(a) => !now[*a as usize],
                Node::And(a, b) => now[*a as usize] && now[*b as usize],
                Node::Or(a, b) => now[*a as usize] || now[*b as usize],
                Node::Prev(a) => prev(*a),
                Node::Since(a, b) => now[*b as usize] || (now[*a as usize] && prev(id as NodeId)),
                Node::Once(a, _) => (0..n).any(|b| {
                    let before = if b == li { clock[b] - 1 } else { clock[b] };
                    first[*a as usize][b].is_some_and(|i| i < before)
                }),
                Node::At(b, a, _) if *b == l => now[*a as usize],
                Node::At(b, a, _) => latest(b.0 as usize)
                    .is_some_and(|k| values[b.0 as usize][k as usize][*a as usize]),
            };
        }
        for (id, v) in now.iter().enumerate() {
            if *v && first[id][li].is_none() && guards.located(id as NodeId, l) {
                first[id][li] = Some(index as u32);
            }
        }
        for (slot, &(b, var)) in seen_slots.iter().enumerate() {
            if b == l {
                let v = env.value(var);
                if history[slot].last().is_none_or(|(_, last)| *last != v) {
                    history[slot].push((index as u32, v));
                }
            }
        }
        if let Event::Decide { stmt, decision, .. } = &event
            && let Some(top) = guards.top(*stmt)
        {
            out.push(Decision {
                lifeline: l,
                event: index,
                stmt: *stmt,
                recorded: *decision,
                value: now[top as usize],
            });
        }
        clocks[li].push(clock);
        values[li].push(now);
    }
    Ok(out)
}

/// An atom's variables at one recorded event: the lifeline's own, and the
/// `seen` values at the latest visible events of the others.
struct Recorded<'a, F> {
    env: &'a [Option<Value>],
    me: LifelineId,
    latest: &'a F,
    slots: &'a [(LifelineId, VarId)],
    history: &'a [Vec<(u32, Option<Value>)>],
}

impl<F: Fn(usize) -> Option<u32>> Env for Recorded<'_, F> {
    fn get(&self, var: VarId) -> Option<&Value> {
        self.env.get(var.0 as usize)?.as_ref()
    }

    fn seen(&self, lifeline: LifelineId, var: VarId) -> Option<Value> {
        if lifeline == self.me {
            return self.get(var).cloned();
        }
        let k = (self.latest)(lifeline.0 as usize)?;
        let slot = self.slots.iter().position(|s| *s == (lifeline, var))?;
        let h = &self.history[slot];
        let at = h.partition_point(|(i, _)| *i <= k);
        h.get(at.checked_sub(1)?)?.1.clone()
    }
}
