//! `troupe bench`: measurements with a baseline in the same run.

use crate::ExitStatus;
use anyhow::Result;
use clap::{Args, Subcommand};
use std::fmt::Write as _;
use std::time::Instant;

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
        BenchCommand::Verify { rounds } => bench_verify(*rounds),
        BenchCommand::Resume {
            rounds,
            history_keep,
            dir,
        } => bench_resume(*rounds, *history_keep, dir.as_deref()),
        BenchCommand::Fleet {
            store,
            runs,
            workers,
            answers,
        } => bench_fleet(store, *runs, workers, *answers),
    }
}

/// Counts, waits for a person, counts a little more.
const WAITING_COUNTER: &str = r#"
human go_on(k: Int) -> Bool { ask: "Go on after {k} rounds?" }

workflow counted(limit: Int @ Ping) {
  lifelines Ping, Pong
  act Ping: k = 0
  while k < limit @ Ping {
    msg Ping(k) -> Pong(n)
    act Pong: n = n + 1
    msg Pong(n) -> Ping(k)
  }
  act Ping: ok = go_on(k)
  while k < limit + 1000 @ Ping {
    msg Ping(k) -> Pong(n)
    act Pong: n = n + 1
    msg Pong(n) -> Ping(k)
  }
  return k @ Ping
}
"#;

/// A child process of this binary, with its wall time and peak resident
/// memory (VmHWM, sampled from /proc until it exits or `until` holds).
struct Child {
    elapsed: std::time::Duration,
    peak_kib: u64,
    status: Option<std::process::ExitStatus>,
    stderr: String,
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

fn bench_resume(
    rounds: i64,
    history_keep: Option<u64>,
    dir: Option<&std::path::Path>,
) -> Result<ExitStatus> {
    use std::ffi::OsStr;
    use troupe_store::{Durability, Store};
    let dir = dir.map_or_else(
        || std::env::temp_dir().join(format!("troupe-bench-resume-{}", std::process::id())),
        |d| d.to_owned(),
    );
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("counted.troupe"), WAITING_COUNTER)?;
    let db = dir.join("resume.db");
    let replay_db = dir.join("replay.db");
    for p in [&db, &replay_db] {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", p.display()));
        }
    }
    crate::outln!(
        "troupe bench resume: {rounds} rounds, then a wait for a person; files in {}",
        dir.display()
    );
    let limit = format!("limit={rounds}");
    let keep = history_keep.map(|k| k.to_string());
    let mut run_args: Vec<&OsStr> = vec![
        OsStr::new("run"),
        OsStr::new("counted.troupe"),
        OsStr::new("--store"),
        db.as_os_str(),
        OsStr::new("-i"),
        OsStr::new(&limit),
    ];
    if let Some(k) = &keep {
        run_args.extend([OsStr::new("--history-keep"), OsStr::new(k)]);
    }
    let store = std::cell::OnceCell::new();
    let mut polls = 0u32;
    let waiting = || {
        polls += 1;
        if !polls.is_multiple_of(25) {
            return false;
        }
        if store.get().is_none()
            && let Ok(s) = Store::open(&db, Durability::Normal)
        {
            let _ = store.set(s);
        }
        store
            .get()
            .and_then(|s: &Store| s.tasks(false).ok())
            .is_some_and(|t| !t.is_empty())
    };
    let first = measure_child(&run_args, &dir, waiting)?;
    anyhow::ensure!(
        first.status.is_none(),
        "the run ended before it waited: {}",
        first.stderr
    );
    crate::outln!(
        "  troupe run --store (FULL), killed at the wait  {:>8.2?}  {:>10.0} rounds/s  peak {:>7} KiB",
        first.elapsed,
        rounds as f64 / first.elapsed.as_secs_f64(),
        first.peak_kib
    );
    let size = |p: &std::path::Path| {
        ["", "-wal"]
            .iter()
            .filter_map(|s| std::fs::metadata(format!("{}{s}", p.display())).ok())
            .map(|m| m.len())
            .sum::<u64>()
    };
    // The baseline: the same store without its checkpoints.
    {
        // Opening and closing the store checkpoints its WAL into the file.
        drop(Store::open(&db, Durability::Full)?);
        std::fs::copy(&db, &replay_db)?;
        let _ = std::fs::copy(
            format!("{}-wal", db.display()),
            format!("{}-wal", replay_db.display()),
        );
        Store::open(&replay_db, Durability::Full)?.forget_checkpoints(1)?;
    }
    let events = Store::open(&db, Durability::Normal)?.run(1)?.events;
    let mut results = Vec::new();
    for (label, path) in [
        ("from its checkpoint", &db),
        ("replaying the history", &replay_db),
    ] {
        let answer = measure_child(
            &[
                OsStr::new("answer"),
                OsStr::new("task-1"),
                OsStr::new("--yes"),
                OsStr::new("--store"),
                path.as_os_str(),
            ],
            &dir,
            || false,
        )?;
        anyhow::ensure!(
            answer.status.is_some_and(|s| s.success()),
            "troupe answer failed: {}",
            answer.stderr
        );
        let resumed = measure_child(
            &[
                OsStr::new("resume"),
                OsStr::new("run-1"),
                OsStr::new("--store"),
                path.as_os_str(),
            ],
            &dir,
            || false,
        )?;
        anyhow::ensure!(
            resumed.status.is_some_and(|s| s.success()),
            "troupe resume failed: {}",
            resumed.stderr
        );
        crate::outln!(
            "  troupe resume {label:<22}  {:>8.2?}  peak {:>7} KiB",
            resumed.elapsed,
            resumed.peak_kib
        );
        results.push(resumed);
    }
    crate::outln!(
        "  resume from the checkpoint: {:.1}x faster, {:.1}x less memory than the replay of {events} events; store {:.1} MB",
        results[1].elapsed.as_secs_f64() / results[0].elapsed.as_secs_f64(),
        results[1].peak_kib as f64 / results[0].peak_kib.max(1) as f64,
        size(&db) as f64 / 1e6
    );
    Ok(ExitStatus::Success)
}

