//! The tool calls models chose, read back from a run's records: one
//! reading for `troupe status`, `troupe trace` and the web page.
//!
//! A conversation records each call as the sub-step
//! `Lifeline/action#k/TOOL#n` (its arguments and result, error or refusal)
//! and each confirmation as `Lifeline/action#k/confirm#n` with its task
//! (who answered it); see `troupe-runtime`'s agent module.

use serde::Serialize;
use serde_json::Value as J;
use troupe_runtime::StepKey;
use troupe_store::{RunDetail, StepStatus, TaskRow};

/// How a chosen call ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "status", content = "detail")]
pub enum Outcome {
    /// The tool's outputs.
    Done(J),
    /// The tool (or its server) failed.
    Failed(String),
    /// Refused before the server saw it (an unmet `requires`).
    Refused(String),
    /// A person said no.
    Declined,
    /// Started and not finished (running, or waiting for `troupe resolve`).
    Started,
    /// Waiting for a person's confirmation.
    AwaitingConfirmation,
}

/// One tool call a model chose.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChosenCall {
    /// The `llm` action's step, e.g. `Agent/assist#0`.
    pub step: String,
    /// The call's index in that conversation.
    pub index: u64,
    pub tool: String,
    pub arguments: J,
    #[serde(flatten)]
    pub outcome: Outcome,
    /// Who confirmed it (`cli`, `web:…`, `script`, …), when it was confirmed.
    pub confirmed_by: Option<String>,
}

/// The chosen calls of a run, by step and index.
pub fn chosen_calls(detail: &RunDetail, tasks: &[TaskRow]) -> Vec<ChosenCall> {
    let mut out: Vec<ChosenCall> = Vec::new();
    let confirmation = |step: &str, n: u64| {
        tasks
            .iter()
            .find(|t| t.key == format!("{step}/confirm#{n}"))
    };
    for row in &detail.steps {
        let Some((step, what, n)) = sub_step(&row.key) else {
            continue;
        };
        if what == "turn" || what == "confirm" {
            continue;
        }
        let record = row
            .outputs
            .as_ref()
            .and_then(|o| o.get(0))
            .cloned()
            .unwrap_or(J::Null);
        let outcome = match (row.status, &record) {
            (StepStatus::Started, _) => Outcome::Started,
            (_, r) if r.get("ok").is_some() => Outcome::Done(unwrap_single(&r["ok"])),
            (_, r) if r.get("error").is_some() => Outcome::Failed(text(&r["error"])),
            (_, r) if r.get("refused").is_some() => Outcome::Refused(text(&r["refused"])),
            _ => Outcome::Started,
        };
        let task = confirmation(&step, n);
        out.push(ChosenCall {
            step,
            index: n,
            tool: what,
            arguments: record.get("arguments").cloned().unwrap_or(J::Null),
            outcome,
            confirmed_by: task
                .filter(|t| t.answer.as_deref() == Some("true"))
                .and_then(|t| t.answered_by.clone()),
        });
    }
    // Confirmations without a call record: declined, or still waiting.
    for t in tasks {
        let Some((step, what, n)) = sub_step(&t.key) else {
            continue;
        };
        if what != "confirm" || out.iter().any(|c| c.step == step && c.index == n) {
            continue;
        }
        let outcome = match t.answer.as_deref() {
            None => Outcome::AwaitingConfirmation,
            Some("true") => Outcome::Started,
            Some(_) => Outcome::Declined,
        };
        out.push(ChosenCall {
            step,
            index: n,
            tool: t.action.clone(),
            arguments: arguments_of(&t.prompt),
            outcome,
            confirmed_by: None,
        });
    }
    out.sort_by(|a, b| (&a.step, a.index).cmp(&(&b.step, b.index)));
    out
}

/// `Agent/assist#0/TOOL#3` → (`Agent/assist#0`, `TOOL`, 3).
fn sub_step(key: &str) -> Option<(String, String, u64)> {
    let k = StepKey::parse(key)?;
    let (parent, what) = k.action.rsplit_once('/')?;
    let (action, occurrence) = parent.rsplit_once('#')?;
    occurrence.parse::<u64>().ok()?;
    Some((
        format!("{}/{action}#{occurrence}", k.lifeline),
        what.to_owned(),
        k.occurrence,
    ))
}

fn unwrap_single(outputs: &J) -> J {
    match outputs.as_array().map(Vec::as_slice) {
        Some([one]) => one.clone(),
        _ => outputs.clone(),
    }
}

fn text(j: &J) -> String {
    j.as_str().map_or_else(|| j.to_string(), str::to_owned)
}

/// The arguments a confirmation task showed (the JSON object in its prompt).
fn arguments_of(prompt: &str) -> J {
    let (Some(a), Some(b)) = (prompt.find('{'), prompt.rfind('}')) else {
        return J::Null;
    };
    serde_json::from_str(&prompt[a..=b]).unwrap_or(J::Null)
}

/// One line per call, for people.
pub fn describe(call: &ChosenCall) -> String {
    let args = call.arguments.to_string();
    let outcome = match &call.outcome {
        Outcome::Done(v) => format!("→ {v}"),
        Outcome::Failed(e) => format!("failed: {e}"),
        Outcome::Refused(e) => format!("refused: {e}"),
        Outcome::Declined => "declined by a person; not called".to_owned(),
        Outcome::Started => "started, not finished".to_owned(),
        Outcome::AwaitingConfirmation => "waits for a person's confirmation".to_owned(),
    };
    let by = call
        .confirmed_by
        .as_ref()
        .map_or_else(String::new, |b| format!(" (confirmed by {b})"));
    format!(
        "{} #{} {}({args}) {outcome}{by}",
        call.step, call.index, call.tool
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sub_steps_are_read_and_others_are_not() {
        assert_eq!(
            sub_step("Agent/assist#0/book_ticket#3"),
            Some(("Agent/assist#0".into(), "book_ticket".into(), 3))
        );
        assert_eq!(sub_step("Agent/assist#0"), None);
        assert_eq!(sub_step("Agent/a/b#1"), None);
        assert_eq!(
            arguments_of("with:\n{\"a\": 1}\nAllow?"),
            serde_json::json!({"a": 1})
        );
    }
}
