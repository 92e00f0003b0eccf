//! `Engine::verify` checks runs in control mode: the owner's decision is
//! kept, so lifelines that took another branch than the owner decided are
//! caught even though the erasure without decisions is a run of the chart.

use troupe_check::Value;
use troupe_msc::{Event, Message};
use troupe_runtime::{EngineBuilder, RunOptions};

const BRANCHES: &str = r#"
workflow w(go: Bool @ A) {
  lifelines A, B, C
  act B: x = 1
  act C: z = 2
  if go @ A {
    msg B(x) -> C(y)
  } else {
    msg C(z) -> B(y)
  }
}
"#;

/// Flips every decision of the trace: the owner and the control messages
/// say the other branch, while B and C still run the branch they ran.
fn flip_decisions(trace: &mut troupe_runtime::Trace) {
    for e in &mut trace.entries {
        match &mut e.event {
            Event::Decide { decision, .. } => *decision = !*decision,
            Event::Send {
                msg: Message::Control { decision, .. },
                ..
            }
            | Event::Recv {
                msg: Message::Control { decision, .. },
                ..
            } => *decision = !*decision,
            _ => {}
        }
    }
}

#[test]
fn a_run_of_the_branch_the_owner_did_not_decide_is_rejected() {
    let engine = EngineBuilder::from_source(BRANCHES)
        .unwrap()
        .build()
        .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for go in [false, true] {
        let outcome = rt
            .block_on(engine.run(
                vec![Value::Bool(go)],
                RunOptions {
                    trace: true,
                    ..RunOptions::default()
                },
            ))
            .unwrap();
        let mut trace = outcome.trace.unwrap();
        engine.verify("honest", &trace).unwrap();
        // The erasure without decisions is still a run of the chart...
        let lifelines = engine.workflow().lifelines.len();
        let erased = trace.execution(lifelines).erase_control();
        flip_decisions(&mut trace);
        assert_eq!(trace.execution(lifelines).erase_control(), erased);
        // ...but A decided the other branch: rejected.
        let e = engine.verify("flipped", &trace).unwrap_err();
        assert!(e.to_string().contains("not in ⟦P⟧"), "{e}");
    }
}
