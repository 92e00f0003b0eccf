//! The differences between two snapshots, as typed changes in the
//! snapshot's own terms (lifelines, inputs, results, actions, prompts,
//! statements), each of which renders as one readable line.
//!
//! Statements are compared as the pre-order list of `(context, head)`
//! through a longest common subsequence. The context is compared without
//! the guards of the enclosing constructs, so a changed guard is one
//! change (the construct's), not the removal and re-insertion of all it
//! encloses. What the subsequence leaves over is paired, in this order:
//! a removed and an inserted statement with the same head are a *move*;
//! a removed and an inserted statement of the same kind over the same
//! lifelines at the same place (between the same two kept statements,
//! in the same kind of context) are a *changed guard* (constructs) or a
//! *replaced* statement (messages and actions); the rest are removals and
//! insertions.

use super::{ActionSig, Frame, Slot, Snapshot, Statement};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// Where a statement sits: inside which constructs, after which sibling.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Location {
    pub context: Vec<Frame>,
    /// The head of the statement before it in the same block; `None` at
    /// the start of the block.
    pub after: Option<String>,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.context.is_empty() {
            let frames: Vec<String> = self.context.iter().map(Frame::text).collect();
            write!(f, "inside {}, ", frames.join(" / "))?;
        }
        match &self.after {
            Some(head) => write!(f, "after {head}"),
            None if self.context.is_empty() => f.write_str("at the start of the workflow"),
            None => f.write_str("at the start"),
        }
    }
}

/// One difference between an old and a new snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum Change {
    WorkflowRenamed {
        old: String,
        new: String,
    },
    LifelineAdded {
        name: String,
        /// The lifeline before it in the new order; `None`: first.
        after: Option<String>,
    },
    LifelineRemoved {
        name: String,
    },
    /// The order of the lifelines (⊏) changed for this one.
    LifelineMoved {
        name: String,
        from: usize,
        to: usize,
    },
    InputAdded {
        input: Slot,
    },
    InputRemoved {
        input: Slot,
    },
    /// Same name, another type or lifeline.
    InputRetyped {
        old: Slot,
        new: Slot,
    },
    /// The same inputs in another order (a `call` passes them by
    /// position).
    InputsReordered {
        old: Vec<String>,
        new: Vec<String>,
    },
    ResultAdded {
        result: Slot,
    },
    ResultRemoved {
        result: Slot,
    },
    ResultRetyped {
        old: Slot,
        new: Slot,
    },
    /// The same results in another order (a `call` binds them by
    /// position).
    ResultsReordered {
        old: Vec<String>,
        new: Vec<String>,
    },
    ActionAdded {
        action: ActionSig,
    },
    ActionRemoved {
        action: ActionSig,
    },
    /// Same name, another signature or kind or settings.
    ActionChanged {
        old: ActionSig,
        new: ActionSig,
    },
    /// A prompt (or system prompt, or a person's question) of an action
    /// that is in both snapshots; `None` where the field is absent.
    PromptChanged {
        action: String,
        field: String,
        old: Option<String>,
        new: Option<String>,
    },
    StatementInserted {
        statement: Statement,
        at: Location,
    },
    StatementRemoved {
        statement: Statement,
        at: Location,
    },
    StatementMoved {
        statement: Statement,
        from: Location,
        to: Location,
    },
    /// The same construct (kind and owner) at the same place, with
    /// another guard (or, for a `for`, another list or variable).
    GuardChanged {
        old: String,
        new: String,
        at: Location,
    },
    /// A message or action at the same place between the same lifelines,
    /// written otherwise (other items, another action, other outputs).
    StatementReplaced {
        old: String,
        new: String,
        at: Location,
    },
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::WorkflowRenamed { old, new } => write!(f, "~ workflow {old} is now {new}"),
            Change::LifelineAdded { name, after } => match after {
                Some(a) => write!(f, "+ lifeline {name}, after {a}"),
                None => write!(f, "+ lifeline {name}, first"),
            },
            Change::LifelineRemoved { name } => write!(f, "- lifeline {name}"),
            Change::LifelineMoved { name, from, to } => write!(
                f,
                "~ lifeline {name} moved from position {} to {}",
                from + 1,
                to + 1
            ),
            Change::InputAdded { input } => write!(f, "+ input {}", input.text()),
            Change::InputRemoved { input } => write!(f, "- input {}", input.text()),
            Change::InputRetyped { old, new } => {
                write!(f, "~ input {} is now {}", old.text(), new.text())
            }
            Change::ResultAdded { result } => write!(f, "+ result {}", result.text()),
            Change::ResultRemoved { result } => write!(f, "- result {}", result.text()),
            Change::ResultRetyped { old, new } => {
                write!(f, "~ result {} is now {}", old.text(), new.text())
            }
            Change::InputsReordered { old, new } => write!(
                f,
                "~ inputs ({}) are now in the order ({})",
                old.join(", "),
                new.join(", ")
            ),
            Change::ResultsReordered { old, new } => write!(
                f,
                "~ results ({}) are now in the order ({})",
                old.join(", "),
                new.join(", ")
            ),
            Change::ActionAdded { action } => write!(f, "+ action {}", action.text()),
            Change::ActionRemoved { action } => write!(f, "- action {}", action.text()),
            Change::ActionChanged { old, new } => {
                write!(f, "~ action {} is now {}", old.text(), new.text())
            }
            Change::PromptChanged {
                action,
                field,
                old,
                new,
            } => {
                // Both excerpts start a little before the first character
                // that differs, so a change late in a long prompt shows.
                let from = match (old, new) {
                    (Some(a), Some(b)) => a
                        .chars()
                        .zip(b.chars())
                        .take_while(|(x, y)| x == y)
                        .count()
                        .saturating_sub(12),
                    _ => 0,
                };
                let show = |t: &Option<String>| {
                    t.as_deref()
                        .map_or("(none)".to_owned(), |t| excerpt(t, from))
                };
                write!(
                    f,
                    "~ {field} of {action}: {} is now {}",
                    show(old),
                    show(new)
                )
            }
            Change::StatementInserted { statement, at } => {
                write!(f, "+ {} {at}", statement.head)
            }
            Change::StatementRemoved { statement, at } => {
                write!(f, "- {} {at}", statement.head)
            }
            Change::StatementMoved {
                statement,
                from,
                to,
            } => write!(f, "> {} moved from {from}; now {to}", statement.head),
            Change::GuardChanged { old, new, at } => {
                write!(f, "~ {old} is now {new} {at}")
            }
            Change::StatementReplaced { old, new, at } => {
                write!(f, "~ {old} is now {new} {at}")
            }
        }
    }
}

