//! A fleet of workers on one shared store: `troupe worker` claims and drives
//! runs until it is stopped, `troupe workers` lists the workers. Argument
//! parsing, signals and rendering only; the host owns the worker loop.

use crate::ExitStatus;
use crate::commands::durable::{StoreArg, host_config};
use crate::out;
use crate::terminal::sanitize;
use anyhow::{Context, Result};
use clap::Args;
use std::sync::Arc;
use troupe_host::{Host, WorkerConfig, WorkerEvent};
use troupe_store::Durability;

#[derive(Debug, Args)]
pub struct WorkerArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// Runs driven at once at most.
    #[arg(long, value_name = "N", default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub concurrency: u32,
    /// Labels this worker has, comma separated: `--labels gpu,eu`. Besides
    /// whole runs, it claims the parts of placed runs pinned to one of its
    /// labels (`troupe run --detach --place LIFELINE=LABEL`, or
    /// `[placement]` in troupe.toml); `troupe workers` shows them.
    #[arg(long, value_name = "L,…", value_delimiter = ',', value_parser = parse_label)]
    pub labels: Vec<String>,
    /// On SIGTERM or Ctrl-C the worker claims nothing more and the runs in
    /// flight stop at their next step boundary (an effect in flight gets up
    /// to 10s); this is how long they may take to get there before they are
    /// stopped where they stand. Either way their leases go back, and
    /// another worker resumes them from their last durable step. A second
    /// signal stops the worker at once.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = crate::commands::run::parse_duration)]
    pub drain: std::time::Duration,
    /// How often to look for runs whose owner's lease expired (a store
    /// without notifications, SQLite, is also swept this often for new
    /// runs).
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = crate::commands::run::parse_duration)]
    pub sweep: std::time::Duration,
    /// Give a run back once every lifeline of it has waited on a person
    /// this long, so that runs waiting on people hold no slot of
    /// `--concurrency`; any worker goes on with it as soon as someone
    /// answers (from its checkpoint). `never` keeps them in place.
    #[arg(long, value_name = "DURATION|never", default_value = "1m", value_parser = parse_park_after)]
    pub park_after: ParkAfter,
    /// Serve `/healthz`, `/readyz` and `/metrics` (Prometheus text) on this
    /// address, e.g. `127.0.0.1:9464` (port 0: any free port, printed).
    #[arg(long, value_name = "ADDR")]
    pub health: Option<std::net::SocketAddr>,
    /// Stop once no run is runnable and none is in flight (a batch worker).
    #[arg(long)]
    pub exit_when_idle: bool,
    /// Print one JSON object per event on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `--park-after`: a duration, or `never` (`None`).
#[derive(Debug, Clone, Copy)]
pub struct ParkAfter(pub Option<std::time::Duration>);

fn parse_park_after(s: &str) -> Result<ParkAfter, String> {
    if s.trim() == "never" {
        return Ok(ParkAfter(None));
    }
    crate::commands::run::parse_duration(s).map(|d| ParkAfter(Some(d)))
}

/// `troupe worker`.
pub fn worker(args: &WorkerArgs) -> Result<ExitStatus> {
    let address = crate::commands::durable::store_address(&args.store.store)?;
    let store = crate::commands::durable::open_store(&address, Durability::Full)?;
    let mut settings = host_config()?;
    settings.park_after = args.park_after.0;
    let host = Arc::new(Host::new(store, settings, Arc::new(troupe_mcp::McpTools)));
    let config = WorkerConfig {
        concurrency: args.concurrency as usize,
        sweep: args.sweep,
        drain: args.drain,
        labels: args.labels.clone(),
        max_runs: None,
        exit_when_idle: args.exit_when_idle,
    };
    let owner = host.config().owner.clone();
    crate::note!(
        "worker {} on {} (up to {} runs at once{}); stop with Ctrl-C or SIGTERM",
        sanitize(&owner),
        host.store().shown().display(),
        config.concurrency,
        if args.labels.is_empty() {
            String::new()
        } else {
            format!(", labels {}", args.labels.join(","))
        }
    );
    let json = args.json;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    if let Some(addr) = args.health {
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind(addr))
            .with_context(|| format!("--health {addr}: cannot listen there"))?;
        let bound = listener.local_addr()?;
        crate::note!("health and metrics on http://{bound}/ (/healthz, /readyz, /metrics)");
        let probe = Arc::new(troupe_web::health::StoreProbe {
            store: host.store().clone(),
            host: Some((*host).clone()),
        });
        runtime.spawn(troupe_web::health::serve_health(listener, probe));
    }
    let report = runtime.block_on(async move {
        // The first SIGINT or SIGTERM stops claiming and interrupts the
        // runs in flight at their next step boundary (their leases go
        // back); the second ends the worker at once.
        let stop = crate::signals::first_signal("the runs in flight");
        host.work(config, stop, move |event| print_event(&event, json))
            .await
    })?;
    crate::note!(
        "worker stopped: {} claimed, {} done, {} failed, {} handed back",
        report.claimed,
        report.done,
        report.failed,
        report.released
    );
    Ok(ExitStatus::Success)
}

