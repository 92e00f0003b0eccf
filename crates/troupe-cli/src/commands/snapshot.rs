//! `troupe snapshot` and `troupe diff`: the semantic interface of a
//! workflow as JSON, and the differences between two versions of it. The
//! snapshot and the comparison are the host's (`troupe_host::snapshot`);
//! this module finds the two sides (a file, a snapshot, a recorded run)
//! and renders the result.

use crate::{ColorChoice, ExitStatus};
use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};
use troupe_host::snapshot::{self, Change, Snapshot};
use troupe_host::{Compiled, HostError};
use troupe_store::Store;

#[derive(Debug, Args)]
pub struct SnapshotArgs {
    /// A `.troupe` file, or a recorded run (`run:3`, `run-3`) whose
    /// recorded source is read from the store.
    #[arg(value_name = "FILE")]
    pub source: String,
    /// Which workflow, when the file declares several.
    #[arg(long, value_name = "NAME")]
    pub workflow: Option<String>,
    /// Write the snapshot to this file instead of standard output.
    #[arg(short, long, value_name = "SNAP.json")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub store: crate::commands::durable::StoreArg,
}

/// What may be left out of a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Ignore {
    /// The wording of prompts, system prompts and a person's questions.
    Prompts,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The old version: a `.troupe` file, a snapshot `.json` written by
    /// `troupe snapshot`, or a recorded run (`run:3`, `run-3`).
    pub old: String,
    /// The new version, in any of the same forms.
    pub new: String,
    /// Which workflow of a `.troupe` file, when it declares several.
    #[arg(long, value_name = "NAME")]
    pub workflow: Option<String>,
    /// Leave this out of the comparison.
    #[arg(long, value_enum, value_name = "WHAT")]
    pub ignore: Vec<Ignore>,
    /// Print `{"equal": bool, "changes": [...]}` instead of lines.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub store: crate::commands::durable::StoreArg,
}

/// A side that could not be had for a reason already reported (its
/// diagnostics were printed): the command exits with this status.
struct Reported(ExitStatus);

pub fn snapshot(args: &SnapshotArgs, color: ColorChoice) -> Result<ExitStatus> {
    let snap = match side(&args.source, args.workflow.as_deref(), &args.store, color)? {
        Ok(s) => s,
        Err(Reported(status)) => return Ok(status),
    };
    crate::out::write_or_print(args.output.as_deref(), &snap.to_json())?;
    Ok(ExitStatus::Success)
}

/// What `diff --json` prints.
#[derive(Debug, serde::Serialize)]
struct JsonDiff<'a> {
    equal: bool,
    changes: &'a [Change],
}

pub fn diff(args: &DiffArgs, color: ColorChoice) -> Result<ExitStatus> {
    let mut sides = Vec::new();
    for given in [&args.old, &args.new] {
        match side(given, args.workflow.as_deref(), &args.store, color)? {
            Ok(s) => sides.push(s),
            Err(Reported(status)) => return Ok(status),
        }
    }
    let ignore_prompts = args.ignore.contains(&Ignore::Prompts);
    let changes = snapshot::diff(&sides[0], &sides[1], ignore_prompts);
    if args.json {
        let doc = JsonDiff {
            equal: changes.is_empty(),
            changes: &changes,
        };
        crate::outln!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        let mut text = String::new();
        for c in &changes {
            text.push_str(&crate::terminal::sanitize(&c.to_string()));
            text.push('\n');
        }
        text.push_str(&match changes.len() {
            0 => "no differences\n".to_owned(),
            1 => "1 difference\n".to_owned(),
            n => format!("{n} differences\n"),
        });
        crate::out::print(&text)?;
    }
    Ok(if changes.is_empty() {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

/// The snapshot of one side: an existing file (a snapshot when it is JSON
/// with a `format` field, else a workflow), or else a run of the store.
fn side(
    given: &str,
    workflow: Option<&str>,
    store: &crate::commands::durable::StoreArg,
    color: ColorChoice,
) -> Result<std::result::Result<Snapshot, Reported>> {
    let path = Path::new(given);
    if !path.exists()
        && let Some(run) = run_ref(given)
    {
        let detail = store.open()?.run(run)?;
        let compiled = Compiled::recorded(&detail)?;
        return Ok(Ok(Snapshot::of(&compiled)));
    }
    if path.is_file() {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {given}"))?;
        if Snapshot::looks_like(&text) {
            return Ok(Ok(Snapshot::from_json(&text, given)?));
        }
    }
    match Compiled::load(path, workflow) {
        Ok(compiled) => Ok(Ok(Snapshot::of(&compiled))),
        Err(
            HostError::DoesNotCheck {
                file,
                source_text,
                diagnostics,
            }
            | HostError::Contracts {
                file,
                source_text,
                diagnostics,
            },
        ) => {
            // As `troupe check` shows them, on stderr: stdout is the diff.
            crate::commands::durable::note_diagnostics(
                &file,
                &source_text,
                &diagnostics,
                color.enabled_for_stderr(),
            );
            crate::note!("error: {file} does not check");
            Ok(Err(Reported(ExitStatus::Usage)))
        }
        // The message names its cause already (`{:#}` would repeat it).
        Err(e) => Err(anyhow::Error::msg(e.to_string())),
    }
}

/// `run:3`, `run-3` (or a bare `3`): a recorded run.
fn run_ref(given: &str) -> Option<i64> {
    Store::parse_run_id(given.strip_prefix("run:").unwrap_or(given))
}
