//! `troupe bench`: measurements with a baseline in the same run.

use crate::ExitStatus;
use anyhow::Result;
use clap::{Args, Subcommand};
use std::fmt::Write as _;
use std::time::Instant;

mod causal;
mod concurrent;
mod durable;
mod engine;
mod fleet;
mod ratios;
mod sweep;
mod upgrade;

use causal::*;
use concurrent::*;
use durable::*;
use engine::*;
use fleet::*;
use ratios::*;
use sweep::*;
use upgrade::*;

#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub which: BenchCommand,
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Time `check` (parse and type-check) on a generated workflow.
    Check {
        /// Statements in the generated workflow.
        #[arg(long, default_value_t = 100_000)]
        statements: usize,
        /// Lifelines in the generated workflow.
        #[arg(long, default_value_t = 50)]
        lifelines: usize,
        /// Repetitions; the best and the median are reported.
        #[arg(long, default_value_t = 5)]
        runs: usize,
    },
    /// Lint a generated list of TOOLS tools as `troupe contracts lint` and
    /// every run do, against parsing the same list, and again at half the
    /// tools (the time must grow linearly).
    Lint {
        /// Tools in the generated list.
        #[arg(long, default_value_t = 10_000)]
        tools: usize,
        /// Repetitions; the best is reported.
        #[arg(long, default_value_t = 3)]
        runs: usize,
    },
    /// Run the two-lifeline counter loop (examples/counter.troupe) in memory,
    /// against a raw tokio-channel ping-pong in the same process.
    Counter {
        /// Loop rounds.
        #[arg(long, default_value_t = 1_000_000)]
        rounds: i64,
        /// Repetitions; the median is reported.
        #[arg(long, default_value_t = 3)]
        runs: usize,
    },
    /// Causal guards (LANGUAGE.md §7) on `troupe run`'s path: the counter
    /// loop whose guard also asks about the causal past against the same
    /// loop with its plain guard, in the same process: time per event, and
    /// the bytes of metadata each message carries (at ROUNDS and at a
    /// hundredth of it: the size must not grow with the history).
    Causal {
        /// Loop rounds (8 events each).
        #[arg(long, default_value_t = 200_000)]
        rounds: i64,
        /// Repetitions; the median is reported.
        #[arg(long, default_value_t = 3)]
        runs: usize,
    },
    /// `par` with BRANCHES counter loops (each between the same two
    /// lifelines, which run one part per branch, and again with each loop
    /// on a pair of its own) against one counter loop alone, in the same
    /// run: time per round.
    Par {
        /// Loop rounds of each branch (and of the single loop).
        #[arg(long, default_value_t = 200_000)]
        rounds: i64,
        /// Branches of the `par`.
        #[arg(long, default_value_t = 8)]
        branches: usize,
        /// Repetitions; the median is reported.
        #[arg(long, default_value_t = 3)]
        runs: usize,
    },
    /// Verify non-members: a run of nested loops whose last event is
    /// changed, checked online (the monitor) against the offline membership
    /// of the erasure (which must explore the ambiguous loop nest).
    Verify {
        /// Outer loop rounds (each round is 4 events, plus the inner loop's).
        #[arg(long, default_value_t = 1_000)]
        rounds: i64,
    },
    /// Time projection of generated workflows of 10k, 100k and 1M statements
    /// over 50 lifelines (linear growth expected), against checking them.
    Project {
        /// Lifelines of the generated workflows.
        #[arg(long, default_value_t = 50)]
        lifelines: usize,
    },
    /// The counter loop recorded durably (FULL and NORMAL) against raw
    /// single-row SQLite commits, and many concurrent durable runs whose
    /// every step is an effect.
    Durable {
        /// Loop rounds of the durable counter loop.
        #[arg(long, default_value_t = 200_000)]
        rounds: i64,
        /// Concurrent durable runs of the effect workflow.
        #[arg(long, default_value_t = 1_000)]
        runs: usize,
        /// Where the benchmark stores go (default: a temporary directory).
        #[arg(long, value_name = "DIR")]
        dir: Option<std::path::PathBuf>,
    },
    /// A worker's sweep (due deadlines, due timers, due reminders), and a
    /// start's search for a run to continue (`troupe run FILE --store`),
    /// on an empty store and after HISTORY finished runs that slept and
    /// had a reminded task answered: their cost must not grow with the
    /// history.
    Sweep {
        /// Finished runs written before the second measurement.
        #[arg(long, default_value_t = 2_000)]
        history: usize,
        /// Sweeps measured each time (the median is reported).
        #[arg(long, default_value_t = 200)]
        samples: usize,
    },
    /// Resume after a long history: `troupe run --store` counts ROUNDS
    /// rounds and waits for a person; it is killed (SIGKILL), the task is
    /// answered, and `troupe resume` finishes the run — once from the
    /// run's checkpoint, once from a copy of the store without
    /// checkpoints (a replay of the whole history). Each is a child
    /// process of the real binary; time and peak resident memory of each.
    Resume {
        /// Rounds before the run waits (8 events each).
        #[arg(long, default_value_t = 1_000_000)]
        rounds: i64,
        /// With --history-keep EVENTS: the store stays bounded.
        #[arg(long, value_name = "EVENTS")]
        history_keep: Option<u64>,
        /// Where the stores go (default: a temporary directory).
        #[arg(long, value_name = "DIR")]
        dir: Option<std::path::PathBuf>,
    },
    /// Move a run with a long history to a new version: `troupe run
    /// --store` counts ROUNDS rounds and waits for a person (killed there),
    /// then `troupe upgrade --dry-run`, `troupe upgrade` and the resume
    /// under the new version, against `troupe verify` of the same run.
    /// Each is a child process of the real binary; time and peak resident
    /// memory of each.
    Upgrade {
        /// Rounds before the run waits (8 events each).
        #[arg(long, default_value_t = 100_000)]
        rounds: i64,
        /// Where the store goes (default: a temporary directory).
        #[arg(long, value_name = "DIR")]
        dir: Option<std::path::PathBuf>,
    },
    /// A fleet on a PostgreSQL store: RUNS queued runs driven by 1, 2 and 4
    /// `troupe worker` processes (child processes of this binary), for an
    /// effect-heavy workflow (4 effects a run) and a pure one (a 20-round
    /// loop), against the same runs in one process on an SQLite file; and
    /// the latency from a person's answer to the end of the run it wakes.
    /// Each measurement gets a database of its own on the server of
    /// `--store` (its user must be allowed to create databases).
    Fleet {
        /// A PostgreSQL server, e.g. postgres://troupe@127.0.0.1:54329/postgres.
        #[arg(long, value_name = "URL")]
        store: String,
        /// Queued runs per measurement.
        #[arg(long, default_value_t = 2_000)]
        runs: i64,
        /// Worker counts to measure.
        #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
        workers: Vec<usize>,
        /// Answered tasks for the latency figure.
        #[arg(long, default_value_t = 200)]
        answers: usize,
    },
    /// The benchmarks' ratios to their baselines, in a short mode (the
    /// counter loop through `troupe run` over a plain tokio ping-pong, the
    /// durable counter loop and concurrent durable effect runs over raw
    /// single-row commits, concurrent runs over their critical path), each
    /// the best of three. With --check, exits 1 when one is worse than
    /// 1.5x its recorded value: what CI runs, so that a change that halves
    /// throughput fails its commit.
    Ratios {
        /// Recorded ratios (JSON, per build profile) to check against.
        #[arg(long, value_name = "FILE")]
        check: Option<std::path::PathBuf>,
        /// Write the measured ratios into FILE (under this build's profile).
        #[arg(long, value_name = "FILE")]
        record: Option<std::path::PathBuf>,
        /// One JSON object on stdout instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Many concurrent runs of a three-lifeline workflow whose mock model
    /// sleeps per call: wall time against the critical path of one run, and
    /// memory per run.
    Concurrent {
        /// Concurrent runs.
        #[arg(long, default_value_t = 10_000)]
        runs: usize,
        /// Mock model latency per call, in milliseconds.
        #[arg(long, default_value_t = 50)]
        latency_ms: u64,
    },
}