/// Nested loops whose erasure is ambiguous: without the decisions, B cannot
/// tell an inner iteration from an outer one.
const NESTED_SOURCE: &str = r#"
workflow nested(n: Int @ A) {
  lifelines A, B
  act A: i = 0
  while i < n @ A {
    act A: j = 0
    while j < 2 @ A {
      msg A(j) -> B(x)
      act A: j = j + 1
    }
    act A: i = i + 1
  }
}
"#;

fn bench_verify(rounds: i64) -> Result<ExitStatus> {
    use anyhow::Context;
    use troupe_check::Value;
    use troupe_msc::{Event, MemberOptions, Message, Semantics};
    use troupe_runtime::{EngineBuilder, RunOptions};
    let engine = EngineBuilder::from_source(NESTED_SOURCE)
        .map_err(|d| anyhow::anyhow!("{d:?}"))?
        .build()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let outcome = rt.block_on(engine.run(
        vec![Value::Int(rounds)],
        RunOptions {
            trace: true,
            ..RunOptions::default()
        },
    ))?;
    let mut trace = outcome.trace.context("no trace")?;
    // A non-member found only at the end: B's last receive claims another
    // statement, so every event before it is checked first.
    let last = trace
        .entries
        .iter_mut()
        .rev()
        .find(|e| {
            matches!(
                e.event,
                Event::Recv {
                    msg: Message::Data { .. },
                    ..
                }
            )
        })
        .context("no receive")?;
    if let Event::Recv {
        msg: Message::Data { stmt, .. },
        ..
    } = &mut last.event
    {
        stmt.0 += 1;
    }
    let events = trace.entries.len();
    let t = Instant::now();
    let online = engine.verify("bench", &trace);
    let online_time = t.elapsed();
    anyhow::ensure!(online.is_err(), "the monitor accepted a non-member");
    let semantics = Semantics::new(engine.program(), engine.workflow())?;
    let exec = trace.execution(engine.workflow().lifelines.len());
    let t = Instant::now();
    let offline = semantics.check(&exec.erase_control(), &MemberOptions::default());
    let offline_time = t.elapsed();
    anyhow::ensure!(offline.is_err(), "the offline check accepted a non-member");
    crate::outln!(
        "troupe bench verify: nested loops, {rounds} rounds, {events} events, the last one wrong"
    );
    crate::outln!(
        "  online monitor (control mode, what `troupe run` and `troupe verify` use)  {online_time:>10.2?}  rejected"
    );
    crate::outln!(
        "  offline membership of the erasure (the previous `verify`)                 {offline_time:>10.2?}  rejected"
    );
    Ok(ExitStatus::Success)
}

/// A deterministic workflow of about `statements` statements over `lifelines`
/// lifelines: messages, actions, and nested owned `if`s and `while`s.
pub fn generate_workflow(statements: usize, lifelines: usize) -> String {
    let lifelines = lifelines.max(2);
    let mut src = String::with_capacity(statements * 40);
    src.push_str(
        "pure step(n: Int) -> Int = n + 1\n\nworkflow generated(seed: Int @ L0) {\n  lifelines ",
    );
    let names: Vec<String> = (0..lifelines).map(|i| format!("L{i}")).collect();
    src.push_str(&names.join(", "));
    src.push('\n');
    // Give every lifeline a counter first.
    for i in 1..lifelines {
        let _ = writeln!(src, "  msg L0(seed) -> L{i}(n)");
    }
    src.push_str("  act L0: n = seed\n");
    let mut emitted = lifelines;
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut depth = 0usize;
    while emitted < statements {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let a = (state % lifelines as u64) as usize;
        let b = (a + 1 + (state >> 8) as usize % (lifelines - 1)) % lifelines;
        let indent = "  ".repeat(depth + 1);
        match (state >> 20) % 10 {
            0..=3 => {
                let _ = writeln!(src, "{indent}msg L{a}(n) -> L{b}(n)");
            }
            4..=6 => {
                let _ = writeln!(src, "{indent}act L{a}: n = step(n)");
            }
            7 if depth < 8 => {
                let _ = writeln!(src, "{indent}if n > {} @ L{a} {{", state % 100);
                depth += 1;
            }
            8 if depth < 8 => {
                let _ = writeln!(src, "{indent}while n < {} @ L{a} {{", state % 100);
                depth += 1;
            }
            _ if depth > 0 => {
                depth -= 1;
                let _ = writeln!(src, "{}}}", "  ".repeat(depth + 1));
            }
            _ => {
                let _ = writeln!(src, "{indent}act L{a}: n = n * 2");
            }
        }
        emitted += 1;
    }
    while depth > 0 {
        depth -= 1;
        let _ = writeln!(src, "{}}}", "  ".repeat(depth + 1));
    }
    src.push_str("  return n @ L0\n}\n");
    src
}

