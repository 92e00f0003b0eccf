//! A fleet of workers on one PostgreSQL store, as users run it: three
//! `troupe worker` processes share the store; runs are queued; every few
//! seconds one worker, chosen at random, is killed with SIGKILL (its whole
//! process group, effects included) and started again. Every run must end
//! done with the right result, verify against the workflow, and apply each
//! of its effects exactly once — counted in an external ledger that the
//! effect command appends to and that deduplicates nothing. A kill between
//! an effect's start and its recorded end leaves the run waiting for
//! `resolve`; the test settles it as a person would, from the ledger.

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
use troupe_store::{Durability, RunStatus, Store};

const WORKFLOW: &str = r#"
effect deposit(account: Text, amount: Int) -> Int extern

workflow fleet(n: Int @ Bank) {
  lifelines Bank, Clerk
  act Bank: a = deposit("acct", n)
  msg Bank(a) -> Clerk(a)
  act Clerk: b = a + 1
  msg Clerk(b) -> Bank(b)
  act Bank: c = deposit("acct", b)
  return (c @ Bank)
}
"#;

const RUNS: i64 = 2_000;
const WORKERS: usize = 3;
/// The workers' lease: a killed worker's runs are resumed after it.
const LEASE: Duration = Duration::from_secs(2);

fn setup(dir: &Path) {
    std::fs::write(dir.join("fleet.troupe"), WORKFLOW).unwrap();
    let script = format!(
        "read -r j; a=$(printf '%s' \"$j\" | sed -E 's/.*\"amount\":(-?[0-9]+).*/\\1/'); \
         [ -n \"$a\" ] || exit 1; \
         echo \"$TROUPE_IDEMPOTENCY_KEY $a\" >> '{}'; echo \"$a\"",
        dir.join("ledger").display()
    );
    std::fs::write(
        dir.join("troupe.toml"),
        format!(
            "[externs.deposit]\ncommand = [\"sh\", \"-c\", {}]\n",
            serde_json::Value::String(script)
        ),
    )
    .unwrap();
}

/// Starts worker number `n`, its stderr in `worker-N.log`: a pipe nobody
/// reads until the end would fill, and block the worker at its next line.
fn worker(dir: &Path, url: &str, n: usize) -> Child {
    use std::os::unix::process::CommandExt;
    Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args([
            "worker",
            "--store",
            url,
            "--concurrency",
            "24",
            "--sweep",
            "500ms",
            "--drain",
            "10s",
        ])
        .current_dir(dir)
        .env("TROUPE_LEASE", format!("{}s", LEASE.as_secs()))
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join(format!("worker-{n}.log"))).unwrap())
        .process_group(0)
        .spawn()
        .unwrap()
}

/// The lines of the workers' logs that mention `what`, by worker.
fn logs(dir: &Path, workers: usize, what: &str) -> String {
    let mut said = String::new();
    // Notes name runs `run-N`, log fields `run=N`.
    let field = what.replace("run-", "run=");
    for n in 0..workers {
        let log = std::fs::read_to_string(dir.join(format!("worker-{n}.log"))).unwrap_or_default();
        for line in log
            .lines()
            .filter(|l| l.contains(what) || l.contains(&field))
        {
            said.push_str(&format!("worker-{n}: {line}\n"));
        }
    }
    said
}

/// The ledger: the amounts each effect (by idempotency key) was applied with.
fn ledger(dir: &Path) -> BTreeMap<String, Vec<i64>> {
    let text = std::fs::read_to_string(dir.join("ledger")).unwrap_or_default();
    let mut applied: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for l in text.lines() {
        let (key, amount) = l.split_once(' ').unwrap();
        applied
            .entry(key.to_owned())
            .or_default()
            .push(amount.parse().unwrap());
    }
    applied
}

