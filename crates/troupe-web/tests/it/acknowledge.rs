//! Acknowledgements (a `human` action without outputs) through the web: the
//! inbox shows one Acknowledge button, the API refuses "no" and values, and
//! a yes (or the empty record) completes the waiting run.

use crate::common;

use common::*;
use reqwest::StatusCode;
use reqwest::header::AUTHORIZATION;
use serde_json::{Value, json};

const TOKEN: &str = "ack-token";

const NOTICE: &str = r#"
human notice(text: Text) { ask: "Read this: {text}" }
workflow w(text: Text @ A) {
  lifelines A, B
  msg A(text) -> B(text)
  act B: notice(text)
  msg B(1) -> A(done)
  return done @ A
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acknowledgement_is_answered_with_yes_or_the_empty_record() {
    for good in [json!({"yes": true}), json!({"answer": {}})] {
        let dir = tempfile::tempdir().unwrap();
        let store = open_store(&dir);
        let addr = serve(&store, TOKEN).await;
        let c = client();
        let url = |p: &str| format!("http://{addr}{p}");
        let (run, handle) = start_run(&store, NOTICE, &[("text", "the change")]);
        let tasks = wait_tasks(&store, run, 1);
        let task = tasks[0].id.clone();
        assert_eq!(tasks[0].kind.as_str(), "acknowledge");

        let inbox = c
            .get(url("/inbox"))
            .header(AUTHORIZATION, format!("Bearer {TOKEN}"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(inbox.contains(">Acknowledge</button>"), "{inbox}");
        assert!(!inbox.contains(">No</button>"), "{inbox}");

        let answer = url(&format!("/api/tasks/{task}/answer"));
        for bad in [
            json!({"no": true}),
            json!({"value": "ok then"}),
            json!({"answer": [1]}),
        ] {
            let r = c
                .post(&answer)
                .header(AUTHORIZATION, format!("Bearer {TOKEN}"))
                .json(&bad)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{bad}");
            let body: Value = r.json().await.unwrap();
            assert!(body.to_string().contains("acknowledgement"), "{body}");
        }
        assert_eq!(wait_tasks(&store, run, 1).len(), 1, "still pending");
        let r = c
            .post(&answer)
            .header(AUTHORIZATION, format!("Bearer {TOKEN}"))
            .json(&good)
            .send()
            .await
            .unwrap();
        assert_eq!(
            r.status(),
            StatusCode::OK,
            "{good}: {}",
            r.text().await.unwrap()
        );
        let result = tokio::task::spawn_blocking(move || handle.join().unwrap())
            .await
            .unwrap();
        assert!(result.is_ok(), "{result:?}");
        wait_status(&store, run, "done");
    }
}
