//! Causal guards (LANGUAGE.md §7) by brute force: the value of each causal
//! guard at each decision of a recorded execution, computed from the
//! definitions of the logic, and a generator of random workflows with
//! causal guards written as source.
//!
//! [`guard_values`] shares no code with `troupe_msc::cpl` (neither its
//! monitor nor its `denote`), and uses no vector clock:
//!
//! - the causal order is an explicit relation: every event's causal past
//!   as a set, the reflexive-transitive closure of each lifeline's order
//!   and of "a send before the receive it matches", where the k-th receive
//!   from A on a lane matches the k-th send of A to the receiver on that
//!   lane (FIFO per sender, receiver and `par` branch);
//! - each lifeline's variables after each of its events are replayed from
//!   the inputs, the values its receives bind and its actions' outputs;
//! - a formula is evaluated at an event by its definition: `prev` at the
//!   previous event of the same lifeline, `since` by scanning back over the
//!   lifeline's earlier events, `once` over every event of the strict
//!   causal past, `at(B, φ)` at the greatest event of B in the causal past.
//!
//! Atoms are Bool expressions evaluated by the language's one evaluator
//! (`troupe_check::eval`), with an environment of this module that gives
//! `seen(B).x` its meaning. An atom that errors or reads an unbound
//! variable is false. Values are memoised per (subformula, event) so that
//! nested `since` and `once` stay polynomial; the memo changes no value.
//!
//! [`generate`] writes random well-typed workflows whose `if` and `while`
//! guards mix plain atoms with nested `prev`/`since`/`once`/`at`/`seen`/`on`
//! forms, typed as the checker types them (see its `cpl` module): at the
//! top of a guard atoms read the owner's bound variables; inside `at(B, …)`
//! B's (bound or not); inside `once(…)` none, only `seen(B).x`. Loops are
//! bounded by a counter of their owner.

use crate::seeds::Rng;
use std::cell::RefCell;
use std::collections::HashMap;
use troupe_check::Value;
use troupe_check::eval::{Env, eval};
use troupe_check::ir::{
    Block, ExprKind, Formula, LifelineId, Recv, StmtId, StmtKind, VarId, Workflow,
};
use troupe_check::types::TypeTable;
use troupe_msc::{Event, Execution, Message};

/// One decision of a causal guard in a recorded execution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardValue {
    pub lifeline: LifelineId,
    /// The decision's index in its lifeline's word.
    pub event: usize,
    pub stmt: StmtId,
    /// What the run decided.
    pub recorded: bool,
    /// The guard's value by the definitions of the logic.
    pub value: bool,
}

/// Every decision of a causal guard in `execution` (in lifeline order, then
/// word order), with the guard's value there. `lane` gives the `par` branch
/// of a message's statement (0 everywhere without `par`). An error when the
/// execution has no causal order (a receive without its send, a cycle) or
/// lacks the values a replay needs.
pub fn guard_values(
    workflow: &Workflow,
    types: &TypeTable,
    execution: &Execution,
    inputs: &[Value],
    lane: &dyn Fn(StmtId) -> u32,
) -> Result<Vec<GuardValue>, String> {
    let mut stmts = HashMap::new();
    index(&workflow.body, &mut stmts);
    let causal = Causal::new(execution, lane)?;
    let states = replay(workflow, &stmts, execution, inputs)?;
    let ctx = Ctx {
        types,
        causal: &causal,
        states: &states,
        memo: RefCell::new(HashMap::new()),
    };
    let mut out = Vec::new();
    for (l, word) in execution.words.iter().enumerate() {
        for (i, event) in word.iter().enumerate() {
            let Event::Decide { stmt, decision, .. } = event else {
                continue;
            };
            let guard = match stmts.get(stmt) {
                Some(StmtKind::If { guard, .. } | StmtKind::While { guard, .. }) => guard,
                _ => continue,
            };
            if let ExprKind::Cpl(f) = &guard.kind {
                out.push(GuardValue {
                    lifeline: LifelineId(l as u32),
                    event: i,
                    stmt: *stmt,
                    recorded: *decision,
                    value: ctx.holds(f, causal.id(l, i)),
                });
            }
        }
    }
    Ok(out)
}

