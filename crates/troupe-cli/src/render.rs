//! Rendering diagnostics at the edge: as annotated source snippets for people
//! (ariadne) or as JSON records for scripts.
//!
//! Snippets are linear in the number of diagnostics: the source's line index
//! is built once per file, not once per diagnostic, and at most
//! [`MAX_RENDERED`] snippets are printed per file (a person reads the first
//! ones; a summary line counts the rest, and `--json` lists them all).
//!
//! A file that imports others is checked as one bundle text
//! (`troupe_syntax::sources`); each location is shown in its own file, with
//! the imported file's path relative to the root file's directory.

use ariadne::{Config, IndexType, Label, Report, ReportKind, Source};
use serde::Serialize;
use troupe_syntax::{Diagnostic, LineIndex, Severity, Sources, Span};

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
    let (shown, rest) = file.diagnostics.split_at(limit.min(file.diagnostics.len()));
    if file.text.contains(troupe_syntax::sources::FILE_MARKER) {
        let files = Files::new(file);
        for d in shown {
            render_bundled(&files, d, color, out);
        }
    } else {
        let source = Source::from(file.text);
        for d in shown {
            render_one(file, &source, d, color, out);
        }
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

/// The files of a bundle, with the paths people know them by.
struct Files {
    sources: Sources,
    paths: Vec<String>,
}

impl Files {
    fn new(file: &FileReport<'_>) -> Files {
        let sources = Sources::from_bundle(file.text.to_owned());
        let dir = std::path::Path::new(file.path)
            .parent()
            .unwrap_or(std::path::Path::new(""));
        let paths = sources
            .files
            .iter()
            .enumerate()
            .map(|(i, f)| {
                if i == 0 {
                    file.path.to_owned()
                } else {
                    dir.join(&f.key).display().to_string()
                }
            })
            .collect();
        Files { sources, paths }
    }

    /// The file of `span` (its path) and the range in that file's text.
    fn at(&self, span: Span) -> (usize, String, std::ops::Range<usize>) {
        let (i, local) = self.sources.locate(span);
        (i, self.paths[i].clone(), local.range())
    }
}

fn render_bundled(files: &Files, d: &Diagnostic, color: bool, out: &mut Vec<u8>) {
    let kind = match d.severity {
        Severity::Error => ReportKind::Error,
        Severity::Warning => ReportKind::Warning,
    };
    let (_, path, range) = files.at(d.span);
    let mut report = Report::build(kind, (path.clone(), range.clone()))
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
        let (_, p, r) = files.at(*span);
        report = report.with_label(Label::new((p, r)).with_message(label).with_order(order));
    }
    if let Some(hint) = &d.hint {
        report = report.with_help(hint);
    }
    let cache = ariadne::sources(
        files
            .paths
            .iter()
            .enumerate()
            .map(|(i, p)| (p.clone(), files.sources.file_text(i).to_owned())),
    );
    let mut buf = Vec::new();
    if report.finish().write(cache, &mut buf).is_err() {
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
    if file.text.contains(troupe_syntax::sources::FILE_MARKER) {
        return bundled_json(file);
    }
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

/// [`to_json`] of a bundle: each location in its own file.
fn bundled_json(file: &FileReport<'_>) -> Vec<JsonDiagnostic> {
    let files = Files::new(file);
    let indexes: Vec<LineIndex> = (0..files.sources.files.len())
        .map(|i| LineIndex::new(files.sources.file_text(i)))
        .collect();
    let pos = |span: Span, end: bool| {
        let (i, local) = files.sources.locate(span);
        let text = files.sources.file_text(i);
        let at = if end { local.end } else { local.start };
        (i, indexes[i].line_col(text, at))
    };
    file.diagnostics
        .iter()
        .map(|d| {
            let (i, start) = pos(d.span, false);
            let (_, end) = pos(d.span, true);
            JsonDiagnostic {
                file: files.paths[i].clone(),
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
                        let (_, at) = pos(*span, false);
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
