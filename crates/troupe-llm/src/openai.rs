//! The OpenAI-compatible chat completions protocol (`POST {base}/chat/completions`).
//!
//! Spoken by OpenAI, Ollama, vLLM, llama.cpp's server, LM Studio and
//! OpenRouter. Structured answers use `response_format: json_schema`, strict
//! where the schema allows it (OpenAI's strict mode requires a `type` on every
//! subschema, so a `Json` output turns it off). Because some compatible
//! servers ignore `response_format`, the schema is also stated in the prompt.
//! Only the fields every server accepts are sent; `temperature` and
//! `max_tokens` only when set, since newer OpenAI models reject them.

use crate::http::{Exchange, Reply};
use crate::schema::is_strict_compatible;
use crate::{ToolUse, Turn, Usage};
use serde_json::{Value as J, json};

pub(crate) fn url(base: &str) -> String {
    format!("{}/chat/completions", base.trim_end_matches('/'))
}

/// The first messages of a conversation.
pub(crate) fn start(ex: &Exchange<'_>) -> Vec<J> {
    let mut messages = Vec::new();
    if let Some(system) = &ex.request.system {
        messages.push(json!({"role": "system", "content": system}));
    }
    let tools = if ex.request.tools.is_empty() {
        ""
    } else {
        " You may call the tools first; give the answer once you have what you need."
    };
    let prompt = match ex.schema {
        Some(schema) => format!(
            "{}\n\nAnswer with only a JSON object that conforms to this JSON Schema:\n{}{tools}",
            ex.request.prompt, schema
        ),
        None => format!("{}{tools}", ex.request.prompt),
    };
    messages.push(json!({"role": "user", "content": prompt}));
    for turn in &ex.request.conversation {
        match turn {
            Turn::Calls { text, calls } => messages.push(json!({
                "role": "assistant",
                "content": text,
                "tool_calls": calls.iter().map(|c| json!({
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                })).collect::<Vec<_>>(),
            })),
            Turn::Result { id, content, .. } => messages.push(json!({
                "role": "tool",
                "tool_call_id": id,
                "content": content,
            })),
        }
    }
    messages
}

pub(crate) fn body(ex: &Exchange<'_>, messages: &[J]) -> J {
    let mut body = json!({"model": ex.model, "messages": messages, "stream": false});
    if let Some(t) = ex.request.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(n) = ex.max_tokens {
        body["max_tokens"] = json!(n);
    }
    if !ex.request.tools.is_empty() {
        body["tools"] = J::Array(
            ex.request
                .tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.input_schema,
                    }})
                })
                .collect(),
        );
    }
    if let Some(schema) = ex.schema {
        body["response_format"] = json!({
            "type": "json_schema",
            "json_schema": {"name": "troupe_answer", "schema": schema, "strict": is_strict_compatible(schema)},
        });
    }
    body
}

/// Reads a successful response body; `Err` means the body is malformed.
pub(crate) fn parse(body: &J) -> Result<Reply, String> {
    let usage = body.get("usage").and_then(|u| {
        let input = u.get("prompt_tokens").and_then(J::as_u64)?;
        let output = u.get("completion_tokens").and_then(J::as_u64).unwrap_or(0);
        let cached = u
            .pointer("/prompt_tokens_details/cached_tokens")
            .and_then(J::as_u64)
            .unwrap_or(0);
        Some(Usage {
            input_tokens: input,
            output_tokens: output,
            cached_input_tokens: cached.min(input),
        })
    });
    let message = body
        .get("choices")
        .and_then(J::as_array)
        .and_then(|c| c.first());
    let truncated = message
        .and_then(|c| c.get("finish_reason"))
        .and_then(J::as_str)
        == Some("length");
    let message = message
        .and_then(|c| c.get("message"))
        .ok_or("no `choices[0].message` in the response")?;
    if let Some(refusal) = message.get("refusal").and_then(J::as_str) {
        return Ok(Reply {
            text: None,
            json: None,
            refusal: Some(refusal.to_owned()),
            tool_calls: Vec::new(),
            usage,
            raw: message.clone(),
            truncated,
        });
    }
    let text = match message.get("content") {
        Some(J::String(s)) => Some(s.clone()),
        Some(J::Null) | None => None,
        // Some servers answer with content parts.
        Some(J::Array(parts)) => Some(
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(J::as_str))
                .collect::<Vec<_>>()
                .join(""),
        ),
        Some(_) => return Err("`choices[0].message.content` is neither text nor null".into()),
    };
    let tool_calls = match message.get("tool_calls") {
        Some(J::Array(calls)) => calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let f = c.get("function");
                ToolUse {
                    id: c
                        .get("id")
                        .and_then(J::as_str)
                        .map_or_else(|| format!("call_{i}"), str::to_owned),
                    name: f
                        .and_then(|f| f.get("name"))
                        .and_then(J::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    // A string of JSON by the protocol; some servers send the object.
                    arguments: match f.and_then(|f| f.get("arguments")) {
                        Some(J::String(s)) => s.clone(),
                        Some(J::Null) | None => String::new(),
                        Some(other) => other.to_string(),
                    },
                }
            })
            .collect(),
        _ => Vec::new(),
    };
    Ok(Reply {
        text,
        json: None,
        refusal: None,
        tool_calls,
        usage,
        raw: message.clone(),
        truncated,
    })
}

/// Appends the model's answer and a request to fix it.
pub(crate) fn reask(messages: &mut Vec<J>, reply: &Reply, error: &str) {
    let said = reply.text.clone().unwrap_or_default();
    messages.push(json!({"role": "assistant", "content": said}));
    messages.push(json!({
        "role": "user",
        "content": format!(
            "Your answer does not fit the required format: {error}\n\
             Answer again with only a JSON object that conforms to the JSON Schema."
        ),
    }));
}

/// Appends a request for a non-empty text answer.
pub(crate) fn reask_text(messages: &mut Vec<J>, reply: &Reply, error: &str) {
    let said = reply.text.clone().unwrap_or_default();
    messages.push(json!({"role": "assistant", "content": said}));
    messages.push(json!({"role": "user", "content": format!("{error} Please answer again.")}));
}

/// The provider's own error message in an error body.
pub(crate) fn error_message(body: &J) -> Option<String> {
    match body.get("error")? {
        J::String(s) => Some(s.clone()),
        e => e.get("message").and_then(J::as_str).map(str::to_owned),
    }
}
