//! `troupe bench ratios`: the benchmarks' ratios to their baselines in a
//! short mode, checked against recorded ones. Times differ between
//! machines and loads; a ratio to the plainest code for the same work,
//! measured in the same run, moves only when troupe's own cost does. CI
//! runs `--check .ci/ratios.json`: a change that makes one ratio worse
//! than 1.5× its recorded value fails the commit.

use super::*;

/// How much worse than recorded a ratio may get before the check fails.
const TOLERANCE: f64 = 1.5;

/// Repetitions of each measurement; the best is kept (noise from other
/// processes only ever makes a run slower).
const REPEATS: usize = 3;

/// One measured ratio.
#[derive(Debug, Clone, serde::Serialize)]
struct Ratio {
    name: &'static str,
    /// What the ratio compares.
    what: &'static str,
    value: f64,
    /// Whether a larger value is better (throughput over a baseline's) or
    /// worse (time over a critical path).
    higher_is_better: bool,
}

/// The build profile the ratios belong to: a debug build's differ.
fn profile() -> &'static str {
    if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    }
}

pub(super) fn bench_ratios(
    check: Option<&std::path::Path>,
    record: Option<&std::path::Path>,
    json: bool,
) -> Result<ExitStatus> {
    let ratios = measure()?;
    let recorded: serde_json::Value = match check {
        Some(path) => serde_json::from_str(&std::fs::read_to_string(path).map_err(|e| {
            anyhow::anyhow!("cannot read the recorded ratios {}: {e}", path.display())
        })?)
        .map_err(|e| anyhow::anyhow!("{} is not JSON: {e}", path.display()))?,
        None => serde_json::Value::Null,
    };
    let mut failed = Vec::new();
    let mut rows = Vec::new();
    for r in &ratios {
        let was = recorded[profile()][r.name].as_f64();
        let verdict = match was {
            None => "new",
            Some(was) if r.higher_is_better && r.value < was / TOLERANCE => "WORSE",
            Some(was) if !r.higher_is_better && r.value > was * TOLERANCE => "WORSE",
            Some(_) => "ok",
        };
        if verdict == "WORSE" {
            failed.push(r.name);
        }
        rows.push(serde_json::json!({
            "name": r.name,
            "what": r.what,
            "ratio": r.value,
            "recorded": was,
            "higher_is_better": r.higher_is_better,
            "verdict": verdict,
        }));
        if !json {
            crate::outln!(
                "  {:<18} {:>9.3}  recorded {:>9}  {verdict:<5}  {}",
                r.name,
                r.value,
                was.map_or_else(|| "-".to_owned(), |w| format!("{w:.3}")),
                r.what
            );
        }
    }
    if json {
        crate::outln!(
            "{}",
            serde_json::json!({ "profile": profile(), "tolerance": TOLERANCE, "ratios": rows })
        );
    }
    if let Some(path) = record {
        let mut all: serde_json::Value = std::fs::read_to_string(path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_else(|| serde_json::json!({}));
        let mine: serde_json::Map<String, serde_json::Value> = ratios
            .iter()
            .map(|r| {
                (
                    r.name.to_owned(),
                    serde_json::json!((r.value * 1000.0).round() / 1000.0),
                )
            })
            .collect();
        all[profile()] = serde_json::Value::Object(mine);
        std::fs::write(path, format!("{}\n", serde_json::to_string_pretty(&all)?))?;
    }
    if failed.is_empty() {
        Ok(ExitStatus::Success)
    } else {
        crate::note!(
            "error: {} worse than {TOLERANCE}x the recorded ratio ({} build): {}",
            if failed.len() == 1 {
                "a benchmark is"
            } else {
                "benchmarks are"
            },
            profile(),
            failed.join(", ")
        );
        Ok(ExitStatus::Failure)
    }
}

fn measure() -> Result<Vec<Ratio>> {
    use std::time::Duration;
    let best = |v: Vec<f64>, higher: bool| {
        v.into_iter()
            .fold(if higher { f64::MIN } else { f64::MAX }, |a, b| {
                if higher { a.max(b) } else { a.min(b) }
            })
    };
    let quick = cfg!(debug_assertions);
    // `troupe run` of the counter loop over the plain ping-pong.
    let rounds = if quick { 20_000 } else { 500_000 };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut run_vs_plain = Vec::new();
    for _ in 0..REPEATS {
        let plain = plain_ping_pong(&rt, rounds)?;
        let (user, _) = counter_through_run(rounds)?;
        run_vs_plain.push(plain.as_secs_f64() / user.as_secs_f64());
    }
    // The durable counter loop (FULL) over raw single-row FULL commits.
    let dir = TempDir::new()?;
    let multi = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let counter = compile(COUNTER_SOURCE)?;
    let durable_rounds = if quick { 2_000 } else { 50_000 };
    let mut durable_vs_raw = Vec::new();
    for i in 0..REPEATS {
        let store = troupe_store::Store::open(
            dir.path().join(format!("counter-{i}.db")),
            troupe_store::Durability::Full,
        )?;
        let host = bench_host(store, troupe_runtime::Externs::new(), dir.path());
        let t = Instant::now();
        multi.block_on(host_run(
            &host,
            &counter,
            vec![troupe_check::Value::Int(durable_rounds)],
        ))?;
        let rate = durable_rounds as f64 / t.elapsed().as_secs_f64();
        let raw = troupe_store::Store::raw_commit_baseline(
            &dir.path().join(format!("raw-{i}.db")),
            200,
            troupe_store::Durability::Full,
        )?;
        durable_vs_raw.push(rate / (200.0 / raw.as_secs_f64()));
    }
    // Concurrent durable runs whose every step is an effect (FULL): steps
    // a second over raw single-row FULL commits a second.
    let effect_runs = if quick { 100 } else { 500 };
    let mut effects_vs_raw = Vec::new();
    for i in 0..REPEATS {
        let (steps_per_s, raw_per_s) = durable_effects(&multi, dir.path(), i, effect_runs)?;
        effects_vs_raw.push(steps_per_s / raw_per_s);
    }
    // Concurrent runs with a slow model over their critical path.
    let latency = Duration::from_millis(50);
    let runs = if quick { 200 } else { 2_000 };
    let mut concurrent = Vec::new();
    for _ in 0..REPEATS {
        let (wall, ideal) = concurrent_wall(&multi, runs, latency)?;
        concurrent.push(wall.as_secs_f64() / ideal.as_secs_f64());
    }
    Ok(vec![
        Ratio {
            name: "counter_run",
            what: "`troupe run` counter loop (verified) over the plain tokio ping-pong",
            value: best(run_vs_plain, true),
            higher_is_better: true,
        },
        Ratio {
            name: "durable_counter",
            what: "`troupe run --store` counter loop (FULL) over raw single-row FULL commits",
            value: best(durable_vs_raw, true),
            higher_is_better: true,
        },
        Ratio {
            name: "durable_effects",
            what: "concurrent durable runs, every step an effect (FULL): steps/s over raw FULL commits/s",
            value: best(effects_vs_raw, true),
            higher_is_better: true,
        },
        Ratio {
            name: "concurrent",
            what: "concurrent runs (mock model, 50 ms a call): wall over the critical path",
            value: best(concurrent, false),
            higher_is_better: false,
        },
    ])
}

/// `runs` concurrent durable runs of [`EFFECTS_SOURCE`] in a fresh store
/// under `dir` (FULL): their steps a second, and raw single-row FULL
/// commits a second on the same disk.
fn durable_effects(
    rt: &tokio::runtime::Runtime,
    dir: &std::path::Path,
    i: usize,
    runs: usize,
) -> Result<(f64, f64)> {
    use troupe_check::Value;
    let store = troupe_store::Store::open(
        dir.join(format!("effects-{i}.db")),
        troupe_store::Durability::Full,
    )?;
    let mut externs = troupe_runtime::Externs::new();
    externs.effect("touch", |call| {
        let n = match call.args.first() {
            Some(Value::Int(n)) => *n,
            _ => 0,
        };
        async move { Ok(vec![Value::Int(n + 1)]) }
    });
    let host = bench_host(store, externs, dir);
    let effects = std::sync::Arc::new(compile(EFFECTS_SOURCE)?);
    let t = Instant::now();
    let ok = rt.block_on(async {
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..runs {
            let (host, effects) = (host.clone(), effects.clone());
            set.spawn(async move { host_run(&host, &effects, vec![Value::Int(0)]).await });
        }
        let mut ok = 0;
        while let Some(r) = set.join_next().await {
            ok += usize::from(matches!(r, Ok(Ok(_))));
        }
        ok
    });
    let elapsed = t.elapsed();
    anyhow::ensure!(ok == runs, "only {ok} of {runs} durable runs completed");
    let raw = troupe_store::Store::raw_commit_baseline(
        &dir.join(format!("raw-effects-{i}.db")),
        200,
        troupe_store::Durability::Full,
    )?;
    Ok((
        (runs * 4) as f64 / elapsed.as_secs_f64(),
        200.0 / raw.as_secs_f64(),
    ))
}

/// A directory of its own under the system's temporary one, removed when
/// dropped.
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new() -> Result<TempDir> {
        let path = std::env::temp_dir().join(format!("troupe-ratios-{}", std::process::id()));
        std::fs::create_dir_all(&path)?;
        Ok(TempDir(path))
    }

    fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
