//! ⟦P⟧: the executions of a global workflow, enumerated (bounded) or decided
//! (membership of a given tuple of local words).
//!
//! The workflow is compiled once into a control-flow graph of global steps
//! (message, action, choice, jump). A global path through it, with its choices,
//! projects to one local word per lifeline; ⟦P⟧ is the set of these tuples. With
//! `control` on, every choice also produces the owner's decision and the control
//! broadcast of the projection (owner sends `(d, κ)` to R in ⊏ order, each
//! lifeline of R receives it), i.e. the semantics of the projected system
//! before erasure.
//!
//! Membership walks the graph against the words with one cursor per lifeline.
//! At a choice it keeps only the branches that the words allow: a branch is
//! refuted when a lifeline that must act in it (on every path) has a next event
//! from elsewhere. What is left ambiguous (possible only without control events)
//! is explored depth-first with memoisation of visited states, so typical runs
//! are checked in one linear pass and no state is explored twice.

use crate::event::{Event, Execution, Message};
use crate::validity::{Invalid, validate_lanes};
use std::collections::HashSet;
use std::fmt;
use troupe_check::ir::{Block, LifelineId, Program, StmtId, StmtKind, Workflow};
use troupe_project::{ConstructKind, ControlTag, ProjectError, Projection, project};

#[derive(Debug, Clone)]
enum Node {
    Msg {
        stmt: StmtId,
        from: LifelineId,
        to: LifelineId,
        arity: usize,
    },
    Act {
        stmt: StmtId,
        at: LifelineId,
        outputs: usize,
    },
    /// Entry of a loop from outside: resets its unrolling counter.
    LoopEnter {
        slot: usize,
    },
    Choice(usize),
    Jump(usize),
    /// The start of a `par` (index into `Semantics::pars`).
    ParFork(usize),
    /// The end of branch `.1` of `par` `.0`.
    ParEnd(usize, usize),
}

/// A `par` of the graph: where each branch starts, and its pre-order range.
#[derive(Debug, Clone)]
struct Par {
    branches: Vec<ParBranch>,
    /// The node after the region.
    end: usize,
}

#[derive(Debug, Clone, Copy)]
struct ParBranch {
    start: usize,
    /// Pre-order range of the branch's statements, `lo..hi`.
    lo: u32,
    hi: u32,
}

#[derive(Debug, Clone)]
struct Choice {
    stmt: StmtId,
    kind: ConstructKind,
    owner: LifelineId,
    tag: ControlTag,
    notify: Vec<LifelineId>,
    slot: usize,
    /// Targets for ⊤ (then / body) and ⊥ (else / exit).
    target: [usize; 2],
    /// Pre-order ranges of the two blocks, `lo..hi`.
    range: [(u32, u32); 2],
    /// Lifelines that have an event in the block on every path through it,
    /// without and with control events.
    must: [Vec<LifelineId>; 2],
    must_control: [Vec<LifelineId>; 2],
    /// Whether the construct lies inside a loop, i.e. may be entered again.
    in_loop: bool,
}

impl Choice {
    fn side(d: bool) -> usize {
        usize::from(!d)
    }
}

/// The compiled semantics of one workflow.
#[derive(Debug, Clone)]
pub struct Semantics {
    lifelines: Vec<String>,
    nodes: Vec<Node>,
    choices: Vec<Choice>,
    pars: Vec<Par>,
    /// Pre-order position of each statement, indexed by `StmtId`.
    order: Vec<u32>,
    loops: usize,
    projection: Projection,
}

/// Options of [`Semantics::enumerate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnumOptions {
    /// Each loop runs at most this many iterations per entry.
    pub unroll: u32,
    /// Include decisions and control messages.
    pub control: bool,
    /// Stop after this many distinct executions.
    pub limit: usize,
}

impl Default for EnumOptions {
    fn default() -> Self {
        EnumOptions {
            unroll: 2,
            control: false,
            limit: 10_000,
        }
    }
}

/// The result of a bounded enumeration.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Enumeration {
    pub executions: Vec<Execution>,
    /// Whether the limit cut the enumeration short.
    pub truncated: bool,
}

/// Options of [`Semantics::check`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemberOptions {
    /// Check decisions and control messages too. When off, control events in
    /// the words are skipped (the check is on the erasure).
    pub control: bool,
    /// Accept prefixes: each word may stop early (a run in progress).
    pub prefix: bool,
}

