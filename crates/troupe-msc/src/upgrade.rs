//! Moving a recorded run to another version of its workflow (`troupe
//! upgrade`), or refusing to, with the event that stands in the way.
//!
//! A recorded execution names statements by the ids of the version it ran
//! under, and ids mean nothing in another version. What carries over is
//! what a statement *says*: its head as people wrote it (`msg A(x) ->
//! B(y)`; `act A: y = f(x)` with the action's signature; `if g @ O`). The
//! recorded events are fed, in recorded order, to the online monitor of
//! the new version, each as the statement of the new version with the same
//! head that the monitor accepts where its lifeline stands (usually the one
//! statement with that head; several are tried in order). The run may move
//! exactly when every event finds one: then its execution, cut where it
//! stands, is a prefix of a run of the new version (the monitor decides
//! prefix membership), with the same statements, values and decisions.
//!
//! The run's state is rebuilt by replaying its recorded results under the
//! new version, so each must be found there: the step key of every recorded
//! result must name, in the new version, the same action call. Keys count
//! an action's calls per lifeline (per branch of a `par` where a lifeline
//! runs parts at once, [`troupe_project::lanes::occurrence_key`]). A step
//! recorded before its event (an effect in flight, a person's pending task,
//! a result whose event a crash lost) must be the next action of its
//! lifeline in both versions. Values carry type ids, so the new version
//! keeps the old one's declared types (it may add types after them), and
//! its inputs.
//!
//! Time and memory are linear in the recorded history, which is read once;
//! both monitors keep only the messages in flight.

use crate::event::{Event, Message};
use crate::monitor::Monitor;
use crate::semantics::NotMember;
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use troupe_check::ir::{
    Action, ActionKind, Call, LifelineId, Program, Stmt, StmtId, StmtKind, Workflow,
};
pub use troupe_project::ProjectError;
use troupe_project::lanes::occurrence_key;
use troupe_project::{ControlTag, Lanes, Names, Projection};

/// One version of a workflow, as an upgrade reads it.
#[derive(Debug)]
pub struct Version<'a> {
    program: &'a Program,
    workflow: &'a Workflow,
    projection: Projection,
    lanes: Lanes,
    /// Each statement by id.
    stmts: Vec<Option<&'a Stmt>>,
    /// Each statement's identity across versions: its head, and for an
    /// action call the action's signature.
    labels: Vec<String>,
    /// Statements by label, in statement order.
    by_label: HashMap<String, Vec<StmtId>>,
    monitor: Monitor,
}

