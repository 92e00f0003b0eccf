//! Typed human answers. Every channel (the CLI, the terminal, the web form
//! and API, chats, webhooks, MCP) hands the host an [`AnswerInput`]; the host
//! reads it as a value of the task's expected type, taken from the run's
//! recorded program, and records it in its canonical JSON form only if it
//! fits. A wrong answer is refused with the expected type and an example,
//! and the task stays pending: an answer can never fail a run.

use crate::HostError;
use troupe_check::ir::{Action, ActionKind, AnswerKind};
use troupe_check::{Type, TypeTable, Value};

/// An answer as a person gives it.
#[derive(Debug, Clone, PartialEq)]
pub enum AnswerInput {
    Yes,
    No,
    /// Text typed by a person, read by the expected type (`42` for an
    /// `Int`, a choice's name for an enum, JSON for records and lists).
    Value(String),
    /// JSON text.
    Json(String),
    /// An answer already parsed as JSON (APIs, MCP).
    Raw(serde_json::Value),
}

/// The type a human action's answer must have, and how it is asked.
pub fn expected(action: &Action) -> (Type, AnswerKind) {
    let kind = match &action.kind {
        ActionKind::Human(h) => h.answer,
        _ => AnswerKind::Input,
    };
    let ty = action.outputs.first().map_or(Type::Text, |p| p.ty.clone());
    (ty, kind)
}

/// Reads `input` as a value of `ty`; the error says why it does not fit.
pub fn read(input: &AnswerInput, ty: &Type, types: &TypeTable) -> Result<Value, String> {
    match input {
        AnswerInput::Yes | AnswerInput::No if *ty == Type::Bool => {
            Ok(Value::Bool(*input == AnswerInput::Yes))
        }
        AnswerInput::Yes | AnswerInput::No => Err("a yes/no answer does not fit".into()),
        AnswerInput::Value(text) => Value::parse(text, ty, types),
        AnswerInput::Json(text) => {
            let json: serde_json::Value =
                serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
            Value::from_json(&json, ty, types)
        }
        AnswerInput::Raw(json) => Value::from_json(json, ty, types),
    }
}

/// A value of `ty` to show in an error, as JSON.
pub fn example(ty: &Type, types: &TypeTable) -> serde_json::Value {
    use serde_json::{Value as J, json};
    match ty {
        Type::Bool => json!(true),
        Type::Int => json!(42),
        Type::Float => json!(0.5),
        Type::Text => json!("some text"),
        Type::Json | Type::Error => json!({"any": "json"}),
        Type::Enum(id) => types
            .enum_def(*id)
            .values
            .first()
            .map_or(J::Null, |v| J::String(v.clone())),
        Type::Record(id) => J::Object(
            types
                .record_def(*id)
                .fields
                .iter()
                .map(|(n, t)| (n.clone(), example(t, types)))
                .collect(),
        ),
        Type::List(inner) => J::Array(vec![example(inner, types)]),
    }
}

/// Validates an answer to the task `task` (of `action`), returning the
/// canonical JSON to record.
pub fn validate(
    task: &str,
    action: &Action,
    types: &TypeTable,
    input: &AnswerInput,
) -> Result<serde_json::Value, HostError> {
    let (ty, kind) = expected(action);
    if kind == AnswerKind::Acknowledge {
        return acknowledge(task, input);
    }
    let shown = types.display(&ty).to_string();
    let expected = match (kind, &ty) {
        (AnswerKind::Confirm, _) => "a confirmation (yes or no)".to_owned(),
        (_, Type::Enum(id)) => {
            format!("one of {} ({shown})", types.enum_def(*id).values.join(", "))
        }
        _ => format!("a value of type {shown}"),
    };
    let example = match kind {
        AnswerKind::Confirm => serde_json::Value::Bool(true),
        _ => example(&ty, types),
    };
    read(input, &ty, types)
        .map(|v| v.to_json(types))
        .map_err(|why| HostError::InvalidAnswer {
            task: task.to_owned(),
            expected,
            why,
            example,
            confirm: kind == AnswerKind::Confirm,
        })
}

/// An answer to the confirmation of a tool call a model chose: yes or no.
pub fn validate_confirmation(
    task: &str,
    input: &AnswerInput,
) -> Result<serde_json::Value, HostError> {
    read(input, &Type::Bool, &TypeTable::default())
        .map(|v| v.to_json(&TypeTable::default()))
        .map_err(|why| HostError::InvalidAnswer {
            task: task.to_owned(),
            expected: "a confirmation (yes or no)".to_owned(),
            why,
            example: serde_json::Value::Bool(true),
            confirm: true,
        })
}

