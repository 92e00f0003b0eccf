//! The theorem as a test: random well-typed workflows, run under random
//! seeded schedules, always complete (no deadlock), and every erased trace is
//! in ⟦P⟧. Local words do not depend on the schedule either. The seeds vary
//! per run (printed; `TROUPE_TEST_SEED` repeats one), and the workflows
//! reach 100 statements.
//!
//! With `par` regions and coregions (`troupe_oracle::generate`), a
//! lifeline's parts run as tasks of their own, so its word may interleave
//! its branches differently from one schedule to the next: there the words
//! must agree once put in branch order (`troupe_oracle::global::branch_order`,
//! which knows nothing of the runtime), and they must be those of the
//! global workflow run directly.

use troupe_msc::{MemberOptions, Semantics};
use troupe_oracle::generate::{self, Shape};
use troupe_oracle::global;
use troupe_oracle::seeds::{Rng, Seeds, repeat_hint};
use troupe_project::testing::{GenConfig, random_inputs, random_program};
use troupe_runtime::{EngineBuilder, RunOptions, Schedule};

#[test]
fn random_workflows_under_random_schedules_complete_and_conform() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let seeds = Seeds::new(
        "random_workflows_under_random_schedules_complete_and_conform",
        2_000,
    );
    let mut events = 0usize;
    for seed in seeds.iter() {
        let hint = repeat_hint(seed);
        let cfg = GenConfig {
            lifelines: 2 + (seed % 6) as usize,
            max_depth: (seed % 5) as usize,
            max_block: 1 + (seed % 5) as usize,
            max_stmts: if seed.is_multiple_of(4) { 100 } else { 30 },
        };
        let program = random_program(seed, &cfg);
        let semantics = Semantics::new(&program, &program.workflows[0]).unwrap();
        let inputs = random_inputs(&program.workflows[0], seed);
        let engine = EngineBuilder::from_program(program).build().unwrap();
        let mut first_words = None;
        for schedule in [
            Schedule::Random(seed.wrapping_mul(0x9e37_79b9) | 1),
            Schedule::Random(seed + 17),
            Schedule::RunToBlock,
        ] {
            let options = RunOptions {
                run_id: format!("w{seed}"),
                seed,
                trace: true,
                schedule,
                journal: None,
                remote: None,
                park_after: None,
                run_uid: None,
                interrupt: None,
            };
            let outcome = rt
                .block_on(engine.run(inputs.clone(), options))
                .unwrap_or_else(|e| panic!("workflow {seed} under {schedule:?}: {e}\n{hint}"));
            let trace = outcome.trace.unwrap();
            engine
                .verify("run", &trace)
                .unwrap_or_else(|e| panic!("workflow {seed} under {schedule:?}: {e}\n{hint}"));
            let exec = trace.execution(engine.workflow().lifelines.len());
            // Stronger than the erasure: the control events fit too.
            semantics
                .check(
                    &exec,
                    &MemberOptions {
                        control: true,
                        prefix: false,
                    },
                )
                .unwrap_or_else(|e| panic!("workflow {seed} with control events: {e}\n{hint}"));
            events += exec.len();
            match &first_words {
                None => first_words = Some(exec),
                Some(first) => assert_eq!(
                    first, &exec,
                    "workflow {seed}: local words depend on the schedule\n{hint}"
                ),
            }
        }
    }
    assert!(
        seeds.cases < 100 || events > 10_000,
        "the generated workflows are too small to mean much ({events} events)"
    );
}

#[test]
fn random_concurrent_workflows_under_random_schedules_complete_and_conform() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let seeds = Seeds::new(
        "random_concurrent_workflows_under_random_schedules_complete_and_conform",
        400,
    );
    let (mut events, mut interleaved, mut workflows) = (0usize, 0usize, 0usize);
    for seed in seeds.iter() {
        let hint = repeat_hint(seed);
        // No asynchronous actions, as above (the oracle test runs them).
        let Some(program) = generate::program_with_par(seed, |rng: &mut Rng| Shape {
            asynchronous: false,
            ..Shape::concurrent(rng, 60)
        }) else {
            continue;
        };
        let w = program.workflows[0].clone();
        let semantics = Semantics::new(&program, &w).unwrap();
        let tags = |s| semantics.projection().construct(s).map(|c| c.tag);
        let inputs = generate::inputs(&w, seed);
        let expected = global::run(&w, &inputs, true, &tags)
            .unwrap_or_else(|e| panic!("workflow {seed}: the oracle fails: {e}\n{hint}"));
        // The generator declares every kind of action, and an engine
        // needs a performer for each, though only `bump` is called here.
        let engine = crate::oracle::engine_of(&program, &Default::default());
        let mut first_words = None;
        for schedule in [
            Schedule::Random(seed.wrapping_mul(0x9e37_79b9) | 1),
            Schedule::Random(seed + 17),
            Schedule::RunToBlock,
        ] {
            let options = RunOptions {
                run_id: format!("w{seed}"),
                seed,
                trace: true,
                schedule,
                ..RunOptions::default()
            };
            let outcome = rt
                .block_on(engine.run(inputs.clone(), options))
                .unwrap_or_else(|e| panic!("workflow {seed} under {schedule:?}: {e}\n{hint}"));
            let trace = outcome.trace.unwrap();
            engine
                .verify("run", &trace)
                .unwrap_or_else(|e| panic!("workflow {seed} under {schedule:?}: {e}\n{hint}"));
            let exec = trace.execution(w.lifelines.len());
            semantics
                .check(
                    &exec,
                    &MemberOptions {
                        control: true,
                        prefix: false,
                    },
                )
                .unwrap_or_else(|e| panic!("workflow {seed} with control events: {e}\n{hint}"));
            assert_eq!(
                global::branch_order(&w, &exec),
                expected.execution,
                "workflow {seed} under {schedule:?}: the words in branch order are not the global run's\n{hint}"
            );
            events += exec.len();
            match &first_words {
                None => first_words = Some(exec),
                Some(first) => interleaved += usize::from(*first != exec),
            }
        }
        workflows += 1;
    }
    eprintln!(
        "{workflows} concurrent workflows, {events} events, {interleaved} runs whose words differ from the first schedule's (parts interleaved otherwise)"
    );
    if seeds.cases >= 100 {
        assert!(
            workflows as u64 * 10 >= seeds.cases * 9 && interleaved > 0,
            "too few concurrent workflows ({workflows}) or no run interleaved differently ({interleaved})"
        );
    }
}
