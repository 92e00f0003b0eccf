//! Machine-readable output and colours: every command that prints a table
//! has `--json`, a failed `run --json` prints one `{"error": …}` object on
//! stdout with a non-zero exit, and colours follow `--color`, `NO_COLOR`
//! and whether the output is a terminal.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn troupe(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args(args)
        .current_dir(workspace())
        .env("NO_COLOR", "1")
        .env("HOME", dir)
        .env("TROUPE_LEASE", "1s")
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not one JSON document ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// Paths of the scratch directory and of the repository as placeholders.
fn settings(tmp: &Path) -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.add_filter(&regex_escape(&tmp.display().to_string()), "[TMP]");
    s.add_filter(&regex_escape(&workspace().display().to_string()), "[ROOT]");
    s
}

fn regex_escape(s: &str) -> String {
    s.chars()
        .map(|c| {
            if "\\.+*?()|[]{}^$#&-~".contains(c) {
                format!("\\{c}")
            } else {
                c.to_string()
            }
        })
        .collect()
}

#[test]
fn every_command_that_prints_a_table_prints_json_with_json() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("t.db");
    let db = db.to_str().unwrap();
    let run = troupe(
        tmp.path(),
        &[
            "run",
            "examples/counter.troupe",
            "-i",
            "limit=2",
            "--store",
            db,
        ],
    );
    assert!(run.status.success(), "{run:?}");
    let one = |args: &[&str]| {
        let out = troupe(tmp.path(), args);
        assert!(out.status.success(), "{args:?}: {out:?}");
        json(&out)
    };
    let runs = one(&["runs", "--store", db, "--json"]);
    assert_eq!(runs[0]["name"], "run-1", "{runs}");
    let status = one(&["status", "run-1", "--store", db, "--json"]);
    assert_eq!(status["status"], "done", "{status}");
    let verify = one(&["verify", "run-1", "--store", db, "--json"]);
    assert_eq!(verify["verified"], true, "{verify}");
    let tasks = one(&["tasks", "--store", db, "--all", "--json"]);
    assert!(tasks.is_array(), "{tasks}");
    let codes = one(&["explain", "--json"]);
    assert!(codes.as_array().unwrap().len() > 20, "{codes}");
    assert_eq!(codes[0]["code"], "E0001", "{codes}");
    let models = one(&["models", "check", "--json"]);
    assert_eq!(models[0]["ok"], true, "{models}");
    let projection = one(&["project", "examples/counter.troupe", "--json"]);
    assert!(!projection.is_null());
    let check = one(&["check", "examples/counter.troupe", "--json"]);
    assert!(!check.is_null());
    let tools = workspace().join("../shared/data/mcp-tools/filesystem.json");
    let lint = troupe(
        tmp.path(),
        &[
            "contracts",
            "lint",
            tools.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    assert!(matches!(lint.status.code(), Some(0 | 1)), "{lint:?}");
    assert!(!json(&lint).is_null());
    // The trace: one JSON object per event.
    let trace = troupe(tmp.path(), &["trace", "run-1", "--store", db, "--json"]);
    assert!(trace.status.success(), "{trace:?}");
    let lines: Vec<serde_json::Value> = String::from_utf8(trace.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len() as u64, status["events"].as_u64().unwrap());

    let explained = one(&["explain", "E0301", "--json"]);
    settings(tmp.path()).bind(|| insta::assert_snapshot!("explain_json", explained));
}

#[test]
fn a_failed_run_with_json_prints_an_error_object_and_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.troupe");
    std::fs::write(
        &bad,
        "workflow w(x: Int @ A) {\n  lifelines A\n  act A: y = z\n  return y @ A\n}\n",
    )
    .unwrap();
    let bad = bad.to_str().unwrap();
    let cases: [(&str, Vec<&str>, i32); 4] = [
        ("does_not_check", vec!["run", bad, "-i", "x=1", "--json"], 1),
        (
            "input",
            vec!["run", "examples/counter.troupe", "-i", "limt=2", "--json"],
            2,
        ),
        (
            "unbound_externs",
            vec![
                "run",
                "examples/local_approval.troupe",
                "-i",
                "request=laptop",
                "--json",
            ],
            1,
        ),
        (
            "usage",
            vec![
                "run",
                "examples/counter.troupe",
                "--input-json",
                "{",
                "--json",
            ],
            2,
        ),
    ];
    let mut shown = Vec::new();
    for (kind, args, code) in cases {
        let out = troupe(tmp.path(), &args);
        assert_eq!(out.status.code(), Some(code), "{kind}: {out:?}");
        let doc = json(&out);
        let error = &doc["error"];
        assert_eq!(error["kind"], kind, "{doc}");
        assert!(
            error["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{doc}"
        );
        assert!(error["hint"].is_string(), "{kind} has a hint: {doc}");
        // stderr still says it for people.
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("error:"),
            "{out:?}"
        );
        shown.push(serde_json::to_string_pretty(&doc).unwrap());
    }
    settings(tmp.path()).bind(|| insta::assert_snapshot!("run_json_errors", shown.join("\n")));
}

