//! Placement, as users run it: a two-lifeline workflow whose lifelines are
//! pinned to two worker labels (`[placement]` in `troupe.toml`, and
//! `--place` on the command line) runs on two `troupe worker` processes on
//! one PostgreSQL store, one per label, its messages travelling through
//! the database. Every so often one of the two workers, chosen at random,
//! is killed with SIGKILL (its whole process group, effects included) and
//! started again with the same label.
//!
//! Oracles from outside the code under test: every run ends done with the
//! result computed here from its input; every effect is applied exactly
//! once, counted in an external ledger that each lifeline's effect command
//! appends to and that deduplicates nothing; each lifeline's effects ran
//! only on the worker of its label (the command records the worker's
//! label from its environment); and every run verifies against ⟦P⟧. A kill
//! between an effect's start and its recorded end leaves the run waiting
//! for `resolve`; the test settles it from the ledger, as a person would.

use crate::kills_support as support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{Rng, Settler, kill_group};
use troupe_check::Value;
use troupe_host::{Compiled, Host, HostConfig, NoTools, RunSettings};
use troupe_store::testing::TestDatabase;
use troupe_store::{Durability, PartStatus, RunStatus, Store};

/// Three rounds: Bank deposits, Clerk records; each round's messages cross
/// between the two workers, and Bank owns the loop (its decisions cross too).
const WORKFLOW: &str = r#"
effect deposit(account: Text, amount: Int) -> Int extern
effect note_down(amount: Int) -> Int extern

workflow placed(n: Int @ Bank) {
  lifelines Bank, Clerk
  act Bank: k = 0
  act Bank: total = n
  while k < 3 @ Bank {
    act Bank: a = deposit("acct", total)
    msg Bank(a) -> Clerk(a)
    act Clerk: r = note_down(a + 1)
    msg Clerk(r) -> Bank(total)
    act Bank: k = k + 1
  }
  return (total @ Bank)
}
"#;

/// What a run with input `n` returns: three rounds of `total + 1`.
fn expected(n: i64) -> i64 {
    n + 3
}

const RUNS: i64 = 60;
const LEASE: Duration = Duration::from_secs(2);
const LABELS: [&str; 2] = ["vault", "desk"];

fn setup(dir: &Path) {
    std::fs::write(dir.join("placed.troupe"), WORKFLOW).unwrap();
    // Each effect appends "KEY AMOUNT LABEL" to the ledger: the label is
    // the one of the worker that ran it (from its environment).
    let script = format!(
        "read -r j; a=$(printf '%s' \"$j\" | sed -E 's/.*\"amount\":(-?[0-9]+).*/\\1/'); \
         [ -n \"$a\" ] || exit 1; \
         echo \"$TROUPE_IDEMPOTENCY_KEY $a $WORKER_LABEL\" >> '{}'; echo \"$a\"",
        dir.join("ledger").display()
    );
    let script = serde_json::Value::String(script);
    std::fs::write(
        dir.join("troupe.toml"),
        format!(
            "[externs.deposit]\ncommand = [\"sh\", \"-c\", {script}]\n\
             [externs.note_down]\ncommand = [\"sh\", \"-c\", {script}]\n\
             [placement]\nBank = \"vault\"\nClerk = \"desk\"\nNobody = \"ignored\"\n"
        ),
    )
    .unwrap();
}

fn worker(dir: &Path, url: &str, label: &str) -> Child {
    use std::os::unix::process::CommandExt;
    Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args([
            "worker",
            "--store",
            url,
            "--labels",
            label,
            "--concurrency",
            "64",
            "--sweep",
            "500ms",
            "--drain",
            "10s",
        ])
        .current_dir(dir)
        .env("TROUPE_LEASE", format!("{}s", LEASE.as_secs()))
        .env("WORKER_LABEL", label)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap()
}

/// The ledger: per idempotency key, each application's amount and label.
fn ledger(dir: &Path) -> BTreeMap<String, Vec<(i64, String)>> {
    let text = std::fs::read_to_string(dir.join("ledger")).unwrap_or_default();
    let mut applied: BTreeMap<String, Vec<(i64, String)>> = BTreeMap::new();
    for l in text.lines() {
        let mut f = l.split(' ');
        let (Some(key), Some(amount), Some(label)) = (f.next(), f.next(), f.next()) else {
            panic!("a torn ledger line: {l:?}");
        };
        applied
            .entry(key.to_owned())
            .or_default()
            .push((amount.parse().unwrap(), label.to_owned()));
    }
    applied
}

