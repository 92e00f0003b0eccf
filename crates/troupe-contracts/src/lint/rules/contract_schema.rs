//! `contract-schema` (semantic completeness): the MCP+ contract and the schemas describe
//! the same arguments and results.
//!
//! **What**: for a tool with an MCP+ contract: an error for a contract argument that is
//! not a property of the input schema, for an argument the contract requires that the
//! schema does not (or the other way round), and for a contract result that is not a
//! property of the output schema (when there is one), and for a `confirmation_shows`
//! name that is no argument; a warning for an input property the contract does not
//! describe (when it describes any).
//!
//! **Why**: a client validates calls against the schema, a verifier reasons with the
//! contract; when they disagree, one of them is wrong and every guarantee derived from
//! the contract is void.
//!
//! **Example**: contract argument `account_id`, schema property `account` → rename one.

use std::collections::BTreeSet;

use crate::lint::{Context, Finding, Principle, Rule, Severity};
use crate::mcp::pointer_token;

/// The rule.
pub const RULE: Rule = Rule {
    id: "contract-schema",
    principle: Principle::SemanticCompleteness,
    summary: "contract and schemas describe the same arguments and results",
    check,
};

fn check(context: &Context<'_>, index: usize) -> Vec<Finding> {
    let (Some(tool), Some(contract)) = (context.tool(index), context.contract(index)) else {
        return vec![];
    };
    let base = context.pointer(index);
    let at = format!("{base}/_meta/dev.troupe~1contract");
    let properties: BTreeSet<&str> = tool
        .input_properties()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    let required: BTreeSet<&str> = tool.required_arguments().into_iter().collect();
    let mut out = Vec::new();
    for (i, argument) in contract.arguments.iter().enumerate() {
        let name = argument.name.as_str();
        if !properties.contains(name) {
            out.push(RULE.finding(
                Severity::Error,
                format!("{at}/arguments/{i}"),
                format!(
                    "the contract describes argument `{name}`, which the input schema does not have"
                ),
                "use the schema's property names in the contract",
            ));
        } else if argument.required != required.contains(name) {
            out.push(RULE.finding(
                Severity::Error,
                format!("{at}/arguments/{i}/required"),
                format!(
                    "the contract says `{name}` is {}required, the input schema says it is {}",
                    if argument.required { "" } else { "not " },
                    if required.contains(name) {
                        "required"
                    } else {
                        "optional"
                    }
                ),
                "make `required` agree in both",
            ));
        }
    }
    for (i, name) in contract.confirmation_shows.iter().flatten().enumerate() {
        if !properties.contains(name.as_str()) && contract.argument(name).is_none() {
            out.push(RULE.finding(
                Severity::Error,
                format!("{at}/confirmation_shows/{i}"),
                format!("a confirmation must show `{name}`, which is not an argument of the tool"),
                "list argument names in `confirmation_shows`",
            ));
        }
    }
    if !contract.arguments.is_empty() {
        for name in properties.iter().filter(|p| contract.argument(p).is_none()) {
            out.push(RULE.finding(
                Severity::Warning,
                format!("{base}/inputSchema/properties/{}", pointer_token(name)),
                format!("argument `{name}` is not described by the contract"),
                "add it to the contract's `arguments`",
            ));
        }
    }
    if tool.output_schema.is_some() {
        let outputs: BTreeSet<&str> = tool
            .output_properties()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        for (i, result) in contract.results.iter().enumerate() {
            if !outputs.contains(result.name.as_str()) {
                out.push(RULE.finding(
                    Severity::Error,
                    format!("{at}/results/{i}"),
                    format!(
                        "the contract describes result `{}`, which the output schema does not have",
                        result.name
                    ),
                    "use the output schema's property names in the contract",
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lint::testing::{run, tools};

    #[test]
    fn finds_disagreements() {
        let arg = |name: &str, required: bool| serde_json::json!({"name": name, "description": "x", "domain": {"kind": "free_text"}, "required": required});
        let list = tools(serde_json::json!([
            {"name": "pay",
             "inputSchema": {"type": "object", "properties": {"account": {"type": "string"}, "memo": {"type": "string"}},
                             "required": ["account"]},
             "outputSchema": {"type": "object", "properties": {"id": {"type": "string"}}},
             "_meta": {"dev.troupe/contract": {"transactional": true, "requires_confirmation": true,
                 "confirmation_shows": ["account", "amount"],
                 "arguments": [arg("account_id", true), arg("memo", true)],
                 "results": [{"name": "receipt", "description": "r", "domain": {"kind": "free_text"}}]}}},
            {"name": "ok",
             "inputSchema": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
             "_meta": {"dev.troupe/contract": {"transactional": false, "requires_confirmation": false,
                 "arguments": [arg("a", true)]}}}
        ]));
        let found = run(&RULE, &list, 0);
        let pointers: Vec<&str> = found.iter().map(|f| f.pointer.as_str()).collect();
        assert_eq!(
            pointers,
            vec![
                "/tools/0/_meta/dev.troupe~1contract/arguments/0",
                "/tools/0/_meta/dev.troupe~1contract/arguments/1/required",
                "/tools/0/_meta/dev.troupe~1contract/confirmation_shows/1",
                "/tools/0/inputSchema/properties/account",
                "/tools/0/_meta/dev.troupe~1contract/results/0",
            ]
        );
        assert!(run(&RULE, &list, 1).is_empty());
    }
}