/// A file with an error: `check` renders its diagnostic on stdout.
const BAD: &str = "workflow w(x: Int @ A) {\n  lifelines A\n  act A: y = z\n  return y @ A\n}\n";

fn has_colour(out: &[u8]) -> bool {
    out.windows(2).any(|w| w == b"\x1b[")
}

#[test]
fn colours_follow_the_flag_no_color_and_terminals() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("bad.troupe");
    std::fs::write(&file, BAD).unwrap();
    let file = file.to_str().unwrap();
    let piped = |color: Option<&str>, no_color: Option<&str>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_troupe"));
        c.arg("check")
            .arg(file)
            .stdin(Stdio::null())
            .env("TERM", "xterm");
        if let Some(choice) = color {
            c.args(["--color", choice]);
        }
        match no_color {
            Some(v) => c.env("NO_COLOR", v),
            None => c.env_remove("NO_COLOR"),
        };
        let out = c.output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        has_colour(&out.stdout)
    };
    assert!(!piped(None, None), "a pipe gets no colours");
    assert!(piped(Some("always"), None));
    assert!(piped(Some("always"), Some("1")), "--color always wins");
    assert!(!piped(Some("never"), None));

    // On a terminal (a pseudo-terminal made by script(1)).
    let on_tty = |env: &str| {
        let command = format!(
            "env -u NO_COLOR {env} {} check {file}",
            env!("CARGO_BIN_EXE_troupe")
        );
        let out = Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .env("TERM", "xterm")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(text.contains("E0301"), "{out:?}");
        has_colour(&out.stdout)
    };
    assert!(on_tty(""), "a terminal gets colours");
    assert!(!on_tty("NO_COLOR=1"), "NO_COLOR turns them off");
    assert!(
        on_tty("NO_COLOR="),
        "an empty NO_COLOR does not (no-color.org)"
    );
    assert!(!on_tty("TERM=dumb"), "nor on a dumb terminal");
}

/// A run that fails while it runs (its model is unreachable), in memory and
/// recorded: the error object names the kind, and for a recorded run the
/// run and how to retry it.
#[test]
fn a_run_that_fails_while_running_prints_an_error_object_with_json() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("troupe.toml"), "[llm]\nmax_retries = 0\n").unwrap();
    // A loopback port nothing listens on any more.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let consensus = workspace().join("examples/consensus.troupe");
    let db = tmp.path().join("t.db");
    let memory = [
        "run",
        consensus.to_str().unwrap(),
        "-i",
        "case=x",
        "--llm",
        "openai:gpt-4o-mini",
        "--json",
    ];
    let mut recorded = memory.to_vec();
    recorded.extend(["--store", db.to_str().unwrap()]);
    for args in [memory.to_vec(), recorded] {
        let out = Command::new(env!("CARGO_BIN_EXE_troupe"))
            .args(&args)
            .current_dir(tmp.path())
            .env("OPENAI_BASE_URL", format!("http://127.0.0.1:{port}/v1"))
            .env("OPENAI_API_KEY", "sk-test")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
        let doc = json(&out);
        assert_eq!(doc["error"]["kind"], "run_failed", "{doc}");
        let message = doc["error"]["message"].as_str().unwrap();
        assert!(message.contains("assess"), "{doc}");
        assert!(doc["error"]["hint"].is_string(), "{doc}");
        if args.contains(&"--store") {
            assert_eq!(doc["error"]["run"], "run-1", "{doc}");
            assert!(
                doc["error"]["hint"]
                    .as_str()
                    .unwrap()
                    .contains("troupe retry run-1")
            );
        }
    }
}