/// Every statement of `block`, nested ones included, by id.
fn index<'a>(block: &'a Block, out: &mut HashMap<StmtId, &'a StmtKind>) {
    for s in &block.stmts {
        out.insert(s.id, &s.kind);
        match &s.kind {
            StmtKind::If {
                then, otherwise, ..
            } => {
                index(then, out);
                index(otherwise, out);
            }
            StmtKind::While { body, exit, .. } => {
                index(body, out);
                index(exit, out);
            }
            StmtKind::Par { branches } => {
                for b in branches {
                    index(b, out);
                }
            }
            StmtKind::Msg { .. } | StmtKind::Act { .. } => {}
        }
    }
}

/// The causal order of an execution, as a relation. Events are numbered
/// lifeline by lifeline, each lifeline's in word order.
struct Causal {
    /// The number of each lifeline's first event.
    offset: Vec<usize>,
    /// Per event, its lifeline and its index in that lifeline's word.
    of: Vec<(usize, usize)>,
    /// `past[e][d]`: d is causally before or equal to e.
    past: Vec<Vec<bool>>,
}

impl Causal {
    fn new(execution: &Execution, lane: &dyn Fn(StmtId) -> u32) -> Result<Causal, String> {
        let mut offset = Vec::new();
        let mut of = Vec::new();
        for (l, word) in execution.words.iter().enumerate() {
            offset.push(of.len());
            of.extend((0..word.len()).map(|i| (l, i)));
        }
        let total = of.len();
        // The sends of each channel, in their sender's order.
        let mut sends: HashMap<(usize, usize, u32), Vec<usize>> = HashMap::new();
        for (l, word) in execution.words.iter().enumerate() {
            for (i, event) in word.iter().enumerate() {
                if let Event::Send { to, msg } = event {
                    sends
                        .entry((l, to.0 as usize, lane(msg.stmt())))
                        .or_default()
                        .push(offset[l] + i);
                }
            }
        }
        // The immediate predecessors of each event: its lifeline's previous
        // event, and for a receive the send it matches.
        let mut preds: Vec<Vec<usize>> = vec![Vec::new(); total];
        for (l, word) in execution.words.iter().enumerate() {
            let mut received: HashMap<(usize, u32), usize> = HashMap::new();
            for (i, event) in word.iter().enumerate() {
                let e = offset[l] + i;
                if i > 0 {
                    preds[e].push(e - 1);
                }
                if let Event::Recv { from, msg } = event {
                    let channel = (from.0 as usize, lane(msg.stmt()));
                    let k = received.entry(channel).or_insert(0);
                    let send = sends
                        .get(&(channel.0, l, channel.1))
                        .and_then(|s| s.get(*k))
                        .copied()
                        .ok_or_else(|| {
                            format!("lifeline #{l} receives (event {i}) a message never sent")
                        })?;
                    *k += 1;
                    let (sl, si) = of[send];
                    let Event::Send { msg: sent, .. } = &execution.words[sl][si] else {
                        unreachable!("only sends are listed as sends");
                    };
                    if !same_message(sent, msg) {
                        return Err(format!(
                            "lifeline #{l} receives (event {i}) another message than was sent"
                        ));
                    }
                    preds[e].push(send);
                }
            }
        }
        // The pasts in a topological order of the predecessor graph (Kahn):
        // each event's past is itself and its predecessors' pasts.
        let mut succs: Vec<Vec<usize>> = vec![Vec::new(); total];
        let mut waiting: Vec<usize> = vec![0; total];
        for (e, ps) in preds.iter().enumerate() {
            waiting[e] = ps.len();
            for &p in ps {
                succs[p].push(e);
            }
        }
        let mut ready: Vec<usize> = (0..total).filter(|&e| waiting[e] == 0).collect();
        let mut past: Vec<Vec<bool>> = vec![Vec::new(); total];
        let mut done = 0;
        while let Some(e) = ready.pop() {
            let mut mine = vec![false; total];
            mine[e] = true;
            for &p in &preds[e] {
                for (m, &x) in mine.iter_mut().zip(&past[p]) {
                    *m |= x;
                }
            }
            past[e] = mine;
            done += 1;
            for &s in &succs[e] {
                waiting[s] -= 1;
                if waiting[s] == 0 {
                    ready.push(s);
                }
            }
        }
        if done < total {
            return Err("the execution's causal order has a cycle".into());
        }
        Ok(Causal { offset, of, past })
    }

