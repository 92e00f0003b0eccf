//! Recomputing a recorded run's causal decisions from its chart, as its
//! events stream by: what `troupe run` and `troupe verify` do, in memory
//! bounded by the workflow and the messages in flight (never by the run's
//! history).
//!
//! The information a decision may use flows along the *recorded* chart:
//! each recorded send leaves a snapshot of its lifeline's view on the
//! chart's channel (sender, receiver, lane), each recorded receive merges
//! the snapshot of the send it matches (FIFO), and each lifeline's
//! variables are replayed from the run's inputs, receives and actions. So
//! the messages' metadata is not trusted — it is not even recorded — and a
//! decision that does not follow from what its owner could have seen on
//! the chart (a lost or altered metadata, a view lost at a restore, a
//! forged record) is named. The evaluation itself is the monitor's
//! ([`super::View`]), whose agreement with the logic's semantics the
//! brute-force reference of `troupe-oracle` and [`super::denote`] check in
//! the tests.

use super::{Guards, Meta, View};
use crate::event::{Event, Message};
use std::collections::VecDeque;
use std::sync::Arc;
use troupe_check::Value;
use troupe_check::ir::{LifelineId, Recv, StmtId, StmtKind, VarId, Workflow};
use troupe_check::types::TypeTable;

/// A recorded causal decision that is not its guard's value there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Mismatch {
    #[error("event {event} of lifeline #{}: decided {recorded}, but the guard is {value} on the recorded chart", lifeline.0)]
    Decision {
        lifeline: LifelineId,
        /// Its index in the lifeline's word.
        event: u64,
        stmt: StmtId,
        recorded: bool,
        value: bool,
    },
    #[error("a receive of lifeline #{} matches no recorded send", .0 .0)]
    Unsent(LifelineId),
    #[error("the run has {0} input(s), the workflow {1}")]
    Inputs(usize, usize),
}

/// Where a statement's recorded values go: a message's items, an
/// action's outputs (by statement id).
#[derive(Debug, Clone)]
enum Binds {
    Msg(Vec<Recv>),
    Act(Vec<Option<VarId>>),
    None,
}

/// Which lane (branch of a `par`) a statement's messages travel in.
pub type LaneOf = Box<dyn Fn(StmtId) -> u32 + Send + Sync>;

/// The recomputation, fed one recorded event at a time in an order in
/// which they could have happened (the recording order is one).
pub struct Recheck {
    guards: Arc<Guards>,
    binds: Vec<Binds>,
    types: Arc<TypeTable>,
    lane: LaneOf,
    views: Vec<View>,
    env: Vec<Option<Value>>,
    /// Events so far, per lifeline.
    counts: Vec<u64>,
    /// The chart's channels (sender, receiver, lane) with the snapshots of
    /// their sends not yet received. A run uses few channels: a list.
    channels: Vec<((u32, u32, u32), VecDeque<Meta>)>,
    decisions: u64,
}

impl std::fmt::Debug for Recheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recheck")
            .field("decisions", &self.decisions)
            .finish()
    }
}

impl Recheck {
    /// `None` when the workflow has no causal guards (nothing to recheck).
    pub fn new(
        workflow: &Workflow,
        types: Arc<TypeTable>,
        inputs: &[Value],
        lane: LaneOf,
    ) -> Option<Result<Recheck, Mismatch>> {
        let guards = Guards::new(workflow)?;
        if inputs.len() != workflow.inputs.len() {
            return Some(Err(Mismatch::Inputs(inputs.len(), workflow.inputs.len())));
        }
        let mut env = vec![None; workflow.vars.len()];
        for (v, x) in workflow.inputs.iter().zip(inputs) {
            env[v.0 as usize] = Some(x.clone());
        }
        let n = workflow.lifelines.len();
        Some(Ok(Recheck {
            views: (0..n as u32).map(|l| guards.start(LifelineId(l))).collect(),
            guards,
            binds: workflow
                .stmts_by_id()
                .into_iter()
                .map(|s| match s.map(|s| &s.kind) {
                    Some(StmtKind::Msg { items, .. }) => {
                        Binds::Msg(items.iter().map(|i| i.recv.clone()).collect())
                    }
                    Some(StmtKind::Act { outputs, .. }) => Binds::Act(outputs.clone()),
                    _ => Binds::None,
                })
                .collect(),
            types,
            lane,
            env,
            counts: vec![0; n],
            channels: Vec::new(),
            decisions: 0,
        }))
    }