#[test]
fn pinned_lifelines_run_on_their_workers_and_survive_killing_either() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    setup(dir);
    let db = TestDatabase::new();
    let store = Store::open(&db.url, Durability::Full).unwrap();
    let host = Host::new(
        store.clone(),
        HostConfig::new(dir.to_owned()),
        Arc::new(NoTools),
    );
    // A few runs queued as users queue them: the placement from
    // troupe.toml, and once from --place (which wins over it).
    for n in 0..3 {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_troupe"));
        cmd.args([
            "run",
            "placed.troupe",
            "--store",
            &db.url,
            "--detach",
            "--new",
        ])
        .args(["-i", &format!("n={n}")])
        .current_dir(dir);
        if n == 2 {
            cmd.args(["--place", "Clerk=desk"]);
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success()
                && String::from_utf8_lossy(&out.stdout).trim() == format!("run-{}", n + 1),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let parts = store.parts(n + 1).unwrap();
        let placed: Vec<(&str, Vec<String>)> = parts
            .iter()
            .map(|p| (p.label.as_str(), p.lifelines.clone()))
            .collect();
        assert_eq!(
            placed,
            vec![
                ("vault", vec!["Bank".to_owned()]),
                ("desk", vec!["Clerk".to_owned()])
            ]
        );
    }
    let compiled = Compiled::from_source(WORKFLOW.into(), "placed.troupe", dir, None).unwrap();
    let settings = RunSettings {
        placement: [("Bank", "vault"), ("Clerk", "desk")]
            .into_iter()
            .map(|(l, w)| (l.to_owned(), w.to_owned()))
            .collect(),
        ..RunSettings::default()
    };
    for n in 3..RUNS {
        host.enqueue(&compiled, vec![Value::Int(n)], &settings)
            .unwrap();
    }
    // A worker with neither label takes nothing of a placed run.
    let idle = Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args([
            "worker",
            "--store",
            &db.url,
            "--labels",
            "gpu",
            "--exit-when-idle",
            "--json",
        ])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(idle.status.success());
    let claimed: Vec<_> = store
        .runs(None)
        .unwrap()
        .into_iter()
        .filter(|r| {
            r.owner.is_some() || !matches!(r.status, RunStatus::Queued | RunStatus::Stalled)
        })
        .collect();
    assert!(
        claimed.is_empty(),
        "a worker without the labels claimed parts: {claimed:?}\n{}",
        String::from_utf8_lossy(&idle.stdout)
    );

    let mut workers: Vec<Child> = LABELS.iter().map(|l| worker(dir, &db.url, l)).collect();
    let mut rng = Rng(0x91ac_e0f1_17e5_u64);
    let mut kills = [0usize; 2];
    let started = Instant::now();
    let mut next_kill = Instant::now() + Duration::from_millis(800);
    let mut settler = Settler::new(2 * LEASE);
    loop {
        let runs = store.runs(None).unwrap();
        let done = runs.iter().filter(|r| r.status == RunStatus::Done).count();
        let bad: Vec<_> = runs
            .iter()
            .filter(|r| matches!(r.status, RunStatus::Failed | RunStatus::Cancelled))
            .collect();
        assert!(
            bad.is_empty(),
            "runs ended badly: {:?}",
            &bad[..bad.len().min(3)]
        );
        if done as i64 == RUNS {
            break;
        }
        if started.elapsed() > Duration::from_secs(240) {
            let stuck: Vec<String> = runs
                .iter()
                .filter(|r| r.status != RunStatus::Done)
                .take(4)
                .map(|r| {
                    format!(
                        "{} {:?} parts {:?} steps {:?}",
                        r.name,
                        r.status,
                        store.parts(r.id).unwrap(),
                        store
                            .steps(r.id)
                            .unwrap()
                            .iter()
                            .map(|s| (s.key.clone(), s.status))
                            .collect::<Vec<_>>()
                    )
                })
                .collect();
            panic!("only {done} of {RUNS} runs done after {kills:?} kills: {stuck:#?}");
        }
        // Effects cut short by a kill, settled from the ledger.
        let applied = ledger(dir);
        settler.settle(&store, &host, &runs, |key| applied.get(key).map(|a| a[0].0));
        // Kill one of the two (all of it) and start it again, while runs
        // are in flight: the other's parts wait for its messages meanwhile.
        if Instant::now() >= next_kill && done < RUNS as usize * 9 / 10 {
            let i = rng.below(2) as usize;
            kill_group(&mut workers[i]);
            workers[i] = worker(dir, &db.url, LABELS[i]);
            kills[i] += 1;
            next_kill = Instant::now() + Duration::from_millis(600 + rng.below(1_200));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    for w in &mut workers {
        let ok = Command::new("kill")
            .args(["-TERM", &w.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok);
    }
    for w in workers {
        let out = w.wait_with_output().unwrap();
        assert!(out.status.success(), "a worker did not stop cleanly");
    }
    assert!(
        kills.iter().all(|&k| k >= 1),
        "each worker must be killed at least once: {kills:?}"
    );

    // Every effect exactly once, each on the worker of its lifeline's label.
    let applied = ledger(dir);
    assert_eq!(applied.len() as i64, RUNS * 6, "effects lost or extra");
    for (key, a) in &applied {
        assert_eq!(a.len(), 1, "{key} applied {} times: {a:?}", a.len());
        let want = if key.contains("/Bank/") {
            "vault"
        } else {
            "desk"
        };
        assert_eq!(a[0].1, want, "{key} ran on a worker labelled {}", a[0].1);
    }
    for r in store.runs(None).unwrap() {
        let n: i64 = store.run(r.id).unwrap().inputs["n"].as_i64().unwrap();
        assert_eq!(
            r.result,
            Some(serde_json::json!({ "total": expected(n) })),
            "{}",
            r.name
        );
        assert!(
            store
                .parts(r.id)
                .unwrap()
                .iter()
                .all(|p| p.status == PartStatus::Done && p.owner.is_none()),
            "{}: a part is not done or still held",
            r.name
        );
        host.verify(r.id)
            .unwrap()
            .unwrap_or_else(|e| panic!("{}: {e}", r.name));
    }
    // The messages crossed through the store, each once: per round the
    // deposit and the record, and Bank's decision before every round and
    // at the exit (counted from the workflow, not by the store).
    for r in store.runs(None).unwrap() {
        assert_eq!(store.crossed(r.id).unwrap(), 3 + 3 + 4, "{}", r.name);
    }
    let out = Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args(["status", "run-1", "--store", &db.url, "--json"])
        .current_dir(dir)
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["parts"][0]["label"], "vault", "{doc}");
    assert_eq!(doc["parts"][1]["lifelines"][0], "Clerk", "{doc}");
    assert_eq!(doc["messages_between_parts"], 10, "{doc}");
    eprintln!(
        "placement: {RUNS} runs on 2 pinned workers, {kills:?} SIGKILLs, {} resolutions, in {:.1?}",
        settler.resolutions,
        started.elapsed()
    );
}

fn troupe(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("TROUPE_STORE")
        .output()
        .unwrap()
}

/// Queues a run on the SQLite store `s.db` in `dir`: `troupe run FILE -i
/// INPUT --store s.db --detach`, then `extra`.
fn queue(dir: &Path, file: &str, input: &str, extra: &[&str]) {
    let args = [
        &["run", file, "-i", input, "--store", "s.db", "--detach"],
        extra,
    ]
    .concat();
    let out = troupe(dir, &args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A worker with `label` on the SQLite store `s.db` in `dir` (sweeping
/// often), its stdout dropped; callers add flags and choose its stderr.
fn sqlite_worker(dir: &Path, label: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_troupe"));
    c.args(["worker", "--store", "s.db", "--labels", label])
        .args(["--sweep", "200ms"])
        .current_dir(dir)
        .env("WORKER_LABEL", label)
        .stdout(Stdio::null());
    c
}

/// A placement that does not fit is refused before anything is recorded,
/// with what would fit.
#[test]
fn a_placement_that_does_not_fit_is_refused_with_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    setup(dir);
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "placed.troupe", "-i", "n=1", "--store", "s.db"];
        args.extend_from_slice(extra);
        troupe(dir, &args)
    };
    let out = run(&["--detach", "--place", "Teller=vault"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("`Teller` is not a lifeline") && err.contains("Bank, Clerk"),
        "{err}"
    );
    let out = run(&["--detach", "--place", "Bank=two words"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("a label is one word"), "{err}");
    // Pinning needs workers: a run in this process cannot be placed.
    let out = run(&["--place", "Bank=vault"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--detach"), "{err}");
    let out = troupe(dir, &["runs", "--store", "s.db", "--json"]);
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("run-1"),
        "a refused run was recorded"
    );
}

/// On the embedded store too: two workers on one SQLite file, each with
/// one label, run a placed run's two parts; the run cannot be resumed
/// whole.
#[test]
fn a_placed_run_on_sqlite_runs_on_two_labelled_workers() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    setup(dir);
    queue(dir, "placed.troupe", "n=4", &[]);
    let out = troupe(dir, &["resume", "run-1", "--store", "s.db"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("is placed"), "{err}");
    let spawn = |label: &str| {
        sqlite_worker(dir, label)
            .arg("--exit-when-idle")
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let workers: Vec<Child> = LABELS.iter().map(|l| spawn(l)).collect();
    for w in workers {
        let out = w.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = troupe(dir, &["status", "run-1", "--store", "s.db", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["status"], "done", "{doc}");
    assert_eq!(doc["result"]["total"], expected(4), "{doc}");
    let out = troupe(dir, &["verify", "run-1", "--store", "s.db"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let applied = ledger(dir);
    assert_eq!(applied.len(), 6, "{applied:?}");
    assert!(applied.iter().all(|(k, a)| a.len() == 1
        && a[0].1
            == if k.contains("/Bank/") {
                "vault"
            } else {
                "desk"
            }));
}

/// A person's task inside one part: the part waits on the store's inbox
/// like a whole run, the other part waits for its message meanwhile, and
/// an answer from another process ends the run on both workers.
#[test]
fn a_part_waits_on_a_person_answered_from_another_process() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    std::fs::write(
        dir.join("ask.troupe"),
        r#"
human approve(n: Int) -> Bool { ask: "Approve {n}?" }
workflow ask(n: Int @ Bank) {
  lifelines Bank, Clerk
  msg Bank(n) -> Clerk(n)
  act Clerk: ok = approve(n)
  msg Clerk(ok) -> Bank(ok)
  return ok @ Bank
}
"#,
    )
    .unwrap();
    let placed = ["--place", "Bank=vault", "--place", "Clerk=desk"];
    queue(dir, "ask.troupe", "n=3", &placed);
    let spawn = |label: &str| {
        sqlite_worker(dir, label)
            .arg("--exit-when-idle")
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let workers: Vec<Child> = LABELS.iter().map(|l| spawn(l)).collect();
    // The task appears once the desk's part reaches it.
    let deadline = Instant::now() + Duration::from_secs(60);
    let task = loop {
        let out = troupe(dir, &["tasks", "--store", "s.db", "--json"]);
        let tasks: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        if let Some(id) = tasks[0]["id"].as_str() {
            break id.to_owned();
        }
        assert!(Instant::now() < deadline, "no task appeared");
        std::thread::sleep(Duration::from_millis(100));
    };
    let out = troupe(dir, &["answer", &task, "--yes", "--store", "s.db"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for w in workers {
        let out = w.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = troupe(dir, &["status", "run-1", "--store", "s.db", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["status"], "done", "{doc}");
    assert_eq!(doc["result"]["ok"], true, "{doc}");
    let out = troupe(dir, &["verify", "run-1", "--store", "s.db"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Counts to `limit` across the two parts, waits for a person in Pong's
/// part, counts on to twice `limit`.
const COUNTED: &str = r#"
human go_on(k: Int) -> Bool { ask: "Go on after {k}?" }

workflow counted(limit: Int @ Ping) {
  lifelines Ping, Pong
  act Ping: k = 0
  while k < limit @ Ping {
    msg Ping(k) -> Pong(n)
    act Pong: n = n + 1
    msg Pong(n) -> Ping(k)
  }
  msg Ping(k) -> Pong(seen)
  act Pong: ok = go_on(seen)
  msg Pong(ok) -> Ping(ok)
  while k < limit * 2 @ Ping {
    msg Ping(k) -> Pong(n)
    act Pong: n = n + 1
    msg Pong(n) -> Ping(k)
  }
  return k @ Ping
}
"#;

/// Both parts of a placed run resume from their own checkpoints: both
/// workers are SIGKILLed while one part waits for a person and the other
/// for its message, and the workers started again continue each part from
/// its latest checkpoint (they say so, after how many events) rather than
/// replay it; the run then ends with the count computed here and verifies.
#[test]
fn killed_parts_resume_from_their_own_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    std::fs::write(dir.join("counted.troupe"), COUNTED).unwrap();
    const LIMIT: i64 = 30;
    let placed = ["--place", "Ping=vault", "--place", "Pong=desk"];
    let every = ["--checkpoint-every", "8"];
    queue(
        dir,
        "counted.troupe",
        &format!("limit={LIMIT}"),
        &[&placed[..], &every].concat(),
    );
    let spawn = |label: &str, log: &str| {
        use std::os::unix::process::CommandExt;
        sqlite_worker(dir, label)
            .arg("--exit-when-idle")
            .env("TROUPE_LEASE", "1s")
            .stderr(std::fs::File::create(dir.join(log)).unwrap())
            .process_group(0)
            .spawn()
            .unwrap()
    };
    let task = |dir: &Path| {
        let out = troupe(dir, &["tasks", "--store", "s.db", "--json"]);
        let tasks: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        tasks[0]["id"].as_str().map(str::to_owned)
    };
    let mut first: Vec<Child> = LABELS
        .iter()
        .map(|l| spawn(l, &format!("{l}-1.log")))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(120);
    let id = loop {
        if let Some(id) = task(dir) {
            break id;
        }
        assert!(Instant::now() < deadline, "no task appeared");
        std::thread::sleep(Duration::from_millis(50));
    };
    for w in &mut first {
        kill_group(w);
    }
    // Both parts are claimable again once the dead workers' leases expire.
    loop {
        let out = troupe(dir, &["workers", "--store", "s.db", "--json"]);
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        if doc["runnable"] == 2 {
            break;
        }
        assert!(Instant::now() < deadline, "the parts stayed leased: {doc}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let second: Vec<Child> = LABELS
        .iter()
        .map(|l| spawn(l, &format!("{l}-2.log")))
        .collect();
    let out = troupe(dir, &["answer", &id, "--yes", "--store", "s.db"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for mut w in second {
        assert!(w.wait().unwrap().success());
    }
    for label in LABELS {
        let log = std::fs::read_to_string(dir.join(format!("{label}-2.log"))).unwrap();
        // "resuming run-1 from its checkpoint after N events": each part
        // counts its own lifeline's events, past the first rounds.
        let after: u64 = log
            .split_once("from its checkpoint after ")
            .and_then(|(_, rest)| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| {
                panic!("the {label} worker did not resume from a checkpoint:\n{log}")
            });
        assert!(after >= 8 * 4, "{label}: {log}");
    }
    let out = troupe(dir, &["status", "run-1", "--store", "s.db", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["status"], "done", "{doc}");
    assert_eq!(doc["result"]["k"], LIMIT * 2, "{doc}");
    let out = troupe(dir, &["verify", "run-1", "--store", "s.db"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Cancelling a placed run while one part's effect runs: `troupe cancel`
/// says the run is cancelled only once every part stopped (each part's
/// lease is given back by then, and the effect's command is killed), as
/// for a whole run with a live owner; never while a part still runs.
#[test]
fn a_placed_run_is_cancelled_once_its_parts_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    std::fs::write(
        dir.join("slow.troupe"),
        r#"
effect slow(n: Int) -> Int extern
workflow slow(n: Int @ Bank) {
  lifelines Bank, Clerk
  msg Bank(n) -> Clerk(n)
  act Clerk: r = slow(n)
  msg Clerk(r) -> Bank(r)
  return r @ Bank
}
"#,
    )
    .unwrap();
    // The effect says it started and with which process, then waits for a
    // file the test never writes.
    let script = format!(
        "echo $$ > '{pid}'; while [ ! -e '{go}' ]; do sleep 0.05; done; echo 1",
        pid = dir.join("effect.pid").display(),
        go = dir.join("go").display()
    );
    std::fs::write(
        dir.join("troupe.toml"),
        format!(
            "[externs.slow]\ncommand = [\"sh\", \"-c\", {}]\n",
            serde_json::Value::String(script)
        ),
    )
    .unwrap();
    let placed = ["--place", "Bank=vault", "--place", "Clerk=desk"];
    queue(dir, "slow.troupe", "n=1", &placed);
    let mut workers: Vec<Child> = LABELS
        .iter()
        .map(|label| {
            sqlite_worker(dir, label)
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    let pid = loop {
        if let Some(pid) = std::fs::read_to_string(dir.join("effect.pid"))
            .ok()
            .and_then(|p| p.trim().parse::<u32>().ok())
        {
            break pid;
        }
        assert!(Instant::now() < deadline, "the effect never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = troupe(dir, &["cancel", "run-1", "--store", "s.db"]);
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{said}");
    assert!(said.starts_with("cancelled run-1"), "{said}");
    // At that moment nothing of the run runs any more.
    let out = troupe(dir, &["status", "run-1", "--store", "s.db", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["status"], "cancelled", "{doc}");
    let parts = doc["parts"].as_array().unwrap();
    assert!(parts.iter().all(|p| p["owner"].is_null()), "{doc}");
    // The effect's command was killed (gone, or a zombie not yet reaped).
    let dead = || {
        std::fs::read_to_string(format!("/proc/{pid}/status")).map_or(true, |s| {
            s.lines()
                .any(|l| l.starts_with("State:") && l.contains('Z'))
        })
    };
    assert!(
        dead(),
        "the effect's command still runs after the cancellation"
    );
    for w in &mut workers {
        let _ = w.kill();
        let _ = w.wait();
    }
}
