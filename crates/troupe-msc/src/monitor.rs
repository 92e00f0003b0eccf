//! Online verification: a monitor that checks a run against ⟦P⟧ as its
//! events arrive, in control mode (each owner's decisions are kept; only the
//! control broadcasts are checked as messages), with memory bounded by the
//! workflow and the messages in flight — not by the run's length — and time
//! linear in the number of events, for members and non-members alike.
//!
//! The monitor does not use the projection's programs: it derives each
//! lifeline's view of the global workflow itself (its sends, receives and
//! actions, and for every construct it takes part in, whether it decides or
//! is told), with R = (lifelines(P) ∪ lifelines(Q)) \ {owner} computed from
//! the workflow, in ⊏ order. Only the control tags κ come from the
//! projection, as labels. A lifeline's word must follow its view under the
//! decisions it observes; the FIFO channel of each ordered pair carries what
//! was sent, and a receive must take what its sender sent first. Because
//! every participant of a construct learns the owner's decision through a
//! control message it must receive, all of them follow the same global run.
//!
//! A `par` splits a lifeline's view: at the region its cursor gets one
//! sub-cursor per branch it has a part in, and each event goes to the part
//! whose branch holds the event's statement (a statement lies in exactly
//! one branch), so any interleaving of the parts is followed without
//! search; the lifeline leaves the region when every part has ended. Each
//! branch has its own channels: a channel is (sender, receiver, lane), the
//! lane being the branch of the message's statement.
//!
//! Events must arrive in an order the run could have produced them (a
//! receive after its send), as the runtime and the store deliver them.
//!
//! This file holds the monitor's types and its event loop; the views are
//! derived in `plan.rs`, a cursor follows its view in `follow.rs`, and
//! `snapshot.rs` checkpoints and restores the whole.

use crate::event::{Event, Message};
use crate::semantics::NotMember;
use std::collections::{BTreeMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use troupe_check::Value;
use troupe_check::ir::{Block, LifelineId, Program, StmtId, StmtKind, Workflow};
use troupe_project::{ControlTag, Lanes, ProjectError, Projection};

mod follow;
mod plan;
mod snapshot;

use follow::{expected, leaf_of, route, route_ref, settle, take};
use plan::{lifelines_of, plan};

/// One step of a lifeline's view of the workflow.
#[derive(Debug, Clone)]
enum Op {
    Send {
        to: LifelineId,
        stmt: StmtId,
        arity: usize,
    },
    Recv {
        from: LifelineId,
        stmt: StmtId,
        arity: usize,
    },
    Act {
        stmt: StmtId,
    },
    Branch {
        stmt: StmtId,
        tag: ControlTag,
        role: Role,
        is_loop: bool,
        /// Plans for ⊤ (then / body) and ⊥ (else / exit).
        arms: [usize; 2],
    },
    /// The lifeline's parts of a `par`: (lane of the branch, its plan).
    Par {
        stmt: StmtId,
        parts: Vec<(u32, usize)>,
    },
}

#[derive(Debug, Clone)]
enum Role {
    /// Decides, then tells these lifelines, in ⊏ order.
    Owner(Vec<LifelineId>),
    /// Is told by the owner.
    Told(LifelineId),
}

/// Where a frame of a cursor is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arm {
    // The numbers are a snapshot's encoding (`Monitor::snapshot`).
    Top = 0,
    Branch = 1,
    LoopBody = 2,
    LoopExit = 3,
    /// The outermost frame of a part of a `par`.
    Part = 4,
}

#[derive(Debug, Clone)]
struct Frame {
    plan: usize,
    pos: usize,
    arm: Arm,
}

/// How far a lifeline is into the construct at its position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Head {
    /// Before the decision (or before being told it).
    Before,
    /// The owner decided `d` and has told the first `told` lifelines.
    Telling { d: bool, told: usize },
}

#[derive(Debug, Clone)]
struct Cursor {
    frames: Vec<Frame>,
    head: Head,
    /// Events of this lifeline seen so far (kept by the outermost cursor).
    seen: usize,
    /// While the top frame is at a `par`: one cursor per part, with the
    /// part's lane.
    parts: Vec<(u32, Cursor)>,
}

