//! Tool calling: the tools a model may call, the calls it asks for, and the
//! conversation so far.
//!
//! A backend never runs a tool. One [`crate::LlmBackend::call`] is one model
//! turn: given the prompt, the offered [`ToolSpec`]s and the [`Turn`]s so far
//! (the model's earlier calls and their results), the model either answers
//! with the declared outputs ([`crate::LlmAnswer::values`]) or asks for tool
//! calls ([`crate::LlmAnswer::tool_calls`]). The runtime runs the calls (or
//! refuses them) and asks again with the results appended; so every turn is
//! journaled and priced on its own, and the loop's limits and contracts live
//! in one place, not once per provider.

use serde_json::{Value as J, json};

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// The name the model calls it by (the `tool` action's name).
    pub name: String,
    pub description: String,
    /// A JSON Schema of the arguments object.
    pub input_schema: J,
}

/// A call the model asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolUse {
    /// The provider's id of the call, echoed with its result.
    pub id: String,
    pub name: String,
    /// The arguments as the model wrote them: JSON text, which may be
    /// malformed (the runtime reads it and tells the model what is wrong).
    pub arguments: String,
}

/// A turn of the conversation after the prompt.
#[derive(Debug, Clone, PartialEq)]
pub enum Turn {
    /// The model asked for these calls (and maybe wrote some text).
    Calls {
        text: Option<String>,
        calls: Vec<ToolUse>,
    },
    /// What one call gave (or why it was not made), sent back to the model.
    Result {
        id: String,
        name: String,
        content: String,
        is_error: bool,
    },
}

impl ToolUse {
    /// The arguments as a JSON object, if they are one (an object for the
    /// protocols that need one, `{}` otherwise).
    pub(crate) fn arguments_object(&self) -> J {
        match serde_json::from_str::<J>(&self.arguments) {
            Ok(J::Object(o)) => J::Object(o),
            _ => json!({}),
        }
    }

    pub fn to_json(&self) -> J {
        json!({"id": self.id, "name": self.name, "arguments": self.arguments})
    }

    pub fn from_json(j: &J) -> Option<ToolUse> {
        Some(ToolUse {
            id: j.get("id")?.as_str()?.to_owned(),
            name: j.get("name")?.as_str()?.to_owned(),
            arguments: j.get("arguments")?.as_str()?.to_owned(),
        })
    }
}

/// How many model turns asked for calls so far (the index of the next turn).
pub fn model_turns(conversation: &[Turn]) -> usize {
    conversation
        .iter()
        .filter(|t| matches!(t, Turn::Calls { .. }))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_use_round_trips_and_bad_arguments_read_as_empty() {
        let u = ToolUse {
            id: "c1".into(),
            name: "get_user".into(),
            arguments: "{not json".into(),
        };
        assert_eq!(ToolUse::from_json(&u.to_json()), Some(u.clone()));
        assert_eq!(u.arguments_object(), json!({}));
        assert_eq!(ToolUse::from_json(&json!({"id": 1})), None);
    }
}
