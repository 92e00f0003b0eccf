//! `troupe schedules`: the project's `[[schedule]]`s with their next tick,
//! and, when the store exists, the last tick started and its run.

use crate::ExitStatus;
use crate::commands::durable::{StoreArg, store_address};
use crate::out;
use crate::terminal::sanitize;
use anyhow::Result;
use clap::Args;
use troupe_host::schedule::{now_ms, show_tick};

#[derive(Debug, Args)]
pub struct SchedulesArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// One JSON document: a list of schedules.
    #[arg(long)]
    pub json: bool,
}

/// `troupe schedules`.
pub fn schedules(args: &SchedulesArgs) -> Result<ExitStatus> {
    let dir = std::env::current_dir()?;
    let schedules = troupe_host::ProjectConfig::load(&dir)?.schedules(&dir)?;
    let address = store_address(&args.store.store)?;
    let store = troupe_store::exists(&address)
        .then(|| troupe_store::Store::open(&address, troupe_store::Durability::Full))
        .transpose()?;
    let now = now_ms();
    let mut rows = Vec::new();
    for s in &schedules {
        let last = match &store {
            Some(store) => store.ticks(&s.name, 1)?.into_iter().next(),
            None => None,
        };
        rows.push(serde_json::json!({
            "name": s.name,
            "when": s.when.to_string(),
            "file": s.file.strip_prefix(&dir).unwrap_or(&s.file).display().to_string(),
            "workflow": s.workflow,
            "inputs": s.inputs,
            "missed": s.missed,
            "next": s.next_after(now).map(show_tick),
            "last": last.as_ref().map(|t| show_tick(t.tick)),
            "last_run": last.and_then(|t| t.run).map(troupe_store::Store::run_name),
        }));
    }
    if args.json {
        out::println(&serde_json::to_string_pretty(&rows)?)?;
        return Ok(ExitStatus::Success);
    }
    if rows.is_empty() {
        crate::note!(
            "no schedules; add a [[schedule]] to troupe.toml (name, file, every or cron, inputs), and workers or `troupe serve` start its runs"
        );
        return Ok(ExitStatus::Success);
    }
    out::println(&format!(
        "{:<16} {:<22} {:<24} {:<7} {:<25} last",
        "schedule", "when", "file", "missed", "next"
    ))?;
    let text = |v: &serde_json::Value| sanitize(v.as_str().unwrap_or("-")).into_owned();
    for r in &rows {
        let last = match (r["last"].as_str(), r["last_run"].as_str()) {
            (Some(t), Some(run)) => format!("{run} at {t}"),
            (Some(t), None) => format!("{t} (run deleted)"),
            _ => "-".to_owned(),
        };
        out::println(&format!(
            "{:<16} {:<22} {:<24} {:<7} {:<25} {}",
            text(&r["name"]),
            text(&r["when"]),
            text(&r["file"]),
            text(&r["missed"]),
            text(&r["next"]),
            sanitize(&last)
        ))?;
    }
    Ok(ExitStatus::Success)
}
