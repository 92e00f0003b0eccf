//! `troupe upgrade RUN --to FILE` and `troupe upgrade --workflow NAME --to
//! FILE`: arguments and rendering only; the host decides and moves
//! (`troupe_host::Host::upgrade`).

use crate::ExitStatus;
use crate::commands::durable::{StoreArg, report_error, run_id};
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use troupe_host::{Compiled, Upgrade, Upgraded};

#[derive(Debug, Args)]
pub struct UpgradeArgs {
    /// The run to move, e.g. `run-3`. Without it, every unfinished run of
    /// `--workflow` is tried.
    pub run: Option<String>,
    /// The new version of the workflow: a `.troupe` file.
    #[arg(long, value_name = "FILE")]
    pub to: PathBuf,
    /// The workflow: with RUN, the one of FILE to move it to (default: the
    /// run's workflow's name); without RUN, the workflow whose unfinished
    /// runs to move.
    #[arg(long, value_name = "NAME", required_unless_present = "run")]
    pub workflow: Option<String>,
    /// Only say whether each run would move; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub store: StoreArg,
    /// Print the outcome as JSON: `[{"run", "outcome", …}]`.
    #[arg(long)]
    pub json: bool,
}

/// `troupe upgrade`.
pub fn upgrade(args: &UpgradeArgs, color: crate::ColorChoice) -> Result<ExitStatus> {
    let host = args.store.host()?;
    let workflow = match (&args.workflow, &args.run) {
        (Some(w), _) => w.clone(),
        (None, Some(run)) => host.store().run(run_id(run)?)?.summary.workflow,
        (None, None) => unreachable!("clap requires --workflow without RUN"),
    };
    let to = match Compiled::load(&args.to, Some(&workflow)) {
        Ok(c) => c,
        Err(e) => return Ok(report_error(&e, color)),
    };
    let outcomes = match &args.run {
        Some(run) => host
            .upgrade(run_id(run)?, &to, args.dry_run)
            .map(|u| vec![u]),
        None => host.upgrade_workflow(&workflow, &to, args.dry_run),
    };
    let outcomes = match outcomes {
        Ok(o) => o,
        Err(e) => return Ok(report_error(&e, color)),
    };
    if args.json {
        crate::outln!("{}", serde_json::to_string_pretty(&outcomes)?);
    } else {
        render(
            &outcomes,
            &args.to.display().to_string(),
            args.run.is_none(),
        )?;
    }
    let refused = outcomes
        .iter()
        .any(|u| matches!(u.outcome, Upgraded::Refused { .. }));
    Ok(if refused {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

fn render(outcomes: &[Upgrade], file: &str, fleet: bool) -> Result<()> {
    if fleet && outcomes.is_empty() {
        crate::note!("no unfinished run of this workflow; nothing to move");
        return Ok(());
    }
    let (mut moved, mut refused) = (0, 0);
    for u in outcomes {
        match &u.outcome {
            Upgraded::Moved {
                version,
                events,
                steps,
            } => {
                moved += 1;
                crate::outln!(
                    "{}: moved to {file} (version {version}); its {events} event(s) and {steps} recorded step(s) carry over, nothing is asked again",
                    u.run
                );
            }
            Upgraded::WouldMove { events, steps } => {
                moved += 1;
                crate::outln!(
                    "{}: would move to {file}; its {events} event(s) and {steps} recorded step(s) carry over (dry run: nothing changed)",
                    u.run
                );
            }
            Upgraded::Same => crate::outln!("{}: runs this version already", u.run),
            Upgraded::Refused { reason } => {
                refused += 1;
                crate::outln!(
                    "{}: stays on its version: {}",
                    u.run,
                    crate::terminal::sanitize(reason)
                );
            }
        }
    }
    if fleet {
        crate::outln!("{moved} moved, {refused} stayed on their version (they run it to the end)");
    }
    Ok(())
}
