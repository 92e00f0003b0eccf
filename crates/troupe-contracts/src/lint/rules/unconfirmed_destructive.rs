//! `unconfirmed-destructive` (action boundaries): destructive tools have a
//! confirmation contract.
//!
//! **What**: a warning when a tool that may destroy or change data (`readOnlyHint` not
//! true and `destructiveHint` not false — MCP's defaults count, except for a tool whose
//! name or description says it is a lookup: `get_`, `list_`, `search_`, `read`, ... in
//! any of the languages of [`crate::lint::verbs`]) has no MCP+ contract with
//! `requires_confirmation: true`; also a warning when a contract declares the tool
//! transactional but not needing confirmation.
//!
//! **Why**: MCP hints are not commitments and carry no protocol step; an SGD
//! transactional intent always asks the user first. Without an explicit confirmation
//! boundary an agent may run the transaction unasked (this is where SGD ≁ MCP).
//!
//! **Example**: `write_file` with `"destructiveHint": true` → add
//! `"_meta": {"dev.troupe/contract": {"transactional": true, "requires_confirmation":
//! true, ...}}` (or a sidecar entry).

use crate::lint::{Context, Finding, Principle, Rule, Severity};

/// The rule.
pub const RULE: Rule = Rule {
    id: "unconfirmed-destructive",
    principle: Principle::ActionBoundaries,
    summary: "destructive tools have a confirmation contract",
    check,
};

fn check(context: &Context<'_>, index: usize) -> Vec<Finding> {
    let Some(tool) = context.tool(index) else {
        return vec![];
    };
    let hints = tool.hints();
    let contract = context.contract(index);
    let mut findings = Vec::new();
    if let Some(contract) = contract
        && contract.transactional
        && !contract.requires_confirmation
    {
        findings.push(RULE.finding(
            Severity::Warning,
            format!("{}/_meta", context.pointer(index)),
            format!(
                "the contract of `{}` is transactional but needs no confirmation",
                tool.name
            ),
            "set \"requires_confirmation\": true, or explain why the transaction is safe unasked",
        ));
    }
    let explicit = tool
        .annotations
        .as_ref()
        .is_some_and(|a| a.read_only_hint == Some(false) && a.destructive_hint == Some(true));
    let lookup = matches!(
        crate::lint::verbs::classify(tool),
        Some((crate::lint::verbs::Effect::Lookup, _))
    );
    let destructive = !hints.read_only && hints.destructive && (explicit || !lookup);
    if destructive && !contract.is_some_and(|c| c.requires_confirmation || !c.transactional) {
        findings.push(RULE.finding(
            Severity::Warning,
            format!("{}/annotations", context.pointer(index)),
            format!(
                "`{}` may destroy data but no contract says a person must confirm it first",
                tool.name
            ),
            "add an MCP+ contract (in _meta[\"dev.troupe/contract\"] or a sidecar) with \
             \"transactional\": true and \"requires_confirmation\": true",
        ));
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lint::testing::{run, tools};

    #[test]
    fn flags_destructive_tools_without_confirmation() {
        let contract = |transactional: bool, confirm: bool| {
            serde_json::json!({"dev.troupe/contract": {
                "transactional": transactional, "requires_confirmation": confirm}})
        };
        let list = tools(serde_json::json!([
            {"name": "wipe", "annotations": {"readOnlyHint": false}},
            {"name": "wipe2", "annotations": {"readOnlyHint": false}, "_meta": contract(true, true)},
            {"name": "wipe3", "annotations": {"readOnlyHint": false}, "_meta": contract(true, false)},
            {"name": "mkdir", "annotations": {"readOnlyHint": false, "destructiveHint": false}},
            {"name": "read", "annotations": {"readOnlyHint": true}},
            {"name": "get_user"},
            {"name": "search_nodes", "annotations": {"title": "Search"}},
            {"name": "rm"}
        ]));
        assert!(run(&RULE, &list, 5).is_empty(), "a lookup by its name");
        assert!(run(&RULE, &list, 6).is_empty());
        assert_eq!(run(&RULE, &list, 7).len(), 1);
        assert_eq!(run(&RULE, &list, 0).len(), 1);
        assert!(run(&RULE, &list, 1).is_empty());
        assert_eq!(run(&RULE, &list, 2).len(), 2);
        assert!(run(&RULE, &list, 3).is_empty());
        assert!(run(&RULE, &list, 4).is_empty());
    }
}