    fn id(&self, lifeline: usize, index: usize) -> usize {
        self.offset[lifeline] + index
    }

    /// Whether `d` is causally before or equal to `e`.
    fn le(&self, d: usize, e: usize) -> bool {
        self.past[e][d]
    }

    /// The index of the greatest event of lifeline `b` causally before or
    /// equal to `e` (`e` itself when it is `b`'s), if any.
    fn latest(&self, b: usize, e: usize) -> Option<usize> {
        let len = self.offset.get(b + 1).copied().unwrap_or(self.of.len()) - self.offset[b];
        (0..len).rev().find(|&j| self.le(self.id(b, j), e))
    }
}

/// A sent and a received message are the same: statement, values,
/// decision.
fn same_message(sent: &Message, received: &Message) -> bool {
    match (sent, received) {
        (
            Message::Data {
                stmt: a,
                values: va,
            },
            Message::Data {
                stmt: b,
                values: vb,
            },
        ) => a == b && va == vb,
        (
            Message::Control {
                stmt: a,
                decision: x,
                ..
            },
            Message::Control {
                stmt: b,
                decision: y,
                ..
            },
        ) => a == b && x == y,
        _ => false,
    }
}

/// Per lifeline, per event: the values of the lifeline's own variables
/// after the event (by `VarId`; other lifelines' variables are unset).
type States = Vec<Vec<Vec<Option<Value>>>>;

fn replay(
    workflow: &Workflow,
    stmts: &HashMap<StmtId, &StmtKind>,
    execution: &Execution,
    inputs: &[Value],
) -> Result<States, String> {
    if inputs.len() != workflow.inputs.len() {
        return Err(format!(
            "{} inputs for a workflow of {}",
            inputs.len(),
            workflow.inputs.len()
        ));
    }
    let mut states = Vec::new();
    for (l, word) in execution.words.iter().enumerate() {
        let mine = |v: VarId| workflow.vars[v.0 as usize].lifeline.0 as usize == l;
        let mut env: Vec<Option<Value>> = vec![None; workflow.vars.len()];
        for (&v, x) in workflow.inputs.iter().zip(inputs) {
            if mine(v) {
                env[v.0 as usize] = Some(x.clone());
            }
        }
        let mut after = Vec::with_capacity(word.len());
        for (i, event) in word.iter().enumerate() {
            let missing = || format!("lifeline #{l}, event {i}: no recorded values to replay");
            match event {
                Event::Recv {
                    msg: Message::Data { stmt, values },
                    ..
                } => {
                    let values = values.as_ref().ok_or_else(missing)?;
                    let Some(StmtKind::Msg { items, .. }) = stmts.get(stmt) else {
                        return Err(format!("lifeline #{l}, event {i}: not a message"));
                    };
                    for (item, v) in items.iter().zip(values) {
                        if let Recv::Bind(x) = item.recv
                            && mine(x)
                        {
                            env[x.0 as usize] = Some(v.clone());
                        }
                    }
                }
                Event::Act { stmt, outputs } => {
                    let values = outputs.as_ref().ok_or_else(missing)?;
                    let Some(StmtKind::Act { outputs, .. }) = stmts.get(stmt) else {
                        return Err(format!("lifeline #{l}, event {i}: not an action"));
                    };
                    for (o, v) in outputs.iter().zip(values) {
                        if let Some(x) = o
                            && mine(*x)
                        {
                            env[x.0 as usize] = Some(v.clone());
                        }
                    }
                }
                // Sends, control receives and decisions bind nothing.
                _ => {}
            }
            after.push(env.clone());
        }
        states.push(after);
    }
    Ok(states)
}

