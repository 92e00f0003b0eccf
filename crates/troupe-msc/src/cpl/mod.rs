//! Causal guards (LANGUAGE.md §7): the online monitor that lets the owner of
//! an `if` or `while` decide on what it has causally seen, and
//! ([`denote`]) the logic's semantics on a recorded execution, which
//! `troupe verify` checks each recorded decision against.
//!
//! The monitor is the vector-clock monitor with latest-value views of
//! Bollig's *Causal Past Logic for Runtime Verification of Distributed LLM
//! Agent Workflows* (arXiv 2605.20923). Each lifeline keeps a [`View`]:
//!
//! - a vector clock: how many events of each lifeline it has causally seen;
//! - for each `at(B, φ)` of the workflow's guards, φ's value at B's latest
//!   event it has seen (the event is implied: the clock's B entry);
//! - for each `once(φ)`, whether some event it has seen satisfied φ;
//! - for each `seen(B).x`, B's `x` at B's latest event it has seen;
//! - the values, at its own latest event, of the subformulas evaluated at
//!   its events (for `prev` and `since`).
//!
//! At each of its events a lifeline first merges the [`Meta`] of the message
//! it receives (a snapshot of the sender's view after the send), then counts
//! the event, then evaluates bottom-up the subformulas located at it, and
//! publishes what others may ask about it (its own `at` and `seen` entries,
//! the `once` flags). A decision is an event of the owner: the guard's value
//! is the top subformula's there.
//!
//! Only what the guards need is kept: a workflow without causal guards has
//! no [`Guards`] and its messages carry no metadata. The metadata of a
//! message is bounded by the number of lifelines, subformulas and `seen`
//! terms, never by the run's history.
//!
//! An atom that cannot be evaluated — it reads a variable not bound yet at
//! that event, or a `seen` value no visible event binds, or overflows — is
//! false, in the monitor and in [`denote`] alike.

pub mod denote;
mod fast;
mod meta;
pub mod recheck;

pub use meta::Meta;
pub use recheck::{Mismatch, Recheck};

use std::sync::Arc;
use troupe_check::Value;
use troupe_check::eval::{Env, eval};
use troupe_check::ir::{Expr, ExprKind, Formula, LifelineId, StmtId, StmtKind, VarId, Workflow};
use troupe_check::types::TypeTable;

/// Index of a subformula occurrence in [`Guards::nodes`].
pub type NodeId = u32;

/// One subformula occurrence; children come before their parents.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Atom(Expr),
    On(LifelineId),
    Not(NodeId),
    And(NodeId, NodeId),
    Or(NodeId, NodeId),
    Prev(NodeId),
    Since(NodeId, NodeId),
    /// With its slot among the `once` flags.
    Once(NodeId, u32),
    /// With its slot among the `at` views.
    At(LifelineId, NodeId, u32),
}

/// The causal guards of one workflow, compiled for the monitor.
#[derive(Debug, Clone, PartialEq)]
pub struct Guards {
    lifelines: usize,
    nodes: Vec<Node>,
    /// Per node, the lifelines at whose events it is evaluated (a bit set).
    located: Vec<Vec<bool>>,
    /// Per atom evaluated at every event, the variables it reads (`None`:
    /// it reads a `seen` value, which a receive may change): its value
    /// changes only at an event that binds one of them.
    reads: Vec<Option<Vec<VarId>>>,
    /// Per node, whether it is evaluated at every event of its lifelines
    /// (its value is published in a view, or read at a later event by
    /// `prev` or `since`), rather than only when its guard is decided.
    always: Vec<bool>,
    /// Per lifeline, the nodes evaluated at each of its events, children
    /// first.
    at_lifeline: Vec<Vec<NodeId>>,
    /// Per guard statement: its top node, and the nodes evaluated at its
    /// decision (its owner's every-event ones and its own), children first.
    tops: Vec<(StmtId, NodeId, Vec<NodeId>)>,
    /// Per `at` slot: the lifeline and the node whose value it views.
    at_slots: Vec<(LifelineId, NodeId)>,
    /// Per `once` slot: the node it looks for.
    once_slots: Vec<NodeId>,
    /// Per `seen` slot: whose variable.
    seen_slots: Vec<(LifelineId, VarId)>,
    /// Per atom made of comparisons, `and`, `or` and `not` over variables,
    /// literals and `seen` terms, that form ([`fast::Comparison`]),
    /// evaluated on references instead of by the expression interpreter.
    fast: Vec<Option<fast::Comparison>>,
    /// Per lifeline whose every-event nodes change only when one of these
    /// variables is bound or a receive changes its knowledge (no `prev`,
    /// `since` or `once` there, no atom reading a `seen` value): those
    /// variables with its own `seen` ones. An event that binds none of them
    /// and merges nothing new only counts ([`View::step`]).
    quiet: Vec<Option<Vec<VarId>>>,
}

