//! The global workflow run directly, without projecting it.
//!
//! [`run`] executes a workflow statement by statement on one shared store of
//! variables — a message is an assignment, an owner's guard is evaluated
//! where it stands — and records each lifeline's word as the projected
//! system must produce it: with values, and with the owner's decision and
//! the control messages to R (R from [`crate::reference::recipients`], not
//! from the projection). Because the generated workflows are deterministic
//! (every action is a known function), this is *the* execution of the
//! workflow on given inputs, whatever the schedule.
//!
//! [`enumerate`] is bounded ⟦P⟧ by brute force: every path of decisions
//! (each loop entered runs 0..=unroll iterations), the words of each, kept
//! distinct. Exponential, and meant for small workflows.
//!
//! Expressions are evaluated by a small evaluator of this module (integers
//! with checked arithmetic, Booleans), not by `troupe_check::eval`.
//!
//! A `par` runs its branches one after the other (they share no variable
//! one of them writes, so the values do not depend on the order), and
//! [`run`] notes where each lifeline's events of each region are. A real
//! run may interleave a lifeline's events of different branches in any
//! order; [`conforms`] accepts exactly those reorderings, with the branch
//! of each event taken from the workflow's syntax, and [`fifo`] checks a
//! run's events in the order they happened against channels that are
//! FIFO per sender, receiver and branch.

use crate::generate::action_result;
use crate::reference::recipients;
use std::collections::HashSet;
use troupe_check::Value;
use troupe_check::ir::{
    BinaryOp, Block, Call, Expr, ExprKind, LifelineId, Recv, StmtId, StmtKind, UnaryOp, Workflow,
};
use troupe_msc::{Event, Execution, Message};
use troupe_project::ControlTag;

/// The tag of each construct, as the projection chose it (`None` when the
/// projection has no such construct).
pub type Tags<'a> = &'a dyn Fn(StmtId) -> Option<ControlTag>;

/// What [`run`] produced.
#[derive(Debug, Clone, PartialEq)]
pub struct GlobalRun {
    pub execution: Execution,
    /// The values of `workflow.results`, in order.
    pub results: Vec<Value>,
    /// Where each lifeline's events of each `par` it took part in are.
    pub regions: Vec<Region>,
}

/// A lifeline's events of one run of a `par`: `start..end` of its word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    pub lifeline: LifelineId,
    pub par: StmtId,
    pub start: usize,
    pub end: usize,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum V {
    Int(i64),
    Bool(bool),
}

fn to_value(v: V) -> Value {
    match v {
        V::Int(n) => Value::Int(n),
        V::Bool(b) => Value::Bool(b),
    }
}

struct Interp<'a> {
    env: Vec<Option<V>>,
    exec: Execution,
    regions: Vec<Region>,
    control: bool,
    tags: Tags<'a>,
    steps: usize,
}

const STEP_LIMIT: usize = 10_000_000;

fn eval(e: &Expr, env: &[Option<V>]) -> Result<V, String> {
    Ok(match &e.kind {
        ExprKind::Lit(Value::Int(n)) => V::Int(*n),
        ExprKind::Lit(Value::Bool(b)) => V::Bool(*b),
        ExprKind::Var(v) => env
            .get(v.0 as usize)
            .copied()
            .flatten()
            .ok_or_else(|| format!("variable #{} read before it is bound", v.0))?,
        ExprKind::Unary(UnaryOp::Not, x) => match eval(x, env)? {
            V::Bool(b) => V::Bool(!b),
            V::Int(_) => return Err("`not` of an integer".into()),
        },
        ExprKind::Unary(UnaryOp::Neg, x) => match eval(x, env)? {
            V::Int(n) => V::Int(n.checked_neg().ok_or("overflow")?),
            V::Bool(_) => return Err("`-` of a Boolean".into()),
        },
        ExprKind::Binary(op, l, r) => {
            // `and`/`or` short-circuit, as the language says.
            if matches!(op, BinaryOp::And | BinaryOp::Or) {
                let V::Bool(a) = eval(l, env)? else {
                    return Err("`and`/`or` of an integer".into());
                };
                if a == (*op == BinaryOp::Or) {
                    return Ok(V::Bool(a));
                }
                return eval(r, env);
            }
            let (V::Int(a), V::Int(b)) = (eval(l, env)?, eval(r, env)?) else {
                let (a, b) = (eval(l, env)?, eval(r, env)?);
                return match op {
                    BinaryOp::Eq => Ok(V::Bool(a == b)),
                    BinaryOp::Ne => Ok(V::Bool(a != b)),
                    _ => Err(format!("{op:?} of Booleans")),
                };
            };
            let overflow = || format!("integer overflow in {op:?}");
            match op {
                BinaryOp::Add => V::Int(a.checked_add(b).ok_or_else(overflow)?),
                BinaryOp::Sub => V::Int(a.checked_sub(b).ok_or_else(overflow)?),
                BinaryOp::Mul => V::Int(a.checked_mul(b).ok_or_else(overflow)?),
                BinaryOp::Div => V::Int(a.checked_div(b).ok_or_else(overflow)?),
                BinaryOp::Rem => V::Int(a.checked_rem(b).ok_or_else(overflow)?),
                BinaryOp::Lt => V::Bool(a < b),
                BinaryOp::Le => V::Bool(a <= b),
                BinaryOp::Gt => V::Bool(a > b),
                BinaryOp::Ge => V::Bool(a >= b),
                BinaryOp::Eq => V::Bool(a == b),
                BinaryOp::Ne => V::Bool(a != b),
                other => return Err(format!("{other:?} is not generated")),
            }
        }
        other => return Err(format!("expression {other:?} is not generated")),
    })
}

