//! `troupe verify` re-checks `planner` calls against their recorded plans
//! (issue 33), through the binary as people run it: the planner example
//! runs with the mock model into a SQLite store, which verifies; then the
//! store is tampered with as someone with the database file could (rows
//! deleted or changed with SQLite, or whole steps rewritten through the
//! store's own journal, so that both recorded copies of their outputs
//! agree), and each tampered store fails `troupe verify` with a message that
//! names the planner step and what is wrong with it. What each tamper
//! breaks is known from how the store was changed, not from the code under
//! test.

use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use troupe_check::Value;
use troupe_runtime::{RunJournal, StepKey, StepKind};
use troupe_store::{Durability, Store};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn troupe(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_troupe"))
        .current_dir(dir)
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The planner call of the example and its plan's step.
const CALL: &str = "Desk/solve#0";
const PLAN: &str = "Desk/solve#0/plan#0";
const TRACE: &str = "Desk/solve#0/run#0";

/// Runs the planner example with the mock model into `dir/db`.
fn mock_run(dir: &Path) -> PathBuf {
    let example = workspace().join("examples/planner.troupe");
    let out = troupe(
        dir,
        &[
            "run",
            example.to_str().unwrap(),
            "--store",
            "db",
            "--llm",
            "mock",
            "-i",
            "question=why is the sky blue?",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    dir.join("db")
}

/// `troupe verify run-1`: whether it passed, and what it said.
fn verify(dir: &Path) -> (Option<i32>, String) {
    let out = troupe(dir, &["verify", "run-1", "--store", "db"]);
    (
        out.status.code(),
        format!("{}{}", text(&out.stdout), text(&out.stderr)),
    )
}

/// The recorded step `key` of run-1, as `troupe status --json` shows it.
fn step(dir: &Path, key: &str) -> Json {
    let out = troupe(dir, &["status", "run-1", "--store", "db", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let status: Json = serde_json::from_slice(&out.stdout).unwrap();
    status["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["key"] == key)
        .unwrap_or_else(|| panic!("no step {key}: {status:#}"))
        .clone()
}

/// The one text output of step `key`.
fn step_text(dir: &Path, key: &str) -> String {
    step(dir, key)["outputs"][0].as_str().unwrap().to_owned()
}

fn sql(db: &Path, statement: &str, params: &[&str]) -> usize {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.execute(statement, rusqlite::params_from_iter(params))
        .unwrap()
}

/// Rewrites step `key` of run-1 with `outputs` through the store's own
/// journal: both the copy a resumed run replays and the JSON copy people
/// read say the new outputs.
fn rewrite(db: &Path, key: &str, kind: StepKind, outputs: &[Value]) {
    let store = Store::open(db, Durability::Normal).unwrap();
    let journal = store
        .journal(1, Arc::new(troupe_check::TypeTable::default()))
        .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let key = StepKey::parse(key).unwrap();
    rt.block_on(journal.record(&key, kind, &[], outputs))
        .unwrap();
    rt.block_on(journal.flush()).unwrap();
}

#[test]
fn an_untampered_planner_run_verifies_with_its_plan() {
    let dir = tempfile::tempdir().unwrap();
    mock_run(dir.path());
    // The mock's plan: the Researcher searches and summarizes, and sends
    // the summary to the Writer, where it is returned.
    let plan = step_text(dir.path(), PLAN);
    assert!(
        plan.contains("search(task)") && plan.contains("-> Writer("),
        "{plan}"
    );
    let (code, said) = verify(dir.path());
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("a complete run of `ask`"), "{said}");
    assert!(
        said.contains("its 1 plan checks and its nested run is a run of it"),
        "{said}"
    );
    let out = troupe(dir.path(), &["verify", "run-1", "--store", "db", "--json"]);
    let doc: Json = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["verified"], true, "{doc}");
    assert_eq!(doc["plans"], 1, "{doc}");
}

#[test]
fn a_store_whose_plan_was_deleted_or_altered_does_not_verify() {
    // Each tamper on a store of its own: what it does to the store, and
    // what `troupe verify` must then say (besides naming the step).
    type Tamper = Box<dyn Fn(&Path, &Path)>;
    let cases: Vec<(&str, Tamper, Vec<&str>)> = vec![
        (
            "the plan's row deleted",
            Box::new(|_, db| {
                assert_eq!(
                    sql(db, "DELETE FROM steps WHERE run = 1 AND key = ?1", &[PLAN]),
                    1
                );
            }),
            vec!["its recorded plan is missing (no step Desk/solve#0/plan#0)"],
        ),
        (
            "the plan's shown copy altered by hand",
            Box::new(|_, db| {
                let forged = serde_json::json!([
                    "workflow plan(task: Text @ Researcher) {\n  return task @ Researcher\n}"
                ]);
                sql(
                    db,
                    "UPDATE steps SET outputs_json = ?2 WHERE run = 1 AND key = ?1",
                    &[PLAN, &forged.to_string()],
                );
            }),
            vec![
                "step Desk/solve#0/plan#0 recorded outputs that a resumed run would replay otherwise than they are shown",
            ],
        ),
        (
            "the plan rewritten so that it does not check",
            Box::new(|dir, db| {
                let plan = step_text(dir, PLAN).replace("search(task)", "search(task, task)");
                rewrite(db, PLAN, StepKind::Plan, &[Value::text(plan)]);
            }),
            vec![
                "its recorded plan (step Desk/solve#0/plan#0) does not check",
                "E0402",
                "line 2",
            ],
        ),
        (
            "the plan rewritten to another plan that checks",
            Box::new(|dir, db| {
                // The same statements, but the summary stays with the
                // Researcher: the recorded trace's message to the Writer is
                // no statement of this plan.
                let plan = step_text(dir, PLAN);
                let head = plan.split("  msg ").next().unwrap();
                let result = plan
                    .rsplit("return ")
                    .next()
                    .unwrap()
                    .split(" @")
                    .next()
                    .unwrap();
                let other = format!("{head}  return {result} @ Researcher\n}}\n");
                rewrite(db, PLAN, StepKind::Plan, &[Value::text(other)]);
            }),
            vec![
                "its nested run's recorded trace (step Desk/solve#0/run#0) is not a run of its recorded plan",
                "line 3",
            ],
        ),
        (
            "the nested run's trace deleted",
            Box::new(|_, db| {
                assert_eq!(
                    sql(db, "DELETE FROM steps WHERE run = 1 AND key = ?1", &[TRACE]),
                    1
                );
            }),
            vec!["its nested run's recorded trace is missing (no step Desk/solve#0/run#0)"],
        ),
        (
            "a line of the nested run's trace deleted",
            Box::new(|dir, db| {
                let trace = step_text(dir, TRACE);
                let kept: Vec<&str> = trace.lines().filter(|l| !l.contains("recv (")).collect();
                assert_eq!(kept.len() + 1, trace.lines().count(), "{trace}");
                rewrite(db, TRACE, StepKind::Plan, &[Value::text(kept.join("\n"))]);
            }),
            vec![
                "is not a run of its recorded plan",
                "ends before a run of the plan does",
            ],
        ),
        (
            "a nested step's outputs rewritten",
            Box::new(|_, db| {
                rewrite(
                    db,
                    "Desk/solve#0/Researcher/search#0",
                    StepKind::Llm,
                    &[Value::text("forged notes")],
                );
            }),
            vec![
                "line 1 of its nested run's trace shows `search` →",
                "but step Desk/solve#0/Researcher/search#0 recorded \"forged notes\"",
            ],
        ),
        (
            "a nested step deleted",
            Box::new(|_, db| {
                sql(
                    db,
                    "DELETE FROM steps WHERE run = 1 AND key = ?1",
                    &["Desk/solve#0/Researcher/summarize#0"],
                );
            }),
            vec![
                "calls `summarize` at Researcher, but no step Desk/solve#0/Researcher/summarize#0 is recorded",
            ],
        ),
        (
            "every record of the planner call deleted",
            Box::new(|_, db| {
                assert!(
                    sql(
                        db,
                        "DELETE FROM steps WHERE run = 1 AND (key = ?1 OR key LIKE ?1 || '/%')",
                        &[CALL],
                    ) >= 4
                );
            }),
            vec![
                "its events show 1 call(s) of planner `solve` at Desk, but 0 finished planner step(s)",
            ],
        ),
    ];
    for (what, tamper, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        let db = mock_run(dir.path());
        let (code, said) = verify(dir.path());
        assert_eq!(code, Some(0), "before {what}: {said}");
        tamper(dir.path(), &db);
        let (code, said) = verify(dir.path());
        assert_eq!(code, Some(1), "{what}: verify passed or broke: {said}");
        assert!(said.contains("run-1"), "{what}: {said}");
        if !what.starts_with("every record") {
            assert!(
                said.contains("planner step Desk/solve#0:"),
                "{what}: {said}"
            );
        }
        for e in expected {
            assert!(said.contains(e), "{what}: want {e:?} in:\n{said}");
        }
        assert!(!said.contains("panicked"), "{what}: {said}");
    }
}

/// A plan with a decision whose branches send the same message (the trace
/// names a statement by its text only, so the check must find which of the
/// two the run took) and a loop.
const BRANCHING_PLAN: &str = r#"workflow plan(task: Text @ Researcher) {
  lifelines Researcher, Writer
  act Researcher: notes = search(task)
  if notes == "notes" @ Researcher {
    msg Researcher(notes) -> Writer(notes)
  } else {
    msg Researcher(notes) -> Writer(notes)
  }
  act Writer: k = 0
  while k < 2 @ Writer {
    act Writer: k = k + 1
  }
  act Writer: s = summarize(notes)
  return s @ Writer
}"#;

const WORKFLOW: &str = r#"
llm search(query: Text) -> (notes: Text) { prompt: "Find facts about: {query}" }
llm summarize(notes: Text) -> (summary: Text) { prompt: "Summarize: {notes}" }
planner solve(task: Text) -> (answer: Text) {
  prompt: "Write a troupe workflow that answers: {task}"
  actions: [search, summarize]
  lifelines: [Researcher, Writer]
  retries: 0
}
workflow ask(question: Text @ User) {
  act User: answer = solve(question)
  return answer @ User
}
"#;

#[test]
fn decisions_of_a_plan_are_checked_in_its_nested_runs_trace() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.troupe"), WORKFLOW).unwrap();
    let script = serde_json::json!({
        "solve": [BRANCHING_PLAN],
        "search": "notes",
        "summarize": "summary",
    });
    std::fs::write(dir.path().join("script.json"), script.to_string()).unwrap();
    let out = troupe(
        dir.path(),
        &[
            "run",
            "w.troupe",
            "--store",
            "db",
            "-i",
            "question=q",
            "--llm",
            "scripted:script.json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (code, said) = verify(dir.path());
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("its 1 plan checks"), "{said}");

    // The Writer's loop ran twice. With its second decision flipped to ⊥
    // the trace leaves the loop after one turn, yet its next line is the
    // loop's body again: no run of the plan.
    let trace = step_text(dir.path(), "User/solve#0/run#0");
    let decides: Vec<&str> = trace.lines().filter(|l| l.contains("decide ⊤")).collect();
    assert_eq!(decides.len(), 3, "the if, then the loop twice:\n{trace}");
    let flipped = trace.replacen(decides[2], &decides[2].replace('⊤', "⊥"), 1);
    rewrite(
        &dir.path().join("db"),
        "User/solve#0/run#0",
        StepKind::Plan,
        &[Value::text(flipped)],
    );
    let (code, said) = verify(dir.path());
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("planner step User/solve#0:")
            && said.contains("is not a run of its recorded plan"),
        "{said}"
    );
}