#[test]
fn a_fleet_whose_workers_are_killed_completes_every_run_once() {
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
    let compiled = Compiled::from_source(WORKFLOW.into(), "fleet.troupe", dir, None).unwrap();
    // A few runs queued as users queue them, the rest through the library.
    for n in 0..3 {
        let out = Command::new(env!("CARGO_BIN_EXE_troupe"))
            .args([
                "run",
                "fleet.troupe",
                "--store",
                &db.url,
                "--detach",
                "--new",
            ])
            .args(["-i", &format!("n={n}")])
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success()
                && String::from_utf8_lossy(&out.stdout).trim() == format!("run-{}", n + 1),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for n in 3..RUNS {
        host.enqueue(&compiled, vec![Value::Int(n)], &RunSettings::default())
            .unwrap();
    }

    // Each worker with the number of its log.
    let mut workers: Vec<(Child, usize)> =
        (0..WORKERS).map(|n| (worker(dir, &db.url, n), n)).collect();
    let mut started_workers = WORKERS;
    let mut rng = Rng(0x00f1_ee75_eed5_u64);
    let mut kills = 0usize;
    let started = Instant::now();
    let mut next_kill = Instant::now() + Duration::from_millis(1_500);
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
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "only {done} of {RUNS} runs done after {kills} kills"
        );
        // Settle effects cut short by a kill, from the ledger.
        let applied = ledger(dir);
        settler.settle(&store, &host, &runs, |key| applied.get(key).map(|a| a[0]));
        // Kill one worker (all of it) and start another in its place,
        // while runs are in flight.
        if Instant::now() >= next_kill && done < RUNS as usize * 9 / 10 {
            let i = rng.below(WORKERS as u64) as usize;
            kill_group(&mut workers[i].0);
            workers[i] = (worker(dir, &db.url, started_workers), started_workers);
            started_workers += 1;
            kills += 1;
            next_kill = Instant::now() + Duration::from_millis(1_000 + rng.below(2_000));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // A graceful stop: SIGTERM drains and exits cleanly.
    for (w, _) in &mut workers {
        let ok = Command::new("kill")
            .args(["-TERM", &w.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok);
    }
    let stopped: Vec<u32> = workers.iter().map(|(w, _)| w.id()).collect();
    for (mut w, n) in workers {
        let status = w.wait().unwrap();
        assert!(
            status.success(),
            "a worker did not stop cleanly ({status}): {}",
            std::fs::read_to_string(dir.join(format!("worker-{n}.log"))).unwrap_or_default()
        );
    }
    assert!(kills >= 3, "only {kills} kills: the fleet was not tested");
    // Stopped workers leave the list; killed ones stay, holding nothing.
    let listed = store.workers().unwrap();
    assert!(
        listed
            .iter()
            .all(|w| !stopped.contains(&w.pid) && w.leases == 0),
        "{listed:?}"
    );
    assert!(listed.len() <= kills, "{listed:?}");

    // Every effect exactly once, counted by the ledger itself.
    let applied = ledger(dir);
    assert_eq!(applied.len() as i64, RUNS * 2, "effects lost or extra");
    let twice: Vec<_> = applied.iter().filter(|(_, a)| a.len() != 1).collect();
    assert!(
        twice.is_empty(),
        "effects applied twice: {:?}\n{}",
        &twice[..twice.len().min(5)],
        logs(dir, started_workers, twice[0].0.split('/').next().unwrap())
    );
    // Every result right, every run a run of the workflow.
    for r in store.runs(None).unwrap() {
        let n: i64 = store.run(r.id).unwrap().inputs["n"].as_i64().unwrap();
        assert_eq!(
            r.result,
            Some(serde_json::json!({ "c": n + 1 })),
            "{}",
            r.name
        );
        host.verify(r.id)
            .unwrap()
            .unwrap_or_else(|e| panic!("{}: {e}", r.name));
    }
    eprintln!(
        "fleet: {RUNS} runs on {WORKERS} workers, {kills} SIGKILLs, {} resolutions, {} runs whose live worker lost the lease, in {:.1?}",
        settler.resolutions,
        logs(dir, started_workers, "lost its lease to another worker")
            .lines()
            .count(),
        started.elapsed()
    );
}
