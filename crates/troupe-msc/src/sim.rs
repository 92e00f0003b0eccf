//! A reference interpreter of projected programs, over FIFO channels, under a
//! seeded random scheduler. It records the execution (with concrete values and
//! control events) so that it can be checked against ⟦P⟧ and drawn.
//!
//! This is the executable specification the real (tokio) runtime is tested
//! against; it favours simplicity over speed.

use crate::cpl::{Guards, Meta, View};
use crate::eval::{EvalError, eval_in, perform};
use crate::event::{Event, Execution, Message};
use std::collections::{HashMap, VecDeque};
use troupe_check::Value;
use troupe_check::ir::{ExprKind, LifelineId, Program, Recv, StmtId, VarId, Workflow};
use troupe_project::{ConstructKind, Op, Projection};

/// How owners decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decisions {
    /// Evaluate the guard on the owner's variables.
    Evaluate,
    /// Flip a coin seeded with `seed` (still at the owner, when it decides).
    Random { seed: u64 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimOptions {
    /// Seed of the scheduler.
    pub seed: u64,
    pub decisions: Decisions,
    /// Force ⊥ after this many consecutive ⊤ decisions of one loop.
    pub loop_bound: Option<u32>,
    /// Give up after this many steps.
    pub max_steps: usize,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            seed: 0,
            decisions: Decisions::Evaluate,
            loop_bound: Some(1000),
            max_steps: 1_000_000,
        }
    }
}

/// A message on a channel, with the sender's causal view when the
/// workflow has causal guards.
type Carried = (Message, Option<Meta>);

/// A finished (or stuck) run.
#[derive(Debug, Clone, PartialEq)]
pub struct SimRun {
    pub execution: Execution,
    /// Per step, the lifeline that moved and how many events it recorded.
    pub schedule: Vec<(LifelineId, usize)>,
    /// Lifelines that had not finished when no lifeline could move (empty when
    /// the run completed).
    pub stuck: Vec<LifelineId>,
    /// Messages left in channels at the end.
    pub undelivered: usize,
}

impl SimRun {
    /// Whether every lifeline finished and every message was delivered.
    pub fn completed(&self) -> bool {
        self.stuck.is_empty() && self.undelivered == 0
    }

