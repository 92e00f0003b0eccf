//! A host's metrics in the Prometheus text format (version 0.0.4), for
//! `/metrics` of `troupe worker --health` and `troupe serve`: what this
//! process did (claims, runs ended by outcome, lease renewals and losses)
//! and what the store holds now (runs by status, the queue, people's tasks
//! pending and due).

use crate::Host;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use troupe_store::{Gauges, RunStatus};

/// What a worker did so far; counted by [`Host::work`].
#[derive(Debug, Default)]
pub struct WorkerCounters {
    pub claimed: AtomicU64,
    pub running: AtomicU64,
    pub done: AtomicU64,
    pub failed: AtomicU64,
    pub parked: AtomicU64,
    pub released: AtomicU64,
    pub leases_lost: AtomicU64,
}

impl WorkerCounters {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }
}

fn metric(out: &mut String, name: &str, kind: &str, help: &str, samples: &[(String, u64)]) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
    for (labels, value) in samples {
        let _ = writeln!(out, "{name}{labels} {value}");
    }
}

/// The exposition of `gauges`, and of `host`'s counters when this process
/// is a worker (see the module doc).
pub fn render(host: Option<&Host>, gauges: &Gauges) -> String {
    let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let mut out = String::new();
    let runs: Vec<(String, u64)> = RunStatus::ALL
        .iter()
        .filter(|s| **s != RunStatus::Stalled)
        .map(|s| {
            (
                format!("{{status=\"{}\"}}", s.as_str()),
                gauges.runs.get(s).copied().unwrap_or(0),
            )
        })
        .collect();
    metric(
        &mut out,
        "troupe_runs",
        "gauge",
        "Runs in the store by recorded status.",
        &runs,
    );
    let one = |v: u64| vec![(String::new(), v)];
    metric(
        &mut out,
        "troupe_queue_depth",
        "gauge",
        "Runs and parts a worker could claim now.",
        &one(gauges.runnable),
    );
    metric(
        &mut out,
        "troupe_tasks_pending",
        "gauge",
        "People's tasks waiting for an answer.",
        &one(gauges.tasks_pending),
    );
    metric(
        &mut out,
        "troupe_timers_due",
        "gauge",
        "People's tasks whose deadline passed, answered by the clock at the next look.",
        &one(gauges.tasks_due),
    );
    metric(
        &mut out,
        "troupe_sleeps_due",
        "gauge",
        "Durable timers (sleep) of unfinished runs that fell due and have not fired.",
        &one(gauges.sleeps_due),
    );
    let Some(host) = host else {
        return out;
    };
    let c = host.counters();
    metric(
        &mut out,
        "troupe_worker_claims_total",
        "counter",
        "Runs and parts this process claimed.",
        &one(get(&c.claimed)),
    );
    metric(
        &mut out,
        "troupe_worker_runs_running",
        "gauge",
        "Runs and parts this process drives now.",
        &one(get(&c.running)),
    );
    metric(
        &mut out,
        "troupe_worker_runs_ended_total",
        "counter",
        "Runs and parts this process drove to an end, by outcome.",
        &[
            ("{outcome=\"done\"}".into(), get(&c.done)),
            ("{outcome=\"failed\"}".into(), get(&c.failed)),
            ("{outcome=\"parked\"}".into(), get(&c.parked)),
            ("{outcome=\"released\"}".into(), get(&c.released)),
        ],
    );
    metric(
        &mut out,
        "troupe_lease_renewals_total",
        "counter",
        "Leases this process renewed.",
        &one(host.renewals()),
    );
    metric(
        &mut out,
        "troupe_leases_lost_total",
        "counter",
        "Runs this process stopped because another process took their lease.",
        &one(get(&c.leases_lost)),
    );
    out
}