fn push(exec: &mut Execution, l: LifelineId, e: Event) {
    exec.words[l.0 as usize].push(e);
}

/// The owner's decision and its broadcast to R, as the projected system
/// records them (owner: decide, then one send per recipient in ⊏ order;
/// each recipient: one receive).
fn control_events(
    exec: &mut Execution,
    stmt: StmtId,
    owner: LifelineId,
    r: &[LifelineId],
    tag: ControlTag,
    decision: bool,
) {
    push(
        exec,
        owner,
        Event::Decide {
            stmt,
            tag,
            decision,
        },
    );
    let msg = Message::Control {
        stmt,
        tag,
        decision,
    };
    for &x in r {
        push(
            exec,
            owner,
            Event::Send {
                to: x,
                msg: msg.clone(),
            },
        );
    }
    for &x in r {
        push(
            exec,
            x,
            Event::Recv {
                from: owner,
                msg: msg.clone(),
            },
        );
    }
}

impl Interp<'_> {
    fn tag(&self, stmt: StmtId) -> Result<ControlTag, String> {
        (self.tags)(stmt).ok_or_else(|| format!("the projection has no construct s{}", stmt.0))
    }

    fn block(&mut self, block: &Block) -> Result<(), String> {
        for s in &block.stmts {
            self.steps += 1;
            if self.steps > STEP_LIMIT {
                return Err("the workflow runs too long".into());
            }
            match &s.kind {
                StmtKind::Msg { from, to, items } => {
                    let mut values = Vec::with_capacity(items.len());
                    for item in items {
                        values.push(eval(&item.send, &self.env)?);
                    }
                    for (item, v) in items.iter().zip(&values) {
                        if let Recv::Bind(x) = item.recv {
                            self.env[x.0 as usize] = Some(*v);
                        }
                    }
                    let values: Vec<Value> = values.into_iter().map(to_value).collect();
                    let msg = Message::Data {
                        stmt: s.id,
                        values: Some(values),
                    };
                    push(
                        &mut self.exec,
                        *from,
                        Event::Send {
                            to: *to,
                            msg: msg.clone(),
                        },
                    );
                    push(&mut self.exec, *to, Event::Recv { from: *from, msg });
                }
                StmtKind::Act { at, outputs, call } => {
                    let v = match call {
                        Call::Expr(e) => eval(e, &self.env)?,
                        Call::Action { action, args } => {
                            let V::Int(x) = eval(&args[0], &self.env)? else {
                                return Err("a Boolean argument".into());
                            };
                            V::Int(action_result(*action, x))
                        }
                    };
                    if let Some(Some(o)) = outputs.first() {
                        self.env[o.0 as usize] = Some(v);
                    }
                    push(
                        &mut self.exec,
                        *at,
                        Event::Act {
                            stmt: s.id,
                            outputs: Some(vec![to_value(v)]),
                        },
                    );
                }
                StmtKind::If {
                    owner,
                    guard,
                    then,
                    otherwise,
                } => {
                    let d = self.decide(guard)?;
                    if self.control {
                        let tag = self.tag(s.id)?;
                        let r = recipients(*owner, then, otherwise);
                        control_events(&mut self.exec, s.id, *owner, &r, tag, d);
                    }
                    self.block(if d { then } else { otherwise })?;
                }
                StmtKind::Par { branches } => {
                    let before: Vec<usize> = self.exec.words.iter().map(Vec::len).collect();
                    for b in branches {
                        self.block(b)?;
                    }
                    for (l, start) in before.into_iter().enumerate() {
                        let end = self.exec.words[l].len();
                        if end > start {
                            self.regions.push(Region {
                                lifeline: LifelineId(l as u32),
                                par: s.id,
                                start,
                                end,
                            });
                        }
                    }
                }
                StmtKind::While {
                    owner,
                    guard,
                    body,
                    exit,
                } => {
                    let r = recipients(*owner, body, exit);
                    loop {
                        let d = self.decide(guard)?;
                        if self.control {
                            let tag = self.tag(s.id)?;
                            control_events(&mut self.exec, s.id, *owner, &r, tag, d);
                        }
                        if !d {
                            break;
                        }
                        self.block(body)?;
                        self.steps += 1;
                        if self.steps > STEP_LIMIT {
                            return Err("the workflow runs too long".into());
                        }
                    }
                    self.block(exit)?;
                }
            }
        }
        Ok(())
    }

    fn decide(&self, guard: &Expr) -> Result<bool, String> {
        match eval(guard, &self.env)? {
            V::Bool(b) => Ok(b),
            V::Int(_) => Err("an integer guard".into()),
        }
    }
}

