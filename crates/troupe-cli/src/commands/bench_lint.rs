//! `troupe bench lint`: the lint of `troupe contracts lint` (and of every
//! run, before it starts) on a generated list of N tools, against parsing
//! the same list (the plainest work over the same bytes) in the same run,
//! and again at N/2: the time must grow linearly with the tools.

use crate::ExitStatus;
use anyhow::Result;
use std::time::{Duration, Instant};

/// A deterministic tool list of `n` tools of one server: varied names and
/// descriptions, some sharing result fields and `_id` arguments (the
/// relation rule's work), some read-only, some destructive.
fn generate(n: usize) -> String {
    const VERBS: [&str; 10] = [
        "read", "write", "list", "create", "delete", "update", "fetch", "search", "move", "copy",
    ];
    const THINGS: [&str; 10] = [
        "file", "issue", "repo", "user", "page", "note", "task", "event", "mail", "ticket",
    ];
    let mut tools = Vec::with_capacity(n);
    for i in 0..n {
        let verb = VERBS[i % VERBS.len()];
        let thing = THINGS[(i / VERBS.len()) % THINGS.len()];
        let read_only = matches!(verb, "read" | "list" | "fetch" | "search");
        tools.push(serde_json::json!({
            "name": format!("{verb}_{thing}_{i}"),
            "description": format!(
                "{verb} the {thing} named by `{thing}_id`; returns its id, its title and its \
                 contents as text. Variant {i}."
            ),
            "inputSchema": {
                "type": "object",
                "properties": {
                    format!("{thing}_id"): {"type": "string", "description": format!("Id of the {thing}")},
                    "limit": {"type": "integer", "description": "At most this many items"}
                },
                "required": [format!("{thing}_id")]
            },
            "outputSchema": {
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "Its id"},
                    format!("{thing}_title"): {"type": "string", "description": "Its title"}
                }
            },
            "annotations": {"readOnlyHint": read_only, "destructiveHint": verb == "delete"}
        }));
    }
    serde_json::json!({ "tools": tools }).to_string()
}

/// Parses and lints `text` `runs` times: the best time of each.
fn measure(text: &str, runs: usize) -> Result<(Duration, Duration, usize)> {
    let (mut parse, mut lint) = (Duration::MAX, Duration::MAX);
    let mut findings = 0;
    for _ in 0..runs.max(1) {
        let t = Instant::now();
        let lists = troupe_contracts::mcp::parse_tool_lists("generated", text)?;
        parse = parse.min(t.elapsed());
        let t = Instant::now();
        let reports = troupe_contracts::lint::lint_all(&lists, None);
        lint = lint.min(t.elapsed());
        findings = reports.iter().map(|r| r.findings().count()).sum();
        std::hint::black_box(reports);
    }
    Ok((parse, lint, findings))
}

pub fn bench_lint(tools: usize, runs: usize) -> Result<ExitStatus> {
    let half = generate(tools / 2);
    let full = generate(tools);
    let (parse_half, lint_half, _) = measure(&half, runs)?;
    let (parse, lint, findings) = measure(&full, runs)?;
    let (_, peak_kib) = super::bench::resident_kib();
    crate::outln!(
        "troupe bench lint: {tools} tools of one server ({} KiB of JSON), best of {runs}",
        full.len() / 1024
    );
    crate::outln!("  parse the list (baseline)  {parse:>10.2?}");
    crate::outln!(
        "  lint ({findings} findings)     {lint:>10.2?}  = {:.1}× the parse, {:.1} µs a tool",
        lint.as_secs_f64() / parse.as_secs_f64().max(1e-9),
        lint.as_secs_f64() * 1e6 / tools.max(1) as f64
    );
    crate::outln!(
        "  at {} tools                 {lint_half:>10.2?} (parse {parse_half:.2?}): doubling the tools takes {:.2}× the time",
        tools / 2,
        lint.as_secs_f64() / lint_half.as_secs_f64().max(1e-9)
    );
    crate::outln!(
        "  peak resident memory       {:>7.1} MiB",
        peak_kib as f64 / 1024.0
    );
    Ok(ExitStatus::Success)
}
