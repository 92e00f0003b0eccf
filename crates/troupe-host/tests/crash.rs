//! The crash test: durable runs, driven through the run lifecycle as `troupe
//! run --store` drives them, are killed with SIGKILL (the whole process
//! group, so the effect's own process dies too) at random points — during
//! messages, effects, human waits and model calls — and resumed until they
//! finish. Every result equals the uncrashed result, every recorded
//! execution verifies against ⟦P⟧, and every effect is applied exactly once,
//! counted in an external ledger that the effect appends to and that
//! deduplicates nothing.
//!
//! The effect is a command (`[externs.deposit]` in `troupe.toml`) and is
//! *not* idempotent: a kill between its start and its recorded end leaves
//! the run waiting for `resolve`, and the test settles it as a person
//! would, by looking at the ledger: the deposit is there (`Done`) or it is
//! not (`Retry`).
//!
//! Each round runs a `par`: the Bank deposits in one branch while it talks
//! to the Clerk in another and to the Auditor (a model call) in a third,
//! so the Bank's three parts interleave as their actions finish, and a
//! resumed run must replay them in their recorded order.
//!
//! The killed process is this test binary itself, re-run with
//! `TROUPE_CRASH_CHILD` set so that only `crash_child` does anything.
//!
//! A second test kills `planner` runs: during planning (the model is a
//! slow counting backend that appends every plan it writes to the same
//! ledger, its first plan of each round rejected) and during the plan's
//! execution (the deposits are the plan's). No plan is asked for once the
//! plan has started running, the result is that of the last plan written,
//! and every deposit is applied exactly once.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use troupe_check::Value;
use troupe_host::{
    Compiled, Host, HostConfig, NoTools, Overrides, Resolution, RunEnd, RunSettings, StartPolicy,
};
use troupe_store::{Durability, Store};

const SOURCE: &str = r#"
effect deposit(account: Text, amount: Int) -> Int extern
human approve(amount: Int) -> Bool { ask: "Approve a deposit of {amount}?" }
llm summarize(total: Int) -> Text { prompt: "Summarize a total of {total}" }

workflow crash(limit: Int @ Bank) {
  lifelines Bank, Clerk, Auditor
  act Bank: k = 0
  act Bank: total = 0
  while k < limit @ Bank {
    par {
      act Bank: d = deposit("acct", k)
      act Bank: total = total + d
    } and {
      msg Bank(k) -> Clerk(k)
      if k % 7 == 0 @ Clerk {
        act Clerk: ok = approve(k)
      }
      act Clerk: n = k + 1
      msg Clerk(n) -> Bank(next)
    } and {
      msg Bank(k) -> Auditor(seen)
      act Auditor: note = summarize(seen)
    }
    act Bank: k = next
  }
  msg Bank(total) -> Auditor(total)
  act Auditor: line = summarize(total)
  return (total @ Bank, line @ Auditor)
}
"#;

/// A planner whose plans make the deposits (see `plan_source`).
const PLAN_SOURCE: &str = r#"
effect deposit(account: Text, amount: Int) -> Int extern
effect tick(n: Int) -> Int extern idempotent
planner solve(limit: Int) -> (total: Int) {
  prompt: "Deposit 0 to {limit} and answer with the total"
  actions: [deposit]
  lifelines: [Bank, Clerk]
  retries: 2
}

workflow crash_plan(limit: Int @ Desk) {
  lifelines Desk, Auditor
  msg Desk(limit) -> Auditor(limit)
  act Desk: total = solve(limit)
  // The Auditor goes on while the plan runs: the outer run takes
  // checkpoints while the planner call is in flight.
  act Auditor: j = 0
  while j < limit * 3 @ Auditor {
    act Auditor: t = tick(j)
    act Auditor: j = j + t
  }
  msg Desk(total) -> Auditor(total)
  return total @ Auditor
}
"#;

