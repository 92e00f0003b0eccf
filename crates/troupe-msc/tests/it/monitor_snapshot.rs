//! Checkpoints of the online monitor: a monitor restored from a snapshot
//! (into a monitor built separately, as a resumed process does) continues
//! exactly as the uninterrupted one — on members of random workflows and on
//! their mutants, with the offline membership check as the oracle — and a
//! snapshot that does not fit the workflow is refused, never followed.

use proptest::prelude::*;
use troupe_check::ir::{LifelineId, Program};
use troupe_msc::{EnumOptions, Event, Execution, MemberOptions, Monitor, Semantics};
use troupe_project::testing::arb_program;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 200,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// The verdict of a monitor that is snapshot after every `every` events
/// and continued by a monitor restored from the snapshot.
fn restarted(program: &Program, events: &[(LifelineId, Event)], every: usize) -> bool {
    let w = &program.workflows[0];
    let blank = Monitor::new(program, w).unwrap();
    let mut m = blank.fresh();
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
        }
        if m.event(*l, e).is_err() {
            return false;
        }
    }
    m.finish(false).is_ok()
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
}
