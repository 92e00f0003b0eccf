//! Durable timers on the binary (the built-in `sleep`): a run killed while
//! it sleeps is continued by the same command and keeps the deadline it
//! recorded; a run a worker gave back while it slept is woken by another
//! worker's sweep once the timer is due, and finished, on PostgreSQL.
//! Expected results come from the workflow: `x` travels unchanged.

use crate::support::{Project, said, signal_group, wait_until};
use troupe_store::{Durability, Store, TimerRow};

const WORKFLOW: &str = r#"
workflow nap(x: Int @ A) {
  lifelines A, B
  act A: sleep("5s")
  msg A(x) -> B(x)
  return x @ B
}
"#;

fn project() -> Project {
    let p = Project::new();
    p.write("nap.troupe", WORKFLOW);
    p
}

fn timers(store: &str) -> Vec<TimerRow> {
    Store::open(store, Durability::Full)
        .and_then(|s| s.timers(1))
        .unwrap_or_default()
}

fn status(p: &Project, store: &str) -> serde_json::Value {
    let out = p.run(&["status", "run-1", "--store", store, "--json"]);
    serde_json::from_slice(&out.stdout).unwrap_or_default()
}

#[test]
fn a_run_killed_while_it_sleeps_is_continued_and_keeps_its_deadline() {
    let p = project();
    let db = p.path().join("db");
    let db = db.to_str().unwrap();
    let args = ["run", "nap.troupe", "--store", db, "-i", "x=7", "--json"];
    let child = p.spawn(&args);
    wait_until("the timer to be recorded", || !timers(db).is_empty());
    let before = timers(db);
    signal_group(child.id(), "-KILL");
    let _ = child.wait_with_output();
    assert_ne!(
        status(&p, db)["status"],
        "done",
        "killed too late to test a resume"
    );
    assert!(!before[0].fired, "{before:?}");
    // The same command continues the run: the timer is not recorded
    // again, and its deadline is the first one.
    let out = p.run(&args);
    assert!(out.status.success(), "{}", said(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["results"]["x"], 7, "{doc}");
    assert_eq!(doc["verified"], true, "{doc}");
    let after = timers(db);
    assert_eq!(after.len(), 1, "{after:?}");
    assert_eq!(after[0].key, "A/sleep#0");
    assert_eq!(after[0].due_at, before[0].due_at, "the deadline moved");
    assert!(after[0].fired, "{after:?}");
    let verify = p.run(&["verify", "run-1", "--store", db]);
    assert!(verify.status.success(), "{}", said(&verify));
}

#[test]
fn a_parked_sleep_is_woken_by_another_workers_sweep() {
    let p = project();
    let db = troupe_store::testing::TestDatabase::new();
    let out = p.run(&[
        "run",
        "nap.troupe",
        "--store",
        &db.url,
        "--detach",
        "-i",
        "x=7",
    ]);
    assert!(out.status.success(), "{}", said(&out));
    // The first worker gives the run back as soon as it only sleeps, and
    // is then killed: nobody holds the run while it sleeps.
    let first = p.spawn(&["worker", "--store", &db.url, "--park-after", "1ms"]);
    wait_until("the run to be parked", || {
        status(&p, &db.url)["status"] == "parked"
    });
    signal_group(first.id(), "-KILL");
    let _ = first.wait_with_output();
    assert_eq!(timers(&db.url).len(), 1);
    assert!(!timers(&db.url)[0].fired);
    // Due, and nobody drives the run: the metrics count it.
    let store = Store::open(&db.url, Durability::Full).unwrap();
    wait_until("the timer to fall due", || {
        timers(&db.url)[0].due_in_ms <= 0
    });
    assert_eq!(store.gauges().unwrap().sleeps_due, 1);
    let second = p.spawn(&["worker", "--store", &db.url, "--sweep", "200ms"]);
    wait_until("the run to end", || status(&p, &db.url)["status"] == "done");
    signal_group(second.id(), "-TERM");
    let _ = second.wait_with_output();
    let doc = status(&p, &db.url);
    assert_eq!(doc["result"]["x"], 7, "{doc}");
    let after = timers(&db.url);
    assert_eq!(after.len(), 1, "{after:?}");
    assert!(after[0].fired, "{after:?}");
    assert_eq!(store.gauges().unwrap().sleeps_due, 0);
    let verify = p.run(&["verify", "run-1", "--store", &db.url]);
    assert!(verify.status.success(), "{}", said(&verify));
}
