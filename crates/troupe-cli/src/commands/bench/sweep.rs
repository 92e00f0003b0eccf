//! The cost of a worker's sweep over time (timers, deadlines, reminders):
//! what every `troupe worker` does each `--sweep` period on a shared store
//! must cost what is pending now, not what the store ever held. Measured
//! on an empty store (the baseline) and after HISTORY finished runs that
//! each slept (a fired timer) and had a person's reminded task answered
//! (an announcement a webhook never closes), in the same run.

use super::*;

/// Each run sleeps, then asks a person with a deadline and reminders.
pub(super) const SWEEP_SOURCE: &str = r#"
human ok(n: Int) -> Bool { ask: "Go on with {n}?", timeout: "1h", default: false, remind: "30m" }

workflow nap(n: Int @ A) {
  lifelines A, B
  act A: sleep("1ms")
  msg A(n) -> B(n)
  act B: go = ok(n)
  return go @ B
}
"#;

/// The time of one sweep (the three statements a worker runs), as the
/// median of `samples`.
fn one_sweep(store: &troupe_store::Store, samples: usize) -> Result<std::time::Duration> {
    let mut times = Vec::with_capacity(samples);
    for _ in 0..samples {
        let t = Instant::now();
        store.answer_due(None)?;
        store.wake_due_timers()?;
        store.due_reminders("webhook")?;
        times.push(t.elapsed());
    }
    Ok(median(times))
}

/// The time of a start's search for a run to continue (what `troupe run
/// FILE --store` does before it starts one), for inputs no run had, as
/// the median of `samples`.
fn one_lookup(
    store: &troupe_store::Store,
    compiled: &troupe_host::Compiled,
    samples: usize,
) -> Result<std::time::Duration> {
    let inputs = compiled
        .inputs_json(&[troupe_check::Value::Int(-1)])
        .to_string();
    let mut times = Vec::with_capacity(samples);
    for _ in 0..samples {
        let t = Instant::now();
        let (unfinished, done) = store.continuable(
            &compiled.workflow().name,
            &compiled.file,
            &compiled.fingerprint,
            &inputs,
        )?;
        times.push(t.elapsed());
        anyhow::ensure!(done.is_none(), "a run with input -1 was found");
        std::hint::black_box(unfinished);
    }
    Ok(median(times))
}

pub(super) fn bench_sweep(history: usize, samples: usize) -> Result<ExitStatus> {
    let dir = std::env::temp_dir().join(format!("troupe-bench-sweep-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let result = sweep_in(&dir, history, samples);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn sweep_in(dir: &std::path::Path, history: usize, samples: usize) -> Result<ExitStatus> {
    let store = troupe_store::Store::open(dir.join("sweep.db"), troupe_store::Durability::Normal)?;
    let empty = one_sweep(&store, samples)?;
    let host = bench_host(store.clone(), troupe_runtime::Externs::new(), dir);
    let compiled = compile(SWEEP_SOURCE)?;
    let empty_lookup = one_lookup(&store, &compiled, samples)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let started = Instant::now();
    for i in 0..history {
        let inputs = vec![troupe_check::Value::Int(i as i64)];
        let settings = troupe_host::RunSettings {
            llm: Some("mock".into()),
            ..troupe_host::RunSettings::default()
        };
        let run = host.start(&compiled, inputs, &settings, troupe_host::StartPolicy::New)?;
        // The person answers as soon as the task is announced.
        let answering = {
            let store = store.clone();
            std::thread::spawn(move || -> Result<()> {
                loop {
                    if let Some(t) = store.run_tasks(run.run, true)?.first() {
                        let n = t.id.trim_start_matches("task-").parse::<i64>()?;
                        store.announce_claim("webhook", n, &format!("s{n}"), None)?;
                        store.announce_sent("webhook", n, "delivered", "")?;
                        troupe_host::Host::new(
                            store.clone(),
                            troupe_host::HostConfig::new(std::env::temp_dir()),
                            std::sync::Arc::new(troupe_host::NoTools),
                        )
                        .answer(
                            &t.id,
                            troupe_host::AnswerInput::Yes,
                            "bench",
                        )?;
                        return Ok(());
                    }
                    std::thread::sleep(std::time::Duration::from_micros(200));
                }
            })
        };
        let finished =
            runtime.block_on(host.drive(run.run, &troupe_host::Overrides::default(), None))?;
        answering
            .join()
            .map_err(|_| anyhow::anyhow!("the answering thread panicked"))??;
        anyhow::ensure!(
            matches!(finished.end, troupe_host::RunEnd::Done { .. }),
            "run {i} ended with {:?}",
            finished.end
        );
    }
    let filled = started.elapsed();
    let after = one_sweep(&store, samples)?;
    let after_lookup = one_lookup(&store, &compiled, samples)?;
    let (timers, tasks) = (store.timers(1)?.len(), store.tasks(true)?.len());
    let mut out = String::new();
    writeln!(
        out,
        "worker sweep (answer_due + wake_due_timers + due_reminders), median of {samples}"
    )?;
    writeln!(
        out,
        "  empty store (baseline, same run): {:>9.1} µs",
        empty.as_secs_f64() * 1e6
    )?;
    writeln!(
        out,
        "  after {history} finished runs:     {:>9.1} µs   ({:.2}× the baseline; {tasks} answered tasks, timers fired; history written in {:.1} s)",
        after.as_secs_f64() * 1e6,
        after.as_secs_f64() / empty.as_secs_f64().max(1e-9),
        filled.as_secs_f64()
    )?;
    writeln!(
        out,
        "a start's search for a run to continue (`troupe run FILE --store`), median of {samples}"
    )?;
    writeln!(
        out,
        "  empty store (baseline, same run): {:>9.1} µs",
        empty_lookup.as_secs_f64() * 1e6
    )?;
    writeln!(
        out,
        "  after {history} finished runs:     {:>9.1} µs   ({:.2}× the baseline)",
        after_lookup.as_secs_f64() * 1e6,
        after_lookup.as_secs_f64() / empty_lookup.as_secs_f64().max(1e-9)
    )?;
    anyhow::ensure!(timers == 1, "run-1 recorded {timers} timer(s), not 1");
    crate::out::println(out.trim_end())?;
    Ok(ExitStatus::Success)
}
