//! The commands that act on a recorded run: `resume`, `retry`, `cancel`,
//! `delete`, `answer` and `resolve`, each a thin layer over the host.
//! Apart from `durable.rs` (setup and `troupe run --store`) so that each
//! command's arguments sit next to what it does.

use super::{
    DurabilityArg, StoreArg, parse_history_keep, read_answers, report, report_error, run_id,
};
use crate::ExitStatus;
use crate::terminal::sanitize;
use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;
use troupe_host::{AnswerInput, Cancel, Host, Overrides, Resolution};
use troupe_store::Store;

/// Model and run options a resuming command may override.
#[derive(Debug, Args)]
pub struct OverrideArgs {
    /// Use this default model from now on instead of the recorded one
    /// (recorded as an override).
    #[arg(long, value_name = "SPEC")]
    pub llm: Option<String>,
    /// A model for one lifeline or action from now on: `KEY=SPEC`.
    #[arg(long = "llm-for", value_name = "KEY=SPEC")]
    pub llm_for: Vec<String>,
    /// A new deadline for every asynchronous action, e.g. `30s`.
    #[arg(long, value_name = "DURATION", value_parser = crate::commands::run::parse_duration)]
    pub timeout: Option<std::time::Duration>,
    /// A new durability for the run's records.
    #[arg(long, value_enum)]
    pub durability: Option<DurabilityArg>,
    /// Keep at least the last EVENTS events of the history from now on
    /// (older ones are pruned from a checkpoint on).
    #[arg(long, value_name = "EVENTS", value_parser = parse_history_keep)]
    pub history_keep: Option<u64>,
    /// Answer `extern` actions that have no implementation with mock values.
    #[arg(long)]
    pub mock_externs: bool,
    /// Answers to human tasks (JSON keyed by `Lifeline.action` or `action`).
    #[arg(long, value_name = "FILE")]
    pub answers: Option<PathBuf>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

impl OverrideArgs {
    fn overrides(&self) -> Overrides {
        Overrides {
            llm: self.llm.clone(),
            llm_for: self.llm_for.clone(),
            timeout_ms: self.timeout.map(|t| t.as_millis() as u64),
            durability: self.durability.map(Into::into),
            mock_externs: self.mock_externs,
            history_keep: self.history_keep,
        }
    }
}

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The run, e.g. `run-3`.
    pub run: String,
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub with: OverrideArgs,
}

/// `troupe resume RUN`: continue a run with its recorded source, inputs and
/// settings.
pub fn resume(args: &ResumeArgs, color: crate::ColorChoice) -> Result<ExitStatus> {
    let host = args.store.host()?;
    let run = run_id(&args.run)?;
    let detail = host.store().run(run)?;
    if detail.summary.status.is_final() {
        crate::note!(
            "{} is {} already; nothing to resume{}",
            detail.summary.name,
            detail.summary.status,
            if detail.summary.status == troupe_store::RunStatus::Failed {
                format!(
                    " (`troupe retry {}` continues a failed run)",
                    detail.summary.name
                )
            } else {
                String::new()
            }
        );
        return Ok(ExitStatus::Success);
    }
    if let Err(e) = host.claim(run) {
        return Ok(report_error(&e, color));
    }
    drive(&host, run, &args.with, color)
}

fn drive(
    host: &Host,
    run: i64,
    with: &OverrideArgs,
    color: crate::ColorChoice,
) -> Result<ExitStatus> {
    let answers = read_answers(with.answers.as_deref())?;
    match crate::signals::block_on("the run", host.drive(run, &with.overrides(), answers))? {
        Ok(f) => report(&f, with.json),
        Err(e) => Ok(report_error(&e, color)),
    }
}

#[derive(Debug, Args)]
pub struct RetryArgs {
    /// The failed run, e.g. `run-3`.
    pub run: String,
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub with: OverrideArgs,
}

/// `troupe retry RUN`: continue a failed run from its last durable step.
pub fn retry(args: &RetryArgs, color: crate::ColorChoice) -> Result<ExitStatus> {
    let host = args.store.host()?;
    let run = run_id(&args.run)?;
    if let Err(e) = host.retry(run) {
        return Ok(report_error(&e, color));
    }
    drive(&host, run, &args.with, color)
}

#[derive(Debug, Args)]
pub struct CancelArgs {
    /// The run, e.g. `run-3`.
    pub run: String,
    #[command(flatten)]
    pub store: StoreArg,
    /// Why (recorded with the run).
    #[arg(long, default_value = "cancelled from the command line")]
    pub reason: String,
}

