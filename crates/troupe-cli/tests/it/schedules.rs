//! Schedules on the binary (`[[schedule]]` in `troupe.toml`): three
//! workers keep a one-second schedule on one PostgreSQL store; every tick
//! starts exactly one run, the ticks follow each other second by second
//! with none twice and none left out, and every run ends with the result
//! the workflow gives its inputs. Counted in the store's runs, which are
//! created by whichever worker is first.

use crate::support::{Project, said, signal_group, wait_until};
use serde_json::Value;
use troupe_store::testing::TestDatabase;
use troupe_store::{Durability, RunStatus, Store};

const WORKFLOW: &str = r#"
workflow tick(x: Int @ A) {
  lifelines A, B
  msg A(x) -> B(x)
  act B: y = x * 2
  return y @ B
}
"#;

const TICKS: usize = 20;

#[test]
fn three_workers_start_each_tick_of_a_one_second_schedule_once() {
    let p = Project::new();
    p.write("tick.troupe", WORKFLOW);
    // `all`: a tick the loaded machine reaches late is still started, so
    // the ticks must be gap-free.
    p.write(
        "troupe.toml",
        "[[schedule]]\nname = \"every-second\"\nfile = \"tick.troupe\"\nevery = \"1s\"\ninputs = { x = 21 }\nmissed = \"all\"\n",
    );
    let db = TestDatabase::new();
    let store = Store::open(&db.url, Durability::Full).unwrap();
    let workers: Vec<_> = (0..3)
        .map(|_| p.spawn(&["worker", "--store", &db.url, "--json"]))
        .collect();
    wait_until("twenty ticks", || {
        store.ticks("every-second", 100).unwrap().len() >= TICKS
    });
    for w in &workers {
        signal_group(w.id(), "-TERM");
    }
    let said_by: Vec<String> = workers
        .into_iter()
        .map(|w| {
            let out = w.wait_with_output().unwrap();
            assert!(out.status.success(), "{}", said(&out));
            String::from_utf8_lossy(&out.stdout).into_owned()
        })
        .collect();
    let mut ticks = store.ticks("every-second", 1000).unwrap();
    ticks.reverse();
    // Second by second, none twice, none left out.
    let times: Vec<i64> = ticks.iter().map(|t| t.tick).collect();
    let first = times[0];
    assert_eq!(first % 1000, 0, "{times:?}");
    let expected: Vec<i64> = (0..times.len() as i64).map(|k| first + 1000 * k).collect();
    assert_eq!(times, expected);
    // One run per tick: the store holds no other run.
    let runs: Vec<String> = store
        .runs(None)
        .unwrap()
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(runs.len(), ticks.len(), "{runs:?}");
    let mut started: Vec<i64> = ticks.iter().map(|t| t.run.unwrap()).collect();
    started.sort_unstable();
    started.dedup();
    assert_eq!(started.len(), ticks.len());
    // The workers said which of them started each tick: each once.
    let scheduled: Vec<Value> = said_by
        .iter()
        .flat_map(|s| s.lines())
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|d| d["event"] == "scheduled")
        .collect();
    assert_eq!(scheduled.len(), ticks.len(), "{scheduled:?}");
    // Finished with the workflow's result (runs stopped by the workers'
    // end are handed back; a worker finishes them).
    let last = p.spawn(&["worker", "--store", &db.url, "--exit-when-idle"]);
    let out = last.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", said(&out));
    for r in store.runs(None).unwrap() {
        assert_eq!(r.status, RunStatus::Done, "{r:?}");
        let doc: Value = serde_json::from_slice(
            &p.run(&["status", &r.name, "--store", &db.url, "--json"])
                .stdout,
        )
        .unwrap();
        assert_eq!(doc["result"]["y"], 42, "{doc}");
    }
    // `troupe schedules` shows the schedule, its next tick and its last run.
    let out = p.run(&["schedules", "--store", &db.url, "--json"]);
    assert!(out.status.success(), "{}", said(&out));
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list[0]["name"], "every-second", "{list}");
    assert_eq!(list[0]["when"], "every 1s", "{list}");
    assert!(list[0]["next"].is_string(), "{list}");
    let newest = Store::run_name(*started.last().unwrap());
    assert_eq!(list[0]["last_run"], newest.as_str(), "{list}");
}

#[test]
fn a_schedule_that_is_not_one_is_refused_with_its_name() {
    let p = Project::new();
    p.write(
        "troupe.toml",
        "[[schedule]]\nname = \"nightly\"\nfile = \"f.troupe\"\ncron = \"at seven\"\n",
    );
    let out = p.run(&["schedules"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "a configuration error: {}",
        said(&out)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("\"nightly\"") && err.contains("five fields"),
        "{err}"
    );
    let out = p.run(&["worker", "--store", "db"]);
    assert!(!out.status.success(), "{}", said(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("\"nightly\""),
        "{}",
        said(&out)
    );
}
