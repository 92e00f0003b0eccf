//! `troupe bench causal`: what causal guards cost on the path `troupe run`
//! takes — the counter loop whose guard also asks about the causal past,
//! against the same loop with its plain guard, in the same process — and
//! what their metadata adds to each message.

use super::*;

/// The counter loop with a causal guard that decides as the plain one does
/// (Pong's latest visible `n` is Ping's `k`, and Pong never went below
/// zero), so both runs do the same work: one `seen` term, one `once` of an
/// `at`, over two lifelines.
pub(super) const CAUSAL_COUNTER_SOURCE: &str = r#"
workflow counter(limit: Int @ Ping) {
  lifelines Ping, Pong

  act Ping: k = 0
  while k < limit and (k == 0 or seen(Pong).n == k) and not once(at(Pong, n < 0)) @ Ping {
    msg Ping(k) -> Pong(n)
    act Pong: n = n + 1
    msg Pong(n) -> Ping(k)
  }
  return k @ Ping
}
"#;

/// One run of the loop `source` (input `limit`, result its count) through
/// `troupe run`'s code (`commands::run::execute`: mock model, verified
/// online, no trace kept): its time, the events the monitor checked and
/// the metadata its messages carried.
pub(super) fn through_run(
    source: &str,
    rounds: i64,
) -> Result<(std::time::Duration, u64, troupe_runtime::MetadataStats)> {
    use troupe_check::Value;
    let compiled = compile(source)?;
    let settings = troupe_host::RunSettings {
        llm: Some("mock".into()),
        ..troupe_host::RunSettings::default()
    };
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
    let outcome = outcome?;
    anyhow::ensure!(
        outcome.results[0].1 == Value::Int(rounds),
        "wrong result {:?}",
        outcome.results
    );
    Ok((elapsed, events, outcome.metadata))
}

pub(super) fn bench_causal(rounds: i64, runs: usize) -> Result<ExitStatus> {
    let runs = runs.max(1);
    let (mut plain, mut causal) = (Vec::new(), Vec::new());
    let (mut events, mut stats) = (0, troupe_runtime::MetadataStats::default());
    let rss_before = resident_kib().0;
    let mut peak_plain = 0;
    for _ in 0..runs {
        let (t, e, m) = through_run(COUNTER_SOURCE, rounds)?;
        anyhow::ensure!(m.messages == 0, "the plain loop carried metadata");
        plain.push(t);
        peak_plain = peak_plain.max(resident_kib().1);
        let (t, e2, m) = through_run(CAUSAL_COUNTER_SOURCE, rounds)?;
        anyhow::ensure!(e == e2, "the loops made {e} and {e2} events");
        causal.push(t);
        (events, stats) = (e2, m);
    }
    // The same loop a hundred times shorter: the metadata's size must not
    // depend on how long the run has been going.
    let (_, _, short) = through_run(CAUSAL_COUNTER_SOURCE, (rounds / 100).max(1))?;
    let (plain, causal) = (median(plain), median(causal));
    let per_event = |d: std::time::Duration| d.as_secs_f64() * 1e9 / events.max(1) as f64;
    crate::outln!(
        "troupe bench causal: the counter loop, {rounds} rounds, {events} events, {runs} runs (median), through `troupe run`'s code"
    );
    crate::outln!(
        "  baseline: plain guard `k < limit`                         {plain:>9.2?}  {:>7.1} ns/event",
        per_event(plain)
    );
    crate::outln!(
        "  causal guard (seen, once, at: 5 subformulas, 2 lifelines)  {causal:>9.2?}  {:>7.1} ns/event  {:.2}x the baseline",
        per_event(causal),
        causal.as_secs_f64() / plain.as_secs_f64()
    );
    crate::outln!(
        "  metadata: {} messages, {:.1} bytes each of clocks and flags on average, {} at most ({} at most with {} rounds), plus {} seen value(s)",
        stats.messages,
        stats.bytes as f64 / stats.messages.max(1) as f64,
        stats.largest,
        short.largest,
        (rounds / 100).max(1),
        stats.seen_values
    );
    crate::outln!(
        "  resident: {rss_before} KiB before, peak {peak_plain} KiB after the plain runs, {} KiB after all",
        resident_kib().1
    );
    Ok(ExitStatus::Success)
}
