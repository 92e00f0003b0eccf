//! Ownership of durable runs, tested on the binary as users run it.
//!
//! A run is started, killed with SIGKILL while it waits on a person, the
//! task is answered, and after the dead owner's lease expired two to four
//! processes try to continue it at the same moment (`troupe resume`, `troupe
//! run FILE --store`, `troupe run … --detach`). The effect is a command that
//! appends to a ledger file and is not idempotent. Exactly one process runs
//! the rest; the others say who owns it; every effect is applied exactly
//! once (counted in the ledger, which deduplicates nothing); the run
//! verifies.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

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

fn in_dir(dir: &Path, args: &[&str]) -> Command {
    let mut c = troupe();
    c.current_dir(dir).args(args);
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

fn kill_group(c: &mut Child) {
    let ok = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", c.id())])
        .status()
        .unwrap()
        .success();
    assert!(ok);
    c.wait().unwrap();
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
        dir.join("db").exists()
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

fn trial(root: &Path, trial: usize) {
    let dir = root.join(format!("trial{trial}"));
    std::fs::create_dir_all(&dir).unwrap();
    stalled_run(&dir);
    std::thread::sleep(Duration::from_millis(1300));
    let all = [Starter::Resume, Starter::Run, Starter::Detach];
    let n = 2 + trial % 3;
    let starters: Vec<Starter> = (0..n).map(|i| all[(trial + i) % 3]).collect();
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
                    trial(root.path(), t);
                }
            });
        }
    });
}

#[test]
fn a_dead_owners_run_is_taken_over_after_its_lease_expires() {
    let root = tempfile::tempdir().unwrap();
    let dir: PathBuf = root.path().to_owned();
    // A lease long enough that the resume below comes before it expires.
    std::fs::write(dir.join("lease"), "4s").unwrap();
    stalled_run(&dir);
    // The killed owner's lease is still live: the run is refused.
    let early = output(in_dir(&dir, &["resume", "run-1", "--store", "db"]));
    let stderr = String::from_utf8_lossy(&early.stderr);
    assert_eq!(early.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("is being run by"), "{stderr}");
    assert!(ledger(&dir).len() == 1, "nothing ran: {:?}", ledger(&dir));
    wait_for("the lease to expire", || {
        json(&dir, &["status", "run-1", "--store", "db", "--json"])["status"] == "stalled"
    });
    let late = output(in_dir(&dir, &["resume", "run-1", "--store", "db"]));
    assert!(
        late.status.success(),
        "{}",
        String::from_utf8_lossy(&late.stderr)
    );
    check_end(&dir, 0);
}
