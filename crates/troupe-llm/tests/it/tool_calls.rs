//! Tool calling on the wire, both APIs against fake servers on loopback:
//! the tools are offered, a turn's calls come back as `tool_calls`, the
//! conversation so far is replayed in each protocol's own form, and a
//! final answer after tools is read and validated as a single-turn one.

use crate::common;

use common::{Fake, KEY, ok, review_request, settings};
use serde_json::json;
use troupe_check::Value;
use troupe_check::types::EnumId;
use troupe_llm::{ApiKey, HttpBackend, LlmBackend, LlmRequest, ToolSpec, ToolUse, Turn};

fn with_tools(mut r: LlmRequest) -> LlmRequest {
    r.tools = vec![ToolSpec {
        name: "get_user".into(),
        description: "Looks a user up.".into(),
        input_schema: json!({"type": "object", "properties": {"user_id": {"type": "string"}},
                             "required": ["user_id"], "additionalProperties": false}),
    }];
    r
}

fn conversation() -> Vec<Turn> {
    vec![
        Turn::Calls {
            text: None,
            calls: vec![ToolUse {
                id: "c1".into(),
                name: "get_user".into(),
                arguments: r#"{"user_id":"u1"}"#.into(),
            }],
        },
        Turn::Result {
            id: "c1".into(),
            name: "get_user".into(),
            content: r#"{"name":"Ada"}"#.into(),
            is_error: false,
        },
    ]
}

#[tokio::test(flavor = "current_thread")]
async fn openai_offers_tools_reads_calls_and_replays_results() {
    let calls = json!({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": null,
        "tool_calls": [{"id": "c1", "type": "function",
                        "function": {"name": "get_user", "arguments": "{\"user_id\":\"u1\"}"}}]}}]});
    let answer = json!({"choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "content": "{\"verdict\": \"approve\", \"notes\": \"Ada\"}"}}]});
    let fake = Fake::start(vec![ok(calls), ok(answer)]).await;
    let b = HttpBackend::openai_compatible(
        "openai",
        "m",
        fake.url.clone(),
        Some(ApiKey::new(KEY)),
        settings(),
    )
    .unwrap();
    let mut req = with_tools(review_request());
    let first = b.call(&req).await.unwrap();
    assert!(first.values.is_empty());
    assert_eq!(
        first.tool_calls,
        vec![ToolUse {
            id: "c1".into(),
            name: "get_user".into(),
            arguments: r#"{"user_id":"u1"}"#.into()
        }]
    );
    let body = &fake.requests()[0].body;
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(body["tools"][0]["function"]["name"], "get_user");
    assert_eq!(
        body["tools"][0]["function"]["parameters"]["required"],
        json!(["user_id"])
    );
    req.conversation = conversation();
    let second = b.call(&req).await.unwrap();
    assert_eq!(
        second.values,
        vec![Value::Enum(EnumId(0), 0), Value::text("Ada")]
    );
    assert!(second.tool_calls.is_empty());
    let messages = fake.requests()[1].body["messages"]
        .as_array()
        .unwrap()
        .clone();
    let n = messages.len();
    assert_eq!(messages[n - 2]["role"], "assistant");
    assert_eq!(messages[n - 2]["tool_calls"][0]["id"], "c1");
    assert_eq!(
        messages[n - 2]["tool_calls"][0]["function"]["arguments"],
        "{\"user_id\":\"u1\"}"
    );
    assert_eq!(
        messages[n - 1],
        json!({"role": "tool", "tool_call_id": "c1", "content": "{\"name\":\"Ada\"}"})
    );
}

#[tokio::test(flavor = "current_thread")]
async fn anthropic_offers_tools_beside_the_answer_tool_and_sends_tool_results() {
    let message = |content: serde_json::Value| {
        json!({"id": "m", "type": "message", "role": "assistant", "model": "c", "content": content,
               "stop_reason": "tool_use", "usage": {"input_tokens": 1, "output_tokens": 1}})
    };
    let calls = message(json!([
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_user", "input": {"user_id": "u1"}}
    ]));
    let answer = message(json!([
        {"type": "tool_use", "id": "toolu_2", "name": "answer", "input": {"verdict": "revise", "notes": "x"}}
    ]));
    let fake = Fake::start(vec![ok(calls), ok(answer)]).await;
    let b =
        HttpBackend::anthropic("c", fake.url.clone(), Some(ApiKey::new(KEY)), settings()).unwrap();
    let mut req = with_tools(review_request());
    let first = b.call(&req).await.unwrap();
    assert_eq!(first.tool_calls.len(), 1);
    assert_eq!(first.tool_calls[0].name, "get_user");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&first.tool_calls[0].arguments).unwrap(),
        json!({"user_id": "u1"})
    );
    let body = &fake.requests()[0].body;
    let names: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["get_user", "answer"]);
    assert_eq!(body["tool_choice"], json!({"type": "any"}));
    req.conversation = conversation();
    let second = b.call(&req).await.unwrap();
    assert_eq!(second.values[0], Value::Enum(EnumId(0), 1));
    let messages = fake.requests()[1].body["messages"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[1]["content"][0]["type"], "tool_use");
    assert_eq!(messages[1]["content"][0]["input"], json!({"user_id": "u1"}));
    assert_eq!(
        messages[2]["content"][0],
        json!({"type": "tool_result", "tool_use_id": "c1", "content": "{\"name\":\"Ada\"}", "is_error": false})
    );
}
