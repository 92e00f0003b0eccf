//! Strong bisimulation by partition refinement, with shortest distinguishing traces.
//!
//! [`check`] refines the partition of the disjoint union of two LTSs by signatures
//! (a state's block plus the set of `(label, target block)` pairs it has) until it is
//! stable; the coarsest stable partition is strong bisimilarity. When the initial states
//! end up in different blocks, a breadth-first search over pairs of non-bisimilar states
//! (following equal labels from the pair of initial states) finds a shortest trace after
//! which one system offers a label the other does not. For deterministic systems (all
//! the systems of [`crate::semantics`]) this is a shortest distinguishing trace; for
//! nondeterministic ones it is a shortest path to a pair of states that differ
//! immediately, along which every pair is non-bisimilar.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::fmt::Display;
use std::hash::Hash;

use serde::Serialize;

use crate::lts::{Lts, StateId};

/// Why two systems are not bisimilar.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Counterexample<L> {
    /// The labels both systems can perform, leading to the distinguishing states.
    pub trace: Vec<L>,
    /// Labels the left system can perform next but the right cannot.
    pub left_only: Vec<L>,
    /// Labels the right system can perform next but the left cannot.
    pub right_only: Vec<L>,
    /// The left state reached (readable name).
    pub left_state: String,
    /// The right state reached (readable name).
    pub right_state: String,
}

impl<L: Display> Counterexample<L> {
    /// A one-paragraph explanation, naming the systems `left` and `right`.
    pub fn render(&self, left: &str, right: &str) -> String {
        let trace = if self.trace.is_empty() {
            "at the start".to_owned()
        } else {
            let steps: Vec<String> = self.trace.iter().map(ToString::to_string).collect();
            format!("after {}", steps.join(" · "))
        };
        let list = |labels: &[L]| {
            labels
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut parts = Vec::new();
        if !self.left_only.is_empty() {
            parts.push(format!(
                "{left} can do {} but {right} cannot",
                list(&self.left_only)
            ));
        }
        if !self.right_only.is_empty() {
            parts.push(format!(
                "{right} can do {} but {left} cannot",
                list(&self.right_only)
            ));
        }
        format!("{trace}: {}", parts.join("; "))
    }
}

/// Strong bisimilarity of the initial states of `left` and `right`: `None` if they are
/// bisimilar, a shortest counterexample otherwise.
pub fn check<L>(left: &Lts<L>, right: &Lts<L>) -> Option<Counterexample<L>>
where
    L: Clone + Ord + Hash,
{
    let union = Union::new(left, right);
    let blocks = union.coarsest_partition();
    let (start_left, start_right) = (left.initial(), union.right_id(right.initial()));
    if blocks.get(start_left) == blocks.get(start_right) {
        return None;
    }
    union.shortest_witness(&blocks, start_left, start_right)
}

/// A pair of states, one of each system.
type Pair = (StateId, StateId);

/// BFS parent pointers: pair → the pair it was reached from and the label id (`None`
/// for the start).
type Parents = HashMap<Pair, Option<(Pair, usize)>>;

/// The disjoint union of two LTSs with labels interned as integers.
struct Union<'a, L> {
    left: &'a Lts<L>,
    right: &'a Lts<L>,
    labels: Vec<L>,
    /// Outgoing `(label id, target)` per state of the union.
    edges: Vec<Vec<(usize, StateId)>>,
}

impl<'a, L: Clone + Ord + Hash> Union<'a, L> {
    fn new(left: &'a Lts<L>, right: &'a Lts<L>) -> Self {
        let mut label_ids: HashMap<L, usize> = HashMap::new();
        let mut labels = Vec::new();
        let mut edges = Vec::with_capacity(left.state_count() + right.state_count());
        for (lts, offset) in [(left, 0), (right, left.state_count())] {
            for state in 0..lts.state_count() {
                let out = lts
                    .successors(state)
                    .iter()
                    .map(|(label, target)| {
                        let id = *label_ids.entry(label.clone()).or_insert_with(|| {
                            labels.push(label.clone());
                            labels.len() - 1
                        });
                        (id, target + offset)
                    })
                    .collect();
                edges.push(out);
            }
        }
        Union {
            left,
            right,
            labels,
            edges,
        }
    }

    fn right_id(&self, state: StateId) -> StateId {
        state + self.left.state_count()
    }

    /// Signature refinement until the number of blocks stops growing.
    fn coarsest_partition(&self) -> Vec<usize> {
        let mut blocks = vec![0usize; self.edges.len()];
        let mut count = 1;
        loop {
            let mut ids: HashMap<(usize, Vec<(usize, usize)>), usize> = HashMap::new();
            let mut next = Vec::with_capacity(blocks.len());
            for (state, out) in self.edges.iter().enumerate() {
                let mut signature: Vec<(usize, usize)> = out
                    .iter()
                    .map(|&(label, target)| (label, blocks.get(target).copied().unwrap_or(0)))
                    .collect();
                signature.sort_unstable();
                signature.dedup();
                let own = blocks.get(state).copied().unwrap_or(0);
                let fresh = ids.len();
                next.push(*ids.entry((own, signature)).or_insert(fresh));
            }
            let next_count = ids.len();
            blocks = next;
            if next_count == count {
                return blocks;
            }
            count = next_count;
        }
    }

