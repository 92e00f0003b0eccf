//! `troupe contracts …`: lint MCP tools against MCP+, convert SGD schemas to
//! MCP / MCP+ and back, and compare their behaviour by bisimulation.
//!
//! The work is `troupe_contracts::ops`'s; this module parses the arguments
//! ([`args`]), writes the text, JSON or SARIF, and decides the exit status:
//! * `lint` — 1 if any finding has severity *error*, else 0;
//! * `from-sgd`, `to-sgd` — 0;
//! * `bisim` — 1 if some service is not structurally bisimilar to its Φ image or not
//!   behaviourally bisimilar to its Φ⁺ image (either would be a bug in Φ or Φ⁺), else 0;
//!   SGD ≁ MCP behaviourally is the expected finding and does not fail. With two files:
//!   1 if some pair differs at either level (or has no partner);
//! * `lock` — 0;
//! * any error (a file that cannot be read, an unknown rule or service) — 2.

mod args;

pub use args::ContractsCommand;
use args::{BisimArgs, FromSgdArgs, LintArgs, LintFormat, LockArgs, ToSgdArgs};

use crate::ExitStatus;
use anyhow::Result;
use serde::Serialize;
use std::io::Write;
use troupe_contracts::ContractsError;
use troupe_contracts::lint::render::{render_grouped, render_sarif, render_text};
use troupe_contracts::ops;
use troupe_contracts::phi::ToolListsDocument;
use troupe_contracts::render::{render_bisim, render_inversion, render_sides};

pub fn run(cmd: ContractsCommand) -> Result<ExitStatus> {
    // Not locked for the whole command: `Stdout` locks per write.
    let mut out = std::io::stdout();
    match execute(cmd, &mut out) {
        Ok(status) => Ok(status),
        Err(e) => {
            out.flush()?;
            let hint = match e {
                ContractsError::UnknownRule(_) => " (see `troupe contracts lint --help`)",
                _ => "",
            };
            crate::note!("error: {e}{hint}");
            Ok(ExitStatus::Usage)
        }
    }
}

/// Runs one subcommand, writing to `out`; its exit status (see the module
/// docs), or the error that stopped it.
fn execute(cmd: ContractsCommand, out: &mut dyn Write) -> Result<ExitStatus, ContractsError> {
    match cmd {
        ContractsCommand::Lint(args) => lint(&args, out),
        ContractsCommand::FromSgd(args) => from_sgd(&args, out),
        ContractsCommand::ToSgd(args) => to_sgd(&args, out),
        ContractsCommand::Bisim(args) => bisim(&args, out),
        ContractsCommand::Lock(args) => lock(&args, out),
    }
}

/// 1 when `failed`, else 0.
fn failed_if(failed: bool) -> ExitStatus {
    if failed {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    }
}

/// Writes `value` as JSON, serialized directly (a `serde_json::Value` would sort object
/// keys and lose the order of SGD's optional slots).
fn write_json<T: Serialize + ?Sized>(
    out: &mut dyn Write,
    value: &T,
    compact: bool,
) -> Result<(), ContractsError> {
    let text = if compact {
        serde_json::to_string(value)
    } else {
        serde_json::to_string_pretty(value)
    };
    let text = text.map_err(|source| ContractsError::Json {
        what: "output".into(),
        source,
    })?;
    writeln!(out, "{text}")?;
    Ok(())
}

fn lint(args: &LintArgs, out: &mut dyn Write) -> Result<ExitStatus, ContractsError> {
    let outcome = ops::lint(&args.into())?;
    let format = if args.json {
        LintFormat::Json
    } else {
        args.format
    };
    match format {
        LintFormat::Json => write_json(out, &outcome, false)?,
        LintFormat::Sarif => {
            let uri = args.tools.display().to_string();
            write_json(out, &render_sarif(&outcome.servers, &uri), false)?;
        }
        LintFormat::Text => {
            if args.tool.is_some() {
                out.write_all(render_text(&outcome.servers).as_bytes())?;
            } else {
                out.write_all(render_grouped(&outcome.servers).as_bytes())?;
            }
            for name in &outcome.unmatched_contracts {
                writeln!(
                    out,
                    "\nnote: the sidecar has a contract for `{name}`, which no server has"
                )?;
            }
        }
    }
    Ok(failed_if(outcome.errors > 0))
}

fn lock(args: &LockArgs, out: &mut dyn Write) -> Result<ExitStatus, ContractsError> {
    let lock = ops::lock(&args.tools)?;
    match &args.output {
        Some(path) => std::fs::write(path, lock.to_json() + "\n").map_err(|source| {
            ContractsError::WriteFile {
                path: path.clone(),
                source,
            }
        })?,
        None => writeln!(out, "{}", lock.to_json())?,
    }
    Ok(ExitStatus::Success)
}

fn from_sgd(args: &FromSgdArgs, out: &mut dyn Write) -> Result<ExitStatus, ContractsError> {
    let lists = ops::from_sgd(&args.schema, args.plus, args.service.as_deref())?;
    write_json(out, &ToolListsDocument(&lists), args.json)?;
    Ok(ExitStatus::Success)
}

fn to_sgd(args: &ToSgdArgs, out: &mut dyn Write) -> Result<ExitStatus, ContractsError> {
    let inversion = ops::to_sgd(&args.tools, args.contracts.as_deref())?;
    if args.json {
        write_json(out, &inversion, false)?;
    } else {
        for report in &inversion.report {
            out.write_all(render_inversion(report).as_bytes())?;
        }
        writeln!(out, "\nSGD schema:")?;
        write_json(out, &inversion.schema, false)?;
    }
    Ok(ExitStatus::Success)
}

fn bisim(args: &BisimArgs, out: &mut dyn Write) -> Result<ExitStatus, ContractsError> {
    if let Some(other) = &args.other {
        let outcome = ops::bisim_sides(&args.schema, other, args.mcp, args.service.as_deref())?;
        if args.json {
            write_json(
                out,
                &serde_json::json!({
                    "comparisons": outcome.comparisons,
                    "unpaired": outcome.unpaired,
                }),
                false,
            )?;
        } else {
            out.write_all(render_sides(&outcome).as_bytes())?;
        }
        return Ok(failed_if(outcome.differs()));
    }
    let verdicts = ops::bisim(&args.schema, args.service.as_deref())?;
    if args.json {
        write_json(
            out,
            &serde_json::to_value(&verdicts).unwrap_or_default(),
            false,
        )?;
    } else {
        out.write_all(render_bisim(&verdicts).as_bytes())?;
    }
    Ok(failed_if(verdicts.iter().any(ops::refutes_phi)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(subcommand)]
        command: ContractsCommand,
    }

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn parses_the_subcommands() {
        let cli =
            Cli::try_parse_from(["x", "from-sgd", "s.json", "--plus", "--service", "B"]).unwrap();
        assert!(matches!(
            cli.command,
            ContractsCommand::FromSgd(FromSgdArgs { plus: true, .. })
        ));
        let cli = Cli::try_parse_from(["x", "lint", "t.json", "--json"]).unwrap();
        assert!(matches!(
            cli.command,
            ContractsCommand::Lint(LintArgs { json: true, .. })
        ));
    }

    #[test]
    fn a_missing_file_is_an_error() {
        let cli = Cli::try_parse_from(["x", "bisim", "/nonexistent/schema.json"]).unwrap();
        assert!(matches!(
            execute(cli.command, &mut Vec::new()),
            Err(ContractsError::Read { .. })
        ));
    }
}
