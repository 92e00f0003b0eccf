//! `tool-description` (semantic completeness): the tool says what it does.
//!
//! **What**: an error when a tool has no `description` (or only whitespace), a warning
//! when it has fewer than three words. Words are counted by Unicode word boundaries
//! (UAX #29), so each Chinese or Japanese ideograph counts as a word.
//!
//! **Why**: the description is all a model has to decide when to call the tool; an SGD
//! intent always has one, and Φ⁻¹ cannot invent it.
//!
//! **Example**: `{"name": "get_env", "inputSchema": {...}}` → add
//! `"description": "Return the server's environment variables (read-only)."`.

use crate::lint::{Context, Finding, Principle, Rule, Severity};

/// The rule.
pub const RULE: Rule = Rule {
    id: "tool-description",
    principle: Principle::SemanticCompleteness,
    summary: "the tool says what it does",
    check,
};

fn check(context: &Context<'_>, index: usize) -> Vec<Finding> {
    let Some(tool) = context.tool(index) else {
        return vec![];
    };
    let pointer = format!("{}/description", context.pointer(index));
    let words = tool
        .description
        .as_deref()
        .map_or(0, crate::lint::verbs::word_count);
    match words {
        0 => vec![RULE.finding(
            Severity::Error,
            pointer,
            format!("tool `{}` has no description", tool.name),
            "add a \"description\" saying what the tool does, what it returns and when to use it",
        )],
        1 | 2 => vec![RULE.finding(
            Severity::Warning,
            pointer,
            format!(
                "the description of `{}` is too short to be useful",
                tool.name
            ),
            "say what the tool does, what it returns and when to use it, in a full sentence",
        )],
        _ => vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lint::testing::{run, tools};

    #[test]
    fn flags_missing_and_short_descriptions() {
        let list = tools(serde_json::json!([
            {"name": "a"},
            {"name": "b", "description": "  "},
            {"name": "c", "description": "Reads."},
            {"name": "d", "description": "Reads a file as text."},
            {"name": "e", "description": "获取指定城市的天气预报"}
        ]));
        assert_eq!(run(&RULE, &list, 0)[0].severity, Severity::Error);
        assert_eq!(run(&RULE, &list, 1)[0].pointer, "/tools/1/description");
        assert_eq!(run(&RULE, &list, 2)[0].severity, Severity::Warning);
        assert!(run(&RULE, &list, 3).is_empty());
        assert!(
            run(&RULE, &list, 4).is_empty(),
            "a long Chinese description"
        );
    }
}
