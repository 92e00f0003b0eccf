//! Which recorded runs may move to a new version of their workflow, by
//! brute force: the reference for `troupe_msc::upgrade`, sharing none of
//! its code (no monitor, no translation of events).
//!
//! A run cut where it stands may move to version P′ when some execution of
//! bounded ⟦P′⟧ (with control events, [`crate::global::enumerate`]) has, on
//! every lifeline, the run's word as a prefix — events compared by what
//! their statements say (the statement as people wrote it, the action's
//! name, kind and types, the peer and the decision), never by statement id
//! — and the actions under way (recorded before their events) come next in
//! that execution, so every recorded result is found in P′ under its key.
//! For sequential workflows a key (`Lifeline/action#n`) counts the calls of
//! an action on its lifeline, so equal words number their calls alike; the
//! keys are compared anyway.

use crate::global::{Tags, enumerate};
use std::collections::HashMap;
use troupe_check::ir::{Call, LifelineId, Program, Stmt, StmtId, StmtKind, Workflow};
use troupe_msc::{Event, Execution, Message};
use troupe_project::Names;

/// Whether the run whose words are `cut` (events of `old`), with the
/// actions `open` under way (lifeline, the `act` statement it is at), may
/// move to `new`; `None` when bounded ⟦`new`⟧ is too large to enumerate.
#[allow(clippy::too_many_arguments)]
pub fn compatible(
    old: (&Program, &Workflow),
    new: (&Program, &Workflow),
    cut: &Execution,
    open: &[(LifelineId, StmtId)],
    new_tags: Tags<'_>,
    unroll: u32,
    limit: usize,
) -> Option<bool> {
    let old_stmts = stmts(old.1);
    let new_stmts = stmts(new.1);
    // The run's words with the calls under way after them: labelled, and
    // the keys of their calls.
    let mut words: Vec<(String, Vec<String>, Vec<String>)> = Vec::new();
    for (l, word) in cut.words.iter().enumerate() {
        let l = LifelineId(l as u32);
        let mut events = word.clone();
        events.extend(
            open.iter()
                .filter(|(ol, _)| *ol == l)
                .map(|(_, stmt)| Event::Act {
                    stmt: *stmt,
                    outputs: None,
                }),
        );
        let labels = events
            .iter()
            .map(|e| label(old, &old_stmts, l, e))
            .collect();
        let keys = keys_of(old, &old_stmts, l.0 as usize, &events);
        words.push((old.1.lifelines[l.0 as usize].name.clone(), labels, keys));
    }
    let new_index = |name: &str| new.1.lifelines.iter().position(|l| l.name == name);
    for (name, labels, _) in &words {
        if !labels.is_empty() && new_index(name).is_none() {
            return Some(false);
        }
    }
    let all = enumerate(new.1, true, unroll, limit, new_tags).ok()??;
    Some(all.iter().any(|x| {
        words.iter().all(|(name, labels, keys)| {
            let Some(nl) = new_index(name) else {
                return labels.is_empty();
            };
            let word = &x.words[nl];
            word.len() >= labels.len()
                && word
                    .iter()
                    .zip(labels)
                    .all(|(e, want)| label(new, &new_stmts, LifelineId(nl as u32), e) == *want)
                && *keys == keys_of(new, &new_stmts, nl, &word[..labels.len()])
        })
    }))
}

/// Statements by id.
fn stmts(w: &Workflow) -> HashMap<StmtId, &Stmt> {
    fn go<'w>(b: &'w troupe_check::ir::Block, out: &mut HashMap<StmtId, &'w Stmt>) {
        for s in &b.stmts {
            out.insert(s.id, s);
            match &s.kind {
                StmtKind::If {
                    then, otherwise, ..
                } => {
                    go(then, out);
                    go(otherwise, out);
                }
                StmtKind::While { body, exit, .. } => {
                    go(body, out);
                    go(exit, out);
                }
                StmtKind::Par { branches } => branches.iter().for_each(|b| go(b, out)),
                StmtKind::Msg { .. } | StmtKind::Act { .. } => {}
            }
        }
    }
    let mut out = HashMap::new();
    go(&w.body, &mut out);
    out
}

/// What an event says, in a version-free form.
fn label(
    v: (&Program, &Workflow),
    stmts: &HashMap<StmtId, &Stmt>,
    l: LifelineId,
    e: &Event,
) -> String {
    let names = Names::new(v.0, v.1);
    let Some(s) = stmts.get(&e.stmt()) else {
        return format!("?{}", e.stmt().0);
    };
    let text = names.stmt_head(s);
    let me = names.lifeline(l);
    match e {
        Event::Send { to, msg } => format!(
            "{me} send to {} {}: {text}",
            names.lifeline(*to),
            decision(msg)
        ),
        Event::Recv { from, msg } => {
            format!(
                "{me} recv from {} {}: {text}",
                names.lifeline(*from),
                decision(msg)
            )
        }
        Event::Act { .. } => {
            let action = match &s.kind {
                StmtKind::Act {
                    call: Call::Action { action, .. },
                    ..
                } => {
                    let a = v.0.action(*action);
                    format!(
                        "{} {} {:?} -> {:?} {:?}",
                        a.name,
                        a.kind.label(),
                        a.params.iter().map(|p| &p.ty).collect::<Vec<_>>(),
                        a.outputs.iter().map(|p| &p.ty).collect::<Vec<_>>(),
                        effect_flags(&a.kind),
                    )
                }
                _ => String::new(),
            };
            format!("{me} act {action}: {text}")
        }
        Event::Decide { decision, .. } => format!("{me} decide {decision}: {text}"),
    }
}

fn decision(m: &Message) -> String {
    match m {
        Message::Data { .. } => "data".into(),
        Message::Control { decision, .. } => format!("control {decision}"),
    }
}

fn effect_flags(k: &troupe_check::ir::ActionKind) -> (bool, String) {
    match k {
        troupe_check::ir::ActionKind::Effect { idempotent } => (*idempotent, String::new()),
        troupe_check::ir::ActionKind::Tool(t) => {
            (t.idempotent, format!("{}.{}", t.server.name, t.remote))
        }
        _ => (false, String::new()),
    }
}

/// `Lifeline/action#n` of each call in `word`, counting per action.
fn keys_of(
    v: (&Program, &Workflow),
    stmts: &HashMap<StmtId, &Stmt>,
    l: usize,
    word: &[Event],
) -> Vec<String> {
    let mut counts: HashMap<u32, u64> = HashMap::new();
    word.iter()
        .filter_map(|e| match (e, stmts.get(&e.stmt()).map(|s| &s.kind)) {
            (
                Event::Act { .. },
                Some(StmtKind::Act {
                    call: Call::Action { action, .. },
                    ..
                }),
            ) => {
                let n = counts.entry(action.0).or_default();
                let key = format!("{}/{}#{n}", v.1.lifelines[l].name, v.0.action(*action).name);
                *n += 1;
                Some(key)
            }
            _ => None,
        })
        .collect()
}
