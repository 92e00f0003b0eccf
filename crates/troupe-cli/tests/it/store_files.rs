//! A finished command leaves the store whole in its one file: the writer
//! commits what it has and closes, so SQLite folds the write-ahead log back
//! into the database and removes `DB-wal` and `DB-shm`. Copying the `.db`
//! file alone (a backup) keeps every run.

use std::process::Command;

#[test]
fn a_finished_run_leaves_only_the_store_file() {
    let dir = tempfile::tempdir().unwrap();
    let counter = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/counter.troupe");
    let out = Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args(["run", counter, "-i", "limit=2000", "--store", "s.db"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["s.db"], "files left beside the store");
    // The file alone holds the finished run.
    let copy = dir.path().join("copy");
    std::fs::create_dir(&copy).unwrap();
    std::fs::copy(dir.path().join("s.db"), copy.join("s.db")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args(["status", "run-1", "--store", "s.db", "--json"])
        .current_dir(&copy)
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["status"], "done");
    assert_eq!(doc["result"]["k"], 2000);
}