/// The one execution of `workflow` on `inputs` (with control events when
/// `control`), and its results.
pub fn run(
    workflow: &Workflow,
    inputs: &[Value],
    control: bool,
    tags: Tags<'_>,
) -> Result<GlobalRun, String> {
    let mut env = vec![None; workflow.vars.len()];
    for (v, x) in workflow.inputs.iter().zip(inputs) {
        env[v.0 as usize] = Some(match x {
            Value::Int(n) => V::Int(*n),
            Value::Bool(b) => V::Bool(*b),
            other => return Err(format!("input {other:?} is not generated")),
        });
    }
    let mut it = Interp {
        env,
        exec: Execution::new(workflow.lifelines.len()),
        regions: Vec::new(),
        control,
        tags,
        steps: 0,
    };
    it.block(&workflow.body)?;
    let results = workflow
        .results
        .iter()
        .map(|v| {
            it.env[v.0 as usize]
                .map(to_value)
                .ok_or("an unbound result")
        })
        .collect::<Result<_, _>>()?;
    Ok(GlobalRun {
        execution: it.exec,
        results,
        regions: it.regions,
    })
}

/// Per statement, the `par` branches around it, outermost first: (the
/// `par`'s statement, the branch's index).
pub fn branches_of(workflow: &Workflow) -> Vec<Vec<(StmtId, usize)>> {
    fn walk(block: &Block, path: &mut Vec<(StmtId, usize)>, out: &mut Vec<Vec<(StmtId, usize)>>) {
        for s in &block.stmts {
            if let Some(slot) = out.get_mut(s.id.0 as usize) {
                slot.clone_from(path);
            }
            match &s.kind {
                StmtKind::Msg { .. } | StmtKind::Act { .. } => {}
                StmtKind::If {
                    then: a,
                    otherwise: b,
                    ..
                }
                | StmtKind::While {
                    body: a, exit: b, ..
                } => {
                    walk(a, path, out);
                    walk(b, path, out);
                }
                StmtKind::Par { branches } => {
                    for (i, b) in branches.iter().enumerate() {
                        path.push((s.id, i));
                        walk(b, path, out);
                        path.pop();
                    }
                }
            }
        }
    }
    let mut out = vec![Vec::new(); workflow.stmt_count as usize];
    walk(&workflow.body, &mut Vec::new(), &mut out);
    out
}