/// A [`Monitor`]'s state ([`Monitor::snapshot`]), in plain data a store
/// can encode: per lifeline its frames (plan, position, kind) and how far
/// its owner has told a decision, and per channel what is in flight.
#[derive(Debug, Clone, PartialEq)]
pub struct MonitorState {
    pub cursors: Vec<CursorState>,
    /// Non-empty channels: sender, receiver, messages oldest first. A pair
    /// may appear once per lane (the messages' statements tell which).
    pub channels: Vec<(LifelineId, LifelineId, Vec<InFlight>)>,
    /// Events checked before the state was taken.
    pub events: u64,
}

/// One lifeline's place in its view of the workflow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CursorState {
    /// (plan, position, frame kind) from the outermost frame in.
    pub frames: Vec<(u32, u32, u8)>,
    /// The owner decided and has told this many lifelines.
    pub telling: Option<(bool, u32)>,
    /// Events of this lifeline seen so far.
    pub seen: u64,
    /// Inside a `par`: the lifeline's parts, each with its lane.
    pub parts: Vec<(u32, CursorState)>,
}

/// Checks one run as it goes.
#[derive(Debug, Clone)]
pub struct Monitor {
    names: Arc<[String]>,
    /// Per lifeline, its plans: `plans[l][0]` is the top-level one. Shared:
    /// a fresh monitor of the same workflow ([`Monitor::fresh`]) copies
    /// nothing of them.
    plans: Arc<Vec<Vec<Vec<Op>>>>,
    lanes: Arc<Lanes>,
    cursors: Vec<Cursor>,
    /// What is in flight on each channel (sender, receiver, lane) that has
    /// ever carried something.
    channels: BTreeMap<(LifelineId, LifelineId, u32), VecDeque<InFlight>>,
    events: u64,
    failed: Option<Box<NotMember>>,
}

/// A message in flight as the monitor keeps it: its statement (or control
/// decision) without its values, which it would have to copy for every
/// message, but with their fingerprint, so that a receive of other values
/// than were sent is still caught (also after a checkpoint).
#[derive(Debug, Clone, PartialEq)]
pub struct InFlight {
    /// The message, a data message's values left out (`None`).
    pub msg: Message,
    /// The data message's values' fingerprint, when they were known.
    pub values: Option<u64>,
}

impl InFlight {
    /// The monitor's record of `msg` (a state written before fingerprints
    /// holds the values themselves: they are fingerprinted here).
    pub fn of(msg: &Message) -> InFlight {
        match msg {
            Message::Data { stmt, values } => InFlight {
                msg: Message::Data {
                    stmt: *stmt,
                    values: None,
                },
                values: values.as_deref().map(fingerprint),
            },
            control @ Message::Control { .. } => InFlight {
                msg: control.clone(),
                values: None,
            },
        }
    }

    /// Whether `received` can be this message: the same statement or
    /// decision, and the same values when both sides know them.
    fn agrees_with(&self, received: &Message) -> bool {
        self.msg.agrees_with(received)
            && match (self.values, received) {
                (
                    Some(sent),
                    Message::Data {
                        values: Some(got), ..
                    },
                ) => sent == fingerprint(got),
                _ => true,
            }
    }
}

/// A fingerprint of a message's values: equal values (as `Value`'s `==`
/// has them: `0.0 == -0.0`, NaN equal to NaN) give equal fingerprints.
fn fingerprint(values: &[Value]) -> u64 {
    fn feed(h: &mut impl Hasher, v: &Value) {
        match v {
            Value::Bool(b) => h.write_u8(u8::from(*b)),
            Value::Int(i) => h.write_i64(*i),
            Value::Float(x) => h.write_u64(if x.is_nan() {
                f64::NAN.to_bits()
            } else if *x == 0.0 {
                0
            } else {
                x.to_bits()
            }),
            Value::Text(t) => h.write(t.as_bytes()),
            Value::Enum(e, i) => {
                h.write_u32(e.0);
                h.write_u32(*i);
            }
            Value::Record(r, fields) => {
                h.write_u32(r.0);
                fields.iter().for_each(|f| feed(h, f));
            }
            Value::List(items) => {
                h.write_usize(items.len());
                items.iter().for_each(|i| feed(h, i));
            }
            // Rare in messages; its structure is left to `==` elsewhere.
            Value::Json(_) => h.write_u8(0xff),
        }
    }
    let mut h = rustc_hash::FxHasher::default();
    h.write_usize(values.len());
    for v in values {
        std::mem::discriminant(v).hash(&mut h);
        feed(&mut h, v);
    }
    h.finish()
}

