//! The lanes in which a lifeline counts its actions (`Lanes::key_lane`):
//! the step keys `Lifeline/action#n` that journal a run's actions must not
//! depend on how a lifeline's parts of a `par` interleave, or a resumed run
//! that interleaves them otherwise would take one action's recorded result
//! for another's.
//!
//! Two checks on generated workflows with `par` regions and coregions
//! (`troupe_oracle::generate`):
//!
//! - the key lane of every action, against a naive reading of its rule from
//!   the workflow's syntax (`troupe_oracle::global::branches_of` and
//!   `troupe_oracle::reference::lifelines`): the innermost enclosing branch
//!   of a `par` in two or more of whose branches the acting lifeline takes
//!   part, else the top level;
//! - the property itself: over every schedule of the projected programs
//!   (`troupe_oracle::explore`, every interleaving of parts included), the
//!   runs that take the same decisions give every action the same key,
//!   keys counted as the runtime counts them (per lifeline, per key lane
//!   and action), and no two actions of a lifeline share a key.

use std::collections::{BTreeMap, HashMap, HashSet};
use troupe_check::ir::{ActionId, Block, Call, LifelineId, StmtId, StmtKind, Workflow};
use troupe_msc::Event;
use troupe_oracle::explore::explore;
use troupe_oracle::generate::{self, Shape};
use troupe_oracle::global::branches_of;
use troupe_oracle::reference::lifelines;
use troupe_oracle::seeds::{Seeds, repeat_hint};
use troupe_project::lanes::occurrence_key;
use troupe_project::{Lanes, project};