    /// The execution as it was after the first `steps` steps.
    pub fn prefix(&self, steps: usize) -> Execution {
        let mut lens = vec![0usize; self.execution.words.len()];
        for (l, k) in self.schedule.iter().take(steps) {
            if let Some(x) = lens.get_mut(l.0 as usize) {
                *x += k;
            }
        }
        Execution {
            words: self
                .execution
                .words
                .iter()
                .zip(lens)
                .map(|(w, n)| w[..n.min(w.len())].to_vec())
                .collect(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    #[error("lifeline #{} at s{}: {message}", lifeline.0, stmt.0)]
    Eval {
        lifeline: LifelineId,
        stmt: StmtId,
        message: String,
    },
    #[error("lifeline #{} at s{}: protocol violation: {message}", lifeline.0, stmt.0)]
    Protocol {
        lifeline: LifelineId,
        stmt: StmtId,
        message: String,
    },
    #[error("the run did not end within {0} steps")]
    StepLimit(usize),
    #[error("{0} inputs given, the workflow has {1}")]
    Inputs(usize, usize),
}

/// A task of the simulator: one lifeline running one part of its program.
struct SimTask {
    lane: usize,
    pc: usize,
    parent: Option<usize>,
    children: usize,
    alive: bool,
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// Runs the projection of `workflow` with `inputs` (in `workflow.inputs` order).
pub fn simulate(
    program: &Program,
    workflow: &Workflow,
    projection: &Projection,
    inputs: &[Value],
    opts: &SimOptions,
) -> Result<SimRun, SimError> {
    if inputs.len() != workflow.inputs.len() {
        return Err(SimError::Inputs(inputs.len(), workflow.inputs.len()));
    }
    let flat = projection.flatten();
    let n = flat.len();
    let mut env: Vec<Option<Value>> = vec![None; workflow.vars.len()];
    for (v, x) in workflow.inputs.iter().zip(inputs) {
        if let Some(slot) = env.get_mut(v.0 as usize) {
            *slot = Some(x.clone());
        }
    }
    // One task per lifeline, and one more per further part of a `par` it
    // runs: (lifeline, pc, parent task, parts still running, alive).
    let mut tasks: Vec<SimTask> = (0..n)
        .map(|l| SimTask {
            lane: l,
            pc: 0,
            parent: None,
            children: 0,
            alive: true,
        })
        .collect();
    let lanes = &projection.lanes;
    // Each message travels with the sender's causal view when the workflow
    // has causal guards (`crate::cpl`).
    let mut channels: HashMap<(usize, usize, u32), VecDeque<Carried>> = HashMap::new();
    let guards = Guards::new(workflow);
    let mut views: Vec<View> = guards
        .as_ref()
        .map(|g| (0..n).map(|l| g.start(LifelineId(l as u32))).collect())
        .unwrap_or_default();
    // One event of lifeline `l` (after its effect on `env`, binding the
    // variables `bound` says); the metadata a message sent at it carries.
    let step = |views: &mut Vec<View>,
                l: usize,
                env: &Vec<Option<Value>>,
                bound: &dyn Fn(VarId) -> bool|
     -> Option<Meta> {
        let g = guards.as_ref()?;
        let v = views.get_mut(l)?;
        v.step(g, env, &program.types, bound);
        Some(v.meta())
    };
    let nothing = |_: VarId| false;
    let mut exec = Execution::new(n);
    let mut schedule = Vec::new();
    let mut sched = Rng(opts.seed);
    let mut coin = Rng(match opts.decisions {
        Decisions::Random { seed } => seed,
        Decisions::Evaluate => 0,
    });
    let mut streak: HashMap<StmtId, u32> = HashMap::new();
    let err_eval = |l: usize, stmt: StmtId, e: EvalError| SimError::Eval {
        lifeline: LifelineId(l as u32),
        stmt,
        message: e.0,
    };
    let protocol = |l: usize, stmt: StmtId, m: &str| SimError::Protocol {
        lifeline: LifelineId(l as u32),
        stmt,
        message: m.to_owned(),
    };

    for _ in 0..opts.max_steps {
        // Jumps are not steps: settle every program counter on a real op.
        for task in tasks.iter_mut().filter(|t| t.alive) {
            let prog = &flat[task.lane];
            let mut guard = 0;
            while let Some(Op::Jump { target }) = prog.ops.get(task.pc) {
                task.pc = *target as usize;
                guard += 1;
                if guard > prog.ops.len() {
                    return Err(protocol(task.lane, StmtId(0), "jump cycle"));
                }
            }
        }
        let enabled: Vec<usize> = (0..tasks.len())
            .filter(|&t| {
                let task = &tasks[t];
                let l = task.lane;
                task.alive
                    && match flat[l].ops.get(task.pc) {
                        None => false,
                        Some(Op::Recv { from, stmt, .. } | Op::Await { from, stmt, .. }) => {
                            channels
                                .get(&(from.0 as usize, l, lanes.of(*stmt)))
                                .is_some_and(|q| !q.is_empty())
                        }
                        Some(Op::EndPart { part: 0, .. }) => task.children == 0,
                        Some(_) => true,
                    }
            })
            .collect();
        if enabled.is_empty() {
            let stuck = (0..n)
                .filter(|&l| tasks[l].pc < flat[l].ops.len())
                .map(|l| LifelineId(l as u32))
                .collect();
            #[allow(clippy::disallowed_methods)] // a sum: the order does not matter
            let undelivered = channels.values().map(VecDeque::len).sum();
            return Ok(SimRun {
                execution: exec,
                schedule,
                stuck,
                undelivered,
            });
        }
        let t = enabled[sched.below(enabled.len())];
        let l = tasks[t].lane;
        let me = LifelineId(l as u32);
        let before = exec.words[l].len();
        let Some(op) = flat[l].ops.get(tasks[t].pc) else {
            continue;
        };
        let read = |v: VarId| env.get(v.0 as usize).cloned().flatten();
        match op {
            Op::Fork { parts, .. } => {
                for &start in parts {
                    tasks.push(SimTask {
                        lane: l,
                        pc: start as usize,
                        parent: Some(t),
                        children: 0,
                        alive: true,
                    });
                }
                tasks[t].children += parts.len();
                tasks[t].pc += 1;
            }
            Op::EndPart { fork, part, .. } => {
                if *part == 0 {
                    let Some(Op::Fork { join, .. }) = flat[l].ops.get(*fork as usize) else {
                        return Err(protocol(l, StmtId(0), "a part ends outside a `par`"));
                    };
                    tasks[t].pc = *join as usize;
                } else {
                    tasks[t].alive = false;
                    if let Some(p) = tasks[t].parent {
                        tasks[p].children -= 1;
                    }
                }
            }
            Op::Send { stmt, to, items } => {
                let values = items
                    .iter()
                    .map(|e| eval_in(e, &read, &program.types))
                    .collect::<Result<Vec<_>, _>>();
                let values = values.map_err(|e| err_eval(l, *stmt, e))?;
                let msg = Message::Data {
                    stmt: *stmt,
                    values: Some(values),
                };
                let meta = step(&mut views, l, &env, &nothing);
                channels
                    .entry((l, to.0 as usize, lanes.of(*stmt)))
                    .or_default()
                    .push_back((msg.clone(), meta));
                exec.words[l].push(Event::Send { to: *to, msg });
                tasks[t].pc += 1;
            }
            Op::Recv { stmt, from, binds } => {
                let (msg, meta) = channels
                    .get_mut(&(from.0 as usize, l, lanes.of(*stmt)))
                    .and_then(VecDeque::pop_front)
                    .unzip();
                let Some(Message::Data {
                    stmt: s,
                    values: Some(values),
                }) = &msg
                else {
                    return Err(protocol(l, *stmt, "expected a data message"));
                };
                if s != stmt || values.len() != binds.len() {
                    return Err(protocol(
                        l,
                        *stmt,
                        "received the message of another statement",
                    ));
                }
                for (b, v) in binds.iter().zip(values) {
                    match b {
                        Recv::Bind(x) => {
                            if let Some(slot) = env.get_mut(x.0 as usize) {
                                *slot = Some(v.clone());
                            }
                        }
                        Recv::Discard => {}
                        Recv::Literal(lit) if lit == v => {}
                        Recv::Literal(_) => {
                            return Err(protocol(l, *stmt, "a literal item differs"));
                        }
                    }
                }
                if let (Some(g), Some(Some(meta))) = (&guards, &meta) {
                    views[l].receive(g, meta);
                }
                let bound = |v: VarId| binds.contains(&Recv::Bind(v));
                step(&mut views, l, &env, &bound);
                if let Some(msg) = msg {
                    exec.words[l].push(Event::Recv { from: *from, msg });
                }
                tasks[t].pc += 1;
            }
            Op::Act {
                stmt,
                outputs,
                call,
            } => {
                let values = perform(call, outputs.len(), program, &read)
                    .map_err(|e| err_eval(l, *stmt, e))?;
                for (o, v) in outputs.iter().zip(&values) {
                    if let Some(x) = o
                        && let Some(slot) = env.get_mut(x.0 as usize)
                    {
                        *slot = Some(v.clone());
                    }
                }
                let bound = |v: VarId| outputs.contains(&Some(v));
                step(&mut views, l, &env, &bound);
                exec.words[l].push(Event::Act {
                    stmt: *stmt,
                    outputs: Some(values),
                });
                tasks[t].pc += 1;
            }
            Op::Decide {
                stmt,
                guard,
                tag,
                notify,
                on_false,
            } => {
                // The decision is an event of the owner; a causal guard is
                // its monitor's value there.
                let causal = match (&guards, &guard.kind) {
                    (Some(g), ExprKind::Cpl(_)) => {
                        Some(views[l].decide(g, *stmt, &env, &program.types))
                    }
                    _ => {
                        step(&mut views, l, &env, &nothing);
                        None
                    }
                };
                let mut d = match opts.decisions {
                    Decisions::Evaluate if causal.is_some() => causal.unwrap_or(false),
                    Decisions::Evaluate => {
                        match eval_in(guard, &read, &program.types)
                            .map_err(|e| err_eval(l, *stmt, e))?
                        {
                            Value::Bool(b) => b,
                            _ => return Err(protocol(l, *stmt, "the guard is not a Bool")),
                        }
                    }
                    Decisions::Random { .. } => coin.below(2) == 0,
                };
                let is_loop = projection
                    .construct(*stmt)
                    .is_some_and(|c| c.kind == ConstructKind::While);
                if is_loop {
                    let s = streak.entry(*stmt).or_insert(0);
                    if d && opts.loop_bound.is_some_and(|b| *s >= b) {
                        d = false;
                    }
                    *s = if d { *s + 1 } else { 0 };
                }
                exec.words[l].push(Event::Decide {
                    stmt: *stmt,
                    tag: *tag,
                    decision: d,
                });
                let msg = Message::Control {
                    stmt: *stmt,
                    tag: *tag,
                    decision: d,
                };
                for r in notify {
                    let meta = step(&mut views, l, &env, &nothing);
                    channels
                        .entry((l, r.0 as usize, lanes.of(*stmt)))
                        .or_default()
                        .push_back((msg.clone(), meta));
                    exec.words[l].push(Event::Send {
                        to: *r,
                        msg: msg.clone(),
                    });
                }
                tasks[t].pc = if d {
                    tasks[t].pc + 1
                } else {
                    *on_false as usize
                };
            }
            Op::Await {
                stmt,
                from,
                tag,
                on_false,
            } => {
                let (msg, meta) = channels
                    .get_mut(&(from.0 as usize, l, lanes.of(*stmt)))
                    .and_then(VecDeque::pop_front)
                    .unzip();
                let Some(Message::Control {
                    tag: got, decision, ..
                }) = &msg
                else {
                    return Err(protocol(l, *stmt, "expected a control message"));
                };
                if got != tag {
                    return Err(protocol(l, *stmt, "control message of another construct"));
                }
                let d = *decision;
                if let (Some(g), Some(Some(meta))) = (&guards, &meta) {
                    views[l].receive(g, meta);
                }
                step(&mut views, l, &env, &nothing);
                if let Some(msg) = msg {
                    exec.words[l].push(Event::Recv { from: *from, msg });
                }
                tasks[t].pc = if d {
                    tasks[t].pc + 1
                } else {
                    *on_false as usize
                };
            }
            Op::Jump { target } => tasks[t].pc = *target as usize,
        }
        schedule.push((me, exec.words[l].len() - before));
    }
    Err(SimError::StepLimit(opts.max_steps))
}