impl Guards {
    /// The workflow's causal guards, or `None` when it has none (then no
    /// lifeline keeps a view and no message carries metadata).
    pub fn new(workflow: &Workflow) -> Option<Arc<Guards>> {
        let n = workflow.lifelines.len();
        let mut g = Guards {
            lifelines: n,
            nodes: Vec::new(),
            located: Vec::new(),
            always: Vec::new(),
            reads: Vec::new(),
            at_lifeline: vec![Vec::new(); n],
            tops: Vec::new(),
            at_slots: Vec::new(),
            once_slots: Vec::new(),
            seen_slots: Vec::new(),
            fast: Vec::new(),
            quiet: Vec::new(),
        };
        for stmt in workflow.stmts_by_id().into_iter().flatten() {
            let (StmtKind::If { owner, guard, .. } | StmtKind::While { owner, guard, .. }) =
                &stmt.kind
            else {
                continue;
            };
            if let ExprKind::Cpl(f) = &guard.kind {
                let mut at = vec![false; n];
                if let Some(slot) = at.get_mut(owner.0 as usize) {
                    *slot = true;
                }
                let first = g.nodes.len() as NodeId;
                let top = g.add(f, &at, false);
                // The guard's own nodes are `first..=top`.
                g.tops.push((stmt.id, top, (first..=top).collect()));
            }
        }
        if g.tops.is_empty() {
            return None;
        }
        for (id, located) in g.located.iter().enumerate() {
            for (l, &here) in located.iter().enumerate() {
                if here && g.always[id] {
                    g.at_lifeline[l].push(id as NodeId);
                }
            }
        }
        g.quiet = (0..n)
            .map(|l| {
                let mut vars: Vec<VarId> = g
                    .seen_slots
                    .iter()
                    .filter(|(b, _)| b.0 as usize == l)
                    .map(|(_, v)| *v)
                    .collect();
                for &node in &g.at_lifeline[l] {
                    match &g.nodes[node as usize] {
                        // `prev` and `since` read the previous event; `once`
                        // reads the flags as they were before this event,
                        // which the previous one may have raised.
                        Node::Prev(_) | Node::Since(..) | Node::Once(..) => return None,
                        Node::Atom(_) => vars.extend(g.reads[node as usize].as_ref()?),
                        _ => {}
                    }
                }
                Some(vars)
            })
            .collect();
        // At a decision: the owner's every-event nodes and the guard's
        // decision-only ones, in index order (children first).
        let owners: Vec<usize> = workflow
            .stmts_by_id()
            .into_iter()
            .flatten()
            .filter_map(|s| match &s.kind {
                StmtKind::If { owner, guard, .. } | StmtKind::While { owner, guard, .. }
                    if matches!(guard.kind, ExprKind::Cpl(_)) =>
                {
                    Some(owner.0 as usize)
                }
                _ => None,
            })
            .collect();
        for ((_, _, nodes), owner) in g.tops.iter_mut().zip(owners) {
            let mut order: Vec<NodeId> = nodes
                .iter()
                .copied()
                .filter(|&i| !g.always[i as usize] && g.located[i as usize][owner])
                .chain(g.at_lifeline[owner].iter().copied())
                .collect();
            order.sort_unstable();
            order.dedup();
            *nodes = order;
        }
        Some(Arc::new(g))
    }

