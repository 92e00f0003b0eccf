//! Checkpoints of the online monitor: a monitor restored from a snapshot
//! (into a monitor built separately, as a resumed process does) continues
//! exactly as the uninterrupted one — on members of random workflows and on
//! their mutants, with the offline membership check as the oracle — and a
//! snapshot that does not fit the workflow is refused, never followed.
//!
//! Workflows with `par` regions and coregions are checked the same way,
//! on runs in which lifelines' parts interleave (every schedule of the
//! projected programs, from `troupe_oracle::explore`), so that snapshots
//! are taken while parts are running: each part's position must survive
//! the restore.

use proptest::prelude::*;
use troupe_check::ir::{LifelineId, Program};
use troupe_msc::{EnumOptions, Event, Execution, MemberOptions, Monitor, Semantics};
use troupe_oracle::explore::explore;
use troupe_oracle::generate::{self, Shape};
use troupe_oracle::seeds::{Seeds, repeat_hint};
use troupe_project::testing::arb_program;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 200,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// The restore test above on workflows with `par` regions and coregions,
/// on runs whose lifelines' parts interleave (a sample spread over every
/// schedule of the projected programs, loops at most one round): members
/// are accepted across restarts, and neighbours exactly when offline
/// membership accepts them. A restore that lost a running part's position
/// would expect that part's events again (or the snapshot would not round
/// trip), and fail here.
#[test]
fn a_restored_monitor_continues_as_the_uninterrupted_one_inside_parts() {
    let seeds = Seeds::new(
        "a_restored_monitor_continues_as_the_uninterrupted_one_inside_parts",
        150,
    );
    let (mut runs, mut neighbours_checked, mut with_parts) = (0usize, 0usize, 0usize);
    for seed in seeds.iter() {
        let hint = repeat_hint(seed);
        let Some(program) =
            generate::program_with_par(seed, |rng| Shape::small_concurrent(rng, 10))
        else {
            continue;
        };
        let w = &program.workflows[0];
        let sem = Semantics::new(&program, w).unwrap();
        let Ok(explored) = explore(w, &sem.projection().flatten(), 1, 4_000) else {
            // Too many schedules for this budget.
            continue;
        };
        let all = &explored.executions;
        // Spread over the schedules, not the first few of the depth-first
        // order (which share most of their events).
        let step = (all.len() / 12).max(1);
        for (i, x) in all.iter().step_by(step).enumerate() {
            let every = 1 + (seed as usize + i) % 3;
            let events = events_of(&sem, x).expect("a run has an order");
            let (ok, parts) = restarted_counting(&program, &events, every);
            assert!(
                ok,
                "seed {seed}: a member refused after restarts: {x:?}\n{hint}"
            );
            with_parts += parts;
            runs += 1;
            for m in neighbours(x, all).into_iter().take(8) {
                let Some(events) = events_of(&sem, &m) else {
                    continue;
                };
                assert_eq!(
                    restarted(&program, &events, every),
                    offline(&sem, &m),
                    "seed {seed}: restarted and offline verdicts differ on {m:?}\n{hint}"
                );
                neighbours_checked += 1;
            }
        }
    }
    eprintln!(
        "{runs} runs with parts, {neighbours_checked} neighbours, {with_parts} snapshots taken while parts ran"
    );
    if seeds.cases >= 100 {
        assert!(
            runs >= 500 && with_parts >= 1000,
            "too few: {runs} runs, {with_parts} snapshots with parts"
        );
    }
}

/// Random small programs with a `par` or a coregion.
fn arb_concurrent_program() -> impl Strategy<Value = Program> {
    any::<u64>().prop_filter_map("no `par` drawn", |seed| {
        generate::program_with_par(seed, |rng| Shape::small_concurrent(rng, 10))
    })
}

/// One order in which `x`'s events can happen, over the channels of each
/// `par` branch apart.
fn events_of(sem: &Semantics, x: &Execution) -> Option<Vec<(LifelineId, Event)>> {
    let lanes = &sem.projection().lanes;
    x.linearize_lanes(&|s| lanes.of(s))
}

/// Whether some cursor of `state` is inside a `par` with its parts.
fn has_parts(state: &troupe_msc::MonitorState) -> bool {
    state.cursors.iter().any(|c| !c.parts.is_empty())
}

/// The verdict of a monitor that is snapshot after every `every` events
/// and continued by a monitor restored from the snapshot.
fn restarted(program: &Program, events: &[(LifelineId, Event)], every: usize) -> bool {
    restarted_counting(program, events, every).0
}