/// The plan the counting model writes as its `n`-th plan: deposits as the
/// main test's loop does, with the total starting at `n`, so the result
/// tells which plan ran.
fn plan_source(n: usize) -> String {
    format!(
        "workflow plan(limit: Int @ Bank) {{
  lifelines Bank, Clerk
  act Bank: k = 0
  act Bank: total = {n}
  while k < limit @ Bank {{
    act Bank: d = deposit(\"acct\", k)
    act Bank: total = total + d
    msg Bank(k) -> Clerk(k)
    act Clerk: n = k + 1
    msg Clerk(n) -> Bank(k)
  }}
  return total @ Bank
}}"
    )
}

/// A plan that does not check (the deposit's arguments are missing).
const BAD_PLAN: &str = "workflow plan(limit: Int @ Bank) {
  act Bank: d = deposit(limit)
  return d @ Bank
}";

/// The counting model of the planner runs: slow enough for kills to land
/// while it plans; appends `PLAN n` to the ledger before it answers; the
/// first attempt of each planning round is a plan that does not check.
#[derive(Debug)]
struct PlanWriter {
    ledger: PathBuf,
}

impl troupe_llm::LlmBackend for PlanWriter {
    fn describe(&self) -> String {
        "counting plan writer".into()
    }

    fn call<'a>(
        &'a self,
        request: &'a troupe_llm::LlmRequest,
    ) -> troupe_llm::BoxFuture<'a, Result<troupe_llm::LlmAnswer, troupe_llm::LlmError>> {
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(15)).await;
            assert!(request.plan.is_some(), "only the planner asks a model");
            use std::io::Write;
            let n = plans_written(&self.ledger);
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.ledger)
                .unwrap();
            writeln!(f, "PLAN {n}").unwrap();
            let source = if request.key.occurrence.is_multiple_of(3) {
                BAD_PLAN.to_owned()
            } else {
                plan_source(n)
            };
            Ok(troupe_llm::LlmAnswer {
                values: vec![Value::text(source)],
                model: "plan-writer".into(),
                usage: None,
                latency: Duration::from_millis(15),
                attempts: 1,
                detail: Default::default(),
                tool_calls: Vec::new(),
            })
        })
    }
}

/// How many plans the counting model wrote (good and bad).
fn plans_written(ledger: &Path) -> usize {
    std::fs::read_to_string(ledger)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("PLAN "))
        .count()
}

/// Whether `dir` holds a planner run (see `planner_runs_…`).
fn plan_mode(dir: &Path) -> bool {
    dir.join("plan-mode").exists()
}

const LIMIT: i64 = 40;
const KILLS: usize = 200;
/// Every incarnation of the run's owner is this test: it adopts the lease
/// of the process it killed, as `--detach` hands one over.
const OWNER: &str = "crash-test";

/// `troupe.toml` with the deposit as a command that appends `KEY AMOUNT` to
/// the ledger and answers the amount.
fn write_config(dir: &Path) {
    let ledger = dir.join("ledger");
    let script = format!(
        "read -r j; a=$(printf '%s' \"$j\" | sed -E 's/.*\"amount\":(-?[0-9]+).*/\\1/'); \
         echo \"$TROUPE_IDEMPOTENCY_KEY $a\" >> '{}'; echo \"$a\"",
        ledger.display()
    );
    let toml = format!(
        "[externs.deposit]\ncommand = [\"sh\", \"-c\", {}]\n\n[externs.tick]\ncommand = [\"sh\", \"-c\", \"cat >/dev/null; echo 1\"]\n",
        toml_string(&script)
    );
    std::fs::write(dir.join("troupe.toml"), toml).unwrap();
}

fn toml_string(s: &str) -> String {
    serde_json::Value::String(s.to_owned()).to_string()
}

/// The run directory's store: `store.db`, or the PostgreSQL database its
/// `store_url` file names.
fn host(dir: &Path) -> Host {
    let store = match std::fs::read_to_string(dir.join("store_url")) {
        Ok(url) => Store::open(url.trim(), Durability::Full).unwrap(),
        Err(_) => Store::open(dir.join("store.db"), Durability::Full).unwrap(),
    };
    let mut config = HostConfig::new(dir.to_owned());
    config.owner = OWNER.into();
    if plan_mode(dir) {
        config.llm = Some(Arc::new(PlanWriter {
            ledger: dir.join("ledger"),
        }));
    }
    // The parent counts the resumptions that continued from a checkpoint.
    config.observer = Some(Arc::new(|n: &troupe_host::Notice| {
        if let troupe_host::Notice::Resuming {
            checkpoint: Some(at),
            ..
        } = n
        {
            println!("FROM-CHECKPOINT {at}");
        }
    }));
    Host::new(store, config, Arc::new(NoTools))
}