    /// Adds `f`, evaluated at the lifelines of `at`, children first.
    /// `always`: at every event there (its value is published, or read at
    /// a later event); otherwise only when its guard is decided.
    fn add(&mut self, f: &Formula, at: &[bool], always: bool) -> NodeId {
        let everywhere = vec![true; self.lifelines];
        let node = match f {
            Formula::Atom(e) => {
                self.collect_seen(e);
                Node::Atom(e.clone())
            }
            Formula::On(l) => Node::On(*l),
            Formula::Not(a) => Node::Not(self.add(a, at, always)),
            Formula::And(a, b) => Node::And(self.add(a, at, always), self.add(b, at, always)),
            Formula::Or(a, b) => Node::Or(self.add(a, at, always), self.add(b, at, always)),
            Formula::Prev(a) => Node::Prev(self.add(a, at, true)),
            Formula::Since(a, b) => Node::Since(self.add(a, at, true), self.add(b, at, true)),
            Formula::Once(a) => {
                let child = self.add(a, &everywhere, true);
                self.once_slots.push(child);
                Node::Once(child, self.once_slots.len() as u32 - 1)
            }
            Formula::At(b, a) => {
                let mut only = vec![false; self.lifelines];
                if let Some(slot) = only.get_mut(b.0 as usize) {
                    *slot = true;
                }
                let child = self.add(a, &only, true);
                self.at_slots.push((*b, child));
                Node::At(*b, child, self.at_slots.len() as u32 - 1)
            }
        };
        // `since` reads its own value at the previous event.
        let always = always || matches!(node, Node::Since(..));
        self.reads.push(match &node {
            Node::Atom(e) => atom_reads(e),
            _ => None,
        });
        self.fast.push(match &node {
            Node::Atom(e) => fast::Comparison::of(e, &self.seen_slots),
            _ => None,
        });
        self.nodes.push(node);
        self.located.push(at.to_vec());
        self.always.push(always);
        self.nodes.len() as NodeId - 1
    }

    fn collect_seen(&mut self, e: &Expr) {
        let slots = &mut self.seen_slots;
        e.visit(&mut |e| {
            if let ExprKind::Seen(l, v) = e.kind
                && !slots.contains(&(l, v))
            {
                slots.push((l, v));
            }
        });
    }

    /// The subformula occurrences, children first.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// Whether node `n` is evaluated at `lifeline`'s events.
    pub fn located(&self, n: NodeId, lifeline: LifelineId) -> bool {
        self.located[n as usize]
            .get(lifeline.0 as usize)
            .copied()
            .unwrap_or(false)
    }

    /// The top node of the causal guard of statement `stmt`.
    pub fn top(&self, stmt: StmtId) -> Option<NodeId> {
        self.tops
            .iter()
            .find(|(s, ..)| *s == stmt)
            .map(|(_, n, _)| *n)
    }

    /// The guard statements, with their top nodes.
    pub fn tops(&self) -> impl Iterator<Item = (StmtId, NodeId)> + '_ {
        self.tops.iter().map(|(s, n, _)| (*s, *n))
    }

    /// The `seen` terms, in slot order.
    pub fn seen_slots(&self) -> &[(LifelineId, VarId)] {
        &self.seen_slots
    }

    pub fn lifelines(&self) -> usize {
        self.lifelines
    }

    /// A lifeline's view before its first event.
    pub fn start(&self, lifeline: LifelineId) -> View {
        View {
            lifeline,
            known: Arc::new(Knowledge {
                clock: vec![0; self.lifelines],
                at: vec![false; self.at_slots.len()],
                once: vec![false; self.once_slots.len()],
                seen: vec![None; self.seen_slots.len()],
            }),
            count: 0,
            current: vec![false; self.nodes.len()],
            next: vec![false; self.nodes.len()],
            merged: false,
        }
    }
}

