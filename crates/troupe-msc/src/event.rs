//! Events and executions: the vocabulary of the MSC semantics.
//!
//! An execution is a tuple of local words, one per lifeline (indexed by
//! `LifelineId`). Events carry the `StmtId` of the global statement they come
//! from, and optionally the concrete values a runtime saw, so that a recorded
//! run can be checked against the workflow and drawn as a chart.

use std::fmt;
use troupe_check::Value;
use troupe_check::ir::{LifelineId, StmtId};
use troupe_project::ControlTag;

/// What travels on a channel. Control messages are a variant of their own: no
/// data payload can be confused with a decision.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// The payload of `msg` statement `stmt`; `values` are the concrete items
    /// when known (a recorded run), `None` when abstract.
    Data {
        stmt: StmtId,
        values: Option<Vec<Value>>,
    },
    /// The decision of the owner of construct `stmt`, tagged κ.
    Control {
        stmt: StmtId,
        tag: ControlTag,
        decision: bool,
    },
}

impl Message {
    pub fn stmt(&self) -> StmtId {
        match self {
            Message::Data { stmt, .. } | Message::Control { stmt, .. } => *stmt,
        }
    }

    pub fn is_control(&self) -> bool {
        matches!(self, Message::Control { .. })
    }

    /// Whether a sent and a received message agree: same statement, and equal
    /// values when both sides know them.
    pub fn agrees_with(&self, other: &Message) -> bool {
        match (self, other) {
            (
                Message::Data {
                    stmt: a,
                    values: va,
                },
                Message::Data {
                    stmt: b,
                    values: vb,
                },
            ) => {
                a == b
                    && match (va, vb) {
                        (Some(x), Some(y)) => x == y,
                        _ => true,
                    }
            }
            (Message::Control { .. }, Message::Control { .. }) => self == other,
            _ => false,
        }
    }
}

/// One event of one lifeline. The lifeline itself is implicit: it is the word
/// the event belongs to.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Send {
        to: LifelineId,
        msg: Message,
    },
    Recv {
        from: LifelineId,
        msg: Message,
    },
    /// The action of `act` statement `stmt`, with its outputs when known.
    Act {
        stmt: StmtId,
        outputs: Option<Vec<Value>>,
    },
    /// The owner of construct `stmt` decided. Local, and a control event: it
    /// is erased together with control messages.
    Decide {
        stmt: StmtId,
        tag: ControlTag,
        decision: bool,
    },
}

impl Event {
    pub fn stmt(&self) -> StmtId {
        match self {
            Event::Send { msg, .. } | Event::Recv { msg, .. } => msg.stmt(),
            Event::Act { stmt, .. } | Event::Decide { stmt, .. } => *stmt,
        }
    }

    /// Control sends and receives, and decisions.
    pub fn is_control(&self) -> bool {
        match self {
            Event::Send { msg, .. } | Event::Recv { msg, .. } => msg.is_control(),
            Event::Act { .. } => false,
            Event::Decide { .. } => true,
        }
    }

    /// The event without its concrete values: hashable, for deduplication.
    pub fn key(&self) -> EventKey {
        match self {
            Event::Send { to, msg } => EventKey::Send(*to, msg_key(msg)),
            Event::Recv { from, msg } => EventKey::Recv(*from, msg_key(msg)),
            Event::Act { stmt, .. } => EventKey::Act(*stmt),
            Event::Decide { stmt, decision, .. } => EventKey::Decide(*stmt, *decision),
        }
    }

    /// The same event with concrete values dropped.
    pub fn abstracted(&self) -> Event {
        match self {
            Event::Send { to, msg } => Event::Send {
                to: *to,
                msg: abstract_msg(msg),
            },
            Event::Recv { from, msg } => Event::Recv {
                from: *from,
                msg: abstract_msg(msg),
            },
            Event::Act { stmt, .. } => Event::Act {
                stmt: *stmt,
                outputs: None,
            },
            Event::Decide { .. } => self.clone(),
        }
    }
}

fn abstract_msg(m: &Message) -> Message {
    match m {
        Message::Data { stmt, .. } => Message::Data {
            stmt: *stmt,
            values: None,
        },
        Message::Control { .. } => m.clone(),
    }
}

fn msg_key(m: &Message) -> (StmtId, Option<bool>) {
    match m {
        Message::Data { stmt, .. } => (*stmt, None),
        Message::Control { stmt, decision, .. } => (*stmt, Some(*decision)),
    }
}

/// The value-free identity of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventKey {
    Send(LifelineId, (StmtId, Option<bool>)),
    Recv(LifelineId, (StmtId, Option<bool>)),
    Act(StmtId),
    Decide(StmtId, bool),
}

