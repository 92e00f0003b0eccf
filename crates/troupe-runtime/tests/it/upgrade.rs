//! A run moved to a new version of its workflow goes on under it without
//! asking again: random workflows P with asynchronous actions, random edits
//! P′ that keep them well-typed (a message inserted, a lifeline added,
//! branches swapped, a guard changed), runs of P cut at random points.
//! Whenever `troupe_msc::upgrade` lets a cut move, the engine of P′ with a
//! journal holding the cut's recorded results completes, its run verifies
//! against P′, starts with the moved events and returns what the global
//! workflow P′ returns on the same inputs (`troupe_oracle::global`), and no
//! model, effect, person or tool is called for a recorded step: each
//! performer is called exactly as often as P′ performs its action minus the
//! recorded results it took.

use crate::oracle::{Ledger, engine_of, performed};
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use troupe_check::Value;
use troupe_check::ir::{Call, LifelineId, Program, StmtId, StmtKind};
use troupe_llm::BoxFuture;
use troupe_msc::Event;
use troupe_msc::upgrade::{Version, upgrade};
use troupe_oracle::edit::{Edit, edit};
use troupe_oracle::generate::{self, BUMP, Shape};
use troupe_oracle::global;
use troupe_oracle::seeds::{Rng, Seeds, repeat_hint};
use troupe_runtime::{
    Checkpoint, Recorded, RunError, RunJournal, RunOptions, Schedule, StepKey, StepKind,
};

/// Recorded results by key; remembers which were taken.
struct Replay {
    results: HashMap<String, Vec<Value>>,
    taken: Mutex<BTreeSet<String>>,
}

impl RunJournal for Replay {
    fn event(&self, _: LifelineId, _: &Event) {}

    fn recorded(&self, key: &StepKey) -> Option<Recorded> {
        let key = key.to_string();
        let values = self.results.get(&key)?.clone();
        self.taken.lock().unwrap().insert(key);
        Some(Recorded::Done(values))
    }

    fn begin_effect(
        &self,
        _: &StepKey,
        _: StepKind,
        _: &[Value],
    ) -> BoxFuture<'static, Result<(), String>> {
        Box::pin(async { Ok(()) })
    }

    fn record(
        &self,
        _: &StepKey,
        _: StepKind,
        _: &[Value],
        _: &[Value],
    ) -> BoxFuture<'static, Result<(), String>> {
        Box::pin(async { Ok(()) })
    }

    fn checkpoint(&self, _: Checkpoint) -> Option<u64> {
        None
    }

    fn finish(
        &self,
        _: Result<&[(String, Value)], &RunError>,
    ) -> BoxFuture<'static, Result<(), String>> {
        Box::pin(async { Ok(()) })
    }
}

