//! The scripted backend: answers read from a JSON file, for tests and demos.
//!
//! The file is one JSON object keyed by `Lifeline.action` or `action` (the
//! former wins). A value is the answer: for one output the value itself
//! (`"approve"`, `true`, a record object — or `{"output": value}`), for several
//! outputs an object keyed by output name. A JSON array is a list of answers
//! taken **by occurrence index**: the k-th call of that action at that
//! lifeline gets item k, so a restarted run gets the same answers as the
//! first. Any other value answers every occurrence. An action whose one output
//! is itself a list is therefore scripted as a list of lists:
//! `"find_tickets": [[{…}, {…}], []]`.
//!
//! A `planner` is scripted like an `llm` with one `Text` output: each answer
//! is a plan's source. Attempt `j` of the `k`-th call of a planner at a
//! lifeline is occurrence `k·(retries + 1) + j`, so
//! `"solve": ["a plan that does not check", "one that does"]` scripts a
//! re-ask; the plan's own model calls are keyed by its lifelines.
//!
//! ```json
//! {
//!   "make_plan": "1. Book a room\n2. Send invites",
//!   "review_plan": [
//!     {"verdict": "revise", "notes": "Add a budget"},
//!     {"verdict": "approve", "notes": "Good"}
//!   ],
//!   "Planner.make_plan": ["first plan", "second plan"]
//! }
//! ```
//!
//! An action with `tools:` may script a conversation: an answer of the form
//! `{"turns": [turn, …]}` gives one item per model turn (turn `t` answers
//! the `t`-th request of that call), each either `{"tool_calls": [{"name":
//! "get_user", "arguments": {"user_id": "u1"}}, …]}` or `{"answer": value}`
//! (the outputs, as above). `arguments` may be a string, taken as the JSON
//! text the model wrote (so a script can send malformed JSON); an `id` is
//! optional. Any other answer of such an action answers at once.
//!
//! ```json
//! {"assist": {"turns": [
//!   {"tool_calls": [{"name": "get_user", "arguments": {"user_id": "u1"}}]},
//!   {"answer": "Booked."}
//! ]}}
//! ```

use crate::answer::{check_types, decode_json, is_raw_text};
use crate::tools::{ToolUse, model_turns};
use crate::{BoxFuture, LlmAnswer, LlmBackend, LlmError, LlmRequest};
use std::path::Path;
use std::time::Instant;
use troupe_check::Value;

/// Why a script could not be loaded.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ScriptError {
    #[error("cannot read script {file}: {message}")]
    Read { file: String, message: String },
    #[error("script {file} is not valid JSON: {message}")]
    Json { file: String, message: String },
    #[error(
        "script {file} must be a JSON object keyed by `Lifeline.action` or `action`, found {found}"
    )]
    NotAnObject { file: String, found: String },
    #[error("script {file}: key {key:?} is not `action` or `Lifeline.action`")]
    BadKey { file: String, key: String },
}

#[derive(Debug, Clone)]
pub struct ScriptedBackend {
    /// Where the answers came from, for messages (a path, or a caller's label).
    source: String,
    answers: serde_json::Map<String, serde_json::Value>,
}

impl ScriptedBackend {
    /// Loads a script file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<ScriptedBackend, ScriptError> {
        let path = path.as_ref();
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ScriptError::Read {
            file: file.clone(),
            message: e.to_string(),
        })?;
        let json: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| ScriptError::Json {
                file: file.clone(),
                message: e.to_string(),
            })?;
        ScriptedBackend::from_json(json, file)
    }

    /// A script given as JSON; `source` names it in messages (e.g. a path or `inline`).
    pub fn from_json(
        json: serde_json::Value,
        source: impl Into<String>,
    ) -> Result<ScriptedBackend, ScriptError> {
        let source = source.into();
        let serde_json::Value::Object(answers) = json else {
            let found = match json {
                serde_json::Value::Array(_) => "an array",
                serde_json::Value::String(_) => "a string",
                serde_json::Value::Null => "null",
                _ => "a scalar",
            };
            return Err(ScriptError::NotAnObject {
                file: source,
                found: found.into(),
            });
        };
        for key in answers.keys() {
            let ok = match key.split_once('.') {
                Some((l, a)) => is_ident(l) && is_ident(a),
                None => is_ident(key),
            };
            if !ok {
                return Err(ScriptError::BadKey {
                    file: source,
                    key: key.clone(),
                });
            }
        }
        Ok(ScriptedBackend { source, answers })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    fn backend_name(&self) -> String {
        format!("scripted:{}", self.source)
    }

    /// The scripted JSON for this call, or a Permanent error naming the key,
    /// the occurrence and the file.
    fn lookup(&self, request: &LlmRequest) -> Result<(&serde_json::Value, String), LlmError> {
        let key = &request.key;
        let full = format!("{}.{}", key.lifeline, key.action);
        let (name, entry) = match self.answers.get(&full) {
            Some(v) => (full, v),
            None => match self.answers.get(&key.action) {
                Some(v) => (key.action.clone(), v),
                None => {
                    return Err(LlmError::Permanent {
                        backend: self.backend_name(),
                        message: format!(
                            "no answer for `{full}` (occurrence {}) in {}: add a key `{full}` or `{}`",
                            key.occurrence, self.source, key.action
                        ),
                    });
                }
            },
        };
        match entry {
            serde_json::Value::Array(items) => {
                let item = usize::try_from(key.occurrence)
                    .ok()
                    .and_then(|k| items.get(k));
                match item {
                    Some(v) => Ok((v, name)),
                    None => Err(LlmError::Permanent {
                        backend: self.backend_name(),
                        message: format!(
                            "script exhausted: `{name}` in {} has {} answer(s), but occurrence {} of {}.{} was asked \
                             (occurrences count from 0)",
                            self.source,
                            items.len(),
                            key.occurrence,
                            key.lifeline,
                            key.action
                        ),
                    }),
                }
            }
            v => Ok((v, name)),
        }
    }
}

