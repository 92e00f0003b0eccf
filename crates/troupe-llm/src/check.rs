//! `troupe models check`: try every configured model with a tiny request.
//!
//! The request asks for a structured answer (one `Bool`), so a pass means the
//! key, the base URL, the model name and structured output all work — the
//! last is what older OpenAI-compatible servers most often lack. The checks
//! run concurrently, so the slowest model bounds the wait.

use crate::router::Router;
use crate::{BoxFuture, CallKey, LlmAnswer, LlmBackend, LlmError, LlmRequest, OutputSlot};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use troupe_check::{Type, TypeTable, Value};

/// The outcome of checking one configured model.
#[derive(Debug, Clone)]
pub struct ModelCheck {
    /// The spec, e.g. `openai:gpt-4o-mini`.
    pub spec: String,
    /// What the backend says of itself (base URL included; never a key).
    pub describe: String,
    /// The route keys that use it (`default` for the default).
    pub used_by: Vec<String>,
    /// The latency of the answer, or the classified error.
    pub result: Result<Duration, LlmError>,
}

impl ModelCheck {
    pub fn ok(&self) -> bool {
        self.result.is_ok()
    }
}

impl std::fmt::Display for ModelCheck {
    /// One line: `ok   openai:gpt-4o-mini  812 ms  (default)` or `FAIL … error`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let used = self.used_by.join(", ");
        match &self.result {
            Ok(d) => write!(f, "ok    {}  {} ms  ({used})", self.describe, d.as_millis()),
            Err(e) => write!(f, "FAIL  {}  ({used}): {e}", self.describe),
        }
    }
}

/// The request sent to each model.
pub fn check_request() -> LlmRequest {
    let mut r = LlmRequest::new(
        CallKey::new("troupe", "models_check", 0),
        "Is 2 + 2 equal to 4? Answer with true or false.",
        vec![OutputSlot::new("answer", Type::Bool)],
        Arc::new(TypeTable::default()),
    );
    r.temperature = Some(0.0);
    r.retries = Some(1);
    r
}

/// Tries each distinct configured model (the default and every route) once.
/// A scripted backend is not called (its file lists its own keys): it passes
/// once it has loaded.
pub async fn check_models(router: &Router) -> Vec<ModelCheck> {
    let request = check_request();
    let configured = router.configured();
    let futures: Vec<_> = configured
        .iter()
        .map(|(spec, backend, _)| {
            let backend: &dyn LlmBackend = backend.as_ref();
            if spec.starts_with("scripted:") {
                // A script answers only the keys it lists; it was loaded and
                // parsed when the router was built, which is all there is to check.
                let ok: BoxFuture<'_, _> = Box::pin(async {
                    Ok(LlmAnswer {
                        values: vec![Value::Bool(true)],
                        tool_calls: Vec::new(),
                        model: String::new(),
                        usage: None,
                        latency: Duration::ZERO,
                        attempts: 0,
                        detail: Default::default(),
                    })
                });
                ok
            } else {
                backend.call(&request)
            }
        })
        .collect();
    let results = join_all(futures).await;
    configured
        .into_iter()
        .zip(results)
        .map(|((spec, backend, used_by), result)| ModelCheck {
            spec,
            describe: backend.describe(),
            used_by,
            result: result.and_then(|a| match a.values.first() {
                Some(Value::Bool(_)) => Ok(a.latency),
                _ => Err(LlmError::InvalidAnswer {
                    backend: a.model.clone(),
                    action: "models_check".into(),
                    message: "the answer is not a Bool".into(),
                }),
            }),
        })
        .collect()
}

/// Polls every future until all are done (a `join_all` without the `futures` crate).
async fn join_all<T>(futures: Vec<Pin<Box<dyn Future<Output = T> + Send + '_>>>) -> Vec<T> {
    let mut futures: Vec<_> = futures.into_iter().map(Some).collect();
    let mut results: Vec<Option<T>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(move |cx: &mut Context<'_>| {
        for (slot, result) in futures.iter_mut().zip(results.iter_mut()) {
            if let Some(f) = slot
                && let Poll::Ready(v) = f.as_mut().poll(cx)
            {
                *result = Some(v);
                *slot = None;
            }
        }
        if futures.iter().all(Option::is_none) {
            Poll::Ready(results.iter_mut().filter_map(Option::take).collect())
        } else {
            Poll::Pending
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::LlmConfig;

    #[tokio::test(flavor = "current_thread")]
    async fn checks_every_distinct_backend() {
        let script =
            std::env::temp_dir().join(format!("troupe-llm-check-{}.json", std::process::id()));
        std::fs::write(&script, r#"{"execute": "done"}"#).unwrap();
        let config = LlmConfig::from_toml_str(
            &format!(
                "[llm]\ndefault = \"mock\"\n[llm.route]\nPlanner = \"mock:1ms\"\nReviewer = \"mock:1ms\"\n\
                 finalize = \"mock\"\nexecute = \"scripted:{}\"",
                script.display()
            ),
            None,
        )
        .unwrap();
        let router = Router::from_config_with_env(&config, &[], None, &|_| None).unwrap();
        let _ = std::fs::remove_file(&script);
        let checks = check_models(&router).await;
        assert_eq!(checks.len(), 3);
        assert_eq!(checks[0].used_by, vec!["default", "finalize"]);
        assert_eq!(checks[1].used_by, vec!["Planner", "Reviewer"]);
        assert_eq!(checks[2].used_by, vec!["execute"]);
        assert!(checks.iter().all(ModelCheck::ok), "{checks:?}");
        assert!(
            checks[1]
                .to_string()
                .starts_with("ok    mock (latency 1 ms)")
        );
    }
}