pub fn run(args: &BenchArgs) -> Result<ExitStatus> {
    match &args.which {
        BenchCommand::Check {
            statements,
            lifelines,
            runs,
        } => bench_check(*statements, *lifelines, *runs),
        BenchCommand::Counter { rounds, runs } => bench_counter(*rounds, *runs),
        BenchCommand::Causal { rounds, runs } => bench_causal(*rounds, *runs),
        BenchCommand::Lint { tools, runs } => super::bench_lint::bench_lint(*tools, *runs),
        BenchCommand::Par {
            rounds,
            branches,
            runs,
        } => bench_par(*rounds, *branches, *runs),
        BenchCommand::Concurrent { runs, latency_ms } => bench_concurrent(*runs, *latency_ms),
        BenchCommand::Durable { rounds, runs, dir } => {
            bench_durable(*rounds, *runs, dir.as_deref())
        }
        BenchCommand::Project { lifelines } => bench_project(*lifelines),
        BenchCommand::Ratios {
            check,
            record,
            json,
        } => bench_ratios(check.as_deref(), record.as_deref(), *json),
        BenchCommand::Sweep { history, samples } => bench_sweep(*history, *samples),
        BenchCommand::Verify { rounds } => bench_verify(*rounds),
        BenchCommand::Resume {
            rounds,
            history_keep,
            dir,
        } => bench_resume(*rounds, *history_keep, dir.as_deref()),
        BenchCommand::Upgrade { rounds, dir } => bench_upgrade(*rounds, dir.as_deref()),
        BenchCommand::Fleet {
            store,
            runs,
            workers,
            answers,
        } => bench_fleet(store, *runs, workers, *answers),
    }
}

