//! Settling what a run waits on from outside: a person's typed answer to a
//! task, and `resolve` of an effect that started and never finished. Both
//! read the run's recorded program, so a value is checked against the
//! declaration the run was started with.

use crate::{AnswerInput, Host, HostError, Resolution, answer};
use std::sync::Arc;
use troupe_check::Value;
use troupe_check::ir::ActionKind;
use troupe_runtime::StepKey;
use troupe_store::{Store, StoreError, TaskKind, TaskRow, TaskStatus};

impl Host {
    /// Validates and records an answer to `task`: read as the task's
    /// expected type, recorded in canonical form; the first answer wins.
    /// A wrongly typed answer is refused and the task stays pending.
    pub fn answer(&self, task: &str, input: AnswerInput, by: &str) -> Result<TaskRow, HostError> {
        let row = self.store.task(task)?;
        if row.status != TaskStatus::Pending {
            return Err(HostError::Store(StoreError::Conflict(match row.status {
                TaskStatus::Cancelled => {
                    format!("{} was cancelled with its run {}", row.id, row.run)
                }
                _ => format!(
                    "{} was already answered by {} at {}; the first answer wins",
                    row.id,
                    row.answered_by.as_deref().unwrap_or("someone"),
                    row.answered_at.as_deref().unwrap_or("?")
                ),
            })));
        }
        let run =
            Store::parse_run_id(&row.run).ok_or_else(|| StoreError::UnknownRun(row.run.clone()))?;
        let compiled = self.recorded(run)?;
        let action = compiled
            .program
            .actions
            .iter()
            .find(|a| a.name == row.action)
            .ok_or_else(|| HostError::Recorded {
                run: row.run.clone(),
                message: format!("it has no action `{}`", row.action),
            })?;
        // A confirmation of a tool call a model chose names the tool.
        let value = if row.kind == TaskKind::Confirm && !matches!(action.kind, ActionKind::Human(_))
        {
            answer::validate_confirmation(&row.id, &input)?
        } else {
            answer::validate(&row.id, action, compiled.types(), &input)?
        };
        Ok(self.store.answer(&row.id, &value, by)?)
    }

    /// Settles an effect that started and never finished, validating the
    /// outputs of `Resolution::Done` against the action's declaration; the
    /// run can then be resumed.
    pub fn resolve(&self, run: i64, step: &str, how: Resolution) -> Result<(), HostError> {
        match how {
            Resolution::Retry => self.store.resolve(run, step, None)?,
            Resolution::Done(json) => {
                let compiled = self.recorded(run)?;
                let key = StepKey::parse(step).ok_or_else(|| {
                    HostError::Input(format!("`{step}` is not a step; a step looks like Lifeline/action#0 (the run's status lists its steps)"))
                })?;
                // A tool call a model chose is a sub-step
                // `Lifeline/action#k/TOOL#n` of its action's step; a step of
                // a plan's nested run is `Lifeline/planner#k/L/action#n`
                // (one of the program's own actions). Segments of the
                // action part: even for a chosen call, odd otherwise.
                let segments: Vec<&str> = key.action.split('/').collect();
                let name = segments.last().copied().unwrap_or(key.action.as_str());
                let chosen = segments.len().is_multiple_of(2);
                let action = compiled
                    .program
                    .actions
                    .iter()
                    .find(|a| a.name == name && (!chosen || matches!(a.kind, ActionKind::Tool(_))))
                    .ok_or_else(|| {
                        HostError::Input(format!("the workflow has no action `{name}`"))
                    })?;
                let items = match (&json, action.outputs.len()) {
                    (serde_json::Value::Array(items), n) if n != 1 => items.clone(),
                    (j, _) => vec![j.clone()],
                };
                if items.len() != action.outputs.len() {
                    return Err(HostError::Input(format!(
                        "`{}` has {} output(s); the answer gave {}",
                        action.name,
                        action.outputs.len(),
                        items.len()
                    )));
                }
                let values = items
                    .iter()
                    .zip(&action.outputs)
                    .map(|(j, p)| {
                        Value::from_json(j, &p.ty, compiled.types())
                            .map_err(|e| HostError::Input(format!("output `{}`: {e}", p.name)))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                if chosen {
                    // Recorded as the conversation records a call's outcome.
                    let outcome = serde_json::json!({"ok": items});
                    let values = [Value::Json(Arc::new(outcome.clone()))];
                    self.store.resolve(
                        run,
                        step,
                        Some((&values, serde_json::Value::Array(vec![outcome]))),
                    )?;
                } else {
                    self.store.resolve(
                        run,
                        step,
                        Some((&values, serde_json::Value::Array(items))),
                    )?;
                }
            }
        }
        Ok(())
    }
}
