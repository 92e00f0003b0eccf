//! Ownership of durable runs, tested on the binary as users run it.
//!
//! A run is started, killed with SIGKILL while it waits on a person, the
//! task is answered, and after the dead owner's lease expired two to four
//! processes try to continue it at the same moment (`troupe resume`, `troupe
//! run FILE --store`, `troupe run … --detach`). Exactly one process runs the
//! rest; the others say who owns it; every effect is applied exactly once;
//! the run verifies. Two kinds of effect, neither idempotent: a command
//! that appends to a ledger file (50 trials, 13 effects each), and the train
//! booking's MCP tool `book_ticket`, counted in the server's own call log
//! (12 trials). Neither record deduplicates anything.

use crate::kills_support as support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
use support::kill_group;

const LEASE: &str = "1s";
const ROUNDS: usize = 12;

const WORKFLOW: &str = r#"
effect append(n: Int) -> Int extern
human go(n: Int) -> Bool { ask: "Go on with {n} rounds?" }

workflow race(limit: Int @ A) {
  lifelines A, B
  act A: k = 0
  act A: first = append(k)
  act A: ok = go(limit)
  while k < limit @ A {
    act A: k = k + 1
    act A: r = append(k)
    msg A(r) -> B(r)
  }
  return k @ A
}
"#;

fn troupe() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_troupe"));
    c.env("TROUPE_LEASE", LEASE).env("NO_COLOR", "1");
    c
}

/// A trial's directory: the workflow, `troupe.toml` with the effect as a
/// command that appends its idempotency key to `ledger`, and the store.
fn setup(dir: &Path) {
    std::fs::write(dir.join("race.troupe"), WORKFLOW).unwrap();
    let ledger = dir.join("ledger");
    let script = format!(
        "read -r j; sleep 0.02; echo \"$TROUPE_IDEMPOTENCY_KEY\" >> '{}'; printf '%s' \"$j\" | sed -E 's/.*\"n\":(-?[0-9]+).*/\\1/'",
        ledger.display()
    );
    std::fs::write(
        dir.join("troupe.toml"),
        format!(
            "[externs.append]\ncommand = [\"sh\", \"-c\", {}]\n",
            serde_json::Value::String(script)
        ),
    )
    .unwrap();
}

/// The trial's store: the file `db`, or the PostgreSQL database its
/// `store_url` file names (the argument `db` stands for it).
fn store_of(dir: &Path) -> Option<String> {
    std::fs::read_to_string(dir.join("store_url"))
        .ok()
        .map(|u| u.trim().to_owned())
}

fn in_dir(dir: &Path, args: &[&str]) -> Command {
    let mut c = troupe();
    let url = store_of(dir);
    c.current_dir(dir)
        .args(args.iter().map(|a| match (&url, *a) {
            (Some(url), "db") => url.as_str(),
            _ => a,
        }));
    // A test may use its own lease.
    if let Some(lease) = dir
        .join("lease")
        .to_str()
        .and_then(|p| std::fs::read_to_string(p).ok())
    {
        c.env("TROUPE_LEASE", lease.trim());
    }
    c
}

fn output(mut c: Command) -> Output {
    c.stdin(Stdio::null()).output().unwrap()
}

