//! The cross-port attack of issue #21, in a real browser: a person signed in
//! to `troupe serve` on one port of 127.0.0.1 visits a hostile page on
//! another port of 127.0.0.1. The two are the same *site*, so Chromium sends
//! the session cookie (`SameSite=Strict` does not separate ports) with
//! everything the hostile page makes it send — the test shows that first.
//! The hostile page then auto-submits the inbox's form and fires `fetch`es
//! at the inbox and the API to approve the person's task; the task must
//! still be pending afterwards (read from the store). A script on the
//! server's own origin that lacks the session's CSRF token is refused too.
//! Finally the person answers through the real inbox page in the same
//! browser, and that works.
//!
//! Headless Chromium through chromedriver (`common::browser`); fails, never
//! skips, when they are missing.

use crate::common;

use axum::response::Html;
use axum::routing::get;
use common::browser::*;
use common::*;
use serde_json::json;
use troupe_store::TaskStatus;

const TOKEN: &str = "csrf-browser-token";

/// The hostile page: `fetch`es with the person's cookies (no-cors, as a
/// cross-origin page must), then a form that submits itself.
fn attack_page(target: &str, task: &str) -> String {
    format!(
        r#"<!doctype html><html><body><h1>Free prizes</h1>
<form id="f" method="post" action="{target}/inbox/{task}">
<input type="hidden" name="choice" value="yes"><input type="hidden" name="csrf" value="guessed">
</form>
<script>
var opts = {{method: 'POST', mode: 'no-cors', credentials: 'include'}};
function form(body) {{ return Object.assign({{headers: {{'Content-Type': 'application/x-www-form-urlencoded'}}, body: body}}, opts); }}
function plain(body) {{ return Object.assign({{headers: {{'Content-Type': 'text/plain'}}, body: body}}, opts); }}
Promise.allSettled([
  fetch('{target}/inbox/{task}', form('choice=yes')),
  fetch('{target}/inbox/{task}', form('choice=yes&csrf=')),
  fetch('{target}/api/tasks/{task}/answer', plain('{{"yes": true}}')),
  fetch('{target}/api/tasks/{task}/answer', form('yes=true')),
]).then(function() {{
  document.title = 'fetched';
  document.getElementById('f').submit();
}});
</script></body></html>"#
    )
}

/// A page that sends the browser to the inbox by a cross-port form (GET, so
/// it is allowed): what comes back shows whether the cookie went along.
fn peek_page(target: &str) -> String {
    format!(
        r#"<!doctype html><html><body><form id="f" method="get" action="{target}/inbox"></form>
<script>document.getElementById('f').submit();</script></body></html>"#
    )
}

/// Serves the hostile pages on another port of 127.0.0.1.
async fn serve_attacker(target: String, task: String) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let attack = attack_page(&target, &task);
    let peek = peek_page(&target);
    let app = axum::Router::new()
        .route("/", get(move || async move { Html(attack) }))
        .route("/peek", get(move || async move { Html(peek) }));
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_on_another_port_cannot_answer_a_task_but_the_inbox_can() {
    let chromium = find_program("TROUPE_CHROMIUM", &["chromium", "chromium-browser"]);
    let chromedriver = find_program("TROUPE_CHROMEDRIVER", &["chromedriver"]);
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(&dir);
    let addr = serve(&store, TOKEN).await;
    let base = format!("http://{addr}");
    let (run, handle) = start_run(&store, APPROVAL, &[("request", "Wire 10,000 EUR")]);
    let task = wait_tasks(&store, run, 1)[0].id.clone();
    wait_status(&store, run, "waiting");
    let evil = serve_attacker(base.clone(), task.clone()).await;
    assert_ne!(evil.port(), addr.port());
    let pending = || store.task(&task).unwrap().status == TaskStatus::Pending;

    let profile = tempfile::tempdir().unwrap();
    let driver = Driver::start(&chromium, &chromedriver, profile.path()).await;
    driver.goto(&format!("{base}/inbox?token={TOKEN}")).await;
    driver
        .wait_for(
            "return location.search === '' && !!document.querySelector('div.task[data-kind=confirm]')",
            "the inbox, signed in",
        )
        .await;

    // The premise: from the other port, the browser sends the cookie along.
    driver.goto(&format!("http://{evil}/peek")).await;
    driver
        .wait_for(
            &format!(
                "return location.host === '{addr}' && document.body.innerText.indexOf('Wire 10,000 EUR') >= 0"
            ),
            "the inbox, reached from the other port with the person's cookie",
        )
        .await;

    // The attack: fetches, then the self-submitting form.
    driver.goto(&format!("http://{evil}/")).await;
    driver
        .wait_for(
            &format!(
                "return location.host === '{addr}' && location.pathname === '/inbox/{task}' && document.readyState === 'complete'"
            ),
            "the hostile form's answer",
        )
        .await;
    let shown = driver.js("return document.body.innerText").await;
    let shown = shown.as_str().unwrap();
    assert!(shown.contains("refused"), "{shown}");
    assert!(!shown.contains("Answered"), "{shown}");
    assert!(pending(), "the hostile page answered the task");

    // A script on the server's own origin without the session's CSRF token
    // (as injected markup would run): refused as well.
    driver.goto(&format!("{base}/inbox")).await;
    let status = driver
        .js(&format!(
            "return fetch('/inbox/{task}', {{method: 'POST', headers: {{'Content-Type': 'application/x-www-form-urlencoded'}}, body: 'choice=yes'}}).then(function(r){{ return r.status; }})"
        ))
        .await;
    assert_eq!(status, json!(403));
    let status = driver
        .js(&format!(
            "return fetch('/api/tasks/{task}/answer', {{method: 'POST', headers: {{'Content-Type': 'application/json'}}, body: '{{\"yes\": true}}'}}).then(function(r){{ return r.status; }})"
        ))
        .await;
    assert_eq!(status, json!(403));
    assert!(
        pending(),
        "a same-origin request without the CSRF token answered"
    );

    // The person, in the same browser, answers through the inbox.
    driver.goto(&format!("{base}/inbox")).await;
    driver.click("div.task[data-kind=confirm] button.yes").await;
    driver
        .wait_for(
            "var n = document.getElementById('notice'); return !!n && n.textContent.indexOf('Answered') === 0",
            "the answer was recorded",
        )
        .await;
    let row = store.task(&task).unwrap();
    assert_eq!(row.status, TaskStatus::Answered);
    assert_eq!(row.answer.as_deref(), Some("true"));
    assert_eq!(row.answered_by.as_deref(), Some("web"));
    driver.cmd("DELETE", "", None).await;
    drop(driver);
    handle.join().unwrap().expect("the run finishes");
}
