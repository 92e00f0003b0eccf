//! Interrupting `troupe run --store` as users do, on the binary: SIGINT to
//! its process group (a terminal's Ctrl-C), SIGTERM (a supervisor) and
//! SIGKILL, each at random points of a run whose loop performs an effect a
//! round. Then the same command, run again at once, must continue the run
//! — never refused over a lease its dead or stopped owner left — and end
//! with the result computed from the workflow; every effect is applied
//! exactly once, counted in a ledger the effect's command appends to and
//! that deduplicates nothing; the recorded execution verifies; and the same
//! command once more reports the finished run and performs nothing.

use crate::support::{Project, said, signal_group, wait_until};
use std::time::Duration;

const ROUNDS: i64 = 4;

/// The result, from the workflow's text: the sum of 2(n + i) over the
/// rounds.
fn expected(n: i64) -> i64 {
    (0..ROUNDS).map(|i| 2 * (n + i)).sum()
}

/// A project whose `deposit` command takes a little while, then appends
/// `KEY AMOUNT` to `ledger` and answers the amount.
fn project() -> Project {
    let p = Project::new();
    p.write(
        "w.troupe",
        &crate::support::deposit_loop("interrupted", ROUNDS),
    );
    let script = format!(
        "read -r j; a=$(printf '%s' \"$j\" | sed -E 's/.*\"amount\":(-?[0-9]+).*/\\1/'); \
         [ -n \"$a\" ] || exit 1; \
         sleep 0.03; echo \"$TROUPE_IDEMPOTENCY_KEY $a\" >> '{}'; echo \"$a\"",
        p.path().join("ledger").display()
    );
    p.write(
        "troupe.toml",
        &format!(
            "[externs.deposit]\ncommand = [\"sh\", \"-c\", {}]\n",
            serde_json::Value::String(script)
        ),
    );
    p
}

fn ledger(p: &Project) -> Vec<(String, i64)> {
    p.read("ledger")
        .lines()
        .map(|l| {
            let (k, a) = l.split_once(' ').unwrap();
            (k.to_owned(), a.parse().unwrap())
        })
        .collect()
}

/// Effect commands still running (their own process group outlives a
/// SIGKILL of troupe's): found by the ledger path in their command line.
fn effects_running(p: &Project) -> bool {
    std::process::Command::new("pgrep")
        .args(["-f", &p.path().join("ledger").display().to_string()])
        .output()
        .unwrap()
        .status
        .success()
}

/// Settles a step a SIGKILL cut short, as a careful person would: once its
/// command is gone, the ledger says whether it happened.
fn settle(p: &Project) {
    wait_until("the cut-short effect's command to end", || {
        !effects_running(p)
    });
    let store =
        troupe_store::Store::open(p.path().join("db"), troupe_store::Durability::Full).unwrap();
    let detail = store.run(1).unwrap();
    let applied = ledger(p);
    for step in detail
        .steps
        .iter()
        .filter(|s| s.status == troupe_store::StepStatus::Started)
    {
        let key = format!("{}/{}", detail.uid, step.key);
        let how: Vec<String> = match applied.iter().find(|(k, _)| *k == key) {
            Some((_, a)) => vec!["--done".into(), a.to_string()],
            None => vec!["--retry".into()],
        };
        let mut args = vec!["resolve", "run-1", &step.key, "--store", "db"];
        args.extend(how.iter().map(String::as_str));
        let out = p.run(&args);
        assert!(out.status.success(), "{}", said(&out));
    }
}

/// When a trial's signal comes.
#[derive(Debug, Clone, Copy)]
enum When {
    /// This long after the start: before the handlers are installed, in
    /// the middle, or after the end.
    After(u64),
    /// Right after the ledger shows this many effects applied: certainly
    /// in the middle of the run.
    Effects(usize),
}

