//! How durable commands tell what happened: the host's notices, a
//! workflow's contract warnings, host errors with the hint that fits them,
//! and how a driven run ended (as text or `--json`). Apart from
//! `durable.rs` because every durable command reports through these, and
//! they are long.

use super::store_hint;
use crate::ExitStatus;
use crate::terminal::sanitize;
use anyhow::Result;
use troupe_host::{Finished, HostError, Notice, RunEnd};
use troupe_store::TaskKind;

/// Shows a host notice on stderr.
pub fn print_notice(notice: &Notice) {
    match notice {
        Notice::MockModel => crate::note!(
            "note: no model configured; using the mock model (choose one with --llm SPEC)"
        ),
        Notice::MockedExterns(names) => crate::note!(
            "note: no implementation for {}; using mock values (marked `mock` in the recorded steps)",
            names.join(", ")
        ),
        Notice::Resuming {
            run,
            recorded_steps,
            checkpoint,
        } => match checkpoint {
            Some(at) => crate::note!(
                "resuming {run} from its checkpoint after {at} events: {recorded_steps} recorded step(s) since will not be redone"
            ),
            None => {
                crate::note!("resuming {run}: {recorded_steps} recorded step(s) will not be redone")
            }
        },
        Notice::ContractFindings {
            file,
            source,
            diagnostics,
        } => note_diagnostics(file, source, diagnostics, false),
        Notice::NewBeside { run, others } => crate::note!(
            "started {run}; unfinished runs of this file with other inputs or another version are left as they are: {}",
            others.join(", ")
        ),
        Notice::Waiting {
            task,
            lifeline,
            run: _,
            action,
            kind,
            ty,
        } => {
            let how = match kind {
                TaskKind::Confirm => "--yes or --no".to_owned(),
                TaskKind::Acknowledge => "--yes (to acknowledge)".to_owned(),
                TaskKind::Select => "--value CHOICE".to_owned(),
                _ if ty == "Text" => "--value TEXT".to_owned(),
                _ => format!("--value/--json (a {})", sanitize(ty)),
            };
            crate::note!(
                "waiting for {task} ({} at {}): answer with `troupe answer {task} {how}`",
                sanitize(action),
                sanitize(lifeline)
            );
        }
    }
}

/// Shows the contract warnings of a workflow about to run (a tool without a
/// contract is named, never silent).
pub fn print_warnings(compiled: &troupe_host::Compiled, color: crate::ColorChoice) {
    if compiled.warnings.is_empty() {
        return;
    }
    note_diagnostics(
        &compiled.file,
        &compiled.source,
        &compiled.warnings,
        color.enabled_for_stderr(),
    );
}

/// Renders a file's diagnostics on standard error, as `check` renders them.
/// `diagnostics` of `path` as `troupe check` shows them, on stderr.
pub(crate) fn note_diagnostics(
    path: &str,
    text: &str,
    diagnostics: &[troupe_syntax::Diagnostic],
    color: bool,
) {
    let mut buf = Vec::new();
    crate::render::render_text(
        &crate::render::FileReport {
            path,
            text,
            diagnostics,
        },
        color,
        &mut buf,
    );
    crate::out::note_raw(&String::from_utf8_lossy(&buf));
}
/// Renders a host error; returns the exit status it maps to.
pub fn report_error(e: &HostError, color: crate::ColorChoice) -> ExitStatus {
    let status = report_error_only(e, color);
    if let HostError::Store(_) = e
        && let Some(hint) = store_hint(&e.to_string())
    {
        crate::note!("  hint: {}", sanitize(&hint));
    }
    status
}

fn report_error_only(e: &HostError, color: crate::ColorChoice) -> ExitStatus {
    match e {
        HostError::DoesNotCheck {
            file,
            source_text,
            diagnostics,
        }
        | HostError::Contracts {
            file,
            source_text,
            diagnostics,
        } => {
            note_diagnostics(file, source_text, diagnostics, color.enabled_for_stderr());
            if matches!(e, HostError::Contracts { .. }) {
                crate::note!(
                    "error: {file} breaks the contracts of the tools it calls; nothing was run"
                );
            } else {
                crate::note!("error: {file} does not check; nothing was run");
            }
            ExitStatus::Failure
        }
        HostError::Read { .. } | HostError::Input(_) | HostError::Placement(_) => {
            crate::note!("error: {}", sanitize(&e.to_string()));
            ExitStatus::Usage
        }
        HostError::InvalidAnswer {
            example, confirm, ..
        } => {
            crate::note!("error: {}", sanitize(&e.to_string()));
            let flag = match example {
                _ if *confirm => "--yes or --no".to_owned(),
                serde_json::Value::String(s) => format!("--value {}", shell_word(s)),
                serde_json::Value::Number(_) | serde_json::Value::Bool(_) => {
                    format!("--value {example}")
                }
                _ => format!("--json '{example}'"),
            };
            crate::note!("  hint: answer with {flag}; the task is still pending");
            ExitStatus::Failure
        }
        HostError::NeedsResolution { run, step, .. } => {
            crate::note!("error: {}", sanitize(&e.to_string()));
            crate::note!(
                "  hint: if it happened, `troupe resolve {run} {step} --done JSON` records its outputs; if not, `troupe resolve {run} {step} --retry`; then `troupe resume {run}`"
            );
            ExitStatus::Failure
        }
        HostError::WrongState {
            run,
            status: troupe_store::RunStatus::Failed,
            ..
        } => {
            crate::note!("error: {}", sanitize(&e.to_string()));
            crate::note!("  hint: `troupe retry {run}`");
            ExitStatus::Failure
        }
        e => {
            crate::note!("error: {}", sanitize(&e.to_string()));
            ExitStatus::Failure
        }
    }
}