/// A child process of this binary, with its wall time and peak resident
/// memory (VmHWM, sampled from /proc until it exits or `until` holds).
struct Child {
    elapsed: std::time::Duration,
    peak_kib: u64,
    status: Option<std::process::ExitStatus>,
    stderr: String,
}

/// A `measure_child` stop: true once the run in the store at `db` waits
/// for a person (looked at every 25th poll, about every 50 ms).
fn waits_for_a_person(db: &std::path::Path) -> impl FnMut() -> bool + '_ {
    use troupe_store::{Durability, Store};
    let store = std::cell::OnceCell::new();
    let mut polls = 0u32;
    move || {
        polls += 1;
        if !polls.is_multiple_of(25) {
            return false;
        }
        if store.get().is_none()
            && let Ok(s) = Store::open(db, Durability::Normal)
        {
            let _ = store.set(s);
        }
        store
            .get()
            .and_then(|s: &Store| s.tasks(false).ok())
            .is_some_and(|t| !t.is_empty())
    }
}

fn measure_child(
    args: &[&std::ffi::OsStr],
    dir: &std::path::Path,
    mut until: impl FnMut() -> bool,
) -> Result<Child> {
    use std::io::Read as _;
    let t = Instant::now();
    let mut child = std::process::Command::new(std::env::current_exe()?)
        .args(args)
        .current_dir(dir)
        // A killed child's lease is taken at once by the next (its
        // process is gone, which the claim sees on this machine).
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak_kib = 0;
    let status = loop {
        // Zero once the process is gone: keep the last reading.
        let (_, kib) = status_kib(&status_path);
        if kib > 0 {
            peak_kib = kib;
        }
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if until() {
            // A crash: SIGKILL, no chance to clean up.
            child.kill()?;
            child.wait()?;
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    let elapsed = t.elapsed();
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut stderr);
    }
    Ok(Child {
        elapsed,
        peak_kib,
        status,
        stderr,
    })
}

pub const COUNTER_SOURCE: &str = include_str!("../../../../../examples/counter.troupe");

fn median(mut v: Vec<std::time::Duration>) -> std::time::Duration {
    v.sort();
    v[v.len() / 2]
}

/// This thread's CPU time so far (Linux `/proc/thread-self/schedstat`;
/// zero where it cannot be read).
fn thread_cpu() -> std::time::Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .map_or(std::time::Duration::ZERO, std::time::Duration::from_nanos)
}

/// This process's resident memory and its peak, in KiB (Linux).
pub(crate) fn resident_kib() -> (u64, u64) {
    status_kib("/proc/self/status")
}

