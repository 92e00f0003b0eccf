//! Text rendering of lint reports: per tool, the score per principle and each finding
//! with its suggested fix.

use std::fmt::Write as _;

use super::{LintReport, Principle, Severity};

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
