//! The run lifecycle on the binary: typed answers, the recorded model on
//! resume, runs that wait for `resolve`, cancel, retry, delete and prune.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

struct Dir(tempfile::TempDir);

impl Dir {
    fn new(workflow: &str) -> Dir {
        let d = Dir(tempfile::tempdir().unwrap());
        std::fs::write(d.path().join("w.troupe"), workflow).unwrap();
        d
    }

    fn path(&self) -> &Path {
        self.0.path()
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_troupe"));
        c.current_dir(self.path())
            .args(args)
            .env("NO_COLOR", "1")
            .env("TROUPE_LEASE", "1s")
            .stdin(Stdio::null());
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    fn json(&self, args: &[&str]) -> serde_json::Value {
        let out = self.run(args);
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&out.stderr)))
    }

    fn spawn(&self, args: &[&str]) -> Child {
        use std::os::unix::process::CommandExt;
        self.cmd(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap()
    }

    fn status(&self) -> serde_json::Value {
        self.json(&["status", "run-1", "--store", "db", "--json"])
    }

    fn wait_for(&self, what: &str, mut f: impl FnMut(&Dir) -> bool) {
        let start = Instant::now();
        while !f(self) {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "timed out: {what}"
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    fn pending(&self) -> Vec<serde_json::Value> {
        if !self.path().join("db").exists() {
            return Vec::new();
        }
        self.json(&["tasks", "--store", "db", "--json"])
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn kill_group(c: &mut Child) {
    assert!(
        Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", c.id())])
            .status()
            .unwrap()
            .success()
    );
    c.wait().unwrap();
}

/// An effect as a command in `troupe.toml`: `script` gets the arguments on
/// stdin and prints the outputs.
fn command_extern(dir: &Dir, name: &str, script: &str) {
    let toml = format!(
        "[externs.{name}]\ncommand = [\"sh\", \"-c\", {}]\n",
        serde_json::Value::String(script.to_owned())
    );
    let path = dir.path().join("troupe.toml");
    let old = std::fs::read_to_string(&path).unwrap_or_default();
    std::fs::write(path, old + &toml).unwrap();
}

const TYPED: &str = r#"
enum Color { red, blue }
human count(q: Text) -> Int { ask: "How many {q}?" }
human pick(q: Text) -> Color { ask: "Which color for {q}?" }
workflow typed(q: Text @ A) {
  lifelines A, B
  act A: n = count(q)
  msg A(q) -> B(q)
  act B: c = pick(q)
  msg B(c) -> A(c)
  return (n @ A, c @ A)
}
"#;

#[test]
fn a_wrongly_typed_answer_is_refused_and_the_task_stays_pending() {
    let d = Dir::new(TYPED);
    let run = d.spawn(&[
        "run", "w.troupe", "--store", "db", "-i", "q=chairs", "--json",
    ]);
    d.wait_for("the first task", |d| !d.pending().is_empty());
    let task = d.pending()[0].clone();
    assert_eq!(task["type"], "Int", "{task}");
    for wrong in [
        vec!["--value", "three"],
        vec!["--json", "\"3\""],
        vec!["--yes"],
    ] {
        let mut args = vec!["answer", "task-1", "--store", "db"];
        args.extend(wrong.iter().copied());
        let out = d.run(&args);
        assert_eq!(out.status.code(), Some(1), "{wrong:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("expects a value of type Int")
                && stderr(&out).contains("--value 42"),
            "{wrong:?}: {}",
            stderr(&out)
        );
        assert_eq!(d.pending().len(), 1, "the task stays pending");
    }
    let out = d.run(&["answer", "task-1", "--value", "3", "--store", "db"]);
    assert!(out.status.success(), "{}", stderr(&out));
    d.wait_for("the second task", |d| {
        d.pending().iter().any(|t| t["action"] == "pick")
    });
    let out = d.run(&["answer", "task-2", "--json", "\"green\"", "--store", "db"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("one of red, blue"),
        "{}",
        stderr(&out)
    );
    let out = d.run(&["answer", "task-2", "--value", "blue", "--store", "db"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["results"]["n"], 3);
    assert_eq!(doc["results"]["c"], "blue");
}

const MODEL: &str = r#"
llm say(q: Text) -> (line: Text) { prompt: "Say something about {q}" }
human ok(line: Text) -> Bool { ask: "Keep {line}?" }
workflow talk(q: Text @ A) {
  lifelines A
  act A: ok1 = ok(q)
  act A: line = say(q)
  return line @ A
}
"#;

#[test]
fn resume_uses_the_model_the_run_was_started_with() {
    let d = Dir::new(MODEL);
    d.write("script.json", r#"{"say": "from the script"}"#);
    let mut first = d.spawn(&[
        "run",
        "w.troupe",
        "--store",
        "db",
        "-i",
        "q=tea",
        "--llm",
        "scripted:script.json",
    ]);
    d.wait_for("the task", |d| !d.pending().is_empty());
    kill_group(&mut first);
    let out = d.run(&["answer", "task-1", "--yes", "--store", "db"]);
    assert!(out.status.success(), "{}", stderr(&out));
    d.wait_for("the lease to expire", |d| d.status()["status"] == "stalled");
    assert_eq!(d.status()["settings"]["llm"], "scripted:script.json");
    let out = d.run(&["resume", "run-1", "--store", "db"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "line = from the script\n"
    );
    // An explicit override is used and recorded.
    let d = Dir::new(MODEL);
    d.write("script.json", r#"{"say": "from the script"}"#);
    d.write("other.json", r#"{"say": "from the override"}"#);
    let mut first = d.spawn(&[
        "run",
        "w.troupe",
        "--store",
        "db",
        "-i",
        "q=tea",
        "--llm",
        "scripted:script.json",
    ]);
    d.wait_for("the task", |d| !d.pending().is_empty());
    kill_group(&mut first);
    d.run(&["answer", "task-1", "--yes", "--store", "db"]);
    d.wait_for("the lease to expire", |d| d.status()["status"] == "stalled");
    let out = d.run(&[
        "resume",
        "run-1",
        "--store",
        "db",
        "--llm",
        "scripted:other.json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "line = from the override\n"
    );
    assert_eq!(
        d.status()["settings"]["overrides"],
        serde_json::json!(["llm=scripted:other.json"])
    );
}

const SLOW: &str = r#"
effect slow(n: Int) -> Int extern
workflow slow_one(n: Int @ A) {
  lifelines A
  act A: m = slow(n)
  return m @ A
}
"#;

#[test]
fn a_run_waiting_for_resolve_is_never_silently_replaced() {
    let d = Dir::new(SLOW);
    let marker = d.path().join("started");
    command_extern(
        &d,
        "slow",
        &format!(
            "cat >/dev/null; touch '{}'; sleep 30; echo 1",
            marker.display()
        ),
    );
    let mut first = d.spawn(&["run", "w.troupe", "--store", "db", "-i", "n=5"]);
    d.wait_for("the effect to start", |_| marker.exists());
    // While its owner performs it, nobody settles the step: a "retry"
    // would have it performed twice.
    let out = d.run(&["resolve", "run-1", "A/slow#0", "--retry", "--store", "db"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("run-1 is being run by")
            && stderr(&out).contains("troupe cancel run-1"),
        "{}",
        stderr(&out)
    );
    kill_group(&mut first);
    d.wait_for("the lease to expire", |d| d.status()["status"] == "stalled");
    // The effect started and never finished: it waits for a person.
    let out = d.run(&["resume", "run-1", "--store", "db"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("troupe resolve run-1 A/slow#0"),
        "{}",
        stderr(&out)
    );
    assert_eq!(d.status()["status"], "needs_resolution");
    // Rerunning the documented command refuses and names the command.
    let out = d.run(&["run", "w.troupe", "--store", "db", "-i", "n=5"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("troupe resolve run-1 A/slow#0"),
        "{}",
        stderr(&out)
    );
    let runs = d.json(&["runs", "--store", "db", "--json"]);
    assert_eq!(runs.as_array().unwrap().len(), 1, "no new run: {runs}");
    let status = d.run(&["status", "run-1", "--store", "db"]);
    assert!(
        String::from_utf8_lossy(&status.stdout).contains("troupe resolve run-1 A/slow#0 --done"),
        "{}",
        String::from_utf8_lossy(&status.stdout)
    );
    // A wrongly typed settlement is refused; a good one lets the run finish.
    let out = d.run(&[
        "resolve", "run-1", "A/slow#0", "--done", "\"x\"", "--store", "db",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("expected Int"), "{}", stderr(&out));
    let out = d.run(&[
        "resolve", "run-1", "A/slow#0", "--done", "7", "--store", "db",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = d.run(&["resume", "run-1", "--store", "db"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "m = 7\n");
}

#[test]
fn cancel_stops_a_waiting_run_and_closes_its_tasks() {
    let d = Dir::new(MODEL);
    let run = d.spawn(&["run", "w.troupe", "--store", "db", "-i", "q=tea"]);
    d.wait_for("the task", |d| !d.pending().is_empty());
    let out = d.run(&["cancel", "run-1", "--store", "db", "--reason", "not needed"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("cancelled: not needed"),
        "{}",
        stderr(&out)
    );
    let status = d.status();
    assert_eq!(status["status"], "cancelled");
    assert!(d.pending().is_empty());
    let out = d.run(&["answer", "task-1", "--yes", "--store", "db"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("cancelled"), "{}", stderr(&out));
    // Cancelling again says it ended.
    let out = d.run(&["cancel", "run-1", "--store", "db"]);
    assert_eq!(out.status.code(), Some(1));
}

const FLAKY: &str = r#"
effect count(n: Int) -> Int extern
effect flaky(n: Int) -> Int extern
workflow flaky_one(n: Int @ A) {
  lifelines A
  act A: a = count(n)
  act A: b = flaky(a)
  return b @ A
}
"#;

#[test]
fn retry_continues_a_failed_run_without_redoing_its_steps() {
    let d = Dir::new(FLAKY);
    let ledger = d.path().join("ledger");
    let marker = d.path().join("failed-once");
    command_extern(
        &d,
        "count",
        &format!("cat >/dev/null; echo x >> '{}'; echo 1", ledger.display()),
    );
    command_extern(
        &d,
        "flaky",
        &format!(
            "cat >/dev/null; if [ -e '{m}' ]; then echo 2; else touch '{m}'; echo 'the server is down' >&2; exit 3; fi",
            m = marker.display()
        ),
    );
    let out = d.run(&["run", "w.troupe", "--store", "db", "-i", "n=1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("the server is down"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("troupe retry run-1"),
        "{}",
        stderr(&out)
    );
    assert_eq!(d.status()["status"], "failed");
    let out = d.run(&["retry", "run-1", "--store", "db"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "b = 2\n");
    assert_eq!(
        std::fs::read_to_string(&ledger).unwrap().lines().count(),
        1,
        "the first effect ran once"
    );
    // A done run cannot be retried.
    let out = d.run(&["retry", "run-1", "--store", "db"]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn a_workflow_with_an_unimplemented_extern_refuses_to_start() {
    let d = Dir::new(FLAKY);
    let out = d.run(&["run", "w.troupe", "--store", "db", "-i", "n=1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no implementation for the extern action(s) count, flaky"),
        "{}",
        stderr(&out)
    );
    let runs = d.json(&["runs", "--store", "db", "--json"]);
    assert_eq!(runs.as_array().unwrap().len(), 0, "nothing was recorded");
    // With mocks asked for, the steps are marked as mocked.
    let out = d.run(&[
        "run",
        "w.troupe",
        "--store",
        "db",
        "-i",
        "n=1",
        "--mock-externs",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let steps = d.status()["steps"].clone();
    assert!(
        steps
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["kind"] == "mock"),
        "{steps}"
    );
}

#[test]
fn delete_and_prune_remove_ended_runs() {
    let d = Dir::new(SLOW);
    command_extern(&d, "slow", "cat >/dev/null; echo 1");
    for n in 0..4 {
        let out = d.run(&["run", "w.troupe", "--store", "db", "-i", &format!("n={n}")]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let out = d.run(&["delete", "run-1", "--store", "db"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = d.run(&["status", "run-1", "--store", "db"]);
    assert_ne!(out.status.code(), Some(0));
    let out = d.run(&["runs", "--store", "db", "--prune", "1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let runs = d.json(&["runs", "--store", "db", "--json"]);
    let names: Vec<&str> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["run-4"]);
}

#[test]
fn detach_logs_are_private_and_per_store() {
    let d = Dir::new(SLOW);
    command_extern(&d, "slow", "cat >/dev/null; echo 1");
    for db in ["a.db", "b.db"] {
        let out = d.run(&["run", "w.troupe", "--store", db, "-i", "n=1", "--detach"]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "run-1\n");
    }
    for db in ["a.db", "b.db"] {
        d.wait_for("the detached run", |d| {
            d.json(&["status", "run-1", "--store", db, "--json"])["status"] == "done"
        });
        let log = d.path().join(format!("{db}.run-1.log"));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&log).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", log.display());
    }
}

#[test]
fn deny_unverified_refuses_a_tool_without_a_contract() {
    let d = Dir::new(
        r#"
mcp shop { command: "/nonexistent/shop-server" }
tool buy(item: Text) -> Text { server: shop }
workflow w(item: Text @ A) {
  lifelines A
  act A: r = buy(item)
  return r @ A
}
"#,
    );
    let out = d.run(&["run", "w.troupe", "-i", "item=x", "--deny-unverified"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("W0605") && stderr(&out).contains("nothing was run"),
        "{}",
        stderr(&out)
    );
    // Without the flag it is a warning: the run starts (and fails at the
    // missing server, not at the contract).
    let out = d.run(&["run", "w.troupe", "-i", "item=x"]);
    assert!(
        !stderr(&out).contains("breaks the contracts"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("/nonexistent/shop-server"),
        "{}",
        stderr(&out)
    );
}

/// A run that cannot start (its model needs an API key nobody set) is
/// refused before it is recorded: no run is left behind to read `stalled`
/// with no events, and the same command with the key's model swapped for
/// one that works starts run-1.
#[test]
fn a_run_refused_for_a_missing_api_key_leaves_no_run_behind() {
    let d = Dir::new(MODEL);
    let out = d
        .cmd(&[
            "run",
            "w.troupe",
            "--store",
            "db",
            "-i",
            "q=tea",
            "--llm",
            "openai:gpt-4o-mini",
        ])
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("OPENAI_API_KEY"), "{}", stderr(&out));
    let runs = d.run(&["runs", "--store", "db", "--json"]);
    let runs: serde_json::Value = serde_json::from_slice(&runs.stdout).unwrap_or_default();
    assert!(runs.as_array().is_none_or(|a| a.is_empty()), "{runs}");
    // Detached (queued for workers): refused the same way.
    let out = d
        .cmd(&[
            "run",
            "w.troupe",
            "--store",
            "db",
            "-i",
            "q=tea",
            "--llm",
            "openai:gpt-4o-mini",
            "--detach",
        ])
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let runs = d.run(&["runs", "--store", "db", "--json"]);
    let runs: serde_json::Value = serde_json::from_slice(&runs.stdout).unwrap_or_default();
    assert!(runs.as_array().is_none_or(|a| a.is_empty()), "{runs}");
}
