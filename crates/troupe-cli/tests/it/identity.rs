//! Idempotency keys are never shared by two runs (issue #27): 100 runs of
//! one workflow on the binary — in three fresh stores, with the newest run
//! deleted now and then so that its name (`run-N`) is given again, and in
//! memory — hand their effect 100 distinct keys, so a ledger that applies
//! an effect once per key (as the README tells effect authors to) applies
//! every one of them.

use crate::support::{Project, said};

const WORKFLOW: &str = r#"
effect deposit(account: Text, amount: Int) -> Int extern

workflow identity(n: Int @ Bank) {
  lifelines Bank
  act Bank: d = deposit("acct", n)
  return d @ Bank
}
"#;

#[test]
fn a_hundred_runs_in_fresh_stores_after_deletes_and_in_memory_hand_a_hundred_keys() {
    let shared = Project::new();
    // Appends every key it is handed to `keys`; applies (appends to
    // `ledger`) only a key it has not applied yet.
    let script = format!(
        "read -r j; a=$(printf '%s' \"$j\" | sed -E 's/.*\"amount\":(-?[0-9]+).*/\\1/'); \
         echo \"$TROUPE_IDEMPOTENCY_KEY\" >> '{keys}'; \
         grep -qxF \"$TROUPE_IDEMPOTENCY_KEY\" '{ledger}' 2>/dev/null || echo \"$TROUPE_IDEMPOTENCY_KEY\" >> '{ledger}'; \
         echo \"$a\"",
        keys = shared.path().join("keys").display(),
        ledger = shared.path().join("ledger").display()
    );
    let config = format!(
        "[externs.deposit]\ncommand = [\"sh\", \"-c\", {}]\n",
        serde_json::Value::String(script)
    );
    let mut runs = 0;
    for _store in 0..3 {
        let p = Project::new();
        p.write("w.troupe", WORKFLOW);
        p.write("troupe.toml", &config);
        for k in 0..30 {
            let n = format!("n={runs}");
            let out = p.run(&["run", "w.troupe", "--store", "db", "-i", &n, "--json"]);
            assert!(out.status.success(), "{}", said(&out));
            runs += 1;
            let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            // Every third run is deleted: the next one gets its name again.
            if k % 3 == 0 {
                let name = doc["run"].as_str().unwrap();
                let out = p.run(&["delete", name, "--store", "db"]);
                assert!(out.status.success(), "{}", said(&out));
            }
        }
    }
    let p = Project::new();
    p.write("w.troupe", WORKFLOW);
    p.write("troupe.toml", &config);
    for _ in 0..10 {
        let out = p.run(&["run", "w.troupe", "-i", "n=1"]);
        assert!(out.status.success(), "{}", said(&out));
        runs += 1;
    }
    assert_eq!(runs, 100);
    let keys = shared.read("keys");
    let mut distinct: Vec<&str> = keys.lines().collect();
    assert_eq!(distinct.len(), 100, "one key per run");
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), 100, "a key handed to two runs");
    // The deduplicating ledger applied every one.
    assert_eq!(shared.read("ledger").lines().count(), 100);
}
