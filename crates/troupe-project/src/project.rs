//! The projection of LANGUAGE.md §5 in one linear pass over the global workflow.
//!
//! Participation is discovered bottom-up while projecting: every lifeline that
//! receives an instruction inside a block opens an instruction list for that
//! block ("frame"), and the lifelines that did so are exactly lifelines(block),
//! including owners of nested constructs and the lifelines they notify. No
//! participation set is ever recomputed over a subtree, nothing is cloned
//! twice, and the work per construct is O(|R| log |R|), so the whole projection
//! is O(|L| log |L| · |P|) in the worst case and O(|P|) for typical workflows.

use crate::canon::Names;
use crate::lanes::Lanes;
use crate::local::{
    Branch, ConstructKind, ControlInfo, DecideIf, DecideWhile, Instr, LocalPar, LocalProgram, Loop,
    Part,
};
use crate::tag::{ControlTag, Fnv64};
use std::collections::HashSet;
use troupe_check::ir::{Block, LifelineId, Program, Stmt, StmtKind, Workflow};

/// How deep `if`/`while` may nest. Deeper IR is rejected rather than risking the
/// stack in this and every later recursive pass (rendering, dropping trees).
pub const MAX_NESTING: usize = 256;

/// Why an IR workflow cannot be projected. The checker never builds such IR;
/// these exist so that a hand-built or corrupted IR yields an error, not a panic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProjectError {
    #[error("statement s{stmt} names lifeline #{lifeline}, but the workflow has {count} lifelines")]
    UnknownLifeline {
        stmt: u32,
        lifeline: u32,
        count: usize,
    },
    #[error("statement s{stmt} sends a message from {name} to itself")]
    SelfMessage { stmt: u32, name: String },
    #[error(
        "statement id s{stmt} is out of range (the workflow has {count} statements) or used twice"
    )]
    BadStmtId { stmt: u32, count: u32 },
    #[error("if/while constructs nest more than {MAX_NESTING} deep")]
    TooDeep,
}

/// All local programs of one workflow.
#[derive(Debug, Clone, PartialEq)]
pub struct Projection {
    /// The workflow's name.
    pub workflow: String,
    /// One program per lifeline, indexed by `LifelineId`.
    pub programs: Vec<LocalProgram>,
    /// Every owned construct, sorted by `StmtId`.
    pub constructs: Vec<ControlInfo>,
    /// The branches of the `par` regions, and each statement's.
    pub lanes: Lanes,
}

impl Projection {
    pub fn program(&self, lifeline: LifelineId) -> Option<&LocalProgram> {
        self.programs.get(lifeline.0 as usize)
    }

    /// The control information of the construct with statement id `stmt`.
    pub fn construct(&self, stmt: troupe_check::ir::StmtId) -> Option<&ControlInfo> {
        self.constructs
            .binary_search_by_key(&stmt, |c| c.stmt)
            .ok()
            .map(|i| &self.constructs[i])
    }

    /// Total projected size: instructions plus static control sends and receives.
    pub fn size(&self) -> usize {
        self.programs.iter().map(LocalProgram::size).sum()
    }
}

/// Projects `workflow` (a workflow of `program`) to one local program per lifeline.
pub fn project(program: &Program, workflow: &Workflow) -> Result<Projection, ProjectError> {
    let n = workflow.lifelines.len();
    let lanes = Lanes::new(workflow);
    let mut p = Projector {
        lanes: &lanes,
        names: Names::new(program, workflow),
        workflow_hash: Fnv64::new().str(&workflow.name).finish(),
        lifelines: n,
        open: (0..n).map(|_| Vec::new()).collect(),
        frames: Vec::new(),
        spare: Vec::new(),
        seen: vec![false; workflow.stmt_count as usize],
        stmt_count: workflow.stmt_count,
        tags: HashSet::new(),
        constructs: Vec::new(),
        slot_a: (0..n).map(|_| None).collect(),
        slot_b: (0..n).map(|_| None).collect(),
        text: String::new(),
    };
    p.open_frame();
    p.block(&workflow.body, Fnv64::new().finish(), 0)?;
    let mut programs: Vec<LocalProgram> = (0..n as u32)
        .map(|l| LocalProgram {
            lifeline: LifelineId(l),
            body: Vec::new(),
        })
        .collect();
    for (l, body) in p.close_frame() {
        programs[l.0 as usize].body = body;
    }
    let mut constructs = p.constructs;
    constructs.sort_unstable_by_key(|c| c.stmt);
    Ok(Projection {
        workflow: workflow.name.clone(),
        programs,
        constructs,
        lanes,
    })
}

