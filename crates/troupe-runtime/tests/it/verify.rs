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

/// Clerk decides on the ledger's `frozen`, which reaches it only through
/// the manager's message: its metadata, not its payload.
const CAUSAL: &str = include_str!("../data/causal_refund.troupe");

#[test]
fn a_causal_guard_decides_on_what_its_owner_saw_and_verify_recomputes_it() {
    let engine = EngineBuilder::from_source(CAUSAL).unwrap().build().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for (amount, frozen) in [(50, false), (50, true), (500, false)] {
        let inputs = vec![Value::Int(amount), Value::Bool(frozen)];
        let outcome = rt
            .block_on(engine.run(
                inputs.clone(),
                RunOptions {
                    trace: true,
                    ..RunOptions::default()
                },
            ))
            .unwrap();
        // Paid exactly when approved and not frozen: the ledger's input
        // reached the clerk's guard although no message gave it the value.
        let paid = if amount < 100 && !frozen { amount } else { 0 };
        assert_eq!(outcome.results[0].1, Value::Int(paid), "{amount} {frozen}");
        assert!(outcome.metadata.messages > 0);
        let mut trace = outcome.trace.unwrap();
        let exec = trace.execution(3);
        assert_eq!(engine.verify_causal("run", &exec, &inputs).unwrap(), 1);
        // The same chart with the other decision recorded: the chart is
        // still consistent (control messages flipped too), but the guard's
        // value on it is not what was recorded.
        flip_decisions(&mut trace);
        let err = engine
            .verify_causal("run", &trace.execution(3), &inputs)
            .unwrap_err()
            .to_string();
        assert!(err.contains("Clerk's decision"), "{err}");
        assert!(err.contains("at(Ledger, frozen)"), "{err}");
    }
}
