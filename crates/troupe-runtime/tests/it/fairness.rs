//! A long computing run does not hold its thread: on a one-thread runtime,
//! another task (a transport, a lease renewal) runs while the run goes on,
//! not only after it ends.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use troupe_check::Value;
use troupe_runtime::{EngineBuilder, RunOptions};

const COUNTER: &str = include_str!("../../../../examples/counter.troupe");

#[test]
fn other_tasks_run_while_a_long_run_computes() {
    let engine = EngineBuilder::from_source(COUNTER)
        .unwrap()
        .build()
        .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ticks = Arc::new(AtomicU64::new(0));
    let seen = rt.block_on(async {
        let t = ticks.clone();
        let ticker = tokio::spawn(async move {
            loop {
                tokio::task::yield_now().await;
                t.fetch_add(1, Ordering::Relaxed);
            }
        });
        let outcome = engine
            .run(
                vec![Value::Int(200_000)],
                RunOptions {
                    trace: false,
                    ..RunOptions::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(outcome.results[0].1, Value::Int(200_000));
        // Read before this task yields: only what ran during the run.
        let seen = ticks.load(Ordering::Relaxed);
        ticker.abort();
        seen
    });
    assert!(seen > 10, "the other task ran {seen} times during the run");
}