/// Why a tuple of local words is not in ⟦P⟧: the first event that does not fit
/// (in the most advanced attempt), or why the words are not a valid execution.
#[derive(Debug, Clone, PartialEq)]
pub struct NotMember {
    /// The lifeline and index of the offending event; `None` for a problem of
    /// the whole execution.
    pub lifeline: Option<LifelineId>,
    pub index: usize,
    /// The offending event; `None` when the word ended too early.
    pub event: Option<Event>,
    /// What the workflow expected instead, in words.
    pub expected: String,
    /// Lifeline names, for display.
    pub lifeline_name: String,
    /// The offending event in words.
    pub event_text: String,
}

impl fmt::Display for NotMember {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.lifeline, &self.event) {
            (None, _) => write!(f, "{}", self.expected),
            (Some(_), Some(e)) => {
                write!(
                    f,
                    "event {} of {} ({e}) does not fit: {}",
                    self.index, self.lifeline_name, self.expected
                )
            }
            (Some(_), None) => {
                write!(
                    f,
                    "{} ends after {} events, but {}",
                    self.lifeline_name, self.index, self.expected
                )
            }
        }
    }
}

impl std::error::Error for NotMember {}

impl Semantics {
    /// Compiles `workflow`. Fails only on malformed IR (see [`ProjectError`]).
    pub fn new(program: &Program, workflow: &Workflow) -> Result<Semantics, ProjectError> {
        let projection = project(program, workflow)?;
        let mut b = Builder {
            nodes: Vec::new(),
            choices: Vec::new(),
            pars: Vec::new(),
            order: vec![u32::MAX; workflow.stmt_count as usize],
            pre: 0,
            loops: 0,
            loop_depth: 0,
            projection: &projection,
        };
        b.block(&workflow.body);
        let (nodes, choices, pars, order, loops) = (b.nodes, b.choices, b.pars, b.order, b.loops);
        Ok(Semantics {
            lifelines: workflow.lifelines.iter().map(|l| l.name.clone()).collect(),
            nodes,
            choices,
            pars,
            order,
            loops,
            projection,
        })
    }

    /// The projection the control events follow.
    pub fn projection(&self) -> &Projection {
        &self.projection
    }

    pub fn lifeline_count(&self) -> usize {
        self.lifelines.len()
    }

    fn name(&self, l: LifelineId) -> String {
        self.lifelines
            .get(l.0 as usize)
            .cloned()
            .unwrap_or_else(|| format!("#{}", l.0))
    }

    fn pre(&self, stmt: StmtId) -> u32 {
        self.order.get(stmt.0 as usize).copied().unwrap_or(u32::MAX)
    }

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

    /// Decides whether `exec` is in ⟦P⟧ (or, with `prefix`, a prefix of a member).
    pub fn check(&self, exec: &Execution, opts: &MemberOptions) -> Result<(), Box<NotMember>> {
        let n = self.lifelines.len();
        let lanes = &self.projection.lanes;
        if let Err(e) = validate_lanes(exec, n, &|s| lanes.of(s)) {
            return Err(Box::new(self.invalid(exec, e)));
        }
        let w = Walk {
            sem: self,
            exec,
            opts: *opts,
        };
        w.run()
    }

    fn invalid(&self, exec: &Execution, e: Invalid) -> NotMember {
        let at = match &e {
            Invalid::WrongArity { .. } => None,
            Invalid::BadPeer {
                lifeline, index, ..
            }
            | Invalid::Unmatched {
                lifeline, index, ..
            }
            | Invalid::PayloadMismatch {
                lifeline, index, ..
            }
            | Invalid::Cycle { lifeline, index }
            | Invalid::Unreceived {
                lifeline, index, ..
            } => Some((*lifeline, *index)),
        };
        NotMember {
            lifeline: at.map(|a| a.0),
            index: at.map_or(0, |a| a.1),
            event: at.and_then(|(l, i)| exec.word(l).get(i).cloned()),
            event_text: at
                .and_then(|(l, i)| exec.word(l).get(i))
                .map(|e| e.describe(&self.lifelines))
                .unwrap_or_default(),
            expected: format!("not a valid execution: {e}"),
            lifeline_name: at.map(|a| self.name(a.0)).unwrap_or_default(),
        }
    }
}