impl<'a> Version<'a> {
    pub fn new(program: &'a Program, workflow: &'a Workflow) -> Result<Version<'a>, ProjectError> {
        let projection = troupe_project::project(program, workflow)?;
        let monitor = Monitor::with_projection(workflow, &projection);
        let stmts = workflow.stmts_by_id();
        let names = Names::new(program, workflow);
        let labels: Vec<String> = stmts
            .iter()
            .map(|s| s.map(|s| label(&names, program, s)).unwrap_or_default())
            .collect();
        let mut by_label: HashMap<String, Vec<StmtId>> = HashMap::new();
        for (i, s) in stmts.iter().enumerate() {
            if s.is_some() {
                by_label
                    .entry(labels[i].clone())
                    .or_default()
                    .push(StmtId(i as u32));
            }
        }
        Ok(Version {
            program,
            workflow,
            lanes: Lanes::new(workflow),
            projection,
            stmts,
            labels,
            by_label,
            monitor,
        })
    }

    /// The statement's head as people wrote it (`act A: y = f(x)`).
    pub fn head(&self, stmt: StmtId) -> String {
        match self.stmts.get(stmt.0 as usize).copied().flatten() {
            Some(s) => Names::new(self.program, self.workflow).stmt_head(s),
            None => format!("statement {}", stmt.0),
        }
    }

    fn label(&self, stmt: StmtId) -> &str {
        self.labels.get(stmt.0 as usize).map_or("", String::as_str)
    }

    fn lifeline(&self, name: &str) -> Option<LifelineId> {
        self.workflow
            .lifelines
            .iter()
            .position(|l| l.name == name)
            .map(|i| LifelineId(i as u32))
    }

    fn name(&self, l: LifelineId) -> &str {
        self.workflow
            .lifelines
            .get(l.0 as usize)
            .map_or("?", |l| l.name.as_str())
    }

    fn tag(&self, stmt: StmtId) -> ControlTag {
        self.projection
            .construct(stmt)
            .map_or(ControlTag(0), |c| c.tag)
    }

    /// The action statement `stmt` calls, if it calls one.
    fn action(&self, stmt: StmtId) -> Option<&'a Action> {
        match &self.stmts.get(stmt.0 as usize).copied().flatten()?.kind {
            StmtKind::Act {
                call: Call::Action { action, .. },
                ..
            } => Some(self.program.action(*action)),
            _ => None,
        }
    }

    /// An event in words, with its statement's head.
    fn describe(&self, l: LifelineId, e: &Event) -> String {
        let head = self.head(e.stmt());
        let yes = |d: &bool| if *d { "true" } else { "false" };
        match e {
            Event::Send {
                msg: Message::Data { .. },
                ..
            } => format!("the send of `{head}`"),
            Event::Recv {
                msg: Message::Data { .. },
                ..
            } => format!("the receive of `{head}`"),
            Event::Send {
                to,
                msg: Message::Control { decision, .. },
            } => format!("telling {} `{head}` is {}", self.name(*to), yes(decision)),
            Event::Recv {
                msg: Message::Control { decision, .. },
                ..
            } => format!("being told `{head}` is {}", yes(decision)),
            Event::Act { .. } => format!("`{head}`"),
            Event::Decide { decision, .. } => {
                format!("{}'s decision `{head}` = {}", self.name(l), yes(decision))
            }
        }
    }
}

/// The identity of a statement across versions.
fn label(names: &Names<'_>, program: &Program, stmt: &Stmt) -> String {
    let mut out = names.stmt_head(stmt);
    if let StmtKind::Act {
        call: Call::Action { action, .. },
        ..
    } = &stmt.kind
    {
        let a = program.action(*action);
        out.push_str(" :: ");
        out.push_str(&signature(a, program));
    }
    out
}

/// An action's kind and types: a recorded result fits a call of another
/// version only when these are the same.
pub fn signature(a: &Action, program: &Program) -> String {
    let types = |ps: &[troupe_check::ir::Param]| {
        ps.iter()
            .map(|p| program.types.display(&p.ty).to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let kind = match &a.kind {
        ActionKind::Effect { idempotent: true } => "idempotent effect".to_owned(),
        ActionKind::Tool(t) => format!(
            "{}tool {}.{}",
            if t.idempotent { "idempotent " } else { "" },
            t.server.name,
            t.remote
        ),
        k => k.label().to_owned(),
    };
    format!("{kind} ({}) -> ({})", types(&a.params), types(&a.outputs))
}

/// A recorded run, moved: its events as the new version's, in recorded
/// order ([`upgrade`] collects them; [`Upgrading::finish`] leaves them to
/// the caller, who had each from [`Upgrading::event`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Moved {
    pub events: Vec<(LifelineId, Event)>,
    /// Events per lifeline of the new version.
    pub per_lifeline: Vec<u64>,
    /// Recorded steps whose results the new version takes.
    pub steps: usize,
}

/// Why a run cannot move.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// The new version's inputs differ from the run's.
    Inputs { old: String, new: String },
    /// A declared type the run's values may have changed.
    Types { name: String },
    /// A lifeline that took part is not in the new version.
    Lifeline { name: String },
    /// The record is not a run of its own version (a damaged store).
    NotARun(Box<NotMember>),
    /// The first recorded event the new version cannot explain.
    Event {
        lifeline: String,
        /// Its position in the lifeline's word (0 is the first).
        index: usize,
        event: String,
        /// What the new version has there (`None`: the lifeline is done).
        expected: Option<String>,
    },
    /// A recorded result the new version would look for under another key.
    StepKey { key: String, new: String },
    /// A step recorded before its event that the new version does not
    /// have next.
    Open {
        key: String,
        expected: Option<String>,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let there = |expected: &Option<String>| match expected {
            Some(e) => format!("there the new version has `{e}`"),
            None => "there the new version has nothing more for it".to_owned(),
        };
        match self {
            Refusal::Inputs { old, new } => write!(
                f,
                "the run's inputs are ({old}) and the new version's ({new}): a run keeps its inputs"
            ),
            Refusal::Types { name } => write!(
                f,
                "type `{name}` is declared otherwise in the new version: recorded values keep their types, so a version may add types after the old ones but not change them"
            ),
            Refusal::Lifeline { name } => write!(
                f,
                "lifeline `{name}` took part in the run but is not in the new version"
            ),
            Refusal::NotARun(e) => write!(f, "the record is not a run of its own version: {e}"),
            Refusal::Event {
                lifeline,
                index,
                event,
                expected,
            } => write!(
                f,
                "event {} of {lifeline}, {event}, has no place in the new version: {}",
                index + 1,
                there(expected)
            ),
            Refusal::StepKey { key, new } => write!(
                f,
                "the recorded result of {key} would be looked for as {new} in the new version (its calls are counted otherwise there)"
            ),
            Refusal::Open { key, expected } => write!(
                f,
                "step {key} is under way but is not what comes next in the new version: {}",
                there(expected)
            ),
        }
    }
}

