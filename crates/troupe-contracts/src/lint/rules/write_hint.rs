//! `write-hint` (action boundaries): tools named like writers say whether they are
//! read-only.
//!
//! **What**: an error when a tool whose name contains a writing verb (`write`,
//! `delete`, `create`, `move`, `edit`, `book`, `reserve`, `buy`, `transfer`, ...) has
//! no `readOnlyHint`; a warning when such a tool claims `readOnlyHint: true` (check the
//! name or the hint).
//!
//! **Why**: the action boundary is unclear exactly where it matters: a tool that
//! changes the world must be recognisable as such before it is called.
//!
//! **Example**: `{"name": "delete_entities", "annotations": {"destructiveHint": true}}`
//! → add `"readOnlyHint": false`.

use crate::lint::{Context, Finding, Principle, Rule, Severity, words};

/// The rule.
pub const RULE: Rule = Rule {
    id: "write-hint",
    principle: Principle::ActionBoundaries,
    summary: "tools named like writers say whether they are read-only",
    check,
};

/// Verbs that suggest a tool changes something.
pub const WRITING_VERBS: [&str; 30] = [
    "write", "delete", "remove", "create", "move", "edit", "update", "set", "add", "book",
    "reserve", "buy", "transfer", "send", "post", "put", "insert", "drop", "rename", "commit",
    "reset", "checkout", "push", "merge", "pay", "cancel", "schedule", "toggle", "upload",
    "purchase",
];

/// The first writing verb in `name`, if any.
pub fn writing_verb(name: &str) -> Option<String> {
    words(name)
        .into_iter()
        .find(|word| WRITING_VERBS.contains(&word.as_str()))
}

fn check(context: &Context<'_>, index: usize) -> Vec<Finding> {
    let Some(tool) = context.tool(index) else {
        return vec![];
    };
    let Some(verb) = writing_verb(&tool.name) else {
        return vec![];
    };
    let pointer = format!("{}/annotations", context.pointer(index));
    match tool.annotations.as_ref().and_then(|a| a.read_only_hint) {
        None => vec![RULE.finding(
            Severity::Error,
            pointer,
            format!(
                "`{}` sounds like it writes (\"{verb}\") but does not say whether it is read-only",
                tool.name
            ),
            "set \"readOnlyHint\": false (and \"destructiveHint\"), or true if it really only reads",
        )],
        Some(true) => vec![RULE.finding(
            Severity::Warning,
            format!("{pointer}/readOnlyHint"),
            format!("`{}` sounds like it writes (\"{verb}\") but claims to be read-only", tool.name),
            "check the hint; if it really only reads, consider a name that says so",
        )],
        Some(false) => vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lint::testing::{run, tools};

    #[test]
    fn flags_writers_without_read_only_hint() {
        let list = tools(serde_json::json!([
            {"name": "delete_entities", "annotations": {"destructiveHint": true}},
            {"name": "git_commit", "annotations": {"readOnlyHint": true}},
            {"name": "move_file", "annotations": {"readOnlyHint": false}},
            {"name": "read_file"}
        ]));
        assert_eq!(run(&RULE, &list, 0)[0].severity, Severity::Error);
        assert_eq!(run(&RULE, &list, 1)[0].severity, Severity::Warning);
        assert!(run(&RULE, &list, 2).is_empty());
        assert!(run(&RULE, &list, 3).is_empty());
    }

    #[test]
    fn finds_verbs_in_any_naming_style() {
        assert_eq!(writing_verb("BookAppointment").as_deref(), Some("book"));
        assert_eq!(writing_verb("git-create-branch").as_deref(), Some("create"));
        assert_eq!(writing_verb("settings"), None);
    }
}