/// The action `stmt` of the first workflow of `p` calls, if any.
fn action_at(p: &Program, stmt: StmtId) -> Option<u32> {
    match &p.workflows[0]
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
fn a_moved_run_completes_under_the_new_version_and_asks_nothing_again() {
    let seeds = Seeds::new(
        "a_moved_run_completes_under_the_new_version_and_asks_nothing_again",
        100,
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (mut moved, mut taken_total) = (0usize, 0usize);
    for seed in seeds.iter() {
        let hint = repeat_hint(seed);
        let mut rng = Rng::new(seed);
        let old = generate::program(seed, &Shape::large(&mut rng, 60));
        // Edits that keep a workflow well-typed.
        let (new, how) = loop {
            let (p, how) = edit(&old, &mut rng);
            if matches!(
                how,
                Edit::Inserted | Edit::AddedLifeline | Edit::SwappedBranches | Edit::ChangedGuard
            ) {
                break (p, how);
            }
        };
        let (ow, nw) = (&old.workflows[0], &new.workflows[0]);
        let (Ok(old_v), Ok(new_v)) = (Version::new(&old, ow), Version::new(&new, nw)) else {
            continue;
        };
        let old_p = troupe_project::project(&old, ow).unwrap();
        let new_p = troupe_project::project(&new, nw).unwrap();
        let inputs = generate::inputs(ow, seed);
        let run = global::run(ow, &inputs, true, &|s| old_p.construct(s).map(|c| c.tag))
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        // P′ on the same inputs (a changed guard may loop for ever).
        let Ok(expected) = global::run(nw, &inputs, true, &|s| new_p.construct(s).map(|c| c.tag))
        else {
            continue;
        };
        let order = run.execution.linearize().unwrap();
        let k = rng.below(order.len() + 1);
        let recorded = &order[..k];
        // The cut's recorded results, keyed as the runtime keys them.
        let mut results = HashMap::new();
        let mut counts: HashMap<(u32, u32), u64> = HashMap::new();
        for (l, e) in recorded {
            if let Event::Act {
                stmt,
                outputs: Some(values),
            } = e
                && let Some(a) = action_at(&old, *stmt)
                && a != BUMP.0
            {
                let n = counts.entry((l.0, a)).or_default();
                results.insert(
                    format!(
                        "{}/{}#{n}",
                        ow.lifelines[l.0 as usize].name, old.actions[a as usize].name
                    ),
                    values.clone(),
                );
                *n += 1;
            }
        }
        let steps: BTreeSet<String> = results.keys().cloned().collect();
        let Ok(m) = upgrade(&old_v, &new_v, recorded, &steps) else {
            continue;
        };
        moved += 1;
        let ledger = Arc::new(Ledger {
            state: AtomicU64::new(seed ^ 0xd1ce),
            ..Ledger::default()
        });
        let journal = Arc::new(Replay {
            results,
            taken: Mutex::new(BTreeSet::new()),
        });
        let engine = engine_of(&new, &ledger);
        let outcome = rt
            .block_on(engine.run(
                inputs.clone(),
                RunOptions {
                    run_id: format!("upgrade-{seed}"),
                    seed,
                    trace: true,
                    schedule: Schedule::Random(seed | 1),
                    journal: Some(journal.clone()),
                    remote: None,
                    park_after: None,
                    run_uid: None,
                    interrupt: None,
                },
            ))
            .unwrap_or_else(|e| {
                panic!("edit {how:?}, cut at {k}: the moved run fails: {e}\n{hint}")
            });
        let trace = outcome.trace.unwrap();
        engine
            .verify("moved", &trace)
            .unwrap_or_else(|e| panic!("edit {how:?}, cut at {k}: {e}\n{hint}"));
        let exec = trace.execution(nw.lifelines.len());
        let mut words = vec![Vec::new(); nw.lifelines.len()];
        for (l, e) in &m.events {
            words[l.0 as usize].push(e.clone());
        }
        for (l, w) in words.iter().enumerate() {
            assert_eq!(
                &exec.words[l][..w.len()],
                &w[..],
                "edit {how:?}, cut at {k}: {} does not start with its moved events\n{hint}",
                nw.lifelines[l].name
            );
        }
        let results: Vec<Value> = outcome.results.into_iter().map(|(_, v)| v).collect();
        assert_eq!(
            results, expected.results,
            "edit {how:?}, cut at {k}\n{hint}"
        );
        // Every recorded result taken; no performer called for one.
        let taken = journal.taken.lock().unwrap().clone();
        assert_eq!(
            taken, steps,
            "edit {how:?}, cut at {k}: results left\n{hint}"
        );
        taken_total += taken.len();
        let mut took = [0usize; 5];
        for key in &taken {
            let action = key.split_once('/').unwrap().1.rsplit_once('#').unwrap().0;
            let a = new.actions.iter().position(|x| x.name == action).unwrap();
            took[a] += 1;
        }
        let performs = performed(nw, &exec);
        for a in 1..5 {
            assert_eq!(
                ledger.calls[a].load(Ordering::SeqCst) + took[a],
                performs[a],
                "edit {how:?}, cut at {k}: action {} called again for a recorded step\n{hint}",
                new.actions[a].name
            );
        }
    }
    eprintln!("{moved} moved, {taken_total} results taken");
    assert!(
        moved >= 25 && taken_total >= 25,
        "too few runs moved to mean anything: {moved} moved, {taken_total} results taken"
    );
}
