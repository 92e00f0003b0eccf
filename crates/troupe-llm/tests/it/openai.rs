//! The OpenAI-compatible backend against a fake chat-completions server on loopback.

use crate::common;

use common::{Fake, KEY, Reply, ok, review_request, settings, text_request};
use serde_json::json;
use std::time::Duration;
use troupe_check::Value;
use troupe_check::types::EnumId;
use troupe_llm::{ApiKey, HttpBackend, LlmBackend, LlmError, output_schema};

fn completion(content: &str) -> serde_json::Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    })
}

fn backend(fake: &Fake) -> HttpBackend {
    HttpBackend::openai_compatible(
        "openai",
        "m",
        format!("{}/v1", fake.url),
        Some(ApiKey::new(KEY)),
        settings(),
    )
    .unwrap()
}

#[tokio::test(flavor = "current_thread")]
async fn plain_text_answer() {
    let fake = Fake::start(vec![ok(completion("1. Buy cake\n2. Eat it"))]).await;
    let a = backend(&fake).call(&text_request()).await.unwrap();
    assert_eq!(a.values, vec![Value::text("1. Buy cake\n2. Eat it")]);
    assert_eq!(a.model, "openai:m");
    assert_eq!(a.attempts, 1);
    let usage = a.usage.unwrap();
    assert_eq!((usage.input_tokens, usage.output_tokens), (11, 7));

    let reqs = fake.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].path, "/v1/chat/completions");
    assert_eq!(
        reqs[0].headers["authorization"],
        format!("Bearer {KEY}").as_str()
    );
    let body = &reqs[0].body;
    assert_eq!(body["model"], "m");
    assert_eq!(
        body["messages"][0],
        json!({"role": "system", "content": "You are a careful planner."})
    );
    assert_eq!(
        body["messages"][1],
        json!({"role": "user", "content": "Write a plan for: a party"})
    );
    assert!(
        body.get("response_format").is_none(),
        "raw text needs no schema"
    );
    assert!(body.get("temperature").is_none());
}

#[tokio::test(flavor = "current_thread")]
async fn structured_answer_uses_the_schema() {
    let fake = Fake::start(vec![ok(completion(
        r#"{"verdict": "revise", "notes": "add a budget"}"#,
    ))])
    .await;
    let mut req = review_request();
    req.temperature = Some(0.5);
    let a = backend(&fake).call(&req).await.unwrap();
    assert_eq!(
        a.values,
        vec![Value::Enum(EnumId(0), 1), Value::text("add a budget")]
    );
    let body = &fake.requests()[0].body;
    assert_eq!(body["temperature"], 0.5);
    let rf = &body["response_format"];
    assert_eq!(rf["type"], "json_schema");
    assert_eq!(rf["json_schema"]["strict"], true);
    assert_eq!(
        rf["json_schema"]["schema"],
        output_schema(&req.outputs, &req.types)
    );
    // The schema is stated in the prompt too, for servers that ignore response_format.
    assert!(
        body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("JSON Schema")
    );
}

