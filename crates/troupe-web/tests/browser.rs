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

mod common;

use common::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const TOKEN: &str = "browser-token";
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

fn find_program(env: &str, names: &[&str]) -> PathBuf {
    if let Some(p) = std::env::var_os(env) {
        return PathBuf::from(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for n in names {
            let p = dir.join(n);
            if p.is_file() {
                return p;
            }
        }
    }
    panic!(
        "{} is missing: the browser test needs Debian's chromium and chromium-driver; install them with `bash .ci/install-browser.sh` (or set {env})",
        names[0]
    );
}

fn chromium_flags(profile: &Path) -> Vec<String> {
    [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--hide-scrollbars",
        "--window-size=1200,900",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([format!("--user-data-dir={}", profile.display())])
    .collect()
}

/// A chromedriver process and one session.
struct Driver {
    child: Child,
    base: String,
    session: String,
    http: reqwest::Client,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Driver {
    async fn start(chromium: &Path, chromedriver: &Path, profile: &Path) -> Driver {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", chromedriver.display()));
        let mut driver = Driver {
            child,
            base: format!("http://127.0.0.1:{port}"),
            session: String::new(),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(60))
                .build()
                .unwrap(),
        };
        let start = Instant::now();
        loop {
            let ready = driver
                .http
                .get(format!("{}/status", driver.base))
                .send()
                .await
                .ok()
                .map(|r| r.json::<Value>());
            if let Some(r) = ready
                && r.await.ok().and_then(|v| v["value"]["ready"].as_bool()) == Some(true)
            {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "chromedriver did not start"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium.display().to_string(),
                "args": chromium_flags(profile),
            }
        }}});
        let v = driver.cmd("POST", "/session", Some(caps)).await;
        driver.session = v["sessionId"].as_str().unwrap().to_owned();
        driver
    }

    async fn cmd(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let url = if path == "/session" {
            format!("{}{path}", self.base)
        } else {
            format!("{}/session/{}{path}", self.base, self.session)
        };
        let req = match method {
            "GET" => self.http.get(url),
            "DELETE" => self.http.delete(url),
            _ => self.http.post(url).json(&body.unwrap_or(json!({}))),
        };
        let v: Value = req.send().await.unwrap().json().await.unwrap();
        let value = v["value"].clone();
        assert!(
            value.get("error").is_none(),
            "WebDriver {method} {path}: {value}"
        );
        value
    }

    async fn goto(&self, url: &str) {
        self.cmd("POST", "/url", Some(json!({ "url": url }))).await;
    }

    async fn js(&self, script: &str) -> Value {
        self.cmd(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": []})),
        )
        .await
    }

    async fn click(&self, css: &str) {
        let el = self
            .cmd(
                "POST",
                "/element",
                Some(json!({"using": "css selector", "value": css})),
            )
            .await;
        let id = el[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element {css}: {el}"))
            .to_owned();
        self.cmd("POST", &format!("/element/{id}/click"), None)
            .await;
    }

    /// Waits until `script` returns true.
    async fn wait_for(&self, script: &str, what: &str) {
        let start = Instant::now();
        loop {
            if self.js(script).await == json!(true) {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the page did not show {what} in time"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

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