/// The variables an atom reads, or `None` when it reads a `seen` value.
fn atom_reads(e: &Expr) -> Option<Vec<VarId>> {
    let (mut vars, mut seen) = (Vec::new(), false);
    e.visit(&mut |e| match e.kind {
        ExprKind::Var(v) => vars.push(v),
        ExprKind::Seen(..) | ExprKind::Cpl(_) => seen = true,
        _ => {}
    });
    (!seen).then_some(vars)
}

/// What a lifeline knows of the run (see the module docs): the part of
/// its view that messages carry.
#[derive(Debug, Clone, PartialEq)]
pub struct Knowledge {
    /// Per lifeline, how many of its events this one has seen.
    pub clock: Vec<u64>,
    /// Per `at` slot, the viewed node's value at the latest visible event
    /// of the slot's lifeline.
    pub at: Vec<bool>,
    /// Per `once` slot: some visible event satisfied its node.
    pub once: Vec<bool>,
    /// Per `seen` slot, the variable's value at the latest visible event of
    /// its lifeline (`None`: unbound there, or no such event).
    pub seen: Vec<Option<Value>>,
}

/// What one lifeline has causally seen: its monitor's state, kept in
/// checkpoints. Its [`Knowledge`] is shared with the messages it sends
/// until it changes (copy on write): a message costs a copy only when what
/// its sender publishes changes before the message is received, and an
/// event writes to it only when what it publishes changes — its own count
/// travels beside it.
#[derive(Debug, Clone)]
pub struct View {
    pub lifeline: LifelineId,
    /// Its own entry of the clock is stale: `count` is the truth (a
    /// message carries it beside the knowledge, see [`View::meta`]).
    known: Arc<Knowledge>,
    /// Its events so far.
    count: u64,
    /// Per node located here, its value at this lifeline's latest event.
    pub current: Vec<bool>,
    /// Scratch for the next event's values; equal to `current` between
    /// events.
    next: Vec<bool>,
    /// A receive changed its knowledge since its last evaluation.
    merged: bool,
}

/// Two views are equal when they know the same (the own count is kept
/// beside the shared knowledge, whose own entry is stale).
impl PartialEq for View {
    fn eq(&self, other: &View) -> bool {
        self.lifeline == other.lifeline
            && self.count == other.count
            && self.current == other.current
            && self.next == other.next
            && self.snapshot() == other.snapshot()
    }
}

/// The environment an atom reads: the lifeline's own variables, and the
/// `seen` values of its view (its own variables for `seen` of itself).
struct AtomEnv<'a, E: ?Sized> {
    env: &'a E,
    me: LifelineId,
    known: &'a Knowledge,
    guards: &'a Guards,
}

impl<E: Env + ?Sized> Env for AtomEnv<'_, E> {
    fn get(&self, var: VarId) -> Option<&Value> {
        self.env.get(var)
    }

    fn value(&self, var: VarId) -> Option<Value> {
        self.env.value(var)
    }

    fn seen(&self, lifeline: LifelineId, var: VarId) -> Option<Value> {
        if lifeline == self.me {
            return self.env.value(var);
        }
        let slot = self
            .guards
            .seen_slots
            .iter()
            .position(|s| *s == (lifeline, var))?;
        self.known.seen.as_slice().get(slot)?.clone()
    }
}

impl View {
    /// What it knows of the run (its own count included).
    pub fn snapshot(&self) -> Knowledge {
        let mut k = (*self.known).clone();
        if let Some(c) = k.clock.get_mut(self.lifeline.0 as usize) {
            *c = self.count;
        }
        k
    }

