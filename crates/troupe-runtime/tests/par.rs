//! `par` and `coregion` run: a lifeline in several branches runs its parts
//! concurrently (Lead below has three), messages of one branch stay on its
//! channels, the coregion's receiver takes its messages in arrival order,
//! and under every schedule the run returns the same results and is a
//! member of ⟦P⟧ (monitor, and offline membership with and without
//! control events).

use troupe_msc::{MemberOptions, Semantics};
use troupe_runtime::{EngineBuilder, RunOptions, Schedule};

const SRC: &str = r#"
workflow fan(x: Int @ A) {
  par {
    msg A(x) -> B(x)
    act B: y = x + 1
    msg B(y) -> A(y)
  } and {
    msg A(x) -> C(x)
    act C: z = x * 2
    msg C(z) -> A(z)
  } and {
    msg A(x) -> B(w)
    act B: v = w + 10
    msg B(v) -> A(v)
  }
  act A: s = y + z + v
  coregion {
    msg B(y) -> D(b)
    msg C(z) -> D(c)
  }
  act D: t = b + c
  return (s @ A, t @ D)
}
"#;

#[test]
fn a_fan_out_with_parts_at_one_lifeline_runs_under_every_schedule() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let b = EngineBuilder::from_source(SRC).unwrap_or_else(|d| panic!("{d:?}"));
    let program = b.program().clone();
    let engine = b.build().unwrap();
    let sem = Semantics::new(&program, &program.workflows[0]).unwrap();
    for seed in 0..200u64 {
        let schedule = if seed == 0 {
            Schedule::RunToBlock
        } else {
            Schedule::Random(seed)
        };
        let out = rt
            .block_on(engine.run(
                vec![troupe_check::Value::Int(3)],
                RunOptions {
                    schedule,
                    ..RunOptions::default()
                },
            ))
            .unwrap();
        assert_eq!(out.results[0].1, troupe_check::Value::Int(4 + 6 + 13));
        let trace = out.trace.unwrap();
        engine.verify("r", &trace).unwrap();
        let exec = trace.execution(engine.workflow().lifelines.len());
        for control in [true, false] {
            sem.check(
                &exec,
                &MemberOptions {
                    control,
                    prefix: false,
                },
            )
            .unwrap_or_else(|e| panic!("{seed} {control}: {e}"));
        }
    }
}
