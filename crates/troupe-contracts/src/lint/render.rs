//! Rendering of lint reports: grouped by rule with counts ([`render_grouped`]), per tool
//! with scores ([`render_text`]), and SARIF 2.1.0 for code-scanning tools
//! ([`render_sarif`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{Value, json};

use super::rules::ALL;
use super::{Finding, LintReport, Principle, Severity};

/// Findings grouped by rule: a summary table (rule, principle, errors, warnings, infos)
/// then, per rule, every finding located by server, tool and JSON pointer.
pub fn render_grouped(reports: &[LintReport]) -> String {
    let mut out = String::new();
    let tools: usize = reports.iter().map(|r| r.tools.len()).sum();
    let count = |s| reports.iter().map(|r| r.count(s)).sum::<usize>();
    let _ = writeln!(
        out,
        "{} servers, {tools} tools: {} errors, {} warnings, {} infos",
        reports.len(),
        count(Severity::Error),
        count(Severity::Warning),
        count(Severity::Info)
    );
    let mut by_rule: BTreeMap<usize, Vec<(&str, &str, &Finding)>> = BTreeMap::new();
    for report in reports {
        let server = report.server.as_deref().unwrap_or("(unnamed)");
        for tool in &report.tools {
            for finding in &tool.findings {
                let order = ALL
                    .iter()
                    .position(|r| r.id == finding.rule)
                    .unwrap_or(ALL.len());
                by_rule
                    .entry(order)
                    .or_default()
                    .push((server, tool.tool.as_str(), finding));
            }
        }
    }
    if by_rule.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "
  {:<26} {:<13} {:>6} {:>8} {:>5}",
        "rule", "principle", "errors", "warnings", "infos"
    );
    for (order, findings) in &by_rule {
        let (id, principle) = ALL
            .get(*order)
            .map_or(("?", "?"), |r| (r.id, r.principle.title()));
        let n = |s| findings.iter().filter(|(_, _, f)| f.severity == s).count();
        let _ = writeln!(
            out,
            "  {id:<26} {principle:<13} {:>6} {:>8} {:>5}",
            n(Severity::Error),
            n(Severity::Warning),
            n(Severity::Info)
        );
    }
    for (order, findings) in &by_rule {
        let rule = ALL.get(*order);
        let _ = writeln!(
            out,
            "\n{} — {} ({})",
            rule.map_or("?", |r| r.id),
            rule.map_or("", |r| r.summary),
            findings.len()
        );
        for (server, tool, finding) in findings {
            let _ = writeln!(
                out,
                "  {:<7} {server}/{tool} {}\n          {}\n          fix: {}",
                finding.severity.name(),
                finding.pointer,
                finding.message,
                finding.fix
            );
        }
    }
    out
}

/// SARIF 2.1.0: one run, the rules that produced findings, one result per finding
/// (located in `uri` by the finding's JSON pointer as a logical location).
pub fn render_sarif(reports: &[LintReport], uri: &str) -> Value {
    let mut results = Vec::new();
    let mut used: Vec<&'static str> = Vec::new();
    for report in reports {
        let server = report.server.as_deref().unwrap_or("(unnamed)");
        for tool in &report.tools {
            for finding in &tool.findings {
                if !used.contains(&finding.rule) {
                    used.push(finding.rule);
                }
                results.push(json!({
                    "ruleId": finding.rule,
                    "level": match finding.severity {
                        Severity::Error => "error",
                        Severity::Warning => "warning",
                        Severity::Info => "note",
                    },
                    "message": {"text": format!("{} Fix: {}", finding.message, finding.fix)},
                    "locations": [{
                        "physicalLocation": {"artifactLocation": {"uri": uri}},
                        "logicalLocations": [{
                            "name": finding.pointer,
                            "fullyQualifiedName": format!("{server}/{}{}", tool.tool, finding.pointer),
                            "kind": "object"
                        }]
                    }]
                }));
            }
        }
    }
    let rules: Vec<Value> = ALL
        .iter()
        .filter(|r| used.contains(&r.id))
        .map(|r| {
            json!({"id": r.id, "shortDescription": {"text": r.summary},
                   "properties": {"principle": r.principle.title()}})
        })
        .collect();
    json!({
        "version": "2.1.0",
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "runs": [{
            "tool": {"driver": {"name": "troupe contracts lint", "rules": rules}},
            "results": results
        }]
    })
}

/// Renders reports for people.
pub fn render_text(reports: &[LintReport]) -> String {
    let mut out = String::new();
    for (index, report) in reports.iter().enumerate() {
        if index > 0 {
            out.push('\n');
        }
        render_report(&mut out, report);
    }
    out
}

fn render_report(out: &mut String, report: &LintReport) {
    let server = report.server.as_deref().unwrap_or("(unnamed server)");
    let _ = writeln!(
        out,
        "{server}: {} tools, {} errors, {} warnings, {} infos",
        report.tools.len(),
        report.count(Severity::Error),
        report.count(Severity::Warning),
        report.count(Severity::Info),
    );
    for tool in &report.tools {
        let scores: Vec<String> = Principle::ALL
            .iter()
            .map(|&principle| format!("{} {}/3", principle.title(), tool.scores.get(principle)))
            .collect();
        let contract = if tool.has_contract { "  [MCP+]" } else { "" };
        let _ = writeln!(
            out,
            "\n  {} ({}){contract}\n    {}",
            tool.tool,
            tool.pointer,
            scores.join(" · ")
        );
        for finding in &tool.findings {
            let _ = writeln!(
                out,
                "    {}[{}] {}\n      {}\n      fix: {}",
                finding.severity.name(),
                finding.rule,
                finding.pointer,
                finding.message,
                finding.fix
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lint::{lint, testing::tools};

    #[test]
    fn renders_scores_and_fixes() {
        let list = tools(serde_json::json!([{"name": "delete_all", "inputSchema": {}}]));
        let text = render_text(&[lint(&list)]);
        assert!(text.contains("delete_all (/tools/0)"), "{text}");
        assert!(text.contains("boundaries 0/3"), "{text}");
        assert!(text.contains("fix: "), "{text}");
    }
}
