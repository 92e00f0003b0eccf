//! The Anthropic Messages protocol (`POST {base}/v1/messages`).
//!
//! Structured answers use a forced tool call: one tool `answer` whose
//! `input_schema` is the output schema, and `tool_choice` naming it. This is
//! Anthropic's native way to get JSON that follows a schema, it needs no
//! parsing of prose, and a non-conforming answer is re-asked in the protocol's
//! own terms: a `tool_result` with `is_error: true` carrying the validation
//! error. If a model still answers in text, the text is parsed as JSON.

use crate::Usage;
use crate::http::{Exchange, Reply};
use serde_json::{Value as J, json};

pub(crate) const VERSION: &str = "2023-06-01";
pub(crate) const TOOL: &str = "answer";
/// The Messages API requires `max_tokens`.
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 4096;

pub(crate) fn url(base: &str) -> String {
    let base = base.trim_end_matches('/');
    // Accept a base given with or without the version segment.
    if base.ends_with("/v1") {
        format!("{base}/messages")
    } else {
        format!("{base}/v1/messages")
    }
}

pub(crate) fn start(ex: &Exchange<'_>) -> Vec<J> {
    let prompt = if ex.schema.is_some() {
        format!(
            "{}\n\nGive your answer by calling the `{TOOL}` tool.",
            ex.request.prompt
        )
    } else {
        ex.request.prompt.clone()
    };
    vec![json!({"role": "user", "content": prompt})]
}

pub(crate) fn body(ex: &Exchange<'_>, messages: &[J]) -> J {
    let mut body = json!({
        "model": ex.model,
        "max_tokens": ex.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        "messages": messages,
    });
    if let Some(system) = &ex.request.system {
        body["system"] = json!(system);
    }
    if let Some(t) = ex.request.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(schema) = ex.schema {
        body["tools"] = json!([{
            "name": TOOL,
            "description": "Give the answer, in the required structure.",
            "input_schema": schema,
        }]);
        body["tool_choice"] = json!({"type": "tool", "name": TOOL});
    }
    body
}

pub(crate) fn parse(body: &J) -> Result<Reply, String> {
    let usage = body.get("usage").and_then(|u| {
        let input = u.get("input_tokens").and_then(J::as_u64)?;
        let output = u.get("output_tokens").and_then(J::as_u64).unwrap_or(0);
        // `input_tokens` counts only the uncached part of the prompt.
        let read = u
            .get("cache_read_input_tokens")
            .and_then(J::as_u64)
            .unwrap_or(0);
        let written = u
            .get("cache_creation_input_tokens")
            .and_then(J::as_u64)
            .unwrap_or(0);
        Some(Usage {
            input_tokens: input.saturating_add(read).saturating_add(written),
            output_tokens: output,
            cached_input_tokens: read,
        })
    });
    let blocks = body
        .get("content")
        .and_then(J::as_array)
        .ok_or("no `content` array in the response")?;
    let mut text = String::new();
    let mut json = None;
    for block in blocks {
        match block.get("type").and_then(J::as_str) {
            Some("text") => text.push_str(block.get("text").and_then(J::as_str).unwrap_or("")),
            Some("tool_use") if json.is_none() => {
                json = Some(block.get("input").cloned().unwrap_or(J::Null))
            }
            _ => {}
        }
    }
    let has_text = blocks
        .iter()
        .any(|b| b.get("type").and_then(J::as_str) == Some("text"));
    Ok(Reply {
        text: has_text.then_some(text),
        json,
        refusal: None,
        usage,
        raw: J::Array(blocks.clone()),
        truncated: body.get("stop_reason").and_then(J::as_str) == Some("max_tokens"),
    })
}

/// Appends the model's turn and the validation error: as a failed
/// `tool_result` when the model called the tool, as text otherwise.
pub(crate) fn reask(messages: &mut Vec<J>, reply: &Reply, error: &str) {
    let blocks = assistant_blocks(reply);
    let tool_id = blocks
        .iter()
        .find(|b| b.get("type").and_then(J::as_str) == Some("tool_use"))
        .and_then(|b| b.get("id"))
        .and_then(J::as_str)
        .map(str::to_owned);
    if blocks.is_empty() {
        messages.push(json!({"role": "assistant", "content": "(no answer)"}));
    } else {
        messages.push(json!({"role": "assistant", "content": blocks}));
    }
    let fix = format!(
        "The answer does not fit the required structure: {error}\nCall the `{TOOL}` tool again with a corrected answer."
    );
    match tool_id {
        Some(id) => messages.push(json!({
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": id, "is_error": true, "content": fix}],
        })),
        None => messages.push(json!({"role": "user", "content": fix})),
    }
}

pub(crate) fn reask_text(messages: &mut Vec<J>, reply: &Reply, error: &str) {
    let blocks = assistant_blocks(reply);
    if blocks.is_empty() {
        messages.push(json!({"role": "assistant", "content": "(no answer)"}));
    } else {
        messages.push(json!({"role": "assistant", "content": blocks}));
    }
    messages.push(json!({"role": "user", "content": format!("{error} Please answer again.")}));
}

/// The model's content blocks to replay, without empty text blocks, which
/// the API rejects in a request.
fn assistant_blocks(reply: &Reply) -> Vec<J> {
    let blocks = reply.raw.as_array().cloned().unwrap_or_default();
    blocks
        .into_iter()
        .filter(|b| {
            !(b.get("type").and_then(J::as_str) == Some("text")
                && b.get("text").and_then(J::as_str).unwrap_or("").is_empty())
        })
        .collect()
}

pub(crate) fn error_message(body: &J) -> Option<String> {
    match body.get("error")? {
        J::String(s) => Some(s.clone()),
        e => e.get("message").and_then(J::as_str).map(str::to_owned),
    }
}
