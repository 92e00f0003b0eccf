//! Compiling a global workflow into the graph ⟦P⟧ is read from: one node
//! per message, action, choice, jump and `par` fork or join, each choice
//! with its owner, the lifelines it must tell (from the projection) and
//! the lifelines that act in each of its branches on every path, which is
//! what lets membership refute a branch early.

use super::{Choice, Node, Par, ParBranch, Semantics};
use troupe_check::ir::{Block, LifelineId, Program, StmtKind, Workflow};
use troupe_project::{ConstructKind, ControlTag, ProjectError, Projection, project};

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
