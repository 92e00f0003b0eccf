//! The binary on the forms of LANGUAGE.md §6 that troupe implements: `for`,
//! `import`/`call` (charts and projections with the call as a box, and
//! `--inline`), diagnostics that point into two files, and runs verified
//! online.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn troupe(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args(args)
        .current_dir(workspace())
        .env("NO_COLOR", "1")
        .env_remove("TROUPE_LLM")
        .output()
        .expect("run troupe")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_for_loop_runs_once_per_element_and_is_verified() {
    let out = troupe(&[
        "run",
        "examples/for_documents.troupe",
        "-i",
        r#"docs=["one", "two", "three"]"#,
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    // Three summaries, one per document, in the digest.
    let doc: serde_json::Value = serde_json::from_str(text.trim()).unwrap_or_else(|e| {
        panic!("{e}: {text}");
    });
    let digest = doc.to_string();
    assert_eq!(digest.matches("- mock answer").count(), 3, "{digest}");

    let empty = troupe(&["run", "examples/for_documents.troupe", "-i", "docs=[]"]);
    assert_eq!(empty.status.code(), Some(0), "{}", stderr(&empty));
    assert!(stdout(&empty).contains("checked = 0"), "{}", stdout(&empty));
    let all = format!("{}{}", stdout(&empty), stderr(&empty));
    assert!(all.contains("verified"), "{all}");
}

#[test]
fn a_for_loop_is_drawn_as_a_loop_over_its_list() {
    let out = troupe(&[
        "msc",
        "examples/for_documents.troupe",
        "--format",
        "mermaid",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let chart = stdout(&out);
    assert!(chart.contains("loop [for doc in docs] @ Editor"), "{chart}");
    // The loop's bookkeeping is not drawn.
    assert!(!chart.contains("#35;doc"), "{chart}");
}

#[test]
fn a_call_is_a_box_and_inline_expands_it() {
    let boxed = stdout(&troupe(&[
        "msc",
        "examples/split_review.troupe",
        "--format",
        "mermaid",
    ]));
    assert!(
        boxed.contains("Note over P0,P1: call reviewed[Author = Alice, Reviewer = Editor]"),
        "{boxed}"
    );
    assert!(!boxed.contains("draft("), "{boxed}");
    let inline = stdout(&troupe(&[
        "msc",
        "examples/split_review.troupe",
        "--format",
        "mermaid",
        "--inline",
    ]));
    assert_eq!(inline.matches("rect rgb").count(), 2, "{inline}");
    assert!(
        inline.contains("reviewed.text = draft(reviewed.task)"),
        "{inline}"
    );
    let svg = stdout(&troupe(&["msc", "examples/split_review.troupe"]));
    assert!(
        svg.starts_with("<svg") && svg.contains("call reviewed["),
        "{svg}"
    );

    let project = stdout(&troupe(&[
        "project",
        "examples/split_review.troupe",
        "--lifeline",
        "Editor",
    ]));
    assert!(
        project.contains("call reviewed[Author = Bob, Reviewer = Editor] {"),
        "{project}"
    );
    assert!(!project.contains("review(reviewed.text)"), "{project}");
    let inline = stdout(&troupe(&[
        "project",
        "examples/split_review.troupe",
        "--lifeline",
        "Editor",
        "--inline",
    ]));
    assert!(inline.contains("review(reviewed.text)"), "{inline}");
}

#[test]
fn a_workflow_split_over_two_files_runs_and_is_verified() {
    let out = troupe(&[
        "run",
        "examples/split_review.troupe",
        "-i",
        "topic=tide pools",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("article = "), "{}", stdout(&out));
    let all = format!("{}{}", stdout(&out), stderr(&out));
    assert!(all.contains("verified"), "{all}");
}

#[test]
fn an_import_cycle_is_shown_in_both_files() {
    let out = troupe(&[
        "check",
        "crates/troupe-check/tests/corpus/err/e0702_import_cycle.troupe",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(text.contains("lib/cycle_b.troupe:1:8"), "{text}");
    assert!(text.contains("e0702_import_cycle.troupe:3:8"), "{text}");
    let json = troupe(&[
        "check",
        "--json",
        "crates/troupe-check/tests/corpus/err/e0702_import_cycle.troupe",
    ]);
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let d = &doc["diagnostics"][0];
    assert_eq!(d["code"], "E0702");
    assert!(
        d["file"].as_str().unwrap().ends_with("lib/cycle_b.troupe"),
        "{d}"
    );
    assert_eq!(d["line"], 1);
}

#[test]
fn a_durable_run_records_the_imported_files_and_resumes_from_them() {
    let dir = std::env::temp_dir().join(format!("troupe-lang-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("lib")).unwrap();
    let root = workspace();
    std::fs::copy(
        root.join("examples/split_review.troupe"),
        dir.join("split.troupe"),
    )
    .unwrap();
    std::fs::copy(
        root.join("examples/lib/review.troupe"),
        dir.join("lib/review.troupe"),
    )
    .unwrap();
    let db = dir.join("runs.db");
    let db = db.to_str().unwrap();
    let split = dir.join("split.troupe");
    let out = troupe(&[
        "run",
        split.to_str().unwrap(),
        "-i",
        "topic=kelp",
        "--store",
        db,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The imported file is gone: the recorded run still verifies and charts.
    std::fs::remove_file(dir.join("lib/review.troupe")).unwrap();
    let verify = troupe(&["verify", "run-1", "--store", db]);
    assert_eq!(
        verify.status.code(),
        Some(0),
        "{}{}",
        stdout(&verify),
        stderr(&verify)
    );
    let chart = troupe(&["msc", "run-1", "--store", db, "--format", "mermaid"]);
    assert_eq!(chart.status.code(), Some(0), "{}", stderr(&chart));
    assert!(
        stdout(&chart).contains("reviewed.text"),
        "{}",
        stdout(&chart)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A durable run of `examples/acknowledge.troupe` in a fresh directory.
fn ack_dir() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::copy(
        workspace().join("examples/acknowledge.troupe"),
        d.path().join("w.troupe"),
    )
    .unwrap();
    d
}

fn in_dir(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_troupe"));
    c.current_dir(dir)
        .args(args)
        .env("NO_COLOR", "1")
        .env("TROUPE_LEASE", "1s")
        .env_remove("TROUPE_LLM")
        .stdin(std::process::Stdio::null());
    c
}

fn pending(dir: &Path) -> Vec<serde_json::Value> {
    if !dir.join("db").exists() {
        return Vec::new();
    }
    let out = in_dir(dir, &["tasks", "--store", "db", "--json"])
        .output()
        .unwrap();
    serde_json::from_slice::<serde_json::Value>(&out.stdout)
        .ok()
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
}

#[test]
fn an_acknowledgement_waits_for_a_person_and_cannot_be_declined() {
    let d = ack_dir();
    let dir = d.path();
    let run = in_dir(
        dir,
        &["run", "w.troupe", "--store", "db", "-i", "change=keys"],
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let start = std::time::Instant::now();
    while pending(dir).is_empty() {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "no task"
        );
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    let task = pending(dir)[0].clone();
    assert_eq!(task["kind"], "acknowledge", "{task}");
    for wrong in [vec!["--no"], vec!["--value", "sure"], vec!["--json", "[]"]] {
        let mut args = vec!["answer", "task-1", "--store", "db"];
        args.extend(wrong.iter().copied());
        let out = in_dir(dir, &args).output().unwrap();
        assert!(!out.status.success(), "{wrong:?} was accepted");
        assert!(stderr(&out).contains("acknowledgement"), "{}", stderr(&out));
        assert_eq!(pending(dir).len(), 1, "{wrong:?}: the task stays pending");
    }
    let out = in_dir(dir, &["answer", "task-1", "--yes", "--store", "db"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let done = run.wait_with_output().unwrap();
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&done.stdout), "receipt = read\n");
    let verify = in_dir(dir, &["verify", "run-1", "--store", "db"])
        .output()
        .unwrap();
    assert!(verify.status.success(), "{}", stderr(&verify));
    assert!(pending(dir).is_empty());
}

#[test]
fn an_acknowledgement_is_answered_by_a_script_with_the_empty_record() {
    let d = ack_dir();
    std::fs::write(d.path().join("answers.json"), r#"{"Operator.notice": {}}"#).unwrap();
    let out = in_dir(
        d.path(),
        &[
            "run",
            "w.troupe",
            "-i",
            "change=keys",
            "--answers",
            "answers.json",
        ],
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "receipt = read\n");
    std::fs::write(d.path().join("answers.json"), r#"{"notice": true}"#).unwrap();
    let out = in_dir(
        d.path(),
        &[
            "run",
            "w.troupe",
            "-i",
            "change=keys",
            "--answers",
            "answers.json",
        ],
    )
    .output()
    .unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("acknowledgement"), "{}", stderr(&out));
}

#[test]
fn an_llm_with_tools_runs_and_the_mock_model_answers_without_calling_them() {
    let out = troupe(&[
        "run",
        "crates/troupe-check/tests/corpus/ok/llm_tools.troupe",
        "-i",
        "q=hello",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "a = mock answer 0 to assist\n");
}

#[test]
fn a_fan_out_review_runs_its_reviewers_in_parallel_and_is_verified() {
    let out = troupe(&[
        "run",
        "examples/fan_out_review.troupe",
        "-i",
        "draft=Our Q3 results are in.",
        "--trace",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        stderr(&out).contains("verified: the run"),
        "{}",
        stderr(&out)
    );
    // The Author sent the draft to each reviewer, and the Editor heard
    // from each of them, in the order their reports arrived.
    for reviewer in ["Style", "Facts", "Tone"] {
        assert!(
            text.contains(&format!(
                "Author       send (\"Our Q3 results are in.\") to {reviewer}"
            )),
            "{text}"
        );
        assert!(
            text.lines()
                .any(|l| l.contains("Editor       recv") && l.contains(&format!("from {reviewer}"))),
            "{text}"
        );
    }
    assert!(text.contains("outcome = "), "{text}");

    let chart = troupe(&[
        "msc",
        "examples/fan_out_review.troupe",
        "--format",
        "mermaid",
    ]);
    assert_eq!(chart.status.code(), Some(0), "{}", stderr(&chart));
    let m = stdout(&chart);
    assert!(
        m.contains("par [branch 1]")
            && m.contains("and [branch 3]")
            && m.contains("par [coregion] @ Editor"),
        "{m}"
    );
    let projection = stdout(&troupe(&["project", "examples/fan_out_review.troupe"]));
    assert!(
        projection.contains("par branch 1 {") && projection.contains("} and branch 3 {"),
        "{projection}"
    );
}