/// An acknowledgement: `yes`, or the empty record `{}` (as JSON, or an empty
/// value); recorded as `{}`. It cannot be declined.
fn acknowledge(task: &str, input: &AnswerInput) -> Result<serde_json::Value, HostError> {
    let empty = serde_json::Value::Object(serde_json::Map::new());
    let fits = match input {
        AnswerInput::Yes => true,
        AnswerInput::No => false,
        AnswerInput::Value(t) => t.trim().is_empty() || t.trim() == "{}",
        AnswerInput::Json(t) => {
            serde_json::from_str::<serde_json::Value>(t).is_ok_and(|j| j == empty)
        }
        AnswerInput::Raw(j) => *j == empty,
    };
    if fits {
        return Ok(empty);
    }
    Err(HostError::InvalidAnswer {
        task: task.to_owned(),
        expected: "an acknowledgement (yes, or the empty record {})".to_owned(),
        why: match input {
            AnswerInput::No => "an acknowledgement cannot be declined".to_owned(),
            _ => "an acknowledgement carries no value".to_owned(),
        },
        example: empty,
        confirm: true,
    })
}

/// Scripted answers from a JSON object keyed by `Lifeline.action` or
/// `action` (a list answers successive tasks).
pub fn scripted_answers(
    text: &str,
) -> Result<serde_json::Map<String, serde_json::Value>, HostError> {
    match serde_json::from_str(text) {
        Ok(serde_json::Value::Object(map)) => Ok(map),
        Ok(_) => Err(HostError::Input(
            "answers: expected a JSON object keyed by `Lifeline.action` or `action`".into(),
        )),
        Err(e) => Err(HostError::Input(format!("answers are not JSON: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn action_of(src: &str, name: &str) -> (Action, TypeTable) {
        let (program, d) = troupe_check::check_text(src);
        let program = program.unwrap_or_else(|| panic!("{d:?}"));
        let a = program
            .actions
            .iter()
            .find(|a| a.name == name)
            .unwrap()
            .clone();
        (a, program.types.clone())
    }

    const SRC: &str = r#"
enum Color { red, blue }
human n(q: Text) -> Int { ask: "How many? {q}" }
human ok(q: Text) -> Bool { ask: "OK? {q}" }
human pick(q: Text) -> Color { ask: "Which? {q}" }
workflow w(q: Text @ A) {
  lifelines A
  act A: x = n(q)
  act A: y = ok(q)
  act A: z = pick(q)
  return x @ A
}
"#;

    #[test]
    fn typed_answers_are_read_by_type() {
        let (n, types) = action_of(SRC, "n");
        assert_eq!(
            validate("task-1", &n, &types, &AnswerInput::Value("3".into())).unwrap(),
            serde_json::json!(3)
        );
        assert_eq!(
            validate(
                "task-1",
                &n,
                &types,
                &AnswerInput::Raw(serde_json::json!(4))
            )
            .unwrap(),
            serde_json::json!(4)
        );
        let e = validate("task-1", &n, &types, &AnswerInput::Value("three".into())).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("Int") && msg.contains("for example 42"),
            "{msg}"
        );
        assert!(validate("task-1", &n, &types, &AnswerInput::Json("\"3\"".into())).is_err());
        assert!(validate("task-1", &n, &types, &AnswerInput::Yes).is_err());

        let (ok, types) = action_of(SRC, "ok");
        assert_eq!(
            validate("t", &ok, &types, &AnswerInput::No).unwrap(),
            serde_json::json!(false)
        );
        assert!(validate("t", &ok, &types, &AnswerInput::Raw(serde_json::json!("on"))).is_err());

        let (pick, types) = action_of(SRC, "pick");
        assert_eq!(
            validate("t", &pick, &types, &AnswerInput::Value("blue".into())).unwrap(),
            serde_json::json!("blue")
        );
        let e = validate("t", &pick, &types, &AnswerInput::Json("\"green\"".into())).unwrap_err();
        assert!(e.to_string().contains("red, blue"), "{e}");
    }

    #[test]
    fn an_acknowledgement_is_yes_or_the_empty_record_and_never_no() {
        let (a, types) = action_of(
            "human notice(t: Text) { ask: \"Read {t}\" }\nworkflow w(t: Text @ A) {\n  act A: notice(t)\n}\n",
            "notice",
        );
        assert_eq!(expected(&a).1, AnswerKind::Acknowledge);
        let empty = serde_json::json!({});
        for ok in [
            AnswerInput::Yes,
            AnswerInput::Json("{}".into()),
            AnswerInput::Raw(empty.clone()),
            AnswerInput::Value(String::new()),
        ] {
            assert_eq!(
                validate("task-1", &a, &types, &ok).unwrap(),
                empty,
                "{ok:?}"
            );
        }
        for wrong in [
            AnswerInput::No,
            AnswerInput::Json("[]".into()),
            AnswerInput::Raw(serde_json::json!({"x": 1})),
            AnswerInput::Value("sure".into()),
        ] {
            assert!(validate("task-1", &a, &types, &wrong).is_err(), "{wrong:?}");
        }
    }
}
