//! `troupe pause RUN` and `troupe unpause RUN`: an operator holds a run at
//! a step boundary and lets it go on later. Arguments and rendering only;
//! the store owns what a pause is (`troupe_store::Pausing`).

use crate::ExitStatus;
use crate::commands::durable::{StoreArg, run_id};
use anyhow::Result;
use clap::Args;
use std::time::{Duration, Instant};
use troupe_store::{Pausing, RunStatus, Store};

#[derive(Debug, Args)]
pub struct PauseArgs {
    /// The run, e.g. `run-3`.
    pub run: String,
    #[command(flatten)]
    pub store: StoreArg,
    /// How long to wait for a run's owner to reach its next step boundary
    /// (an effect in flight finishes first); past it, the pause stays asked
    /// and happens when the owner gets there.
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = crate::commands::run::parse_duration)]
    pub wait: Duration,
    /// Print the outcome as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `troupe pause RUN`.
pub fn pause(args: &PauseArgs) -> Result<ExitStatus> {
    let store = args.store.open()?;
    let run = run_id(&args.run)?;
    let name = Store::run_name(run);
    let said = |status: &str, text: String| -> Result<ExitStatus> {
        if args.json {
            crate::out::println(&serde_json::json!({ "run": name, "status": status }).to_string())?;
        }
        crate::note!("{text}");
        Ok(ExitStatus::Success)
    };
    let owner = match store.request_pause(run) {
        Ok(Pausing::Paused) => {
            return said(
                "paused",
                format!("paused {name}; `troupe unpause {name}` lets it go on"),
            );
        }
        Ok(Pausing::Already) => {
            return said("paused", format!("{name} is paused already"));
        }
        Ok(Pausing::Asked { owner }) => owner,
        Err(e) => {
            crate::note!("error: {e}");
            return Ok(ExitStatus::Failure);
        }
    };
    let who = troupe_store::describe_owner(&owner);
    crate::note!("asked {who} to pause {name} at its next step boundary…");
    let deadline = Instant::now() + args.wait;
    loop {
        let status = store.run(run)?.summary.status;
        if status == RunStatus::Paused {
            return said(
                "paused",
                format!("paused {name}; `troupe unpause {name}` lets it go on"),
            );
        }
        if status.is_final() || status == RunStatus::NeedsResolution {
            return said(
                status.as_str(),
                format!("{name} is {status}: it ended before it could pause"),
            );
        }
        if Instant::now() >= deadline {
            return said(
                "pausing",
                format!(
                    "{name} pauses once {who} reaches its next step boundary (an effect in flight finishes first); `troupe status {name}` shows it"
                ),
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[derive(Debug, Args)]
pub struct UnpauseArgs {
    /// The run, e.g. `run-3`.
    pub run: String,
    #[command(flatten)]
    pub store: StoreArg,
}

/// `troupe unpause RUN`.
pub fn unpause(args: &UnpauseArgs) -> Result<ExitStatus> {
    let store = args.store.open()?;
    let run = run_id(&args.run)?;
    let name = Store::run_name(run);
    match store.unpause(run) {
        Ok(true) => {
            crate::note!(
                "unpaused {name}: queued again; `troupe resume {name}` continues it here, or a worker takes it"
            );
            Ok(ExitStatus::Success)
        }
        Ok(false) => {
            crate::note!("{name} was not paused yet; the pause asked of it is withdrawn");
            Ok(ExitStatus::Success)
        }
        Err(e) => {
            crate::note!("error: {e}");
            Ok(ExitStatus::Failure)
        }
    }
}
