//! Lanes: the branches of `par` regions, and which one each statement is in.
//!
//! Every branch of every `par` is a *lane* (the workflow's top level is lane
//! 0). A statement's lane is the innermost branch that contains it. Lanes
//! name the channels — a message or a decision of lane k travels on the
//! channel (sender, receiver, k), so a message of one branch can never be
//! received by another — and they key a lifeline's action counts where it
//! runs several parts at once, so that the counts do not depend on how its
//! parts interleave. All of it is a function of the workflow's syntax, so
//! every process computes the same lanes.

use troupe_check::ir::{Block, LifelineId, StmtId, StmtKind, Workflow};

/// One lane: a branch of a `par` (or the top level).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lane {
    /// The `par` statement (`None` for the top level, lane 0).
    pub par: Option<StmtId>,
    /// Which branch of it (0-based).
    pub branch: u32,
    /// The lane the `par` is in.
    pub parent: u32,
    /// The lifelines with something to do in the branch, in ⊏ order.
    pub lifelines: Vec<LifelineId>,
}

/// The lanes of one workflow.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Lanes {
    /// Per statement (by `StmtId`), its lane.
    of_stmt: Vec<u32>,
    lanes: Vec<Lane>,
    /// Per `par` statement, the lanes of its branches in order.
    by_par: std::collections::BTreeMap<StmtId, Vec<u32>>,
}

impl Lanes {
    pub fn new(workflow: &Workflow) -> Lanes {
        let mut lanes = Lanes {
            of_stmt: vec![0; workflow.stmt_count as usize],
            lanes: vec![Lane {
                par: None,
                branch: 0,
                parent: 0,
                lifelines: Vec::new(),
            }],
            by_par: std::collections::BTreeMap::new(),
        };
        let all = lanes.block(&workflow.body, 0);
        lanes.lanes[0].lifelines = all;
        lanes
    }

    /// Walks `block` in lane `lane`; returns its lifelines. Blocks nest at
    /// most as deep as the checker allows.
    fn block(&mut self, block: &Block, lane: u32) -> Vec<LifelineId> {
        let mut all = Vec::new();
        for s in &block.stmts {
            if let Some(slot) = self.of_stmt.get_mut(s.id.0 as usize) {
                *slot = lane;
            }
            match &s.kind {
                StmtKind::Msg { from, to, .. } => all.extend([*from, *to]),
                StmtKind::Act { at, .. } => all.push(*at),
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
                    all.push(*owner);
                    all.extend(self.block(a, lane));
                    all.extend(self.block(b, lane));
                }
                StmtKind::Par { branches } => {
                    for (i, b) in branches.iter().enumerate() {
                        let k = self.lanes.len() as u32;
                        self.by_par.entry(s.id).or_default().push(k);
                        self.lanes.push(Lane {
                            par: Some(s.id),
                            branch: i as u32,
                            parent: lane,
                            lifelines: Vec::new(),
                        });
                        let mut ls = self.block(b, k);
                        ls.sort_unstable();
                        ls.dedup();
                        all.extend(ls.iter().copied());
                        self.lanes[k as usize].lifelines = ls;
                    }
                }
            }
        }
        all.sort_unstable();
        all.dedup();
        all
    }

    /// The lane of statement `stmt` (0 for an id out of range).
    pub fn of(&self, stmt: StmtId) -> u32 {
        self.of_stmt.get(stmt.0 as usize).copied().unwrap_or(0)
    }

    pub fn lane(&self, lane: u32) -> Option<&Lane> {
        self.lanes.get(lane as usize)
    }

    /// The lane of branch `branch` of `par` statement `par` (0 when there
    /// is none).
    pub fn branch(&self, par: StmtId, branch: u32) -> u32 {
        self.by_par
            .get(&par)
            .and_then(|b| b.get(branch as usize))
            .copied()
            .unwrap_or(0)
    }

    /// How many lanes there are (the top level included).
    pub fn len(&self) -> usize {
        self.lanes.len()
    }

    /// Whether the workflow has no `par` (only the top level).
    pub fn is_empty(&self) -> bool {
        self.lanes.len() <= 1
    }

    /// Whether lane `inner` is `outer` or lies inside it.
    pub fn within(&self, mut inner: u32, outer: u32) -> bool {
        loop {
            if inner == outer {
                return true;
            }
            if inner == 0 {
                return false;
            }
            inner = self.lanes.get(inner as usize).map_or(0, |l| l.parent);
        }
    }

    /// The lane in which `lifeline` counts the actions of statement `stmt`:
    /// the innermost enclosing branch of a `par` in which the lifeline runs
    /// two or more parts at once, else 0. Within it, the lifeline's steps
    /// are sequential, so the counts are the same under every schedule.
    pub fn key_lane(&self, lifeline: LifelineId, stmt: StmtId) -> u32 {
        let mut lane = self.of(stmt);
        while lane != 0 {
            let Some(info) = self.lanes.get(lane as usize) else {
                return 0;
            };
            let parts = info
                .par
                .and_then(|p| self.by_par.get(&p))
                .map_or(0, |branches| {
                    branches
                        .iter()
                        .filter(|&&b| {
                            self.lanes[b as usize]
                                .lifelines
                                .binary_search(&lifeline)
                                .is_ok()
                        })
                        .count()
                });
            if parts >= 2 {
                return lane;
            }
            lane = info.parent;
        }
        0
    }
}

/// The occurrence of a step key (`Lifeline/action#n`): the count itself
/// in lane 0 (every workflow without concurrent parts), else
/// `lane × 10¹² + count`, so that keys of different lanes never meet, stay
/// stable across runs and still read as numbers
/// (`Bank/deposit#2000000000005`: lane 2, the sixth call). The runtime
/// numbers steps by it, and an upgrade compares two versions' keys by it.
pub const LANE_OCCURRENCES: u64 = 1_000_000_000_000;

/// See [`LANE_OCCURRENCES`].
pub fn occurrence_key(lane: u32, count: u64) -> u64 {
    if lane == 0 {
        count
    } else {
        u64::from(lane)
            .saturating_mul(LANE_OCCURRENCES)
            .saturating_add(count % LANE_OCCURRENCES)
    }
}
