//! `write-hint` (action boundaries): tools named like writers say whether they are
//! read-only.
//!
//! **What**: an error when a tool whose name contains a writing or destructive verb
//! (`write`, `delete`, `create`, `rm`, `mv`, `kill`, `place_order`, `withdraw`,
//! `transfer`, `send`, `execute`, ... — see [`crate::lint::verbs`]; for a name without a
//! verb, the first verb of its description) has no `readOnlyHint`. A tool that claims
//! `readOnlyHint: true` against its name is `hint-consistency`'s finding.
//!
//! **Why**: the action boundary is unclear exactly where it matters: a tool that
//! changes the world must be recognisable as such before it is called.
//!
//! **Example**: `{"name": "delete_entities", "annotations": {"destructiveHint": true}}`
//! → add `"readOnlyHint": false`.

use crate::lint::verbs::{Effect, classify};
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
    let Some((Effect::Write | Effect::Destructive, verb)) = classify(tool) else {
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
        Some(_) => vec![],
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
            {"name": "read_file"},
            {"name": "rm"},
            {"name": "place_order"},
            {"name": "kill_process"},
            {"name": "ledger", "description": "Withdraws funds from an account."}
        ]));
        for i in 4..8 {
            assert_eq!(run(&RULE, &list, i)[0].severity, Severity::Error, "{i}");
        }
        assert_eq!(run(&RULE, &list, 0)[0].severity, Severity::Error);
        assert!(run(&RULE, &list, 1).is_empty(), "hint-consistency's case");
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