#[tokio::test(flavor = "current_thread")]
async fn invalid_json_is_re_asked_with_the_error() {
    let fake = Fake::start(vec![
        ok(completion("I think it should be revised.")),
        ok(completion(r#"{"verdict": "maybe", "notes": "?"}"#)),
        ok(completion(
            "```json\n{\"verdict\": \"approve\", \"notes\": \"fine\"}\n```",
        )),
    ])
    .await;
    let a = backend(&fake).call(&review_request()).await.unwrap();
    assert_eq!(a.values[0], Value::Enum(EnumId(0), 0));
    assert_eq!(a.attempts, 3);
    assert_eq!(
        a.usage.unwrap().input_tokens,
        33,
        "usage adds up over re-asks"
    );

    let reqs = fake.requests();
    let second = reqs[1].body["messages"].as_array().unwrap();
    assert_eq!(second.len(), 3);
    assert_eq!(
        second[1],
        json!({"role": "assistant", "content": "I think it should be revised."})
    );
    let fix = second[2]["content"].as_str().unwrap();
    assert!(fix.contains("not valid JSON"), "{fix}");
    let third = reqs[2].body["messages"].as_array().unwrap();
    assert_eq!(third.len(), 5, "the conversation keeps growing");
    let fix = third[4]["content"].as_str().unwrap();
    assert!(
        fix.contains("\"maybe\"") && fix.contains("verdict"),
        "{fix}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn re_asks_are_bounded_by_retries() {
    let fake = Fake::start(vec![ok(completion("nope"))]).await;
    let mut req = review_request();
    req.retries = Some(1);
    let err = backend(&fake).call(&req).await.unwrap_err();
    assert!(matches!(err, LlmError::InvalidAnswer { .. }), "{err:?}");
    assert!(err.to_string().contains("after 2 ask(s)"), "{err}");
    assert_eq!(fake.requests().len(), 2);
}

#[tokio::test(flavor = "current_thread")]
async fn retry_after_is_honoured() {
    let fake = Fake::start(vec![
        Reply::Json(
            429,
            json!({"error": {"message": "Rate limit reached", "type": "requests"}}),
            vec![("retry-after", "1".into())],
        ),
        ok(completion("done")),
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
async fn server_error_then_success() {
    let fake = Fake::start(vec![
        Reply::Raw(500, "internal error"),
        ok(completion("done")),
    ])
    .await;
    let a = backend(&fake).call(&text_request()).await.unwrap();
    assert_eq!(a.values, vec![Value::text("done")]);
    assert_eq!(a.attempts, 2);
}

#[tokio::test(flavor = "current_thread")]
async fn persistent_server_errors_are_transient() {
    let fake = Fake::start(vec![Reply::Json(
        503,
        json!({"error": {"message": "overloaded"}}),
        vec![],
    )])
    .await;
    let err = backend(&fake).call(&text_request()).await.unwrap_err();
    assert!(err.is_transient(), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("503")
            && msg.contains("overloaded")
            && msg.contains("gave up after 3 attempt(s)"),
        "{msg}"
    );
    assert_eq!(fake.requests().len(), 3);
}

#[tokio::test(flavor = "current_thread")]
async fn too_long_retry_after_gives_up_at_once() {
    let fake = Fake::start(vec![Reply::Json(
        429,
        json!({"error": {"message": "quota"}}),
        vec![("retry-after", "3600".into())],
    )])
    .await;
    let err = backend(&fake).call(&text_request()).await.unwrap_err();
    assert!(err.is_transient());
    assert!(err.to_string().contains("asked to wait 3600 s"), "{err}");
    // It gave up without waiting: the one request was not repeated.
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn timeout_is_transient() {
    let fake = Fake::start(vec![Reply::Slow(
        Duration::from_millis(1500),
        Box::new(ok(completion("late"))),
    )])
    .await;
    let mut s = settings();
    s.timeout = Duration::from_millis(300);
    s.max_retries = 1;
    let b =
        HttpBackend::openai_compatible("openai", "m", format!("{}/v1", fake.url), None, s).unwrap();
    let err = b.call(&text_request()).await.unwrap_err();
    assert!(err.is_transient(), "{err:?}");
    assert!(err.to_string().contains("timed out after 0.3 s"), "{err}");
    assert_eq!(fake.requests().len(), 2);
}

#[tokio::test(flavor = "current_thread")]
async fn malformed_body_is_an_invalid_answer() {
    let fake = Fake::start(vec![Reply::Raw(200, "<html>gateway</html>")]).await;
    let err = backend(&fake).call(&text_request()).await.unwrap_err();
    assert!(matches!(err, LlmError::InvalidAnswer { .. }), "{err:?}");
    assert!(err.to_string().contains("malformed response body"), "{err}");

    let fake = Fake::start(vec![ok(json!({"choices": []}))]).await;
    let err = backend(&fake).call(&text_request()).await.unwrap_err();
    assert!(matches!(err, LlmError::InvalidAnswer { .. }), "{err:?}");
    assert!(err.to_string().contains("choices[0].message"), "{err}");
    assert_eq!(fake.requests().len(), 1, "a malformed body is not retried");
}

#[tokio::test(flavor = "current_thread")]
async fn unauthorized_is_permanent_and_never_shows_the_key() {
    let fake = Fake::start(vec![Reply::Json(
        401,
        json!({"error": {"message": format!("Incorrect API key provided: {KEY}."), "type": "invalid_request_error"}}),
        vec![],
    )])
    .await;
    let b = backend(&fake);
    let err = b.call(&text_request()).await.unwrap_err();
    assert!(matches!(err, LlmError::Permanent { .. }), "{err:?}");
    let shown = format!("{err} {err:?} {b:?} {}", b.describe());
    assert!(
        shown.contains("401") && shown.contains("Incorrect API key provided"),
        "{shown}"
    );
    assert!(!shown.contains(KEY), "{shown}");
    assert_eq!(fake.requests().len(), 1, "4xx is not retried");
}

#[tokio::test(flavor = "current_thread")]
async fn connection_refused_is_transient() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let mut s = settings();
    s.max_retries = 0;
    let b = HttpBackend::openai_compatible("ollama", "q", format!("http://{addr}/v1"), None, s)
        .unwrap();
    let err = b.call(&text_request()).await.unwrap_err();
    assert!(err.is_transient(), "{err:?}");
    assert!(err.to_string().contains("cannot connect"), "{err}");
}

#[tokio::test(flavor = "current_thread")]
async fn retry_after_ms_is_honoured() {
    let fake = Fake::start(vec![
        Reply::Json(
            429,
            json!({"error": {"message": "slow"}}),
            vec![
                ("retry-after-ms", "300".into()),
                ("retry-after", "30".into()),
            ],
        ),
        ok(completion("done")),
    ])
    .await;
    backend(&fake).call(&text_request()).await.unwrap();
    let reqs = fake.requests();
    let waited = reqs[1].at - reqs[0].at;
    assert!(waited >= Duration::from_millis(280), "waited {waited:?}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_cut_off_answer_says_so() {
    let mut body = completion(r#"{"verdict": "rev"#);
    body["choices"][0]["finish_reason"] = json!("length");
    let fake = Fake::start(vec![ok(body)]).await;
    let mut req = review_request();
    req.retries = Some(0);
    let err = backend(&fake).call(&req).await.unwrap_err();
    assert!(
        err.to_string().contains("cut off at the token limit"),
        "{err}"
    );
}
