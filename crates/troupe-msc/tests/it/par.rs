//! `par` and `coregion` in the MSC semantics, against the oracle: generated
//! concurrent workflows are simulated (the reference interpreter runs a
//! lifeline's parts as tasks of its own), and every simulated run is the
//! global workflow's run up to interleavings of branches
//! (`troupe_oracle::global::conforms`). Then each adjacent pair of events of
//! a lifeline's word is swapped: the online monitor and offline membership
//! (control mode) must both accept the mutant exactly when the oracle does
//! — it is the same run up to interleavings of branches *and* its events
//! can still happen in some order over FIFO channels per branch (decided
//! here by a greedy scheduler of this file, which is complete for FIFO
//! channels). Swaps across branches of one region are members; swaps
//! inside a branch, or across a region's boundary, are not.

use std::collections::{HashMap, VecDeque};
use troupe_check::ir::{LifelineId, StmtId, Workflow};
use troupe_msc::{
    Decisions, Event, Execution, MemberOptions, Message, Monitor, Semantics, SimOptions, simulate,
};
use troupe_oracle::generate::{self, Shape};
use troupe_oracle::global;
use troupe_oracle::seeds::{Rng, Seeds, repeat_hint};

/// Whether the events of `exec` can happen in some order over channels
/// that are FIFO per (sender, receiver, innermost branch): run any lifeline
/// whose next event is a send, an action, a decision, or a receive of the
/// message at the front of its channel, until none can move.
fn schedulable(w: &Workflow, exec: &Execution) -> bool {
    let branches = global::branches_of(w);
    let lane = |s: StmtId| branches.get(s.0 as usize).and_then(|p| p.last().copied());
    type Chan = (u32, u32, Option<(StmtId, usize)>);
    let mut chans: HashMap<Chan, VecDeque<Message>> = HashMap::new();
    let mut at = vec![0usize; exec.words.len()];
    loop {
        let mut moved = false;
        for (l, word) in exec.words.iter().enumerate() {
            while let Some(e) = word.get(at[l]) {
                match e {
                    Event::Send { to, msg } => chans
                        .entry((l as u32, to.0, lane(msg.stmt())))
                        .or_default()
                        .push_back(msg.clone()),
                    Event::Recv { from, msg } => {
                        let q = chans
                            .entry((from.0, l as u32, lane(msg.stmt())))
                            .or_default();
                        if q.front() != Some(msg) {
                            break;
                        }
                        q.pop_front();
                    }
                    Event::Act { .. } | Event::Decide { .. } => {}
                }
                at[l] += 1;
                moved = true;
            }
        }
        if !moved {
            return at.iter().zip(&exec.words).all(|(a, w)| *a == w.len())
                && chans.values().all(VecDeque::is_empty);
        }
    }
}

fn online(monitor: &Monitor, sem: &Semantics, exec: &Execution) -> bool {
    let lanes = &sem.projection().lanes;
    let mut m = monitor.fresh();
    let Some(events) = exec.linearize_lanes(&|s| lanes.of(s)) else {
        return false;
    };
    events.iter().all(|(l, e)| m.event(*l, e).is_ok()) && m.finish(false).is_ok()
}

fn offline(sem: &Semantics, exec: &Execution) -> bool {
    sem.check(
        exec,
        &MemberOptions {
            control: true,
            prefix: false,
        },
    )
    .is_ok()
}

#[test]
fn interleavings_of_branches_are_members_and_other_reorderings_are_not() {
    let seeds = Seeds::new(
        "interleavings_of_branches_are_members_and_other_reorderings_are_not",
        300,
    );
    let (mut members, mut non_members, mut runs) = (0usize, 0usize, 0usize);
    for seed in seeds.iter() {
        let hint = repeat_hint(seed);
        let mut rng = Rng::new(seed);
        let shape = Shape {
            lifelines: rng.range(3, 5),
            max_depth: rng.range(1, 3),
            max_block: rng.range(1, 4),
            stmts: rng.range(4, 24),
            asynchronous: false,
            max_bound: 2,
            par: true,
        };
        let program = generate::program(seed, &shape);
        let w = &program.workflows[0];
        let sem = Semantics::new(&program, w).unwrap();
        let monitor = Monitor::new(&program, w).unwrap();
        let tags = |s| sem.projection().construct(s).map(|c| c.tag);
        let inputs = generate::inputs(w, seed);
        let expected = global::run(w, &inputs, true, &tags).unwrap();
        let sim = simulate(
            &program,
            w,
            sem.projection(),
            &inputs,
            &SimOptions {
                seed,
                decisions: Decisions::Evaluate,
                loop_bound: None,
                max_steps: 1_000_000,
            },
        )
        .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{hint}"));
        assert!(
            sim.stuck.is_empty(),
            "seed {seed}: the simulation deadlocked\n{hint}"
        );
        let exec = sim.execution;
        global::conforms(w, &expected, &exec)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{hint}"));
        assert!(
            online(&monitor, &sem, &exec),
            "seed {seed}: the monitor rejects the run\n{hint}"
        );
        assert!(
            offline(&sem, &exec),
            "seed {seed}: membership rejects the run\n{hint}"
        );
        runs += 1;
        for l in 0..exec.words.len() {
            for i in 0..exec.words[l].len().saturating_sub(1) {
                let (a, b) = (&exec.words[l][i], &exec.words[l][i + 1]);
                if a.stmt() == b.stmt() {
                    continue;
                }
                let mut mutant = exec.clone();
                mutant.words[l].swap(i, i + 1);
                let oracle =
                    global::conforms(w, &expected, &mutant).is_ok() && schedulable(w, &mutant);
                let (on, off) = (online(&monitor, &sem, &mutant), offline(&sem, &mutant));
                assert_eq!(
                    (on, off),
                    (oracle, oracle),
                    "seed {seed}: {} events {i} and {} swapped ({a} / {b}): monitor {on}, membership {off}, oracle {oracle}\n{hint}",
                    w.lifeline(LifelineId(l as u32)).name,
                    i + 1
                );
                if oracle {
                    members += 1;
                } else {
                    non_members += 1;
                }
            }
        }
    }
    eprintln!("{runs} runs: {members} swaps still members, {non_members} not");
    if seeds.cases >= 100 {
        assert!(
            members > 100 && non_members > 1000,
            "{members} / {non_members}"
        );
    }
}
