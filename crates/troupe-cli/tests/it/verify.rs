//! `troupe verify` (the binary, on a store) checks recorded runs in control
//! mode, as `troupe run` checks them online: a recorded run whose lifelines
//! took the branch their owner did not decide is rejected, although its
//! erasure without decisions is a run of the chart; the honest recording
//! of the same run is accepted.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use troupe_check::Value;
use troupe_host::{Compiled, Host, HostConfig, NoTools, RunSettings, StartPolicy};
use troupe_msc::{Event, Message};
use troupe_runtime::{EngineBuilder, RunJournal, RunOptions};
use troupe_store::{Durability, Store};

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

/// Records a run of `go` whose events are those of an in-memory run,
/// with every decision flipped when `flip`; returns the store's path.
fn record(dir: &Path, go: bool, flip: bool) -> std::path::PathBuf {
    let path = dir.join(format!("s-{go}-{flip}.db"));
    let store = Store::open(&path, Durability::Normal).unwrap();
    let host = Host::new(
        store.clone(),
        HostConfig::new(dir.to_owned()),
        Arc::new(NoTools),
    );
    let compiled =
        Compiled::from_source(BRANCHES.into(), "w.troupe", Path::new("."), None).unwrap();
    let started = host
        .start(
            &compiled,
            vec![Value::Bool(go)],
            &RunSettings::default(),
            StartPolicy::New,
        )
        .unwrap();
    let engine = EngineBuilder::from_source(BRANCHES)
        .unwrap()
        .build()
        .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut trace = rt
        .block_on(engine.run(vec![Value::Bool(go)], RunOptions::default()))
        .unwrap()
        .trace
        .unwrap();
    if flip {
        for e in &mut trace.entries {
            match &mut e.event {
                Event::Decide { decision, .. }
                | Event::Send {
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
    let journal = store
        .journal(started.run, Arc::new(compiled.types().clone()))
        .unwrap();
    for e in &trace.entries {
        journal.event(e.lifeline, &e.event);
    }
    rt.block_on(journal.finish(Ok(&[]))).unwrap();
    path
}

fn verify(store: &Path) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args(["verify", "run-1", "--store"])
        .arg(store)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn a_recorded_run_of_the_branch_its_owner_did_not_decide_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    for go in [false, true] {
        let (ok, text) = verify(&record(dir.path(), go, false));
        assert!(ok, "the honest recording was rejected: {text}");
        assert!(text.contains("a complete run"), "{text}");
        let (ok, text) = verify(&record(dir.path(), go, true));
        assert!(!ok, "the flipped recording was accepted: {text}");
        assert!(text.contains("not in ⟦P⟧"), "{text}");
    }
}

/// Clerk decides on the ledger's `frozen`, which reaches it only as the
/// manager's message's metadata.
const CAUSAL: &str = include_str!("../../../troupe-runtime/tests/data/causal_refund.troupe");

/// Records a run started with `frozen` whose events are those of an
/// in-memory run with `ran`: a consistent chart either way, whose causal
/// decision fits the recorded inputs only when they agree.
fn record_causal(dir: &Path, frozen: bool, ran: bool) -> std::path::PathBuf {
    let path = dir.join(format!("c-{frozen}-{ran}.db"));
    let store = Store::open(&path, Durability::Normal).unwrap();
    let host = Host::new(
        store.clone(),
        HostConfig::new(dir.to_owned()),
        Arc::new(NoTools),
    );
    let compiled = Compiled::from_source(CAUSAL.into(), "c.troupe", Path::new("."), None).unwrap();
    let started = host
        .start(
            &compiled,
            vec![Value::Int(50), Value::Bool(frozen)],
            &RunSettings::default(),
            StartPolicy::New,
        )
        .unwrap();
    let engine = EngineBuilder::from_source(CAUSAL).unwrap().build().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let trace = rt
        .block_on(engine.run(
            vec![Value::Int(50), Value::Bool(ran)],
            RunOptions::default(),
        ))
        .unwrap()
        .trace
        .unwrap();
    let journal = store
        .journal(started.run, Arc::new(compiled.types().clone()))
        .unwrap();
    for e in &trace.entries {
        journal.event(e.lifeline, &e.event);
    }
    rt.block_on(journal.finish(Ok(&[]))).unwrap();
    path
}

#[test]
fn a_recorded_causal_decision_its_owner_could_not_have_taken_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    for frozen in [false, true] {
        let (ok, text) = verify(&record_causal(dir.path(), frozen, frozen));
        assert!(ok, "the honest recording was rejected: {text}");
        // The chart of the other input: every event fits the workflow, but
        // the clerk's decision is not its guard's value on what it saw of
        // the ledger under the recorded input.
        let (ok, text) = verify(&record_causal(dir.path(), frozen, !frozen));
        assert!(!ok, "the forged recording was accepted: {text}");
        assert!(text.contains("Clerk's decision"), "{text}");
        assert!(text.contains(&format!("was {frozen}")), "{text}");
    }
}

#[test]
fn the_causal_example_pays_exactly_when_the_manager_approved_and_the_ledger_had_not_frozen() {
    let example = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/causal_refund.troupe"
    );
    for seed in ["0", "1", "2", "3"] {
        for frozen in ["true", "false"] {
            let out = Command::new(env!("CARGO_BIN_EXE_troupe"))
                .args(["run", example, "-i", "claim=Kettle", "-i", "amount=40"])
                .args(["-i", &format!("frozen={frozen}"), "--mock-externs"])
                .args(["--seed", seed, "--trace"])
                .env("NO_COLOR", "1")
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{text}");
            // The chart's own record of the manager's verdict, and the
            // decision the clerk took on it.
            let review = text
                .lines()
                .find(|l| l.contains("Manager") && l.contains("act →"))
                .unwrap_or_else(|| panic!("{text}"));
            let ok = review.contains("act → true");
            let decide = text.lines().find(|l| l.contains("decide")).unwrap();
            let expected = if ok && frozen == "false" {
                "⊤"
            } else {
                "⊥"
            };
            assert!(
                decide.contains(expected),
                "seed {seed}, frozen {frozen}: {text}"
            );
            assert!(text.contains("verified:"), "{text}");
        }
    }
}