impl LlmBackend for ScriptedBackend {
    fn describe(&self) -> String {
        self.backend_name()
    }

    fn call<'a>(&'a self, request: &'a LlmRequest) -> BoxFuture<'a, Result<LlmAnswer, LlmError>> {
        Box::pin(async move {
            let start = Instant::now();
            check_types(&request.outputs, &request.types).map_err(|message| {
                LlmError::Permanent {
                    backend: self.backend_name(),
                    message,
                }
            })?;
            let (json, name) = self.lookup(request)?;
            let (json, tool_calls) = self.turn(request, json, &name)?;
            if !tool_calls.is_empty() {
                return Ok(LlmAnswer {
                    values: Vec::new(),
                    tool_calls,
                    model: self.backend_name(),
                    usage: None,
                    latency: start.elapsed(),
                    attempts: 1,
                    detail: Default::default(),
                });
            }
            let values = if request.outputs.is_empty() {
                Vec::new()
            } else if is_raw_text(&request.outputs) {
                // A plain string is the text itself; anything else goes through
                // the same shape rules as the structured outputs.
                match json {
                    serde_json::Value::String(s) => vec![Value::text(s.as_str())],
                    other => decode_json(other, &request.outputs, &request.types)
                        .map_err(|e| invalid(self, request, &name, &e))?,
                }
            } else {
                decode_json(json, &request.outputs, &request.types)
                    .map_err(|e| invalid(self, request, &name, &e))?
            };
            Ok(LlmAnswer {
                values,
                tool_calls: Vec::new(),
                model: self.backend_name(),
                usage: None,
                latency: start.elapsed(),
                attempts: 1,
                detail: Default::default(),
            })
        })
    }
}

impl ScriptedBackend {
    /// For an action with tools whose answer is `{"turns": […]}`: this
    /// turn's answer, or its tool calls. Otherwise the answer itself.
    fn turn<'j>(
        &self,
        request: &LlmRequest,
        json: &'j serde_json::Value,
        name: &str,
    ) -> Result<(&'j serde_json::Value, Vec<ToolUse>), LlmError> {
        let turns = match json.get("turns") {
            Some(serde_json::Value::Array(turns)) if !request.tools.is_empty() => turns,
            _ => return Ok((json, Vec::new())),
        };
        let t = model_turns(&request.conversation);
        let bad = |message: String| LlmError::Permanent {
            backend: self.backend_name(),
            message,
        };
        let turn = turns.get(t).ok_or_else(|| {
            bad(format!(
                "script exhausted: `{name}` in {} scripts {} turn(s), but turn {t} of occurrence {} was asked \
                 (turns count from 0)",
                self.source,
                turns.len(),
                request.key.occurrence
            ))
        })?;
        if let Some(answer) = turn.get("answer") {
            return Ok((answer, Vec::new()));
        }
        let Some(serde_json::Value::Array(calls)) = turn.get("tool_calls") else {
            return Err(bad(format!(
                "turn {t} of `{name}` in {} is neither {{\"answer\": …}} nor {{\"tool_calls\": […]}}",
                self.source
            )));
        };
        let mut uses = Vec::with_capacity(calls.len());
        for (i, call) in calls.iter().enumerate() {
            let Some(tool) = call.get("name").and_then(serde_json::Value::as_str) else {
                return Err(bad(format!(
                    "tool call {i} of turn {t} of `{name}` in {} has no \"name\"",
                    self.source
                )));
            };
            let arguments = match call.get("arguments") {
                Some(serde_json::Value::String(text)) => text.clone(),
                Some(other) => other.to_string(),
                None => "{}".to_owned(),
            };
            let id = match call.get("id").and_then(serde_json::Value::as_str) {
                Some(id) => id.to_owned(),
                None => format!("call_{t}_{i}"),
            };
            uses.push(ToolUse {
                id,
                name: tool.to_owned(),
                arguments,
            });
        }
        if uses.is_empty() {
            return Err(bad(format!(
                "turn {t} of `{name}` in {} asks for no tool calls; give {{\"answer\": …}} instead",
                self.source
            )));
        }
        Ok((json, uses))
    }
}

