//! People's deadlines on the binary (`timeout:` and `default:` on a
//! `human` action): nobody answers, and the run goes on with the default,
//! recorded as answered by `timeout`; a person after the clock is refused;
//! in memory the same; and a run parked by a worker while it waits is
//! answered by a worker's sweep and finished, on PostgreSQL.

use crate::support::{Project, said, wait_until};

const WORKFLOW: &str = r#"
human approve(req: Text) -> Bool { ask: "Approve {req}?", timeout: "2s", default: false }

workflow ask(req: Text @ Clerk) {
  lifelines Clerk, Boss
  msg Clerk(req) -> Boss(req)
  act Boss: ok = approve(req)
  msg Boss(ok) -> Clerk(ok)
  return ok @ Clerk
}
"#;

fn project() -> Project {
    let p = Project::new();
    p.write("ask.troupe", WORKFLOW);
    p
}

#[test]
fn nobody_answers_and_the_run_goes_on_with_the_default_answered_by_timeout() {
    let p = project();
    let out = p.run(&[
        "run",
        "ask.troupe",
        "--store",
        "db",
        "-i",
        "req=a lamp",
        "--json",
    ]);
    assert!(out.status.success(), "{}", said(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["results"]["ok"], false, "{doc}");
    assert_eq!(doc["verified"], true, "{doc}");
    let store =
        troupe_store::Store::open(p.path().join("db"), troupe_store::Durability::Full).unwrap();
    let task = store.task("task-1").unwrap();
    assert_eq!(task.answered_by.as_deref(), Some("timeout"), "{task:?}");
    assert_eq!(task.answer.as_deref(), Some("false"));
    // A person after the clock: refused, the clock's answer stands.
    let late = p.run(&["answer", "task-1", "--yes", "--store", "db"]);
    assert_eq!(late.status.code(), Some(1), "{}", said(&late));
    assert!(
        String::from_utf8_lossy(&late.stderr).contains("already answered by timeout"),
        "{}",
        said(&late)
    );
    // In memory, nobody to ask: the clock answers too.
    let out = p.run(&["run", "ask.troupe", "-i", "req=a lamp", "--json"]);
    assert!(out.status.success(), "{}", said(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["results"]["ok"], false, "{doc}");
}

#[test]
fn a_person_before_the_deadline_wins() {
    let p = project();
    let run = p.spawn(&[
        "run",
        "ask.troupe",
        "--store",
        "db",
        "-i",
        "req=a lamp",
        "--json",
    ]);
    wait_until("the task", || {
        let out = p.run(&["tasks", "--store", "db", "--json"]);
        serde_json::from_slice::<serde_json::Value>(&out.stdout)
            .ok()
            .and_then(|v| v.as_array().map(|a| !a.is_empty()))
            .unwrap_or(false)
    });
    let out = p.run(&["answer", "task-1", "--yes", "--store", "db"]);
    // The clock may have been first on a slow machine: then it is refused.
    let by_person = out.status.success();
    let done = run.wait_with_output().unwrap();
    assert!(done.status.success(), "{}", said(&done));
    let doc: serde_json::Value = serde_json::from_slice(&done.stdout).unwrap();
    assert_eq!(doc["results"]["ok"], by_person, "{doc}");
}

/// A worker parks the run while it waits (`--park-after`), so nobody
/// drives it when the deadline passes: a worker's sweep answers by the
/// clock, which queues the run, and a worker finishes it.
#[test]
fn a_parked_run_is_answered_by_a_workers_sweep_and_finished() {
    let p = project();
    let db = troupe_store::testing::TestDatabase::new();
    let out = p.run(&[
        "run",
        "ask.troupe",
        "--store",
        &db.url,
        "--detach",
        "-i",
        "req=a lamp",
    ]);
    assert!(out.status.success(), "{}", said(&out));
    let mut worker = p
        .cmd(&[
            "worker",
            "--store",
            &db.url,
            // Parks at once, but only once the task is recorded: parked
            // before, it waited on a task nobody, not even its deadline's
            // clock, could answer (seen under load with 100ms).
            "--park-after",
            "1ms",
            "--sweep",
            "200ms",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let status = || {
        let out = p.run(&["status", "run-1", "--store", &db.url, "--json"]);
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap_or_default()
    };
    wait_until("the run to be parked", || status()["status"] == "parked");
    wait_until("the run to end", || status()["status"] == "done");
    assert_eq!(status()["result"]["ok"], false);
    let store = troupe_store::Store::open(&db.url, troupe_store::Durability::Full).unwrap();
    assert_eq!(
        store.task("task-1").unwrap().answered_by.as_deref(),
        Some("timeout")
    );
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &worker.id().to_string()])
        .status();
    let _ = worker.wait();
    let verify = p.run(&["verify", "run-1", "--store", &db.url]);
    assert!(verify.status.success(), "{}", said(&verify));
}