/// `exec` with each lifeline's events of each run of a `par` put in branch
/// order (each branch's events keeping their own order, nested regions
/// likewise): the form in which [`run`] and [`enumerate`] write a run, so
/// that two runs that differ only in how a lifeline's parts interleaved
/// come out equal.
///
/// A lifeline's events of one run of a region are contiguous in its word
/// (it leaves the region only when all its parts have ended), and two runs
/// of one region at a lifeline are apart: the region then lies in a loop
/// the lifeline takes part in, so a decision of the loop, told or taken,
/// stands between them. A maximal stretch of events inside one `par` at a
/// given depth is therefore one run of it.
pub fn branch_order(workflow: &Workflow, exec: &Execution) -> Execution {
    type Paths = [Vec<(StmtId, usize)>];
    fn path<'p>(branches: &'p Paths, e: &Event) -> &'p [(StmtId, usize)] {
        branches
            .get(e.stmt().0 as usize)
            .map_or(&[][..], Vec::as_slice)
    }
    // Depth is bounded by the nesting of `par`s, which the checker bounds.
    fn order(events: &[Event], depth: usize, branches: &Paths, out: &mut Vec<Event>) {
        let path = |e: &Event| path(branches, e);
        let mut i = 0;
        while i < events.len() {
            let Some(&(par, _)) = path(&events[i]).get(depth) else {
                out.push(events[i].clone());
                i += 1;
                continue;
            };
            let inside = |e: &Event| path(e).get(depth).is_some_and(|(p, _)| *p == par);
            let end = i + events[i..].iter().take_while(|e| inside(e)).count();
            let mut by_branch: Vec<(usize, Vec<Event>)> = Vec::new();
            for e in &events[i..end] {
                let b = path(e)[depth].1;
                match by_branch.iter_mut().find(|(x, _)| *x == b) {
                    Some((_, v)) => v.push(e.clone()),
                    None => by_branch.push((b, vec![e.clone()])),
                }
            }
            by_branch.sort_by_key(|(b, _)| *b);
            for (_, v) in &by_branch {
                order(v, depth + 1, branches, out);
            }
            i = end;
        }
    }
    let branches = branches_of(workflow);
    Execution {
        words: exec
            .words
            .iter()
            .map(|w| {
                let mut out = Vec::with_capacity(w.len());
                order(w, 0, &branches, &mut out);
                out
            })
            .collect(),
    }
}

/// Whether `got` is the run `expected` up to the order of each lifeline's
/// events of different branches of one run of a `par`: within each region
/// of `expected`, `got`'s events are put in branch order (keeping each
/// branch's own order), outer regions first, and must then be `expected`'s.
pub fn conforms(workflow: &Workflow, expected: &GlobalRun, got: &Execution) -> Result<(), String> {
    let branches = branches_of(workflow);
    let branch_in = |e: &Event, par: StmtId| {
        branches
            .get(e.stmt().0 as usize)
            .and_then(|p| p.iter().find(|(s, _)| *s == par))
            .map_or(usize::MAX, |(_, b)| *b)
    };
    let mut words = got.words.clone();
    let mut regions = expected.regions.clone();
    regions.sort_by_key(|r| (r.lifeline, r.start, std::cmp::Reverse(r.end)));
    for r in &regions {
        let Some(w) = words.get_mut(r.lifeline.0 as usize) else {
            return Err(format!("no lifeline #{}", r.lifeline.0));
        };
        if r.end > w.len() {
            return Err(format!(
                "lifeline #{} has {} events; its part of the `par` s{} ends at {}",
                r.lifeline.0,
                w.len(),
                r.par.0,
                r.end
            ));
        }
        w[r.start..r.end].sort_by_key(|e| branch_in(e, r.par));
    }
    for (l, (want, have)) in expected.execution.words.iter().zip(&words).enumerate() {
        if want != have {
            let i = want.iter().zip(have).take_while(|(a, b)| a == b).count();
            return Err(format!(
                "lifeline {} differs at event {i} (in branch order): expected {:?}, ran {:?}",
                workflow.lifelines[l].name,
                want.get(i),
                have.get(i)
            ));
        }
    }
    if expected.execution.words.len() != words.len() {
        return Err("another number of lifelines".into());
    }
    Ok(())
}

/// Whether `events`, in the order they happened, are a run over channels
/// that are FIFO per (sender, receiver, innermost `par` branch of the
/// message's statement): every receive takes the oldest message in flight
/// on its channel, which must be the one it names.
pub fn fifo<'e>(
    workflow: &Workflow,
    events: impl IntoIterator<Item = (LifelineId, &'e Event)>,
) -> Result<(), String> {
    let branches = branches_of(workflow);
    let lane = |s: StmtId| branches.get(s.0 as usize).and_then(|p| p.last().copied());
    type Chan = (LifelineId, LifelineId, Option<(StmtId, usize)>);
    let mut chans: std::collections::HashMap<Chan, std::collections::VecDeque<Message>> =
        std::collections::HashMap::new();
    for (i, (l, e)) in events.into_iter().enumerate() {
        match e {
            Event::Send { to, msg } => chans
                .entry((l, *to, lane(msg.stmt())))
                .or_default()
                .push_back(msg.clone()),
            Event::Recv { from, msg } => {
                let front = chans
                    .get_mut(&(*from, l, lane(msg.stmt())))
                    .and_then(|q| q.pop_front());
                if front.as_ref() != Some(msg) {
                    return Err(format!(
                        "event {i}: lifeline #{} receives {msg:?}, but the channel holds {front:?}",
                        l.0
                    ));
                }
            }
            Event::Act { .. } | Event::Decide { .. } => {}
        }
    }
    Ok(())
}

