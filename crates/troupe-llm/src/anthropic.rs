//! The Anthropic Messages protocol (`POST {base}/v1/messages`).
//!
//! Structured answers use a forced tool call: one tool `answer` whose
//! `input_schema` is the output schema, and `tool_choice` naming it. This is
//! Anthropic's native way to get JSON that follows a schema, it needs no
//! parsing of prose, and a non-conforming answer is re-asked in the protocol's
//! own terms: a `tool_result` with `is_error: true` carrying the validation
//! error. If a model still answers in text, the text is parsed as JSON.

use crate::http::{Exchange, Reply};
use crate::{LlmRequest, ToolUse, Turn, Usage};
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

/// The tool that carries a structured answer: `answer`, unless the
/// workflow offers a tool of that name.
pub(crate) fn answer_tool(request: &LlmRequest) -> &'static str {
    if request.tools.iter().any(|t| t.name == TOOL) {
        "troupe_answer"
    } else {
        TOOL
    }
}

pub(crate) fn start(ex: &Exchange<'_>) -> Vec<J> {
    let answer = answer_tool(ex.request);
    let prompt = match (ex.schema.is_some(), ex.request.tools.is_empty()) {
        (true, true) => format!(
            "{}\n\nGive your answer by calling the `{answer}` tool.",
            ex.request.prompt
        ),
        (true, false) => format!(
            "{}\n\nYou may call the other tools first; give your answer by calling the `{answer}` tool.",
            ex.request.prompt
        ),
        (false, _) => ex.request.prompt.clone(),
    };
    let mut messages = vec![json!({"role": "user", "content": prompt})];
    // Results of one turn's calls go back in one user message.
    let mut results: Vec<J> = Vec::new();
    for turn in &ex.request.conversation {
        match turn {
            Turn::Calls { text, calls } => {
                if !results.is_empty() {
                    messages.push(json!({"role": "user", "content": std::mem::take(&mut results)}));
                }
                let mut blocks = Vec::new();
                if let Some(t) = text.as_deref().filter(|t| !t.is_empty()) {
                    blocks.push(json!({"type": "text", "text": t}));
                }
                for c in calls {
                    blocks.push(json!({
                        "type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments_object(),
                    }));
                }
                messages.push(json!({"role": "assistant", "content": blocks}));
            }
            Turn::Result {
                id,
                content,
                is_error,
                ..
            } => results.push(json!({
                "type": "tool_result", "tool_use_id": id, "content": content, "is_error": is_error,
            })),
        }
    }
    if !results.is_empty() {
        messages.push(json!({"role": "user", "content": results}));
    }
    messages
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
    let answer = answer_tool(ex.request);
    let mut tools: Vec<J> = ex
        .request
        .tools
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
        .collect();
    if let Some(schema) = ex.schema {
        tools.push(json!({
            "name": answer,
            "description": "Give the answer, in the required structure.",
            "input_schema": schema,
        }));
        // With tools of its own the model chooses: a tool, or the answer.
        body["tool_choice"] = if ex.request.tools.is_empty() {
            json!({"type": "tool", "name": answer})
        } else {
            json!({"type": "any"})
        };
    }
    if !tools.is_empty() {
        body["tools"] = J::Array(tools);
    }
    body
}

/// Reads a response; with `tools` (the request offered tools of its own),
/// a `tool_use` block is the answer only when it calls `answer`, any other
/// is a tool call.
pub(crate) fn parse_with(body: &J, request: &LlmRequest) -> Result<Reply, String> {
    let mut reply = parse(body)?;
    if request.tools.is_empty() {
        return Ok(reply);
    }
    let answer = answer_tool(request);
    reply.json = None;
    let blocks = reply.raw.as_array().cloned().unwrap_or_default();
    for (i, block) in blocks.iter().enumerate() {
        if block.get("type").and_then(J::as_str) != Some("tool_use") {
            continue;
        }
        let name = block.get("name").and_then(J::as_str).unwrap_or("");
        let input = block.get("input").cloned().unwrap_or(J::Null);
        if name == answer {
            if reply.json.is_none() {
                reply.json = Some(input);
            }
        } else {
            reply.tool_calls.push(ToolUse {
                id: block
                    .get("id")
                    .and_then(J::as_str)
                    .map_or_else(|| format!("toolu_{i}"), str::to_owned),
                name: name.to_owned(),
                arguments: input.to_string(),
            });
        }
    }
    Ok(reply)
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
        tool_calls: Vec::new(),
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
