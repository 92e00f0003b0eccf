//! Rendering diagnostics at the edge: as annotated source snippets for people
//! (ariadne) or as JSON records for scripts.
//!
//! Snippets are linear in the number of diagnostics: the source's line index
//! is built once per file, not once per diagnostic, and at most
//! [`MAX_RENDERED`] snippets are printed per file (a person reads the first
//! ones; a summary line counts the rest, and `--json` lists them all).

use ariadne::{Config, IndexType, Label, Report, ReportKind, Source};
use serde::Serialize;
use troupe_syntax::{Diagnostic, LineIndex, Severity};

/// One source file and its diagnostics.
#[derive(Debug)]
pub struct FileReport<'a> {
    pub path: &'a str,
    pub text: &'a str,
    pub diagnostics: &'a [Diagnostic],
}

/// The most snippets printed for one file.
pub const MAX_RENDERED: usize = 200;

/// Renders the diagnostics of `file` as caret snippets: the first
/// [`MAX_RENDERED`], then one line counting the others.
pub fn render_text(file: &FileReport<'_>, color: bool, out: &mut Vec<u8>) {
    render_text_limited(file, color, MAX_RENDERED, out);
}

/// [`render_text`] with another cap.
pub fn render_text_limited(file: &FileReport<'_>, color: bool, limit: usize, out: &mut Vec<u8>) {
    let source = Source::from(file.text);
    let (shown, rest) = file.diagnostics.split_at(limit.min(file.diagnostics.len()));
    for d in shown {
        render_one(file, &source, d, color, out);
    }
    if !rest.is_empty() {
        let errors = rest.iter().filter(|d| d.is_error()).count();
        let warnings = rest.len() - errors;
        let plural = |n: usize, w: &str| format!("{n} more {w}{}", if n == 1 { "" } else { "s" });
        let what = match (errors, warnings) {
            (e, 0) => plural(e, "error"),
            (0, w) => plural(w, "warning"),
            (e, w) => format!("{} and {}", plural(e, "error"), plural(w, "warning")),
        };
        out.extend_from_slice(
            format!(
                "… and {what} in {} (the first {} are shown; `--json` lists all)\n",
                file.path,
                shown.len()
            )
            .as_bytes(),
        );
    }
}

fn render_one(
    file: &FileReport<'_>,
    source: &Source<&str>,
    d: &Diagnostic,
    color: bool,
    out: &mut Vec<u8>,
) {
    let kind = match d.severity {
        Severity::Error => ReportKind::Error,
        Severity::Warning => ReportKind::Warning,
    };
    let path = file.path;
    let range = clamp(d.span.range(), file.text.len());
    let mut report = Report::build(kind, (path, range.clone()))
        .with_config(
            Config::default()
                .with_color(color)
                .with_index_type(IndexType::Byte),
        )
        .with_code(format!("{}", d.code))
        .with_message(&d.message)
        .with_label(
            Label::new((path, range))
                .with_message(d.label.as_deref().unwrap_or("here"))
                .with_order(0),
        );
    for (i, (span, label)) in d.related.iter().enumerate() {
        let order = i32::try_from(i + 1).unwrap_or(i32::MAX);
        report = report.with_label(
            Label::new((path, clamp(span.range(), file.text.len())))
                .with_message(label)
                .with_order(order),
        );
    }
    if let Some(hint) = &d.hint {
        report = report.with_help(hint);
    }
    let mut buf = Vec::new();
    if report.finish().write((path, source), &mut buf).is_err() {
        // ariadne only fails on I/O into a Vec, which cannot happen; fall back
        // to a plain line rather than lose the diagnostic.
        buf = format!("{}[{}]: {}\n", severity_word(d.severity), d.code, d.message).into_bytes();
    }
    out.extend_from_slice(&buf);
}

fn clamp(range: std::ops::Range<usize>, len: usize) -> std::ops::Range<usize> {
    range.start.min(len)..range.end.min(len)
}

fn severity_word(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}

/// A diagnostic as scripts see it (`--json`).
#[derive(Debug, Serialize)]
pub struct JsonDiagnostic {
    pub file: String,
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
    pub code: &'static str,
    pub name: &'static str,
    pub severity: Severity,
    pub message: String,
    pub hint: Option<String>,
    pub related: Vec<JsonRelated>,
}

#[derive(Debug, Serialize)]
pub struct JsonRelated {
    pub line: u32,
    pub column: u32,
    pub message: String,
}

pub fn to_json(file: &FileReport<'_>) -> Vec<JsonDiagnostic> {
    let index = LineIndex::new(file.text);
    file.diagnostics
        .iter()
        .map(|d| {
            let start = index.line_col(file.text, d.span.start);
            let end = index.line_col(file.text, d.span.end);
            JsonDiagnostic {
                file: file.path.to_owned(),
                line: start.line,
                column: start.column,
                end_line: end.line,
                end_column: end.column,
                code: d.code.as_str(),
                name: d.code.name(),
                severity: d.severity,
                message: d.message.clone(),
                hint: d.hint.clone(),
                related: d
                    .related
                    .iter()
                    .map(|(span, message)| {
                        let at = index.line_col(file.text, span.start);
                        JsonRelated {
                            line: at.line,
                            column: at.column,
                            message: message.clone(),
                        }
                    })
                    .collect(),
            }
        })
        .collect()
}
