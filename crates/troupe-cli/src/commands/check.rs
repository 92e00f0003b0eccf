//! `troupe check`: parse and type-check workflow files.

use crate::render::{self, FileReport};
use crate::{ColorChoice, ExitStatus};
use anyhow::Result;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The `.troupe` files to check.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Print the diagnostics as JSON (one object with a `diagnostics` list).
    #[arg(long)]
    pub json: bool,
    /// A called tool without an MCP+ contract is an error (W0605), not a
    /// warning, as with `troupe run --deny-unverified` (`[contracts]
    /// unverified = "deny"` in troupe.toml says the same for every command;
    /// "allow" silences W0605).
    #[arg(long)]
    pub deny_unverified: bool,
}

/// What `check --json` prints.
#[derive(Debug, serde::Serialize)]
struct JsonReport {
    diagnostics: Vec<render::JsonDiagnostic>,
    summary: Summary,
}

#[derive(Debug, serde::Serialize)]
struct Summary {
    files: usize,
    errors: usize,
    warnings: usize,
}

pub fn run(args: &CheckArgs, color: ColorChoice) -> Result<ExitStatus> {
    let project = troupe_host::ProjectConfig::load(&std::env::current_dir()?)?;
    let unverified = crate::commands::run::unverified_policy(args.deny_unverified, &project);
    let mut status = ExitStatus::Success;
    let mut json = Vec::new();
    let mut errors = 0usize;
    let mut warnings = 0usize;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for path in &args.files {
        let shown = path.display().to_string();
        // The file with the files it imports, as one bundle text.
        let loaded = match troupe_check::load_file(path) {
            Ok(loaded) => loaded,
            Err(e) => {
                crate::note!("error: cannot read {shown}: {e}");
                status = ExitStatus::Usage;
                continue;
            }
        };
        let (program, mut diagnostics) = loaded.check();
        let text = loaded.text;
        // A well-typed file is then verified against the contracts of the
        // tools it calls (`contracts:` sidecars of its `mcp` servers).
        if let Some(program) = &program {
            let base = path.parent().unwrap_or(std::path::Path::new("."));
            diagnostics.extend(troupe_contracts::verify_workflows_with(
                program,
                Some(&text),
                base,
                &troupe_contracts::VerifyOptions {
                    deny_unverified: unverified == troupe_host::Unverified::Deny,
                    ..Default::default()
                },
            ));
            if unverified == troupe_host::Unverified::Allow {
                diagnostics.retain(|d| d.code != troupe_syntax::Code::UnverifiedTool);
            }
        }
        errors += diagnostics.iter().filter(|d| d.is_error()).count();
        warnings += diagnostics.iter().filter(|d| !d.is_error()).count();
        if diagnostics.iter().any(|d| d.is_error()) && status == ExitStatus::Success {
            status = ExitStatus::Failure;
        }
        let report = FileReport {
            path: &shown,
            text: &text,
            diagnostics: &diagnostics,
        };
        if args.json {
            json.extend(render::to_json(&report));
        } else {
            let mut buf = Vec::new();
            render::render_text(&report, color.enabled_for_stdout(), &mut buf);
            out.write_all(&buf)?;
        }
    }
    if args.json {
        let doc = JsonReport {
            diagnostics: json,
            summary: Summary {
                files: args.files.len(),
                errors,
                warnings,
            },
        };
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
    } else if status != ExitStatus::Usage {
        let files = args.files.len();
        let plural = |n: usize, w: &str| {
            if n == 1 {
                format!("{n} {w}")
            } else {
                format!("{n} {w}s")
            }
        };
        if errors == 0 && warnings == 0 {
            crate::note!("checked {}: no problems", plural(files, "file"));
        } else {
            crate::note!(
                "checked {}: {}, {}",
                plural(files, "file"),
                plural(errors, "error"),
                plural(warnings, "warning")
            );
        }
    }
    Ok(status)
}