    /// Merges what the sender of a received message had seen: before the
    /// receive's own [`View::step`].
    pub fn receive(&mut self, guards: &Guards, meta: &Meta) {
        let theirs: &Knowledge = &meta.known;
        let n = self.known.clock.len().min(theirs.clock.len());
        // No one knows more of this lifeline's events than it does.
        let me = self.lifeline.0 as usize;
        let newer = (0..n).any(|b| b != me && meta.clock_at(b) > self.known.clock[b]);
        let more_once = self
            .known
            .once
            .iter()
            .zip(&theirs.once)
            .any(|(mine, t)| *t && !*mine);
        if !newer && !more_once {
            return;
        }
        self.merged = true;
        let k = Arc::make_mut(&mut self.known);
        for b in 0..n {
            let theirs_b = meta.clock_at(b);
            if b != me && theirs_b > k.clock[b] {
                k.clock[b] = theirs_b;
                for (slot, (l, _)) in guards.at_slots.iter().enumerate() {
                    if l.0 as usize == b
                        && let (Some(mine), Some(t)) = (k.at.get_mut(slot), theirs.at.get(slot))
                    {
                        *mine = *t;
                    }
                }
                for (slot, (l, _)) in guards.seen_slots.iter().enumerate() {
                    if l.0 as usize == b
                        && let (Some(mine), Some(t)) =
                            (k.seen.get_mut(slot), theirs.seen.as_slice().get(slot))
                    {
                        mine.clone_from(t);
                    }
                }
            }
        }
        for (mine, t) in k.once.iter_mut().zip(&theirs.once) {
            *mine |= *t;
        }
    }

    /// One event of this lifeline, after its effect on `env` (a receive's
    /// bindings, an action's outputs: `bound` says which variables it
    /// bound, so that an atom reading none of them keeps its value; `&|_|
    /// true` when unknown): counts it and evaluates the subformulas located
    /// here. A receive merges first ([`View::receive`]).
    pub fn step<E: Env + ?Sized>(
        &mut self,
        guards: &Guards,
        env: &E,
        types: &TypeTable,
        bound: &dyn Fn(VarId) -> bool,
    ) {
        let me = self.lifeline.0 as usize;
        // Nothing it evaluates or publishes can change: the event only
        // counts.
        if self.count > 0
            && !self.merged
            && guards.quiet[me]
                .as_ref()
                .is_some_and(|vars| !vars.iter().any(|v| bound(*v)))
        {
            self.count += 1;
            return;
        }
        self.evaluate(guards, &guards.at_lifeline[me], env, types, bound);
    }