    /// The recomputation from a point of the run instead of its start (a
    /// history that retention pruned starts at a checkpoint): the
    /// lifelines' variables (by workflow variable), views and event counts
    /// there, and the views of the messages then in flight, per channel
    /// (sender, receiver, lane), oldest first. What came before was
    /// decided by the same monitor as the run went; it is taken as given.
    pub fn resume(
        mut self,
        env: Vec<Option<Value>>,
        views: Vec<View>,
        counts: Vec<u64>,
        in_flight: Vec<((u32, u32, u32), Meta)>,
    ) -> Result<Recheck, String> {
        if env.len() != self.env.len() || counts.len() != self.counts.len() {
            return Err("the checkpoint does not fit the workflow".into());
        }
        if views.len() != self.views.len()
            || views
                .iter()
                .enumerate()
                .any(|(i, v)| v.lifeline.0 as usize != i || !v.fits(&self.guards))
        {
            return Err("the checkpoint's causal views do not fit the workflow".into());
        }
        self.env = env;
        self.views = views;
        self.counts = counts;
        for (key, meta) in in_flight {
            match self.channels.iter_mut().find(|(k, _)| *k == key) {
                Some((_, q)) => q.push_back(meta),
                None => self.channels.push((key, VecDeque::from([meta]))),
            }
        }
        Ok(self)
    }

    /// The causal decisions checked so far.
    pub fn decisions(&self) -> u64 {
        self.decisions
    }

    /// The next recorded event.
    pub fn event(&mut self, l: LifelineId, event: &Event) -> Result<(), Mismatch> {
        let li = l.0 as usize;
        let Some(view) = self.views.get_mut(li) else {
            return Ok(());
        };
        let index = self.counts[li];
        self.counts[li] += 1;
        match event {
            Event::Recv { from, msg } => {
                let key = (from.0, l.0, (self.lane)(msg.stmt()));
                let meta = self
                    .channels
                    .iter_mut()
                    .find(|(k, _)| *k == key)
                    .and_then(|(_, q)| q.pop_front())
                    .ok_or(Mismatch::Unsent(l))?;
                if let Message::Data {
                    stmt,
                    values: Some(got),
                } = msg
                    && let Some(Binds::Msg(items)) = self.binds.get(stmt.0 as usize)
                {
                    for (item, v) in items.iter().zip(got) {
                        if let Recv::Bind(x) = item {
                            self.env[x.0 as usize] = Some(v.clone());
                        }
                    }
                }
                view.receive(&self.guards, &meta);
                let items = match msg {
                    Message::Data { stmt, .. } => match self.binds.get(stmt.0 as usize) {
                        Some(Binds::Msg(items)) => items.as_slice(),
                        _ => &[],
                    },
                    Message::Control { .. } => &[],
                };
                let bound = |v: VarId| items.contains(&Recv::Bind(v));
                view.step(&self.guards, &self.env, &self.types, &bound);
            }
            Event::Send { to, msg } => {
                view.step(&self.guards, &self.env, &self.types, &|_| false);
                let key = (l.0, to.0, (self.lane)(msg.stmt()));
                let meta = view.meta();
                match self.channels.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, q)) => q.push_back(meta),
                    None => self.channels.push((key, VecDeque::from([meta]))),
                }
            }
            Event::Act { stmt, outputs } => {
                let outs = match self.binds.get(stmt.0 as usize) {
                    Some(Binds::Act(outs)) => outs.as_slice(),
                    _ => &[],
                };
                if let Some(got) = outputs {
                    for (o, v) in outs.iter().zip(got) {
                        if let Some(x) = o {
                            self.env[x.0 as usize] = Some(v.clone());
                        }
                    }
                }
                let bound = |v: VarId| outs.contains(&Some(v));
                view.step(&self.guards, &self.env, &self.types, &bound);
            }
            Event::Decide { stmt, decision, .. } => {
                if self.guards.top(*stmt).is_none() {
                    view.step(&self.guards, &self.env, &self.types, &|_| false);
                    return Ok(());
                }
                let value = view.decide(&self.guards, *stmt, &self.env, &self.types);
                self.decisions += 1;
                if value != *decision {
                    return Err(Mismatch::Decision {
                        lifeline: l,
                        event: index,
                        stmt: *stmt,
                        recorded: *decision,
                        value,
                    });
                }
            }
        }
        Ok(())
    }
}
