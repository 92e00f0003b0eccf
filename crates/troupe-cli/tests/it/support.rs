//! What the binary's tests share: a project directory to run `troupe` in,
//! as a user would (the release or test build of the binary, its working
//! directory, no colour, no standard input).

#![allow(dead_code)] // each test module uses its own share of it

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A temporary project directory.
pub struct Project(tempfile::TempDir);

impl Project {
    pub fn new() -> Project {
        Project(tempfile::tempdir().unwrap())
    }

    pub fn path(&self) -> &Path {
        self.0.path()
    }

    /// Writes `text` to `name` in the project; returns its path.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path().join(name)).unwrap_or_default()
    }

    /// `troupe ARGS` in the project, not yet started.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_troupe"));
        c.current_dir(self.path())
            .args(args)
            .env("NO_COLOR", "1")
            .env_remove("TROUPE_STORE")
            .env_remove("TROUPE_LEASE")
            .stdin(Stdio::null());
        c
    }

    /// `troupe ARGS`, run to its end.
    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    /// `troupe ARGS` started in a process group of its own (as a shell's
    /// job: a terminal's Ctrl-C reaches the whole group).
    pub fn spawn(&self, args: &[&str]) -> Child {
        use std::os::unix::process::CommandExt;
        self.cmd(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap()
    }
}

/// Sends `signal` (`-INT`, `-TERM`, `-KILL`, …) to `pid`'s process group.
pub fn signal_group(pid: u32, signal: &str) {
    let ok = Command::new("kill")
        .args([signal, "--", &format!("-{pid}")])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill {signal} -{pid}");
}

/// Waits until `f` holds, polling; panics after a minute (a hang bound,
/// not a timing assertion).
pub fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "timed out: {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The text of a command's stdout and stderr, for failure messages.
pub fn said(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Reads one HTTP/1.1 request from `stream` (what the fake model servers
/// of the tests receive): its path and its body.
pub fn read_request(stream: &std::net::TcpStream) -> (String, Vec<u8>) {
    use std::io::{BufRead, BufReader, Read};
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    let _ = reader.read_line(&mut line);
    let path = line.split_whitespace().nth(1).unwrap_or("").to_owned();
    let mut length = 0;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
            break;
        }
        if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    (path, body)
}

/// A workflow `name(n: Int @ Bank)` whose loop of `rounds` rounds performs
/// the effect `deposit("acct", n + i)` once a round, sends it to a Clerk who
/// doubles it, and sums what comes back: its result is the sum of
/// 2(n + i), known without running it.
pub fn deposit_loop(name: &str, rounds: i64) -> String {
    format!(
        r#"
effect deposit(account: Text, amount: Int) -> Int extern

workflow {name}(n: Int @ Bank) {{
  lifelines Bank, Clerk
  act Bank: i = 0
  act Bank: total = 0
  while i < {rounds} @ Bank {{
    act Bank: d = deposit("acct", n + i)
    msg Bank(d) -> Clerk(d)
    act Clerk: e = d * 2
    msg Clerk(e) -> Bank(e)
    act Bank: total = total + e
    act Bank: i = i + 1
  }}
  return (total @ Bank)
}}
"#
    )
}
