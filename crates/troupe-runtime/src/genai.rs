//! The runtime's spans as OpenTelemetry's GenAI semantic conventions name
//! them, so that other tools read troupe's traces: a model call is a
//! CLIENT span `chat MODEL` with `gen_ai.*` attributes (provider and bare
//! model, integer token counts, the cost as `troupe.cost_usd`), a tool call
//! an `execute_tool TOOL` span with `gen_ai.tool.name` and `mcp.*`
//! attributes, and a failure marks its span `ERROR` with `error.type`.
//!
//! The `otel.*` fields are read by `tracing-opentelemetry` as the span's
//! name, kind and status; without an OpenTelemetry layer they are plain
//! fields.

use crate::actions::{ToolCall, ToolHost};
use std::sync::Arc;
use tracing::Instrument;
use tracing::field::Empty;
use troupe_check::Value;
use troupe_llm::{BoxFuture, LlmAnswer, LlmError};

/// A backend's model spec (`openai:gpt-4o-mini`) as the conventions split
/// it: the provider (`openai`) and the model it names (`gpt-4o-mini`). A
/// spec without a provider (`mock`) is its own provider, as troupe's.
pub fn provider_and_model(spec: &str) -> (&str, &str) {
    match spec.split_once(':') {
        Some((provider, model)) if !provider.is_empty() => (provider, model),
        _ => (spec, spec),
    }
}

/// The span of one model call of step `step` to `model` (a backend's
/// spec, when it can tell before the call: the span's name).
pub fn chat_span(step: &dyn std::fmt::Display, model: Option<&str>) -> tracing::Span {
    let name = match model.map(|m| provider_and_model(m).1) {
        Some(m) => format!("chat {m}"),
        None => "chat".to_owned(),
    };
    tracing::info_span!(
        "chat",
        otel.name = name.as_str(),
        otel.kind = "client",
        otel.status_code = Empty,
        "error.type" = Empty,
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = Empty,
        gen_ai.request.model = Empty,
        gen_ai.response.model = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.usage.cache_read.input_tokens = Empty,
        troupe.cost_usd = Empty,
        troupe.step = %step,
    )
}

/// Records how a model call ended on its [`chat_span`].
pub fn record_answer(span: &tracing::Span, result: &Result<LlmAnswer, LlmError>) {
    let spec = match result {
        Ok(a) => a.model.as_str(),
        Err(e) => e.backend(),
    };
    let (provider, model) = provider_and_model(spec);
    span.record("gen_ai.provider.name", provider);
    span.record("gen_ai.request.model", model);
    match result {
        Ok(a) => {
            span.record("gen_ai.response.model", model);
            if let Some(u) = &a.usage {
                span.record("gen_ai.usage.input_tokens", to_i64(u.input_tokens));
                span.record("gen_ai.usage.output_tokens", to_i64(u.output_tokens));
                span.record(
                    "gen_ai.usage.cache_read.input_tokens",
                    to_i64(u.cached_input_tokens),
                );
            }
            if let Some(cost) = a.detail.cost_usd {
                span.record("troupe.cost_usd", cost);
            }
        }
        Err(e) => failed(
            span,
            match e {
                LlmError::Transient { .. } => "transient",
                LlmError::InvalidAnswer { .. } => "invalid_answer",
                LlmError::Permanent { .. } => "permanent",
            },
        ),
    }
}

/// Marks `span` failed with `kind` as its `error.type`.
pub fn failed(span: &tracing::Span, kind: &str) {
    span.record("otel.status_code", "ERROR");
    span.record("error.type", kind);
}

/// Token counts as the integers the conventions ask for.
fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Calls `host` with `call` under an `execute_tool` span.
pub fn traced_tool_call(
    host: Arc<dyn ToolHost>,
    call: ToolCall,
) -> BoxFuture<'static, Result<Vec<Value>, String>> {
    let span = tracing::info_span!(
        "execute_tool",
        otel.name = format!("execute_tool {}", call.tool).as_str(),
        otel.kind = "client",
        otel.status_code = Empty,
        "error.type" = Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = call.tool.as_str(),
        gen_ai.tool.call.id = call.idempotency_key.as_str(),
        mcp.method.name = "tools/call",
        mcp.server.name = call.server.name.as_str(),
    );
    Box::pin(
        async move {
            let result = host.call(call).await;
            if result.is_err() {
                failed(&tracing::Span::current(), "tool_error");
            }
            result
        }
        .instrument(span),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_splits_into_provider_and_model() {
        assert_eq!(
            provider_and_model("openai:gpt-4o-mini"),
            ("openai", "gpt-4o-mini")
        );
        assert_eq!(
            provider_and_model("anthropic:claude-x:latest"),
            ("anthropic", "claude-x:latest")
        );
        assert_eq!(provider_and_model("mock"), ("mock", "mock"));
        assert_eq!(provider_and_model(":odd"), (":odd", ":odd"));
    }
}
