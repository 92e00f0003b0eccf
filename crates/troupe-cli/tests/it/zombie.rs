//! A worker paused past its lease (SIGSTOP: a frozen VM, a long GC pause,
//! a laptop lid) wakes as a *zombie*: it still thinks it owns a run that
//! another worker has claimed and is running. As users run it, on a real
//! PostgreSQL store: worker A runs a loop of deposits (a non-idempotent
//! effect, appended to an external ledger that deduplicates nothing) and
//! slow idempotent "think" steps; it is stopped inside a think step,
//! worker B claims the run once A's lease expires and finishes it, then A
//! is continued. A must stop without applying a deposit again and without
//! writing over B's records: every deposit is in the ledger exactly once,
//! the run's result is right, and its recorded execution verifies.
//!
//! Two defences stand between a zombie and a repeated effect: the store
//! refuses every write not made under the lease it holds (the fence;
//! `troupe-store`'s `a_journal_whose_lease_was_taken_over_writes_nothing_more`
//! checks it without the second), and the owner renews at its first tick
//! awake, so it learns at once that it lost the lease. This test checks
//! what users get from both.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use troupe_store::testing::TestDatabase;
use troupe_store::{Durability, RunStatus, Store};

const WORKFLOW: &str = r#"
effect deposit(account: Text, amount: Int) -> Int extern
effect think(round: Int) -> Int extern idempotent

workflow zombie(n: Int @ Bank) {
  lifelines Bank, Clerk
  act Bank: k = 0
  while k < n @ Bank {
    act Bank: d = deposit("acct", k)
    msg Bank(k) -> Clerk(r)
    act Clerk: t = think(r)
    msg Clerk(t) -> Bank(k)
  }
  return k @ Bank
}
"#;

const ROUNDS: i64 = 8;
/// The round whose think step the first worker is stopped in.
const STOPPED_IN: i64 = 3;
const LEASE: &str = "1s";

fn setup(dir: &Path) {
    std::fs::write(dir.join("zombie.troupe"), WORKFLOW).unwrap();
    let number = "sed -E 's/.*:(-?[0-9]+).*/\\1/'";
    let deposit = format!(
        "read -r j; a=$(printf '%s' \"$j\" | {number}); [ -n \"$a\" ] || exit 1; \
         echo \"$TROUPE_IDEMPOTENCY_KEY $a\" >> '{}'; echo \"$a\"",
        dir.join("ledger").display()
    );
    // A slow step, announced as it starts: the test stops the worker in it.
    let think = format!(
        "read -r j; r=$(printf '%s' \"$j\" | {number}); \
         echo \"THINK $r\" >> '{}'; sleep 0.3; echo $((r + 1))",
        dir.join("thinking").display()
    );
    let toml = |s: String| serde_json::Value::String(s).to_string();
    std::fs::write(
        dir.join("troupe.toml"),
        format!(
            "[externs.deposit]\ncommand = [\"sh\", \"-c\", {}]\n\n[externs.think]\ncommand = [\"sh\", \"-c\", {}]\n",
            toml(deposit),
            toml(think)
        ),
    )
    .unwrap();
}

fn worker(dir: &Path, url: &str) -> Child {
    use std::os::unix::process::CommandExt;
    Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args([
            "worker", "--store", url, "--sweep", "200ms", "--drain", "5s",
        ])
        .current_dir(dir)
        .env("TROUPE_LEASE", LEASE)
        .env("TROUPE_LOG", "warn")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap()
}

/// Sends `signal` to `c`'s whole process group (the worker and the
/// effect command it waits on).
fn signal_group(c: &Child, signal: &str) {
    let ok = Command::new("kill")
        .args([signal, "--", &format!("-{}", c.id())])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill {signal}");
}

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !f() {
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn ledger(dir: &Path) -> BTreeMap<String, usize> {
    let text = std::fs::read_to_string(dir.join("ledger")).unwrap_or_default();
    let mut applied = BTreeMap::new();
    for l in text.lines() {
        let (key, _) = l.split_once(' ').unwrap();
        *applied.entry(key.to_owned()).or_default() += 1;
    }
    applied
}

#[test]
fn a_worker_paused_past_its_lease_wakes_without_repeating_an_effect() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    setup(dir);
    let db = TestDatabase::new();
    let out = Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args(["run", "zombie.troupe", "--store", &db.url, "--detach"])
        .args(["-i", &format!("n={ROUNDS}")])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let name = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let run = Store::parse_run_id(&name).unwrap();
    let store = Store::open(&db.url, Durability::Full).unwrap();

    let a = worker(dir, &db.url);
    let marker = format!("THINK {STOPPED_IN}");
    wait_for("the first worker to think", || {
        std::fs::read_to_string(dir.join("thinking")).is_ok_and(|t| t.contains(&marker))
    });
    signal_group(&a, "-STOP");
    let before = ledger(dir).len();

    // The second worker claims the run once the first one's lease expires,
    // and finishes it.
    let b = worker(dir, &db.url);
    wait_for("the second worker to finish the run", || {
        store.run(run).unwrap().summary.status == RunStatus::Done
    });
    // The first worker wakes and finds it lost the run.
    signal_group(&a, "-CONT");
    let mut a = a;
    let mut stderr_a = String::new();
    let rx = {
        use std::io::Read;
        // It says so, then the test stops it; nothing else it does may
        // touch the run.
        let mut pipe = a.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                match pipe.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if tx.send(buf[..n].to_vec()).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        wait_for("the paused worker to notice its lost lease", || {
            while let Ok(bytes) = rx.try_recv() {
                stderr_a.push_str(&String::from_utf8_lossy(&bytes));
            }
            stderr_a.contains("lost the lease")
        });
        rx
    };
    signal_group(&a, "-TERM");
    signal_group(&b, "-TERM");
    let status_a = a.wait().unwrap();
    while let Ok(bytes) = rx.recv() {
        stderr_a.push_str(&String::from_utf8_lossy(&bytes));
    }
    let b = b.wait_with_output().unwrap();
    let stderr_b = String::from_utf8_lossy(&b.stderr);
    assert!(
        status_a.success() && b.status.success(),
        "a worker did not stop cleanly: {status_a}, {}\nA: {stderr_a}\nB: {stderr_b}",
        b.status
    );

    let applied = ledger(dir);
    assert!(
        before < ROUNDS as usize,
        "the first worker was not stopped mid-run"
    );
    assert_eq!(applied.len() as i64, ROUNDS, "{applied:?}");
    assert!(
        applied.values().all(|&n| n == 1),
        "a deposit applied twice: {applied:?}\n{stderr_a}"
    );
    let detail = store.run(run).unwrap();
    assert_eq!(detail.summary.status, RunStatus::Done);
    assert_eq!(
        detail.summary.result,
        Some(serde_json::json!({ "k": ROUNDS }))
    );
    let verified = Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args(["verify", &name, "--store", &db.url])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        verified.status.success(),
        "{}{}",
        String::from_utf8_lossy(&verified.stdout),
        String::from_utf8_lossy(&verified.stderr)
    );
}