fn push(exec: &mut Execution, l: LifelineId, e: Event) {
    if let Some(w) = exec.words.get_mut(l.0 as usize) {
        w.push(e);
    }
}

struct Builder<'a> {
    nodes: Vec<Node>,
    choices: Vec<Choice>,
    pars: Vec<Par>,
    order: Vec<u32>,
    pre: u32,
    loops: usize,
    /// How many loops enclose the block being built.
    loop_depth: usize,
    projection: &'a Projection,
}

/// What a block contributes to the analysis of the construct around it.
struct BlockInfo {
    must: Vec<LifelineId>,
    must_control: Vec<LifelineId>,
}

fn union(a: &[LifelineId], b: &[LifelineId]) -> Vec<LifelineId> {
    let mut v: Vec<LifelineId> = a.iter().chain(b).copied().collect();
    v.sort_unstable();
    v.dedup();
    v
}

fn intersection(a: &[LifelineId], b: &[LifelineId]) -> Vec<LifelineId> {
    a.iter()
        .copied()
        .filter(|x| b.binary_search(x).is_ok())
        .collect()
}

impl Builder<'_> {
    fn block(&mut self, block: &Block) -> BlockInfo {
        let mut info = BlockInfo {
            must: Vec::new(),
            must_control: Vec::new(),
        };
        for stmt in &block.stmts {
            if let Some(slot) = self.order.get_mut(stmt.id.0 as usize) {
                *slot = self.pre;
            }
            self.pre += 1;
            let (must, must_control) = match &stmt.kind {
                StmtKind::Par { branches } => {
                    let p = self.pars.len();
                    self.pars.push(Par {
                        branches: Vec::new(),
                        end: 0,
                    });
                    self.nodes.push(Node::ParFork(p));
                    let (mut must, mut must_control) = (Vec::new(), Vec::new());
                    let mut parts = Vec::with_capacity(branches.len());
                    for (i, b) in branches.iter().enumerate() {
                        let start = self.nodes.len();
                        let lo = self.pre;
                        let info = self.block(b);
                        parts.push(ParBranch {
                            start,
                            lo,
                            hi: self.pre,
                        });
                        self.nodes.push(Node::ParEnd(p, i));
                        must = union(&must, &info.must);
                        must_control = union(&must_control, &info.must_control);
                    }
                    self.pars[p] = Par {
                        branches: parts,
                        end: self.nodes.len(),
                    };
                    (must, must_control)
                }
                StmtKind::Msg { from, to, items } => {
                    self.nodes.push(Node::Msg {
                        stmt: stmt.id,
                        from: *from,
                        to: *to,
                        arity: items.len(),
                    });
                    let v = union(&[*from], &[*to]);
                    (v.clone(), v)
                }
                StmtKind::Act { at, outputs, .. } => {
                    self.nodes.push(Node::Act {
                        stmt: stmt.id,
                        at: *at,
                        outputs: outputs.len(),
                    });
                    (vec![*at], vec![*at])
                }
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
                    let is_loop = matches!(stmt.kind, StmtKind::While { .. });
                    let (tag, notify) = match self.projection.construct(stmt.id) {
                        Some(c) => (c.tag, c.notify.clone()),
                        None => (ControlTag(0), Vec::new()),
                    };
                    let slot = if is_loop {
                        self.loops += 1;
                        self.nodes.push(Node::LoopEnter {
                            slot: self.loops - 1,
                        });
                        self.loops - 1
                    } else {
                        0
                    };
                    let head = self.nodes.len();
                    // Reserve the choice's index now: nested choices are
                    // pushed while its blocks are built.
                    let c = self.choices.len();
                    self.choices.push(Choice {
                        stmt: stmt.id,
                        kind: ConstructKind::If,
                        owner: *owner,
                        tag,
                        notify: Vec::new(),
                        slot,
                        target: [0, 0],
                        range: [(0, 0), (0, 0)],
                        must: [Vec::new(), Vec::new()],
                        must_control: [Vec::new(), Vec::new()],
                        in_loop: false,
                    });
                    self.nodes.push(Node::Choice(c));
                    let lo_a = self.pre;
                    self.loop_depth += usize::from(is_loop);
                    let ia = self.block(a);
                    self.loop_depth -= usize::from(is_loop);
                    let hi_a = self.pre;
                    let jump = self.nodes.len();
                    self.nodes.push(Node::Jump(if is_loop { head } else { 0 }));
                    let target_b = self.nodes.len();
                    let lo_b = self.pre;
                    let ib = self.block(b);
                    let hi_b = self.pre;
                    if !is_loop {
                        let end = self.nodes.len();
                        if let Some(Node::Jump(t)) = self.nodes.get_mut(jump) {
                            *t = end;
                        }
                    }
                    let participants = union(&[*owner], &notify);
                    self.choices[c] = Choice {
                        stmt: stmt.id,
                        kind: if is_loop {
                            ConstructKind::While
                        } else {
                            ConstructKind::If
                        },
                        owner: *owner,
                        tag,
                        notify,
                        slot,
                        target: [head + 1, target_b],
                        range: [(lo_a, hi_a), (lo_b, hi_b)],
                        must: [ia.must.clone(), ib.must.clone()],
                        must_control: [ia.must_control, ib.must_control.clone()],
                        in_loop: self.loop_depth > 0,
                    };
                    if is_loop {
                        (ib.must, participants)
                    } else {
                        (intersection(&ia.must, &ib.must), participants)
                    }
                }
            };
            info.must = union(&info.must, &must);
            info.must_control = union(&info.must_control, &must_control);
        }
        info
    }
}