/// Every `act` that calls an action: its lifeline and action.
fn actions(workflow: &Workflow) -> BTreeMap<StmtId, (LifelineId, ActionId)> {
    fn walk(b: &Block, out: &mut BTreeMap<StmtId, (LifelineId, ActionId)>) {
        for s in &b.stmts {
            match &s.kind {
                StmtKind::Act {
                    at,
                    call: Call::Action { action, .. },
                    ..
                } => {
                    out.insert(s.id, (*at, *action));
                }
                StmtKind::Act { .. } | StmtKind::Msg { .. } => {}
                StmtKind::If {
                    then: a,
                    otherwise: c,
                    ..
                }
                | StmtKind::While {
                    body: a, exit: c, ..
                } => {
                    walk(a, out);
                    walk(c, out);
                }
                StmtKind::Par { branches } => branches.iter().for_each(|b| walk(b, out)),
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(&workflow.body, &mut out);
    out
}

/// The branches of every `par`, by statement.
fn pars(workflow: &Workflow) -> HashMap<StmtId, Vec<Block>> {
    fn walk(b: &Block, out: &mut HashMap<StmtId, Vec<Block>>) {
        for s in &b.stmts {
            match &s.kind {
                StmtKind::Par { branches } => {
                    out.insert(s.id, branches.clone());
                    branches.iter().for_each(|b| walk(b, out));
                }
                StmtKind::If {
                    then: a,
                    otherwise: c,
                    ..
                }
                | StmtKind::While {
                    body: a, exit: c, ..
                } => {
                    walk(a, out);
                    walk(c, out);
                }
                StmtKind::Act { .. } | StmtKind::Msg { .. } => {}
            }
        }
    }
    let mut out = HashMap::new();
    walk(&workflow.body, &mut out);
    out
}

fn concurrent(seed: u64) -> Option<troupe_check::ir::Program> {
    // Asynchronous actions: several actions, so that counts per action
    // are told apart.
    generate::program_with_par(seed, |rng| Shape {
        asynchronous: true,
        ..Shape::small_concurrent(rng, 10)
    })
}

#[test]
fn key_lanes_are_the_innermost_branch_where_the_lifeline_runs_several_parts() {
    let seeds = Seeds::new(
        "key_lanes_are_the_innermost_branch_where_the_lifeline_runs_several_parts",
        300,
    );
    let (mut checked, mut keyed) = (0usize, 0usize);
    for seed in seeds.iter() {
        let Some(program) = concurrent(seed) else {
            continue;
        };
        let w = &program.workflows[0];
        let lanes = Lanes::new(w);
        let paths = branches_of(w);
        let pars = pars(w);
        for (&stmt, &(at, _)) in &actions(w) {
            let expected = paths[stmt.0 as usize]
                .iter()
                .rev()
                .find(|(par, _)| {
                    pars[par]
                        .iter()
                        .filter(|b| lifelines(b).contains(&at))
                        .count()
                        >= 2
                })
                .map_or(0, |&(par, branch)| lanes.branch(par, branch as u32));
            assert_eq!(
                lanes.key_lane(at, stmt),
                expected,
                "seed {seed}: the key lane of s{} at {}\n{}",
                stmt.0,
                w.lifelines[at.0 as usize].name,
                repeat_hint(seed)
            );
            checked += 1;
            keyed += usize::from(expected != 0);
        }
    }
    eprintln!("{checked} actions checked, {keyed} counted in a branch of their own");
    if seeds.cases >= 100 {
        assert!(
            keyed >= 100,
            "too few actions in concurrent parts ({keyed})"
        );
    }
}

#[test]
fn step_keys_do_not_depend_on_how_parts_interleave() {
    let seeds = Seeds::new("step_keys_do_not_depend_on_how_parts_interleave", 200);
    let (mut groups, mut compared) = (0usize, 0usize);
    for seed in seeds.iter() {
        let hint = repeat_hint(seed);
        let Some(program) = concurrent(seed) else {
            continue;
        };
        let w = &program.workflows[0];
        let projection = project(&program, w).unwrap();
        let Ok(explored) = explore(w, &projection.flatten(), 1, 5_000) else {
            continue;
        };
        let acts = actions(w);
        // Runs with the same decisions, by construct, are one run up to
        // the interleaving of parts: each part is sequential and takes the
        // decisions of its constructs in order.
        type Decisions = BTreeMap<StmtId, Vec<bool>>;
        // An action's identity: lifeline, statement, and which of that
        // statement's runs at the lifeline (a loop runs it again).
        type Keys = BTreeMap<(u32, StmtId, usize), (ActionId, u64)>;
        let mut by_run: HashMap<Decisions, Keys> = HashMap::new();
        for x in &explored.executions {
            let mut decisions = Decisions::new();
            let mut keys = Keys::new();
            for (l, word) in x.words.iter().enumerate() {
                let lifeline = LifelineId(l as u32);
                let mut runs: HashMap<StmtId, usize> = HashMap::new();
                // The runtime's counters: per (key lane, action).
                let mut counts: HashMap<(u32, ActionId), u64> = HashMap::new();
                let mut taken = HashSet::new();
                for e in word {
                    match e {
                        Event::Decide { stmt, decision, .. } => {
                            decisions.entry(*stmt).or_default().push(*decision);
                        }
                        Event::Act { stmt, .. } => {
                            let Some(&(_, action)) = acts.get(stmt) else {
                                continue;
                            };
                            let lane = projection.lanes.key_lane(lifeline, *stmt);
                            let n = counts.entry((lane, action)).or_default();
                            let key = (action, occurrence_key(lane, *n));
                            *n += 1;
                            assert!(
                                taken.insert(key),
                                "seed {seed}: two actions of {} share the key {key:?}\n{hint}",
                                w.lifelines[l].name
                            );
                            let run = runs.entry(*stmt).or_default();
                            keys.insert((lifeline.0, *stmt, *run), key);
                            *run += 1;
                        }
                        _ => {}
                    }
                }
            }
            match by_run.get(&decisions) {
                None => {
                    by_run.insert(decisions, keys);
                    groups += 1;
                }
                Some(first) => {
                    assert_eq!(
                        first, &keys,
                        "seed {seed}: the same run, interleaved otherwise, keys its actions otherwise\n{hint}"
                    );
                    compared += 1;
                }
            }
        }
    }
    eprintln!("{groups} runs, {compared} other interleavings of them compared");
    if seeds.cases >= 100 {
        assert!(
            compared >= 1000,
            "too few interleavings compared ({compared})"
        );
    }
}