/// [`restarted`], and how many of its snapshots held running parts.
fn restarted_counting(
    program: &Program,
    events: &[(LifelineId, Event)],
    every: usize,
) -> (bool, usize) {
    let w = &program.workflows[0];
    let blank = Monitor::new(program, w).unwrap();
    let mut m = blank.fresh();
    let mut with_parts = 0;
    for (i, (l, e)) in events.iter().enumerate() {
        if i % every == 0 {
            let state = m.snapshot();
            m = blank
                .restore(&state)
                .expect("a monitor's own snapshot fits");
            assert_eq!(
                m.snapshot(),
                state,
                "restore is not the inverse of snapshot"
            );
            with_parts += usize::from(has_parts(&state));
        }
        if m.event(*l, e).is_err() {
            return (false, with_parts);
        }
    }
    (m.finish(false).is_ok(), with_parts)
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

/// Some executions near `x` that may or may not be members: a word
/// replaced by another member's, an event dropped, two swapped.
fn neighbours(x: &Execution, others: &[Execution]) -> Vec<Execution> {
    let mut out = Vec::new();
    for (l, word) in x.words.iter().enumerate() {
        if let Some(y) = others.get(l % others.len().max(1)) {
            let mut m = x.clone();
            m.words[l] = y.words[l].clone();
            out.push(m);
        }
        if !word.is_empty() {
            let mut m = x.clone();
            m.words[l].remove(word.len() / 2);
            out.push(m);
        }
        if word.len() > 1 {
            let mut m = x.clone();
            m.words[l].swap(0, 1);
            out.push(m);
        }
    }
    out
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_restored_monitor_continues_as_the_uninterrupted_one(
        program in arb_program(),
        every in 1usize..5,
    ) {
        let w = &program.workflows[0];
        let sem = Semantics::new(&program, w).unwrap();
        let e = sem.enumerate(&EnumOptions { unroll: 2, control: true, limit: 30 });
        for x in &e.executions {
            let events = x.linearize().expect("a member has an order");
            prop_assert!(restarted(&program, &events, every), "a member refused after restarts");
            for m in neighbours(x, &e.executions) {
                let Some(events) = m.linearize() else { continue };
                prop_assert_eq!(restarted(&program, &events, every), offline(&sem, &m));
            }
        }
    }

    #[test]
    fn a_damaged_snapshot_is_refused_or_harmless(
        program in arb_program(),
        damage in any::<(u8, u32, u32)>(),
    ) {
        let w = &program.workflows[0];
        let sem = Semantics::new(&program, w).unwrap();
        let e = sem.enumerate(&EnumOptions { unroll: 1, control: true, limit: 4 });
        let blank = Monitor::new(&program, w).unwrap();
        for x in &e.executions {
            let events = x.linearize().unwrap();
            let mut m = blank.fresh();
            for (l, ev) in events.iter().take(events.len() / 2) {
                let _ = m.event(*l, ev);
            }
            let mut state = m.snapshot();
            let (what, a, b) = damage;
            let l = a as usize % state.cursors.len().max(1);
            match what % 4 {
                0 => state.cursors.pop().map_or((), |_| ()),
                1 => if let Some(f) = state.cursors.get_mut(l).and_then(|c| c.frames.last_mut()) {
                    f.1 = b;
                },
                2 => if let Some(f) = state.cursors.get_mut(l).and_then(|c| c.frames.last_mut()) {
                    f.0 = b % 64;
                    f.2 = (b % 7) as u8;
                },
                _ => if let Some(c) = state.cursors.get_mut(l) {
                    c.telling = Some((b % 2 == 0, b % 9));
                },
            }
            // Refused, or followed without a panic to a verdict.
            if let Ok(mut m) = blank.restore(&state) {
                for (l, ev) in events.iter().skip(events.len() / 2) {
                    let _ = m.event(*l, ev);
                }
                let _ = m.finish(false);
            }
        }
    }

    #[test]
    fn a_damaged_snapshot_with_parts_is_refused_or_harmless(
        program in arb_concurrent_program(),
        damage in any::<(u8, u32, u32)>(),
    ) {
        let w = &program.workflows[0];
        let sem = Semantics::new(&program, w).unwrap();
        let e = sem.enumerate(&EnumOptions { unroll: 1, control: true, limit: 4 });
        let blank = Monitor::new(&program, w).unwrap();
        for x in &e.executions {
            let events = events_of(&sem, x).unwrap();
            let (what, a, b) = damage;
            let mut m = blank.fresh();
            // Snapshot inside a `par` where there is such a point.
            let mut cut = events.len() / 2;
            for (i, (l, ev)) in events.iter().enumerate() {
                let _ = m.event(*l, ev);
                cut = i + 1;
                if has_parts(&m.snapshot()) && i as u32 >= a % 4 {
                    break;
                }
            }
            let mut state = m.snapshot();
            if let Some(c) = state.cursors.iter_mut().find(|c| !c.parts.is_empty()) {
                let k = a as usize % c.parts.len();
                match what % 4 {
                    0 => { c.parts.remove(k); }
                    1 => c.parts[k].0 = b % 16,
                    2 => { c.parts[k].1.frames.pop(); }
                    _ => if let Some(f) = c.parts[k].1.frames.last_mut() {
                        f.1 = b % 8;
                    },
                }
            }
            // Refused, or followed without a panic to a verdict.
            if let Ok(mut m) = blank.restore(&state) {
                for (l, ev) in events.iter().skip(cut) {
                    let _ = m.event(*l, ev);
                }
                let _ = m.finish(false);
            }
        }
    }
}