/// A pending alternative of the membership search.
struct Pending {
    pc: usize,
    /// Per lifeline, the position after its last event taken (events the
    /// check does not look at here are skipped when read, see `Walk::at`).
    cur: Vec<usize>,
    consumed: usize,
    forced: Option<bool>,
    /// Per loop, `consumed` when its current entry last chose ⊤.
    last: Vec<usize>,
    /// The `par` regions being walked, outermost first.
    frames: Vec<ParFrame>,
}

/// A `par` being walked: its branches are walked one after another, each
/// from the positions where the region began, reading only the events of
/// its own statements; at the end every lifeline's events of the region
/// must be those the branches took.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct ParFrame {
    par: usize,
    branch: usize,
    entry: Vec<usize>,
    /// Per branch walked, where it left each lifeline.
    ends: Vec<Vec<usize>>,
}

/// A pre-order range of statements: the events a walk looks at.
type Range = (u32, u32);

const EVERYTHING: Range = (0, u32::MAX);

type Visited = HashSet<(usize, Vec<usize>, Vec<ParFrame>)>;

/// Cursor updates of a decision (lifeline, new position), and how many
/// events they take.
type Updates = (Vec<(usize, usize)>, usize);

struct Failure {
    progress: usize,
    lifeline: LifelineId,
    index: usize,
    expected: String,
}

struct Walk<'a> {
    sem: &'a Semantics,
    exec: &'a Execution,
    opts: MemberOptions,
}

enum Outcome {
    Accept,
    Fail(Option<Failure>),
}

