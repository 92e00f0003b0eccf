//! Finite labelled transition systems (LTS), built by exploring the states reachable
//! from an initial state.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

/// Index of a state in an [`Lts`].
pub type StateId = usize;

/// A finite labelled transition system with labels `L`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lts<L> {
    names: Vec<String>,
    transitions: Vec<Vec<(L, StateId)>>,
    initial: StateId,
}

/// Exploration stopped because the reachable state space exceeds the given bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooManyStates {
    /// The bound.
    pub limit: usize,
}

impl<L: Clone> Lts<L> {
    /// Explores the states reachable from `initial` breadth-first, `step` giving each
    /// state's outgoing transitions and `name` a readable name per state. Fails once
    /// more than `limit` states are found.
    pub fn explore<S, Step, Name>(
        initial: S,
        step: Step,
        name: Name,
        limit: usize,
    ) -> Result<Self, TooManyStates>
    where
        S: Clone + Eq + Hash,
        Step: Fn(&S) -> Vec<(L, S)>,
        Name: Fn(&S) -> String,
    {
        let mut index: HashMap<S, StateId> = HashMap::new();
        let mut states: Vec<S> = Vec::new();
        let mut queue = VecDeque::new();
        index.insert(initial.clone(), 0);
        states.push(initial);
        queue.push_back(0);
        let mut transitions: Vec<Vec<(L, StateId)>> = vec![Vec::new()];
        while let Some(current) = queue.pop_front() {
            let Some(state) = states.get(current).cloned() else {
                continue;
            };
            let mut out = Vec::new();
            for (label, target) in step(&state) {
                let target_id = match index.get(&target) {
                    Some(&id) => id,
                    None => {
                        let id = states.len();
                        if id >= limit {
                            return Err(TooManyStates { limit });
                        }
                        index.insert(target.clone(), id);
                        states.push(target);
                        transitions.push(Vec::new());
                        queue.push_back(id);
                        id
                    }
                };
                out.push((label, target_id));
            }
            if let Some(slot) = transitions.get_mut(current) {
                *slot = out;
            }
        }
        Ok(Lts {
            names: states.iter().map(name).collect(),
            transitions,
            initial: 0,
        })
    }

    /// Builds an LTS from explicit transitions; targets out of range are dropped.
    pub fn from_transitions(names: Vec<String>, transitions: Vec<Vec<(L, StateId)>>) -> Self {
        let count = names.len();
        let mut transitions: Vec<Vec<(L, StateId)>> = transitions
            .into_iter()
            .map(|out| {
                out.into_iter()
                    .filter(|(_, target)| *target < count)
                    .collect()
            })
            .collect();
        transitions.resize(count, Vec::new());
        Lts {
            names,
            transitions,
            initial: 0,
        }
    }

    /// The initial state.
    pub fn initial(&self) -> StateId {
        self.initial
    }

    /// Number of states.
    pub fn state_count(&self) -> usize {
        self.names.len()
    }

    /// Number of transitions.
    pub fn transition_count(&self) -> usize {
        self.transitions.iter().map(Vec::len).sum()
    }

    /// The outgoing transitions of `state` (empty for an unknown state).
    pub fn successors(&self, state: StateId) -> &[(L, StateId)] {
        self.transitions.get(state).map_or(&[], Vec::as_slice)
    }

    /// A readable name of `state`.
    pub fn state_name(&self, state: StateId) -> &str {
        self.names.get(state).map_or("?", String::as_str)
    }
}

impl<L: Clone + Eq> Lts<L> {
    /// Whether no state has two transitions with the same label.
    pub fn is_deterministic(&self) -> bool {
        self.transitions.iter().all(|out| {
            out.iter()
                .enumerate()
                .all(|(i, (label, _))| out.iter().skip(i + 1).all(|(other, _)| other != label))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explores_reachable_states_only() {
        // A counter modulo 3; state 5 is unreachable.
        let lts = Lts::explore(0u8, |n| vec![("inc", (n + 1) % 3)], |n| n.to_string(), 10).unwrap();
        assert_eq!(lts.state_count(), 3);
        assert_eq!(lts.transition_count(), 3);
        assert!(lts.is_deterministic());
        assert_eq!(lts.state_name(lts.initial()), "0");
        assert_eq!(lts.successors(99), &[]);
    }

    #[test]
    fn stops_at_the_limit() {
        let explored = Lts::explore(0u32, |n| vec![("inc", n + 1)], |n| n.to_string(), 100);
        assert_eq!(explored, Err(TooManyStates { limit: 100 }));
    }

    #[test]
    fn drops_dangling_transitions() {
        let lts = Lts::from_transitions(vec!["a".into()], vec![vec![("x", 0), ("y", 7)]]);
        assert_eq!(lts.successors(0), &[("x", 0)]);
    }
}
