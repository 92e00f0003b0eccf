//! The trace of a run: per lifeline, its events with logical timestamps.

use troupe_check::ir::{Block, LifelineId, Program, Stmt, StmtId, StmtKind, Workflow};
use troupe_msc::{Event, Execution, Message};
use troupe_project::Names;

/// One event of one lifeline at logical time `time` (a global counter of the
/// run's scheduler: a valid linearisation of the causal order).
#[derive(Debug, Clone, PartialEq)]
pub struct TraceEntry {
    pub time: u64,
    pub lifeline: LifelineId,
    pub event: Event,
}

/// Everything a run did, in the order its scheduler did it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Trace {
    pub entries: Vec<TraceEntry>,
}

impl Trace {
    /// A trace of recorded events (e.g. read back from a store), numbered
    /// from `first_time` in their order.
    pub fn from_events(
        first_time: u64,
        events: impl IntoIterator<Item = (LifelineId, Event)>,
    ) -> Trace {
        let entries = events
            .into_iter()
            .zip(first_time..)
            .map(|((lifeline, event), time)| TraceEntry {
                time,
                lifeline,
                event,
            })
            .collect();
        Trace { entries }
    }

    /// The tuple of local words of the run.
    pub fn execution(&self, lifelines: usize) -> Execution {
        let mut exec = Execution::new(lifelines);
        for e in &self.entries {
            if let Some(word) = exec.words.get_mut(e.lifeline.0 as usize) {
                word.push(e.event.clone());
            }
        }
        exec
    }

    /// One line per event, for people: the time, the lifeline, and what it
    /// did, with the statement it comes from.
    pub fn render(&self, program: &Program, workflow: &Workflow) -> String {
        let names = Names::new(program, workflow);
        let mut stmts = vec![None; workflow.stmt_count as usize];
        index_stmts(&workflow.body, &mut stmts);
        let head = |id: StmtId| {
            stmts
                .get(id.0 as usize)
                .copied()
                .flatten()
                .map(|s| names.stmt_head(s))
                .unwrap_or_default()
        };
        let values = |v: &Option<Vec<troupe_check::Value>>| {
            v.as_ref()
                .map(|v| {
                    v.iter()
                        .map(|x| names.value(x))
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default()
        };
        let mut out = String::new();
        for e in &self.entries {
            let who = names.lifeline(e.lifeline);
            let line = match &e.event {
                Event::Send {
                    to,
                    msg: Message::Data { values: v, .. },
                } => format!("send ({}) to {}", values(v), names.lifeline(*to)),
                Event::Recv {
                    from,
                    msg: Message::Data { values: v, .. },
                } => format!("recv ({}) from {}", values(v), names.lifeline(*from)),
                Event::Send {
                    to,
                    msg: Message::Control { tag, decision, .. },
                } => {
                    format!(
                        "send decision {} {tag} to {}",
                        if *decision { "⊤" } else { "⊥" },
                        names.lifeline(*to)
                    )
                }
                Event::Recv {
                    from,
                    msg: Message::Control { tag, decision, .. },
                } => {
                    format!(
                        "recv decision {} {tag} from {}",
                        if *decision { "⊤" } else { "⊥" },
                        names.lifeline(*from)
                    )
                }
                Event::Act { outputs, .. } => format!("act → {}", values(outputs)),
                Event::Decide { tag, decision, .. } => {
                    format!("decide {} {tag}", if *decision { "⊤" } else { "⊥" })
                }
            };
            out.push_str(&format!(
                "{:>6}  {:<12} {:<44} // {}\n",
                e.time,
                who,
                line,
                head(e.event.stmt())
            ));
        }
        out
    }

    /// The trace as JSON records.
    pub fn to_json(&self, program: &Program, workflow: &Workflow) -> serde_json::Value {
        let names = Names::new(program, workflow);
        let values = |v: &Option<Vec<troupe_check::Value>>| {
            v.as_ref().map(|v| {
                v.iter()
                    .map(|x| x.to_json(&program.types))
                    .collect::<Vec<_>>()
            })
        };
        let entries: Vec<_> = self
            .entries
            .iter()
            .map(|e| {
                let mut obj = serde_json::json!({ "time": e.time, "lifeline": names.lifeline(e.lifeline) });
                let extra = match &e.event {
                    Event::Send { to, msg } | Event::Recv { from: to, msg } => {
                        let kind = if matches!(e.event, Event::Send { .. }) { "send" } else { "recv" };
                        let peer = if kind == "send" { "to" } else { "from" };
                        let mut m = serde_json::json!({ "kind": kind, peer: names.lifeline(*to), "stmt": msg.stmt().0 });
                        match msg {
                            Message::Data { values: v, .. } => m["values"] = serde_json::json!(values(v)),
                            Message::Control { tag, decision, .. } => {
                                m["control"] = serde_json::json!({ "tag": tag.hex(), "decision": decision });
                            }
                        }
                        m
                    }
                    Event::Act { stmt, outputs } => serde_json::json!({ "kind": "act", "stmt": stmt.0, "outputs": values(outputs) }),
                    Event::Decide { stmt, tag, decision } => {
                        serde_json::json!({ "kind": "decide", "stmt": stmt.0, "tag": tag.hex(), "decision": decision })
                    }
                };
                if let (Some(o), Some(x)) = (obj.as_object_mut(), extra.as_object()) {
                    o.extend(x.clone());
                }
                obj
            })
            .collect();
        serde_json::Value::Array(entries)
    }
}

fn index_stmts<'a>(block: &'a Block, out: &mut [Option<&'a Stmt>]) {
    for stmt in &block.stmts {
        if let Some(slot) = out.get_mut(stmt.id.0 as usize) {
            *slot = Some(stmt);
        }
        match &stmt.kind {
            StmtKind::If {
                then, otherwise, ..
            } => {
                index_stmts(then, out);
                index_stmts(otherwise, out);
            }
            StmtKind::While { body, exit, .. } => {
                index_stmts(body, out);
                index_stmts(exit, out);
            }
            StmtKind::Par { branches } => branches.iter().for_each(|b| index_stmts(b, out)),
            StmtKind::Msg { .. } | StmtKind::Act { .. } => {}
        }
    }
}
