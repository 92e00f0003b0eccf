//! `undeclared-relation` (relations): a tool that consumes what another tool produces
//! declares the relation.
//!
//! **What**: a warning for each scalar argument (not an array or object) of a tool `T`
//! that another tool `U` appears to produce — `U`'s results (output schema or contract) have a field of the same name,
//! or the argument is an id (`X_id`, `XId`) and `U` is named after `X` and returns an
//! `id` — when neither `T` nor `U` declares a relation to the other. Names produced by
//! more than three tools are taken as generic (like `content`) and ignored.
//!
//! **Why**: the order of calls and the flow of values between tools (`book_ticket`
//! requires `check_balance` of the same user) is otherwise only in the model's head;
//! declared relations let a client plan, check and explain call sequences.
//!
//! **Example**: `reserve_restaurant(restaurant_name)` and `find_restaurants` returning
//! `restaurant_name` → add to `find_restaurants`'s contract `"relations": [{"kind":
//! "produces", "tool": "reserve_restaurant", "bindings": [{"this": "restaurant_name",
//! "other": "restaurant_name"}]}]` (or `requires` on the consumer).

use crate::lint::{Context, Finding, Principle, Rule, Severity, words};
use crate::mcp::pointer_token;

/// The rule.
pub const RULE: Rule = Rule {
    id: "undeclared-relation",
    principle: Principle::Relations,
    summary: "consumed ids and results have a declared relation",
    check,
};

/// Above this many producers a field name is considered generic.
const MAX_PRODUCERS: usize = 3;

/// `X` of an id-like argument `X_id` / `XId`.
fn id_subject(argument: &str) -> Option<String> {
    let words = words(argument);
    match words.as_slice() {
        [subject @ .., last] if last == "id" && !subject.is_empty() => Some(subject.join("_")),
        _ => None,
    }
}

/// The tools other than `index` that produce `argument`: those returning
/// a field of that name, or, for an id-like `X_id`, returning `id` with `X`
/// in their name. Stops once there are more than [`MAX_PRODUCERS`] (the
/// name is generic then): looked up in the list's index, not scanned.
fn producers(context: &Context<'_>, index: usize, argument: &str) -> Vec<usize> {
    let index_of = context.producers();
    let mut out: Vec<usize> = index_of
        .of(argument)
        .iter()
        .copied()
        .filter(|&i| i != index)
        .take(MAX_PRODUCERS + 1)
        .collect();
    if let Some(subject) = id_subject(argument) {
        for &i in index_of.of("id") {
            if out.len() > MAX_PRODUCERS {
                break;
            }
            if i != index
                && !out.contains(&i)
                && context
                    .tool(i)
                    .is_some_and(|t| words(&t.name).join("_").contains(&subject))
            {
                out.push(i);
            }
        }
    }
    out.sort_unstable();
    out
}

fn related(context: &Context<'_>, a: usize, b: usize) -> bool {
    let names = |i: usize| context.tool(i).map(|tool| tool.name.as_str());
    let declares = |from: usize, to: usize| {
        context.contract(from).is_some_and(|c| {
            c.relations
                .iter()
                .any(|r| Some(r.tool.as_str()) == names(to))
        })
    };
    declares(a, b) || declares(b, a)
}

fn check(context: &Context<'_>, index: usize) -> Vec<Finding> {
    let Some(tool) = context.tool(index) else {
        return vec![];
    };
    let mut findings = Vec::new();
    for (argument, schema) in tool.input_properties() {
        let kind = schema.get("type").and_then(|kind| kind.as_str());
        if matches!(kind, Some("array" | "object")) {
            continue;
        }
        let producers = producers(context, index, argument);
        if producers.is_empty() || producers.len() > MAX_PRODUCERS {
            continue;
        }
        if producers
            .iter()
            .any(|&producer| related(context, index, producer))
        {
            continue;
        }
        let names: Vec<String> = producers
            .iter()
            .filter_map(|&i| context.tool(i).map(|t| format!("`{}`", t.name)))
            .collect();
        let first = producers
            .first()
            .and_then(|&i| context.tool(i))
            .map_or("producer", |t| t.name.as_str());
        findings.push(RULE.finding(
            Severity::Warning,
            format!("{}/inputSchema/properties/{}", context.pointer(index), pointer_token(argument)),
            format!(
                "`{}` consumes `{argument}`, which {} produce(s), but no relation is declared",
                tool.name,
                names.join(", ")
            ),
            format!(
                "declare it in a contract: on `{first}` {{\"kind\": \"produces\", \"tool\": \"{}\", \
                 \"bindings\": [{{\"this\": \"{argument}\", \"other\": \"{argument}\"}}]}}, or \
                 \"requires\"/\"precedes\" on `{}`",
                tool.name, tool.name
            ),
        ));
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lint::testing::{run, tools};

    #[test]
    fn flags_consumed_results_without_relation() {
        let list = tools(serde_json::json!([
            {"name": "find_restaurants", "outputSchema": {"properties": {"restaurant_name": {}}}},
            {"name": "reserve_restaurant", "inputSchema": {"properties": {"restaurant_name": {}}}},
            {"name": "create_user", "outputSchema": {"properties": {"id": {}}}},
            {"name": "delete_user", "inputSchema": {"properties": {"user_id": {}}},
             "_meta": {"dev.troupe/contract": {"transactional": true, "requires_confirmation": true,
                 "relations": [{"kind": "requires", "tool": "create_user"}]}}},
            {"name": "rename_user", "inputSchema": {"properties": {"userId": {}}}},
            {"name": "merge_restaurants",
             "inputSchema": {"properties": {"restaurant_name": {"type": "array"}}}}
        ]));
        let findings = run(&RULE, &list, 1);
        assert_eq!(findings.len(), 1);
        assert!(findings[0].message.contains("`find_restaurants`"));
        assert!(run(&RULE, &list, 3).is_empty(), "declared");
        assert_eq!(run(&RULE, &list, 4).len(), 1, "id heuristic");
        assert!(run(&RULE, &list, 0).is_empty());
        assert!(run(&RULE, &list, 5).is_empty(), "arrays are not ids");
    }

    #[test]
    fn recognises_id_arguments() {
        assert_eq!(id_subject("user_id").as_deref(), Some("user"));
        assert_eq!(id_subject("branchId").as_deref(), Some("branch"));
        assert_eq!(id_subject("id"), None);
        assert_eq!(id_subject("identity"), None);
    }
}
