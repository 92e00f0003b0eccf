//! Headless Chromium driven through chromedriver (the WebDriver protocol,
//! spoken with a few reqwest calls — no WebDriver crate needed for a handful
//! of commands), for the browser tests.
//!
//! Needs Debian's `chromium` and `chromium-driver` (`.ci/install-browser.sh`);
//! fails, never skips, when they are missing. `TROUPE_CHROMIUM` and
//! `TROUPE_CHROMEDRIVER` override where they are looked for.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

pub fn find_program(env: &str, names: &[&str]) -> PathBuf {
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

pub fn chromium_flags(profile: &Path) -> Vec<String> {
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
pub struct Driver {
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
    pub async fn start(chromium: &Path, chromedriver: &Path, profile: &Path) -> Driver {
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

    pub async fn cmd(&self, method: &str, path: &str, body: Option<Value>) -> Value {
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

    pub async fn goto(&self, url: &str) {
        self.cmd("POST", "/url", Some(json!({ "url": url }))).await;
    }

    pub async fn js(&self, script: &str) -> Value {
        self.cmd(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": []})),
        )
        .await
    }

    pub async fn click(&self, css: &str) {
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
    pub async fn wait_for(&self, script: &str, what: &str) {
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