/// Counts of action calls per lifeline, as step keys number them.
#[derive(Debug)]
struct Keys(HashMap<(LifelineId, u32, u32), u64>);

impl Keys {
    /// The key of the call at `stmt` by `l` in `v` (`None` when `stmt`
    /// calls no action); counted when `count`.
    fn key(&mut self, v: &Version<'_>, l: LifelineId, stmt: StmtId, count: bool) -> Option<String> {
        let StmtKind::Act {
            call: Call::Action { action, .. },
            ..
        } = &v.stmts.get(stmt.0 as usize).copied().flatten()?.kind
        else {
            return None;
        };
        let lane = v.lanes.key_lane(l, stmt);
        let n = self.0.entry((l, lane, action.0)).or_default();
        let occurrence = occurrence_key(lane, *n);
        if count {
            *n += 1;
        }
        Some(format!(
            "{}/{}#{occurrence}",
            v.name(l),
            v.program.action(*action).name
        ))
    }
}

/// Moves the run recorded as `recorded` (events of `old`, in recorded
/// order) with the results of steps `steps` (top-level keys) to `new`, or
/// says why it cannot move. [`Upgrading`] does the same one event at a
/// time, for a history read from a store.
pub fn upgrade(
    old: &Version<'_>,
    new: &Version<'_>,
    recorded: &[(LifelineId, Event)],
    steps: &BTreeSet<String>,
) -> Result<Moved, Refusal> {
    let mut u = Upgrading::new(old, new, steps)?;
    let mut events = Vec::with_capacity(recorded.len());
    for (l, e) in recorded {
        events.push(u.event(*l, e)?);
    }
    Ok(Moved {
        events,
        ..u.finish()?
    })
}

/// An upgrade check under way: the run's events are fed in recorded
/// order ([`Upgrading::event`]), each answered with its moved form, which
/// the caller keeps or writes as it likes: the check itself keeps only the
/// monitors' state, so its memory does not grow with the history.
#[derive(Debug)]
pub struct Upgrading<'a, 'v> {
    old: &'a Version<'v>,
    new: &'a Version<'v>,
    steps: &'a BTreeSet<String>,
    /// Each old lifeline's lifeline in the new version.
    lifelines: Vec<Option<LifelineId>>,
    /// Each old statement's candidates in the new version, looked up once
    /// rather than per event.
    same: Vec<Vec<StmtId>>,
    old_monitor: Monitor,
    monitor: Monitor,
    old_keys: Keys,
    new_keys: Keys,
    /// Events per old lifeline so far.
    seen: Vec<usize>,
    moved: Moved,
    taken: BTreeSet<String>,
}