/// A prompt as a quoted one-line excerpt of at most 60 characters from
/// character `from` on; `…` marks what is left out.
fn excerpt(text: &str, from: usize) -> String {
    const MAX: usize = 60;
    let short: String = text.chars().skip(from).take(MAX).collect();
    let before = if from > 0 { "…" } else { "" };
    let after = if text.chars().count() > from + MAX {
        "…"
    } else {
        ""
    };
    format!("{before}{short:?}{after}")
}

/// The changes that turn `old` into `new`: the workflow's name, its
/// lifelines, inputs, results, actions, prompts (unless
/// `ignore_prompts`), then its statements in the new pre-order.
pub fn diff(old: &Snapshot, new: &Snapshot, ignore_prompts: bool) -> Vec<Change> {
    let mut changes = Vec::new();
    if old.workflow != new.workflow {
        changes.push(Change::WorkflowRenamed {
            old: old.workflow.clone(),
            new: new.workflow.clone(),
        });
    }
    lifelines(&old.lifelines, &new.lifelines, &mut changes);
    slots(&old.inputs, &new.inputs, true, &mut changes);
    slots(&old.results, &new.results, false, &mut changes);
    actions(old, new, &mut changes);
    if !ignore_prompts {
        prompts(old, new, &mut changes);
    }
    statements(&old.statements, &new.statements, &mut changes);
    changes
}

fn lifelines(old: &[String], new: &[String], changes: &mut Vec<Change>) {
    let kept = lcs(old, new);
    for name in old.iter().filter(|n| !new.contains(n)) {
        changes.push(Change::LifelineRemoved { name: name.clone() });
    }
    for (to, name) in new.iter().enumerate() {
        match old.iter().position(|n| n == name) {
            None => changes.push(Change::LifelineAdded {
                name: name.clone(),
                after: to.checked_sub(1).map(|i| new[i].clone()),
            }),
            Some(from) if !kept.iter().any(|&(i, _)| i == from) => {
                changes.push(Change::LifelineMoved {
                    name: name.clone(),
                    from,
                    to,
                });
            }
            Some(_) => {}
        }
    }
}

fn slots(old: &[Slot], new: &[Slot], inputs: bool, changes: &mut Vec<Change>) {
    for o in old {
        match new.iter().find(|n| n.name == o.name) {
            None if inputs => changes.push(Change::InputRemoved { input: o.clone() }),
            None => changes.push(Change::ResultRemoved { result: o.clone() }),
            Some(n) if n != o && inputs => changes.push(Change::InputRetyped {
                old: o.clone(),
                new: n.clone(),
            }),
            Some(n) if n != o => changes.push(Change::ResultRetyped {
                old: o.clone(),
                new: n.clone(),
            }),
            Some(_) => {}
        }
    }
    for n in new.iter().filter(|n| !old.iter().any(|o| o.name == n.name)) {
        changes.push(if inputs {
            Change::InputAdded { input: n.clone() }
        } else {
            Change::ResultAdded { result: n.clone() }
        });
    }
    // The order of the names both have.
    let names = |these: &[Slot], others: &[Slot]| -> Vec<String> {
        these
            .iter()
            .filter(|s| others.iter().any(|o| o.name == s.name))
            .map(|s| s.name.clone())
            .collect()
    };
    let (o, n) = (names(old, new), names(new, old));
    if o != n {
        changes.push(if inputs {
            Change::InputsReordered { old: o, new: n }
        } else {
            Change::ResultsReordered { old: o, new: n }
        });
    }
}