fn bench_check(statements: usize, lifelines: usize, runs: usize) -> Result<ExitStatus> {
    let src = generate_workflow(statements, lifelines);
    let runs = runs.max(1);
    let mut parse_times = Vec::with_capacity(runs);
    let mut check_times = Vec::with_capacity(runs);
    let mut lex_times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        let tokens = troupe_syntax::lexer::lex(&src, &mut Vec::new());
        lex_times.push(t.elapsed());
        std::hint::black_box(tokens);
        let t = Instant::now();
        let parsed = troupe_syntax::parse(&src);
        parse_times.push(t.elapsed());
        let t = Instant::now();
        let (program, diagnostics) = troupe_check::check(&parsed.file, &src);
        check_times.push(t.elapsed());
        anyhow::ensure!(
            program.is_some(),
            "the generated workflow does not check: {:?}",
            diagnostics.first()
        );
    }
    let stats = |v: &mut Vec<std::time::Duration>| {
        v.sort();
        (v[0], v[v.len() / 2])
    };
    let (lex_best, lex_median) = stats(&mut lex_times);
    let (parse_best, parse_median) = stats(&mut parse_times);
    let (check_best, check_median) = stats(&mut check_times);
    crate::outln!(
        "troupe bench check: {statements} statements, {lifelines} lifelines, {} bytes, {runs} runs",
        src.len()
    );
    crate::outln!(
        "  lex only (baseline)  best {:>9.2?}  median {:>9.2?}",
        lex_best,
        lex_median
    );
    crate::outln!(
        "  parse (incl. lex)    best {:>9.2?}  median {:>9.2?}",
        parse_best,
        parse_median
    );
    crate::outln!(
        "  check (after parse)  best {:>9.2?}  median {:>9.2?}",
        check_best,
        check_median
    );
    let total = parse_median + check_median;
    crate::outln!(
        "  parse + check        median {:>9.2?}  ({:.1} M statements/s, {:.1}x the lexer alone)",
        total,
        statements as f64 / total.as_secs_f64() / 1e6,
        total.as_secs_f64() / lex_median.as_secs_f64().max(1e-9)
    );
    Ok(ExitStatus::Success)
}

pub const COUNTER_SOURCE: &str = include_str!("../../../../examples/counter.troupe");

fn median(mut v: Vec<std::time::Duration>) -> std::time::Duration {
    v.sort();
    v[v.len() / 2]
}

fn bench_counter(rounds: i64, runs: usize) -> Result<ExitStatus> {
    use troupe_check::Value;
    use troupe_runtime::{EngineBuilder, RunOptions};
    let runs = runs.max(1);
    let engine = EngineBuilder::from_source(COUNTER_SOURCE)
        .map_err(|d| anyhow::anyhow!("examples/counter.troupe does not check: {d:?}"))?
        .build()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut troupe_times = Vec::new();
    let mut raw_times = Vec::new();
    let mut raw_multi_times = Vec::new();
    let multi = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    for _ in 0..runs {
        let t = Instant::now();
        let options = RunOptions {
            trace: false,
            ..RunOptions::default()
        };
        let outcome = rt.block_on(engine.run(vec![Value::Int(rounds)], options))?;
        troupe_times.push(t.elapsed());
        anyhow::ensure!(
            outcome.results[0].1 == Value::Int(rounds),
            "wrong result {:?}",
            outcome.results
        );
        let t = Instant::now();
        let got = rt.block_on(raw_ping_pong(rounds));
        raw_times.push(t.elapsed());
        anyhow::ensure!(got == rounds);
        let t = Instant::now();
        let got =
            multi.block_on(async { tokio::spawn(raw_ping_pong(rounds.min(200_000))).await })?;
        raw_multi_times.push(
            t.elapsed()
                .mul_f64(rounds as f64 / rounds.min(200_000) as f64),
        );
        anyhow::ensure!(got == rounds.min(200_000));
    }
    let rate = |d: std::time::Duration| rounds as f64 / d.as_secs_f64();
    let (ours, raw, raw_multi) = (
        median(troupe_times),
        median(raw_times),
        median(raw_multi_times),
    );
    crate::outln!("troupe bench counter: {rounds} rounds, {runs} runs (median)");
    crate::outln!(
        "  troupe counter loop (trace off)       {:>8.2?}  {:>12.0} rounds/s",
        ours,
        rate(ours)
    );
    crate::outln!(
        "  raw tokio ping-pong, current-thread   {:>8.2?}  {:>12.0} rounds/s",
        raw,
        rate(raw)
    );
    crate::outln!(
        "  raw tokio ping-pong, multi-thread     {:>8.2?}  {:>12.0} rounds/s (extrapolated from 200k)",
        raw_multi,
        rate(raw_multi)
    );
    crate::outln!(
        "  ratio troupe / raw current-thread: {:.2}x",
        rate(ours) / rate(raw)
    );
    crate::outln!(
        "  ratio troupe / ZipperGen in memory (~11,000 rounds/s): {:.0}x",
        rate(ours) / 11_000.0
    );
    // The path users run: `troupe run` (verified online, no trace kept).
    let compiled = compile(COUNTER_SOURCE)?;
    let settings = troupe_host::RunSettings {
        llm: Some("mock".into()),
        ..troupe_host::RunSettings::default()
    };
    let rss_before = resident_kib();
    let t = Instant::now();
    let (_, outcome, watched) = crate::commands::run::execute(
        &compiled,
        vec![Value::Int(rounds)],
        &settings,
        std::sync::Arc::new(troupe_runtime::NoHumans),
        None,
        true,
    )??;
    let elapsed = t.elapsed();
    let events = watched.verdict(false).map_err(anyhow::Error::msg)?;
    anyhow::ensure!(outcome?.results[0].1 == Value::Int(rounds));
    crate::outln!(
        "  through `troupe run` (verified online) {:>8.2?}  {:>12.0} rounds/s; {events} events checked; resident {} KiB before, {} KiB after, peak {} KiB",
        elapsed,
        rate(elapsed),
        rss_before.0,
        resident_kib().0,
        resident_kib().1
    );
    Ok(ExitStatus::Success)
}

