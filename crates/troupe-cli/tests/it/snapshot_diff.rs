//! `troupe snapshot` and `troupe diff`, driven as a user would: snapshots
//! of every example are byte-stable (across runs, directories and
//! layout), every pair of examples diffs to a recorded summary, and
//! edited copies of the examples give the expected change lines and exit
//! statuses, with a `.troupe` file, a snapshot JSON or a recorded run on
//! either side.

use crate::support::{Project, said};
use std::path::{Path, PathBuf};
use std::process::Output;

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .canonicalize()
        .unwrap()
}

/// The `.troupe` files of `examples/`, by name.
fn examples() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(examples_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "troupe"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "{files:?}");
    files
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Copies `from` (a directory) to `to`, recursively.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The same workflow written otherwise: comments and blank lines added,
/// statements indented deeper with comments after them.
fn reformat(text: &str) -> String {
    let mut out = String::from("// A copy, reformatted.\n\n\n");
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("workflow ") {
            out.push_str("// the workflow\n\n");
        }
        if trimmed.starts_with("msg ") || trimmed.starts_with("act ") {
            let depth = line.len() - trimmed.len();
            out.push_str(&" ".repeat(depth * 2));
            out.push_str(trimmed);
            out.push_str("    // a statement\n");
        } else {
            out.push_str(line);
            out.push('\n');
        }
        if trimmed.starts_with("lifelines ") {
            out.push_str("\n  // the lifelines are above\n\n");
        }
    }
    out
}

#[test]
fn snapshots_are_stable_across_runs_directories_and_layout() {
    let p = Project::new();
    let copy = p.path().join("elsewhere/deeper");
    copy_dir(&examples_dir(), &copy);
    for file in examples() {
        let name = file.file_name().unwrap().to_str().unwrap().to_owned();
        let path = file.to_str().unwrap();
        let first = p.run(&["snapshot", path]);
        assert_eq!(first.status.code(), Some(0), "{name}: {}", said(&first));
        let second = p.run(&["snapshot", path]);
        assert_eq!(first.stdout, second.stdout, "{name}: two runs differ");
        let json: serde_json::Value = serde_json::from_slice(&first.stdout).unwrap();
        assert_eq!(json["format"], 1, "{name}");
        assert!(!stdout(&first).contains(examples_dir().to_str().unwrap()));

        let moved = copy.join(&name);
        let text = std::fs::read_to_string(&moved).unwrap();
        let reformatted = reformat(&text);
        assert_ne!(text, reformatted);
        std::fs::write(&moved, reformatted).unwrap();
        let relative = format!("elsewhere/deeper/{name}");
        let other = p.run(&["snapshot", &relative]);
        assert_eq!(other.status.code(), Some(0), "{name}: {}", said(&other));
        assert_eq!(
            stdout(&first),
            stdout(&other),
            "{name}: the moved, reformatted copy differs"
        );
        // Read back, the snapshot is the workflow it was made of.
        p.write("saved.json", &stdout(&first));
        let back = p.run(&["diff", "saved.json", path]);
        assert_eq!(back.status.code(), Some(0), "{name}: {}", said(&back));
        let same = p.run(&["diff", path, &relative]);
        assert_eq!(same.status.code(), Some(0), "{name}: {}", said(&same));
        assert_eq!(stdout(&same), "no differences\n");
    }
}