impl<'a, 'v> Upgrading<'a, 'v> {
    /// Starts the check; refuses at once a new version with other inputs
    /// or declared types.
    pub fn new(
        old: &'a Version<'v>,
        new: &'a Version<'v>,
        steps: &'a BTreeSet<String>,
    ) -> Result<Self, Refusal> {
        same_inputs(old, new)?;
        same_types(old, new)?;
        Ok(Upgrading {
            lifelines: old
                .workflow
                .lifelines
                .iter()
                .map(|l| new.lifeline(&l.name))
                .collect(),
            same: (0..old.stmts.len())
                .map(|i| {
                    new.by_label
                        .get(old.label(StmtId(i as u32)))
                        .cloned()
                        .unwrap_or_default()
                })
                .collect(),
            old_monitor: old.monitor.fresh(),
            monitor: new.monitor.fresh(),
            old_keys: Keys(HashMap::new()),
            new_keys: Keys(HashMap::new()),
            seen: vec![0; old.workflow.lifelines.len()],
            moved: Moved {
                events: Vec::new(),
                per_lifeline: vec![0; new.workflow.lifelines.len()],
                steps: steps.len(),
            },
            taken: BTreeSet::new(),
            old,
            new,
            steps,
        })
    }

    /// The next recorded event, of the old version's lifeline `l`, and
    /// what it is in the new version.
    pub fn event(&mut self, l: LifelineId, e: &Event) -> Result<(LifelineId, Event), Refusal> {
        let (old, new) = (self.old, self.new);
        self.old_monitor.event(l, e).map_err(Refusal::NotARun)?;
        let li = l.0 as usize;
        let index = self.seen[li];
        self.seen[li] += 1;
        let nl = self.lifelines[li].ok_or_else(|| Refusal::Lifeline {
            name: old.name(l).to_owned(),
        })?;
        let candidates = self
            .same
            .get(e.stmt().0 as usize)
            .map_or(&[][..], Vec::as_slice);
        let Some((stmt, moved)) = place(new, &mut self.monitor, nl, e, candidates, &self.lifelines)
        else {
            return Err(Refusal::Event {
                lifeline: old.name(l).to_owned(),
                index,
                event: old.describe(l, e),
                expected: self.monitor.next_stmt(nl).map(|s| new.head(s)),
            });
        };
        if let Event::Act { .. } = e
            && let Some(key) = self.old_keys.key(old, l, e.stmt(), true)
        {
            let now = self.new_keys.key(new, nl, stmt, true).unwrap_or_default();
            if self.steps.contains(&key) {
                if now != key {
                    return Err(Refusal::StepKey { key, new: now });
                }
                self.taken.insert(key);
            }
        }
        self.moved.per_lifeline[nl.0 as usize] += 1;
        Ok((nl, moved))
    }

    /// After the last recorded event: the steps recorded before their
    /// events must each be the next call of its lifeline, in both
    /// versions, under the same key.
    pub fn finish(mut self) -> Result<Moved, Refusal> {
        let (old, new) = (self.old, self.new);
        for key in self.steps.difference(&self.taken) {
            let open = || Refusal::Open {
                key: key.clone(),
                expected: None,
            };
            let (name, rest) = key.split_once('/').ok_or_else(open)?;
            let action = rest.rsplit_once('#').map_or(rest, |(a, _)| a);
            let l = old.lifeline(name).ok_or_else(open)?;
            let nl = self.lifelines[l.0 as usize].ok_or_else(|| Refusal::Lifeline {
                name: name.to_owned(),
            })?;
            let monitor = &self.monitor;
            let expected = || Refusal::Open {
                key: key.clone(),
                expected: monitor.next_stmt(nl).map(|s| new.head(s)),
            };
            let stmt = next_call(old, &self.old_monitor, &mut self.old_keys, l, action, key)
                .ok_or_else(expected)?;
            let new_keys = &mut self.new_keys;
            let found = new
                .by_label
                .get(old.label(stmt))
                .into_iter()
                .flatten()
                .any(|&c| {
                    let mut m = monitor.clone();
                    m.event(
                        nl,
                        &Event::Act {
                            stmt: c,
                            outputs: None,
                        },
                    )
                    .is_ok()
                        && new_keys.key(new, nl, c, false).as_deref() == Some(key)
                });
            if !found {
                return Err(expected());
            }
        }
        Ok(self.moved)
    }
}

