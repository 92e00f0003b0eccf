//! The server's tool definitions against troupe's contract tooling: the pins
//! `troupe mcp lock` writes equal the ones `troupe contracts lint --lock`
//! checks, and the tools (with the example's sidecar as their contracts) lint
//! without errors, also as a security lint.

use serde_json::json;

fn tools() -> serde_json::Value {
    json!({"tools": serde_json::to_value(train_booking_server::tools::definitions()).unwrap()})
}

#[test]
fn mcp_lock_and_contracts_lock_pin_the_same_hashes() {
    let doc = tools();
    let lists = troupe_contracts::mcp::parse_tool_lists("booking", &doc.to_string()).unwrap();
    for (raw, tool) in doc["tools"].as_array().unwrap().iter().zip(&lists[0].tools) {
        assert_eq!(
            troupe_mcp::lock::tool_hash(raw),
            troupe_contracts::lock::tool_hash(tool),
            "{}",
            tool.name
        );
    }
    // A tool without description or schemas pins the same way on both sides.
    let bare = json!({"name": "bare"});
    let parsed: troupe_contracts::McpTool = serde_json::from_value(bare.clone()).unwrap();
    assert_eq!(
        troupe_mcp::lock::tool_hash(&bare),
        troupe_contracts::lock::tool_hash(&parsed)
    );
}

#[test]
fn the_published_tools_pass_the_security_lint() {
    let lists = troupe_contracts::mcp::parse_tool_lists("booking", &tools().to_string()).unwrap();
    let reports = troupe_contracts::lint::lint_all(&lists, None);
    let errors: Vec<_> = reports[0]
        .findings()
        .filter(|f| f.severity == troupe_contracts::lint::Severity::Error)
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert!(reports[0].tools.iter().all(|t| t.has_contract));
}
