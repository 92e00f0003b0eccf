//! The pages in a real browser: headless Chromium driven through
//! chromedriver (the WebDriver protocol, spoken with a few reqwest calls —
//! no WebDriver crate needed for five commands). A person opens the run page
//! and the inbox, presses Yes, and the run page — never reloaded — shows the
//! run finish and its chart grow, over server-sent events.
//!
//! Needs Debian's `chromium` and `chromium-driver` (`.ci/install-browser.sh`);
//! fails, never skips, when they are missing. `TROUPE_CHROMIUM` and
//! `TROUPE_CHROMEDRIVER` override where they are looked for. With
//! `TROUPE_WEB_SCREENSHOT=PATH` the run page's screenshot is also copied to
//! PATH (that is how `docs/run-page.png` is made).

use crate::common;

use common::browser::*;
use common::*;
use serde_json::json;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TOKEN: &str = "browser-token";
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_answers_in_the_inbox_and_watches_the_run_finish() {
    let chromium = find_program("TROUPE_CHROMIUM", &["chromium", "chromium-browser"]);
    let chromedriver = find_program("TROUPE_CHROMEDRIVER", &["chromedriver"]);
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(&dir);
    let addr = serve(&store, TOKEN).await;
    let base = format!("http://{addr}");
    let (run, handle) = start_run(
        &store,
        APPROVAL,
        &[("request", "Buy a sailing boat for the team offsite")],
    );
    wait_tasks(&store, run, 1);
    wait_status(&store, run, "waiting");

    let profile = tempfile::tempdir().unwrap();
    let driver = Driver::start(&chromium, &chromedriver, profile.path()).await;

    // The run page, signed in with ?token= once.
    driver
        .goto(&format!("{base}/runs/{run}?token={TOKEN}"))
        .await;
    driver
        .wait_for(
            "return document.getElementById('live') && document.getElementById('live').textContent === 'live'",
            "the live stream connected",
        )
        .await;
    let before = driver
        .js("return document.getElementById('chart').innerHTML")
        .await;
    let before = before.as_str().unwrap().to_owned();
    assert!(before.contains("<svg"), "the chart is drawn: {before}");
    assert!(!before.contains("record_decision"));
    let rows_before = driver
        .js("return document.querySelectorAll('#trace tr').length")
        .await;
    let run_window = driver.cmd("GET", "/window", None).await;

    // The inbox, in a second tab: press Yes.
    let tab = driver
        .cmd("POST", "/window/new", Some(json!({"type": "tab"})))
        .await;
    driver
        .cmd("POST", "/window", Some(json!({"handle": tab["handle"]})))
        .await;
    driver.goto(&format!("{base}/inbox")).await;
    let inbox = driver.js("return document.body.innerText").await;
    assert!(
        inbox.as_str().unwrap().contains("Buy a sailing boat"),
        "{inbox}"
    );
    driver.click("div.task[data-kind=confirm] button.yes").await;
    driver
        .wait_for(
            "var n = document.getElementById('notice'); return !!n && n.textContent.indexOf('Answered') === 0",
            "the answer was recorded",
        )
        .await;

    // Back on the run page, never reloaded: the run finishes, the chart grows.
    driver
        .cmd("POST", "/window", Some(json!({"handle": run_window})))
        .await;
    driver
        .wait_for(
            "return document.body.getAttribute('data-status') === 'done'",
            "the run as done",
        )
        .await;
    driver
        .wait_for(
            "return document.getElementById('live').textContent === 'finished'",
            "the end of the stream",
        )
        .await;
    let after = driver
        .js("return document.getElementById('chart').innerHTML")
        .await;
    assert!(
        after.as_str().unwrap().contains("record_decision"),
        "the chart shows the rest of the run"
    );
    let rows_after = driver
        .js("return document.querySelectorAll('#trace tr').length")
        .await;
    assert!(
        rows_after.as_u64().unwrap() > rows_before.as_u64().unwrap(),
        "{rows_before} → {rows_after}"
    );
    let outcome = driver
        .js("return document.getElementById('outcome').innerText")
        .await;
    assert!(
        outcome.as_str().unwrap().contains("\"approved\": true"),
        "{outcome}"
    );
    driver.cmd("DELETE", "", None).await;
    drop(driver);
    handle.join().unwrap().expect("the run finishes");
    assert_eq!(
        store.task("task-1").unwrap().answered_by.as_deref(),
        Some("web")
    );

    // A screenshot of the run page, as the README shows it.
    let shot = dir.path().join("run-page.png");
    let profile = tempfile::tempdir().unwrap();
    let mut child = Command::new(&chromium)
        .args(chromium_flags(profile.path()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("{base}/runs/{run}?token={TOKEN}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("chromium --screenshot did not finish in 60 s");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(status.success(), "chromium --screenshot failed");
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG"), "a PNG");
    assert!(png.len() > 10_000, "a page, not a blank");
    if let Some(out) = std::env::var_os("TROUPE_WEB_SCREENSHOT") {
        std::fs::copy(&shot, out).unwrap();
    }
}