fn actions(old: &Snapshot, new: &Snapshot, changes: &mut Vec<Change>) {
    let by_name = |s: &Snapshot| -> BTreeMap<String, ActionSig> {
        s.actions
            .iter()
            .map(|a| (a.name.clone(), a.clone()))
            .collect()
    };
    let (old, new) = (by_name(old), by_name(new));
    for (name, o) in &old {
        match new.get(name) {
            None => changes.push(Change::ActionRemoved { action: o.clone() }),
            Some(n) if n != o => changes.push(Change::ActionChanged {
                old: o.clone(),
                new: n.clone(),
            }),
            Some(_) => {}
        }
    }
    for (name, n) in &new {
        if !old.contains_key(name) {
            changes.push(Change::ActionAdded { action: n.clone() });
        }
    }
}

/// Prompts of actions in both snapshots (an added or removed action says
/// enough about its wording).
fn prompts(old: &Snapshot, new: &Snapshot, changes: &mut Vec<Change>) {
    let by_key = |s: &Snapshot| -> BTreeMap<(String, String), String> {
        s.prompts
            .iter()
            .map(|p| ((p.action.clone(), p.field.clone()), p.text.clone()))
            .collect()
    };
    let (o, n) = (by_key(old), by_key(new));
    let both = |action: &str| {
        old.actions.iter().any(|a| a.name == action) && new.actions.iter().any(|a| a.name == action)
    };
    let mut keys: Vec<&(String, String)> = o.keys().chain(n.keys()).collect();
    keys.sort();
    keys.dedup();
    for key in keys {
        let (a, b) = (o.get(key), n.get(key));
        if a != b && both(&key.0) {
            changes.push(Change::PromptChanged {
                action: key.0.clone(),
                field: key.1.clone(),
                old: a.cloned(),
                new: b.cloned(),
            });
        }
    }
}

/// A frame without its guard: the construct's kind, its owner and the
/// part (a `call` frame whole: its lifeline map is its identity).
fn frame_key(frame: &Frame) -> (String, String) {
    let c = &frame.construct;
    let kind = c.split(' ').next().unwrap_or_default();
    let owner = match c.rsplit_once(" @ ") {
        Some((_, owner)) if kind != "call" => format!("{kind} @ {owner}"),
        _ => c.clone(),
    };
    (owner, frame.part.clone())
}

/// What the subsequence compares: the context without guards, the head.
#[derive(PartialEq)]
struct Key<'a> {
    context: Vec<(String, String)>,
    head: &'a str,
}

fn key(s: &Statement) -> Key<'_> {
    Key {
        context: s.context.iter().map(frame_key).collect(),
        head: &s.head,
    }
}

/// The location of `list[i]`: its context and the statement before it in
/// its block (the nearest earlier statement with the same context; one
/// with a shorter context is its parent, so it is first).
fn location(list: &[Statement], i: usize) -> Location {
    let me = &list[i];
    let after = list[..i]
        .iter()
        .rev()
        .find(|s| s.context.len() <= me.context.len())
        .filter(|s| s.context == me.context)
        .map(|s| s.head.clone());
    Location {
        context: me.context.clone(),
        after,
    }
}

