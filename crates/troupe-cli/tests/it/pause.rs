//! `troupe pause` and `troupe unpause` on the binary: a pause asked while
//! an effect runs waits for the effect, then the run stops at that step
//! boundary holding no lease, nothing claims it, and once unpaused it
//! continues to the result the workflow computes, each effect applied once.

use crate::support::{Project, said, wait_until};

/// A project whose `deposit` says it started, waits for the file `go`,
/// then appends `KEY AMOUNT` to `ledger`.
fn project() -> Project {
    let p = Project::new();
    p.write("w.troupe", &crate::support::deposit_loop("paused", 3));
    let at = |f: &str| p.path().join(f).display().to_string();
    let script = format!(
        "read -r j; a=$(printf '%s' \"$j\" | sed -E 's/.*\"amount\":(-?[0-9]+).*/\\1/'); \
         [ -n \"$a\" ] || exit 1; echo \"$TROUPE_IDEMPOTENCY_KEY\" >> '{}'; while [ ! -e '{}' ]; do sleep 0.01; done; \
         echo \"$TROUPE_IDEMPOTENCY_KEY $a\" >> '{}'; echo \"$a\"",
        at("started"),
        at("go"),
        at("ledger")
    );
    p.write(
        "troupe.toml",
        &format!(
            "[externs.deposit]\ncommand = [\"sh\", \"-c\", {}]\n",
            serde_json::Value::String(script)
        ),
    );
    p
}

fn status(p: &Project) -> serde_json::Value {
    let out = p.run(&["status", "run-1", "--store", "db", "--json"]);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", said(&out)))
}

#[test]
fn a_pause_waits_for_the_effect_in_flight_holds_no_lease_and_unpause_goes_on() {
    let p = project();
    let run = p.spawn(&["run", "w.troupe", "--store", "db", "-i", "n=5", "--json"]);
    wait_until("the first effect to start", || {
        !p.read("started").is_empty()
    });
    let pause = p.spawn(&["pause", "run-1", "--store", "db", "--json"]);
    // The owner saw the request (at its next renewal) and waits for the
    // effect: nothing is paused while it runs.
    std::thread::sleep(std::time::Duration::from_millis(600));
    assert_eq!(status(&p)["status"], "running");
    p.write("go", "");
    let paused = pause.wait_with_output().unwrap();
    assert!(paused.status.success(), "{}", said(&paused));
    let doc: serde_json::Value = serde_json::from_slice(&paused.stdout).unwrap();
    assert_eq!(doc["status"], "paused", "{}", said(&paused));
    let ran = run.wait_with_output().unwrap();
    assert_eq!(ran.status.code(), Some(1), "{}", said(&ran));
    let doc: serde_json::Value = serde_json::from_slice(&ran.stdout).unwrap();
    assert_eq!(doc["error"]["kind"], "paused", "{}", said(&ran));
    // The effect in flight finished and was recorded; the run went no
    // further than that step boundary.
    assert_eq!(p.read("ledger").lines().count(), 1);
    assert_eq!(p.read("started").lines().count(), 1);
    let s = status(&p);
    assert_eq!(s["status"], "paused", "{s}");
    assert!(s["owner"].is_null(), "{s}");
    // Nobody takes a paused run up.
    let refused = p.run(&["resume", "run-1", "--store", "db"]);
    assert_eq!(refused.status.code(), Some(1), "{}", said(&refused));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("troupe unpause run-1"),
        "{}",
        said(&refused)
    );
    let listed = p.run(&["runs", "--store", "db"]);
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("paused"),
        "{}",
        said(&listed)
    );
    // Unpaused, it goes on from where it stopped.
    let out = p.run(&["unpause", "run-1", "--store", "db"]);
    assert!(out.status.success(), "{}", said(&out));
    let out = p.run(&["resume", "run-1", "--store", "db", "--json"]);
    assert!(out.status.success(), "{}", said(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // 2(5) + 2(6) + 2(7), from the workflow.
    assert_eq!(doc["results"]["total"], 36, "{doc}");
    let ledger = p.read("ledger");
    let mut keys: Vec<&str> = ledger
        .lines()
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    assert_eq!(keys.len(), 3, "{ledger}");
    keys.dedup();
    assert_eq!(keys.len(), 3, "applied twice: {ledger}");
    let verify = p.run(&["verify", "run-1", "--store", "db"]);
    assert!(verify.status.success(), "{}", said(&verify));
}

#[test]
fn pausing_a_run_nobody_drives_is_immediate_and_an_ended_run_is_refused() {
    let p = project();
    p.write("go", "");
    let out = p.run(&["run", "w.troupe", "--store", "db", "-i", "n=1"]);
    assert!(out.status.success(), "{}", said(&out));
    let out = p.run(&["pause", "run-1", "--store", "db"]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("run-1 is done"),
        "{}",
        said(&out)
    );
    let out = p.run(&["unpause", "run-1", "--store", "db"]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    // A queued run nobody drives is paused at once.
    let store =
        troupe_store::Store::open(p.path().join("db"), troupe_store::Durability::Full).unwrap();
    let queued = store
        .create_run(&troupe_store::testing::bare_run("f"))
        .unwrap();
    let name = format!("run-{queued}");
    let out = p.run(&["pause", &name, "--store", "db", "--wait", "1ms"]);
    assert!(out.status.success(), "{}", said(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).starts_with(&format!("paused {name}")),
        "{}",
        said(&out)
    );
    assert_eq!(
        store.run(queued).unwrap().summary.status,
        troupe_store::RunStatus::Paused
    );
    let out = p.run(&["pause", "run-9", "--store", "db"]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
}
