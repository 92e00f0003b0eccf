//! `argument-description` (semantic completeness): every argument says what it means.
//!
//! **What**: a warning for each input property without a `description` (a `title`
//! alone is a label, not an explanation) unless the tool's MCP+ contract describes the
//! argument.
//!
//! **Why**: without it a model guesses what to pass (a relative or absolute path? a
//! name or an id?); SGD describes every slot.
//!
//! **Example**: `"path": {"type": "string"}` → `"path": {"type": "string",
//! "description": "Absolute path of the file, inside an allowed directory"}`.

use crate::lint::{Context, Finding, Principle, Rule, Severity};
use crate::mcp::pointer_token;

/// The rule.
pub const RULE: Rule = Rule {
    id: "argument-description",
    principle: Principle::SemanticCompleteness,
    summary: "every argument says what it means",
    check,
};

fn check(context: &Context<'_>, index: usize) -> Vec<Finding> {
    let Some(tool) = context.tool(index) else {
        return vec![];
    };
    let contract = context.contract(index);
    tool.input_properties()
        .into_iter()
        .filter(|(_, schema)| {
            schema
                .get("description")
                .and_then(|d| d.as_str())
                .is_none_or(|d| d.trim().is_empty())
        })
        .filter(|(name, _)| {
            contract
                .and_then(|contract| contract.argument(name))
                .is_none_or(|argument| argument.description.trim().is_empty())
        })
        .map(|(name, schema)| {
            let titled = schema
                .get("title")
                .and_then(|t| t.as_str())
                .map(|title| format!(" (only a title, \"{title}\")"))
                .unwrap_or_default();
            RULE.finding(
                Severity::Warning,
                format!(
                    "{}/inputSchema/properties/{}",
                    context.pointer(index),
                    pointer_token(name)
                ),
                format!(
                    "argument `{name}` of `{}` has no description{titled}",
                    tool.name
                ),
                format!(
                    "add a \"description\" saying what `{name}` means and which values are valid"
                ),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lint::testing::{run, tools};

    #[test]
    fn flags_undescribed_arguments() {
        let list = tools(
            serde_json::json!([{"name": "git_status", "inputSchema": {"properties": {
                "repo_path": {"type": "string", "title": "Repo Path"},
                "verbose": {"type": "boolean", "description": "More output"}
            }}}]),
        );
        let findings = run(&RULE, &list, 0);
        assert_eq!(findings.len(), 1);
        assert_eq!(
            findings[0].pointer,
            "/tools/0/inputSchema/properties/repo_path"
        );
        assert!(findings[0].message.contains("only a title"));
    }

    #[test]
    fn accepts_a_description_from_the_contract() {
        let list = tools(serde_json::json!([{"name": "t",
            "inputSchema": {"properties": {"x": {"type": "string"}}},
            "_meta": {"dev.troupe/contract": {"transactional": false, "requires_confirmation": false,
                "arguments": [{"name": "x", "description": "The x", "domain": {"kind": "free_text"},
                               "required": false}]}}}]));
        assert!(run(&RULE, &list, 0).is_empty());
    }
}