struct Ctx<'a> {
    types: &'a TypeTable,
    causal: &'a Causal,
    states: &'a States,
    /// Values already computed, by (subformula's address, event).
    memo: RefCell<HashMap<(usize, usize), bool>>,
}

impl Ctx<'_> {
    /// Whether `f` holds at event `e`.
    fn holds(&self, f: &Formula, e: usize) -> bool {
        let key = (std::ptr::from_ref(f) as usize, e);
        if let Some(&v) = self.memo.borrow().get(&key) {
            return v;
        }
        let (l, i) = self.causal.of[e];
        let value = match f {
            Formula::Atom(x) => {
                let env = AtomEnv { ctx: self, e };
                matches!(eval(x, &env, self.types), Ok(Value::Bool(true)))
            }
            Formula::On(b) => b.0 as usize == l,
            Formula::Not(a) => !self.holds(a, e),
            Formula::And(a, b) => self.holds(a, e) && self.holds(b, e),
            Formula::Or(a, b) => self.holds(a, e) || self.holds(b, e),
            // Events of a lifeline are numbered consecutively.
            Formula::Prev(a) => i > 0 && self.holds(a, e - 1),
            // ψ at some event j of this lifeline up to now, φ at every one
            // after j up to and including now.
            Formula::Since(a, b) => (0..=i).rev().any(|j| {
                self.holds(b, self.causal.id(l, j))
                    && (j + 1..=i).all(|k| self.holds(a, self.causal.id(l, k)))
            }),
            // Any event d < e (strictly), on any lifeline.
            Formula::Once(a) => (0..self.causal.of.len())
                .any(|d| d != e && self.causal.le(d, e) && self.holds(a, d)),
            Formula::At(b, a) => {
                let b = b.0 as usize;
                self.causal
                    .latest(b, e)
                    .is_some_and(|j| self.holds(a, self.causal.id(b, j)))
            }
        };
        self.memo.borrow_mut().insert(key, value);
        value
    }
}

/// What an atom at event `e` reads: its lifeline's variables after `e`,
/// and `seen(B).x` as B's `x` after B's greatest event causally before or
/// equal to `e`.
struct AtomEnv<'a> {
    ctx: &'a Ctx<'a>,
    e: usize,
}

impl Env for AtomEnv<'_> {
    fn get(&self, var: VarId) -> Option<&Value> {
        let (l, i) = self.ctx.causal.of[self.e];
        self.ctx.states[l][i]
            .as_slice()
            .get(var.0 as usize)?
            .as_ref()
    }

    fn seen(&self, lifeline: LifelineId, var: VarId) -> Option<Value> {
        let b = lifeline.0 as usize;
        let j = self.ctx.causal.latest(b, self.e)?;
        self.ctx.states[b][j]
            .as_slice()
            .get(var.0 as usize)?
            .clone()
    }
}

/// A generated workflow: its source (one workflow, `main`) and inputs.
#[derive(Debug, Clone)]
pub struct Generated {
    pub source: String,
    pub inputs: Vec<Value>,
    pub lifelines: usize,
}

/// The one action of generated workflows: a model call from an `Int` to an
/// `Int`, whose prompt ends with its argument (a test's backend can answer
/// it deterministically; the simulator answers 0).
pub const GUESS: &str = "llm guess(n: Int) -> Int {\n  prompt: \"Guess from {n}\"\n}\n";

