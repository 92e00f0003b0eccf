//! `hint-consistency` (safety): annotations, contract and name tell the same story.
//!
//! **What**: errors where what a tool says about itself contradicts itself:
//! * a tool whose name says it deletes, kills, executes or moves money (`rm`, `mv`,
//!   `kill_process`, `execute_command`, `withdraw_funds`, `place_order`, see
//!   [`crate::lint::verbs`]) or writes (`write_file`, `send_email`) claims
//!   `readOnlyHint: true`;
//! * a tool whose name says it is destructive claims `destructiveHint: false`;
//! * its MCP+ contract says `transactional: false` although `destructiveHint` is true
//!   (or the name is destructive): the contract must not silence the hint;
//! * its contract says `transactional: true` although `readOnlyHint` is true.
//!
//! A verb found only in the description (the name has none), or one with harmless
//! meanings too (`add` two numbers, see [`crate::lint::verbs::AMBIGUOUS`]), gives a
//! warning instead.
//!
//! **Why**: hints are not commitments, so a client that trusts them is only as safe as
//! the hints are honest; a self-contradicting definition is either a mistake or a lie,
//! and either way no client can tell which side to believe.
//!
//! **Example**: `{"name": "rm", "annotations": {"destructiveHint": false}}` → set
//! `"destructiveHint": true` (and give it a confirmation contract).

use crate::lint::verbs::{Effect, classify};
use crate::lint::{Context, Finding, Principle, Rule, Severity, words};

/// The rule.
pub const RULE: Rule = Rule {
    id: "hint-consistency",
    principle: Principle::Safety,
    summary: "annotations, contract and name do not contradict each other",
    check,
};

fn check(context: &Context<'_>, index: usize) -> Vec<Finding> {
    let Some(tool) = context.tool(index) else {
        return vec![];
    };
    let base = context.pointer(index);
    let annotations = tool.annotations.as_ref();
    let read_only = annotations.and_then(|a| a.read_only_hint);
    let destructive = annotations.and_then(|a| a.destructive_hint);
    let effect = classify(tool);
    let in_name = effect.as_ref().is_some_and(|(_, verb)| {
        (words(&tool.name).contains(verb) || verb == "run")
            && !crate::lint::verbs::AMBIGUOUS.contains(&verb.as_str())
    });
    let severity = if in_name {
        Severity::Error
    } else {
        Severity::Warning
    };
    let whence = match &effect {
        Some((_, verb)) if words(&tool.name).contains(verb) => "name",
        _ => "description",
    };
    let mut findings = Vec::new();
    if let Some((kind @ (Effect::Write | Effect::Destructive), verb)) = &effect {
        if read_only == Some(true) {
            findings.push(RULE.finding(
                severity,
                format!("{base}/annotations/readOnlyHint"),
                format!(
                    "`{}` claims to be read-only, but its {whence} says it {} (\"{verb}\")",
                    tool.name,
                    if *kind == Effect::Destructive {
                        "destroys or executes"
                    } else {
                        "writes"
                    }
                ),
                "set \"readOnlyHint\": false (and \"destructiveHint\" as the tool behaves)",
            ));
        } else if *kind == Effect::Destructive && destructive == Some(false) {
            findings.push(RULE.finding(
                severity,
                format!("{base}/annotations/destructiveHint"),
                format!(
                    "`{}` claims not to be destructive, but its {whence} says \"{verb}\"",
                    tool.name
                ),
                "set \"destructiveHint\": true",
            ));
        }
    }
    if let Some(contract) = context.contract(index) {
        let at = format!("{base}/_meta/dev.troupe~1contract/transactional");
        if !contract.transactional {
            let hinted = read_only != Some(true) && destructive == Some(true);
            let named = in_name && matches!(effect, Some((Effect::Destructive, _)));
            if hinted || named {
                findings.push(RULE.finding(
                    Severity::Error,
                    at.clone(),
                    format!(
                        "the contract of `{}` says it is not transactional, but {}",
                        tool.name,
                        if hinted {
                            "its destructiveHint says it may destroy data".to_owned()
                        } else {
                            format!(
                                "its name says \"{}\"",
                                effect.as_ref().map_or("", |(_, v)| v.as_str())
                            )
                        }
                    ),
                    "make the contract \"transactional\": true with \"requires_confirmation\": \
                     true, or correct the hint if the tool really changes nothing",
                ));
            }
        } else if read_only == Some(true) {
            findings.push(RULE.finding(
                Severity::Error,
                at,
                format!(
                    "the contract of `{}` says it is transactional, but its readOnlyHint says it \
                     changes nothing",
                    tool.name
                ),
                "set \"readOnlyHint\": false",
            ));
        }
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lint::testing::{run, tools};

    #[test]
    fn finds_lying_hints_and_silencing_contracts() {
        let contract = |t: bool| serde_json::json!({"dev.troupe/contract": {"transactional": t, "requires_confirmation": t}});
        let list = tools(serde_json::json!([
            {"name": "rm", "annotations": {"readOnlyHint": false, "destructiveHint": false}},
            {"name": "execute_command", "annotations": {"readOnlyHint": true}},
            {"name": "wipe_disk", "annotations": {"destructiveHint": true}, "_meta": contract(false)},
            {"name": "get_weather", "annotations": {"readOnlyHint": true}, "_meta": contract(true)},
            {"name": "thing", "description": "Deletes the thing.", "annotations": {"readOnlyHint": true}},
            {"name": "read_file", "annotations": {"readOnlyHint": true}},
            {"name": "git_checkout", "annotations": {"readOnlyHint": false, "destructiveHint": false}},
            {"name": "add", "description": "Adds two numbers.", "annotations": {"readOnlyHint": true}}
        ]));
        let severities = |i| {
            run(&RULE, &list, i)
                .iter()
                .map(|f| f.severity)
                .collect::<Vec<_>>()
        };
        assert_eq!(severities(0), vec![Severity::Error]);
        assert_eq!(
            run(&RULE, &list, 0)[0].pointer,
            "/tools/0/annotations/destructiveHint"
        );
        assert_eq!(severities(1), vec![Severity::Error]);
        assert_eq!(severities(2), vec![Severity::Error]);
        assert_eq!(severities(3), vec![Severity::Error]);
        assert_eq!(severities(4), vec![Severity::Warning]);
        assert!(severities(5).is_empty());
        assert!(severities(6).is_empty());
        assert_eq!(
            severities(7),
            vec![Severity::Warning],
            "`add` may be arithmetic"
        );
    }
}
