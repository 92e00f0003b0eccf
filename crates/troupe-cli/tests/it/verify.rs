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
