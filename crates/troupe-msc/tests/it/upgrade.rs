//! `troupe_msc::upgrade` against the brute-force oracle of
//! `troupe_oracle::upgrade`: random workflows P, random edits P′ (a
//! statement inserted, removed or moved, branches swapped, a guard changed,
//! a lifeline added, an action renamed), random runs of P cut at random
//! points, with or without a call under way. A run moves exactly when some
//! execution of bounded ⟦P′⟧ extends it on every lifeline with the same
//! statements and keys.

use std::collections::BTreeSet;
use troupe_check::ir::{Call, LifelineId, Program, StmtId, StmtKind};
use troupe_msc::upgrade::{Version, upgrade};
use troupe_msc::{Event, Execution, Monitor};
use troupe_oracle::edit::{Edit, edit};
use troupe_oracle::generate::{self, Shape};
use troupe_oracle::global;
use troupe_oracle::seeds::{Rng, Seeds, repeat_hint};
use troupe_project::ControlTag;

fn calls(program: &Program, stmt: StmtId) -> Option<u32> {
    match &program.workflows[0]
        .stmts_by_id()
        .get(stmt.0 as usize)
        .copied()
        .flatten()?
        .kind
    {
        StmtKind::Act {
            call: Call::Action { action, .. },
            ..
        } => Some(action.0),
        _ => None,
    }
}

#[test]
fn upgrade_accepts_exactly_the_cuts_the_brute_force_oracle_accepts() {
    let seeds = Seeds::new(
        "upgrade_accepts_exactly_the_cuts_the_brute_force_oracle_accepts",
        600,
    );
    let (mut moved, mut refused, mut compared) = (0, 0, 0);
    let mut edits = std::collections::HashMap::new();
    for seed in seeds.iter() {
        let mut rng = Rng::new(seed);
        let shape = Shape {
            asynchronous: true,
            ..Shape::small(&mut rng)
        };
        let old = generate::program(seed, &shape);
        let (new, how) = edit(&old, &mut rng);
        if how == Edit::Nothing {
            continue;
        }
        let (ow, nw) = (&old.workflows[0], &new.workflows[0]);
        let Ok(old_v) = Version::new(&old, ow) else {
            continue;
        };
        // An edit may make a workflow the projection refuses (a lifeline
        // in a branch its owner cannot tell): nothing to move to.
        let Ok(new_v) = Version::new(&new, nw) else {
            continue;
        };
        let old_p = troupe_project::project(&old, ow).unwrap();
        let new_p = troupe_project::project(&new, nw).unwrap();
        let old_tags = |s: StmtId| old_p.construct(s).map(|c| c.tag);
        let new_tags = |s: StmtId| -> Option<ControlTag> { new_p.construct(s).map(|c| c.tag) };
        let inputs = generate::inputs(ow, seed);
        let Ok(run) = global::run(ow, &inputs, true, &old_tags) else {
            continue;
        };
        let order = run.execution.linearize().expect("a run has an order");
        let k = rng.below(order.len() + 1);
        let recorded: Vec<(LifelineId, Event)> = order[..k].to_vec();
        let mut cut = Execution::new(ow.lifelines.len());
        for (l, e) in &recorded {
            cut.words[l.0 as usize].push(e.clone());
        }
        // Keys of the recorded calls, counted as the runtime counts them.
        let mut steps = BTreeSet::new();
        for (l, word) in cut.words.iter().enumerate() {
            let mut counts = std::collections::HashMap::new();
            for e in word {
                if let (Event::Act { stmt, .. }, Some(a)) = (e, e_call(&old, e)) {
                    let n = counts.entry(a).or_insert(0u64);
                    steps.insert(format!(
                        "{}/{}#{n}",
                        ow.lifelines[l].name, old.actions[a as usize].name
                    ));
                    let _ = stmt;
                    *n += 1;
                }
            }
        }
        // Sometimes a call under way: the next event of a lifeline, when
        // it is a call, recorded as a step without its event.
        let mut open = Vec::new();
        if rng.chance(1, 2) {
            let l = rng.below(ow.lifelines.len());
            if let Some(e @ Event::Act { stmt, .. }) =
                run.execution.words[l].get(cut.words[l].len())
                && let Some(a) = e_call(&old, e)
            {
                let n = cut.words[l]
                    .iter()
                    .filter(|x| e_call(&old, x) == Some(a))
                    .count();
                steps.insert(format!(
                    "{}/{}#{n}",
                    ow.lifelines[l].name, old.actions[a as usize].name
                ));
                open.push((LifelineId(l as u32), *stmt));
            }
        }
        let Some(expected) = troupe_oracle::upgrade::compatible(
            (&old, ow),
            (&new, nw),
            &cut,
            &open,
            &new_tags,
            3,
            4000,
        ) else {
            continue;
        };
        let got = upgrade(&old_v, &new_v, &recorded, &steps);
        assert_eq!(
            got.is_ok(),
            expected,
            "edit {how:?}; cut after {k} of {} events, calls under way {open:?}; upgrade said {:?}\n{}",
            order.len(),
            got.as_ref().err().map(ToString::to_string),
            repeat_hint(seed)
        );
        compared += 1;
        *edits.entry(format!("{how:?}")).or_insert(0) += 1;
        match got {
            Ok(m) => {
                moved += 1;
                // The moved events are a prefix of a run of P′, for a
                // fresh monitor too, on the same lifelines.
                let mut monitor = Monitor::with_projection(nw, &new_p);
                for (l, e) in &m.events {
                    monitor.event(*l, e).unwrap();
                }
                monitor.finish(true).unwrap();
                assert_eq!(m.events.len(), recorded.len());
            }
            Err(_) => refused += 1,
        }
    }
    eprintln!("{compared} compared, {moved} moved, {refused} refused ({edits:?})");
    assert!(
        compared >= 100 && moved >= 20 && refused >= 20,
        "too few cases to mean anything: {compared} compared, {moved} moved, {refused} refused ({edits:?})"
    );
}

fn e_call(program: &Program, e: &Event) -> Option<u32> {
    match e {
        Event::Act { stmt, .. } => calls(program, *stmt),
        _ => None,
    }
}
