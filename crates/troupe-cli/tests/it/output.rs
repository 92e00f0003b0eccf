//! Every subcommand with its output closed early (`troupe runs | head -1`)
//! and with its output on a full disk (`/dev/full`): a closed pipe ends the
//! command quietly, a full disk is an error it reports; neither panics.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn troupe(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_troupe"));
    c.current_dir(workspace())
        .env("NO_COLOR", "1")
        .env("TROUPE_LEASE", "1s")
        .env("HOME", dir)
        .stdin(Stdio::null());
    c
}

/// The commands, with a store holding one finished run.
fn commands(db: &str) -> Vec<Vec<String>> {
    let v = |args: &[&str]| args.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    vec![
        v(&[
            "check",
            "examples/counter.troupe",
            "examples/consensus.troupe",
        ]),
        v(&["check", "examples/counter.troupe", "--json"]),
        v(&[
            "run",
            "examples/counter.troupe",
            "-i",
            "limit=300",
            "--trace",
        ]),
        v(&[
            "run",
            "examples/counter.troupe",
            "-i",
            "limit=300",
            "--json",
            "--trace",
        ]),
        v(&["project", "examples/consensus.troupe"]),
        v(&["project", "examples/consensus.troupe", "--json"]),
        v(&["msc", "examples/consensus.troupe"]),
        v(&["msc", "examples/consensus.troupe", "--format", "mermaid"]),
        v(&["runs", "--store", db]),
        v(&["runs", "--store", db, "--json"]),
        v(&["status", "run-1", "--store", db]),
        v(&["status", "run-1", "--store", db, "--json"]),
        v(&["trace", "run-1", "--store", db]),
        v(&["trace", "run-1", "--store", db, "--json"]),
        v(&["tasks", "--store", db, "--all"]),
        v(&["verify", "run-1", "--store", db]),
        v(&["explain"]),
        v(&["explain", "E0301"]),
        v(&[
            "contracts",
            "lint",
            "../shared/data/mcp-tools/filesystem.json",
        ]),
        v(&[
            "mcp",
            "import",
            "../shared/data/mcp-tools/filesystem.json",
            "--from-json",
        ]),
        v(&["--help"]),
    ]
}

fn setup() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db").to_str().unwrap().to_owned();
    let out = troupe(dir.path())
        .args([
            "run",
            "examples/counter.troupe",
            "-i",
            "limit=400",
            "--store",
            &db,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (dir, db)
}

#[test]
fn a_closed_pipe_ends_every_command_quietly() {
    let (dir, db) = setup();
    for args in commands(&db) {
        let mut child = troupe(dir.path())
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Read one byte at most, then close the pipe, as `head -c1` would.
        let mut stdout = child.stdout.take().unwrap();
        let mut one = [0u8; 1];
        let _ = stdout.read(&mut one);
        drop(stdout);
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(101), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(
            out.status.code().is_some(),
            "{args:?} was killed by a signal"
        );
    }
}

#[test]
fn a_full_disk_is_reported_not_a_panic() {
    let (dir, db) = setup();
    for args in commands(&db) {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = troupe(dir.path())
            .args(&args)
            .stdout(full)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(101), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        // A command that prints on stdout cannot have succeeded.
        let normal = troupe(dir.path()).args(&args).output().unwrap();
        if normal.stdout.is_empty() {
            continue;
        }
        assert_ne!(out.status.code(), Some(0), "{args:?} claimed success");
        assert!(
            stderr.contains("No space left on device") || stderr.contains("error"),
            "{args:?}: {stderr}"
        );
    }
}

/// Stderr closed (its reader went away: `troupe worker 2>&1 | head -1`, a
/// supervisor that died) or on a full disk: notes and progress are lost,
/// the work is not. A worker claims, runs and reports a queued run, and a
/// run with notes to print ends done; neither panics.
#[test]
fn a_closed_or_full_stderr_loses_notes_not_work() {
    let (dir, db) = setup();
    for (n, closed) in [(2, true), (3, false)] {
        let out = troupe(dir.path())
            .args(["run", "examples/counter.troupe", "-i", "limit=50"])
            .args(["--store", &db, "--detach", "--new"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stderr = if closed {
            Stdio::piped()
        } else {
            std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap()
                .into()
        };
        let mut worker = troupe(dir.path())
            .args(["worker", "--store", &db, "--exit-when-idle"])
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .unwrap();
        // The reader goes away before the worker says anything.
        drop(worker.stderr.take());
        let status = worker.wait().unwrap();
        assert_eq!(status.code(), Some(0), "worker with stderr closed={closed}");
        let out = troupe(dir.path())
            .args(["status", &format!("run-{n}"), "--store", &db, "--json"])
            .output()
            .unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["status"], "done", "{doc}");
    }
    // A run that prints notes (the mock model) with nobody reading them.
    let mut run = troupe(dir.path())
        .args(["run", "examples/consensus.troupe", "-i", "case=x"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(run.stderr.take());
    assert_eq!(run.wait().unwrap().code(), Some(0));
}
