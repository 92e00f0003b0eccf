//! Credentials in a model's base URL (`OPENAI_BASE_URL=http://user:pass@host`)
//! are sent, never shown (issue #21): the binary runs against loopback URLs
//! with credentials that fail in every way a URL can fail — a provider that
//! answers 401 and quotes the URL back, a closed port, a raw `@` in the
//! password, a URL that does not parse — and the password (and the API key)
//! appears in none of what the commands print (`run`, `runs`, `status`,
//! `status --json`, `trace`, `models check`), none of what `troupe serve`
//! shows (pages and API), and nowhere in the store's files.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const PASSWORD: &str = "Pa55w0rd-zq81";
const KEY: &str = "sk-test-KeY-7731";
const WORKFLOW: &str = r#"
llm assess(case: Text) -> (verdict: Text) { prompt: "Assess:\n{case}" }

workflow w(case: Text @ A) {
  lifelines A
  act A: v = assess(case)
  return v @ A
}
"#;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("troupe-redaction-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs the binary in `dir` with the base URL and key set; a hang fails.
fn troupe(dir: &Path, base_url: &str, args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("OPENAI_BASE_URL", base_url)
        .env("OPENAI_API_KEY", KEY)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run troupe");
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("troupe {args:?} hangs");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A provider that refuses every request with a 401 whose message quotes
/// the URL it was called at, credentials and key included (as a careless
/// proxy might).
fn echoing_provider() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            std::thread::spawn(move || answer_401(stream, port));
        }
    });
    port
}

fn answer_401(stream: TcpStream, port: u16) {
    let mut reader = BufReader::new(stream);
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    let message = format!(
        r#"{{"error": {{"message": "no access for http://ada:{PASSWORD}@127.0.0.1:{port}/v1 with key {KEY}"}}}}"#
    );
    let response = format!(
        "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{message}",
        message.len()
    );
    let _ = reader.get_mut().write_all(response.as_bytes());
}

fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

fn assert_clean(what: &str, shown: &str) {
    assert!(
        !shown.contains(PASSWORD),
        "{what} shows the URL's password:\n{shown}"
    );
    assert!(!shown.contains(KEY), "{what} shows the API key:\n{shown}");
}

/// Every file of the store (the database and its WAL).
fn store_bytes(dir: &Path) -> Vec<u8> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(dir.join(".troupe")).unwrap() {
        let path = entry.unwrap().path();
        all.extend(std::fs::read(&path).unwrap_or_default());
    }
    all
}

/// `troupe serve` on the store, until dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn get(port: u16, path: &str) -> String {
    let start = Instant::now();
    loop {
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) {
            s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
            write!(
                s,
                "GET {path} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\nauthorization: Bearer tok\r\nconnection: close\r\n\r\n"
            )
            .unwrap();
            let mut out = String::new();
            let _ = s.read_to_string(&mut out);
            return out;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "troupe serve did not listen"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn credentials_in_a_base_url_appear_in_no_output_page_or_store_file() {
    let echo = echoing_provider();
    let closed = closed_port();
    let cases = [
        ("echo", format!("http://ada:{PASSWORD}@127.0.0.1:{echo}/v1")),
        (
            "closed",
            format!("http://ada:{PASSWORD}@127.0.0.1:{closed}/v1"),
        ),
        (
            "raw-at",
            format!("http://ada:p@ss{PASSWORD}@127.0.0.1:{echo}/v1"),
        ),
        (
            "bad-port",
            format!("http://ada:{PASSWORD}@127.0.0.1:99999/v1"),
        ),
    ];
    let dir = scratch("all");
    std::fs::write(dir.join("w.troupe"), WORKFLOW).unwrap();
    std::fs::write(
        dir.join("troupe.toml"),
        "[llm]\nmax_retries = 0\nbackoff_base_ms = 1\ntimeout_secs = 20\n",
    )
    .unwrap();
    for (name, url) in &cases {
        let run = troupe(
            &dir,
            url,
            &[
                "run",
                "w.troupe",
                "-i",
                "case=x",
                "--llm",
                "openai:gpt-test",
                "--store",
                "--new",
            ],
        );
        let shown = text(&run);
        assert_ne!(run.status.code(), Some(0), "{name}: {shown}");
        assert_ne!(run.status.code(), Some(101), "{name}: {shown}");
        assert_clean(&format!("{name}: run"), &shown);
        assert!(
            shown.contains("127.0.0.1"),
            "{name}: the error says which server: {shown}"
        );
        let check = troupe(&dir, url, &["models", "check", "--llm", "openai:gpt-test"]);
        assert_clean(&format!("{name}: models check"), &text(&check));
    }
    // Every recorded run, through every reading command.
    let url = &cases[0].1;
    let listing = troupe(&dir, url, &["runs"]);
    assert_clean("runs", &text(&listing));
    let mut failed = 0;
    for n in 1..=cases.len() {
        let run = format!("run-{n}");
        let status = troupe(&dir, url, &["status", &run, "--json"]);
        let json = text(&status);
        if status.status.code() != Some(0) {
            continue;
        }
        assert_clean(&format!("status {run} --json"), &json);
        if json.contains("\"status\": \"failed\"") {
            failed += 1;
            assert!(json.contains("127.0.0.1"), "{json}");
        }
        for args in [vec!["status", &run], vec!["trace", &run]] {
            assert_clean(&format!("{args:?}"), &text(&troupe(&dir, url, &args)));
        }
    }
    assert!(failed >= 3, "the failing runs are recorded: {failed}");
    let stored = store_bytes(&dir);
    assert!(
        !stored
            .windows(PASSWORD.len())
            .any(|w| w == PASSWORD.as_bytes()),
        "the store's files hold the password"
    );
    assert!(!stored.windows(KEY.len()).any(|w| w == KEY.as_bytes()));

    // The web pages and the API over the same store.
    let port = closed_port();
    let server = Server(
        Command::new(env!("CARGO_BIN_EXE_troupe"))
            .args([
                "serve",
                "--bind",
                &format!("127.0.0.1:{port}"),
                "--no-notify",
            ])
            .current_dir(&dir)
            .env("TROUPE_TOKEN", "tok")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut pages = String::new();
    for path in ["/", "/api/runs", "/api/tasks?all=true"] {
        pages.push_str(&get(port, path));
    }
    for n in 1..=cases.len() {
        pages.push_str(&get(port, &format!("/runs/{n}")));
        pages.push_str(&get(port, &format!("/api/runs/run-{n}")));
    }
    drop(server);
    assert!(pages.contains("HTTP/1.1 200"), "{pages}");
    assert!(
        pages.contains("127.0.0.1"),
        "the pages show the errors: {pages}"
    );
    assert_clean("troupe serve", &pages);
    let _ = std::fs::remove_dir_all(&dir);
}