/// `troupe cancel RUN`.
pub fn cancel(args: &CancelArgs, color: crate::ColorChoice) -> Result<ExitStatus> {
    let host = args.store.host()?;
    let run = run_id(&args.run)?;
    let name = Store::run_name(run);
    match host.cancel(run, &args.reason) {
        Ok(Cancel::Cancelled) => {
            crate::note!("cancelled {name}");
            Ok(ExitStatus::Success)
        }
        Ok(Cancel::Requested { owner }) => {
            // The owner stops at its next renewal: wait for it, a while.
            let deadline = std::time::Instant::now() + host.config().lease * 2;
            while std::time::Instant::now() < deadline {
                if host.store().run(run)?.summary.status == troupe_store::RunStatus::Cancelled {
                    crate::note!("cancelled {name} (its owner {owner} stopped it)");
                    return Ok(ExitStatus::Success);
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            crate::note!("asked {owner} to cancel {name}; it stops at its next lease renewal");
            Ok(ExitStatus::Success)
        }
        Err(e) => Ok(report_error(&e, color)),
    }
}

#[derive(Debug, Args)]
pub struct DeleteArgs {
    /// The runs, e.g. `run-3 run-4`.
    #[arg(required = true)]
    pub runs: Vec<String>,
    #[command(flatten)]
    pub store: StoreArg,
}

/// `troupe delete RUN…`.
pub fn delete(args: &DeleteArgs, color: crate::ColorChoice) -> Result<ExitStatus> {
    let host = args.store.host()?;
    let mut status = ExitStatus::Success;
    for r in &args.runs {
        let run = run_id(r)?;
        match host.delete(run) {
            Ok(()) => crate::note!("deleted {}", Store::run_name(run)),
            Err(e) => status = report_error(&e, color),
        }
    }
    Ok(status)
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("answer").required(true).args(["yes", "no", "value", "json"])))]
pub struct AnswerArgs {
    /// The task, e.g. `task-4` (see `troupe tasks`).
    pub task: String,
    #[command(flatten)]
    pub store: StoreArg,
    /// Confirm.
    #[arg(long)]
    pub yes: bool,
    /// Decline.
    #[arg(long)]
    pub no: bool,
    /// The answer as text, read by the task's type: a choice of a select,
    /// a number for an `Int`, the text of an input or edit.
    #[arg(long, value_name = "V")]
    pub value: Option<String>,
    /// The answer as JSON (records, lists).
    #[arg(long, value_name = "J")]
    pub json: Option<String>,
    /// Who answers (recorded with the answer).
    #[arg(long, default_value = "cli")]
    pub by: String,
}

pub fn answer(args: &AnswerArgs, color: crate::ColorChoice) -> Result<ExitStatus> {
    let host = args.store.host()?;
    let input = if args.yes {
        AnswerInput::Yes
    } else if args.no {
        AnswerInput::No
    } else if let Some(v) = &args.value {
        AnswerInput::Value(v.clone())
    } else {
        AnswerInput::Json(args.json.clone().unwrap_or_default())
    };
    match host.answer(&args.task, input, &args.by) {
        Ok(t) => {
            crate::note!(
                "answered {} ({}/{}) for {}",
                t.id,
                sanitize(&t.lifeline),
                sanitize(&t.action),
                t.run
            );
            Ok(ExitStatus::Success)
        }
        Err(e) => Ok(report_error(&e, color)),
    }
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("how").required(true).args(["done", "retry"])))]
pub struct ResolveArgs {
    /// The run, e.g. `run-3`.
    pub run: String,
    /// The step, e.g. `Ledger/record_decision#0` (shown by `troupe status RUN`).
    pub step: String,
    #[command(flatten)]
    pub store: StoreArg,
    /// The effect did happen: record these outputs (a JSON array, one item
    /// per output, or the value of a single output).
    #[arg(long, value_name = "JSON")]
    pub done: Option<String>,
    /// The effect did not happen: perform it again when the run resumes.
    #[arg(long)]
    pub retry: bool,
}

pub fn resolve(args: &ResolveArgs, color: crate::ColorChoice) -> Result<ExitStatus> {
    let host = args.store.host()?;
    let run = run_id(&args.run)?;
    let how = match &args.done {
        None => Resolution::Retry,
        Some(text) => {
            Resolution::Done(serde_json::from_str(text).context("--done is not valid JSON")?)
        }
    };
    if let Err(e) = host.resolve(run, &args.step, how) {
        return Ok(report_error(&e, color));
    }
    let name = Store::run_name(run);
    crate::note!(
        "settled {} of {name}; continue it with `troupe resume {name}`",
        args.step
    );
    Ok(ExitStatus::Success)
}
