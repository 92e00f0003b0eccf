//! Property tests over random well-typed workflows: the bounded ⟦P⟧ is made of
//! valid, complete executions that membership accepts; runs of the projected
//! programs under random schedules never deadlock, and their erasures (and,
//! with control events, the runs themselves) are in ⟦P⟧, as is every prefix.

use proptest::prelude::*;
use troupe_check::ir::Program;
use troupe_msc::{
    Decisions, EnumOptions, MemberOptions, Semantics, SimOptions, simulate, validate,
    validate_complete,
};
use troupe_project::testing::{arb_program, random_inputs};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 300,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn fail(e: impl ToString) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}

fn enumeration(program: &Program) -> Result<(), TestCaseError> {
    let w = &program.workflows[0];
    let n = w.lifelines.len();
    let sem = Semantics::new(program, w).map_err(fail)?;
    for control in [false, true] {
        let e = sem.enumerate(&EnumOptions {
            unroll: 2,
            control,
            limit: 60,
        });
        prop_assert!(!e.executions.is_empty());
        for x in &e.executions {
            validate_complete(x, n).map_err(fail)?;
            let opts = MemberOptions {
                control,
                prefix: false,
            };
            sem.check(x, &opts).map_err(fail)?;
            if control {
                sem.check(&x.erase_control(), &MemberOptions::default())
                    .map_err(fail)?;
            }
        }
    }
    Ok(())
}

fn runs(program: &Program, seed: u64) -> Result<(), TestCaseError> {
    let w = &program.workflows[0];
    let n = w.lifelines.len();
    let sem = Semantics::new(program, w).map_err(fail)?;
    for k in 0..3u64 {
        let decisions = if k == 2 {
            Decisions::Random { seed: seed ^ 0x55 }
        } else {
            Decisions::Evaluate
        };
        let opts = SimOptions {
            seed: seed.wrapping_add(k),
            decisions,
            loop_bound: Some(3),
            max_steps: 100_000,
        };
        let inputs = random_inputs(w, seed.wrapping_mul(31).wrapping_add(k));
        let run = simulate(program, w, sem.projection(), &inputs, &opts).map_err(fail)?;
        prop_assert!(
            run.completed(),
            "deadlock: stuck {:?}, {} undelivered",
            run.stuck,
            run.undelivered
        );
        validate_complete(&run.execution, n).map_err(fail)?;
        sem.check(&run.execution.erase_control(), &MemberOptions::default())
            .map_err(fail)?;
        sem.check(
            &run.execution,
            &MemberOptions {
                control: true,
                prefix: false,
            },
        )
        .map_err(fail)?;
        // Every prefix the scheduler went through extends to a member.
        let steps = run.schedule.len();
        for s in [
            0,
            steps / 3,
            steps / 2,
            (2 * steps) / 3,
            steps.saturating_sub(1),
        ] {
            let prefix = run.prefix(s);
            validate(&prefix, n).map_err(fail)?;
            sem.check(
                &prefix,
                &MemberOptions {
                    control: true,
                    prefix: true,
                },
            )
            .map_err(fail)?;
            sem.check(
                &prefix.erase_control(),
                &MemberOptions {
                    control: false,
                    prefix: true,
                },
            )
            .map_err(fail)?;
        }
    }
    Ok(())
}

/// On loop-free workflows ⟦P⟧ is finite, so membership must agree exactly with
/// the enumeration, also on executions mutated to (mostly) non-members.
fn exact(program: &Program, seed: u64) -> Result<(), TestCaseError> {
    let w = &program.workflows[0];
    let sem = Semantics::new(program, w).map_err(fail)?;
    if sem
        .projection()
        .constructs
        .iter()
        .any(|c| c.kind == troupe_project::ConstructKind::While)
    {
        return Ok(());
    }
    let mut rng = troupe_project::testing::Rng::new(seed);
    for control in [false, true] {
        let e = sem.enumerate(&EnumOptions {
            unroll: 0,
            control,
            limit: 500,
        });
        if e.truncated {
            return Ok(());
        }
        let members: std::collections::HashSet<_> = e.executions.iter().map(|x| x.key()).collect();
        let opts = MemberOptions {
            control,
            prefix: false,
        };
        for x in &e.executions {
            for _ in 0..4 {
                let mut y = x.clone();
                let l = rng.below(y.words.len());
                let word = &mut y.words[l];
                if word.is_empty() {
                    continue;
                }
                let i = rng.below(word.len());
                match rng.below(3) {
                    0 if i + 1 < word.len() => word.swap(i, i + 1),
                    1 => {
                        word.remove(i);
                    }
                    _ => {
                        let ev = word[i].clone();
                        word.insert(i, ev);
                    }
                }
                let accepted = sem.check(&y, &opts).is_ok();
                prop_assert_eq!(
                    accepted,
                    members.contains(&y.key()),
                    "control {}: {:?}",
                    control,
                    y.key()
                );
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn membership_is_exact_without_loops(program in arb_program(), seed in any::<u64>()) {
        exact(&program, seed)?;
    }

    #[test]
    fn bounded_semantics_is_valid_complete_and_accepted(program in arb_program()) {
        enumeration(&program)?;
    }

    #[test]
    fn projected_runs_are_in_the_semantics(program in arb_program(), seed in any::<u64>()) {
        runs(&program, seed)?;
    }
}
