//! Transcripts of the `troupe` binary as insta snapshots: every command's
//! `--help`, and the typical text and JSON output of the main commands
//! (check, explain, project, msc, run, and a durable run inspected with
//! runs, status, trace and verify). Times, dates, paths and generated ids
//! are filtered, so a snapshot changes only when what a user reads does.

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Runs `troupe ARGS` in `dir`; the transcript is the exit status, stdout
/// and stderr.
fn transcript_in(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        .env("TROUPE_LEASE", "5s")
        .env_remove("TROUPE_TOKEN")
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .expect("run troupe");
    let mut text = format!(
        "$ troupe {}\n[exit {}]\n",
        args.join(" "),
        out.status.code().unwrap_or(-1)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !stdout.is_empty() {
        text.push_str("--- stdout\n");
        text.push_str(&stdout);
    }
    if !stderr.is_empty() {
        text.push_str("--- stderr\n");
        text.push_str(&stderr);
    }
    text
}

fn transcript(args: &[&str]) -> String {
    transcript_in(&workspace(), args)
}

/// Filters for what varies between runs and machines.
fn settings(tmp: Option<&Path>) -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_prepend_module_to_snapshot(false);
    if let Some(tmp) = tmp {
        s.add_filter(&regex_escape(&tmp.display().to_string()), "[TMP]");
    }
    s.add_filter(&regex_escape(&workspace().display().to_string()), "[ROOT]");
    s.add_filter(
        r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?( UTC)?",
        "[DATE]",
    );
    s.add_filter(
        r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        "[UUID]",
    );
    s.add_filter(r"\b\d+(\.\d+)?\s?(ns|µs|us|ms|s)\b", "[TIME]");
    s.add_filter(r"\bpid \d+\b", "pid [PID]");
    s
}

fn regex_escape(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

const COMMANDS: &[&str] = &[
    "check",
    "explain",
    "run",
    "project",
    "msc",
    "snapshot",
    "diff",
    "runs",
    "status",
    "trace",
    "verify",
    "upgrade",
    "tasks",
    "answer",
    "resume",
    "retry",
    "cancel",
    "delete",
    "resolve",
    "serve",
    "mcp",
    "contracts",
    "models",
    "lsp",
    "bench",
    "init",
    "completions",
];

#[test]
fn help_texts() {
    let mut all = transcript(&["--help"]);
    for c in COMMANDS {
        let t = transcript(&[c, "--help"]);
        assert!(t.contains("[exit 0]"), "{t}");
        all.push('\n');
        all.push_str(&t);
    }
    // Help texts are static: only paths are filtered.
    let mut s = insta::Settings::clone_current();
    s.set_prepend_module_to_snapshot(false);
    s.add_filter(&regex_escape(&workspace().display().to_string()), "[ROOT]");
    s.bind(|| insta::assert_snapshot!("help", all));
}

#[test]
fn check_explain_project_and_msc() {
    let runs = [
        transcript(&[
            "check",
            "examples/consensus.troupe",
            "examples/counter.troupe",
        ]),
        transcript(&[
            "check",
            "--json",
            "crates/troupe-check/tests/corpus/err/e0301_guard_reads_unbound.troupe",
        ]),
        transcript(&["explain", "E0301"]),
        transcript(&["project", "examples/counter.troupe"]),
        transcript(&["project", "examples/consensus.troupe", "--lifeline", "Bob"]),
        transcript(&["project", "examples/counter.troupe", "--json"]),
        transcript(&["msc", "examples/counter.troupe", "--format", "mermaid"]),
    ];
    settings(None).bind(|| insta::assert_snapshot!("check_explain_project_msc", runs.join("\n")));
}

#[test]
fn in_memory_runs() {
    let runs = [
        transcript(&["run", "examples/counter.troupe", "-i", "limit=2", "--trace"]),
        transcript(&["run", "examples/counter.troupe", "-i", "limit=2", "--json"]),
        transcript(&["run", "examples/counter.troupe"]),
    ];
    settings(None).bind(|| insta::assert_snapshot!("in_memory_runs", runs.join("\n")));
}

#[test]
fn a_durable_run_inspected() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let file = workspace().join("examples/counter.troupe");
    let file = file.to_str().unwrap();
    let db = dir.join("t.db");
    let db = db.to_str().unwrap();
    let runs = [
        transcript_in(dir, &["run", file, "-i", "limit=2", "--store", db]),
        transcript_in(dir, &["runs", "--store", db]),
        transcript_in(dir, &["status", "run-1", "--store", db]),
        transcript_in(dir, &["trace", "run-1", "--store", db]),
        transcript_in(dir, &["verify", "run-1", "--store", db]),
        transcript_in(dir, &["runs", "--store", db, "--json"]),
        transcript_in(dir, &["status", "run-9", "--store", db]),
    ];
    settings(Some(dir)).bind(|| insta::assert_snapshot!("durable_run", runs.join("\n")));
}