/// Bounded ⟦P⟧ by brute force: the distinct executions (values abstracted)
/// of every path in which each loop runs at most `unroll` iterations per
/// entry; with `control`, decisions and control messages included. `None`
/// when there are more than `limit` paths.
pub fn enumerate(
    workflow: &Workflow,
    control: bool,
    unroll: u32,
    limit: usize,
    tags: Tags<'_>,
) -> Result<Option<Vec<Execution>>, String> {
    let start = vec![Execution::new(workflow.lifelines.len())];
    let Some(all) = paths(&workflow.body, start, control, unroll, limit, tags)? else {
        return Ok(None);
    };
    let mut seen = HashSet::new();
    Ok(Some(
        all.into_iter().filter(|x| seen.insert(x.key())).collect(),
    ))
}

fn paths(
    block: &Block,
    mut states: Vec<Execution>,
    control: bool,
    unroll: u32,
    limit: usize,
    tags: Tags<'_>,
) -> Result<Option<Vec<Execution>>, String> {
    let tag = |stmt: StmtId| {
        tags(stmt).ok_or_else(|| format!("the projection has no construct s{}", stmt.0))
    };
    for s in &block.stmts {
        match &s.kind {
            StmtKind::Msg { from, to, .. } => {
                let msg = Message::Data {
                    stmt: s.id,
                    values: None,
                };
                for x in &mut states {
                    push(
                        x,
                        *from,
                        Event::Send {
                            to: *to,
                            msg: msg.clone(),
                        },
                    );
                    push(
                        x,
                        *to,
                        Event::Recv {
                            from: *from,
                            msg: msg.clone(),
                        },
                    );
                }
            }
            StmtKind::Act { at, .. } => {
                for x in &mut states {
                    push(
                        x,
                        *at,
                        Event::Act {
                            stmt: s.id,
                            outputs: None,
                        },
                    );
                }
            }
            StmtKind::If {
                owner,
                then,
                otherwise,
                ..
            } => {
                let r = recipients(*owner, then, otherwise);
                let mut out = Vec::new();
                for (d, b) in [(true, then), (false, otherwise)] {
                    let mut branch = states.clone();
                    if control {
                        let t = tag(s.id)?;
                        for x in &mut branch {
                            control_events(x, s.id, *owner, &r, t, d);
                        }
                    }
                    let Some(done) = paths(b, branch, control, unroll, limit, tags)? else {
                        return Ok(None);
                    };
                    out.extend(done);
                }
                states = out;
            }
            // One order of the branches stands for all (see `conforms`).
            StmtKind::Par { branches } => {
                for b in branches {
                    let Some(next) = paths(b, states, control, unroll, limit, tags)? else {
                        return Ok(None);
                    };
                    states = next;
                }
            }
            StmtKind::While {
                owner, body, exit, ..
            } => {
                let r = recipients(*owner, body, exit);
                let mut out = Vec::new();
                let mut current = states;
                for iteration in 0..=unroll {
                    // Leave after `iteration` rounds.
                    let mut leave = current.clone();
                    if control {
                        let t = tag(s.id)?;
                        for x in &mut leave {
                            control_events(x, s.id, *owner, &r, t, false);
                        }
                    }
                    let Some(done) = paths(exit, leave, control, unroll, limit, tags)? else {
                        return Ok(None);
                    };
                    out.extend(done);
                    if iteration == unroll {
                        break;
                    }
                    // Or go round once more.
                    if control {
                        let t = tag(s.id)?;
                        for x in &mut current {
                            control_events(x, s.id, *owner, &r, t, true);
                        }
                    }
                    let Some(next) = paths(body, current, control, unroll, limit, tags)? else {
                        return Ok(None);
                    };
                    current = next;
                    if current.len() + out.len() > limit {
                        return Ok(None);
                    }
                }
                states = out;
            }
        }
        if states.len() > limit {
            return Ok(None);
        }
    }
    Ok(Some(states))
}