fn invalid(b: &ScriptedBackend, request: &LlmRequest, name: &str, error: &str) -> LlmError {
    LlmError::InvalidAnswer {
        backend: b.backend_name(),
        action: request.key.action.clone(),
        message: format!(
            "the answer under `{name}` in {} for occurrence {} does not fit the declared outputs: {error}",
            b.source, request.key.occurrence
        ),
    }
}

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CallKey, OutputSlot};
    use serde_json::json;
    use std::sync::Arc;
    use troupe_check::types::{EnumDef, EnumId};
    use troupe_check::{Type, TypeTable};

    fn table() -> Arc<TypeTable> {
        Arc::new(TypeTable {
            enums: vec![EnumDef {
                name: "Verdict".into(),
                values: vec!["approve".into(), "revise".into()],
            }],
            records: vec![],
        })
    }

    fn review(lifeline: &str, k: u64) -> LlmRequest {
        LlmRequest::new(
            CallKey::new(lifeline, "review_plan", k),
            "p",
            vec![
                OutputSlot::new("verdict", Type::Enum(EnumId(0))),
                OutputSlot::new("notes", Type::Text),
            ],
            table(),
        )
    }

    fn plan(lifeline: &str, k: u64) -> LlmRequest {
        LlmRequest::new(
            CallKey::new(lifeline, "make_plan", k),
            "p",
            vec![OutputSlot::new("plan", Type::Text)],
            table(),
        )
    }

    async fn values(b: &ScriptedBackend, r: &LlmRequest) -> Result<Vec<Value>, LlmError> {
        b.call(r).await.map(|a| a.values)
    }

    #[tokio::test(flavor = "current_thread")]
    async fn lists_by_occurrence_and_exhaustion() {
        let b = ScriptedBackend::from_json(
            json!({"review_plan": [{"verdict": "revise", "notes": "more"}, {"verdict": "approve", "notes": "ok"}]}),
            "s.json",
        )
        .unwrap();
        // Out of order on purpose: the index is the occurrence, not a cursor.
        let second = values(&b, &review("R", 1)).await.unwrap();
        assert_eq!(second[0], Value::Enum(EnumId(0), 0));
        let first = values(&b, &review("R", 0)).await.unwrap();
        assert_eq!(first, vec![Value::Enum(EnumId(0), 1), Value::text("more")]);
        assert_eq!(
            values(&b, &review("R", 0)).await.unwrap(),
            first,
            "same answer on a re-run"
        );
        let err = values(&b, &review("R", 2)).await.unwrap_err();
        assert!(matches!(err, LlmError::Permanent { .. }));
        let msg = err.to_string();
        assert!(
            msg.contains("review_plan") && msg.contains("occurrence 2") && msg.contains("s.json"),
            "{msg}"
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn full_key_wins_and_scalars_answer_every_time() {
        let b = ScriptedBackend::from_json(
            json!({"make_plan": "generic plan", "Planner.make_plan": ["planner plan 0"], "review_plan": {"verdict": "approve", "notes": "fine"}}),
            "inline",
        )
        .unwrap();
        assert_eq!(
            values(&b, &plan("Planner", 0)).await.unwrap(),
            vec![Value::text("planner plan 0")]
        );
        assert_eq!(
            values(&b, &plan("Other", 5)).await.unwrap(),
            vec![Value::text("generic plan")]
        );
        assert_eq!(
            values(&b, &review("X", 9)).await.unwrap()[1],
            Value::text("fine")
        );
        let err = values(&b, &plan("Planner", 1))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("Planner.make_plan") && err.contains("occurrence 1"),
            "{err}"
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn missing_key_and_type_errors_are_clear() {
        let b = ScriptedBackend::from_json(
            json!({"review_plan": {"verdict": "maybe", "notes": "?"}}),
            "f.json",
        )
        .unwrap();
        let err = values(&b, &plan("Planner", 0)).await.unwrap_err();
        assert!(matches!(err, LlmError::Permanent { .. }));
        assert!(
            err.to_string()
                .contains("no answer for `Planner.make_plan`"),
            "{err}"
        );
        let err = values(&b, &review("R", 0)).await.unwrap_err();
        assert!(matches!(err, LlmError::InvalidAnswer { .. }));
        assert!(
            err.to_string().contains("maybe") && err.to_string().contains("f.json"),
            "{err}"
        );
    }

    #[test]
    fn load_errors() {
        assert!(matches!(
            ScriptedBackend::from_json(json!([1]), "x"),
            Err(ScriptError::NotAnObject { .. })
        ));
        assert!(matches!(
            ScriptedBackend::from_json(json!({"a.b.c": 1}), "x"),
            Err(ScriptError::BadKey { .. })
        ));
        let err = ScriptedBackend::from_file("/nonexistent/troupe-script.json").unwrap_err();
        assert!(err.to_string().contains("/nonexistent/troupe-script.json"));
    }
}
