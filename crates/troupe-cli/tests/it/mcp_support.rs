//! Shared by the `mcp_*` tests of the binary: where the MCP clients the
//! tests drive are installed (by `.ci/install-test-deps.sh`), temporary
//! project directories, and a line-oriented JSON-RPC driver for stdio.
//! A missing client fails the test with the command that installs it:
//! nothing is skipped.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value as J, json};

/// How long any one answer may take before a test gives up (only against
/// hangs: no test asserts on time).
pub const PATIENCE: Duration = Duration::from_secs(60);

/// `$TROUPE_MCP_SERVERS`, or `~/.cache/troupe/mcp-servers`.
pub fn servers_dir() -> PathBuf {
    match std::env::var_os("TROUPE_MCP_SERVERS") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
            .join(".cache/troupe/mcp-servers"),
    }
}

fn installed(relative: &str, what: &str) -> PathBuf {
    let path = servers_dir().join(relative);
    assert!(
        path.exists(),
        "{what} is not installed at {}: run `bash .ci/install-test-deps.sh` from the repository \
         root (set TROUPE_MCP_SERVERS to use another directory)",
        path.display()
    );
    path
}

/// The Python of the venv with the official SDK (PyPI `mcp`).
pub fn python() -> PathBuf {
    let python = installed("venv/bin/python", "the Python venv with the `mcp` SDK");
    let ok = Command::new(&python)
        .args(["-c", "import mcp.client.stdio, mcp.client.streamable_http"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "the `mcp` package is missing from {}: run `bash .ci/install-test-deps.sh`",
        python.display()
    );
    python
}

/// The MCP Inspector's launcher (npm `@modelcontextprotocol/inspector`).
pub fn inspector() -> PathBuf {
    installed(
        "npm/node_modules/.bin/mcp-inspector",
        "the MCP Inspector (npm @modelcontextprotocol/inspector)",
    )
}

pub fn troupe() -> &'static str {
    env!("CARGO_BIN_EXE_troupe")
}

pub fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .canonicalize()
        .expect("the examples directory")
}

/// Runs the Python client `name` (of `tests/mcp`) with `args` in `dir`,
/// with short leases, and returns the JSON object it prints; fails with
/// its output when it fails.
pub fn python_client(name: &str, args: &[&std::ffi::OsStr], dir: &Path) -> J {
    let output = Command::new(python())
        .arg(script(name))
        .args(args)
        .current_dir(dir)
        .env("TROUPE_LEASE", "1s")
        .output()
        .expect("the Python client starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the Python client {name} failed ({}):\nstdout: {stdout}\nstderr: {stderr}",
        output.status
    );
    serde_json::from_str(stdout.trim()).expect("the client prints JSON")
}

pub fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp")
        .join(name)
}

/// A workflow with one effect whose command writes its process id to
/// `slow.pid` and sleeps for five minutes: an action that is in flight until
/// it is stopped.
pub const SLOW: &str = r#"// One slow effect.
effect slow(n: Int) -> Int extern

workflow slow_one(n: Int @ A) {
  lifelines A, B
  act A: r = slow(n)
  msg A(r) -> B(r)
  return r @ B
}
"#;

/// A loop of `n` effects that take 0.2 s each: a run that makes progress.
pub const STEPS: &str = r#"// Steps: `n` effects one after the other.
effect step(i: Int) -> Int extern

workflow steps(n: Int @ A) {
  lifelines A, B
  act A: i = 0
  while i < n @ A {
    act A: i = step(i)
    msg A(i) -> B(i)
  }
  return i @ A
}
"#;

const TOML: &str = r#"[externs.slow]
command = ["sh", "-c", "echo $$ > slow.pid; exec sleep 300"]

[externs.step]
command = ["python3", "-c", "import json, sys, time; a = json.load(sys.stdin); time.sleep(0.2); print(a['i'] + 1)"]
"#;

/// A project directory: `slow.troupe`, `steps.troupe`, a `troupe.toml`
/// implementing their effects, and the store `db` (not yet created).
pub fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(dir.path().join("slow.troupe"), SLOW).expect("write");
    std::fs::write(dir.path().join("steps.troupe"), STEPS).expect("write");
    std::fs::write(dir.path().join("troupe.toml"), TOML).expect("write");
    dir
}

/// `troupe mcp serve ARGS…` in `dir` with leases of `lease` (`TROUPE_LEASE`),
/// its stdin and stdout piped.
pub fn serve_stdio(dir: &Path, lease: &str, args: &[&str]) -> RawClient {
    let mut child = Command::new(troupe())
        .arg("mcp")
        .arg("serve")
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("TROUPE_LEASE", lease)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the binary starts");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let stdin = child.stdin.take();
    RawClient {
        child,
        stdin,
        lines: rx,
    }
}

/// A server over stdio, driven with raw JSON-RPC lines.
pub struct RawClient {
    pub child: Child,
    pub stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl RawClient {
    pub fn send(&mut self, message: J) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{message}").expect("write to the server");
        stdin.flush().expect("flush");
    }

    /// The next message from the server.
    pub fn next(&self) -> J {
        let line = self
            .lines
            .recv_timeout(PATIENCE)
            .expect("the server answers within the patience");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// The answer to request `id` (notifications before it are kept in `seen`).
    pub fn answer(&self, id: i64, seen: &mut Vec<J>) -> J {
        loop {
            let m = self.next();
            if m["id"] == json!(id) {
                return m;
            }
            seen.push(m);
        }
    }

    /// `initialize` and `notifications/initialized`.
    pub fn handshake(&mut self) -> J {
        self.send(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw-test", "version": "0"}}}),
        );
        let init = self.answer(0, &mut Vec::new());
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        init
    }

    /// Closes the server's stdin (the client disconnects) and waits for the
    /// process to end; kills it and fails if it does not.
    pub fn disconnect_and_wait(&mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        let start = std::time::Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            if start.elapsed() > PATIENCE {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("the server did not exit within {PATIENCE:?} after its client disconnected");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for RawClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits (up to the patience) until `what` holds.
pub fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !ok() {
        assert!(start.elapsed() < PATIENCE, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether process `pid` is alive (a zombie counts as ended).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z')),
        Err(_) => false,
    }
}

/// The status of run `id` in the store at `db`.
pub fn run_status(db: &Path, id: i64) -> troupe_store::RunStatus {
    let store = troupe_store::Store::open(db, troupe_store::Durability::Normal).expect("the store");
    store.run(id).expect("the run").summary.status
}
