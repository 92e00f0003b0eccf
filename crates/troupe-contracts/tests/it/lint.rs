//! The linter on every captured MCP server, and on Φ / Φ⁺ translations of SGD.

use crate::common;

use troupe_contracts::lint::render::render_text;
use troupe_contracts::lint::{Principle, Severity, lint};
use troupe_contracts::phi::{phi, phi_plus};

/// Whether a finding's pointer (or, for something missing, its parent) exists in the
/// serialized tool list.
fn resolves(document: &serde_json::Value, pointer: &str) -> bool {
    let parent = pointer.rsplit_once('/').map_or("", |(parent, _)| parent);
    document.pointer(pointer).is_some() || document.pointer(parent).is_some()
}

#[test]
fn lints_every_captured_server() {
    let mut tools = 0;
    for path in common::mcp_tool_files() {
        for list in common::mcp_tools(&path) {
            let report = lint(&list);
            let document = serde_json::to_value(&list).unwrap();
            assert_eq!(report.tools.len(), list.tools.len());
            tools += list.tools.len();
            for (index, tool) in report.tools.iter().enumerate() {
                assert_eq!(tool.pointer, format!("/tools/{index}"));
                // No MCP+ contracts in the captures: failure modes are undocumented
                // (an info: MCP has no place for them, so it is not a warning on every tool).
                assert_eq!(tool.scores.failure_modes, 2, "{}", tool.tool);
                for finding in &tool.findings {
                    assert!(
                        resolves(&document, &finding.pointer),
                        "{}: {finding:?}",
                        path.display()
                    );
                    assert!(!finding.message.is_empty() && !finding.fix.is_empty());
                }
            }
            let text = render_text(&[report]);
            assert!(text.contains("completeness"), "{}", path.display());
        }
    }
    assert_eq!(tools, 52, "the README counts 52 tools");
}

#[test]
fn flags_what_the_captures_really_lack() {
    let path = common::shared_data().join("mcp-tools/filesystem.json");
    let report = lint(&common::mcp_tools(&path)[0]);
    let rules_of = |tool: &str| -> Vec<&str> {
        let tool = report.tools.iter().find(|t| t.tool == tool).unwrap();
        tool.findings.iter().map(|f| f.rule).collect()
    };
    assert!(rules_of("write_file").contains(&"unconfirmed-destructive"));
    assert!(!rules_of("read_text_file").contains(&"unconfirmed-destructive"));
    assert!(rules_of("read_text_file").contains(&"argument-description"));
}

#[test]
fn phi_plus_meets_every_principle() {
    for (split, service) in common::all_sgd_services() {
        let report = lint(&phi_plus(&service));
        for tool in &report.tools {
            assert_eq!(
                tool.scores.total(),
                15,
                "{split}/{}: {:#?}",
                service.service_name,
                tool.findings
            );
        }
    }
}

#[test]
fn plain_phi_lacks_confirmation_exactly_on_transactional_intents() {
    for (_, service) in common::all_sgd_services() {
        let report = lint(&phi(&service));
        for (intent, tool) in service.intents.iter().zip(&report.tools) {
            let unconfirmed = tool
                .findings
                .iter()
                .any(|f| f.rule == "unconfirmed-destructive");
            assert_eq!(unconfirmed, intent.is_transactional, "{}", tool.tool);
            assert!(tool.scores.get(Principle::FailureModes) < 3);
            assert_eq!(
                tool.findings
                    .iter()
                    .filter(|f| f.severity == Severity::Error)
                    .count(),
                0
            );
        }
    }
}

#[test]
fn renders_the_git_server() {
    let path = common::shared_data().join("mcp-tools/git.json");
    let report = lint(&common::mcp_tools(&path)[0]);
    insta::assert_snapshot!(render_text(&[report]));
}

#[test]
fn the_example_sidecar_closes_the_filesystem_gaps() {
    use troupe_contracts::contract::{apply_sidecar, load_sidecar};
    let sidecar_path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/filesystem.contracts.json"
    );
    let sidecar = load_sidecar(std::path::Path::new(sidecar_path)).unwrap();
    let path = common::shared_data().join("mcp-tools/filesystem.json");
    let mut list = common::mcp_tools(&path).remove(0);
    assert!(apply_sidecar(&mut list, &sidecar).is_empty());
    let report = lint(&list);
    for name in ["write_file", "edit_file", "move_file"] {
        let tool = report.tools.iter().find(|tool| tool.tool == name).unwrap();
        assert!(tool.has_contract);
        assert_eq!(
            tool.scores.action_boundaries, 3,
            "{name}: {:#?}",
            tool.findings
        );
        assert_eq!(tool.scores.failure_modes, 3, "{name}: {:#?}", tool.findings);
        assert_eq!(tool.scores.relations, 3, "{name}: {:#?}", tool.findings);
        assert!(
            !tool
                .findings
                .iter()
                .any(|f| f.rule == "argument-description"),
            "{name}"
        );
    }
}
