//! `troupe fork RUN [--at STEP]`: a new run of a recorded run's workflow
//! that takes the recorded results of the steps before STEP (no model,
//! tool or person is asked again for them) and runs live from there.
//! Arguments and rendering only; the store owns what a fork copies
//! (`troupe_store::ForkAt`), the host drives the new run.

use crate::ExitStatus;
use crate::commands::durable::{StoreArg, read_answers, report, report_error, run_id};
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use troupe_host::Overrides;
use troupe_store::ForkAt;

#[derive(Debug, Args)]
pub struct ForkArgs {
    /// The run to fork, e.g. `run-3`.
    pub run: String,
    /// Where the new run runs live from: a step's number in recorded order
    /// (`--at 3`: steps 1 and 2 are taken from RUN) or its key
    /// (`--at Bank/deposit#1`, as `troupe status RUN` lists them). Without
    /// it, every recorded step is taken.
    #[arg(long, value_name = "STEP")]
    pub at: Option<String>,
    /// An input to change, parsed by its declared type; the others are
    /// RUN's.
    #[arg(long = "input", short = 'i', value_name = "NAME=VALUE", value_parser = crate::commands::run::parse_pair)]
    pub inputs: Vec<(String, String)>,
    #[command(flatten)]
    pub store: StoreArg,
    /// Answers to human tasks (JSON keyed by `Lifeline.action` or `action`).
    #[arg(long, value_name = "FILE")]
    pub answers: Option<PathBuf>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `troupe fork RUN`.
pub fn fork(args: &ForkArgs, color: crate::ColorChoice) -> Result<ExitStatus> {
    let host = args.store.host()?;
    let from = run_id(&args.run)?;
    let at = match args.at.as_deref() {
        None => ForkAt::End,
        Some(text) => match text.trim().parse::<u64>() {
            Ok(n) => ForkAt::Nth(n),
            Err(_) => ForkAt::Key(text.trim().to_owned()),
        },
    };
    let (started, forked) = match host.fork(from, &at, &args.inputs) {
        Ok(f) => f,
        Err(e) => return Ok(report_error(&e, color)),
    };
    let name = &started.name;
    crate::note!(
        "forked {name} from {}{}: {} recorded step(s) taken, the rest runs live",
        troupe_store::Store::run_name(from),
        forked
            .at
            .as_deref()
            .map_or_else(String::new, |k| format!(" at {k}")),
        forked.steps
    );
    let answers = read_answers(args.answers.as_deref())?;
    let overrides = Overrides::default();
    match crate::signals::block_on("the run", host.drive(started.run, &overrides, answers))? {
        Ok(f) => report(&f, args.json),
        Err(e) => Ok(report_error(&e, color)),
    }
}