fn statements(old: &[Statement], new: &[Statement], changes: &mut Vec<Change>) {
    let ok: Vec<Key<'_>> = old.iter().map(key).collect();
    let nk: Vec<Key<'_>> = new.iter().map(key).collect();
    let kept = lcs(&ok, &nk);
    let mut old_kept = vec![false; old.len()];
    let mut new_kept = vec![false; new.len()];
    // The gap of an unmatched statement: how many kept pairs come before
    // it. A removed and an inserted statement in the same gap sit at the
    // same place.
    let mut old_gap = vec![0; old.len()];
    let mut new_gap = vec![0; new.len()];
    for &(i, j) in &kept {
        old_kept[i] = true;
        new_kept[j] = true;
    }
    let mut g = 0;
    for (i, gap) in old_gap.iter_mut().enumerate() {
        *gap = g;
        g += usize::from(old_kept[i]);
    }
    g = 0;
    for (j, gap) in new_gap.iter_mut().enumerate() {
        *gap = g;
        g += usize::from(new_kept[j]);
    }
    let mut removed: Vec<usize> = (0..old.len()).filter(|&i| !old_kept[i]).collect();
    let mut inserted: Vec<usize> = (0..new.len()).filter(|&j| !new_kept[j]).collect();
    // In the new order, so the report reads top to bottom; removals are
    // placed at the new position of their gap.
    let mut found: Vec<(usize, usize, Change)> = Vec::new();
    // Moves: the same head elsewhere.
    let mut r = 0;
    while r < removed.len() {
        let i = removed[r];
        let same = inserted
            .iter()
            .position(|&j| new[j].head == old[i].head && new[j].kind == old[i].kind);
        match same {
            Some(p) => {
                let j = inserted.remove(p);
                removed.remove(r);
                found.push((
                    j,
                    1,
                    Change::StatementMoved {
                        statement: new[j].clone(),
                        from: location(old, i),
                        to: location(new, j),
                    },
                ));
            }
            None => r += 1,
        }
    }
    // Changed in place: same gap, kind, lifelines and guard-free context.
    r = 0;
    while r < removed.len() {
        let i = removed[r];
        let same = inserted.iter().position(|&j| {
            new_gap[j] == old_gap[i]
                && new[j].kind == old[i].kind
                && new[j].lifelines == old[i].lifelines
                && nk[j].context == ok[i].context
        });
        match same {
            Some(p) => {
                let j = inserted.remove(p);
                removed.remove(r);
                let (o, n, at) = (old[i].head.clone(), new[j].head.clone(), location(new, j));
                let change = match new[j].kind.as_str() {
                    "msg" | "act" => Change::StatementReplaced { old: o, new: n, at },
                    _ => Change::GuardChanged { old: o, new: n, at },
                };
                found.push((j, 1, change));
            }
            None => r += 1,
        }
    }
    for i in removed {
        // Where the gap lies in the new list: before the kept statement
        // that follows it.
        let next = kept
            .iter()
            .find(|&&(oi, _)| oi > i)
            .map_or(new.len(), |&(_, nj)| nj);
        found.push((
            next,
            0,
            Change::StatementRemoved {
                statement: old[i].clone(),
                at: location(old, i),
            },
        ));
    }
    for j in inserted {
        found.push((
            j,
            1,
            Change::StatementInserted {
                statement: new[j].clone(),
                at: location(new, j),
            },
        ));
    }
    // A stable sort: removals before what stands at their place now.
    found.sort_by_key(|(j, rank, _)| (*j, *rank));
    changes.extend(found.into_iter().map(|(_, _, c)| c));
}

/// The most common cells of the table: beyond them, the middle of two
/// long lists (after their common prefix and suffix) is compared as
/// wholly removed and inserted rather than with quadratic memory.
const MAX_CELLS: usize = 4_000_000;

/// The pairs `(i, j)` of a longest common subsequence of `a` and `b`, in
/// increasing order.
fn lcs<T: PartialEq>(a: &[T], b: &[T]) -> Vec<(usize, usize)> {
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (am, bm) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
    let mut pairs: Vec<(usize, usize)> = (0..prefix).map(|i| (i, i)).collect();
    let (n, m) = (am.len(), bm.len());
    if n > 0 && m > 0 && (n + 1) * (m + 1) <= MAX_CELLS {
        // table[i][j]: the LCS length of am[i..] and bm[j..].
        let w = m + 1;
        let mut table = vec![0u32; (n + 1) * w];
        for i in (0..n).rev() {
            for j in (0..m).rev() {
                table[i * w + j] = if am[i] == bm[j] {
                    table[(i + 1) * w + j + 1] + 1
                } else {
                    table[(i + 1) * w + j].max(table[i * w + j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < n && j < m {
            if am[i] == bm[j] {
                pairs.push((prefix + i, prefix + j));
                i += 1;
                j += 1;
            } else if table[(i + 1) * w + j] >= table[i * w + j + 1] {
                i += 1;
            } else {
                j += 1;
            }
        }
    }
    pairs.extend((0..suffix).map(|k| (a.len() - suffix + k, b.len() - suffix + k)));
    pairs
}

#[cfg(test)]
mod tests {
    use super::lcs;

    #[test]
    fn lcs_keeps_the_longest_common_order() {
        let a = ["a", "b", "c", "d", "e"];
        let b = ["a", "c", "b", "e", "f"];
        let pairs = lcs(&a, &b);
        assert_eq!(pairs.len(), 3);
        assert!(pairs.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1));
        assert!(pairs.iter().all(|&(i, j)| a[i] == b[j]));
        assert_eq!(lcs::<&str>(&[], &["x"]), vec![]);
        assert_eq!(lcs(&a, &a).len(), 5);
    }
}
