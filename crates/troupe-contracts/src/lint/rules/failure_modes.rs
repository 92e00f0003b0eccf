//! `failure-modes` (failure modes): the named errors a tool can return are documented.
//!
//! **What**: an info when a tool has no MCP+ contract (MCP has no place for failure
//! modes, so every plain MCP tool lacks them: a warning would be noise on every tool), a
//! warning when its contract lists none; a warning per failure mode without a
//! description; an error when a failure mode's `compensation` looks like a tool name
//! (snake case, no spaces) that the server does not have.
//!
//! **Why**: an agent must know which errors to expect, whether a retry can help
//! (`retryable`) and how to undo partial effects (`compensation`) — otherwise every
//! `isError` is an opaque dead end.
//!
//! **Example**: add to the contract `"failure_modes": [{"name": "NotFound",
//! "description": "No file at that path", "retryable": false}]`.

use crate::lint::{Context, Finding, Principle, Rule, Severity};

/// The rule.
pub const RULE: Rule = Rule {
    id: "failure-modes",
    principle: Principle::FailureModes,
    summary: "the named errors a tool can return are documented",
    check,
};

fn check(context: &Context<'_>, index: usize) -> Vec<Finding> {
    let Some(tool) = context.tool(index) else {
        return vec![];
    };
    if matches!(context.contracts.get(index), Some(Err(_))) {
        return vec![]; // reported by `invalid-contract`
    }
    let base = context.pointer(index);
    let Some(contract) = context.contract(index) else {
        return vec![RULE.finding(
            Severity::Info,
            base,
            format!(
                "`{}` documents no failure modes (no MCP+ contract)",
                tool.name
            ),
            "add a contract with \"failure_modes\": [{\"name\", \"description\", \"retryable\"}] \
             (in _meta[\"dev.troupe/contract\"] or a sidecar)",
        )];
    };
    let at = format!("{base}/_meta/dev.troupe~1contract/failure_modes");
    if contract.failure_modes.is_empty() {
        return vec![RULE.finding(
            Severity::Warning,
            at,
            format!("the contract of `{}` lists no failure modes", tool.name),
            "list the named errors the tool can return, with retryable and compensation",
        )];
    }
    let mut findings = Vec::new();
    for (position, mode) in contract.failure_modes.iter().enumerate() {
        if mode.description.trim().is_empty() {
            findings.push(RULE.finding(
                Severity::Warning,
                format!("{at}/{position}"),
                format!(
                    "failure mode `{}` of `{}` is not described",
                    mode.name, tool.name
                ),
                "say when the error happens and what the caller should do",
            ));
        }
        if let Some(compensation) = &mode.compensation {
            let looks_like_tool = !compensation.contains(' ') && compensation.contains('_');
            if looks_like_tool && context.index_of(compensation).is_none() {
                findings.push(RULE.finding(
                    Severity::Error,
                    format!("{at}/{position}/compensation"),
                    format!(
                        "compensation `{compensation}` of `{}` is not a tool of this server",
                        mode.name
                    ),
                    "name an existing tool, or describe the compensating action in words",
                ));
            }
        }
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lint::testing::{run, tools};

    #[test]
    fn flags_missing_and_vague_failure_modes() {
        let with = |modes: serde_json::Value| {
            serde_json::json!({"dev.troupe/contract": {
            "transactional": false, "requires_confirmation": false, "failure_modes": modes}})
        };
        let list = tools(serde_json::json!([
            {"name": "plain"},
            {"name": "empty", "_meta": with(serde_json::json!([]))},
            {"name": "vague", "_meta": with(serde_json::json!([
                {"name": "Oops", "description": "", "retryable": true, "compensation": "undo_it"}]))},
            {"name": "good", "_meta": with(serde_json::json!([
                {"name": "NotFound", "description": "No such file", "retryable": false}]))}
        ]));
        assert_eq!(run(&RULE, &list, 0)[0].pointer, "/tools/0");
        assert_eq!(run(&RULE, &list, 1).len(), 1);
        let vague = run(&RULE, &list, 2);
        assert_eq!(vague.len(), 2);
        assert_eq!(vague[1].severity, Severity::Error);
        assert!(run(&RULE, &list, 3).is_empty());
    }
}