/// Resident memory and its peak (VmRSS, VmHWM) from a `/proc/PID/status`,
/// in KiB; zeros when it cannot be read.
fn status_kib(path: &str) -> (u64, u64) {
    let status = std::fs::read_to_string(path).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Every step is an effect: each costs two durable commits (started, finished).
const EFFECTS_SOURCE: &str = r#"
effect touch(n: Int) -> Int extern
workflow steps(n: Int @ A) {
  lifelines A, B, C
  act A: a = touch(n)
  msg A(a) -> B(b)
  act B: c = touch(b)
  msg B(c) -> C(d)
  act C: e = touch(d)
  msg C(e) -> A(f)
  act A: g = touch(f)
  return g @ A
}
"#;

/// A host over `store` for the benchmarks: the same lifecycle as `troupe
/// run --store`, with the benchmark's own extern bodies.
fn bench_host(
    store: troupe_store::Store,
    externs: troupe_runtime::Externs,
    dir: &std::path::Path,
) -> troupe_host::Host {
    // The benchmark's own directory: no `troupe.toml` of the user's applies.
    let mut config = troupe_host::HostConfig::new(dir.to_owned());
    config.externs = externs;
    troupe_host::Host::new(store, config, std::sync::Arc::new(troupe_host::NoTools))
}

/// Starts a run of `compiled` through the host and drives it to its end;
/// returns its results.
async fn host_run(
    host: &troupe_host::Host,
    compiled: &troupe_host::Compiled,
    inputs: Vec<troupe_check::Value>,
) -> Result<Vec<(String, troupe_check::Value)>> {
    let settings = troupe_host::RunSettings {
        llm: Some("mock".into()),
        durability: match host.store().durability() {
            troupe_store::Durability::Full => troupe_host::DurabilitySetting::Full,
            troupe_store::Durability::Normal => troupe_host::DurabilitySetting::Normal,
        },
        ..troupe_host::RunSettings::default()
    };
    host_run_with(host, compiled, inputs, &settings).await
}

/// [`host_run`] with these settings.
async fn host_run_with(
    host: &troupe_host::Host,
    compiled: &troupe_host::Compiled,
    inputs: Vec<troupe_check::Value>,
    settings: &troupe_host::RunSettings,
) -> Result<Vec<(String, troupe_check::Value)>> {
    let started = host.start(compiled, inputs, settings, troupe_host::StartPolicy::New)?;
    let finished = host
        .drive(started.run, &troupe_host::Overrides::default(), None)
        .await?;
    match finished.end {
        troupe_host::RunEnd::Done {
            results, verified, ..
        } => {
            verified.map_err(anyhow::Error::msg)?;
            Ok(results)
        }
        other => anyhow::bail!("the run ended with {other:?}"),
    }
}

fn compile(source: &str) -> Result<troupe_host::Compiled> {
    Ok(troupe_host::Compiled::from_source(
        source.to_owned(),
        "bench.troupe",
        std::path::Path::new("."),
        None,
    )?)
}

/// The plainest code for the counter loop's work, the baseline of
/// `troupe bench counter` and of the README: two tasks spawned on the
/// runtime bounce a counter over one unbounded `mpsc` channel each way.
pub(super) async fn raw_ping_pong(rounds: i64) -> i64 {
    let (to_pong, mut pong_rx) = tokio::sync::mpsc::unbounded_channel::<i64>();
    let (to_ping, mut ping_rx) = tokio::sync::mpsc::unbounded_channel::<i64>();
    let pong = tokio::spawn(async move {
        while let Some(n) = pong_rx.recv().await {
            if to_ping.send(n + 1).is_err() {
                break;
            }
        }
    });
    let ping = tokio::spawn(async move {
        let mut k = 0;
        while k < rounds {
            if to_pong.send(k).is_err() {
                break;
            }
            match ping_rx.recv().await {
                Some(n) => k = n,
                None => break,
            }
        }
        k
    });
    let k = ping.await.unwrap_or(0);
    let _ = pong.await;
    k
}

#[cfg(test)]
mod tests {
    #[test]
    fn par_counter_workflows_check_clean() {
        for shared in [true, false] {
            let src = super::par_counter_source(8, shared);
            let (program, diagnostics) = troupe_check::check_text(&src);
            assert!(diagnostics.is_empty(), "{src}\n{diagnostics:?}");
            assert!(program.is_some());
        }
    }

    #[test]
    fn generated_workflow_checks_clean() {
        let src = super::generate_workflow(2_000, 7);
        let (program, diagnostics) = troupe_check::check_text(&src);
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        assert!(program.is_some());
    }
}