/// The run's settings; a run directory with a `checkpoint_every` file
/// takes a checkpoint that often, so its resumptions continue from
/// checkpoints (taken while effects, human waits and model calls are in
/// flight) instead of replaying from the start.
fn settings(dir: &Path) -> RunSettings {
    RunSettings {
        llm: Some("mock".into()),
        seed: 7,
        checkpoint_every: std::fs::read_to_string(dir.join("checkpoint_every"))
            .ok()
            .and_then(|s| s.trim().parse().ok()),
        ..RunSettings::default()
    }
}

fn answers() -> serde_json::Map<String, serde_json::Value> {
    serde_json::json!({ "approve": true })
        .as_object()
        .cloned()
        .unwrap()
}

fn compiled(dir: &Path) -> Compiled {
    let source = if plan_mode(dir) { PLAN_SOURCE } else { SOURCE };
    Compiled::from_source(source.into(), "crash.troupe", Path::new("."), None).unwrap()
}

fn limit(dir: &Path) -> i64 {
    if plan_mode(dir) { PLAN_LIMIT } else { LIMIT }
}

/// Runs or resumes the run of the store given by the environment. Does
/// nothing in a normal test run.
#[test]
fn crash_child() {
    let Ok(dir) = std::env::var("TROUPE_CRASH_CHILD") else {
        return;
    };
    let dir = PathBuf::from(dir);
    let host = host(&dir);
    let run = match host.store().runs(None).unwrap().first() {
        Some(r) if r.status == troupe_store::RunStatus::Done => {
            println!("RESULT {}", r.result.clone().unwrap());
            return;
        }
        Some(r) => match host.claim(r.id) {
            Ok(()) => r.id,
            // A kill after the run was found unsettled, before the parent
            // heard of it.
            Err(troupe_host::HostError::NeedsResolution { step, .. }) => {
                println!("RESOLVE {step}");
                return;
            }
            Err(e) => panic!("{e}"),
        },
        None => {
            host.start(
                &compiled(&dir),
                vec![Value::Int(limit(&dir))],
                &settings(&dir),
                StartPolicy::New,
            )
            .unwrap()
            .run
        }
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let finished = rt
        .block_on(host.drive(run, &Overrides::default(), Some(answers())))
        .unwrap();
    match finished.end {
        RunEnd::Done {
            results, verified, ..
        } => {
            verified.unwrap();
            let json: serde_json::Map<String, serde_json::Value> = results
                .iter()
                .map(|(k, v)| (k.clone(), v.to_json(finished.compiled.types())))
                .collect();
            println!("RESULT {}", serde_json::Value::Object(json));
        }
        RunEnd::NeedsResolution { step, .. } => println!("RESOLVE {step}"),
        other => panic!("the run ended with {other:?}"),
    }
}

/// The one run of a test's store. Its id is not always 1: a PostgreSQL
/// sequence does not give back the id of a start killed before it
/// committed, so a restarted start takes the next. That a store holds
/// exactly one run after any number of killed starts is itself checked.
fn the_run(h: &Host) -> i64 {
    let runs = h.store().runs(None).unwrap();
    assert_eq!(
        runs.len(),
        1,
        "killed starts left more than one run: {runs:?}"
    );
    runs[0].id
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
    use std::os::unix::process::CommandExt;
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
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap()
}

/// SIGKILL to the child's whole process group (the child and any effect
/// command it started), as a machine crash would stop them all.
fn kill_group(c: &mut std::process::Child) {
    let status = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", c.id())])
        .status()
        .unwrap();
    assert!(status.success());
    c.wait().unwrap();
}

/// The ledger: how many times each deposit was applied.
fn ledger(dir: &Path) -> BTreeMap<String, usize> {
    let text = std::fs::read_to_string(dir.join("ledger")).unwrap_or_default();
    let mut applied = BTreeMap::new();
    for l in text.lines().filter(|l| !l.starts_with("PLAN ")) {
        *applied
            .entry(l.split(' ').next().unwrap().to_owned())
            .or_default() += 1;
    }
    applied
}

/// The uncrashed result, computed in memory through the same backends.
fn reference_result(dir: &Path) -> serde_json::Value {
    write_config(dir);
    let host = host(dir);
    let started = host
        .start(
            &compiled(dir),
            vec![Value::Int(LIMIT)],
            &settings(dir),
            StartPolicy::New,
        )
        .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let finished = rt
        .block_on(host.drive(started.run, &Overrides::default(), Some(answers())))
        .unwrap();
    let RunEnd::Done {
        results, verified, ..
    } = finished.end
    else {
        panic!("the reference run did not finish")
    };
    verified.unwrap();
    serde_json::Value::Object(
        results
            .iter()
            .map(|(k, v)| (k.clone(), v.to_json(finished.compiled.types())))
            .collect(),
    )
}

#[test]
fn runs_killed_at_random_points_resume_to_the_same_result_exactly_once() {
    crash_test(KILLS, false);
}

/// The same on a PostgreSQL store (fewer kills: each run has a database
/// of its own).
#[test]
fn runs_on_postgres_killed_at_random_points_resume_to_the_same_result_exactly_once() {
    crash_test(KILLS / 4, true);
}

fn crash_test(kills_wanted: usize, postgres: bool) {
    if std::env::var("TROUPE_CRASH_CHILD").is_ok() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let mut databases = Vec::new();
    let reference = root.path().join("reference");
    std::fs::create_dir_all(&reference).unwrap();
    let expected = reference_result(&reference);
    let seed = std::env::var("TROUPE_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_c0ff_ee15_900d_u64);
    let mut rng = Rng(seed);
    let mut kills = 0usize;
    let mut resolutions = 0usize;
    let mut from_checkpoints = 0usize;
    let mut resumed_from_checkpoints = 0usize;
    let mut runs = 0usize;
    let started = Instant::now();
    while kills < kills_wanted {
        runs += 1;
        let dir = root.path().join(format!("run{runs}"));
        std::fs::create_dir_all(&dir).unwrap();
        write_config(&dir);
        if postgres {
            let db = troupe_store::testing::TestDatabase::new();
            std::fs::write(dir.join("store_url"), &db.url).unwrap();
            databases.push(db);
        }
        // Every other run resumes from checkpoints taken every few events.
        if runs % 2 == 1 {
            std::fs::write(dir.join("checkpoint_every"), format!("{}", 3 + runs % 11)).unwrap();
        }
        let mut kills_this_run = 0;
        let result = loop {
            let mut c = child(&dir);
            // Early kills land in start-up and the first steps; later ones mid-run.
            // A PostgreSQL run starts and commits more slowly (a server
            // round trip per record): its kills are spread over longer.
            let scale = if postgres { 5 } else { 1 };
            let delay = Duration::from_micros(
                scale
                    * rng.below(if kills_this_run % 3 == 0 {
                        15_000
                    } else {
                        150_000
                    }),
            );
            std::thread::sleep(delay);
            let out = match c.try_wait().unwrap() {
                Some(_) => Some(c.wait_with_output().unwrap()),
                None if kills < kills_wanted * 4 => {
                    kill_group(&mut c);
                    kills += 1;
                    kills_this_run += 1;
                    None
                }
                None => Some(c.wait_with_output().unwrap()),
            };
            let Some(out) = out else { continue };
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            resumed_from_checkpoints += text.matches("FROM-CHECKPOINT").count();
            assert!(
                out.status.success(),
                "the child failed: {}\n{text}{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            if let Some(step) = text
                .lines()
                .find_map(|l| l.split_once("RESOLVE ").map(|(_, s)| s.trim()))
                .map(str::to_owned)
            {
                // A deposit started and its end was not recorded: settle it
                // from the ledger, as a person would.
                resolutions += 1;
                let h = host(&dir);
                let run = the_run(&h);
                // Keys are the run's identity, then the step.
                let key = format!("{}/{step}", h.store().run(run).unwrap().uid);
                let how = match ledger(&dir).get(&key) {
                    Some(_) => {
                        // The deposit runs in a part of a `par` beside others
                        // of the Bank: its occurrence carries its lane.
                        let n: u64 = step.rsplit('#').next().unwrap().parse().unwrap();
                        let k = n % troupe_runtime::LANE_OCCURRENCES;
                        Resolution::Done(serde_json::json!(k))
                    }
                    None => Resolution::Retry,
                };
                h.resolve(run, &step, how).unwrap();
                continue;
            }
            break text;
        };
        let line = result
            .lines()
            .find_map(|l| l.split_once("RESULT ").map(|(_, r)| r))
            .unwrap_or_else(|| panic!("no result in {result:?}"));
        let got: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(got, expected, "run {runs} after {kills_this_run} kills");

        // Each deposit applied exactly once, counted by the ledger itself.
        let applied = ledger(&dir);
        assert_eq!(applied.len() as i64, LIMIT, "one deposit per round");
        assert!(
            applied.values().all(|&n| n == 1),
            "a deposit applied twice: {applied:?}"
        );

        // The recorded execution is a run of the workflow.
        let h = host(&dir);
        let run = the_run(&h);
        from_checkpoints += usize::from(
            h.store()
                .checkpoints(run)
                .unwrap()
                .is_some_and(|(seq, _)| seq > 0),
        );
        h.verify(run)
            .unwrap()
            .unwrap_or_else(|e| panic!("run {runs}: {e}"));
        let tasks = h.store().tasks(true).unwrap();
        assert_eq!(tasks.len() as i64, (LIMIT + 6) / 7, "one task per approval");
    }
    assert!(
        kills >= kills_wanted && runs >= 2,
        "{kills} kills over {runs} runs"
    );
    assert!(
        from_checkpoints * 3 >= runs,
        "only {from_checkpoints} of {runs} runs had checkpoints"
    );
    eprintln!(
        "crash test ({}): {kills} kills over {runs} runs ({from_checkpoints} with checkpoints; {resumed_from_checkpoints} finishing incarnations resumed from one; {resolutions} resolutions) in {:.1?}",
        if postgres { "PostgreSQL" } else { "SQLite" },
        started.elapsed()
    );
}

const PLAN_LIMIT: i64 = 12;
const PLAN_KILLS: usize = 40;

#[test]
fn planner_runs_killed_while_planning_and_running_the_plan_plan_once_and_deposit_once() {
    planner_crash_test(PLAN_KILLS, false);
}

/// The same on a PostgreSQL store (each run a database of its own).
#[test]
fn planner_runs_on_postgres_killed_while_planning_and_running_the_plan_plan_once_and_deposit_once()
{
    planner_crash_test(PLAN_KILLS / 2, true);
}

fn planner_crash_test(kills_wanted: usize, postgres: bool) {
    if std::env::var("TROUPE_CRASH_CHILD").is_ok() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let mut databases = Vec::new();
    let seed = std::env::var("TROUPE_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x91a9_4e11_0b5e_55ed_u64);
    let mut rng = Rng(seed);
    let (mut kills, mut in_planning, mut in_execution, mut runs) = (0usize, 0usize, 0usize, 0usize);
    let mut resolutions = 0usize;
    while kills < kills_wanted || in_planning == 0 || in_execution == 0 {
        assert!(runs < 200, "{kills} kills in {runs} runs");
        runs += 1;
        let dir = root.path().join(format!("run{runs}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("plan-mode"), "").unwrap();
        write_config(&dir);
        if postgres {
            let db = troupe_store::testing::TestDatabase::new();
            std::fs::write(dir.join("store_url"), &db.url).unwrap();
            databases.push(db);
        }
        if runs.is_multiple_of(2) {
            std::fs::write(dir.join("checkpoint_every"), format!("{}", 2 + runs % 5)).unwrap();
        }
        let mut kills_this_run = 0usize;
        let result = loop {
            let plans_before = plans_written(&dir.join("ledger"));
            let mut c = child(&dir);
            // A PostgreSQL run starts and commits more slowly: its kills
            // are spread over longer.
            let scale = if postgres { 4 } else { 1 };
            let delay = Duration::from_micros(
                scale
                    * rng.below(if kills_this_run.is_multiple_of(2) {
                        60_000
                    } else {
                        200_000
                    }),
            );
            std::thread::sleep(delay);
            let out = match c.try_wait().unwrap() {
                Some(_) => Some(c.wait_with_output().unwrap()),
                None if kills_this_run < 6 => {
                    kill_group(&mut c);
                    kills += 1;
                    kills_this_run += 1;
                    let deposits = ledger(&dir).len() as i64;
                    if deposits == 0 && plans_written(&dir.join("ledger")) > plans_before {
                        in_planning += 1;
                    } else if deposits > 0 && deposits < PLAN_LIMIT {
                        in_execution += 1;
                    }
                    None
                }
                None => Some(c.wait_with_output().unwrap()),
            };
            let Some(out) = out else { continue };
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(
                out.status.success(),
                "the child failed: {}\n{text}{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            if let Some(step) = text
                .lines()
                .find_map(|l| l.split_once("RESOLVE ").map(|(_, s)| s.trim()))
                .map(str::to_owned)
            {
                // A deposit of the plan started and its end was not
                // recorded: settle it from the ledger.
                assert!(
                    step.starts_with("Desk/solve#0/Bank/deposit#"),
                    "{step}: {text}{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                resolutions += 1;
                let h = host(&dir);
                let run = the_run(&h);
                let how = match ledger(&dir)
                    .get(&format!("{}/{step}", h.store().run(run).unwrap().uid))
                {
                    Some(_) => {
                        let k: i64 = step.rsplit('#').next().unwrap().parse().unwrap();
                        Resolution::Done(serde_json::json!(k))
                    }
                    None => Resolution::Retry,
                };
                h.resolve(run, &step, how).unwrap();
                continue;
            }
            break text;
        };
        let line = result
            .lines()
            .find_map(|l| l.split_once("RESULT ").map(|(_, r)| r))
            .unwrap_or_else(|| panic!("no result in {result:?}"));
        let got: serde_json::Value = serde_json::from_str(line).unwrap();

        // The ledger in order: the plans written, then the deposits.
        let lines: Vec<String> = std::fs::read_to_string(dir.join("ledger"))
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
        let first_deposit = lines
            .iter()
            .position(|l| !l.starts_with("PLAN "))
            .expect("deposits were made");
        assert!(
            lines[first_deposit..]
                .iter()
                .all(|l| !l.starts_with("PLAN ")),
            "run {runs}: a plan was asked for after the plan began to run:\n{}",
            lines.join("\n")
        );
        // The plan that ran is the last one written (a good one: its
        // number is not that of a first attempt).
        let last: usize = lines[first_deposit - 1]
            .strip_prefix("PLAN ")
            .unwrap()
            .parse()
            .unwrap();
        let expected = PLAN_LIMIT * (PLAN_LIMIT - 1) / 2 + last as i64;
        assert_eq!(
            got,
            serde_json::json!({ "total": expected }),
            "run {runs} after {kills_this_run} kills:\n{}",
            lines.join("\n")
        );
        let applied = ledger(&dir);
        assert_eq!(applied.len() as i64, PLAN_LIMIT, "one deposit per round");
        assert!(
            applied.values().all(|&n| n == 1),
            "a deposit applied twice: {applied:?}"
        );
        let h = host(&dir);
        let run = the_run(&h);
        let uid = h.store().run(run).unwrap().uid;
        let prefix = format!("{uid}/Desk/solve#0/Bank/deposit#");
        assert!(
            applied.keys().all(|k| k.starts_with(&prefix)),
            "{applied:?}"
        );
        h.verify(run)
            .unwrap()
            .unwrap_or_else(|e| panic!("run {runs}: {e}"));
    }
    eprintln!(
        "planner crash test ({}): {kills} kills over {runs} runs ({in_planning} while planning, {in_execution} while the plan ran; {resolutions} resolutions)",
        if postgres { "PostgreSQL" } else { "SQLite" }
    );
}
