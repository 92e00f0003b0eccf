//! `output-schema` (semantic completeness): the results are described.
//!
//! **What**: an info finding when a tool has neither an `outputSchema` nor result
//! fields in its MCP+ contract.
//!
//! **Why**: without it the results are opaque text; SGD's result slots (and the
//! `produces` relations that feed one tool's results to another) cannot be recovered.
//!
//! **Example**: `git_status` returns free text → add `"outputSchema": {"type": "object",
//! "properties": {"branch": {"type": "string", "description": "Current branch"}}}`.

use crate::lint::{Context, Finding, Principle, Rule, Severity};

/// The rule.
pub const RULE: Rule = Rule {
    id: "output-schema",
    principle: Principle::SemanticCompleteness,
    summary: "the results are described",
    check,
};

fn check(context: &Context<'_>, index: usize) -> Vec<Finding> {
    let Some(tool) = context.tool(index) else {
        return vec![];
    };
    let contract_results = context
        .contract(index)
        .is_some_and(|c| !c.results.is_empty());
    if tool.output_schema.is_some() || contract_results {
        return vec![];
    }
    vec![RULE.finding(
        Severity::Info,
        context.pointer(index),
        format!(
            "`{}` does not describe its results (no outputSchema)",
            tool.name
        ),
        "add an \"outputSchema\" with a described property per result field",
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lint::testing::{run, tools};

    #[test]
    fn flags_tools_without_output_schema() {
        let list = tools(serde_json::json!([
            {"name": "a"},
            {"name": "b", "outputSchema": {"type": "object"}}
        ]));
        assert_eq!(run(&RULE, &list, 0)[0].severity, Severity::Info);
        assert!(run(&RULE, &list, 1).is_empty());
    }
}
