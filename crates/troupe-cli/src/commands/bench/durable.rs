//! Benchmarks of durable runs through `troupe run --store`'s code: the
//! counter loop on SQLite and a resumed run.

use super::*;

/// Counts, waits for a person, counts a little more.
pub(super) const WAITING_COUNTER: &str = r#"
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

pub(super) fn bench_resume(
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
    let first = measure_child(&run_args, &dir, waits_for_a_person(&db))?;
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

pub(super) fn bench_durable(
    rounds: i64,
    runs: usize,
    dir: Option<&std::path::Path>,
) -> Result<ExitStatus> {
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