struct Projector<'a> {
    lanes: &'a Lanes,
    names: Names<'a>,
    workflow_hash: u64,
    lifelines: usize,
    /// Per lifeline, the instruction lists it has open, tagged with the frame
    /// depth they belong to; the top one receives new instructions.
    open: Vec<Vec<(usize, Vec<Instr>)>>,
    /// Per open frame, the lifelines that opened a list in it (first-touch order).
    frames: Vec<Vec<LifelineId>>,
    /// Emptied frame vectors, reused to avoid an allocation per block.
    spare: Vec<Vec<LifelineId>>,
    seen: Vec<bool>,
    stmt_count: u32,
    tags: HashSet<u64>,
    constructs: Vec<ControlInfo>,
    /// Per-lifeline slots for the parts of the two blocks of the construct being
    /// assembled; always all `None` between constructs.
    slot_a: Vec<Option<Vec<Instr>>>,
    slot_b: Vec<Option<Vec<Instr>>>,
    /// Reused buffer for canonical statement text.
    text: String,
}

impl Projector<'_> {
    fn open_frame(&mut self) {
        let v = self.spare.pop().unwrap_or_default();
        self.frames.push(v);
    }

    fn close_frame(&mut self) -> Vec<(LifelineId, Vec<Instr>)> {
        let depth = self.frames.len().saturating_sub(1);
        let mut touched = self.frames.pop().unwrap_or_default();
        let mut parts = Vec::with_capacity(touched.len());
        for l in touched.drain(..) {
            if let Some(stack) = self.open.get_mut(l.0 as usize)
                && stack.last().is_some_and(|(d, _)| *d == depth)
                && let Some((_, body)) = stack.pop()
            {
                parts.push((l, body));
            }
        }
        self.spare.push(touched);
        parts
    }

    fn emit(&mut self, l: LifelineId, instr: Instr) {
        let depth = self.frames.len().saturating_sub(1);
        let Some(stack) = self.open.get_mut(l.0 as usize) else {
            return;
        };
        if stack.last().is_none_or(|(d, _)| *d != depth) {
            stack.push((depth, Vec::new()));
            if let Some(f) = self.frames.last_mut() {
                f.push(l);
            }
        }
        if let Some((_, body)) = stack.last_mut() {
            body.push(instr);
        }
    }

    fn check_lifeline(&self, stmt: &Stmt, l: LifelineId) -> Result<(), ProjectError> {
        if (l.0 as usize) < self.lifelines {
            Ok(())
        } else {
            Err(ProjectError::UnknownLifeline {
                stmt: stmt.id.0,
                lifeline: l.0,
                count: self.lifelines,
            })
        }
    }

    /// Projects a block and returns its content hash (the Merkle hash of the
    /// canonical text of its statements).
    fn block(&mut self, block: &Block, path: u64, depth: usize) -> Result<u64, ProjectError> {
        let mut h = Fnv64::new();
        h.u64(block.stmts.len() as u64);
        for stmt in &block.stmts {
            let sh = self.stmt(stmt, path, depth)?;
            h.u64(sh);
        }
        Ok(h.finish())
    }

    fn stmt(&mut self, stmt: &Stmt, path: u64, depth: usize) -> Result<u64, ProjectError> {
        let id = stmt.id.0;
        match self.seen.get_mut(id as usize) {
            Some(seen) if !*seen => *seen = true,
            _ => {
                return Err(ProjectError::BadStmtId {
                    stmt: id,
                    count: self.stmt_count,
                });
            }
        }
        self.text.clear();
        self.names.write_stmt_head(&mut self.text, stmt);
        let head = Fnv64::new().str(&self.text).finish();
        match &stmt.kind {
            StmtKind::Msg { from, to, items } => {
                self.check_lifeline(stmt, *from)?;
                self.check_lifeline(stmt, *to)?;
                if from == to {
                    return Err(ProjectError::SelfMessage {
                        stmt: id,
                        name: self.names.lifeline(*from).into_owned(),
                    });
                }
                let send = items.iter().map(|i| i.send.clone()).collect();
                let binds = items.iter().map(|i| i.recv.clone()).collect();
                self.emit(
                    *from,
                    Instr::Send {
                        stmt: stmt.id,
                        to: *to,
                        items: send,
                    },
                );
                self.emit(
                    *to,
                    Instr::Recv {
                        stmt: stmt.id,
                        from: *from,
                        binds,
                    },
                );
                Ok(head)
            }
            StmtKind::Act { at, outputs, call } => {
                self.check_lifeline(stmt, *at)?;
                self.emit(
                    *at,
                    Instr::Act {
                        stmt: stmt.id,
                        outputs: outputs.clone(),
                        call: Box::new(call.clone()),
                    },
                );
                Ok(head)
            }
            StmtKind::Par { branches } => self.par(stmt, branches, head, path, depth),
            StmtKind::If {
                owner,
                guard,
                then: a,
                otherwise: b,
            }
            | StmtKind::While {
                owner,
                guard,
                body: a,
                exit: b,
            } => {
                self.check_lifeline(stmt, *owner)?;
                if depth >= MAX_NESTING {
                    return Err(ProjectError::TooDeep);
                }
                let kind = if matches!(stmt.kind, StmtKind::If { .. }) {
                    ConstructKind::If
                } else {
                    ConstructKind::While
                };
                let inner_path = Fnv64::new().u64(path).u64(u64::from(id)).finish();
                self.open_frame();
                let ha = self.block(a, inner_path, depth + 1)?;
                let parts_a = self.close_frame();
                self.open_frame();
                let hb = self.block(b, inner_path, depth + 1)?;
                let parts_b = self.close_frame();

                let content = Fnv64::new().u64(head).u64(ha).u64(hb).finish();
                let tag = self.fresh_tag(inner_path, content);

                let mut notify: Vec<LifelineId> = parts_a
                    .iter()
                    .chain(parts_b.iter())
                    .map(|(l, _)| *l)
                    .filter(|l| l != owner)
                    .collect();
                notify.sort_unstable();
                notify.dedup();
                for (l, body) in parts_a {
                    self.slot_a[l.0 as usize] = Some(body);
                }
                for (l, body) in parts_b {
                    self.slot_b[l.0 as usize] = Some(body);
                }
                let o = owner.0 as usize;
                let (oa, ob) = (
                    self.slot_a[o].take().unwrap_or_default(),
                    self.slot_b[o].take().unwrap_or_default(),
                );
                let decide = match kind {
                    ConstructKind::If => Instr::DecideIf(Box::new(DecideIf {
                        stmt: stmt.id,
                        guard: guard.clone(),
                        tag,
                        notify: notify.clone(),
                        then: oa,
                        otherwise: ob,
                    })),
                    ConstructKind::While => Instr::DecideWhile(Box::new(DecideWhile {
                        stmt: stmt.id,
                        guard: guard.clone(),
                        tag,
                        notify: notify.clone(),
                        body: oa,
                        exit: ob,
                    })),
                };
                self.emit(*owner, decide);
                for &r in &notify {
                    let i = r.0 as usize;
                    let (ra, rb) = (
                        self.slot_a[i].take().unwrap_or_default(),
                        self.slot_b[i].take().unwrap_or_default(),
                    );
                    let follow = match kind {
                        ConstructKind::If => Instr::Branch(Box::new(Branch {
                            stmt: stmt.id,
                            from: *owner,
                            tag,
                            then: ra,
                            otherwise: rb,
                        })),
                        ConstructKind::While => Instr::Loop(Box::new(Loop {
                            stmt: stmt.id,
                            from: *owner,
                            tag,
                            body: ra,
                            exit: rb,
                        })),
                    };
                    self.emit(r, follow);
                }
                self.constructs.push(ControlInfo {
                    stmt: stmt.id,
                    kind,
                    owner: *owner,
                    tag,
                    notify,
                });
                Ok(content)
            }
        }
    }

    /// `par { P } and { Q } …`: each branch is projected in a frame of its
    /// own; every lifeline of some branch gets one `Par` with its parts.
    fn par(
        &mut self,
        stmt: &Stmt,
        branches: &[Block],
        head: u64,
        path: u64,
        depth: usize,
    ) -> Result<u64, ProjectError> {
        if depth >= MAX_NESTING {
            return Err(ProjectError::TooDeep);
        }
        let mut content = Fnv64::new();
        content.u64(head);
        let mut parts: Vec<Vec<Part>> = (0..self.lifelines).map(|_| Vec::new()).collect();
        let mut touched: Vec<LifelineId> = Vec::new();
        for (i, b) in branches.iter().enumerate() {
            let inner_path = Fnv64::new()
                .u64(path)
                .u64(u64::from(stmt.id.0))
                .u64(i as u64)
                .finish();
            self.open_frame();
            let h = self.block(b, inner_path, depth + 1)?;
            content.u64(h);
            let branch_lane = self.lanes.branch(stmt.id, i as u32);
            for (l, body) in self.close_frame() {
                touched.push(l);
                parts[l.0 as usize].push(Part {
                    branch: i as u32,
                    lane: branch_lane,
                    body,
                });
            }
        }
        touched.sort_unstable();
        touched.dedup();
        for l in touched {
            let parts = std::mem::take(&mut parts[l.0 as usize]);
            self.emit(
                l,
                Instr::Par(Box::new(LocalPar {
                    stmt: stmt.id,
                    parts,
                })),
            );
        }
        Ok(content.finish())
    }

    /// A tag for the construct at `path` with canonical content hash `content`,
    /// distinct from every tag handed out so far. A 64-bit collision is
    /// astronomically unlikely; should one happen, a deterministic salt keeps
    /// tags distinct and still the same in every process.
    fn fresh_tag(&mut self, path: u64, content: u64) -> ControlTag {
        let mut salt = 0u64;
        loop {
            let t = Fnv64::new()
                .u64(self.workflow_hash)
                .u64(path)
                .u64(content)
                .u64(salt)
                .finish();
            if self.tags.insert(t) {
                return ControlTag(t);
            }
            salt += 1;
        }
    }
}