fn print_event(event: &WorkerEvent, json: bool) {
    if json {
        let doc = match event {
            WorkerEvent::Claimed { run } => serde_json::json!({"event": "claimed", "run": run}),
            WorkerEvent::Ended { run, outcome } => {
                serde_json::json!({"event": "ended", "run": run, "outcome": outcome})
            }
            WorkerEvent::Draining { running } => {
                serde_json::json!({"event": "draining", "running": running})
            }
            WorkerEvent::Scheduled {
                schedule,
                tick,
                run,
            } => serde_json::json!({"event": "scheduled", "schedule": schedule,
                "tick": troupe_host::schedule::show_tick(*tick), "run": run}),
            WorkerEvent::ScheduleFailed {
                schedule,
                tick,
                why,
            } => serde_json::json!({"event": "schedule_failed", "schedule": schedule,
                "tick": troupe_host::schedule::show_tick(*tick), "error": why}),
        };
        let _ = out::println(&doc.to_string());
        return;
    }
    match event {
        WorkerEvent::Claimed { run } => crate::note!("claimed {run}"),
        WorkerEvent::Ended { run, outcome } => crate::note!("{run}: {}", sanitize(outcome)),
        WorkerEvent::Draining { running } => {
            crate::note!("stopping: waiting for {running} run(s) in flight")
        }
        WorkerEvent::Scheduled {
            schedule,
            tick,
            run,
        } => crate::note!(
            "schedule {}: started {run} for {}",
            sanitize(schedule),
            troupe_host::schedule::show_tick(*tick)
        ),
        WorkerEvent::ScheduleFailed {
            schedule,
            tick,
            why,
        } => crate::note!(
            "schedule {}: the tick of {} did not start: {}",
            sanitize(schedule),
            troupe_host::schedule::show_tick(*tick),
            sanitize(why)
        ),
    }
}

#[derive(Debug, Args)]
pub struct WorkersArgs {
    #[command(flatten)]
    pub store: StoreArg,
    #[arg(long)]
    pub json: bool,
}

/// `troupe workers`.
pub fn workers(args: &WorkersArgs) -> Result<ExitStatus> {
    let store = args.store.open()?;
    let workers = store.workers().context("cannot list the workers")?;
    let queued = store.runnable()?;
    if args.json {
        out::println(&serde_json::json!({ "workers": workers, "runnable": queued }).to_string())?;
        return Ok(ExitStatus::Success);
    }
    if workers.is_empty() {
        out::println(&format!(
            "no workers; {queued} runnable run(s) wait (start one with `troupe worker --store {}`)",
            store.shown().display()
        ))?;
        return Ok(ExitStatus::Success);
    }
    out::println(&format!(
        "{:<36} {:>8} {:>8} {:>8} {:>10}  labels",
        "worker", "running", "leases", "claimed", "seen"
    ))?;
    for w in &workers {
        let seen = if w.seen_ms_ago < 1_000 {
            "now".to_owned()
        } else {
            format!("{}s ago", w.seen_ms_ago / 1_000)
        };
        out::println(&format!(
            "{:<36} {:>8} {:>8} {:>8} {:>10}  {}{}",
            sanitize(&w.id),
            w.running,
            w.leases,
            w.claimed,
            seen,
            sanitize(&w.labels.join(",")),
            if w.stopping { " (stopping)" } else { "" }
        ))?;
    }
    out::println(&format!("{queued} runnable run(s) wait for a worker"))?;
    Ok(ExitStatus::Success)
}

/// A worker label: one word (letters, digits, `-`, `_`, `.`, `:`).
fn parse_label(s: &str) -> Result<String, String> {
    let s = s.trim();
    if troupe_host::valid_label(s) {
        Ok(s.to_owned())
    } else {
        Err(format!(
            "{s:?} is not a label: a label is one word of letters, digits, `-`, `_`, `.` or `:`"
        ))
    }
}
