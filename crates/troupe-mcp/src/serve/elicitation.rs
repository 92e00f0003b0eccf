//! People's tasks as elicitation forms, for a client that asks its own
//! user (MCP 2026-07-28 input-required results): the form a task's answer
//! takes, and the answer read back from the client's response.
//!
//! An elicitation form is a flat object of primitive fields. A task whose
//! answer is a record (of primitive fields) is asked as that record's
//! fields; any other answer (a Bool, a choice, a number, a text) as one
//! field `answer` with the answer's own schema and the task's question as
//! its title.

use serde_json::{Value as J, json};
use troupe_store::TaskRow;

/// The field that carries a non-record answer.
const ANSWER: &str = "answer";

/// Pending tasks as input requests: one `elicitation/create` form per
/// task, keyed by task id.
pub fn requests(tasks: &[TaskRow]) -> serde_json::Map<String, J> {
    tasks
        .iter()
        .map(|t| {
            (
                t.id.clone(),
                json!({
                    "method": "elicitation/create",
                    "params": {
                        "mode": "form",
                        "message": message(t),
                        "requestedSchema": form(t),
                    }
                }),
            )
        })
        .collect()
}

/// What the person is told: the task's question, and whose it is.
pub fn message(t: &TaskRow) -> String {
    format!("{} ({} at {}, {})", t.prompt, t.action, t.lifeline, t.run)
}

/// The form (an elicitation `requestedSchema`) for task `t`.
pub fn form(t: &TaskRow) -> J {
    let schema = t
        .schema
        .clone()
        .unwrap_or_else(|| json!({"type": "string"}));
    if is_flat_record(&schema) {
        return schema;
    }
    let mut field = schema;
    if let Some(obj) = field.as_object_mut() {
        obj.insert("title".into(), json!(t.prompt));
    }
    json!({
        "type": "object",
        "properties": { ANSWER: field },
        "required": [ANSWER],
    })
}

/// The answer in the client's response to task `t`'s form, when the user
/// accepted; `None` when they declined or cancelled (the task stays
/// pending) or the response is not one.
pub fn accepted(t: &TaskRow, response: &J) -> Option<J> {
    if response.get("action").and_then(J::as_str) != Some("accept") {
        return None;
    }
    let content = response.get("content")?;
    match t.schema.as_ref() {
        Some(schema) if is_flat_record(schema) => Some(content.clone()),
        _ => content.get(ANSWER).cloned(),
    }
}

/// Whether `schema` is an object whose properties are all primitive.
fn is_flat_record(schema: &J) -> bool {
    schema.get("type").and_then(J::as_str) == Some("object")
        && schema
            .get("properties")
            .and_then(J::as_object)
            .is_some_and(|props| {
                props.values().all(|p| {
                    matches!(
                        p.get("type").and_then(J::as_str),
                        Some("string" | "number" | "integer" | "boolean")
                    )
                })
            })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(schema: J) -> TaskRow {
        TaskRow {
            id: "task-1".into(),
            run: "run-1".into(),
            key: "A/ok#0".into(),
            lifeline: "A".into(),
            action: "ok".into(),
            kind: troupe_store::TaskKind::Confirm,
            prompt: "Approve?".into(),
            prefill: None,
            options: Vec::new(),
            ty: "Bool".into(),
            schema: Some(schema),
            status: troupe_store::TaskStatus::Pending,
            answer: None,
            answered_by: None,
            created_at: "t".into(),
            answered_at: None,
        }
    }

    #[test]
    fn a_bool_is_one_field_and_a_record_its_fields() {
        let t = task(json!({"type": "boolean"}));
        assert_eq!(
            form(&t),
            json!({"type": "object", "properties": {"answer": {"type": "boolean", "title": "Approve?"}}, "required": ["answer"]})
        );
        let ok = json!({"action": "accept", "content": {"answer": true}});
        assert_eq!(accepted(&t, &ok), Some(json!(true)));
        assert_eq!(accepted(&t, &json!({"action": "decline"})), None);
        let record = json!({"type": "object", "properties": {"amount": {"type": "integer"}, "note": {"type": "string"}}, "required": ["amount", "note"]});
        let r = task(record.clone());
        assert_eq!(form(&r), record);
        let got = json!({"action": "accept", "content": {"amount": 3, "note": "ok"}});
        assert_eq!(accepted(&r, &got), Some(json!({"amount": 3, "note": "ok"})));
    }
}
