//! A raw HTTP/1.1 client for the Streamable HTTP tests (one connection per
//! request, `Connection: close`, read to the end): enough to send exactly
//! the headers and bodies a test needs, malformed ones included.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::{Value as J, json};

use crate::mcp_support::{PATIENCE, troupe};

/// An answer: status, headers (names in lower case) and body.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The JSON-RPC message of the body: plain JSON, or the `data:` line of
    /// an event stream that carries one.
    pub fn json(&self) -> J {
        if let Ok(j) = serde_json::from_str(&self.body) {
            return j;
        }
        for line in self.body.lines() {
            if let Some(data) = line.strip_prefix("data:")
                && let Ok(j) = serde_json::from_str::<J>(data.trim())
                && j.get("jsonrpc").is_some()
            {
                return j;
            }
        }
        panic!("no JSON-RPC message in {self:?}")
    }
}

/// Sends one request to `/mcp` and reads the whole answer.
pub fn request(addr: SocketAddr, method: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(PATIENCE)).expect("timeout");
    let mut head = format!(
        "{method} /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).expect("write");
    stream.write_all(body.as_bytes()).expect("write");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read the answer");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {text}"));
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Answer {
        status,
        headers,
        body,
    }
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}

pub const JSON_POST: [(&str, &str); 2] = [
    ("Content-Type", "application/json"),
    ("Accept", "application/json, text/event-stream"),
];

pub fn initialize_body() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "http-test", "version": "0"}}})
    .to_string()
}

/// POSTs a JSON-RPC message with `extra` headers (after the JSON ones).
pub fn post(addr: SocketAddr, extra: &[(&str, &str)], body: &str) -> Answer {
    let mut headers: Vec<(&str, &str)> = JSON_POST.to_vec();
    headers.extend_from_slice(extra);
    request(addr, "POST", &headers, body)
}

/// Opens a session: its id.
pub fn open_session(addr: SocketAddr, extra: &[(&str, &str)]) -> String {
    let answer = post(addr, extra, &initialize_body());
    assert_eq!(answer.status, 200, "{answer:?}");
    let id = answer
        .header("mcp-session-id")
        .unwrap_or_else(|| panic!("no session id: {answer:?}"))
        .to_owned();
    let done = post(
        addr,
        &[
            extra,
            &[
                ("Mcp-Session-Id", &id),
                ("MCP-Protocol-Version", "2025-11-25"),
            ],
        ]
        .concat(),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
    );
    assert_eq!(done.status, 202, "{done:?}");
    id
}

/// A request in session `id`.
pub fn in_session(addr: SocketAddr, id: &str, extra: &[(&str, &str)], body: &J) -> Answer {
    post(
        addr,
        &[
            extra,
            &[
                ("Mcp-Session-Id", id),
                ("MCP-Protocol-Version", "2025-11-25"),
            ],
        ]
        .concat(),
        &body.to_string(),
    )
}

/// `troupe mcp serve ARGS… --http 127.0.0.1:0` in `dir`, with `env`; the
/// address it listens on (from its first line on stderr).
pub fn serve_http(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (Server, SocketAddr) {
    let mut command = Command::new(troupe());
    command
        .arg("mcp")
        .arg("serve")
        .args(args)
        .args(["--http", "127.0.0.1:0"])
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("TROUPE_LEASE", "1s")
        .env_remove("TROUPE_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command.spawn().expect("the binary starts");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let first = lines
        .next()
        .and_then(Result::ok)
        .unwrap_or_else(|| panic!("the server said nothing: {:?}", child.try_wait()));
    // Keep reading so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    let addr = first
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split("/mcp").next())
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no address in {first:?}"));
    (Server(child), addr)
}

/// A server process, killed when dropped.
pub struct Server(pub Child);

impl Server {
    pub fn pid(&self) -> u32 {
        self.0.id()
    }

    /// Its resident memory (kB), from /proc.
    pub fn rss_kb(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("the server is running");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .expect("VmRSS")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