/// A tuple of local words, one per lifeline, indexed by `LifelineId`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Execution {
    pub words: Vec<Vec<Event>>,
}

impl Execution {
    pub fn new(lifelines: usize) -> Self {
        Execution {
            words: vec![Vec::new(); lifelines],
        }
    }

    /// One order in which the events could have happened (every receive
    /// after its send; round robin over the lifelines), as the online
    /// monitor takes them; `None` when there is none (a receive of a
    /// message never sent, or a causal cycle).
    pub fn linearize(&self) -> Option<Vec<(LifelineId, Event)>> {
        self.linearize_lanes(&|_| 0)
    }

    /// [`Execution::linearize`] with the channels of each lane (the
    /// branches of `par` regions, by statement) apart.
    pub fn linearize_lanes(
        &self,
        lane: &dyn Fn(StmtId) -> u32,
    ) -> Option<Vec<(LifelineId, Event)>> {
        let n = self.words.len();
        let mut next = vec![0usize; n];
        let mut in_flight = std::collections::HashMap::<(usize, usize, u32), usize>::new();
        let total: usize = self.words.iter().map(Vec::len).sum();
        let mut out = Vec::with_capacity(total);
        while out.len() < total {
            let mut moved = false;
            for (l, at) in next.iter_mut().enumerate() {
                let Some(e) = self.words[l].get(*at) else {
                    continue;
                };
                match e {
                    Event::Recv { from, msg } => {
                        let k = in_flight
                            .entry((from.0 as usize, l, lane(msg.stmt())))
                            .or_default();
                        if *k == 0 {
                            continue;
                        }
                        *k -= 1;
                    }
                    Event::Send { to, msg } => {
                        *in_flight
                            .entry((l, to.0 as usize, lane(msg.stmt())))
                            .or_default() += 1;
                    }
                    _ => {}
                }
                out.push((LifelineId(l as u32), e.clone()));
                *at += 1;
                moved = true;
            }
            if !moved {
                return None;
            }
        }
        Some(out)
    }

    pub fn word(&self, l: LifelineId) -> &[Event] {
        self.words.get(l.0 as usize).map_or(&[], Vec::as_slice)
    }

    pub fn len(&self) -> usize {
        self.words.iter().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.words.iter().all(Vec::is_empty)
    }

    /// The execution without control events (decisions, control messages).
    pub fn erase_control(&self) -> Execution {
        Execution {
            words: self
                .words
                .iter()
                .map(|w| w.iter().filter(|e| !e.is_control()).cloned().collect())
                .collect(),
        }
    }

    /// The execution with all concrete values dropped.
    pub fn abstracted(&self) -> Execution {
        Execution {
            words: self
                .words
                .iter()
                .map(|w| w.iter().map(Event::abstracted).collect())
                .collect(),
        }
    }

    /// The value-free identity of the whole execution.
    pub fn key(&self) -> Vec<Vec<EventKey>> {
        self.words
            .iter()
            .map(|w| w.iter().map(Event::key).collect())
            .collect()
    }
}

impl Event {
    /// The event in words, naming lifelines by `names` (indexed by id).
    pub fn describe(&self, names: &[String]) -> String {
        let name = |l: &LifelineId| {
            names
                .get(l.0 as usize)
                .cloned()
                .unwrap_or_else(|| format!("#{}", l.0))
        };
        fn msg(m: &Message) -> String {
            match m {
                Message::Data { stmt, .. } => format!("s{}", stmt.0),
                Message::Control {
                    stmt,
                    tag,
                    decision,
                } => {
                    format!("{} {tag} (s{})", if *decision { "⊤" } else { "⊥" }, stmt.0)
                }
            }
        }
        match self {
            Event::Send { to, msg: m } => format!("send {} to {}", msg(m), name(to)),
            Event::Recv { from, msg: m } => format!("recv {} from {}", msg(m), name(from)),
            other => other.to_string(),
        }
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn msg(m: &Message) -> String {
            match m {
                Message::Data { stmt, .. } => format!("s{}", stmt.0),
                Message::Control {
                    stmt,
                    tag,
                    decision,
                } => {
                    format!("{} {tag} (s{})", if *decision { "⊤" } else { "⊥" }, stmt.0)
                }
            }
        }
        match self {
            Event::Send { to, msg: m } => write!(f, "send {} to lifeline #{}", msg(m), to.0),
            Event::Recv { from, msg: m } => write!(f, "recv {} from lifeline #{}", msg(m), from.0),
            Event::Act { stmt, .. } => write!(f, "act s{}", stmt.0),
            Event::Decide { stmt, decision, .. } => {
                write!(
                    f,
                    "decide {} (s{})",
                    if *decision { "⊤" } else { "⊥" },
                    stmt.0
                )
            }
        }
    }
}
