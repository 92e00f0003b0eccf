//! The Mermaid backend: a `sequenceDiagram` text.
//!
//! Participants get the aliases `P0, P1, …` so that no lifeline name can clash
//! with a Mermaid keyword. Labels are escaped with Mermaid entity codes: a bare
//! `;` or `#` ends a text token, and the word `end` closes a block, so `;`,
//! `#` and the `e` of every `end` are written as `#59;`, `#35;` and `#101;`
//! (Mermaid turns them back into characters when it renders).

use super::{Chart, FrameKind, Item};
use std::fmt::Write as _;

/// Escapes one label for any position of a Mermaid sequence diagram.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let is_end = matches!(c, 'e' | 'E')
            && chars
                .get(i + 1)
                .is_some_and(|c| c.eq_ignore_ascii_case(&'n'))
            && chars
                .get(i + 2)
                .is_some_and(|c| c.eq_ignore_ascii_case(&'d'));
        match c {
            _ if is_end => {
                let _ = write!(out, "#{};", c as u32);
            }
            ';' => out.push_str("#59;"),
            '#' => out.push_str("#35;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '"' => out.push_str("#quot;"),
            '%' => out.push_str("#37;"),
            '\n' | '\r' | '\t' => out.push(' '),
            c if c.is_control() => {}
            c => out.push(c),
        }
        i += 1;
    }
    let trimmed = out.trim();
    if trimmed.is_empty() {
        "#160;".to_owned()
    } else {
        trimmed.to_owned()
    }
}

/// The chart as Mermaid `sequenceDiagram` text.
pub fn render(chart: &Chart) -> String {
    let mut out = String::from("sequenceDiagram\n");
    for (i, name) in chart.lifelines.iter().enumerate() {
        let _ = writeln!(out, "    participant P{i} as {}", escape(name));
    }
    let mut depth = 1usize;
    let mut open = 0usize;
    // The kinds of the open frames: a section of a `par` opens with `and`.
    let mut kinds: Vec<FrameKind> = Vec::new();
    let pad = |depth: usize| "    ".repeat(depth);
    for item in &chart.items {
        match item {
            Item::Message {
                from,
                to,
                label,
                control,
            } => {
                let arrow = if *control { "--)" } else { "->>" };
                let _ = writeln!(out, "{}P{from}{arrow}P{to}: {}", pad(depth), escape(label));
            }
            Item::Note { over, text } => {
                let _ = writeln!(out, "{}Note over P{over}: {}", pad(depth), escape(text));
            }
            Item::FrameStart {
                kind: kind @ (FrameKind::Call | FrameKind::Plan),
                label,
                owner,
            } => {
                // Mermaid has no `ref` fragment: a tinted `rect`, named by a note.
                let tint = match kind {
                    FrameKind::Plan => "rgb(253, 242, 248)",
                    _ => "rgb(236, 253, 245)",
                };
                let _ = writeln!(out, "{}rect {tint}", pad(depth));
                depth += 1;
                open += 1;
                kinds.push(FrameKind::Call);
                let _ = writeln!(
                    out,
                    "{}Note over P{}: {}",
                    pad(depth),
                    owner.unwrap_or(0),
                    escape(label)
                );
            }
            Item::FrameStart { kind, label, .. } => {
                let _ = writeln!(out, "{}{} {}", pad(depth), kind.keyword(), escape(label));
                depth += 1;
                open += 1;
                kinds.push(*kind);
            }
            Item::Ref { from, to, text } => {
                let over = if from == to {
                    format!("P{from}")
                } else {
                    format!("P{from},P{to}")
                };
                let _ = writeln!(out, "{}Note over {over}: {}", pad(depth), escape(text));
            }
            Item::FrameElse { label } => {
                let word = if kinds.last() == Some(&FrameKind::Par) {
                    "and"
                } else {
                    "else"
                };
                let _ = writeln!(
                    out,
                    "{}{word} {}",
                    pad(depth.saturating_sub(1)),
                    escape(label)
                );
            }
            Item::FrameEnd => {
                if open > 0 {
                    kinds.pop();
                    open -= 1;
                    depth -= 1;
                    let _ = writeln!(out, "{}end", pad(depth));
                }
            }
        }
    }
    // A chart model with unbalanced frames still yields parseable text.
    while open > 0 {
        open -= 1;
        depth -= 1;
        let _ = writeln!(out, "{}end", pad(depth));
    }
    out
}