/// `branches` counter loops in one `par`: all between Ping and Pong
/// (`shared`: each lifeline runs one part per branch), or each between a
/// pair of its own. The result is the sum of the counters.
pub fn par_counter_source(branches: usize, shared: bool) -> String {
    let mut s = String::from("workflow par_counter(limit: Int @ Ping) {\n  par {\n");
    for b in 0..branches {
        if b > 0 {
            s.push_str("  } and {\n");
        }
        let (ping, pong) = if shared {
            ("Ping".to_owned(), "Pong".to_owned())
        } else if b == 0 {
            ("Ping".to_owned(), "Pong0".to_owned())
        } else {
            (format!("Ping{b}"), format!("Pong{b}"))
        };
        if !shared && b > 0 {
            let _ = writeln!(s, "    msg Ping(limit) -> {ping}(limit{b})");
        }
        let limit = if !shared && b > 0 {
            format!("limit{b}")
        } else {
            "limit".to_owned()
        };
        let _ = writeln!(s, "    act {ping}: k{b} = 0");
        let _ = writeln!(s, "    while k{b} < {limit} @ {ping} {{");
        let _ = writeln!(s, "      msg {ping}(k{b}) -> {pong}(n{b})");
        let _ = writeln!(s, "      act {pong}: n{b} = n{b} + 1");
        let _ = writeln!(s, "      msg {pong}(n{b}) -> {ping}(k{b})");
        s.push_str("    }\n");
        if !shared && b > 0 {
            let _ = writeln!(s, "    msg {ping}(k{b}) -> Ping(k{b})");
        }
    }
    s.push_str("  }\n  act Ping: total = 0");
    for b in 0..branches {
        let _ = write!(s, " + k{b}");
    }
    s.push_str("\n  return total @ Ping\n}\n");
    s
}

