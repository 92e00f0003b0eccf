//! Answering a human task from the web page, the API, a chat or a webhook:
//! the same validation as `troupe answer` (a select must be one of its
//! options, a confirm must be a boolean), then `Store::answer`, where the
//! first answer wins.

use serde::Deserialize;
use troupe_store::{Store, StoreError, TaskRow};

/// An answer as a person gives it, like `troupe answer`'s flags.
#[derive(Debug, Clone, PartialEq)]
pub enum AnswerInput {
    /// `--yes`.
    Yes,
    /// `--no`.
    No,
    /// `--value V`: a choice of a select, or the text of an input or edit.
    Value(String),
    /// `--json J`: the answer as JSON text.
    Json(String),
    /// An answer already parsed as JSON (the API's `answer` field).
    Raw(serde_json::Value),
}

#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    #[error("{0}")]
    Unknown(String),
    #[error("{0}")]
    Invalid(String),
    /// Someone answered first.
    #[error("{0}")]
    Conflict(String),
    #[error(transparent)]
    Store(StoreError),
}

impl From<StoreError> for AnswerError {
    fn from(e: StoreError) -> AnswerError {
        match e {
            StoreError::UnknownTask(_) | StoreError::UnknownRun(_) => {
                AnswerError::Unknown(e.to_string())
            }
            StoreError::Conflict(m) => AnswerError::Conflict(m),
            e => AnswerError::Store(e),
        }
    }
}

/// The JSON value of `input` for `task`, validated like `troupe answer`.
pub fn answer_value(task: &TaskRow, input: AnswerInput) -> Result<serde_json::Value, AnswerError> {
    let answer = match input {
        AnswerInput::Yes => serde_json::Value::Bool(true),
        AnswerInput::No => serde_json::Value::Bool(false),
        AnswerInput::Value(v) => {
            if task.kind == "select" && !task.options.contains(&v) {
                return Err(AnswerError::Invalid(format!(
                    "`{v}` is not a choice of {}; the choices are {}",
                    task.id,
                    task.options.join(", ")
                )));
            }
            serde_json::Value::String(v)
        }
        AnswerInput::Json(text) => serde_json::from_str(&text)
            .map_err(|e| AnswerError::Invalid(format!("the answer is not valid JSON: {e}")))?,
        AnswerInput::Raw(v) => v,
    };
    if task.kind == "confirm" && !answer.is_boolean() {
        return Err(AnswerError::Invalid(format!(
            "{} asks for a confirmation: answer yes or no",
            task.id
        )));
    }
    Ok(answer)
}

/// Validates and records an answer; the first answer wins
/// ([`AnswerError::Conflict`] otherwise). Blocking (a short SQLite write).
pub fn submit(
    store: &Store,
    task_id: &str,
    input: AnswerInput,
    by: &str,
) -> Result<TaskRow, AnswerError> {
    let task = store.task(task_id)?;
    let value = answer_value(&task, input)?;
    Ok(store.answer(&task.id, &value, by)?)
}

/// An answer in JSON (the API and the webhook endpoint): exactly one of
/// `yes`, `no`, `value`, `json` or `answer`, and optionally `by`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerBody {
    #[serde(default)]
    pub yes: bool,
    #[serde(default)]
    pub no: bool,
    pub value: Option<String>,
    pub json: Option<String>,
    pub answer: Option<serde_json::Value>,
    pub by: Option<String>,
    /// The per-task token of a webhook answer.
    pub token: Option<String>,
}

impl AnswerBody {
    pub fn input(&self) -> Result<AnswerInput, AnswerError> {
        let mut given = Vec::new();
        if self.yes {
            given.push(AnswerInput::Yes);
        }
        if self.no {
            given.push(AnswerInput::No);
        }
        if let Some(v) = &self.value {
            given.push(AnswerInput::Value(v.clone()));
        }
        if let Some(j) = &self.json {
            given.push(AnswerInput::Json(j.clone()));
        }
        if let Some(a) = &self.answer {
            given.push(AnswerInput::Raw(a.clone()));
        }
        match given.len() {
            1 => Ok(given.remove(0)),
            _ => Err(AnswerError::Invalid(
                "give exactly one of `yes: true`, `no: true`, `value`, `json` or `answer`".into(),
            )),
        }
    }
}

/// Text typed in a chat reply: the text itself for a task whose answer
/// type is `Text`; JSON otherwise (a reply that is not JSON is refused, as
/// the run would refuse it).
pub fn text_input(task_type: Option<&str>, text: &str) -> Result<AnswerInput, AnswerError> {
    if task_type.is_none_or(|t| t == "Text") {
        return Ok(AnswerInput::Value(text.to_owned()));
    }
    let text = text.trim();
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(_) => Ok(AnswerInput::Json(text.to_owned())),
        Err(_) => Err(AnswerError::Invalid(format!(
            "this task wants a {} (as JSON, e.g. 42 or \"text\"), not `{}`",
            task_type.unwrap_or("value"),
            crate::html::clip(text, 40)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(kind: &str, options: &[&str]) -> TaskRow {
        TaskRow {
            id: "task-1".into(),
            run: "run-1".into(),
            key: "A/x#0".into(),
            lifeline: "A".into(),
            action: "x".into(),
            kind: kind.into(),
            prompt: "?".into(),
            prefill: None,
            options: options.iter().map(|s| s.to_string()).collect(),
            status: "pending".into(),
            answer: None,
            answered_by: None,
            created_at: String::new(),
            answered_at: None,
        }
    }

    #[test]
    fn validates_like_the_cli() {
        let c = task("confirm", &[]);
        assert_eq!(
            answer_value(&c, AnswerInput::Yes).unwrap(),
            serde_json::json!(true)
        );
        assert!(matches!(
            answer_value(&c, AnswerInput::Value("maybe".into())),
            Err(AnswerError::Invalid(_))
        ));
        assert!(matches!(
            answer_value(&c, AnswerInput::Json("1".into())),
            Err(AnswerError::Invalid(_))
        ));
        let s = task("select", &["red", "blue"]);
        assert_eq!(
            answer_value(&s, AnswerInput::Value("red".into())).unwrap(),
            serde_json::json!("red")
        );
        assert!(matches!(
            answer_value(&s, AnswerInput::Value("green".into())),
            Err(AnswerError::Invalid(_))
        ));
        let i = task("input", &[]);
        assert!(matches!(
            answer_value(&i, AnswerInput::Json("{".into())),
            Err(AnswerError::Invalid(_))
        ));
    }

    #[test]
    fn body_needs_exactly_one_answer() {
        let b: AnswerBody = serde_json::from_str(r#"{"yes": true, "value": "x"}"#).unwrap();
        assert!(b.input().is_err());
        let b: AnswerBody = serde_json::from_str(r#"{}"#).unwrap();
        assert!(b.input().is_err());
        let b: AnswerBody = serde_json::from_str(r#"{"no": true}"#).unwrap();
        assert_eq!(b.input().unwrap(), AnswerInput::No);
        assert!(serde_json::from_str::<AnswerBody>(r#"{"yes": true, "bogus": 1}"#).is_err());
    }

    #[test]
    fn chat_text_is_json_only_for_typed_inputs() {
        assert_eq!(
            text_input(Some("Text"), "42").unwrap(),
            AnswerInput::Value("42".into())
        );
        assert_eq!(
            text_input(Some("Int"), " 42").unwrap(),
            AnswerInput::Json("42".into())
        );
        assert!(matches!(
            text_input(Some("Int"), "forty"),
            Err(AnswerError::Invalid(_))
        ));
    }
}