/// A random well-typed workflow `main` with causal guards (see the module
/// docs). Lifelines `L0…`; each `Li` has the inputs `xi: Int` and
/// `fi: Bool`, bound from the start (so a lifeline's first event may be a
/// decision), an `Int` `yi` that some statement may bind later (so atoms
/// reading it may find it unbound), and a counter per loop it owns. With
/// `par`, some blocks are `par` regions, whose branches write only
/// variables of their own.
pub fn generate(seed: u64, par: bool) -> Generated {
    let mut rng = Rng::new(seed);
    let n = rng.range(2, 4);
    let left = rng.range(6, 28);
    let mut g = Gen {
        rng,
        n,
        par,
        left,
        loops: 0,
        y_declared: vec![false; n],
        in_par: false,
        fresh: 0,
        out: String::new(),
    };
    let mut bound = vec![false; n];
    g.block(1, 0, &mut bound);
    let body = std::mem::take(&mut g.out);
    let mut source = String::from(GUESS);
    let params: Vec<String> = (0..n)
        .map(|i| format!("x{i}: Int @ L{i}, f{i}: Bool @ L{i}"))
        .collect();
    source.push_str(&format!(
        "\nworkflow main({}) {{\n  lifelines ",
        params.join(", ")
    ));
    let names: Vec<String> = (0..n).map(|i| format!("L{i}")).collect();
    source.push_str(&names.join(", "));
    source.push('\n');
    source.push_str(&body);
    source.push_str("}\n");
    let mut inputs = Vec::new();
    for _ in 0..n {
        inputs.push(Value::Int(g.rng.below(7) as i64 - 3));
        inputs.push(Value::Bool(g.rng.chance(1, 2)));
    }
    Generated {
        source,
        inputs,
        lifelines: n,
    }
}

/// Where a subformula is evaluated, for what its atoms may read.
#[derive(Debug, Clone, Copy)]
enum Place {
    /// At the guard's owner, at the decision: bound variables only.
    Owner(usize),
    /// At events of this lifeline other than the decision (inside `prev`,
    /// `since` or `at`): any of its variables declared so far.
    Past(usize),
    /// At any lifeline's events (inside `once`): no variables.
    Anywhere,
}

struct Gen {
    rng: Rng,
    n: usize,
    /// Whether to write `par` regions.
    par: bool,
    /// Statements left to write.
    left: usize,
    loops: usize,
    /// Per lifeline `Li`, whether some statement so far binds its `yi`.
    y_declared: Vec<bool>,
    /// Inside a `par`, where a branch may write only variables of its own
    /// (`q…`, `b…`): no branch writes what another reads.
    in_par: bool,
    /// Fresh variables made so far.
    fresh: usize,
    out: String,
}

