//! The PostgreSQL store through the binary, as users run it: errors that
//! name the store without its password, a database of another program
//! refused, a run queued with `--detach`, driven by a worker, waiting on a
//! person who answers from another process (the worker is woken by the
//! store's notification), and `troupe workers`.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use troupe_store::testing::TestDatabase;

const WORKFLOW: &str = r#"
human approve(request: Text) -> Bool { ask: "Approve {request}?" }

workflow ask(request: Text @ A) {
  lifelines A, B
  msg A(request) -> B(request)
  act B: ok = approve(request)
  msg B(ok) -> A(ok)
  return ok @ A
}
"#;

fn troupe(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_troupe"));
    c.current_dir(dir)
        .args(args)
        .env("NO_COLOR", "1")
        .env("TROUPE_LEASE", "2s")
        .stdin(Stdio::null());
    c
}

fn output(dir: &Path, args: &[&str]) -> Output {
    troupe(dir, args).output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn json(dir: &Path, args: &[&str]) -> serde_json::Value {
    let o = output(dir, args);
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {}", text(&o)))
}

/// Queues a run of `ask.troupe` with `request` on the store at `url`;
/// returns its name.
fn queue(dir: &Path, url: &str, request: &str) -> String {
    let request = format!("request={request}");
    let queued = output(
        dir,
        &[
            "run",
            "ask.troupe",
            "--store",
            url,
            "-i",
            &request,
            "--detach",
        ],
    );
    assert!(queued.status.success(), "{}", text(&queued));
    String::from_utf8_lossy(&queued.stdout).trim().to_owned()
}

/// Asks `f` every 50 ms until it answers, for at most until `deadline`;
/// `f`'s last word is `Err(what it saw)`.
fn poll<T>(deadline: Instant, mut f: impl FnMut() -> Result<T, String>) -> T {
    loop {
        match f() {
            Ok(t) => return t,
            Err(seen) => assert!(Instant::now() < deadline, "timed out: {seen}"),
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn an_unreachable_store_is_named_without_its_password() {
    let dir = tempfile::tempdir().unwrap();
    // Port 1 on loopback: nothing listens there.
    let o = output(
        dir.path(),
        &[
            "runs",
            "--store",
            "postgres://troupe:s3cret-pw@127.0.0.1:1/troupe",
        ],
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(!t.contains("s3cret-pw"), "the password was printed: {t}");
    assert!(
        t.contains("cannot reach the store postgres://troupe:***@127.0.0.1:1/troupe"),
        "{t}"
    );
    assert!(t.contains("is the database server running"), "{t}");
    assert!(t.contains("refused"), "the cause is named: {t}");
}

#[test]
fn a_database_of_another_program_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = TestDatabase::new();
    let psql = Command::new("psql")
        .args([&db.url, "-qc", "CREATE TABLE runs(id int)"])
        .output()
        .unwrap();
    assert!(
        psql.status.success(),
        "{}",
        String::from_utf8_lossy(&psql.stderr)
    );
    let o = output(dir.path(), &["runs", "--store", &db.url]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("is not a troupe store"), "{t}");
    // Nothing was created beside the foreign table.
    let tables = Command::new("psql")
        .args([
            &db.url,
            "-Atc",
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'",
        ])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&tables.stdout).trim(),
        "2",
        "runs and troupe_meta only"
    );
}

#[test]
fn a_queued_run_waits_on_a_person_answered_from_another_process() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    std::fs::write(dir.join("ask.troupe"), WORKFLOW).unwrap();
    let db = TestDatabase::new();
    assert_eq!(queue(dir, &db.url, "laptop"), "run-1");
    // Queued: no process runs it yet; it waits for a worker (not stalled).
    let status = json(dir, &["status", "run-1", "--store", &db.url, "--json"]);
    assert_eq!(status["status"], "queued", "{status}");
    let workers = json(dir, &["workers", "--store", &db.url, "--json"]);
    assert_eq!(workers["runnable"], 1, "{workers}");

    use std::os::unix::process::CommandExt;
    let worker = troupe(
        dir,
        &[
            "worker", "--store", &db.url, "--labels", "eu,gpu", "--sweep", "30s",
        ],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .process_group(0)
    .spawn()
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let task = poll(deadline, || {
        let tasks = json(dir, &["tasks", "--store", &db.url, "--json"]);
        match tasks.as_array().and_then(|t| t.first()) {
            Some(t) => Ok(t["id"].as_str().unwrap().to_owned()),
            None => Err(format!("no task: {tasks}")),
        }
    });
    let workers = json(dir, &["workers", "--store", &db.url, "--json"]);
    let w = &workers["workers"][0];
    assert_eq!(w["labels"], serde_json::json!(["eu", "gpu"]), "{workers}");
    assert_eq!(w["leases"], 1, "{workers}");
    // Two people answer at once: the first answer wins.
    let a = troupe(dir, &["answer", &task, "--yes", "--store", &db.url])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let b = troupe(dir, &["answer", &task, "--no", "--store", &db.url])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert_eq!(
        u8::from(a.status.success()) + u8::from(b.status.success()),
        1,
        "{}\n{}",
        text(&a),
        text(&b)
    );
    let won = a.status.success();
    // The worker holds the waiting run; its inbox sees the answer.
    let status = poll(deadline, || {
        let status = json(dir, &["status", "run-1", "--store", &db.url, "--json"]);
        match status["status"] == "done" {
            true => Ok(status),
            false => Err(format!("the run did not end: {status}")),
        }
    });
    assert_eq!(
        status["result"],
        serde_json::json!({ "ok": won }),
        "{status}"
    );
    let verified = output(dir, &["verify", "run-1", "--store", &db.url]);
    assert!(verified.status.success(), "{}", text(&verified));
    // SIGTERM: the worker drains (nothing in flight) and leaves the list.
    assert!(
        Command::new("kill")
            .args(["-TERM", &worker.id().to_string()])
            .status()
            .unwrap()
            .success()
    );
    let out = worker.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let workers = json(dir, &["workers", "--store", &db.url, "--json"]);
    assert_eq!(workers["workers"], serde_json::json!([]), "{workers}");
}

/// Runs waiting on people hold no worker: a worker that drives one run at
/// a time parks each run whose lifelines all wait on a person, so every
/// run's task appears (without parking only the first would), and each
/// answer wakes its run, which the worker takes up again and finishes.
#[test]
fn runs_waiting_on_people_are_parked_and_taken_up_when_answered() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    std::fs::write(dir.join("ask.troupe"), WORKFLOW).unwrap();
    let db = TestDatabase::new();
    const RUNS: usize = 3;
    for n in 0..RUNS {
        queue(dir, &db.url, &format!("laptop-{n}"));
    }
    use std::os::unix::process::CommandExt;
    let log = dir.join("worker.log");
    let mut worker = troupe(
        dir,
        &[
            "worker",
            "--store",
            &db.url,
            "--concurrency",
            "1",
            "--park-after",
            "300ms",
        ],
    )
    .stdout(Stdio::null())
    .stderr(std::fs::File::create(&log).unwrap())
    .process_group(0)
    .spawn()
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let said = || std::fs::read_to_string(&log).unwrap_or_default();
    let tasks = poll(deadline, || {
        let tasks = json(dir, &["tasks", "--store", &db.url, "--json"]);
        match tasks.as_array() {
            Some(t) if t.len() == RUNS => Ok(t.clone()),
            _ => Err(format!(
                "not every run's task appeared: {tasks}\n{}",
                said()
            )),
        }
    });
    // Parked, they hold no lease and count as nothing to run.
    poll(deadline, || {
        let runs = json(dir, &["runs", "--store", &db.url, "--json"]);
        let parked = runs
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["status"] == "parked");
        match parked.count() {
            RUNS => Ok(()),
            _ => Err(format!("not all parked: {runs}\n{}", said())),
        }
    });
    let workers = json(dir, &["workers", "--store", &db.url, "--json"]);
    assert_eq!(workers["runnable"], 0, "{workers}");
    for t in &tasks {
        let id = t["id"].as_str().unwrap();
        let answered = output(dir, &["answer", id, "--yes", "--store", &db.url]);
        assert!(answered.status.success(), "{}", text(&answered));
    }
    for n in 1..=RUNS {
        let name = format!("run-{n}");
        let status = poll(deadline, || {
            let status = json(dir, &["status", &name, "--store", &db.url, "--json"]);
            match status["status"] == "done" {
                true => Ok(status),
                false => Err(format!("{name} did not end: {status}\n{}", said())),
            }
        });
        assert_eq!(
            status["result"],
            serde_json::json!({ "ok": true }),
            "{status}"
        );
        let verified = output(dir, &["verify", &name, "--store", &db.url]);
        assert!(verified.status.success(), "{}", text(&verified));
    }
    assert!(said().contains("parked"), "{}", said());
    let _ = Command::new("kill")
        .args(["-TERM", &worker.id().to_string()])
        .status();
    assert!(worker.wait().unwrap().success(), "{}", said());
}

#[test]
fn the_shared_store_is_named_once_in_the_environment_or_troupe_toml() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    std::fs::write(dir.join("ask.troupe"), WORKFLOW).unwrap();
    let db = TestDatabase::new();
    let queued = troupe(
        dir,
        &[
            "run",
            "ask.troupe",
            "--store",
            "-i",
            "request=a",
            "--detach",
        ],
    )
    .env("TROUPE_STORE", &db.url)
    .output()
    .unwrap();
    assert!(queued.status.success(), "{}", text(&queued));
    assert!(!dir.join(".troupe").exists(), "the default file was used");
    std::fs::write(
        dir.join("troupe.toml"),
        format!(
            "[store]\npath = {}\n",
            serde_json::Value::String(db.url.clone())
        ),
    )
    .unwrap();
    let runs = json(dir, &["runs", "--json"]);
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "{runs}");
    // The flag wins over both.
    let other = output(dir, &["runs", "--store", "elsewhere.db"]);
    assert!(
        text(&other).contains("no store at elsewhere.db"),
        "{}",
        text(&other)
    );
}
