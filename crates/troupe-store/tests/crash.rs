//! The crash test: durable runs are killed with SIGKILL at random points
//! (during messages, effects, human waits and model calls) and resumed until
//! they finish. Every result equals the uncrashed result, every recorded
//! execution verifies against ⟦P⟧, every human task is asked once, and an
//! idempotent effect that counts its applications shows each applied exactly
//! once.
//!
//! The killed process is this test binary itself, re-run with
//! `TROUPE_CRASH_CHILD` set so that only `crash_child` does anything.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use troupe_check::Value;
use troupe_runtime::{EngineBuilder, Externs, RunOptions};
use troupe_store::{Durability, NewRun, Store, StoreInbox};

const SOURCE: &str = r#"
effect deposit(account: Text, amount: Int) -> Int extern idempotent
human approve(amount: Int) -> Bool { ask: "Approve a deposit of {amount}?" }
llm summarize(total: Int) -> Text { prompt: "Summarize a total of {total}" }

workflow crash(limit: Int @ Bank) {
  lifelines Bank, Clerk, Auditor
  act Bank: k = 0
  act Bank: total = 0
  while k < limit @ Bank {
    act Bank: d = deposit("acct", k)
    act Bank: total = total + d
    msg Bank(k) -> Clerk(k)
    if k % 7 == 0 @ Clerk {
      act Clerk: ok = approve(k)
    }
    act Clerk: n = k + 1
    msg Clerk(n) -> Bank(k)
  }
  msg Bank(total) -> Auditor(total)
  act Auditor: line = summarize(total)
  return (total @ Bank, line @ Auditor)
}
"#;

const LIMIT: i64 = 40;
const KILLS: usize = 200;