impl Gen {
    fn line(&mut self, indent: usize, text: &str) {
        self.out.push_str(&"  ".repeat(indent));
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn other(&mut self, i: usize) -> usize {
        (i + 1 + self.rng.below(self.n - 1)) % self.n
    }

    fn k(&mut self) -> i64 {
        self.rng.below(7) as i64 - 3
    }

    /// A block; `bound[l]`: `yl` is bound on every path to here.
    fn block(&mut self, indent: usize, depth: usize, bound: &mut [bool]) {
        let count = if depth == 0 {
            self.left
        } else {
            self.rng.range(1, 3)
        };
        for _ in 0..count {
            if self.left == 0 {
                break;
            }
            self.left -= 1;
            let i = self.rng.below(self.n);
            let nested = depth < 3;
            match self.rng.below(22) {
                0..=6 => self.msg(indent, i, bound),
                7..=11 => self.act(indent, i, bound),
                12..=15 if nested => self.if_(indent, depth, i, bound),
                16..=19 if nested && self.loops < 3 => self.while_(indent, depth, i, bound),
                21 if self.par && nested && !self.in_par => self.par_(indent, depth, bound),
                _ => self.msg(indent, i, bound),
            }
        }
    }

    fn msg(&mut self, indent: usize, i: usize, bound: &mut [bool]) {
        let j = self.other(i);
        let (send, recv) = if self.in_par {
            if self.rng.chance(1, 2) {
                (self.int_send(i, bound), self.fresh("q"))
            } else {
                (self.bool_send(i), self.fresh("b"))
            }
        } else {
            match self.rng.below(3) {
                0 => self.int_item(i, j, bound),
                1 => (self.bool_send(i), format!("f{j}")),
                _ => {
                    let (s, r) = self.int_item(i, j, bound);
                    (format!("{s}, {}", self.bool_send(i)), format!("{r}, f{j}"))
                }
            }
        };
        self.line(indent, &format!("msg L{i}({send}) -> L{j}({recv})"));
    }

    /// An `Int` item from `i` to `j`: what is sent, which variable binds it.
    fn int_item(&mut self, i: usize, j: usize, bound: &mut [bool]) -> (String, String) {
        let send = self.int_send(i, bound);
        let recv = if self.rng.chance(1, 2) {
            self.y_declared[j] = true;
            bound[j] = true;
            format!("y{j}")
        } else {
            format!("x{j}")
        };
        (send, recv)
    }

    fn int_send(&mut self, i: usize, bound: &[bool]) -> String {
        match self.rng.below(4) {
            0 if bound[i] => format!("y{i}"),
            1 => format!("x{i} + {}", self.rng.range(1, 3)),
            _ => format!("x{i}"),
        }
    }

    fn bool_send(&mut self, i: usize) -> String {
        match self.rng.below(3) {
            0 => format!("not f{i}"),
            1 => format!("x{i} > {}", self.k()),
            _ => format!("f{i}"),
        }
    }

    /// A variable no statement wrote before.
    fn fresh(&mut self, stem: &str) -> String {
        self.fresh += 1;
        format!("{stem}{}", self.fresh)
    }

    fn act(&mut self, indent: usize, i: usize, bound: &mut [bool]) {
        let text = if self.in_par {
            match self.rng.below(3) {
                0 => format!("{} = guess(x{i})", self.fresh("q")),
                1 => format!("{} = x{i} + {}", self.fresh("q"), self.k()),
                _ => format!("{} = not f{i}", self.fresh("b")),
            }
        } else {
            match self.rng.below(8) {
                0 => format!("x{i} = x{i} + {}", self.k()),
                1 => format!("f{i} = not f{i}"),
                2 => format!("f{i} = x{i} > {}", self.k()),
                3 if bound[i] => format!("x{i} = y{i} - {}", self.rng.range(1, 2)),
                4 | 5 => {
                    self.y_declared[i] = true;
                    bound[i] = true;
                    format!("y{i} = guess(x{i})")
                }
                _ => {
                    self.y_declared[i] = true;
                    bound[i] = true;
                    format!("y{i} = x{i} + {}", self.k())
                }
            }
        };
        self.line(indent, &format!("act L{i}: {text}"));
    }

    /// `par { … } and { … }`: two or three branches, each writing only
    /// fresh variables (so nothing bound before changes in the region).
    fn par_(&mut self, indent: usize, depth: usize, bound: &mut [bool]) {
        self.in_par = true;
        let branches = self.rng.range(2, 3);
        self.line(indent, "par {");
        for b in 0..branches {
            if b > 0 {
                self.line(indent, "} and {");
            }
            let mut inside = bound.to_vec();
            // No branch is empty.
            self.left += 1;
            self.block(indent + 1, depth + 1, &mut inside);
        }
        self.line(indent, "}");
        self.in_par = false;
    }

    fn if_(&mut self, indent: usize, depth: usize, owner: usize, bound: &mut [bool]) {
        let guard = self.guard(owner, bound);
        self.line(indent, &format!("if {guard} @ L{owner} {{"));
        let mut then = bound.to_vec();
        self.block(indent + 1, depth + 1, &mut then);
        if self.rng.chance(3, 5) {
            self.line(indent, "} else {");
            let mut otherwise = bound.to_vec();
            self.block(indent + 1, depth + 1, &mut otherwise);
            for (b, (t, o)) in bound.iter_mut().zip(then.iter().zip(&otherwise)) {
                *b = *t && *o;
            }
        }
        self.line(indent, "}");
    }

    fn while_(&mut self, indent: usize, depth: usize, owner: usize, bound: &mut [bool]) {
        let counter = format!("k{}", self.loops);
        self.loops += 1;
        let times = self.rng.range(1, 3);
        self.line(indent, &format!("act L{owner}: {counter} = 0"));
        let guard = self.guard(owner, bound);
        self.line(
            indent,
            &format!("while {counter} < {times} and ({guard}) @ L{owner} {{"),
        );
        // The body may not run: what it binds is not bound after the loop.
        let mut inside = bound.to_vec();
        self.block(indent + 1, depth + 1, &mut inside);
        self.line(
            indent + 1,
            &format!("act L{owner}: {counter} = {counter} + 1"),
        );
        self.line(indent, "}");
    }

    /// A guard owned by `owner`: mostly a causal formula, sometimes a plain
    /// condition (an ordinary decision among the causal ones).
    fn guard(&mut self, owner: usize, bound: &[bool]) -> String {
        if self.rng.chance(1, 8) {
            return format!("x{owner} > {}", self.k());
        }
        let depth = self.rng.range(1, 4);
        self.formula(Place::Owner(owner), depth, bound)
    }

    fn formula(&mut self, place: Place, depth: usize, bound: &[bool]) -> String {
        if depth == 0 {
            // `on` at the leaves too, so that `once(on(L))` and `at(L,
            // once(on(L)))` occur: a lifeline whose flags its own events
            // raise.
            if self.rng.chance(1, 8) {
                return format!("on(L{})", self.rng.below(self.n));
            }
            return self.atom(place, bound);
        }
        let past = match place {
            Place::Owner(l) | Place::Past(l) => Place::Past(l),
            Place::Anywhere => Place::Anywhere,
        };
        let d = depth - 1;
        match self.rng.below(12) {
            0 | 1 => self.atom(place, bound),
            2 => format!("not ({})", self.formula(place, d, bound)),
            3 => format!(
                "({}) and ({})",
                self.formula(place, d, bound),
                self.formula(place, d, bound)
            ),
            4 => format!(
                "({}) or ({})",
                self.formula(place, d, bound),
                self.formula(place, d, bound)
            ),
            5 | 6 => format!("prev({})", self.formula(past, d, bound)),
            7 => format!(
                "since({}, {})",
                self.formula(past, d, bound),
                self.formula(past, d, bound)
            ),
            8 => format!("once({})", self.formula(Place::Anywhere, d, bound)),
            9 | 10 => {
                let b = self.rng.below(self.n);
                format!("at(L{b}, {})", self.formula(Place::Past(b), d, bound))
            }
            _ => format!("on(L{})", self.rng.below(self.n)),
        }
    }

    /// A term of type `Int` (or `Bool`) that `place` may read: one of the
    /// lifeline's own variables, or a `seen` term.
    fn term(&mut self, place: Place, int: bool, bound: &[bool]) -> String {
        let own = match place {
            Place::Owner(l) => Some((l, bound[l])),
            Place::Past(l) => Some((l, self.y_declared[l])),
            Place::Anywhere => None,
        };
        let (var, l) = match own {
            Some((l, has_y)) if self.rng.chance(2, 3) => (self.var(int, has_y), l),
            _ => {
                let b = self.rng.below(self.n);
                let var = self.var(int, self.y_declared[b]);
                return format!("seen(L{b}).{var}{b}");
            }
        };
        format!("{var}{l}")
    }

    fn var(&mut self, int: bool, has_y: bool) -> &'static str {
        match (int, has_y && self.rng.chance(1, 3)) {
            (true, true) => "y",
            (true, false) => "x",
            (false, _) => "f",
        }
    }

