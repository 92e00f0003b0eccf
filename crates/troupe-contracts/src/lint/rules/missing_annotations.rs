//! `missing-annotations` (action boundaries): the tool has behaviour annotations.
//!
//! **What**: a warning when a tool has no `annotations` at all.
//!
//! **Why**: MCP's defaults for absent hints are the most pessimistic ones (not
//! read-only, destructive, not idempotent, open world): a client must treat a harmless
//! lookup as a dangerous write, or ignore the boundary altogether.
//!
//! **Example**: `{"name": "get_weather", ...}` → add `"annotations": {"readOnlyHint":
//! true, "openWorldHint": true}`.

use crate::lint::{Context, Finding, Principle, Rule, Severity};

/// The rule.
pub const RULE: Rule = Rule {
    id: "missing-annotations",
    principle: Principle::ActionBoundaries,
    summary: "the tool has behaviour annotations",
    check,
};

fn check(context: &Context<'_>, index: usize) -> Vec<Finding> {
    match context.tool(index) {
        Some(tool) if tool.annotations.is_none() => vec![RULE.finding(
            Severity::Warning,
            context.pointer(index),
            format!(
                "`{}` has no annotations: clients must assume it writes, destroys and reaches out",
                tool.name
            ),
            "add \"annotations\" with at least readOnlyHint (and destructiveHint, idempotentHint for writers)",
        )],
        _ => vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lint::testing::{run, tools};

    #[test]
    fn flags_tools_without_annotations() {
        let list = tools(serde_json::json!([
            {"name": "a"},
            {"name": "b", "annotations": {"readOnlyHint": true}}
        ]));
        assert_eq!(run(&RULE, &list, 0)[0].pointer, "/tools/0");
        assert!(run(&RULE, &list, 1).is_empty());
    }
}
