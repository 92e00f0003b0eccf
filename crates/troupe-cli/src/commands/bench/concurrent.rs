//! Many concurrent runs with a slow mock model: time against the
//! critical path.

use super::*;

/// Three lifelines, two model calls on the critical path.
pub(super) const PIPELINE_SOURCE: &str = r#"
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

pub(super) fn bench_concurrent(runs: usize, latency_ms: u64) -> Result<ExitStatus> {
    let latency = std::time::Duration::from_millis(latency_ms);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let (rss_before, _) = resident_kib();
    let (wall, _) = concurrent_wall(&rt, runs, latency)?;
    let (_, peak) = resident_kib();
    let t = Instant::now();
    // The same shape with no workflow at all: each task sleeps twice.
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

/// `runs` concurrent runs of [`PIPELINE_SOURCE`] whose mock model sleeps
/// `latency` per call, spawned from a worker thread as a server accepting
/// runs would: the wall time, and the critical path of one run.
pub(super) fn concurrent_wall(
    rt: &tokio::runtime::Runtime,
    runs: usize,
    latency: std::time::Duration,
) -> Result<(std::time::Duration, std::time::Duration)> {
    use std::sync::Arc;
    use troupe_check::Value;
    use troupe_runtime::{EngineBuilder, RunOptions};
    let mock = Arc::new(troupe_llm::MockBackend::with_latency(latency));
    let engine = EngineBuilder::from_source(PIPELINE_SOURCE)
        .map_err(|d| anyhow::anyhow!("bench workflow does not check: {d:?}"))?
        .llm(mock)
        .build()?;
    let t = Instant::now();
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
        let mut ok = 0usize;
        while let Some(r) = set.join_next().await {
            if matches!(r, Ok(Ok(_))) {
                ok += 1;
            }
        }
        ok
    }))?;
    let wall = t.elapsed();
    anyhow::ensure!(
        completed == runs,
        "only {completed} of {runs} runs completed"
    );
    Ok((wall, latency * 2))
}
