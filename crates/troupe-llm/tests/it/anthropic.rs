//! The Anthropic backend against a fake Messages server on loopback.

use crate::common;

use common::{Fake, KEY, Reply, ok, review_request, settings, text_request};
use serde_json::json;
use std::time::Duration;
use troupe_check::Value;
use troupe_check::types::EnumId;
use troupe_llm::{ApiKey, HttpBackend, LlmBackend, LlmError, output_schema};

fn message(content: serde_json::Value) -> serde_json::Value {
    json!({
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": content,
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 20, "output_tokens": 5}
    })
}

fn text(t: &str) -> serde_json::Value {
    message(json!([{"type": "text", "text": t}]))
}

fn tool(id: &str, input: serde_json::Value) -> serde_json::Value {
    message(json!([{"type": "tool_use", "id": id, "name": "answer", "input": input}]))
}

fn backend(fake: &Fake) -> HttpBackend {
    HttpBackend::anthropic(
        "claude-x",
        fake.url.clone(),
        Some(ApiKey::new(KEY)),
        settings(),
    )
    .unwrap()
}

#[tokio::test(flavor = "current_thread")]
async fn plain_text_answer() {
    let fake = Fake::start(vec![ok(text("1. Bake\n2. Party"))]).await;
    let a = backend(&fake).call(&text_request()).await.unwrap();
    assert_eq!(a.values, vec![Value::text("1. Bake\n2. Party")]);
    assert_eq!(a.model, "anthropic:claude-x");
    let u = a.usage.unwrap();
    assert_eq!((u.input_tokens, u.output_tokens), (20, 5));

    let r = &fake.requests()[0];
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.headers["x-api-key"], KEY);
    assert_eq!(r.headers["anthropic-version"], "2023-06-01");
    assert!(r.headers.get("authorization").is_none());
    assert_eq!(r.body["model"], "claude-x");
    assert_eq!(r.body["max_tokens"], 4096);
    assert_eq!(r.body["system"], "You are a careful planner.");
    assert_eq!(
        r.body["messages"],
        json!([{"role": "user", "content": "Write a plan for: a party"}])
    );
    assert!(r.body.get("tools").is_none());
}

#[tokio::test(flavor = "current_thread")]
async fn structured_answer_is_a_forced_tool_call() {
    let fake = Fake::start(vec![ok(tool(
        "toolu_1",
        json!({"verdict": "approve", "notes": "ok"}),
    ))])
    .await;
    let req = review_request();
    let a = backend(&fake).call(&req).await.unwrap();
    assert_eq!(a.values, vec![Value::Enum(EnumId(0), 0), Value::text("ok")]);
    let body = &fake.requests()[0].body;
    assert_eq!(body["tools"][0]["name"], "answer");
    assert_eq!(
        body["tools"][0]["input_schema"],
        output_schema(&req.outputs, &req.types)
    );
    assert_eq!(
        body["tool_choice"],
        json!({"type": "tool", "name": "answer"})
    );
}

#[tokio::test(flavor = "current_thread")]
async fn invalid_answer_is_re_asked_with_a_tool_result() {
    let fake = Fake::start(vec![
        ok(tool("toolu_1", json!({"verdict": "maybe", "notes": "?"}))),
        ok(tool(
            "toolu_2",
            json!({"verdict": "revise", "notes": "budget"}),
        )),
    ])
    .await;
    let a = backend(&fake).call(&review_request()).await.unwrap();
    assert_eq!(a.values[0], Value::Enum(EnumId(0), 1));
    assert_eq!(a.attempts, 2);
    assert_eq!(a.usage.unwrap().input_tokens, 40);

    let messages = fake.requests()[1].body["messages"].clone();
    let messages = messages.as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(messages[1]["content"][0]["id"], "toolu_1");
    let result = &messages[2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "toolu_1");
    assert_eq!(result["is_error"], true);
    let fix = result["content"].as_str().unwrap();
    assert!(fix.contains("\"maybe\""), "{fix}");
}

#[tokio::test(flavor = "current_thread")]
async fn text_instead_of_the_tool_is_parsed_or_re_asked() {
    let fake = Fake::start(vec![
        ok(text("Hmm, hard to say.")),
        ok(text(r#"{"verdict": "approve", "notes": "ok"}"#)),
    ])
    .await;
    let a = backend(&fake).call(&review_request()).await.unwrap();
    assert_eq!(a.values[0], Value::Enum(EnumId(0), 0));
    let messages = fake.requests()[1].body["messages"].clone();
    assert_eq!(messages[2]["role"], "user");
    assert!(
        messages[2]["content"]
            .as_str()
            .unwrap()
            .contains("not valid JSON")
    );
}

#[tokio::test(flavor = "current_thread")]
async fn retry_after_is_honoured() {
    let fake = Fake::start(vec![
        Reply::Json(
            429,
            json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}),
            vec![("retry-after", "1".into())],
        ),
        ok(text("done")),
    ])
    .await;
    let a = backend(&fake).call(&text_request()).await.unwrap();
    assert_eq!(a.attempts, 2);
    let reqs = fake.requests();
    let waited = reqs[1].at - reqs[0].at;
    assert!(
        waited >= Duration::from_millis(950),
        "waited only {waited:?}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn overloaded_then_success() {
    let fake = Fake::start(vec![
        Reply::Json(529, json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}), vec![]),
        Reply::Raw(500, ""),
        ok(text("done")),
    ])
    .await;
    let a = backend(&fake).call(&text_request()).await.unwrap();
    assert_eq!(a.values, vec![Value::text("done")]);
    assert_eq!(a.attempts, 3);
}

#[tokio::test(flavor = "current_thread")]
async fn timeout_is_transient() {
    let fake = Fake::start(vec![Reply::Slow(
        Duration::from_millis(1500),
        Box::new(ok(text("late"))),
    )])
    .await;
    let mut s = settings();
    s.timeout = Duration::from_millis(300);
    s.max_retries = 0;
    let b =
        HttpBackend::anthropic("claude-x", fake.url.clone(), Some(ApiKey::new(KEY)), s).unwrap();
    let err = b.call(&text_request()).await.unwrap_err();
    assert!(err.is_transient(), "{err:?}");
    assert!(err.to_string().contains("timed out"), "{err}");
    // No retry (max_retries 0): the slow request was abandoned, not repeated.
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn malformed_body_is_an_invalid_answer() {
    let fake = Fake::start(vec![ok(
        json!({"type": "message", "content": "not blocks"}),
    )])
    .await;
    let err = backend(&fake).call(&text_request()).await.unwrap_err();
    assert!(matches!(err, LlmError::InvalidAnswer { .. }), "{err:?}");
    assert!(err.to_string().contains("no `content` array"), "{err}");

    let fake = Fake::start(vec![Reply::Raw(200, "{\"content\": [")]).await;
    let err = backend(&fake).call(&text_request()).await.unwrap_err();
    assert!(matches!(err, LlmError::InvalidAnswer { .. }), "{err:?}");
}

#[tokio::test(flavor = "current_thread")]
async fn bad_request_is_permanent_with_the_provider_message() {
    let fake = Fake::start(vec![Reply::Json(
        404,
        json!({"type": "error", "error": {"type": "not_found_error", "message": "model: claude-x"}}),
        vec![],
    )])
    .await;
    let b = backend(&fake);
    let err = b.call(&text_request()).await.unwrap_err();
    assert!(matches!(err, LlmError::Permanent { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("404")
            && msg.contains("model: claude-x")
            && msg.contains("check the model name"),
        "{msg}"
    );
    assert!(!format!("{msg} {err:?} {b:?} {}", b.describe()).contains(KEY));
}