/// The effect's side effect, made idempotent by its key: a ledger file gets
/// one line per key; attempts are logged apart.
fn deposit(ledger: &Path, key: &str, amount: i64) -> Result<(), String> {
    use std::io::Write;
    let attempts = ledger.with_extension("attempts");
    let mut a = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&attempts)
        .map_err(|e| e.to_string())?;
    writeln!(a, "{key}").map_err(|e| e.to_string())?;
    let existing = std::fs::read_to_string(ledger).unwrap_or_default();
    if !existing.lines().any(|l| l.split(' ').next() == Some(key)) {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(ledger)
            .map_err(|e| e.to_string())?;
        writeln!(f, "{key} {amount}").map_err(|e| e.to_string())?;
        f.sync_all().map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn engine(ledger: PathBuf, humans: Arc<dyn troupe_runtime::HumanInbox>) -> troupe_runtime::Engine {
    EngineBuilder::from_source(SOURCE)
        .unwrap()
        .externs(externs_for(ledger))
        .llm(Arc::new(troupe_llm::MockBackend::new()))
        .humans(humans)
        .build()
        .unwrap()
}

fn answers() -> serde_json::Map<String, serde_json::Value> {
    serde_json::json!({ "approve": true })
        .as_object()
        .cloned()
        .unwrap()
}

/// Runs or resumes the run of the store given by the environment. Does
/// nothing in a normal test run.
#[test]
fn crash_child() {
    let Ok(dir) = std::env::var("TROUPE_CRASH_CHILD") else {
        return;
    };
    let dir = PathBuf::from(dir);
    let store = Store::open(dir.join("store.db"), Durability::Full).unwrap();
    let probe = engine(dir.join("ledger"), Arc::new(troupe_runtime::NoHumans));
    let run = match store.runs(None).unwrap().first() {
        Some(r) => r.id,
        None => {
            let wf = probe.workflow();
            let (fingerprint, canonical) = troupe_store::fingerprint(probe.program(), wf);
            store
                .create_run(&NewRun {
                    workflow: wf.name.clone(),
                    file: None,
                    source: SOURCE.into(),
                    fingerprint,
                    canonical,
                    inputs_json: "{}".into(),
                    inputs: vec![Value::Int(LIMIT)],
                    seed: 7,
                    lifelines: wf.lifelines.len(),
                    llm: "mock".into(),
                })
                .unwrap()
        }
    };
    let detail = store.run(run).unwrap();
    if detail.summary.status == "done" {
        println!("RESULT {}", detail.summary.result.unwrap());
        return;
    }
    store.claim(run).unwrap();
    let journal = store.journal(run, Arc::new(probe.types().clone())).unwrap();
    let inbox = StoreInbox::new(store.clone(), run).scripted(answers());
    let engine = engine(dir.join("ledger"), Arc::new(inbox));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let options = RunOptions {
        run_id: Store::run_name(run),
        seed: 7,
        trace: false,
        journal: Some(journal),
        ..RunOptions::default()
    };
    let outcome = rt
        .block_on(engine.run(detail.input_values, options))
        .unwrap();
    let json: serde_json::Map<String, serde_json::Value> = outcome
        .results
        .iter()
        .map(|(k, v)| (k.clone(), v.to_json(engine.types())))
        .collect();
    println!("RESULT {}", serde_json::Value::Object(json));
}

fn externs_for(ledger: PathBuf) -> Externs {
    let mut externs = Externs::new();
    externs.effect("deposit", move |call| {
        let ledger = ledger.clone();
        async move {
            let amount = match call.args.get(1) {
                Some(Value::Int(n)) => *n,
                _ => return Err("bad amount".to_owned()),
            };
            deposit(&ledger, &call.idempotency_key, amount)?;
            Ok(vec![Value::Int(amount)])
        }
    });
    externs
}

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

fn child(dir: &Path) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "crash_child",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("TROUPE_CRASH_CHILD", dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// The uncrashed result, computed in memory.
fn reference_result(dir: &Path) -> serde_json::Value {
    let engine = engine(
        dir.join("reference-ledger"),
        Arc::new(troupe_runtime::ScriptedHumans::new(answers())),
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let options = RunOptions {
        seed: 7,
        ..RunOptions::default()
    };
    let outcome = rt
        .block_on(engine.run(vec![Value::Int(LIMIT)], options))
        .unwrap();
    engine
        .verify("reference", outcome.trace.as_ref().unwrap())
        .unwrap();
    let json: serde_json::Map<String, serde_json::Value> = outcome
        .results
        .iter()
        .map(|(k, v)| (k.clone(), v.to_json(engine.types())))
        .collect();
    serde_json::Value::Object(json)
}

#[test]
fn runs_killed_at_random_points_resume_to_the_same_result_exactly_once() {
    if std::env::var("TROUPE_CRASH_CHILD").is_ok() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let expected = reference_result(root.path());
    let mut rng = Rng(0x5eed_c0ff_ee15_900d);
    let mut kills = 0usize;
    let mut runs = 0usize;
    let started = Instant::now();
    while kills < KILLS {
        runs += 1;
        let dir = root.path().join(format!("run{runs}"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut kills_this_run = 0;
        let result = loop {
            let mut c = child(&dir);
            // Early kills land in start-up and the first steps; later ones mid-run.
            let delay = Duration::from_micros(rng.below(if kills_this_run % 3 == 0 {
                15_000
            } else {
                120_000
            }));
            std::thread::sleep(delay);
            match c.try_wait().unwrap() {
                Some(status) => {
                    assert!(status.success(), "the child failed: {status}");
                    let mut out = String::new();
                    std::io::Read::read_to_string(c.stdout.as_mut().unwrap(), &mut out).unwrap();
                    break out;
                }
                None if kills < KILLS * 4 => {
                    c.kill().unwrap(); // SIGKILL
                    c.wait().unwrap();
                    kills += 1;
                    kills_this_run += 1;
                }
                None => {
                    let out = c.wait_with_output().unwrap();
                    assert!(out.status.success());
                    break String::from_utf8_lossy(&out.stdout).into_owned();
                }
            }
        };
        let line = result
            .lines()
            .find_map(|l| l.split_once("RESULT ").map(|(_, r)| r))
            .unwrap_or_else(|| panic!("no result in {result:?}"));
        let got: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(got, expected, "run {runs} after {kills_this_run} kills");

        // Each effect applied exactly once, whatever the attempts.
        let ledger = std::fs::read_to_string(dir.join("ledger")).unwrap();
        let mut applied: BTreeMap<&str, usize> = BTreeMap::new();
        for l in ledger.lines() {
            *applied.entry(l.split(' ').next().unwrap()).or_default() += 1;
        }
        assert_eq!(applied.len() as i64, LIMIT, "one deposit per round");
        assert!(
            applied.values().all(|&n| n == 1),
            "a deposit applied twice: {applied:?}"
        );

        // The recorded execution is a run of the workflow; tasks asked once.
        let store = Store::open(dir.join("store.db"), Durability::Full).unwrap();
        let run = store.runs(None).unwrap()[0].id;
        let (events, _) = store.events(run, 0).unwrap();
        let trace = troupe_runtime::Trace::from_events(0, events);
        engine(dir.join("unused"), Arc::new(troupe_runtime::NoHumans))
            .verify("crashed", &trace)
            .unwrap_or_else(|e| panic!("run {runs}: {e}"));
        let tasks = store.tasks(true).unwrap();
        assert_eq!(tasks.len() as i64, (LIMIT + 6) / 7, "one task per approval");
        assert!(tasks.iter().all(|t| t.status == "answered"));
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "the crash test is too slow"
        );
    }
    assert!(
        kills >= KILLS && runs >= 2,
        "{kills} kills over {runs} runs"
    );
    eprintln!(
        "crash test: {kills} kills over {runs} runs in {:.1?}",
        started.elapsed()
    );
}
