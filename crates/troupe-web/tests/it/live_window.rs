//! A long run on the page and its live stream: what a client holds and
//! receives does not grow with the run's history. The first update carries
//! one window of rows and a chart of that window; later updates carry only
//! the rows of new events (every new event is either sent or counted as
//! skipped, exactly once); pages of the past are reached with `?before=`.

use crate::common;

use common::*;
use reqwest::header::AUTHORIZATION;
use serde_json::Value;
use std::time::Duration;

const TOKEN: &str = "s3cret-token";
const WINDOW: usize = 500;

/// Counts, waits for a person, counts as far again.
const LONG: &str = r#"
human go_on(k: Int) -> Bool { ask: "Go on after {k}?" }
workflow long(limit: Int @ Ping) {
  lifelines Ping, Pong
  act Ping: k = 0
  while k < limit @ Ping {
    msg Ping(k) -> Pong(n)
    act Pong: n = n + 1
    msg Pong(n) -> Ping(k)
  }
  act Ping: ok = go_on(k)
  while k < limit * 2 @ Ping {
    msg Ping(k) -> Pong(n)
    act Pong: n = n + 1
    msg Pong(n) -> Ping(k)
  }
  return k @ Ping
}
"#;

/// The `update` events of an SSE body chunk.
fn updates(text: &str) -> Vec<Value> {
    text.split("\n\n")
        .filter(|block| block.contains("event: update"))
        .filter_map(|block| {
            let data: String = block
                .lines()
                .filter_map(|l| l.strip_prefix("data: ").or_else(|| l.strip_prefix("data:")))
                .collect();
            serde_json::from_str(&data).ok()
        })
        .collect()
}

fn rows(update: &Value) -> usize {
    update["rows"]
        .as_str()
        .unwrap_or("")
        .matches("<tr>")
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_run_is_followed_in_bounded_increments() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(&dir);
    let limit = 25_000u64;
    let (run, handle) = start_run(&store, LONG, &[("limit", &limit.to_string())]);
    let task = wait_tasks(&store, run, 1).remove(0);
    let addr = serve(&store, TOKEN).await;
    let c = client();
    let url = |p: &str| format!("http://{addr}{p}");
    let bearer = format!("Bearer {TOKEN}");
    let before_wait = store.run(run).unwrap().events;
    assert!(before_wait >= 4 * limit, "{before_wait} events recorded");

    let mut sse = c
        .get(url(&format!("/runs/{run}/events")))
        .header(AUTHORIZATION, &bearer)
        .send()
        .await
        .unwrap();
    let mut text = String::new();
    let mut got: Vec<Value> = Vec::new();
    let mut biggest = 0usize;
    while got.is_empty() {
        let chunk = tokio::time::timeout(Duration::from_secs(20), sse.chunk())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        biggest = biggest.max(chunk.len());
        text.push_str(&String::from_utf8_lossy(&chunk));
        got = updates(&text);
    }
    let first = got[0].clone();
    assert_eq!(first["reset"], true);
    assert_eq!(first["events"].as_u64().unwrap(), before_wait);
    assert_eq!(rows(&first), WINDOW, "the first update shows one window");
    assert!(first["chart"].as_str().unwrap().contains("<svg"));

    // Answer; the run counts on to the end while the stream follows it.
    let r = c
        .post(url(&format!("/api/tasks/{}/answer", task.id)))
        .header(AUTHORIZATION, &bearer)
        .json(&serde_json::json!({"yes": true}))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.text().await.unwrap());
    let mut ended = false;
    while !ended {
        let chunk = tokio::time::timeout(Duration::from_secs(30), sse.chunk())
            .await
            .unwrap()
            .unwrap();
        let Some(chunk) = chunk else { break };
        biggest = biggest.max(chunk.len());
        text.push_str(&String::from_utf8_lossy(&chunk));
        ended = text.contains("event: end");
    }
    assert!(ended, "the stream did not end");
    handle.join().unwrap().unwrap();
    let total = store.run(run).unwrap().events;
    // As many rounds after the wait as before it.
    assert!(total >= 2 * before_wait, "{total} events in all");
    let all = updates(&text);
    let later = &all[1..];
    assert!(!later.is_empty());
    // Every new event arrives as a row or is counted as skipped, once.
    let sent: u64 = later
        .iter()
        .map(|u| rows(u) as u64 + u["skipped"].as_u64().unwrap())
        .sum();
    assert_eq!(sent, total - before_wait, "increments must add up");
    for u in later {
        assert!(rows(u) <= WINDOW, "an update sent {} rows", rows(u));
        assert_eq!(u["reset"], false);
    }
    // The last update has the final chart and status.
    let last = later.last().unwrap();
    assert_eq!(last["status"], "done");
    assert!(last["chart"].as_str().is_some(), "the final chart is sent");
    // Bounded whatever the history: a window of rows plus its chart.
    assert!(biggest < 2_000_000, "an SSE chunk of {biggest} bytes");

    // Pages of the past: the page before event 1000 shows events 500..999.
    let page = c
        .get(url(&format!("/runs/{run}?before=1000")))
        .header(AUTHORIZATION, &bearer)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("Events 500–999 of"),
        "{}",
        &page[..page.len().min(2000)]
    );
    assert!(page.contains(&format!("/runs/{run}?before=500")));
    assert!(page.contains("<td class=\"mono\">500</td>"));
    assert!(!page.contains("<td class=\"mono\">1000</td>"));
    let latest = c
        .get(url(&format!("/runs/{run}")))
        .header(AUTHORIZATION, &bearer)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(latest.contains("← earlier events"));
    assert_eq!(latest.matches("<tr><td class=\"mono\">").count(), WINDOW);

    // The API gives the same window, with where it starts.
    let doc: Value = c
        .get(url(&format!("/api/runs/{run}")))
        .header(AUTHORIZATION, &bearer)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(doc["trace"].as_array().unwrap().len(), WINDOW);
    assert_eq!(doc["trace_from"].as_u64().unwrap(), total - WINDOW as u64);
    let doc: Value = c
        .get(url(&format!("/api/runs/{run}?before=10")))
        .header(AUTHORIZATION, &bearer)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(doc["trace"].as_array().unwrap().len(), 10);
    assert_eq!(doc["trace_from"], 0);
}
