//! `invalid-contract` (failure modes): the MCP+ contract decodes.
//!
//! **What**: an error when `_meta["dev.troupe/contract"]` is present but is not a valid
//! contract (wrong types, missing `transactional` / `requires_confirmation`, unknown
//! relation kind, ...).
//!
//! **Why**: a broken contract is silently ignored by every consumer, so all its
//! guarantees — confirmation, failure modes, relations — are lost.
//!
//! **Example**: `{"dev.troupe/contract": {"transactional": "yes"}}` → use booleans and
//! include `"requires_confirmation"`.

use crate::contract::META_KEY;
use crate::lint::{Context, Finding, Principle, Rule, Severity};
use crate::mcp::pointer_token;

/// The rule.
pub const RULE: Rule = Rule {
    id: "invalid-contract",
    principle: Principle::FailureModes,
    summary: "the MCP+ contract decodes",
    check,
};

fn check(context: &Context<'_>, index: usize) -> Vec<Finding> {
    match context.contracts.get(index) {
        Some(Err(error)) => vec![RULE.finding(
            Severity::Error,
            format!("{}/_meta/{}", context.pointer(index), pointer_token(META_KEY)),
            error.clone(),
            "fix the contract so that it matches the MCP+ format (see the crate docs of troupe-contracts)",
        )],
        _ => vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lint::testing::{run, tools};

    #[test]
    fn flags_undecodable_contracts() {
        let list = tools(serde_json::json!([
            {"name": "a", "_meta": {"dev.troupe/contract": {"transactional": "yes"}}},
            {"name": "b", "_meta": {"other": 1}}
        ]));
        let findings = run(&RULE, &list, 0);
        assert_eq!(findings[0].pointer, "/tools/0/_meta/dev.troupe~1contract");
        assert!(run(&RULE, &list, 1).is_empty());
    }
}