fn bench_par(rounds: i64, branches: usize, runs: usize) -> Result<ExitStatus> {
    use troupe_check::Value;
    use troupe_runtime::{EngineBuilder, RunOptions};
    let (runs, branches) = (runs.max(1), branches.max(1));
    let engine = |source: &str| -> Result<troupe_runtime::Engine> {
        Ok(EngineBuilder::from_source(source)
            .map_err(|d| anyhow::anyhow!("the benchmark workflow does not check: {d:?}"))?
            .build()?)
    };
    let single = engine(COUNTER_SOURCE)?;
    let shared = engine(&par_counter_source(branches, true))?;
    let pairs = engine(&par_counter_source(branches, false))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut times: [Vec<std::time::Duration>; 3] = Default::default();
    let mut cpu: [Vec<std::time::Duration>; 3] = Default::default();
    for _ in 0..runs {
        for (i, (e, total)) in [
            (&single, rounds),
            (&shared, rounds * branches as i64),
            (&pairs, rounds * branches as i64),
        ]
        .into_iter()
        .enumerate()
        {
            let options = RunOptions {
                trace: false,
                ..RunOptions::default()
            };
            let (t, c) = (Instant::now(), thread_cpu());
            let outcome = rt.block_on(e.run(vec![Value::Int(rounds)], options))?;
            times[i].push(t.elapsed());
            cpu[i].push(thread_cpu().saturating_sub(c));
            anyhow::ensure!(
                outcome.results[0].1 == Value::Int(total),
                "wrong result {:?}",
                outcome.results
            );
        }
    }
    let [one, sh, pa] = times.map(median);
    let [c_one, c_sh, c_pa] = cpu.map(median);
    let per = |d: std::time::Duration, n: i64| d.as_secs_f64() * 1e9 / n as f64;
    let total = rounds * branches as i64;
    crate::outln!(
        "troupe bench par: {branches} branches × {rounds} rounds, {runs} runs (median; trace off)"
    );
    crate::outln!(
        "  one counter loop (baseline)          {:>8.2?}  {:>7.0} ns/round  {:>12.0} rounds/s",
        one,
        per(one, rounds),
        rounds as f64 / one.as_secs_f64()
    );
    crate::outln!(
        "  par, {branches} loops on one pair (parts)  {:>8.2?}  {:>7.0} ns/round  {:>12.0} rounds/s",
        sh,
        per(sh, total),
        total as f64 / sh.as_secs_f64()
    );
    crate::outln!(
        "  par, {branches} loops on {branches} pairs         {:>8.2?}  {:>7.0} ns/round  {:>12.0} rounds/s",
        pa,
        per(pa, total),
        total as f64 / pa.as_secs_f64()
    );
    crate::outln!(
        "  per round against the single loop (wall): {:.2}x (one pair), {:.2}x ({branches} pairs); below 1 is faster",
        per(sh, total) / per(one, rounds),
        per(pa, total) / per(one, rounds)
    );
    if c_one > std::time::Duration::ZERO {
        // The run is one thread's work: its CPU time does not count the
        // time other processes of a loaded machine took.
        crate::outln!(
            "  CPU time of the run's thread: {:.0} / {:.0} / {:.0} ns per round; against the single loop {:.2}x (one pair), {:.2}x ({branches} pairs)",
            per(c_one, rounds),
            per(c_sh, total),
            per(c_pa, total),
            per(c_sh, total) / per(c_one, rounds),
            per(c_pa, total) / per(c_one, rounds)
        );
    }
    Ok(ExitStatus::Success)
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

fn bench_project(lifelines: usize) -> Result<ExitStatus> {
    crate::outln!(
        "troupe bench project: generated workflows over {lifelines} lifelines (median of 3)"
    );
    crate::outln!(
        "  {:>10}  {:>12}  {:>12}  {:>14}  {:>12}",
        "statements",
        "check",
        "project",
        "ns/statement",
        "local size"
    );
    for statements in [10_000usize, 100_000, 1_000_000] {
        let src = generate_workflow(statements, lifelines);
        let (program, diagnostics) = troupe_check::check_text(&src);
        let program = program.ok_or_else(|| {
            anyhow::anyhow!(
                "generated workflow does not check: {:?}",
                diagnostics.first()
            )
        })?;
        let wf = &program.workflows[0];
        let mut check_times = Vec::new();
        let mut project_times = Vec::new();
        let mut size = 0;
        for _ in 0..3 {
            let t = Instant::now();
            std::hint::black_box(troupe_check::check_text(&src));
            check_times.push(t.elapsed());
            let t = Instant::now();
            let projection = troupe_project::project(&program, wf)?;
            project_times.push(t.elapsed());
            size = projection.size();
        }
        let (check, project) = (median(check_times), median(project_times));
        crate::outln!(
            "  {statements:>10}  {check:>12.2?}  {project:>12.2?}  {:>14.0}  {size:>12}",
            project.as_nanos() as f64 / statements as f64
        );
    }
    Ok(ExitStatus::Success)
}

/// Three lifelines, two model calls on the critical path.
const PIPELINE_SOURCE: &str = r#"
llm draft(topic: Text) -> Text { prompt: "Draft a note on {topic}" }
llm review(text: Text) -> Bool { prompt: "Is this fine? {text}" }
workflow pipeline(topic: Text @ Client) {
  lifelines Client, Writer, Reviewer
  msg Client(topic) -> Writer(topic)
  act Writer: text = draft(topic)
  msg Writer(text) -> Reviewer(text)
  act Reviewer: ok = review(text)
  msg Reviewer(ok) -> Client(ok)
  return ok @ Client
}
"#;

fn bench_concurrent(runs: usize, latency_ms: u64) -> Result<ExitStatus> {
    use std::sync::Arc;
    use troupe_check::Value;
    use troupe_runtime::{EngineBuilder, RunOptions};
    let latency = std::time::Duration::from_millis(latency_ms);
    let mock = Arc::new(troupe_llm::MockBackend::with_latency(latency));
    let engine = EngineBuilder::from_source(PIPELINE_SOURCE)
        .map_err(|d| anyhow::anyhow!("bench workflow does not check: {d:?}"))?
        .llm(mock)
        .build()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let (rss_before, _) = resident_kib();
    let t = Instant::now();
    // Spawn from a worker thread, as a server accepting runs would.
    let completed = rt.block_on(rt.spawn(async move {
        let mut set = tokio::task::JoinSet::new();
        for i in 0..runs {
            let engine = engine.clone();
            set.spawn(async move {
                let options = RunOptions {
                    run_id: format!("r{i}"),
                    seed: i as u64,
                    trace: false,
                    ..RunOptions::default()
                };
                engine.run(vec![Value::text("topic")], options).await
            });
        }
        let spawned = t.elapsed();
        let mut ok = 0usize;
        while let Some(r) = set.join_next().await {
            if matches!(r, Ok(Ok(_))) {
                ok += 1;
            }
        }
        (ok, spawned)
    }))?;
    let (completed, spawned) = completed;
    let wall = t.elapsed();
    let (_, peak) = resident_kib();
    anyhow::ensure!(
        completed == runs,
        "only {completed} of {runs} runs completed"
    );
    // The same shape with no workflow at all: each task sleeps twice.
    let t = Instant::now();
    rt.block_on(rt.spawn(async move {
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..runs {
            set.spawn(async move {
                tokio::time::sleep(latency).await;
                tokio::time::sleep(latency).await;
            });
        }
        while set.join_next().await.is_some() {}
    }))?;
    let raw = t.elapsed();
    let ideal = latency * 2;
    crate::outln!(
        "troupe bench concurrent: {runs} runs of a 3-lifeline workflow, mock model sleeping {latency_ms} ms per call"
    );
    crate::outln!("  wall time              {wall:>10.2?}");
    crate::outln!("  ideal (critical path)  {ideal:>10.2?}  (2 model calls)");
    crate::outln!("  of which spawning      {spawned:>10.2?}");
    crate::outln!("  baseline: {runs} bare tokio tasks sleeping twice  {raw:>10.2?}");
    crate::outln!(
        "  ratio wall / ideal     {:>10.2}x",
        wall.as_secs_f64() / ideal.as_secs_f64()
    );
    crate::outln!(
        "  ratio wall / baseline  {:>10.2}x",
        wall.as_secs_f64() / raw.as_secs_f64()
    );
    crate::outln!(
        "  memory per run         {:>10.1} KiB  (peak RSS {} KiB, {} KiB before)",
        peak.saturating_sub(rss_before) as f64 / runs as f64,
        peak,
        rss_before
    );
    Ok(ExitStatus::Success)
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

/// A loop of 20 rounds, nothing but messages and pure steps.
const PURE_SOURCE: &str = r#"
workflow loop20(n: Int @ A) {
  lifelines A, B
  act A: k = 0
  while k < 20 @ A {
    msg A(k) -> B(k)
    act B: k = k + 1
    msg B(k) -> A(k)
  }
  return k @ A
}
"#;

/// A person's answer ends the run.
const ASK_SOURCE: &str = r#"
human approve(n: Int) -> Bool { ask: "Approve {n}?" }
workflow ask(n: Int @ A) {
  lifelines A, B
  msg A(n) -> B(n)
  act B: ok = approve(n)
  msg B(ok) -> A(ok)
  return ok @ A
}
"#;

/// A `troupe worker` child on `url`, quiet, with `extra` flags.
fn fleet_worker(
    exe: &std::path::Path,
    url: &str,
    dir: &std::path::Path,
    extra: &[&str],
) -> std::io::Result<std::process::Child> {
    std::process::Command::new(exe)
        .args(["worker", "--store", url])
        .args(extra)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
}

/// Queues `runs` runs of `compiled` with `settings` in a fresh database on
/// `server`, starts one worker per entry of `workers` (its flags), and waits
/// until they all exited: how long that took, and the store with its
/// database (dropped with it; every run must be done).
fn drain_queue(
    server: &str,
    exe: &std::path::Path,
    dir: &std::path::Path,
    compiled: &troupe_host::Compiled,
    settings: &troupe_host::RunSettings,
    runs: i64,
    workers: &[&[&str]],
) -> Result<(
    std::time::Duration,
    troupe_store::Store,
    troupe_store::testing::TestDatabase,
)> {
    use troupe_check::Value;
    use troupe_store::{Durability, RunStatus, Store, testing::TestDatabase};
    let db = TestDatabase::on(server);
    let store = Store::open(&db.url, Durability::Full)?;
    let host = bench_host(store.clone(), Default::default(), dir);
    for i in 0..runs {
        host.enqueue(compiled, vec![Value::Int(i)], settings)?;
    }
    let t = Instant::now();
    let children: Vec<std::process::Child> = workers
        .iter()
        .map(|flags| fleet_worker(exe, &db.url, dir, flags))
        .collect::<std::io::Result<_>>()?;
    for mut c in children {
        c.wait()?;
    }
    let elapsed = t.elapsed();
    let done = store.runs(Some(RunStatus::Done))?.len() as i64;
    anyhow::ensure!(
        done == runs,
        "only {done} of {runs} runs done with {} worker(s)",
        workers.len()
    );
    Ok((elapsed, store, db))
}

fn bench_fleet(server: &str, runs: i64, workers: &[usize], answers: usize) -> Result<ExitStatus> {
    use std::sync::Arc;
    use troupe_check::Value;
    use troupe_store::testing::TestDatabase;
    use troupe_store::{Durability, RunStatus, Store};
    anyhow::ensure!(
        troupe_store::is_postgres(server),
        "--store must be a postgres:// address"
    );
    let dir = std::env::temp_dir().join(format!("troupe-bench-fleet-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let settings = troupe_host::RunSettings {
        llm: Some("mock".into()),
        mock_externs: true,
        ..troupe_host::RunSettings::default()
    };
    let exe = std::env::current_exe()?;
    let kinds = [
        ("effect-heavy (4 effects a run)", EFFECTS_SOURCE, 4u64),
        ("pure (a 20-round loop)", PURE_SOURCE, 41),
    ];
    crate::outln!(
        "troupe bench fleet: {runs} queued runs per measurement on {} (PostgreSQL, synchronous_commit=on), workers are `troupe worker` processes",
        troupe_store::redact(server)
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    for (label, source, steps) in kinds {
        let compiled = Arc::new(compile(source)?);
        // The baseline: the same runs in one process, on an SQLite file.
        let path = dir.join("single.db");
        let _ = std::fs::remove_file(&path);
        let host = bench_host(
            Store::open(&path, Durability::Full)?,
            Default::default(),
            &dir,
        );
        let host = Arc::new(host);
        let t = Instant::now();
        rt.block_on(async {
            let mut set = tokio::task::JoinSet::new();
            for n in 0..runs {
                let (host, compiled, settings) = (host.clone(), compiled.clone(), settings.clone());
                set.spawn(async move {
                    host_run_with(&host, &compiled, vec![Value::Int(n)], &settings).await
                });
            }
            let mut ok = 0;
            while let Some(r) = set.join_next().await {
                ok += i64::from(matches!(r, Ok(Ok(_))));
            }
            anyhow::ensure!(ok == runs, "only {ok} of {runs} runs completed");
            Ok(())
        })?;
        let single = t.elapsed();
        crate::outln!(
            "  {label}: one process on SQLite: {:>7.0} runs/s, {:>8.0} steps/s ({single:.2?})",
            runs as f64 / single.as_secs_f64(),
            (runs as u64 * steps) as f64 / single.as_secs_f64()
        );
        for &n in workers {
            let flags = ["--exit-when-idle", "--concurrency", "64"];
            let (elapsed, store, db) = drain_queue(
                server,
                &exe,
                &dir,
                &compiled,
                &settings,
                runs,
                &vec![&flags[..]; n],
            )?;
            crate::outln!(
                "  {label}: {n} worker(s) on PostgreSQL: {:>7.0} runs/s, {:>8.0} steps/s ({elapsed:.2?}; {:.2}x one process on SQLite)",
                runs as f64 / elapsed.as_secs_f64(),
                (runs as u64 * steps) as f64 / elapsed.as_secs_f64(),
                single.as_secs_f64() / elapsed.as_secs_f64()
            );
            // The store closes before its database is dropped.
            drop(store);
            drop(db);
        }
        // Placed: the first lifeline pinned to one label, the others to
        // another, on two workers with one label each; every message
        // between the two crosses the database.
        let mut placed = settings.clone();
        for (i, l) in compiled.workflow().lifelines.iter().enumerate() {
            let label = if i == 0 { "left" } else { "right" };
            placed.placement.insert(l.name.clone(), label.to_owned());
        }
        let (elapsed, store, db) = drain_queue(
            server,
            &exe,
            &dir,
            &compiled,
            &placed,
            runs,
            &[
                &[
                    "--exit-when-idle",
                    "--concurrency",
                    "256",
                    "--labels",
                    "left",
                ],
                &[
                    "--exit-when-idle",
                    "--concurrency",
                    "256",
                    "--labels",
                    "right",
                ],
            ],
        )?;
        let crossed = store.crossed(1)?;
        crate::outln!(
            "  {label}: placed on 2 labelled workers: {:>7.0} runs/s, {:>8.0} steps/s ({elapsed:.2?}; {crossed} messages a run through the database)",
            runs as f64 / elapsed.as_secs_f64(),
            (runs as u64 * steps) as f64 / elapsed.as_secs_f64(),
        );
        drop(store);
        drop(db);
    }
    // From an answer to the end of the run it wakes, one run at a time,
    // with one worker driving all of them (each waits on its person).
    let db = TestDatabase::on(server);
    let store = Store::open(&db.url, Durability::Full)?;
    let host = bench_host(store.clone(), Default::default(), &dir);
    let ask = compile(ASK_SOURCE)?;
    for i in 0..answers {
        host.enqueue(&ask, vec![Value::Int(i as i64)], &settings)?;
    }
    let mut worker = fleet_worker(&exe, &db.url, &dir, &["--concurrency", "10000"])?;
    let deadline = Instant::now() + std::time::Duration::from_secs(120);
    while store.tasks(false)?.len() < answers {
        anyhow::ensure!(Instant::now() < deadline, "the tasks did not appear");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let mut latencies = Vec::with_capacity(answers);
    for task in store.tasks(false)? {
        let run = Store::parse_run_id(&task.run).unwrap_or(0);
        let t = Instant::now();
        store.answer(&task.id, &serde_json::json!(true), "bench")?;
        while store.run(run)?.summary.status != RunStatus::Done {
            anyhow::ensure!(Instant::now() < deadline, "{} did not end", task.run);
            std::thread::sleep(std::time::Duration::from_micros(500));
        }
        latencies.push(t.elapsed());
    }
    let _ = worker.kill();
    let _ = worker.wait();
    latencies.sort();
    let pct = |p: f64| latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)];
    crate::outln!(
        "  answer to the run's end ({answers} runs waiting on one worker): p50 {:.1?}, p99 {:.1?} (the waiting run is woken by the answer's notification)",
        pct(0.5),
        pct(0.99)
    );
    let _ = std::fs::remove_dir_all(&dir);
    Ok(ExitStatus::Success)
}

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

fn bench_durable(rounds: i64, runs: usize, dir: Option<&std::path::Path>) -> Result<ExitStatus> {
    use std::sync::Arc;
    use troupe_check::Value;
    use troupe_runtime::Externs;
    use troupe_store::{Durability, Store};
    let dir = dir.map_or_else(
        || std::env::temp_dir().join(format!("troupe-bench-{}", std::process::id())),
        |d| d.to_owned(),
    );
    std::fs::create_dir_all(&dir)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let counter = compile(COUNTER_SOURCE)?;
    crate::outln!(
        "troupe bench durable: counter loop, {rounds} rounds, through the run lifecycle of `troupe run --store` (recorded in SQLite, WAL, verified at the end), files in {}",
        dir.display()
    );
    for (label, durability) in [("FULL", Durability::Full), ("NORMAL", Durability::Normal)] {
        let path = dir.join(format!("counter-{label}.db"));
        let _ = std::fs::remove_file(&path);
        let store = Store::open(&path, durability)?;
        let host = bench_host(store.clone(), Externs::new(), &dir);
        let t = Instant::now();
        let results = rt.block_on(host_run(&host, &counter, vec![Value::Int(rounds)]))?;
        let elapsed = t.elapsed();
        anyhow::ensure!(results[0].1 == Value::Int(rounds));
        let baseline_n = if durability == Durability::Full {
            2_000
        } else {
            20_000
        };
        let raw = Store::raw_commit_baseline(
            &dir.join(format!("raw-{label}.db")),
            baseline_n,
            durability,
        )?;
        let raw_rate = f64::from(baseline_n) / raw.as_secs_f64();
        let rate = rounds as f64 / elapsed.as_secs_f64();
        let events = store.run(1)?.events;
        crate::outln!(
            "  synchronous={label:<6}  {:>9.0} rounds/s ({elapsed:.2?}, {events} events, {} commits; resident {} KiB, peak {} KiB) | raw single-row commits {:>8.0}/s | {:.0}x the raw commit rate; ZipperGen durable ≈ 42 rounds/s ({:.0}x)",
            rate,
            store.commits(),
            resident_kib().0,
            resident_kib().1,
            raw_rate,
            rate / raw_rate,
            rate / 42.0
        );
    }
    // Concurrent durable runs, every step an effect.
    let path = dir.join("effects.db");
    let _ = std::fs::remove_file(&path);
    let store = Store::open(&path, Durability::Full)?;
    let latencies = Arc::new(std::sync::Mutex::new(
        Vec::<std::time::Duration>::with_capacity(runs * 4),
    ));
    let last = Arc::new(std::sync::Mutex::new(std::collections::HashMap::<
        String,
        Instant,
    >::new()));
    let mut externs = Externs::new();
    let (lat, last2) = (latencies.clone(), last.clone());
    externs.effect("touch", move |call| {
        // A step's latency: from the previous effect of the same run to this one.
        let run = call
            .idempotency_key
            .split('/')
            .next()
            .unwrap_or("")
            .to_owned();
        let now = Instant::now();
        if let Ok(mut m) = last2.lock()
            && let Some(prev) = m.insert(run, now)
            && let Ok(mut l) = lat.lock()
        {
            l.push(now - prev);
        }
        let n = match call.args.first() {
            Some(Value::Int(n)) => *n,
            _ => 0,
        };
        async move { Ok(vec![Value::Int(n + 1)]) }
    });
    let effects = Arc::new(compile(EFFECTS_SOURCE)?);
    let host = bench_host(store.clone(), externs.clone(), &dir);
    let commits_before = store.commits();
    let t = Instant::now();
    let ok = rt.block_on(async {
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..runs {
            let host = host.clone();
            let effects = effects.clone();
            set.spawn(async move { host_run(&host, &effects, vec![Value::Int(0)]).await });
        }
        let mut ok = 0;
        while let Some(r) = set.join_next().await {
            if matches!(r, Ok(Ok(_))) {
                ok += 1;
            }
        }
        ok
    });
    let elapsed = t.elapsed();
    anyhow::ensure!(ok == runs, "only {ok} of {runs} durable runs completed");
    let steps = runs * 4;
    let mut l = latencies.lock().map(|l| l.clone()).unwrap_or_default();
    l.sort();
    let pct = |p: f64| {
        l.get(((l.len() as f64 * p) as usize).min(l.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    let commits = store.commits() - commits_before;
    crate::outln!(
        "  {runs} concurrent durable runs, 4 effects each (synchronous=FULL): {:.0} steps/s ({elapsed:.2?}); step latency p50 {:.2?}, p99 {:.2?}; {commits} group commits for {steps} effects ({:.2} per effect)",
        steps as f64 / elapsed.as_secs_f64(),
        pct(0.5),
        pct(0.99),
        commits as f64 / steps as f64
    );
    // One run alone: no other run to share commits with.
    let path = dir.join("effects-single.db");
    let _ = std::fs::remove_file(&path);
    let single = Store::open(&path, Durability::Full)?;
    let host = bench_host(single.clone(), externs, &dir);
    let before = single.commits();
    rt.block_on(host_run(&host, &effects, vec![Value::Int(0)]))?;
    crate::outln!(
        "  one durable run alone: {} commits for 4 effects and the result",
        single.commits() - before
    );
    if dir.starts_with(std::env::temp_dir()) {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(ExitStatus::Success)
}

/// Two tokio tasks bounce a counter over unbounded channels: the baseline.
async fn raw_ping_pong(rounds: i64) -> i64 {
    let (to_pong, mut pong_rx) = tokio::sync::mpsc::unbounded_channel::<i64>();
    let (to_ping, mut ping_rx) = tokio::sync::mpsc::unbounded_channel::<i64>();
    let pong = tokio::spawn(async move {
        while let Some(n) = pong_rx.recv().await {
            if to_ping.send(n + 1).is_err() {
                break;
            }
        }
    });
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
    drop(to_pong);
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