/// What an event did to the cursor it went to.
enum Took {
    /// A data or control message went on a channel.
    Sent(LifelineId, InFlight),
    /// A message is to be taken off the channel from this lifeline (checked
    /// by the caller against the event's).
    Received(LifelineId),
    Nothing,
}

impl Monitor {
    /// The monitor of runs of `workflow`.
    pub fn new(program: &Program, workflow: &Workflow) -> Result<Monitor, ProjectError> {
        let projection = troupe_project::project(program, workflow)?;
        Ok(Monitor::with_projection(workflow, &projection))
    }

    /// The monitor of `workflow` whose control tags are those of
    /// `projection` (a caller that projected already need not again).
    pub fn with_projection(workflow: &Workflow, projection: &Projection) -> Monitor {
        let tag = |s: StmtId| projection.construct(s).map_or(ControlTag(0), |c| c.tag);
        let n = workflow.lifelines.len();
        let lanes = Lanes::new(workflow);
        let mut participants = BTreeMap::new();
        lifelines_of(&workflow.body, &mut participants);
        let plans = (0..n)
            .map(|l| {
                let mut plans = Vec::new();
                plan(
                    &workflow.body,
                    LifelineId(l as u32),
                    &participants,
                    &lanes,
                    &tag,
                    &mut plans,
                );
                plans
            })
            .collect();
        Monitor {
            names: workflow.lifelines.iter().map(|l| l.name.clone()).collect(),
            plans: Arc::new(plans),
            lanes: Arc::new(lanes),
            cursors: start(n),
            channels: BTreeMap::new(),
            events: 0,
            failed: None,
        }
    }

    /// A monitor of the same workflow at the start of a run: shares the
    /// plans, so it costs one cursor per lifeline.
    pub fn fresh(&self) -> Monitor {
        Monitor {
            names: self.names.clone(),
            plans: self.plans.clone(),
            lanes: self.lanes.clone(),
            cursors: start(self.cursors.len()),
            channels: BTreeMap::new(),
            events: 0,
            failed: None,
        }
    }

    /// The statement lifeline `l` takes part in next (in its first part
    /// still running, inside a `par`); `None` when its word is complete.
    /// For saying where a run stands, e.g. why an upgrade cannot go on.
    pub fn next_stmt(&self, l: LifelineId) -> Option<StmtId> {
        let plans = self.plans.get(l.0 as usize)?;
        let mut c = self.cursors.get(l.0 as usize)?.clone();
        settle(plans, &mut c);
        let leaf = leaf_of(&c);
        let top = leaf.frames.last()?;
        Some(match plans[top.plan].get(top.pos)? {
            Op::Send { stmt, .. }
            | Op::Recv { stmt, .. }
            | Op::Act { stmt }
            | Op::Branch { stmt, .. }
            | Op::Par { stmt, .. } => *stmt,
        })
    }

    /// Events checked so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// The first event that did not fit, if any.
    pub fn failure(&self) -> Option<&NotMember> {
        self.failed.as_deref()
    }

    /// Takes the next event of `lifeline`. After the first failure, later
    /// events are ignored and the failure is returned again.
    pub fn event(&mut self, lifeline: LifelineId, event: &Event) -> Result<(), Box<NotMember>> {
        if let Some(f) = &self.failed {
            return Err(f.clone());
        }
        self.events += 1;
        let result = self.step(lifeline, event);
        if let Err(e) = &result {
            self.failed = Some(e.clone());
        }
        result
    }

