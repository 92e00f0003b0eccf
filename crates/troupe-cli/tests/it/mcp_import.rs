//! `troupe mcp import` on the binary against live servers: the MCP+
//! contracts a server publishes in `_meta` are kept (a sidecar next to the
//! output, named in the `mcp` declaration), so `troupe check` verifies
//! workflows written against the imported tools; a server that publishes
//! none is marked unverified, and its tools' calls warn W0605.

use crate::mcp_support as support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value as J;
use support::*;

fn booking_server() -> PathBuf {
    let server = Path::new(troupe())
        .parent()
        .expect("the target directory")
        .join("train-booking-server");
    assert!(
        server.exists(),
        "{} is missing: `cargo build -p train-booking-server` (cargo test --workspace builds it)",
        server.display()
    );
    server
}

fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(troupe())
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("the binary runs")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A workflow that books with no confirmation and no balance check.
const UNCONFIRMED: &str = r#"
workflow unconfirmed(user_id: Text @ Agent) {
  lifelines Agent
  act Agent: t = book_ticket(user_id, "Paris", "Lyon", "2026-12-24", BookTicketClass.economy, 10.0)
  return t @ Agent
}
"#;

#[test]
fn imported_contracts_verify_workflows_written_against_the_tools() {
    let dir = project();
    let d = dir.path();
    let server = booking_server();
    let imported = run(
        d,
        &[
            "mcp",
            "import",
            server.to_str().expect("path"),
            "-o",
            "booking.troupe",
        ],
    );
    assert!(imported.status.success(), "{}", text(&imported));
    let source = std::fs::read_to_string(d.join("booking.troupe")).expect("the output");
    assert!(
        source.contains(r#"contracts: "booking.contracts.json""#),
        "{source}"
    );
    let sidecar: J = serde_json::from_str(
        &std::fs::read_to_string(d.join("booking.contracts.json")).expect("the sidecar"),
    )
    .expect("JSON");
    let published: J = serde_json::from_str(
        &std::fs::read_to_string(examples().join("train_booking.contracts.json"))
            .expect("the example's contracts"),
    )
    .expect("JSON");
    // Exactly what the server publishes (it publishes the example's file).
    assert_eq!(sidecar, published);
    assert_eq!(sidecar["book_ticket"]["transactional"], true);

    // The declarations alone check clean; a booking nobody confirms does not.
    let clean = run(d, &["check", "booking.troupe"]);
    assert!(clean.status.success(), "{}", text(&clean));
    std::fs::write(d.join("booking.troupe"), format!("{source}{UNCONFIRMED}")).expect("write");
    let checked = run(d, &["check", "booking.troupe"]);
    let out = text(&checked);
    assert_eq!(checked.status.code(), Some(1), "{out}");
    assert!(
        out.contains("E0601"),
        "no confirmation found missing: {out}"
    );
    assert!(
        out.contains("E0602") && out.contains("check_balance"),
        "the `requires` relations were lost: {out}"
    );
    // A run refuses such a workflow too.
    let refused = run(
        d,
        &["run", "booking.troupe", "-i", "user_id=u1", "--store", "db"],
    );
    assert_ne!(refused.status.code(), Some(0), "{}", text(&refused));
    assert!(text(&refused).contains("E0601"), "{}", text(&refused));
}

#[test]
fn a_server_without_contracts_is_imported_as_unverified() {
    let dir = project();
    let d = dir.path();
    let time = servers_dir().join("venv/bin/mcp-server-time");
    assert!(
        time.exists(),
        "mcp-server-time is not installed at {}: run `bash .ci/install-test-deps.sh`",
        time.display()
    );
    let command = format!("{} --local-timezone UTC", time.display());
    let imported = run(d, &["mcp", "import", &command, "-o", "time.troupe"]);
    assert!(imported.status.success(), "{}", text(&imported));
    let source = std::fs::read_to_string(d.join("time.troupe")).expect("the output");
    assert!(
        source.contains("publishes no MCP+ contracts: every tool below is unverified"),
        "{source}"
    );
    assert!(
        !source
            .lines()
            .any(|l| l.starts_with("mcp ") && l.contains("contracts:")),
        "no sidecar to name: {source}"
    );
    assert!(!d.join("time.contracts.json").exists());
    let workflow = r#"
workflow now(zone: Text @ A) {
  lifelines A
  act A: t = get_current_time(zone)
  return t @ A
}
"#;
    std::fs::write(d.join("time.troupe"), format!("{source}{workflow}")).expect("write");
    let checked = run(d, &["check", "time.troupe"]);
    let out = text(&checked);
    assert!(checked.status.success(), "{out}");
    assert!(
        out.contains("W0605") && out.contains("get_current_time"),
        "{out}"
    );
}
