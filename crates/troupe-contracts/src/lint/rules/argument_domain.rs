//! `argument-domain` (semantic completeness): string arguments whose name implies a
//! value domain declare it.
//!
//! **What**: a warning for a string property with no `enum`, `const`, `pattern` or
//! `format` (and no domain in the MCP+ contract) whose name contains a word that implies
//! a restricted domain: `type`, `kind`, `mode`, `sort`, `order`, `level`, `status`,
//! `category`, `unit`, `format`, `language`, `currency`, `timezone`, `url`/`uri`,
//! `email`, `date`, `time`, `timestamp`.
//!
//! **Why**: an undeclared domain is only in the prose, if anywhere; the model must
//! guess the spelling (`"remote"` or `"remotes"`?) and failures come late. SGD
//! categorical slots always list their values.
//!
//! **Example**: `"branch_type": {"type": "string"}` → add
//! `"enum": ["local", "remote", "all"]`; `"url": {"type": "string"}` → add
//! `"format": "uri"`.

use serde_json::Value;

use crate::lint::{Context, Finding, Principle, Rule, Severity, words};
use crate::mcp::pointer_token;

/// The rule.
pub const RULE: Rule = Rule {
    id: "argument-domain",
    principle: Principle::SemanticCompleteness,
    summary: "string arguments whose name implies a domain declare it",
    check,
};

/// Words that imply a finite set of values.
const ENUM_WORDS: [&str; 12] = [
    "type", "kind", "mode", "sort", "order", "level", "status", "category", "unit", "format",
    "language", "currency",
];

fn suggestion(name: &str) -> Option<&'static str> {
    let words = words(name);
    let has = |candidates: &[&str]| words.iter().any(|w| candidates.contains(&w.as_str()));
    if has(&["url", "uri"]) {
        Some("add \"format\": \"uri\"")
    } else if has(&["email"]) {
        Some("add \"format\": \"email\"")
    } else if has(&["timezone", "tz"]) {
        Some(
            "add a \"pattern\" for IANA names (e.g. \"^[A-Za-z_]+(/[A-Za-z_]+)*$\") or an \"enum\"",
        )
    } else if has(&["date"]) {
        Some("add \"format\": \"date\" (or \"date-time\")")
    } else if has(&["time", "timestamp", "datetime"]) {
        Some(
            "add \"format\": \"time\" / \"date-time\" or a \"pattern\" such as \"^\\\\d{2}:\\\\d{2}$\"",
        )
    } else if has(&ENUM_WORDS) {
        Some("add an \"enum\" listing the accepted values")
    } else {
        None
    }
}

fn is_plain_string(schema: &Value) -> bool {
    let typed = schema.get("type").and_then(Value::as_str) == Some("string");
    let constrained = ["enum", "const", "pattern", "format"]
        .iter()
        .any(|key| schema.get(key).is_some());
    typed && !constrained
}

fn check(context: &Context<'_>, index: usize) -> Vec<Finding> {
    let Some(tool) = context.tool(index) else {
        return vec![];
    };
    let contract = context.contract(index);
    tool.input_properties()
        .into_iter()
        .filter(|(_, schema)| is_plain_string(schema))
        .filter(|(name, _)| contract.and_then(|c| c.argument(name)).is_none())
        .filter_map(|(name, _)| {
            let fix = suggestion(name)?;
            Some(RULE.finding(
                Severity::Warning,
                format!("{}/inputSchema/properties/{}", context.pointer(index), pointer_token(name)),
                format!("string argument `{name}` of `{}` has no declared domain, though its name implies one", tool.name),
                fix,
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lint::testing::{run, tools};

    #[test]
    fn flags_implied_but_undeclared_domains() {
        let list = tools(
            serde_json::json!([{"name": "t", "inputSchema": {"properties": {
                "branch_type": {"type": "string"},
                "url": {"type": "string", "format": "uri"},
                "sortBy": {"type": "string", "enum": ["name", "size"]},
                "timezone": {"type": "string"},
                "message": {"type": "string"}
            }}}]),
        );
        let findings = run(&RULE, &list, 0);
        let flagged: Vec<&str> = findings
            .iter()
            .map(|f| f.pointer.rsplit('/').next().unwrap())
            .collect();
        assert_eq!(flagged, vec!["branch_type", "timezone"]);
        assert!(findings[0].fix.contains("enum"));
        assert!(findings[1].fix.contains("IANA"));
    }
}