    /// One event at which the nodes `order` are evaluated (children
    /// first): [`View::step`]'s, or a decision's.
    fn evaluate<E: Env + ?Sized>(
        &mut self,
        guards: &Guards,
        order: &[NodeId],
        env: &E,
        types: &TypeTable,
        bound: &dyn Fn(VarId) -> bool,
    ) {
        let me = self.lifeline.0 as usize;
        let first = self.count == 0;
        let mut next = std::mem::take(&mut self.next);
        let known: &Knowledge = &self.known;
        for &n in order {
            let i = n as usize;
            let value = match &guards.nodes[i] {
                // An atom evaluated at every event whose variables this
                // event did not bind keeps its value.
                Node::Atom(_)
                    if !first
                        && guards.always[i]
                        && guards.reads[i]
                            .as_ref()
                            .is_some_and(|vars| !vars.iter().any(|v| bound(*v))) =>
                {
                    self.current[i]
                }
                Node::Atom(e) => match &guards.fast[i] {
                    Some(c) => c.holds(env, self.lifeline, known, types),
                    None => {
                        let atom_env = AtomEnv {
                            env,
                            me: self.lifeline,
                            known,
                            guards,
                        };
                        matches!(eval(e, &atom_env, types), Ok(Value::Bool(true)))
                    }
                },
                Node::On(l) => *l == self.lifeline,
                Node::Not(a) => !next[*a as usize],
                Node::And(a, b) => next[*a as usize] && next[*b as usize],
                Node::Or(a, b) => next[*a as usize] || next[*b as usize],
                Node::Prev(a) => !first && self.current[*a as usize],
                Node::Since(a, b) => {
                    next[*b as usize] || (next[*a as usize] && !first && self.current[i])
                }
                // The strict past: the flags before this event's own update.
                Node::Once(_, slot) => known.once[*slot as usize],
                Node::At(l, a, slot) => {
                    if *l == self.lifeline {
                        next[*a as usize]
                    } else {
                        known.at[*slot as usize]
                    }
                }
            };
            next[i] = value;
        }
        // Count the event, and publish what others may ask about it: the
        // knowledge (shared with messages in flight) is written only where
        // it changes.
        self.count += 1;
        self.merged = false;
        for (slot, &(l, node)) in guards.at_slots.iter().enumerate() {
            if l == self.lifeline && self.known.at[slot] != next[node as usize] {
                Arc::make_mut(&mut self.known).at[slot] = next[node as usize];
            }
        }
        for (slot, &node) in guards.once_slots.iter().enumerate() {
            if guards.located[node as usize][me] && next[node as usize] && !self.known.once[slot] {
                Arc::make_mut(&mut self.known).once[slot] = true;
            }
        }
        for (slot, &(l, var)) in guards.seen_slots.iter().enumerate() {
            if l == self.lifeline {
                let value = env.value(var);
                if self.known.seen[slot] != value {
                    Arc::make_mut(&mut self.known).seen[slot] = value;
                }
            }
        }
        for &n in order {
            self.current[n as usize] = next[n as usize];
        }
        self.next = next;
    }

    /// The value of node `n` at this lifeline's latest event.
    pub fn value(&self, n: NodeId) -> bool {
        self.current.get(n as usize).copied().unwrap_or(false)
    }

    /// A decision of `stmt`'s causal guard: the decision is an event of its
    /// owner, at which the guard is evaluated.
    pub fn decide<E: Env + ?Sized>(
        &mut self,
        guards: &Guards,
        stmt: StmtId,
        env: &E,
        types: &TypeTable,
    ) -> bool {
        // A decision binds nothing.
        let bound = &|_| false;
        let Some((_, top, order)) = guards.tops.iter().find(|(s, ..)| *s == stmt) else {
            self.step(guards, env, types, bound);
            return false;
        };
        self.evaluate(guards, order, env, types, bound);
        self.value(*top)
    }

    /// What a message sent at this lifeline's latest event carries: its
    /// knowledge, shared until it changes, and its own count beside it (so
    /// that two sends in a row share one copy).
    pub fn meta(&self) -> Meta {
        Meta::shared(self.known.clone(), self.lifeline, self.count)
    }

    /// A view from its parts (a decoded checkpoint's); check it with
    /// [`View::fits`] before stepping it.
    pub fn from_parts(lifeline: LifelineId, known: Knowledge, current: Vec<bool>) -> View {
        View {
            lifeline,
            count: known.clock.get(lifeline.0 as usize).copied().unwrap_or(0),
            known: Arc::new(known),
            // After a step the scratch equals `current`: keep it so, so a
            // decoded view equals the one encoded.
            next: current.clone(),
            current,
            // What it knows may not have been evaluated yet.
            merged: true,
        }
    }

    /// Whether the view has the shape `guards` step: one clock entry per
    /// lifeline, one flag per slot and node.
    pub fn fits(&self, guards: &Guards) -> bool {
        let k = &self.known;
        k.clock.len() == guards.lifelines
            && k.at.len() == guards.at_slots.len()
            && k.once.len() == guards.once_slots.len()
            && k.seen.len() == guards.seen_slots.len()
            && self.current.len() == guards.nodes.len()
            && self.next.len() == guards.nodes.len()
            && (self.lifeline.0 as usize) < guards.lifelines
    }
}
