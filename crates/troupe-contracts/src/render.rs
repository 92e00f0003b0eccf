//! Renderings for people of the values of [`crate::ops`]: Φ⁻¹ loss reports,
//! bisimulation verdicts per service and comparisons of two given sides.
//! (The lint's renderings are in [`crate::lint::render`].)

use crate::invert::{InversionReport, MappingStatus};
use crate::ops::SidesOutcome;
use crate::semantics::ServiceVerdict;

fn status_name(status: MappingStatus) -> &'static str {
    match status {
        MappingStatus::Exact => "exact",
        MappingStatus::Lossy => "lossy",
        MappingStatus::Unmappable => "unmappable",
        MappingStatus::Missing => "missing",
    }
}

/// Renders a loss report for people.
pub fn render_inversion(report: &InversionReport) -> String {
    use std::fmt::Write as _;
    let mut text = String::new();
    let server = report.server.as_deref().unwrap_or("(unnamed server)");
    let counts: Vec<String> = [
        MappingStatus::Exact,
        MappingStatus::Lossy,
        MappingStatus::Unmappable,
        MappingStatus::Missing,
    ]
    .into_iter()
    .map(|status| format!("{} {}", report.count(status), status_name(status)))
    .collect();
    let verdict = if report.is_lossless() {
        "lossless"
    } else {
        "partial"
    };
    let _ = writeln!(
        text,
        "{server}: {} tools, {verdict} ({})",
        report.tools.len(),
        counts.join(", ")
    );
    for note in &report.notes {
        let _ = writeln!(
            text,
            "  {:<10} {}: {}",
            status_name(note.status),
            note.subject,
            note.detail
        );
    }
    for tool in &report.tools {
        let origin = if tool.from_contract {
            " (from its MCP+ contract)"
        } else {
            ""
        };
        let _ = writeln!(
            text,
            "  {} → {}.{}{origin}",
            tool.tool, tool.service, tool.intent
        );
        for note in tool
            .notes
            .iter()
            .filter(|note| note.status != MappingStatus::Exact)
        {
            let _ = writeln!(
                text,
                "    {:<10} {}: {} ({})",
                status_name(note.status),
                note.subject,
                note.detail,
                note.pointer
            );
        }
    }
    text
}

/// Renders bisimulation verdicts for people: per service the structural verdict (the
/// paper's level, SGD vs Φ) and the behavioural ones (SGD vs Φ and Φ⁺), then per intent
/// with a shortest counterexample where they differ.
pub fn render_bisim(verdicts: &[ServiceVerdict]) -> String {
    use std::fmt::Write as _;
    let relation = |differs: bool| if differs { "≁" } else { "~" };
    let mut text = String::new();
    for verdict in verdicts {
        let _ = writeln!(
            text,
            "{}: structural SGD {} MCP; behavioural SGD {} MCP, SGD {} MCP+ (states {}/{}/{})",
            verdict.service,
            relation(verdict.structural.is_some()),
            relation(verdict.mcp.is_some()),
            relation(verdict.mcp_plus.is_some()),
            verdict.states[0],
            verdict.states[1],
            verdict.states[2]
        );
        for intent in &verdict.intents {
            let kind = if intent.transactional {
                " [transactional]"
            } else {
                ""
            };
            if let Some(why) = &intent.skipped {
                let _ = writeln!(
                    text,
                    "  {} ({}){kind}: skipped: {why}",
                    intent.intent, intent.tool
                );
                continue;
            }
            let _ = writeln!(
                text,
                "  {} ({}){kind}: structural {}; behavioural SGD {} MCP, SGD {} MCP+",
                intent.intent,
                intent.tool,
                relation(intent.structural.is_some()),
                relation(intent.mcp.is_some()),
                relation(intent.mcp_plus.is_some())
            );
            for (what, counterexample) in [
                ("structural", &intent.structural),
                ("MCP", &intent.mcp),
                ("MCP+", &intent.mcp_plus),
            ] {
                if let Some(counterexample) = counterexample {
                    let right = if what == "structural" { "MCP" } else { what };
                    let _ = writeln!(text, "    {what}: {}", counterexample.render("SGD", right));
                }
            }
        }
    }
    let all = || verdicts.iter().flat_map(|v| &v.intents);
    let count =
        |f: &dyn Fn(&crate::semantics::IntentVerdict) -> bool| all().filter(|i| f(i)).count();
    let _ = writeln!(
        text,
        "\n{} services, {} intents: structurally SGD ~ MCP for {} intents (≁ for {}); \
         behaviourally SGD ≁ MCP for {} intents in {} services, SGD ≁ MCP+ for {} intents; \
         {} skipped",
        verdicts.len(),
        all().count(),
        count(&|i| i.skipped.is_none() && i.structural.is_none()),
        count(&|i| i.structural.is_some()),
        count(&|i| i.mcp.is_some()),
        verdicts.iter().filter(|v| v.mcp.is_some()).count(),
        count(&|i| i.mcp_plus.is_some()),
        count(&|i| i.skipped.is_some()),
    );
    text
}

/// Renders the comparisons of two given sides for people: per pair the
/// structural and behavioural relation with a counterexample where they
/// differ, then the sides that had no partner.
pub fn render_sides(outcome: &SidesOutcome) -> String {
    use std::fmt::Write as _;
    let mut text = String::new();
    let relation = |c: &Option<_>| if c.is_some() { "≁" } else { "~" };
    for c in &outcome.comparisons {
        let _ = writeln!(
            text,
            "{} vs {}: structural {}, behavioural {}",
            c.left,
            c.right,
            relation(&c.structural),
            relation(&c.behavioural)
        );
        if let Some(ce) = &c.structural {
            let _ = writeln!(text, "  structural: {}", ce.render("left", "right"));
        }
        if let Some(ce) = &c.behavioural {
            let _ = writeln!(text, "  behavioural: {}", ce.render("left", "right"));
        }
        if !c.skipped.is_empty() {
            let _ = writeln!(
                text,
                "  skipped (too many required arguments): {}",
                c.skipped.join(", ")
            );
        }
    }
    for name in &outcome.unpaired {
        let _ = writeln!(text, "{name}: nothing to compare it with");
    }
    text
}