/// How many changes of each kind a `diff --json` reports.
fn summary(json: &serde_json::Value) -> String {
    let mut counts = std::collections::BTreeMap::<String, usize>::new();
    for c in json["changes"].as_array().unwrap() {
        *counts
            .entry(c["change"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    counts
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[test]
fn every_pair_of_examples() {
    let p = Project::new();
    let files = examples();
    let mut report = String::new();
    for (i, a) in files.iter().enumerate() {
        for b in &files[i + 1..] {
            let (a_path, b_path) = (a.to_str().unwrap(), b.to_str().unwrap());
            let text = p.run(&["diff", a_path, b_path]);
            assert_eq!(text.status.code(), Some(1), "{}", said(&text));
            let json = p.run(&["diff", a_path, b_path, "--json"]);
            assert_eq!(json.status.code(), Some(1), "{}", said(&json));
            let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
            assert_eq!(doc["equal"], false);
            let n = doc["changes"].as_array().unwrap().len();
            // One line per change, then the summary.
            let lines: Vec<&str> = std::str::from_utf8(&text.stdout).unwrap().lines().collect();
            assert_eq!(lines.len(), n + 1);
            assert_eq!(lines[n], format!("{n} differences"));
            report.push_str(&format!(
                "{} -> {}: {n} ({})\n",
                a.file_name().unwrap().to_str().unwrap(),
                b.file_name().unwrap().to_str().unwrap(),
                summary(&doc)
            ));
        }
    }
    let mut s = insta::Settings::clone_current();
    s.set_prepend_module_to_snapshot(false);
    s.bind(|| insta::assert_snapshot!("diff_example_pairs", report));
}

/// A copy of `examples/NAME` with `edit` applied; panics when the edit
/// changes nothing (the example moved on: update the test).
fn edited(p: &Project, name: &str, out: &str, edit: &[(&str, &str)]) -> String {
    let mut text = std::fs::read_to_string(examples_dir().join(name)).unwrap();
    for (from, to) in edit {
        assert!(text.contains(from), "{name} has no {from:?}");
        text = text.replacen(from, to, 1);
    }
    p.write(out, &text);
    out.to_owned()
}

/// `troupe diff OLD NEW ARGS`: the exit status and stdout.
fn diff(p: &Project, old: &str, new: &str, args: &[&str]) -> (Option<i32>, String) {
    let mut all = vec!["diff", old, new];
    all.extend(args);
    let out = p.run(&all);
    (out.status.code(), stdout(&out))
}

#[test]
fn edits_give_their_change_lines() {
    let p = Project::new();
    for name in [
        "local_approval.troupe",
        "consensus.troupe",
        "fan_out_review.troupe",
    ] {
        std::fs::copy(examples_dir().join(name), p.path().join(name)).unwrap();
    }
    let cases: Vec<(&str, &str, String)> = vec![
        (
            "insert an act",
            "local_approval.troupe",
            edited(
                &p,
                "local_approval.troupe",
                "insert.troupe",
                &[(
                    "  act Approver: approved = approve(request)\n",
                    "  act Approver: approved = approve(request)\n  act Approver: note = \"checked\"\n",
                )],
            ),
        ),
        (
            "remove a message",
            "consensus.troupe",
            edited(
                &p,
                "consensus.troupe",
                "remove.troupe",
                &[("  } exit {\n    msg Alice(\"done\") -> Bob(_)\n  }", "  }")],
            ),
        ),
        (
            "swap the branches of an if",
            "fan_out_review.troupe",
            edited(
                &p,
                "fan_out_review.troupe",
                "swap.troupe",
                &[
                    ("outcome = \"approved\"", "outcome = \"SWAP\""),
                    ("outcome = \"revise\"", "outcome = \"approved\""),
                    ("outcome = \"SWAP\"", "outcome = \"revise\""),
                ],
            ),
        ),
        (
            "change a guard",
            "consensus.troupe",
            edited(
                &p,
                "consensus.troupe",
                "guard.troupe",
                &[("round < 5 @ Alice", "round < 3 @ Alice")],
            ),
        ),
        (
            "add a lifeline",
            "consensus.troupe",
            edited(
                &p,
                "consensus.troupe",
                "lifeline.troupe",
                &[
                    ("lifelines Alice, Bob", "lifelines Alice, Bob, Carol"),
                    (
                        "  act Alice: agreed = a == b\n",
                        "  act Alice: agreed = a == b\n  msg Alice(agreed) -> Carol(agreed)\n",
                    ),
                ],
            ),
        ),
        (
            "rename an action",
            "local_approval.troupe",
            edited(
                &p,
                "local_approval.troupe",
                "rename.troupe",
                &[
                    ("human approve(", "human sign_off("),
                    (
                        "approved = approve(request)",
                        "approved = sign_off(request)",
                    ),
                ],
            ),
        ),
        (
            "reorder the results",
            "consensus.troupe",
            edited(
                &p,
                "consensus.troupe",
                "results.troupe",
                &[(
                    "return (a @ Alice, agreed @ Alice, round @ Alice)",
                    "return (agreed @ Alice, a @ Alice, round @ Alice)",
                )],
            ),
        ),
        (
            "change a prompt",
            "consensus.troupe",
            edited(
                &p,
                "consensus.troupe",
                "prompt.troupe",
                &[("Assess this case:", "Please assess this case:")],
            ),
        ),
    ];
    let mut report = String::new();
    for (what, old, new) in &cases {
        let (code, out) = diff(&p, old, new, &[]);
        assert_eq!(code, Some(1), "{what}: {out}");
        report.push_str(&format!("## {what}: troupe diff {old} {new}\n{out}\n"));
    }
    let mut s = insta::Settings::clone_current();
    s.set_prepend_module_to_snapshot(false);
    s.bind(|| insta::assert_snapshot!("diff_edits", report));

    // Equal files are no difference, and a prompt change is none when
    // prompts are ignored.
    assert_eq!(
        diff(&p, "consensus.troupe", "consensus.troupe", &[]),
        (Some(0), "no differences\n".to_owned())
    );
    assert_eq!(
        diff(
            &p,
            "consensus.troupe",
            "prompt.troupe",
            &["--ignore", "prompts"]
        ),
        (Some(0), "no differences\n".to_owned())
    );
    // Ignoring prompts hides nothing else.
    let (code, out) = diff(
        &p,
        "consensus.troupe",
        "guard.troupe",
        &["--ignore", "prompts"],
    );
    assert_eq!(code, Some(1));
    assert_eq!(out, diff(&p, "consensus.troupe", "guard.troupe", &[]).1);
}

#[test]
fn json_output_has_equal_and_typed_changes() {
    let p = Project::new();
    std::fs::copy(
        examples_dir().join("consensus.troupe"),
        p.path().join("consensus.troupe"),
    )
    .unwrap();
    edited(
        &p,
        "consensus.troupe",
        "guard.troupe",
        &[
            ("round < 5 @ Alice", "round < 3 @ Alice"),
            ("Assess this case:", "Judge this case:"),
        ],
    );
    let (code, out) = diff(&p, "consensus.troupe", "guard.troupe", &["--json"]);
    assert_eq!(code, Some(1), "{out}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["equal"], false);
    let changes = doc["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 2, "{out}");
    assert_eq!(changes[0]["change"], "prompt_changed");
    assert_eq!(changes[0]["action"], "assess");
    assert_eq!(changes[0]["field"], "prompt");
    assert_eq!(changes[1]["change"], "guard_changed");
    assert_eq!(changes[1]["old"], "while a != b and round < 5 @ Alice");
    assert_eq!(changes[1]["new"], "while a != b and round < 3 @ Alice");
    assert_eq!(changes[1]["at"]["after"], "act Alice: round = 1", "{out}");

    let (code, out) = diff(&p, "consensus.troupe", "consensus.troupe", &["--json"]);
    assert_eq!(code, Some(0));
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc, serde_json::json!({"equal": true, "changes": []}));
}

#[test]
fn a_snapshot_file_stands_for_its_workflow() {
    let p = Project::new();
    std::fs::copy(
        examples_dir().join("local_approval.troupe"),
        p.path().join("old.troupe"),
    )
    .unwrap();
    let out = p.run(&["snapshot", "old.troupe", "-o", "old.snap.json"]);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    assert!(out.stdout.is_empty());
    assert_eq!(
        p.read("old.snap.json"),
        stdout(&p.run(&["snapshot", "old.troupe"]))
    );
    edited(
        &p,
        "local_approval.troupe",
        "new.troupe",
        &[(
            "act Ledger: recorded = record_decision(request, approved)\n",
            "act Ledger: recorded = record_decision(request, approved)\n  act Ledger: audited = recorded\n",
        )],
    );
    let from_file = diff(&p, "old.troupe", "new.troupe", &[]);
    assert_eq!(from_file.0, Some(1), "{}", from_file.1);
    assert_eq!(diff(&p, "old.snap.json", "new.troupe", &[]), from_file);
    assert_eq!(
        diff(&p, "old.snap.json", "old.troupe", &[]),
        (Some(0), "no differences\n".to_owned())
    );
    // A JSON file of another format is refused, not compared.
    p.write("future.json", r#"{"format": 99}"#);
    let out = p.run(&["diff", "future.json", "old.troupe"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(said(&out).contains("format 99"), "{}", said(&out));
}

#[test]
fn a_recorded_run_stands_for_the_source_it_ran() {
    let p = Project::new();
    std::fs::copy(
        examples_dir().join("counter.troupe"),
        p.path().join("counter.troupe"),
    )
    .unwrap();
    let out = p.run(&["run", "counter.troupe", "-i", "limit=2", "--store", "db"]);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    for run in ["run:1", "run-1"] {
        let out = p.run(&["diff", run, "counter.troupe", "--store", "db"]);
        assert_eq!(out.status.code(), Some(0), "{run}: {}", said(&out));
        assert_eq!(stdout(&out), "no differences\n");
    }
    // The file moves on; the run keeps the source it ran.
    edited(
        &p,
        "counter.troupe",
        "counter.troupe",
        &[("k < limit @ Ping", "k <= limit @ Ping")],
    );
    let out = p.run(&["diff", "run:1", "counter.troupe", "--store", "db"]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert_eq!(
        stdout(&out),
        "~ while k < limit @ Ping is now while k <= limit @ Ping after act Ping: k = 0\n1 difference\n"
    );
    let snap = p.run(&["snapshot", "run:1", "--store", "db"]);
    assert_eq!(snap.status.code(), Some(0), "{}", said(&snap));
    assert!(stdout(&snap).contains("\"while k < limit @ Ping\""));
}

#[test]
fn a_file_that_does_not_check_is_an_error() {
    let p = Project::new();
    std::fs::copy(
        examples_dir().join("counter.troupe"),
        p.path().join("counter.troupe"),
    )
    .unwrap();
    p.write(
        "broken.troupe",
        "workflow w(x: Int @ A) {\n  lifelines A, B\n  msg A(y) -> B(y)\n}\n",
    );
    let out = p.run(&["diff", "counter.troupe", "broken.troupe"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(out.stdout.is_empty(), "{}", said(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("E0"), "{err}");
    assert!(err.contains("broken.troupe does not check"), "{err}");
    let out = p.run(&["diff", "counter.troupe", "missing.troupe"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
}