    /// A Bool atom over what `place` may read and `seen` terms.
    fn atom(&mut self, place: Place, bound: &[bool]) -> String {
        let int = self.rng.chance(2, 3);
        let t = self.term(place, int, bound);
        if int {
            match self.rng.below(5) {
                0 => format!("{t} == {}", self.k()),
                1 => format!("{t} <= {}", self.k()),
                2 => format!("{t} > {}", self.term(place, true, bound)),
                _ => format!("{t} > {}", self.k()),
            }
        } else if self.rng.chance(1, 3) {
            format!("not {t}")
        } else {
            t
        }
    }
}

#[cfg(test)]
mod tests {
    //! The reference against values worked out by hand from the definitions
    //! (the theorem tests compare it with the monitor and `denote`; these
    //! make sure it is not merely as wrong as they are).

    use super::*;
    use troupe_msc::{Decisions, SimOptions, simulate};

    /// The guard values of the run of `main` in `src` on `inputs`.
    fn values(src: &str, inputs: Vec<Value>) -> Vec<bool> {
        let (program, diagnostics) = troupe_check::check_text(src);
        let program = program.unwrap_or_else(|| panic!("{diagnostics:#?}"));
        let w = program.workflow("main").unwrap();
        let projection = troupe_project::project(&program, w).unwrap();
        let opts = SimOptions {
            seed: 1,
            decisions: Decisions::Evaluate,
            loop_bound: None,
            max_steps: 10_000,
        };
        let run = simulate(&program, w, &projection, &inputs, &opts).unwrap();
        assert!(run.completed());
        guard_values(w, &program.types, &run.execution, &inputs, &|s| {
            projection.lanes.of(s)
        })
        .unwrap()
        .iter()
        .map(|g| g.value)
        .collect()
    }

