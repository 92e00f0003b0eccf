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
