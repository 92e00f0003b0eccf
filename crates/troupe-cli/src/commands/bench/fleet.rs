//! Workers on PostgreSQL draining a queue of runs, against one process on
//! SQLite.

use super::*;

/// A loop of 20 rounds, nothing but messages and pure steps.
pub(super) const PURE_SOURCE: &str = r#"
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
pub(super) const ASK_SOURCE: &str = r#"
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
pub(super) fn fleet_worker(
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
pub(super) fn drain_queue(
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

pub(super) fn bench_fleet(
    server: &str,
    runs: i64,
    workers: &[usize],
    answers: usize,
) -> Result<ExitStatus> {
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