/// `s` as one shell word (quoted when it has spaces or quotes).
fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_alphanumeric() || "-_.:/".contains(c))
    {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}
/// Prints how a driven run ended; returns the exit status.
pub(crate) fn report(finished: &Finished, json: bool) -> Result<ExitStatus> {
    let name = &finished.name;
    let json_error = |kind: &str, message: &str, hint: Option<&str>| -> std::io::Result<()> {
        if !json {
            return Ok(());
        }
        let mut doc = crate::commands::run::error_json(kind, message, hint);
        doc["error"]["run"] = serde_json::json!(name);
        crate::out::println(&doc.to_string())
    };
    let types = finished.compiled.types();
    match &finished.end {
        RunEnd::Done {
            results,
            verified,
            unmade,
        } => {
            if json {
                let results: serde_json::Map<_, _> = results
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_json(types)))
                    .collect();
                let doc = serde_json::json!({ "run": name, "status": "done", "results": results, "verified": verified.is_ok(), "unmade_calls": unmade });
                crate::out::println(&serde_json::to_string_pretty(&doc)?)?;
            } else {
                crate::commands::run::print_results(results, types)?;
                crate::commands::run::print_unmade(unmade);
            }
            match verified {
                Ok(_) => {
                    crate::note!(
                        "{name} done; verified: the recorded run is a run of `{}`",
                        finished.compiled.workflow().name
                    );
                    Ok(ExitStatus::Success)
                }
                Err(e) => {
                    crate::note!("error: {}", sanitize(e));
                    // The result was printed; the verdict is in it.
                    Ok(ExitStatus::Failure)
                }
            }
        }
        RunEnd::Failed(e) => {
            let hint = format!(
                "after a transient failure, `troupe retry {name}` continues it from its last durable step"
            );
            crate::note!("error: {}", sanitize(&e.to_string()));
            crate::note!("  hint: {hint}");
            json_error("run_failed", &e.to_string(), Some(&hint))?;
            Ok(ExitStatus::Failure)
        }
        RunEnd::NeedsResolution { step, message } => {
            let hint = format!(
                "if the effect happened, `troupe resolve {name} {step} --done JSON` records its outputs; if not, `troupe resolve {name} {step} --retry`; then `troupe resume {name}`"
            );
            crate::note!("error: {name}: {}", sanitize(message));
            crate::note!("  hint: {hint}");
            json_error("needs_resolution", message, Some(&hint))?;
            Ok(ExitStatus::Failure)
        }
        RunEnd::Cancelled { reason } => {
            crate::note!("{name} cancelled: {}", sanitize(reason));
            json_error("cancelled", &format!("{name} cancelled: {reason}"), None)?;
            Ok(ExitStatus::Failure)
        }
        RunEnd::LeaseLost => {
            let message = format!(
                "{name}: this process lost the run's lease (it was paused longer than the lease) and another process took the run over; it stopped here"
            );
            crate::note!("error: {message}");
            json_error(
                "lease_lost",
                &message,
                Some(&format!("`troupe status {name}` shows who runs it now")),
            )?;
            Ok(ExitStatus::Failure)
        }
        // Only workers park runs (`--park-after`), never this command.
        RunEnd::Parked { .. } => {
            crate::note!(
                "{name}: parked until a person answers; `troupe tasks` lists what it waits for"
            );
            Ok(ExitStatus::Success)
        }
        RunEnd::Paused => {
            let message = format!("{name} was paused at a step boundary; it holds no lease");
            let hint = format!("`troupe unpause {name}`, then `troupe resume {name}` continues it");
            crate::note!("{message}");
            crate::note!("  hint: {hint}");
            json_error("paused", &message, Some(&hint))?;
            Ok(ExitStatus::Failure)
        }
        RunEnd::Interrupted => {
            let message = format!("{name} stopped at a step boundary; its records are kept");
            let hint = format!(
                "`troupe resume {name}` (or the same command again) continues it where it stopped"
            );
            crate::note!("{message}");
            crate::note!("  hint: {hint}");
            json_error("interrupted", &message, Some(&hint))?;
            Ok(ExitStatus::Signalled(
                crate::signals::received().unwrap_or(2),
            ))
        }
        // Only workers drive parts (`troupe worker`), never this command.
        RunEnd::PartDone { part, .. } => {
            crate::note!("{name}: part {part} ended");
            Ok(ExitStatus::Success)
        }
    }
}