/// The statement of `v` among `candidates` (those saying what `e`'s
/// statement says) that `monitor` accepts for `e`, an event of lifeline
/// `nl`, and the event as `v`'s; the monitor has taken it. `None` when no
/// statement fits.
fn place(
    v: &Version<'_>,
    monitor: &mut Monitor,
    nl: LifelineId,
    e: &Event,
    candidates: &[StmtId],
    lifelines: &[Option<LifelineId>],
) -> Option<(StmtId, Event)> {
    for &c in candidates {
        let Some(moved) = retarget(v, e, c, lifelines) else {
            continue;
        };
        if candidates.len() == 1 {
            // The common case: no copy of the monitor.
            return monitor.event(nl, &moved).ok().map(|()| (c, moved));
        }
        let mut trial = monitor.clone();
        if trial.event(nl, &moved).is_ok() {
            *monitor = trial;
            return Some((c, moved));
        }
    }
    None
}

/// `e` as an event of statement `stmt` of `v`, its lifelines renumbered.
fn retarget(
    v: &Version<'_>,
    e: &Event,
    stmt: StmtId,
    lifelines: &[Option<LifelineId>],
) -> Option<Event> {
    let map = |l: &LifelineId| lifelines.get(l.0 as usize).copied().flatten();
    let msg = |m: &Message| match m {
        Message::Data { values, .. } => Message::Data {
            stmt,
            values: values.clone(),
        },
        Message::Control { decision, .. } => Message::Control {
            stmt,
            tag: v.tag(stmt),
            decision: *decision,
        },
    };
    Some(match e {
        Event::Send { to, msg: m } => Event::Send {
            to: map(to)?,
            msg: msg(m),
        },
        Event::Recv { from, msg: m } => Event::Recv {
            from: map(from)?,
            msg: msg(m),
        },
        Event::Act { outputs, .. } => Event::Act {
            stmt,
            outputs: outputs.clone(),
        },
        Event::Decide { decision, .. } => Event::Decide {
            stmt,
            tag: v.tag(stmt),
            decision: *decision,
        },
    })
}

/// The call of `action` that lifeline `l` of `v` makes next, under `key`.
fn next_call(
    v: &Version<'_>,
    monitor: &Monitor,
    keys: &mut Keys,
    l: LifelineId,
    action: &str,
    key: &str,
) -> Option<StmtId> {
    v.stmts.iter().flatten().map(|s| s.id).find(|&s| {
        v.action(s).is_some_and(|a| a.name == action)
            && matches!(&v.stmts[s.0 as usize].map(|s| &s.kind), Some(StmtKind::Act { at, .. }) if *at == l)
            && monitor.clone().event(l, &Event::Act { stmt: s, outputs: None }).is_ok()
            && keys.key(v, l, s, false).as_deref() == Some(key)
    })
}

fn same_inputs(old: &Version<'_>, new: &Version<'_>) -> Result<(), Refusal> {
    let inputs = |v: &Version<'_>| {
        v.workflow
            .inputs
            .iter()
            .map(|i| {
                let var = v.workflow.var(*i);
                format!("{}: {}", var.name, v.program.types.display(&var.ty))
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (o, n) = (inputs(old), inputs(new));
    if o == n {
        Ok(())
    } else {
        Err(Refusal::Inputs { old: o, new: n })
    }
}

fn same_types(old: &Version<'_>, new: &Version<'_>) -> Result<(), Refusal> {
    let (o, n) = (&old.program.types, &new.program.types);
    for (i, e) in o.enums.iter().enumerate() {
        if n.enums.get(i) != Some(e) {
            return Err(Refusal::Types {
                name: e.name.clone(),
            });
        }
    }
    for (i, r) in o.records.iter().enumerate() {
        if n.records.get(i) != Some(r) {
            return Err(Refusal::Types {
                name: r.name.clone(),
            });
        }
    }
    Ok(())
}
