//! A store on read-only media (issue #21): a directory that cannot be
//! written (0500), a store file that cannot be written (0400), and a store
//! whose directory became read-only after it was made. Each writing command
//! ends with an error that says which of them it is and what to do, never a
//! panic or a bare SQLite message; reading commands go on working where
//! SQLite can read.
//!
//! Permissions do not bind root, and CI may run as root: then the binary is
//! run as the unprivileged user 65534 (`nobody`), which they bind.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const NOBODY: u32 = 65534;

/// Whether this process runs as root: `/proc/self` belongs to the
/// process's effective user. (A probe file named by the process id raced
/// between the tests of this file, which run on threads of one process.)
fn as_root() -> bool {
    std::fs::metadata("/proc/self").unwrap().uid() == 0
}

/// A directory for one case, traversable by the user the binary runs as.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("troupe-readonly-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/counter.troupe"),
        dir.join("counter.troupe"),
    )
    .unwrap();
    std::fs::set_permissions(
        dir.join("counter.troupe"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    dir
}

/// Removes a case's directory, its read-only parts made writable first.
fn remove(dir: &Path) {
    for sub in ["ro", "data"] {
        let _ = std::fs::set_permissions(dir.join(sub), std::fs::Permissions::from_mode(0o755));
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Makes `path` belong to the user the binary runs as, with `mode`.
fn own(path: &Path, mode: u32) {
    if as_root() {
        std::os::unix::fs::chown(path, Some(NOBODY), Some(NOBODY)).unwrap();
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The binary in `dir`, as `nobody` when the tests run as root; a hang fails.
fn troupe(dir: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_troupe"));
    cmd.args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("HOME", dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if as_root() {
        cmd.uid(NOBODY).gid(NOBODY);
    }
    let mut child = cmd.spawn().expect("run troupe");
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

/// A clean refusal: a non-zero, non-panic exit with `needles` in what it says.
fn refused(o: &Output, what: &str, needles: &[&str]) {
    let shown = text(o);
    assert!(
        matches!(o.status.code(), Some(1 | 2)),
        "{what}: {:?}\n{shown}",
        o.status
    );
    assert!(!shown.contains("panicked"), "{what}: {shown}");
    for n in needles {
        assert!(shown.contains(n), "{what}: no `{n}` in\n{shown}");
    }
}

const RUN: &[&str] = &["run", "counter.troupe", "-i", "limit=3", "--store"];

fn run_into(dir: &Path, db: &str) -> Output {
    let mut args = RUN.to_vec();
    args.push(db);
    troupe(dir, &args)
}

#[test]
fn a_read_only_directory_is_named_with_what_to_do() {
    let dir = scratch("dir");
    let ro = dir.join("ro");
    std::fs::create_dir(&ro).unwrap();
    own(&ro, 0o500);
    let out = run_into(&dir, "ro/troupe.db");
    refused(
        &out,
        "run into a 0500 directory",
        &[
            "the directory ro (mode 0500) is not writable",
            "chmod u+w ro",
        ],
    );
    assert!(!ro.join("troupe.db").exists());
    // Into a directory that does not exist yet, below the read-only one.
    let out = run_into(&dir, "ro/sub/troupe.db");
    refused(&out, "run below a 0500 directory", &["the directory ro"]);
    let out = troupe(&dir, &["runs", "--store", "ro/troupe.db"]);
    refused(&out, "runs", &["no store at ro/troupe.db"]);
    remove(&dir);
}

#[test]
fn a_read_only_store_file_still_reads_and_refuses_writes_clearly() {
    let dir = scratch("file");
    let data = dir.join("data");
    std::fs::create_dir(&data).unwrap();
    own(&data, 0o755);
    let first = run_into(&dir, "data/troupe.db");
    assert_eq!(first.status.code(), Some(0), "{}", text(&first));
    let db = data.join("troupe.db");
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o400)).unwrap();

    let hint = [
        "the store file data/troupe.db (mode 0400) is read-only",
        "chmod u+w data/troupe.db",
    ];
    // A new run must be written (the same inputs again would only report
    // run-1, which is done, and write nothing).
    let mut new = RUN.to_vec();
    new.extend(["data/troupe.db", "--new"]);
    refused(&troupe(&dir, &new), "run", &hint);
    let again = run_into(&dir, "data/troupe.db");
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert!(
        text(&again).contains("ran to its end already"),
        "{}",
        text(&again)
    );
    refused(
        &troupe(&dir, &["delete", "run-1", "--store", "data/troupe.db"]),
        "delete",
        &hint,
    );
    for args in [
        vec!["runs", "--store", "data/troupe.db"],
        vec!["status", "run-1", "--store", "data/troupe.db"],
        vec!["verify", "run-1", "--store", "data/troupe.db"],
    ] {
        let out = troupe(&dir, &args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out));
    }
    assert!(text(&troupe(&dir, &["runs", "--store", "data/troupe.db"])).contains("run-1"));
    remove(&dir);
}

#[test]
fn a_store_whose_directory_became_read_only_names_the_directory() {
    let dir = scratch("later");
    let data = dir.join("data");
    std::fs::create_dir(&data).unwrap();
    own(&data, 0o755);
    let first = run_into(&dir, "data/troupe.db");
    assert_eq!(first.status.code(), Some(0), "{}", text(&first));
    // Closed by its last connection, the store folds its journal back into
    // the file and removes it; then the directory is made read-only, so
    // the next writer cannot make the journal again.
    drop(
        troupe_store::Store::open(data.join("troupe.db"), troupe_store::Durability::Full).unwrap(),
    );
    assert!(
        !data.join("troupe.db-wal").exists(),
        "the journal is folded back"
    );
    own(&data, 0o500);
    refused(
        &run_into(&dir, "data/troupe.db"),
        "run",
        &[
            "the directory data (mode 0500) is not writable",
            "chmod u+w data",
        ],
    );
    remove(&dir);
}