/// One trial: `signal` `when`, then the same command until done; returns
/// the first process's exit code.
fn trial(signal: &str, n: i64, when: When) -> Option<i32> {
    let p = project();
    let n_arg = format!("n={n}");
    let args = ["run", "w.troupe", "--store", "db", "-i", &n_arg, "--json"];
    let child = p.spawn(&args);
    match when {
        When::After(ms) => std::thread::sleep(Duration::from_millis(ms)),
        When::Effects(k) => wait_until("effects to be applied", || ledger(&p).len() >= k),
    }
    signal_group(child.id(), signal);
    let first = child.wait_with_output().unwrap();
    let code = first.status.code();
    // Done before the signal came (0), stopped at a step boundary (130,
    // 143), or killed where it stood (no code); in the middle, never done.
    let mid = matches!(when, When::Effects(_));
    match signal {
        "-INT" if mid => assert_eq!(code, Some(130), "{}", said(&first)),
        "-TERM" if mid => assert_eq!(code, Some(143), "{}", said(&first)),
        "-INT" => assert!(matches!(code, Some(0 | 130) | None), "{}", said(&first)),
        "-TERM" => assert!(matches!(code, Some(0 | 143) | None), "{}", said(&first)),
        _ if mid => assert_eq!(code, None, "{}", said(&first)),
        _ => assert!(matches!(code, Some(0) | None), "{}", said(&first)),
    }
    if matches!(code, Some(130 | 143)) {
        let err = String::from_utf8_lossy(&first.stderr);
        assert!(err.contains("troupe resume run-1"), "{}", said(&first));
    }
    // The same command again, at once: it continues (the default lease is
    // 15 s, so waiting one out would show as a refusal).
    let mut again = p.run(&args);
    for _ in 0..ROUNDS {
        if again.status.code() != Some(1) {
            break;
        }
        let doc: serde_json::Value = serde_json::from_slice(&again.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", said(&again)));
        assert_eq!(doc["error"]["kind"], "needs_resolution", "{}", said(&again));
        // Only a SIGKILL can cut an effect short.
        assert_eq!(signal, "-KILL", "{}", said(&again));
        settle(&p);
        again = p.run(&args);
    }
    assert_eq!(
        again.status.code(),
        Some(0),
        "{signal} {when:?}: {}",
        said(&again)
    );
    let doc: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(doc["results"]["total"], expected(n), "{doc}");
    assert_eq!(doc["verified"], true, "{doc}");
    // Every effect exactly once, and no other.
    let applied = ledger(&p);
    let mut keys: Vec<&str> = applied.iter().map(|(k, _)| k.as_str()).collect();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), applied.len(), "applied twice: {applied:?}");
    assert_eq!(applied.len() as i64, ROUNDS, "{applied:?}");
    let mut amounts: Vec<i64> = applied.iter().map(|(_, a)| *a).collect();
    amounts.sort_unstable();
    assert_eq!(amounts, (0..ROUNDS).map(|i| n + i).collect::<Vec<_>>());
    let verify = p.run(&["verify", "run-1", "--store", "db"]);
    assert!(verify.status.success(), "{}", said(&verify));
    // Once more: the finished run is reported, nothing is performed.
    let rerun = p.run(&args);
    assert_eq!(rerun.status.code(), Some(0), "{}", said(&rerun));
    let doc: serde_json::Value = serde_json::from_slice(&rerun.stdout).unwrap();
    assert_eq!(doc["run"], "run-1", "{doc}");
    assert_eq!(doc["results"]["total"], expected(n), "{doc}");
    assert_eq!(ledger(&p).len() as i64, ROUNDS);
    code
}

/// 20 trials of each signal at random points of the run.
#[test]
fn an_interrupted_run_continues_at_once_and_applies_each_effect_once() {
    let seed = std::env::var("TROUPE_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    eprintln!("seed {seed} (TROUPE_TEST_SEED={seed} repeats it)");
    let mut rng = crate::kills_support::Rng(seed);
    let trials: u64 = std::env::var("TROUPE_TEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    for signal in ["-INT", "-TERM", "-KILL"] {
        let mut codes = std::collections::BTreeMap::new();
        for t in 0..trials {
            // Half at random points, half in the middle of the run.
            let when = if t % 2 == 0 {
                When::After(rng.below(600))
            } else {
                When::Effects(1 + rng.below(ROUNDS as u64 - 1) as usize)
            };
            let code = trial(signal, t as i64 * 10, when);
            *codes.entry(code).or_insert(0) += 1;
        }
        eprintln!("{signal}: exit codes of the interrupted processes {codes:?}");
    }
}

/// A lease held by a live process on another machine is waited out: its
/// process cannot be asked, so only the lease's expiry frees the run.
#[test]
fn a_run_owned_on_another_machine_is_refused_until_its_lease_expires() {
    let p = project();
    let out = p.run(&["run", "w.troupe", "--store", "db", "-i", "n=1"]);
    assert!(out.status.success(), "{}", said(&out));
    let store =
        troupe_store::Store::open(p.path().join("db"), troupe_store::Durability::Full).unwrap();
    // Open the run again, and let a process on another machine hold it
    // for two seconds.
    store.reopen(1, &[troupe_store::RunStatus::Done]).unwrap();
    let elsewhere = "far:4242:1@0123456789abcdef:99";
    assert!(matches!(
        store.claim(1, elsewhere, Duration::from_secs(2)).unwrap(),
        troupe_store::Claim::Claimed
    ));
    let out = p.run(&["resume", "run-1", "--store", "db"]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("run-1 is being run by process 4242 on far"),
        "{err}"
    );
    // Once its lease ran out, the run is taken and ends (no effect again:
    // every step is recorded).
    wait_until("the lease to expire", || {
        p.run(&["resume", "run-1", "--store", "db"])
            .status
            .success()
    });
    assert_eq!(ledger(&p).len() as i64, ROUNDS);
}
