//! Command-line tests: exit codes, rendered diagnostics (snapshots) and JSON.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn troupe(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args(args)
        .current_dir(workspace())
        .env("NO_COLOR", "1")
        .env("TROUPE_LEASE", "1s")
        .output()
        .expect("run troupe")
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err_corpus() -> Vec<String> {
    let dir = workspace().join("crates/troupe-check/tests/corpus/err");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "troupe"))
        .map(|p| {
            p.strip_prefix(workspace())
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    files.sort();
    files
}

#[test]
fn examples_check_clean() {
    let files: Vec<String> = std::fs::read_dir(workspace().join("examples"))
        .unwrap()
        .map(|e| format!("examples/{}", e.unwrap().file_name().to_string_lossy()))
        .filter(|f| f.ends_with(".troupe"))
        .collect();
    let mut args = vec!["check"];
    args.extend(files.iter().map(String::as_str));
    let out = troupe(&args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = String::from_utf8_lossy(&out.stderr);
    assert!(
        summary.contains("no problems") || summary.contains(" 0 errors"),
        "{summary}"
    );
}

#[test]
fn rendered_diagnostics_match_snapshots() {
    for file in err_corpus() {
        let out = troupe(&["check", "--color", "never", &file]);
        assert_eq!(out.status.code(), Some(1), "{file}");
        let name = Path::new(&file)
            .file_stem()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        insta::assert_snapshot!(name, stdout(&out));
    }
}

#[test]
fn json_output_has_locations_codes_and_hints() {
    let out = troupe(&[
        "check",
        "--json",
        "crates/troupe-check/tests/corpus/err/e0301_bound_on_one_branch.troupe",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let d = &doc["diagnostics"][0];
    assert_eq!(d["code"], "E0301");
    assert_eq!(d["name"], "unbound-variable");
    assert_eq!(d["severity"], "error");
    assert_eq!(d["line"], 7);
    assert_eq!(d["column"], 14);
    assert!(
        d["hint"]
            .as_str()
            .unwrap()
            .contains("only on the `if` branch at line 4"),
        "{d}"
    );
    assert_eq!(doc["summary"]["errors"], 1);
}

#[test]
fn missing_file_is_a_usage_error() {
    let out = troupe(&["check", "no/such/file.troupe"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read no/such/file.troupe"));
}

#[test]
fn no_arguments_is_a_usage_error() {
    assert_eq!(troupe(&["check"]).status.code(), Some(2));
    assert_eq!(troupe(&["frobnicate"]).status.code(), Some(2));
}

#[test]
fn explain_knows_every_code() {
    let out = troupe(&["explain", "E0301"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("unbound-variable"));
    let all = stdout(&troupe(&["explain"]));
    assert!(all.lines().count() >= 20);
    assert_eq!(troupe(&["explain", "E9999"]).status.code(), Some(2));
}

#[test]
fn contracts_are_mounted() {
    let data = workspace().join("../shared/data/mcp-tools/time.json");
    let out = troupe(&["contracts", "lint", "--json", data.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(doc.to_string().contains("convert_time"));
    assert_eq!(
        troupe(&["contracts", "lint", "no/such.json"]).status.code(),
        Some(2)
    );
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The commands an example's opening comment gives, as a user would type
/// them from the repository's root: the comment's indented lines that start
/// with `troupe `, a trailing `\` continuing a command on the next line.
fn run_lines(source: &str) -> Vec<String> {
    let mut commands = Vec::new();
    let mut current: Option<String> = None;
    for line in source.lines() {
        let Some(comment) = line.strip_prefix("//") else {
            break;
        };
        let text = comment.trim();
        let (text, continues) = match text.strip_suffix('\\') {
            Some(t) => (t.trim_end(), true),
            None => (text, false),
        };
        match current.as_mut() {
            Some(command) => {
                command.push(' ');
                command.push_str(text);
            }
            // Indented: a command, not prose that names troupe.
            None if comment.starts_with("  ") && text.starts_with("troupe ") => {
                current = Some(text.to_owned());
            }
            None => continue,
        }
        if !continues {
            commands.extend(current.take());
        }
    }
    commands
}

/// Every example says how to run it, and runs exactly as its comment says:
/// the mock model unless the line picks a scripted one, people's answers
/// from the files it names. A run is verified online.
#[test]
fn every_example_runs_as_its_comment_says() {
    let mut examples: Vec<PathBuf> = std::fs::read_dir(workspace().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "troupe"))
        .collect();
    examples.sort();
    assert!(examples.len() >= 10, "{examples:?}");
    for example in examples {
        let source = std::fs::read_to_string(&example).unwrap();
        let commands = run_lines(&source);
        assert!(
            !commands.is_empty(),
            "{} does not say how to run it (an indented `//   troupe …` line in its opening comment)",
            example.display()
        );
        for command in commands {
            let words = shlex::split(&command).unwrap_or_else(|| panic!("{command}"));
            let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
            let out = troupe(&args);
            assert_eq!(out.status.code(), Some(0), "{command}: {}", stderr(&out));
            if args[0] == "run" && args.contains(&"--json") {
                let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
                    .unwrap_or_else(|e| panic!("{command}: {e}: {}", stdout(&out)));
                assert_eq!(doc["verified"], true, "{command}: {doc}");
            } else if args[0] == "run" {
                assert!(
                    stderr(&out).contains("verified: the run"),
                    "{command}: {}",
                    stderr(&out)
                );
            }
            if args[0] == "run" && !command.contains("--llm") {
                assert!(stderr(&out).contains("using the mock model"), "{command}");
            }
        }
    }
    let out = troupe(&["run", "examples/counter.troupe", "-i", "limit=25"]);
    assert_eq!(stdout(&out), "k = 25\n");
}

#[test]
fn run_lines_are_read_from_the_opening_comment_only() {
    let source = "// An example.\n// troupe starts it as a child process (prose).\n//\n//   troupe run x.troupe -i a=1 \\\n//     --trace\n//   troupe msc x.troupe\n\nworkflow w() {}\n//   troupe run not/this.troupe\n";
    assert_eq!(
        run_lines(source),
        ["troupe run x.troupe -i a=1 --trace", "troupe msc x.troupe"]
    );
}

/// `--no-verify` runs the same workflow to the same results (the engine
/// then builds no events nobody reads) and says the run was not verified;
/// `--trace` still shows every event without a monitor.
/// `troupe run examples/consensus.troupe` with its scripted model and
/// `--json`, and `extra` flags: the JSON it prints (exit 0 checked).
fn scripted_consensus(extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "run",
        "examples/consensus.troupe",
        "-i",
        "case=refund",
        "--llm",
        "scripted:examples/scripts/consensus.json",
        "--json",
    ];
    args.extend_from_slice(extra);
    let out = troupe(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn an_unverified_run_has_the_same_results_and_says_so() {
    let doc = scripted_consensus(&["--no-verify"]);
    assert_eq!(doc["results"]["round"], 4);
    assert_eq!(doc["results"]["agreed"], true);
    assert_ne!(doc["verified"], true);
    let traced = troupe(&[
        "run",
        "examples/counter.troupe",
        "-i",
        "limit=3",
        "--no-verify",
        "--trace",
    ]);
    assert_eq!(traced.status.code(), Some(0), "{}", stderr(&traced));
    // From the chart: `k = 0`, 8 events a round (decision, its broadcast
    // and receipt, two messages each sent and received, Pong's act), and
    // the exit's decision, broadcast and receipt; then the result line.
    assert_eq!(stdout(&traced).lines().count(), 1 + 3 * 8 + 3 + 1);
    assert_eq!(stdout(&traced).lines().last(), Some("k = 3"));
    let verified = troupe(&["run", "examples/counter.troupe", "-i", "limit=3", "--trace"]);
    assert_eq!(stdout(&traced), stdout(&verified));
    assert!(stderr(&verified).contains("verified: the run"));
    assert!(!stderr(&traced).contains("verified: the run"));
}

#[test]
fn consensus_with_a_script_ends_in_the_scripted_round() {
    let doc = scripted_consensus(&[]);
    // Bob comes round in the third reconsideration: the round counter ends at 4.
    assert_eq!(doc["results"]["round"], 4);
    assert_eq!(doc["results"]["agreed"], true);
    assert_eq!(doc["results"]["a"], "approve");
    assert_eq!(doc["verified"], true);
}

#[test]
fn run_trace_shows_control_messages_with_tags() {
    let out = troupe(&[
        "run",
        "examples/counter.troupe",
        "-i",
        "limit=2",
        "--trace",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let trace = doc["trace"].as_array().unwrap();
    let controls = trace.iter().filter(|e| e.get("control").is_some()).count();
    // Three decisions (⊤, ⊤, ⊥), each sent by Ping and received by Pong.
    assert_eq!(controls, 6);
    let times: Vec<u64> = trace.iter().map(|e| e["time"].as_u64().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn run_reports_bad_inputs_and_unanswerable_tasks() {
    let out = troupe(&["run", "examples/counter.troupe"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("input `limit`: missing"),
        "{}",
        stderr(&out)
    );
    let out = troupe(&["run", "examples/counter.troupe", "-i", "limit=ten"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("expected an integer"),
        "{}",
        stderr(&out)
    );
    let out = troupe(&["run", "examples/local_approval.troupe", "-i", "request=x"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no implementation for the extern action(s) record_decision"),
        "{}",
        stderr(&out)
    );
    let out = troupe(&[
        "run",
        "examples/local_approval.troupe",
        "-i",
        "request=x",
        "--mock-externs",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("lifeline Approver, action `approve`"),
        "{}",
        stderr(&out)
    );
    let out = troupe(&[
        "run",
        "crates/troupe-check/tests/corpus/err/e0301_bound_on_one_branch.troupe",
        "-i",
        "x=1",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("nothing was run"));
}

#[test]
fn local_approval_waits_for_an_answer_from_another_process() {
    let dir = std::env::temp_dir().join(format!("troupe-cli-approval-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("t.db");
    let db = db.to_str().unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args([
            "run",
            "examples/local_approval.troupe",
            "-i",
            "request=a new laptop",
            "--store",
            db,
            "--json",
            "--mock-externs",
        ])
        .current_dir(workspace())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the task to appear in the store.
    let mut task = None;
    for _ in 0..100 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let out = troupe(&["tasks", "--store", db, "--json"]);
        if out.status.success() {
            let tasks: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            if let Some(t) = tasks.as_array().and_then(|a| a.first()) {
                task = Some(t["id"].as_str().unwrap().to_owned());
                assert_eq!(t["kind"], "confirm");
                assert!(t["prompt"].as_str().unwrap().contains("a new laptop"));
                break;
            }
        }
    }
    let task = task.expect("the task never appeared");
    let runs: serde_json::Value =
        serde_json::from_slice(&troupe(&["runs", "--store", db, "--json"]).stdout).unwrap();
    assert_eq!(runs[0]["status"], "waiting");
    let out = troupe(&["answer", &task, "--yes", "--store", db]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = run.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["results"]["approved"], true);
    assert_eq!(doc["verified"], true);
    // A second answer loses; a restart finds nothing to do and asks nothing.
    assert_eq!(
        troupe(&["answer", &task, "--no", "--store", db])
            .status
            .code(),
        Some(1)
    );
    let again = troupe(&["resume", "run-1", "--store", db]);
    assert!(
        stderr(&again).contains("done already"),
        "{}",
        stderr(&again)
    );
    let tasks: serde_json::Value =
        serde_json::from_slice(&troupe(&["tasks", "--all", "--store", db, "--json"]).stdout)
            .unwrap();
    assert_eq!(tasks.as_array().unwrap().len(), 1);
    let verify = troupe(&["verify", "run-1", "--store", db]);
    assert!(
        stdout(&verify).contains("complete run"),
        "{}",
        stdout(&verify)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn store_commands_refuse_foreign_files_and_unknown_ids() {
    let dir = std::env::temp_dir().join(format!("troupe-cli-foreign-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let junk = dir.join("junk.db");
    std::fs::write(
        &junk,
        b"this is not a database at all, just some bytes that are long enough",
    )
    .unwrap();
    let out = troupe(&["runs", "--store", junk.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("damaged") || stderr(&out).contains("not a troupe store"),
        "{}",
        stderr(&out)
    );
    let db = dir.join("t.db");
    let out = troupe(&[
        "run",
        "examples/counter.troupe",
        "-i",
        "limit=3",
        "--store",
        db.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = troupe(&["status", "run-99", "--store", db.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no run `run-99`"), "{}", stderr(&out));
    let out = troupe(&["answer", "task-5", "--yes", "--store", db.to_str().unwrap()]);
    assert!(
        stderr(&out).contains("no task `task-5`"),
        "{}",
        stderr(&out)
    );
    let meta = std::fs::metadata(&db).unwrap();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn project_shows_local_programs_and_bystanders_get_no_control() {
    let out = troupe(&[
        "project",
        "examples/reviewed_execution.troupe",
        "--lifeline",
        "Executor",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("recv (plan) <- Planner"), "{text}");
    // The Executor takes no part in the review `if`: no control message.
    assert!(!text.contains('κ'), "{text}");
    let json: serde_json::Value =
        serde_json::from_slice(&troupe(&["project", "examples/counter.troupe", "--json"]).stdout)
            .unwrap();
    assert_eq!(json["lifelines"].as_array().unwrap().len(), 2);
    assert_eq!(
        troupe(&["project", "examples/counter.troupe", "--lifeline", "Nobody"])
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn msc_draws_workflows_and_recorded_runs() {
    let svg = stdout(&troupe(&["msc", "examples/consensus.troupe"]));
    assert!(
        svg.starts_with("<svg") || svg.starts_with("<?xml"),
        "{}",
        &svg[..svg.len().min(80)]
    );
    assert!(svg.contains("Alice") && svg.contains("Bob"));
    let mermaid = stdout(&troupe(&[
        "msc",
        "examples/consensus.troupe",
        "--format",
        "mermaid",
        "--show-control",
    ]));
    assert!(mermaid.starts_with("sequenceDiagram"));
    assert!(
        mermaid.contains("loop ") && mermaid.contains("--)"),
        "{mermaid}"
    );
    let dir = std::env::temp_dir().join(format!("troupe-cli-msc-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("t.db");
    let db = db.to_str().unwrap();
    assert!(
        troupe(&[
            "run",
            "examples/counter.troupe",
            "-i",
            "limit=2",
            "--store",
            db
        ])
        .status
        .success()
    );
    let run_chart = stdout(&troupe(&[
        "msc", "run-1", "--store", db, "--format", "mermaid",
    ]));
    assert!(
        run_chart.contains("Ping") && run_chart.contains("->>"),
        "{run_chart}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn contract_verification_refuses_a_booking_without_confirmation() {
    let dir = std::env::temp_dir().join(format!("troupe-cli-contracts-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        workspace().join("examples/train_booking.contracts.json"),
        dir.join("train_booking.contracts.json"),
    )
    .unwrap();
    let example =
        std::fs::read_to_string(workspace().join("examples/train_booking.troupe")).unwrap();
    assert!(example.contains("if confirmed @ Agent {"));
    let unconfirmed = example.replace("if confirmed @ Agent {", "if true @ Agent {");
    let file = dir.join("unconfirmed.troupe");
    std::fs::write(&file, unconfirmed).unwrap();
    let out = troupe(&["check", "--json", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let codes: Vec<&str> = doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap())
        .collect();
    assert!(codes.contains(&"E0601"), "{codes:?}");
    let out = troupe(&[
        "run",
        file.to_str().unwrap(),
        "-i",
        "user_id=u1",
        "-i",
        "origin=Paris",
        "-i",
        "destination=Lyon",
        "-i",
        "date=2026-12-24",
        "-i",
        "class=economy",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("breaks the contracts"),
        "{}",
        stderr(&out)
    );
    // The example itself passes the verification (no error).
    let out = troupe(&["check", "examples/train_booking.troupe"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_changed_workflow_is_not_resumed_but_an_unchanged_one_is() {
    let dir = std::env::temp_dir().join(format!("troupe-cli-resume-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("approval.troupe");
    let original =
        std::fs::read_to_string(workspace().join("examples/local_approval.troupe")).unwrap();
    std::fs::write(&file, &original).unwrap();
    let db = dir.join("t.db");
    let (file_s, db_s) = (file.to_str().unwrap(), db.to_str().unwrap());
    // Start a run in the background; it waits on its task. Then kill it.
    let out = troupe(&[
        "run",
        file_s,
        "-i",
        "request=boat",
        "--store",
        db_s,
        "--detach",
        "--mock-externs",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let pid: u32 = stderr(&out)
        .split("(pid ")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .and_then(|s| s.parse().ok())
        .expect("a pid");
    for _ in 0..100 {
        let tasks: serde_json::Value =
            serde_json::from_slice(&troupe(&["tasks", "--store", db_s, "--json"]).stdout)
                .unwrap_or_default();
        if tasks.as_array().is_some_and(|t| !t.is_empty()) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    // The dead owner's lease (1 s here) expires; then the run is stalled.
    let mut stalled = false;
    for _ in 0..100 {
        let runs: serde_json::Value =
            serde_json::from_slice(&troupe(&["runs", "--store", db_s, "--json"]).stdout).unwrap();
        if runs[0]["status"] == "stalled" {
            stalled = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(stalled, "the run never became stalled");
    // Another version of the file: a new run is started, and said so; the
    // unfinished one is left as it is.
    std::fs::write(
        &file,
        original.replace(
            "return approved @ Requester",
            "act Requester: again = approved\n  return again @ Requester",
        ),
    )
    .unwrap();
    let answers = dir.join("answers.json");
    std::fs::write(&answers, r#"{"approve": true}"#).unwrap();
    let out = troupe(&[
        "run",
        file_s,
        "-i",
        "request=boat",
        "--store",
        db_s,
        "--mock-externs",
        "--answers",
        answers.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("started run-2")
            && stderr(&out).contains("run-1 (stalled, another version of the workflow)"),
        "{}",
        stderr(&out)
    );
    // Other inputs: another new run.
    std::fs::write(&file, &original).unwrap();
    let out = troupe(&[
        "run",
        file_s,
        "-i",
        "request=kayak",
        "--store",
        db_s,
        "--mock-externs",
        "--answers",
        answers.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("run-1 (stalled, other inputs)"),
        "{}",
        stderr(&out)
    );
    // The same version and inputs: run-1 is continued, and its pending task
    // is answered once.
    let out = troupe(&[
        "run",
        file_s,
        "-i",
        "request=boat",
        "--store",
        db_s,
        "--answers",
        answers.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("continuing run-1"),
        "{}",
        stderr(&out)
    );
    assert_eq!(stdout(&out), "approved = true\n");
    let tasks: serde_json::Value =
        serde_json::from_slice(&troupe(&["tasks", "--all", "--store", db_s, "--json"]).stdout)
            .unwrap();
    let of_run_1 = tasks
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["run"] == "run-1")
        .count();
    assert_eq!(of_run_1, 1);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The agentic example with its scripted conversation: the model looks up,
/// quotes, checks and books through the booking server, the booking is
/// confirmed by the answers file, and the run verifies.
#[test]
fn the_agent_example_books_through_its_scripted_conversation() {
    let out = troupe(&[
        "run",
        "examples/agent_booking.troupe",
        "-i",
        "request=Book u1 from Paris to Lyon on 2026-12-24",
        "--llm",
        "scripted:examples/scripts/agent_booking.json",
        "--answers",
        "examples/scripts/agent_booking.answers.json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "reply = Booked: Paris to Lyon on 2026-12-24, economy, 47 EUR.\n"
    );
    assert!(
        stderr(&out).contains("verified: the run"),
        "{}",
        stderr(&out)
    );
}
