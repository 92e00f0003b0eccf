//! `dangling-relation` (relations): declared relations name existing tools and fields.
//!
//! **What**: an error for a relation to a tool the server does not have, and for a
//! binding whose `this` field is not an argument (for `produces`: a result) of the tool
//! carrying the relation, or whose `other` field is not an argument of the related tool.
//! Fields are looked up in the input/output schemas and in the contracts.
//!
//! **Why**: a relation that points nowhere is worse than none: planners trust it.
//!
//! **Example**: `{"kind": "requires", "tool": "check_balance", "bindings": [{"this":
//! "user", "other": "user_id"}]}` where `check_balance` takes `account_id` → bind
//! `account_id`.

use crate::contract::{Relation, RelationKind};
use crate::lint::{Context, Finding, Principle, Rule, Severity};

/// The rule.
pub const RULE: Rule = Rule {
    id: "dangling-relation",
    principle: Principle::Relations,
    summary: "declared relations name existing tools and fields",
    check,
};

fn arguments(context: &Context<'_>, index: usize) -> Vec<String> {
    let Some(tool) = context.tool(index) else {
        return vec![];
    };
    let mut names: Vec<String> = tool
        .input_properties()
        .into_iter()
        .map(|(n, _)| n.to_owned())
        .collect();
    if let Some(contract) = context.contract(index) {
        names.extend(contract.arguments.iter().map(|a| a.name.clone()));
    }
    names
}

fn results(context: &Context<'_>, index: usize) -> Vec<String> {
    let Some(tool) = context.tool(index) else {
        return vec![];
    };
    let mut names: Vec<String> = tool
        .output_properties()
        .into_iter()
        .map(|(n, _)| n.to_owned())
        .collect();
    if let Some(contract) = context.contract(index) {
        names.extend(contract.results.iter().map(|r| r.name.clone()));
    }
    names
}

fn check_relation(
    context: &Context<'_>,
    index: usize,
    relation: &Relation,
    at: &str,
) -> Vec<Finding> {
    let Some(other) = context.index_of(&relation.tool) else {
        return vec![RULE.finding(
            Severity::Error,
            format!("{at}/tool"),
            format!(
                "relation to `{}`, which is not a tool of this server",
                relation.tool
            ),
            "name an existing tool, or remove the relation",
        )];
    };
    let own = match relation.kind {
        RelationKind::Produces => results(context, index),
        _ => arguments(context, index),
    };
    let mut theirs = arguments(context, other);
    if relation.kind != RelationKind::Produces {
        // A requirement may bind a result of the required tool.
        theirs.extend(results(context, other));
    }
    let mut findings = Vec::new();
    for (position, binding) in relation.bindings.iter().enumerate() {
        if let Some(via) = &binding.via {
            let fields = context.index_of(&via.tool).map(|i| {
                let mut all = arguments(context, i);
                all.extend(results(context, i));
                all
            });
            match fields {
                None => findings.push(RULE.finding(
                    Severity::Error,
                    format!("{at}/bindings/{position}/via/tool"),
                    format!(
                        "binding through `{}`, which is not a tool of this server",
                        via.tool
                    ),
                    "name an existing tool in `via`",
                )),
                Some(fields) => {
                    let named =
                        std::iter::once(&via.field).chain(via.bindings.iter().map(|b| &b.other));
                    for name in named.filter(|n| !fields.contains(*n)) {
                        findings.push(RULE.finding(
                            Severity::Error,
                            format!("{at}/bindings/{position}/via"),
                            format!("`{name}` is not a field of `{}`", via.tool),
                            format!("bind an existing argument or result of `{}`", via.tool),
                        ));
                    }
                    let args = arguments(context, index);
                    for b in via.bindings.iter().filter(|b| !args.contains(&b.this)) {
                        findings.push(RULE.finding(
                            Severity::Error,
                            format!("{at}/bindings/{position}/via"),
                            format!("binding field `{}` is not an argument of this tool", b.this),
                            "bind an existing argument",
                        ));
                    }
                }
            }
        } else if !own.contains(&binding.this) {
            findings.push(RULE.finding(
                Severity::Error,
                format!("{at}/bindings/{position}/this"),
                format!(
                    "binding field `{}` is not a field of this tool",
                    binding.this
                ),
                "bind an existing argument (a result, for `produces`)",
            ));
        }
        if !theirs.contains(&binding.other) {
            findings.push(RULE.finding(
                Severity::Error,
                format!("{at}/bindings/{position}/other"),
                format!(
                    "binding field `{}` is not an argument of `{}`",
                    binding.other, relation.tool
                ),
                format!("bind an existing argument of `{}`", relation.tool),
            ));
        }
    }
    findings
}

fn check(context: &Context<'_>, index: usize) -> Vec<Finding> {
    let Some(contract) = context.contract(index) else {
        return vec![];
    };
    let base = format!(
        "{}/_meta/dev.troupe~1contract/relations",
        context.pointer(index)
    );
    contract
        .relations
        .iter()
        .enumerate()
        .flat_map(|(position, relation)| {
            check_relation(context, index, relation, &format!("{base}/{position}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lint::testing::{run, tools};

    #[test]
    fn flags_relations_to_nowhere() {
        let list = tools(serde_json::json!([
            {"name": "check_balance", "inputSchema": {"properties": {"user_id": {}}}},
            {"name": "book_ticket", "inputSchema": {"properties": {"user_id": {}}},
             "_meta": {"dev.troupe/contract": {"transactional": true, "requires_confirmation": true,
                "relations": [
                    {"kind": "requires", "tool": "check_balance",
                     "bindings": [{"this": "user_id", "other": "user_id"}]},
                    {"kind": "requires", "tool": "check_balance",
                     "bindings": [{"this": "user", "other": "account"}]},
                    {"kind": "compensated_by", "tool": "refund"}
                ]}}}
        ]));
        let findings = run(&RULE, &list, 1);
        let pointers: Vec<&str> = findings.iter().map(|f| f.pointer.as_str()).collect();
        assert_eq!(
            pointers,
            vec![
                "/tools/1/_meta/dev.troupe~1contract/relations/1/bindings/0/this",
                "/tools/1/_meta/dev.troupe~1contract/relations/1/bindings/0/other",
                "/tools/1/_meta/dev.troupe~1contract/relations/2/tool",
            ]
        );
    }
}