fn json(dir: &Path, args: &[&str]) -> serde_json::Value {
    let out = output(in_dir(dir, args));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?}: {e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "timed out: {what}"
        );
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Starts the run and kills its owner while it waits on the person; the
/// task is then answered. Returns once the dead owner's lease may still be
/// live (the caller decides how long to wait).
fn stalled_run(dir: &Path) {
    use std::os::unix::process::CommandExt;
    setup(dir);
    let mut first = in_dir(
        dir,
        &[
            "run",
            "race.troupe",
            "--store",
            "db",
            "-i",
            &format!("limit={ROUNDS}"),
        ],
    );
    let mut first = first
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    wait_for("the task", || {
        (store_of(dir).is_some() || dir.join("db").exists())
            && json(dir, &["tasks", "--store", "db", "--json"])
                .as_array()
                .is_some_and(|t| !t.is_empty())
    });
    kill_group(&mut first);
    let out = output(in_dir(dir, &["answer", "task-1", "--yes", "--store", "db"]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn ledger(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("ledger"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Checks the trial's end: one run, done, verified, each effect once.
fn check_end(dir: &Path, trial: usize) {
    wait_for("the run to end", || {
        json(dir, &["status", "run-1", "--store", "db", "--json"])["status"] == "done"
    });
    let runs = json(dir, &["runs", "--store", "db", "--json"]);
    assert_eq!(runs.as_array().unwrap().len(), 1, "trial {trial}: {runs}");
    let mut keys = ledger(dir);
    let n = keys.len();
    keys.sort();
    keys.dedup();
    assert_eq!(
        n,
        keys.len(),
        "trial {trial}: an effect ran twice: {:?}",
        ledger(dir)
    );
    assert_eq!(n, ROUNDS + 1, "trial {trial}: effects lost: {keys:?}");
    let out = output(in_dir(dir, &["verify", "run-1", "--store", "db"]));
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("a complete run"),
        "trial {trial}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[derive(Debug, Clone, Copy)]
enum Starter {
    Resume,
    Run,
    Detach,
}

impl Starter {
    fn command(self, dir: &Path) -> Command {
        let limit = format!("limit={ROUNDS}");
        let args: Vec<&str> = match self {
            Starter::Resume => vec!["resume", "run-1", "--store", "db"],
            Starter::Run => vec!["run", "race.troupe", "--store", "db", "-i", &limit],
            Starter::Detach => vec![
                "run",
                "race.troupe",
                "--store",
                "db",
                "-i",
                &limit,
                "--detach",
            ],
        };
        let mut c = in_dir(dir, &args);
        c.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }
}

fn trial(root: &Path, trial: usize, postgres: Option<&str>) {
    let dir = root.join(format!("trial{trial}"));
    std::fs::create_dir_all(&dir).unwrap();
    if let Some(url) = postgres {
        std::fs::write(dir.join("store_url"), url).unwrap();
    }
    stalled_run(&dir);
    std::thread::sleep(Duration::from_millis(1300));
    // On a shared store `--detach` only queues (for `troupe worker`).
    let all: &[Starter] = if postgres.is_some() {
        &[Starter::Resume, Starter::Run]
    } else {
        &[Starter::Resume, Starter::Run, Starter::Detach]
    };
    let n = 2 + trial % 3;
    let starters: Vec<Starter> = (0..n).map(|i| all[(trial + i) % all.len()]).collect();
    let children: Vec<(Starter, Child)> = starters
        .iter()
        .map(|s| (*s, s.command(&dir).spawn().unwrap()))
        .collect();
    let mut owners = 0;
    let mut report = String::new();
    for (s, c) in children {
        let out = c.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        report += &format!("{s:?}: {}\n{stdout}{stderr}\n", out.status);
        let owned_elsewhere = stderr.contains("is being run by");
        let ran = match s {
            Starter::Detach => out.status.success() && stdout.trim() == "run-1",
            _ => stderr.contains("done; verified"),
        };
        assert!(
            ran != owned_elsewhere,
            "trial {trial}: {s:?} neither ran the run nor saw its owner:\n{report}"
        );
        owners += usize::from(ran);
    }
    assert_eq!(owners, 1, "trial {trial}: {owners} owners:\n{report}");
    check_end(&dir, trial);
}

#[test]
fn concurrent_starters_run_a_stalled_run_exactly_once() {
    let root = tempfile::tempdir().unwrap();
    let trials: usize = 50;
    // Five trials at a time, each in its own directory and store.
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..5 {
            s.spawn(|| {
                loop {
                    let t = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if t >= trials {
                        break;
                    }
                    trial(root.path(), t, None);
                }
            });
        }
    });
}

/// The same on a PostgreSQL store, each trial with a database of its own.
#[test]
fn concurrent_starters_run_a_stalled_run_exactly_once_on_postgres() {
    let root = tempfile::tempdir().unwrap();
    let trials: usize = 15;
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..5 {
            s.spawn(|| {
                loop {
                    let t = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if t >= trials {
                        break;
                    }
                    let db = troupe_store::testing::TestDatabase::new();
                    trial(root.path(), t, Some(&db.url));
                }
            });
        }
    });
}

/// A killed owner's lease is not waited out on its own machine: its
/// process is gone, which the next claimant sees, so the run is taken at
/// once however long the lease would run.
#[test]
fn a_dead_owners_run_is_taken_over_at_once_on_its_machine() {
    let root = tempfile::tempdir().unwrap();
    let dir: PathBuf = root.path().to_owned();
    // A lease far longer than the test: only the dead process frees it.
    std::fs::write(dir.join("lease"), "10m").unwrap();
    stalled_run(&dir);
    assert_eq!(
        json(&dir, &["status", "run-1", "--store", "db", "--json"])["status"],
        "stalled",
        "a dead owner holds nothing"
    );
    let late = output(in_dir(&dir, &["resume", "run-1", "--store", "db"]));
    assert!(
        late.status.success(),
        "{}",
        String::from_utf8_lossy(&late.stderr)
    );
    check_end(&dir, 0);
}

/// The train booking example against its MCP server, whose `book_ticket`
/// is not idempotent; the server appends every `tools/call` it receives to
/// a call log, which deduplicates nothing (its ledger would: it books once
/// per idempotency key).
fn booking_dir(root: &Path, trial: usize) -> PathBuf {
    let dir = root.join(format!("booking{trial}"));
    std::fs::create_dir_all(&dir).unwrap();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let server = Path::new(env!("CARGO_BIN_EXE_troupe"))
        .parent()
        .unwrap()
        .join("train-booking-server");
    assert!(
        server.exists(),
        "{} is missing: `cargo build -p train-booking-server` (cargo test --workspace builds it)",
        server.display()
    );
    let source = std::fs::read_to_string(examples.join("train_booking.troupe")).unwrap();
    let sidecar = examples
        .join("train_booking.contracts.json")
        .canonicalize()
        .unwrap();
    let source: String = source
        .lines()
        .map(|l| {
            let t = l.trim_start();
            if t.starts_with("command:") {
                format!(
                    "  command: \"{}\"\n  args: [\"--ledger\", \"{}\", \"--call-log\", \"{}\"]",
                    server.display(),
                    dir.join("ledger.json").display(),
                    dir.join("calls.log").display()
                )
            } else if t.starts_with("contracts:") {
                format!("  contracts: \"{}\"", sidecar.display())
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(dir.join("booking.troupe"), source).unwrap();
    std::fs::write(dir.join("answers.json"), r#"{"choose_delivery": "email"}"#).unwrap();
    dir
}

const BOOKING_INPUTS: [&str; 10] = [
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
];

fn calls(dir: &Path, tool: &str) -> usize {
    std::fs::read_to_string(dir.join("calls.log"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(&format!("\"{tool}\"")))
        .count()
}

fn booking_trial(root: &Path, trial: usize) {
    use std::os::unix::process::CommandExt;
    let dir = booking_dir(root, trial);
    let mut run: Vec<&str> = vec!["run", "booking.troupe", "--store", "db"];
    run.extend(BOOKING_INPUTS);
    // The first owner waits on the person's confirmation; it is killed there
    // (with its server), and the confirmation is given.
    let mut first = in_dir(&dir, &run)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    wait_for("the confirmation task", || {
        dir.join("db").exists()
            && json(&dir, &["tasks", "--store", "db", "--json"])
                .as_array()
                .is_some_and(|t| t.iter().any(|t| t["action"] == "confirm_booking"))
    });
    kill_group(&mut first);
    assert_eq!(
        calls(&dir, "book_ticket"),
        0,
        "nothing booked before the yes"
    );
    let out = output(in_dir(
        &dir,
        &["answer", "task-1", "--yes", "--store", "db"],
    ));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::thread::sleep(Duration::from_millis(1300));
    // Two or three starters at once, all with the delivery answer.
    let with_answers = |mut args: Vec<&str>| {
        args.extend(["--answers", "answers.json"]);
        let mut c = in_dir(&dir, &args);
        c.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c.spawn().unwrap()
    };
    let mut detach = run.clone();
    detach.push("--detach");
    let mut starters = vec![
        with_answers(vec!["resume", "run-1", "--store", "db"]),
        with_answers(run.clone()),
    ];
    if trial % 2 == 1 {
        starters.push(with_answers(detach));
    }
    // A `run` starter that comes after another finished run-1 starts a
    // new run of the file (run-1 is done): it waits for a confirmation
    // nobody gives, so it is cancelled, as a person would.
    let started = Instant::now();
    while starters.iter_mut().any(|c| c.try_wait().unwrap().is_none()) {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "booking {trial}: the starters hang"
        );
        let runs = json(&dir, &["runs", "--store", "db", "--json"]);
        for r in runs.as_array().into_iter().flatten() {
            if r["name"] != "run-1" && r["status"] == "waiting" {
                let name = r["name"].as_str().unwrap();
                let _ = output(in_dir(&dir, &["cancel", name, "--store", "db"]));
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut report = String::new();
    let mut owners = 0;
    for c in starters {
        let out = c.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        report += &format!("{}\n{stdout}{stderr}\n", out.status);
        if stderr.contains("run-1 done; verified") || stdout.trim() == "run-1" {
            owners += 1;
        } else {
            // A starter that came after the owner finished ran nothing
            // either: it says so (a `resume` of the done run: "run-1 is
            // done; nothing to resume"), or (a `run`) started a run of its
            // own.
            assert!(
                stderr.contains("is being run by")
                    || stderr.contains("run-1 is done; nothing to resume")
                    || stderr.contains("run-1 is done already")
                    || stderr.contains("run-1 ran to its end already")
                    || stderr.contains("run-2")
                    || stdout.trim() == "run-2",
                "booking {trial}:\n{report}"
            );
        }
    }
    assert_eq!(owners, 1, "booking {trial}:\n{report}");
    wait_for("the booking to end", || {
        json(&dir, &["status", "run-1", "--store", "db", "--json"])["status"] == "done"
    });
    // A late detached starter's new run, too, is cancelled and ends.
    wait_for("late runs to end", || {
        let runs = json(&dir, &["runs", "--store", "db", "--json"]);
        let open: Vec<String> = runs
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| r["name"] != "run-1")
            .filter(|r| !matches!(r["status"].as_str(), Some("done" | "failed" | "cancelled")))
            .filter_map(|r| r["name"].as_str().map(str::to_owned))
            .collect();
        for name in &open {
            let _ = output(in_dir(&dir, &["cancel", name, "--store", "db"]));
        }
        open.is_empty()
    });
    assert_eq!(
        calls(&dir, "book_ticket"),
        1,
        "booking {trial}: book_ticket reached the server more than once:\n{report}"
    );
    assert_eq!(calls(&dir, "email_ticket"), 1, "booking {trial}");
    let out = output(in_dir(&dir, &["verify", "run-1", "--store", "db"]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn concurrent_starters_call_a_non_idempotent_mcp_tool_once() {
    let root = tempfile::tempdir().unwrap();
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| {
                loop {
                    let t = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if t >= 12 {
                        break;
                    }
                    booking_trial(root.path(), t);
                }
            });
        }
    });
}
