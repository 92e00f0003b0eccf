//! Answering a human task from the web page, the API, a chat or a webhook:
//! through the run lifecycle (`troupe-host`), which reads the answer by the
//! task's expected type and records it in canonical form; the first answer
//! wins. A wrongly typed answer is refused and the task stays pending.

use serde::Deserialize;
use std::sync::Arc;
use troupe_host::{Host, HostConfig, HostError, NoTools};
use troupe_store::{Store, StoreError, TaskRow};

pub use troupe_host::AnswerInput;

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

impl From<HostError> for AnswerError {
    fn from(e: HostError) -> AnswerError {
        match e {
            HostError::Store(s) => s.into(),
            e @ HostError::InvalidAnswer { .. } => AnswerError::Invalid(e.to_string()),
            e => AnswerError::Invalid(e.to_string()),
        }
    }
}

/// Validates and records an answer; the first answer wins
/// ([`AnswerError::Conflict`] otherwise). Blocking (a short SQLite write).
pub fn submit(
    store: &Store,
    task_id: &str,
    input: AnswerInput,
    by: &str,
) -> Result<TaskRow, AnswerError> {
    let dir = std::env::current_dir().unwrap_or_else(|_| ".".into());
    let host = Host::new(store.clone(), HostConfig::new(dir), Arc::new(NoTools));
    Ok(host.answer(task_id, input, by)?)
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