impl Walk<'_> {
    fn word(&self, l: LifelineId) -> &[Event] {
        self.exec.word(l)
    }

    /// Whether the check looks at `e` in range `r`: control events are
    /// invisible when checking the erasure, and inside a branch of a `par`
    /// the events of other statements belong to other branches (or come
    /// after the region).
    fn visible(&self, e: &Event, r: Range) -> bool {
        (self.opts.control || !e.is_control()) && {
            let p = self.sem.pre(e.stmt());
            r.0 <= p && p < r.1
        }
    }

    /// The first position at or after `pos` that the check looks at in
    /// range `r`, and the event there.
    fn at(&self, l: LifelineId, mut pos: usize, r: Range) -> (usize, Option<&Event>) {
        let w = self.word(l);
        while let Some(e) = w.get(pos) {
            if self.visible(e, r) {
                return (pos, Some(e));
            }
            pos += 1;
        }
        (pos, None)
    }

    fn relevant(&self) -> usize {
        self.exec
            .words
            .iter()
            .map(|w| {
                if self.opts.control {
                    w.len()
                } else {
                    w.iter().filter(|e| !e.is_control()).count()
                }
            })
            .sum()
    }

    fn run(&self) -> Result<(), Box<NotMember>> {
        let n = self.sem.lifelines.len();
        let total = self.relevant();
        let mut stack = vec![Pending {
            pc: 0,
            cur: vec![0; n],
            consumed: 0,
            forced: None,
            last: vec![usize::MAX; self.sem.loops],
            frames: Vec::new(),
        }];
        let mut visited: Visited = HashSet::new();
        let mut best: Option<Failure> = None;
        while let Some(p) = stack.pop() {
            match self.path(p, total, &mut stack, &mut visited) {
                Outcome::Accept => return Ok(()),
                Outcome::Fail(Some(f)) => {
                    if best.as_ref().is_none_or(|b| f.progress > b.progress) {
                        best = Some(f);
                    }
                }
                Outcome::Fail(None) => {}
            }
        }
        let f = best.unwrap_or(Failure {
            progress: 0,
            lifeline: LifelineId(0),
            index: 0,
            expected: "no path of the workflow fits".to_owned(),
        });
        Err(Box::new(NotMember {
            lifeline: Some(f.lifeline),
            index: f.index,
            event: self.word(f.lifeline).get(f.index).cloned(),
            event_text: self
                .word(f.lifeline)
                .get(f.index)
                .map(|e| e.describe(&self.sem.lifelines))
                .unwrap_or_default(),
            expected: f.expected,
            lifeline_name: self.sem.name(f.lifeline),
        }))
    }

    /// Expects the next event of `l` (at `pos`) to satisfy `ok`; returns the
    /// position after it. A frozen lifeline (prefix mode, word ended) accepts
    /// anything and stays where it is.
    fn expect(
        &self,
        l: LifelineId,
        pos: usize,
        r: Range,
        progress: usize,
        ok: impl Fn(&Event) -> bool,
        what: impl Fn() -> String,
    ) -> Result<usize, Failure> {
        match self.at(l, pos, r) {
            (_, None) if self.opts.prefix => Ok(pos),
            (at, Some(e)) if ok(e) => Ok(at + 1),
            (at, _) => Err(Failure {
                progress,
                lifeline: l,
                index: at,
                expected: what(),
            }),
        }
    }

    /// The range a walk inside `frames` looks at.
    fn range(&self, frames: &[ParFrame]) -> Range {
        frames
            .last()
            .and_then(|f| self.sem.pars.get(f.par)?.branches.get(f.branch))
            .map_or(EVERYTHING, |b| (b.lo, b.hi))
    }

    /// At the end of a `par`: each lifeline leaves the region after the
    /// last event any branch took, and every event of the enclosing range
    /// before that must be one a branch took (before the branch ended).
    fn join(&self, frame: &ParFrame, outer: Range, consumed: usize) -> Result<Vec<usize>, Failure> {
        let Some(par) = self.sem.pars.get(frame.par) else {
            return Err(self.malformed(consumed));
        };
        let mut out = frame.entry.clone();
        for (l, entry) in frame.entry.iter().enumerate() {
            let end = frame
                .ends
                .iter()
                .filter_map(|e| e.get(l).copied())
                .max()
                .unwrap_or(*entry);
            let lifeline = LifelineId(l as u32);
            for q in *entry..end {
                let Some(e) = self.word(lifeline).get(q) else {
                    break;
                };
                if !self.visible(e, outer) {
                    continue;
                }
                let p = self.sem.pre(e.stmt());
                let fits =
                    par.branches.iter().zip(&frame.ends).any(|(b, ends)| {
                        b.lo <= p && p < b.hi && ends.get(l).is_some_and(|&x| q < x)
                    });
                if !fits {
                    return Err(Failure {
                        progress: consumed,
                        lifeline,
                        index: q,
                        expected: "its parts of the `par` had not all ended".to_owned(),
                    });
                }
            }
            out[l] = end.max(*entry);
        }
        Ok(out)
    }

    fn malformed(&self, progress: usize) -> Failure {
        self.nowhere(progress)
    }

    fn path(
        &self,
        p: Pending,
        total: usize,
        stack: &mut Vec<Pending>,
        visited: &mut Visited,
    ) -> Outcome {
        let Pending {
            mut pc,
            mut cur,
            mut consumed,
            mut forced,
            mut last,
            mut frames,
        } = p;
        let sem = self.sem;
        let mut range = self.range(&frames);
        loop {
            if self.opts.prefix && consumed >= total {
                return Outcome::Accept;
            }
            let Some(node) = sem.nodes.get(pc) else {
                if consumed >= total {
                    return Outcome::Accept;
                }
                let (l, index) = (0..cur.len())
                    .map(|l| (l, self.at(LifelineId(l as u32), cur[l], EVERYTHING)))
                    .find(|(_, (_, e))| e.is_some())
                    .map_or((0, 0), |(l, (i, _))| (l, i));
                return Outcome::Fail(Some(Failure {
                    progress: consumed,
                    lifeline: LifelineId(l as u32),
                    index,
                    expected: "the workflow has ended".to_owned(),
                }));
            };
            match node {
                Node::ParFork(p) => {
                    let Some(par) = sem.pars.get(*p) else {
                        return Outcome::Fail(None);
                    };
                    match par.branches.first() {
                        None => pc = par.end,
                        Some(b) => {
                            frames.push(ParFrame {
                                par: *p,
                                branch: 0,
                                entry: cur.clone(),
                                ends: Vec::new(),
                            });
                            pc = b.start;
                        }
                    }
                    range = self.range(&frames);
                }
                Node::ParEnd(p, b) => {
                    let Some(par) = sem.pars.get(*p) else {
                        return Outcome::Fail(None);
                    };
                    let Some(frame) = frames.last_mut().filter(|f| f.par == *p && f.branch == *b)
                    else {
                        return Outcome::Fail(None);
                    };
                    frame.ends.push(cur.clone());
                    if let Some(next) = par.branches.get(b + 1) {
                        cur.clone_from(&frame.entry);
                        frame.branch = b + 1;
                        pc = next.start;
                    } else {
                        let Some(frame) = frames.pop() else {
                            return Outcome::Fail(None);
                        };
                        let outer = self.range(&frames);
                        match self.join(&frame, outer, consumed) {
                            Ok(c) => cur = c,
                            Err(f) => return Outcome::Fail(Some(f)),
                        }
                        pc = par.end;
                    }
                    range = self.range(&frames);
                }
                Node::Msg {
                    stmt,
                    from,
                    to,
                    arity,
                } => {
                    let (f, t) = (from.0 as usize, to.0 as usize);
                    let (Some(&pf), Some(&pt)) = (cur.get(f), cur.get(t)) else {
                        return Outcome::Fail(None);
                    };
                    let data_ok = |m: &Message| match m {
                        Message::Data { stmt: s, values } => {
                            s == stmt && values.as_ref().is_none_or(|v| v.len() == *arity)
                        }
                        Message::Control { .. } => false,
                    };
                    let r = self.expect(
                        *from,
                        pf,
                        range,
                        consumed,
                        |e| matches!(e, Event::Send { to: x, msg } if x == to && data_ok(msg)),
                        || {
                            format!(
                                "expected {} to send s{} to {}",
                                sem.name(*from),
                                stmt.0,
                                sem.name(*to)
                            )
                        },
                    );
                    let nf = match r {
                        Ok(v) => v,
                        Err(e) => return Outcome::Fail(Some(e)),
                    };
                    let step = usize::from(nf != pf);
                    let r = self.expect(
                        *to,
                        pt,
                        range,
                        consumed + step,
                        |e| matches!(e, Event::Recv { from: x, msg } if x == from && data_ok(msg)),
                        || {
                            format!(
                                "expected {} to receive s{} from {}",
                                sem.name(*to),
                                stmt.0,
                                sem.name(*from)
                            )
                        },
                    );
                    let nt = match r {
                        Ok(v) => v,
                        Err(e) => return Outcome::Fail(Some(e)),
                    };
                    consumed += step + usize::from(nt != pt);
                    cur[f] = nf;
                    cur[t] = nt;
                    pc += 1;
                }
                Node::Act { stmt, at, outputs } => {
                    let a = at.0 as usize;
                    let Some(&pa) = cur.get(a) else {
                        return Outcome::Fail(None);
                    };
                    let r = self.expect(
                        *at,
                        pa,
                        range,
                        consumed,
                        |e| {
                            matches!(e, Event::Act { stmt: s, outputs: o }
                                if s == stmt && o.as_ref().is_none_or(|v| v.len() == *outputs))
                        },
                        || format!("expected {} to perform s{}", sem.name(*at), stmt.0),
                    );
                    match r {
                        Ok(v) => {
                            consumed += usize::from(v != pa);
                            cur[a] = v;
                        }
                        Err(e) => return Outcome::Fail(Some(e)),
                    }
                    pc += 1;
                }
                Node::LoopEnter { slot } => {
                    if let Some(x) = last.get_mut(*slot) {
                        *x = usize::MAX;
                    }
                    pc += 1;
                }
                Node::Jump(t) => pc = *t,
                Node::Choice(c) => {
                    let Some(ch) = sem.choices.get(*c) else {
                        return Outcome::Fail(None);
                    };
                    let mut viable: Vec<(bool, Updates)> = Vec::with_capacity(2);
                    let mut fail: Option<Failure> = None;
                    let candidates: &[bool] = match forced.take() {
                        Some(true) => &[true],
                        Some(false) => &[false],
                        None => &[true, false],
                    };
                    let was_forced = candidates.len() == 1;
                    // An iteration that consumed nothing led back to this very
                    // state (cursors only grow): iterating again cannot help.
                    // This stops loops whose body is silent, or whose
                    // lifelines have all stopped (prefix mode).
                    let is_loop = ch.kind == ConstructKind::While;
                    let spun = is_loop && last.get(ch.slot) == Some(&consumed);
                    for &d in candidates {
                        if d && spun {
                            continue;
                        }
                        match self.try_choice(ch, d, &cur, consumed, range) {
                            Ok(updates) => viable.push((d, updates)),
                            Err(f) => {
                                if fail.as_ref().is_none_or(|b| f.progress > b.progress) {
                                    fail = Some(f);
                                }
                            }
                        }
                    }
                    if viable.is_empty() {
                        return Outcome::Fail(fail);
                    }
                    if !was_forced
                        && viable.len() == 2
                        && !visited.insert((pc, cur.clone(), frames.clone()))
                    {
                        return Outcome::Fail(None);
                    }
                    if viable.len() == 2 {
                        // Try first the branch that some participant's next
                        // event points into; else the ⊥ side, which cannot spin.
                        let hinted = |d: bool| {
                            let (lo, hi) = ch.range[Choice::side(d)];
                            std::iter::once(ch.owner)
                                .chain(ch.notify.iter().copied())
                                .any(|l| {
                                    cur.get(l.0 as usize)
                                        .and_then(|&p| self.at(l, p, range).1)
                                        .is_some_and(|e| (lo..hi).contains(&sem.pre(e.stmt())))
                                })
                        };
                        let first = hinted(true) && !hinted(false);
                        let second = !first;
                        stack.push(Pending {
                            pc,
                            cur: cur.clone(),
                            consumed,
                            forced: Some(second),
                            last: last.clone(),
                            frames: frames.clone(),
                        });
                        viable.retain(|(d, _)| *d == first);
                    }
                    let Some((d, (updates, gained))) = viable.pop() else {
                        return Outcome::Fail(None);
                    };
                    if is_loop
                        && d
                        && let Some(x) = last.get_mut(ch.slot)
                    {
                        *x = consumed;
                    }
                    consumed += gained;
                    for (l, p) in updates {
                        if let Some(c) = cur.get_mut(l) {
                            *c = p;
                        }
                    }
                    pc = ch.target[Choice::side(d)];
                }
            }
        }
    }

    /// Checks that decision `d` of `ch` fits the words at `cur`: the control
    /// events (with `control`) and that no lifeline that must act in the chosen
    /// block has its next event elsewhere. Returns the cursor updates and
    /// how many events they take.
    fn try_choice(
        &self,
        ch: &Choice,
        d: bool,
        cur: &[usize],
        consumed: usize,
        range: Range,
    ) -> Result<Updates, Failure> {
        let sem = self.sem;
        let mut updates: Vec<(usize, usize)> = Vec::new();
        let mut progress = consumed;
        let mut gained = 0usize;
        let dec = if d { "⊤" } else { "⊥" };
        if self.opts.control {
            let o = ch.owner.0 as usize;
            let Some(&start) = cur.get(o) else {
                return Err(self.nowhere(consumed));
            };
            let mut pos = self.expect(
                ch.owner,
                start,
                range,
                progress,
                |e| matches!(e, Event::Decide { stmt, tag, decision } if *stmt == ch.stmt && *tag == ch.tag && *decision == d),
                || format!("expected {} to decide {dec} for s{}", sem.name(ch.owner), ch.stmt.0),
            )?;
            gained += usize::from(pos != start);
            let msg = Message::Control {
                stmt: ch.stmt,
                tag: ch.tag,
                decision: d,
            };
            for &r in &ch.notify {
                progress = consumed + gained;
                let before = pos;
                pos = self.expect(
                    ch.owner,
                    pos,
                    range,
                    progress,
                    |e| matches!(e, Event::Send { to, msg: m } if *to == r && *m == msg),
                    || {
                        format!(
                            "expected {} to send {dec} {} to {}",
                            sem.name(ch.owner),
                            ch.tag,
                            sem.name(r)
                        )
                    },
                )?;
                gained += usize::from(pos != before);
            }
            progress = consumed + gained;
            updates.push((o, pos));
            for &r in &ch.notify {
                let Some(&p) = cur.get(r.0 as usize) else {
                    return Err(self.nowhere(consumed));
                };
                let np = self.expect(
                    r,
                    p,
                    range,
                    progress,
                    |e| matches!(e, Event::Recv { from, msg: m } if *from == ch.owner && *m == msg),
                    || {
                        format!(
                            "expected {} to receive {dec} {} from {}",
                            sem.name(r),
                            ch.tag,
                            sem.name(ch.owner)
                        )
                    },
                )?;
                gained += usize::from(np != p);
                progress = consumed + gained;
                updates.push((r.0 as usize, np));
            }
        }
        let side = Choice::side(d);
        let (lo, hi) = ch.range[side];
        let must = if self.opts.control {
            &ch.must_control[side]
        } else {
            &ch.must[side]
        };
        for &x in must {
            let xi = x.0 as usize;
            let pos = updates
                .iter()
                .find(|(l, _)| *l == xi)
                .map(|u| u.1)
                .or_else(|| cur.get(xi).copied())
                .unwrap_or(0);
            let what = || {
                let part = match (ch.kind, d) {
                    (ConstructKind::If, true) => "the then-branch",
                    (ConstructKind::If, false) => "the else-branch",
                    (ConstructKind::While, true) => "another iteration",
                    (ConstructKind::While, false) => "the exit",
                };
                format!(
                    "if {} decides {dec} at s{}, {} of it needs {} to act first",
                    sem.name(ch.owner),
                    ch.stmt.0,
                    part,
                    sem.name(x)
                )
            };
            let (pos, next) = self.at(x, pos, range);
            match next {
                None if self.opts.prefix => {}
                None => {
                    return Err(Failure {
                        progress,
                        lifeline: x,
                        index: pos,
                        expected: what(),
                    });
                }
                Some(e) if (lo..hi).contains(&sem.pre(e.stmt())) => {}
                Some(_) => {
                    return Err(Failure {
                        progress,
                        lifeline: x,
                        index: pos,
                        expected: what(),
                    });
                }
            }
        }
        // Outside any loop a construct runs at most once: an event from the
        // block not chosen can never come later. (A loop's body events can
        // follow an iteration, so only ⊥ is refuted by them.)
        let refutes = !ch.in_loop && (ch.kind == ConstructKind::If || !d);
        if refutes {
            let (olo, ohi) = ch.range[Choice::side(!d)];
            for x in std::iter::once(ch.owner).chain(ch.notify.iter().copied()) {
                let xi = x.0 as usize;
                let pos = updates
                    .iter()
                    .find(|(l, _)| *l == xi)
                    .map(|u| u.1)
                    .or_else(|| cur.get(xi).copied())
                    .unwrap_or(0);
                let (pos, next) = self.at(x, pos, range);
                if let Some(e) = next
                    && (olo..ohi).contains(&sem.pre(e.stmt()))
                {
                    return Err(Failure {
                        progress,
                        lifeline: x,
                        index: pos,
                        expected: format!(
                            "if {} decides {dec} at s{}, this event of the other branch never happens",
                            sem.name(ch.owner),
                            ch.stmt.0
                        ),
                    });
                }
            }
        }
        Ok((updates, gained))
    }

    fn nowhere(&self, progress: usize) -> Failure {
        Failure {
            progress,
            lifeline: LifelineId(0),
            index: 0,
            expected: "malformed workflow".to_owned(),
        }
    }
}
