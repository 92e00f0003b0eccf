//! The router end to end: config, environment and overrides decide which fake
//! server (or the mock) answers each call; `check_models` reports each one.

use crate::common;

use common::{Fake, KEY, Reply, ok, review_request, text_request};
use serde_json::json;
use troupe_check::Value;
use troupe_llm::{CallKey, LlmBackend, LlmConfig, Router, check_models, parse_override};

fn completion(content: &str) -> serde_json::Value {
    json!({"choices": [{"message": {"role": "assistant", "content": content}}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}})
}

#[tokio::test(flavor = "current_thread")]
async fn routes_reach_the_right_servers() {
    let openai = Fake::start(vec![ok(completion("from openai"))]).await;
    let ollama = Fake::start(vec![ok(completion(
        r#"{"verdict": "approve", "notes": "from ollama"}"#,
    ))])
    .await;
    let config = LlmConfig::from_toml_str(
        r#"
        [llm]
        default = "openai:gpt-4o-mini"
        max_retries = 0
        [llm.route]
        "Reviewer" = "ollama:qwen2.5:7b"
        "#,
        None,
    )
    .unwrap();
    let (openai_url, ollama_url) = (format!("{}/v1", openai.url), format!("{}/v1", ollama.url));
    let env = move |v: &str| match v {
        "OPENAI_API_KEY" => Some(KEY.to_owned()),
        "OPENAI_BASE_URL" => Some(openai_url.clone()),
        "OLLAMA_BASE_URL" => Some(ollama_url.clone()),
        _ => None,
    };
    let overrides = vec![parse_override("Planner.finalize=mock").unwrap()];
    let router = Router::from_config_with_env(&config, &overrides, None, &env).unwrap();
    assert!(!router.uses_mock_by_default());

    let a = router.call(&text_request()).await.unwrap();
    assert_eq!(a.values, vec![Value::text("from openai")]);
    assert_eq!(a.model, "openai:gpt-4o-mini");
    let b = router.call(&review_request()).await.unwrap();
    assert_eq!(b.values[1], Value::text("from ollama"));
    assert_eq!(b.model, "ollama:qwen2.5:7b");
    let mut fin = text_request();
    fin.key = CallKey::new("Planner", "finalize", 0);
    assert_eq!(router.call(&fin).await.unwrap().model, "mock");

    assert_eq!(openai.requests()[0].body["model"], "gpt-4o-mini");
    assert!(openai.requests()[0].headers.contains_key("authorization"));
    assert_eq!(ollama.requests()[0].body["model"], "qwen2.5:7b");
    assert!(
        !ollama.requests()[0].headers.contains_key("authorization"),
        "ollama needs no key"
    );

    let shown = format!("{router:?}\n{}", router.describe());
    assert!(!shown.contains(KEY), "{shown}");
}

#[tokio::test(flavor = "current_thread")]
async fn check_models_reports_each_backend() {
    let good = Fake::start(vec![ok(completion(r#"{"answer": true}"#))]).await;
    let bad = Fake::start(vec![Reply::Json(
        401,
        json!({"error": {"message": "invalid x-api-key"}}),
        vec![],
    )])
    .await;
    let config = LlmConfig::from_toml_str(
        &format!(
            r#"
            [llm]
            default = "good:small"
            [llm.route]
            Reviewer = "bad:big"
            finalize = "mock"
            [providers.good]
            api = "openai"
            base_url = "{}/v1"
            [providers.bad]
            api = "anthropic"
            base_url = "{}"
            api_key_env = "BAD_KEY"
            "#,
            good.url, bad.url
        ),
        None,
    )
    .unwrap();
    let env = |v: &str| (v == "BAD_KEY").then(|| KEY.to_owned());
    let router = Router::from_config_with_env(&config, &[], None, &env).unwrap();
    let checks = check_models(&router).await;
    assert_eq!(checks.len(), 3);
    assert_eq!(checks[0].spec, "good:small");
    assert!(checks[0].ok(), "{}", checks[0]);
    assert_eq!(checks[1].spec, "bad:big");
    let err = checks[1].result.as_ref().unwrap_err();
    assert!(!err.is_transient());
    assert!(
        err.to_string().contains("401") && err.to_string().contains("invalid x-api-key"),
        "{err}"
    );
    assert!(checks[2].ok());
    let report: String = checks.iter().map(|c| format!("{c}\n")).collect();
    assert!(report.contains("FAIL") && !report.contains(KEY), "{report}");
    assert_eq!(
        good.requests()[0].body["response_format"]["json_schema"]["schema"]["required"],
        json!(["answer"])
    );
}

#[test]
fn missing_key_is_reported_when_building() {
    let config = LlmConfig::default();
    let err =
        Router::from_config_with_env(&config, &[], Some("anthropic:claude-sonnet-4-5"), &|_| None)
            .unwrap_err();
    assert_eq!(
        err.to_string(),
        "anthropic:claude-sonnet-4-5 needs an API key: set ANTHROPIC_API_KEY in the environment"
    );
}