    /// Whether the events so far make a complete run (`prefix`: the prefix
    /// of one).
    pub fn finish(&mut self, prefix: bool) -> Result<(), Box<NotMember>> {
        if let Some(f) = &self.failed {
            return Err(f.clone());
        }
        if prefix {
            return Ok(());
        }
        for l in 0..self.cursors.len() {
            let lifeline = LifelineId(l as u32);
            settle(&self.plans[l], &mut self.cursors[l]);
            let c = &self.cursors[l];
            if !c.frames.is_empty() {
                let expected = expected(&self.plans[l], leaf_of(c), &self.names);
                return Err(self.not_member(lifeline, None, expected));
            }
        }
        if let Some(((from, to, _), q)) = self.channels.iter().find(|(_, q)| !q.is_empty()) {
            let msg = q.front().map(|f| f.msg.clone());
            let (from, to) = (*from, *to);
            return Err(Box::new(NotMember {
                lifeline: Some(to),
                index: self.cursors[to.0 as usize].seen,
                event: msg.map(|m| Event::Recv { from, msg: m }),
                expected: format!(
                    "a message from {} to {} was never received",
                    self.name(from),
                    self.name(to)
                ),
                lifeline_name: self.name(to),
                event_text: String::new(),
            }));
        }
        Ok(())
    }

    fn name(&self, l: LifelineId) -> String {
        self.names
            .get(l.0 as usize)
            .cloned()
            .unwrap_or_else(|| format!("#{}", l.0))
    }

    fn not_member(&self, l: LifelineId, event: Option<&Event>, expected: String) -> Box<NotMember> {
        Box::new(NotMember {
            lifeline: Some(l),
            index: self.cursors.get(l.0 as usize).map_or(0, |c| c.seen),
            event_text: event.map(|e| e.describe(&self.names)).unwrap_or_default(),
            event: event.cloned(),
            expected,
            lifeline_name: self.name(l),
        })
    }

    fn step(&mut self, l: LifelineId, event: &Event) -> Result<(), Box<NotMember>> {
        let li = l.0 as usize;
        if li >= self.cursors.len() {
            return Err(Box::new(NotMember {
                lifeline: Some(l),
                index: 0,
                event: Some(event.clone()),
                expected: "no such lifeline".into(),
                lifeline_name: format!("#{}", l.0),
                event_text: event.describe(&self.names),
            }));
        }
        // Borrowed field by field: cloning the plans' `Arc` to lend them
        // cost two atomic operations per event, most of the monitor's time.
        let plans = &self.plans[li];
        let lane = self.lanes.of(event.stmt());
        let root = &mut self.cursors[li];
        settle(plans, root);
        let took = {
            let leaf = route(root, lane, &self.lanes);
            take(plans, leaf, event)
        };
        let took = match took {
            Some(t) => t,
            None => {
                let c = &self.cursors[li];
                let leaf = route_ref(c, lane, &self.lanes);
                let expected = expected(plans, leaf, &self.names);
                return Err(self.not_member(l, Some(event), expected));
            }
        };
        match took {
            Took::Sent(to, msg) => {
                let lane = self.lanes.of(msg.msg.stmt());
                self.channels
                    .entry((l, to, lane))
                    .or_default()
                    .push_back(msg);
            }
            Took::Received(from) => {
                if let Event::Recv { msg, .. } = event {
                    self.receive(l, from, msg, event)?;
                }
            }
            Took::Nothing => {}
        }
        self.cursors[li].seen += 1;
        Ok(())
    }

    /// Takes the first message in flight from `from` to `l` on the
    /// message's lane: it must be the one received.
    fn receive(
        &mut self,
        l: LifelineId,
        from: LifelineId,
        msg: &Message,
        event: &Event,
    ) -> Result<(), Box<NotMember>> {
        let lane = self.lanes.of(msg.stmt());
        let front = self
            .channels
            .get_mut(&(from, l, lane))
            .and_then(VecDeque::pop_front);
        match front {
            Some(sent) if sent.agrees_with(msg) => Ok(()),
            Some(sent) => Err(self.not_member(
                l,
                Some(event),
                format!(
                    "{} sent {} first on this channel",
                    self.name(from),
                    Event::Send {
                        to: l,
                        msg: sent.msg
                    }
                    .describe(&self.names)
                ),
            )),
            None => Err(self.not_member(
                l,
                Some(event),
                format!("nothing was sent by {} to receive", self.name(from)),
            )),
        }
    }
}

/// Every lifeline at the start of its view.
fn start(n: usize) -> Vec<Cursor> {
    (0..n)
        .map(|_| Cursor {
            frames: vec![Frame {
                plan: 0,
                pos: 0,
                arm: Arm::Top,
            }],
            head: Head::Before,
            seen: 0,
            parts: Vec::new(),
        })
        .collect()
}
