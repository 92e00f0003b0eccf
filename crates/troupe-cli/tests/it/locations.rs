//! A run's errors name the line of the statement that failed, in memory
//! and in a durable run (whose engine is built from the recorded program).

use std::process::Command;

const SOURCE: &str = "workflow w(n: Int @ A) {
  lifelines A, B
  msg A(n) -> B(m)
  act B: z = 10 / m
  return z @ B
}
";

#[test]
fn a_failed_statement_is_named_by_its_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.troupe"), SOURCE).unwrap();
    for store in [&[][..], &["--store", "s.db"][..]] {
        let out = Command::new(env!("CARGO_BIN_EXE_troupe"))
            .args(["run", "w.troupe", "-i", "n=0"])
            .args(store)
            .current_dir(dir.path())
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert!(
            stderr.contains("lifeline B (line 4)"),
            "{store:?}: {stderr}"
        );
        assert!(!stderr.contains("line 0"), "{stderr}");
    }
}