    fn enabled(&self, state: StateId) -> BTreeSet<usize> {
        self.edges
            .get(state)
            .map(|out| out.iter().map(|&(label, _)| label).collect())
            .unwrap_or_default()
    }

    fn label(&self, id: usize) -> Option<L> {
        self.labels.get(id).cloned()
    }

    fn shortest_witness(
        &self,
        blocks: &[usize],
        start_left: StateId,
        start_right: StateId,
    ) -> Option<Counterexample<L>> {
        let differ = |p: StateId, q: StateId| blocks.get(p) != blocks.get(q);
        // Parent pointers: pair → (previous pair, label id).
        let mut parent: Parents = HashMap::new();
        let mut queue = VecDeque::new();
        parent.insert((start_left, start_right), None);
        queue.push_back((start_left, start_right));
        while let Some((p, q)) = queue.pop_front() {
            let (enabled_p, enabled_q) = (self.enabled(p), self.enabled(q));
            if enabled_p != enabled_q {
                let labels =
                    |ids: Vec<&usize>| ids.into_iter().filter_map(|&id| self.label(id)).collect();
                return Some(Counterexample {
                    trace: self.trace_to(&parent, (p, q)),
                    left_only: labels(enabled_p.difference(&enabled_q).collect()),
                    right_only: labels(enabled_q.difference(&enabled_p).collect()),
                    left_state: self.left.state_name(p).to_owned(),
                    right_state: self
                        .right
                        .state_name(q.saturating_sub(self.left.state_count()))
                        .to_owned(),
                });
            }
            let (Some(out_p), Some(out_q)) = (self.edges.get(p), self.edges.get(q)) else {
                continue;
            };
            let mut moves: Vec<(usize, StateId, StateId)> = Vec::new();
            for &(label, p2) in out_p {
                for &(other, q2) in out_q {
                    if label == other && differ(p2, q2) {
                        moves.push((label, p2, q2));
                    }
                }
            }
            // Visit labels in their natural order, for stable counterexamples.
            moves.sort_by(|a, b| self.labels.get(a.0).cmp(&self.labels.get(b.0)));
            for (label, p2, q2) in moves {
                if let std::collections::hash_map::Entry::Vacant(entry) = parent.entry((p2, q2)) {
                    entry.insert(Some(((p, q), label)));
                    queue.push_back((p2, q2));
                }
            }
        }
        None
    }

    fn trace_to(&self, parent: &Parents, mut pair: (StateId, StateId)) -> Vec<L> {
        let mut trace = Vec::new();
        while let Some(Some((previous, label))) = parent.get(&pair) {
            if let Some(label) = self.label(*label) {
                trace.push(label);
            }
            pair = *previous;
        }
        trace.reverse();
        trace
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lts(transitions: Vec<Vec<(&'static str, StateId)>>) -> Lts<&'static str> {
        let names = (0..transitions.len()).map(|i| format!("s{i}")).collect();
        Lts::from_transitions(names, transitions)
    }

    #[test]
    fn unfolded_loops_are_bisimilar() {
        let one = lts(vec![vec![("a", 0)]]);
        let two = lts(vec![vec![("a", 1)], vec![("a", 0)]]);
        assert_eq!(check(&one, &two), None);
    }

    #[test]
    fn finds_the_shortest_distinguishing_trace() {
        // a·b·c versus a·b·d, with a longer detour through a·a·... on both sides.
        let left = lts(vec![
            vec![("a", 1)],
            vec![("b", 2), ("a", 0)],
            vec![("c", 0)],
        ]);
        let right = lts(vec![
            vec![("a", 1)],
            vec![("b", 2), ("a", 0)],
            vec![("d", 0)],
        ]);
        let counterexample = check(&left, &right).unwrap();
        assert_eq!(counterexample.trace, vec!["a", "b"]);
        assert_eq!(counterexample.left_only, vec!["c"]);
        assert_eq!(counterexample.right_only, vec!["d"]);
        assert_eq!(
            counterexample.render("L", "R"),
            "after a · b: L can do c but R cannot; R can do d but L cannot"
        );
    }

    #[test]
    fn distinguishes_branching_from_traces() {
        // a·(b + c) versus a·b + a·c: trace equivalent, not bisimilar.
        let left = lts(vec![vec![("a", 1)], vec![("b", 2), ("c", 2)], vec![]]);
        let right = lts(vec![
            vec![("a", 1), ("a", 2)],
            vec![("b", 3)],
            vec![("c", 3)],
            vec![],
        ]);
        let counterexample = check(&left, &right).unwrap();
        assert_eq!(counterexample.trace, vec!["a"]);
        assert!(!counterexample.left_only.is_empty());
    }

    #[test]
    fn differs_at_the_start() {
        let left = lts(vec![vec![("a", 0)]]);
        let right = lts(vec![vec![]]);
        let counterexample = check(&left, &right).unwrap();
        assert!(counterexample.trace.is_empty());
        assert_eq!(
            counterexample.render("L", "R"),
            "at the start: L can do a but R cannot"
        );
    }
}