    #[test]
    fn at_reads_the_latest_visible_event_not_the_latest() {
        // C hears from A only through B, which heard A's send; A's later
        // act is not visible to C whenever it happened.
        let src = "workflow main(f0: Bool @ A, x0: Int @ B) {
  lifelines A, B, C
  act A: f = f0
  msg A(f) -> B(g)
  act A: f = not f
  msg B(x0) -> C(y)
  if at(A, f) and not once(at(A, not f)) @ C {
    act C: y = y + 1
  }
}
";
        for f0 in [true, false] {
            let got = values(src, vec![Value::Bool(f0), Value::Int(0)]);
            assert_eq!(got, vec![f0], "f0 = {f0}");
        }
    }

    #[test]
    fn since_scans_back_over_the_lifelines_own_events() {
        // A's x after its events 0..=4 is x0, x0+1, x0+2, x0+2, x0+2; the
        // decision is event 4. since(x >= 1, x == 0): some event with x 0,
        // and x >= 1 at every later one up to the decision.
        let src = "workflow main(x0: Int @ A) {
  lifelines A, B
  act A: x = x0
  act A: x = x + 1
  act A: x = x + 1
  msg A(x) -> B(y)
  if since(x >= 1, x == 0) @ A {
    act A: x = 0
  }
}
";
        for (x0, want) in [(-3, false), (-2, true), (-1, true), (0, true), (1, false)] {
            assert_eq!(values(src, vec![Value::Int(x0)]), vec![want], "x0 = {x0}");
        }
    }

    #[test]
    fn once_is_strict_and_at_without_a_visible_event_is_false() {
        // C's first decision is its first event: nothing in its strict
        // past, and A has no event at all. The second has the first before
        // it; `prev` there is the act between them.
        let src = "workflow main(x0: Int @ A) {
  lifelines A, C
  act A: x = x0
  if once(on(C)) or at(A, true) @ C {
    act C: z = 1
  } else {
    act C: z = 2
  }
  if once(on(C)) and prev(z == 2) and not prev(prev(z == 2)) @ C {
    act C: z = 3
  }
}
";
        assert_eq!(values(src, vec![Value::Int(0)]), vec![false, true]);
    }

    #[test]
    fn a_receive_without_its_send_has_no_causal_order() {
        let exec = Execution {
            words: vec![
                Vec::new(),
                vec![Event::Recv {
                    from: LifelineId(0),
                    msg: Message::Data {
                        stmt: StmtId(0),
                        values: Some(Vec::new()),
                    },
                }],
            ],
        };
        let (program, _) = troupe_check::check_text(
            "workflow main() {\n  lifelines A, B\n  msg A(1) -> B(y)\n}\n",
        );
        let program = program.unwrap();
        let w = program.workflow("main").unwrap();
        let err = guard_values(w, &program.types, &exec, &[], &|_| 0).unwrap_err();
        assert!(err.contains("never sent"), "{err}");
    }
}
