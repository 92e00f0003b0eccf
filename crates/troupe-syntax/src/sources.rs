//! Programs of several files: `import`, resolved over one *bundle* text.
//!
//! A program whose root file imports others is kept as one text, the
//! bundle: the root file's text, then each imported file after a marker
//! line `//@troupe-file KEY` (a comment, so a bundle is itself troupe
//! source). The key of a file is its path relative to the root file's
//! directory, normalised lexically (`a/../b` is `b`); the root's own key is
//! in a marker at the very start when the root imports anything (a text
//! without imports is its own bundle, byte for byte). Spans of every file are
//! offsets into the bundle, so diagnostics, the IR and the runtime need no
//! file ids; [`Sources::locate`] maps a span back to its file.
//!
//! A bundle is what a durable run records: a resumed run re-checks exactly
//! the files the run started with, whatever happened to them on disk since.
//!
//! [`parse_program`] parses every file of a bundle once and resolves its
//! imports: each import names a file of the bundle (relative to the
//! importing file); a file is included once however often it is imported;
//! an import chain that comes back to a file on it is a cycle (E0702),
//! reported at the import that closes it with the chain spelled out and
//! the other imports of the chain as related spans. All files share one
//! namespace of declarations and workflows.

use crate::ast::{File, Item};
use crate::lexer::lex;
use crate::parser::parse_tokens;
use crate::{Code, Diagnostic, Parsed, Span};

/// The marker that starts a file of a bundle.
pub const FILE_MARKER: &str = "//@troupe-file ";

/// One file of a bundle: its key and its byte range in the bundle text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// The path relative to the root file's directory (`""` for a root
    /// whose name the bundle does not record).
    pub key: String,
    pub start: u32,
    pub end: u32,
}

impl SourceFile {
    pub fn range(&self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}

/// The files of a bundle text; the first is the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sources {
    pub text: String,
    pub files: Vec<SourceFile>,
}

impl Sources {
    /// Splits a bundle text into its files (a text without markers is one file).
    pub fn from_bundle(text: String) -> Sources {
        let mut files: Vec<SourceFile> = Vec::new();
        let mut key = String::new();
        let mut start = 0usize;
        let mut pos = 0usize;
        while pos <= text.len() {
            let line_end = text[pos..].find('\n').map_or(text.len(), |i| pos + i);
            let line = &text[pos..line_end];
            if let Some(rest) = line.strip_prefix(FILE_MARKER) {
                if pos > 0 || !files.is_empty() {
                    files.push(SourceFile {
                        key: std::mem::take(&mut key),
                        start: clamp(start),
                        end: clamp(pos),
                    });
                }
                key = rest.trim_end_matches('\r').to_owned();
                start = (line_end + 1).min(text.len());
            }
            if line_end >= text.len() {
                break;
            }
            pos = line_end + 1;
        }
        files.push(SourceFile {
            key,
            start: clamp(start),
            end: clamp(text.len()),
        });
        Sources { text, files }
    }

    /// The file holding byte `offset` of the bundle.
    pub fn file_at(&self, offset: u32) -> usize {
        let i = self.files.partition_point(|f| f.start <= offset);
        i.saturating_sub(1)
    }

    /// The file of `span` and the span relative to that file's text.
    pub fn locate(&self, span: Span) -> (usize, Span) {
        let i = self.file_at(span.start);
        let f = &self.files[i];
        let local = |n: u32| n.clamp(f.start, f.end) - f.start;
        (
            i,
            Span {
                start: local(span.start),
                end: local(span.end.max(span.start)),
            },
        )
    }

    /// The text of file `i`.
    pub fn file_text(&self, i: usize) -> &str {
        &self.text[self.files[i].range()]
    }

    /// Whether the bundle has more than the root file.
    pub fn has_imports(&self) -> bool {
        self.files.len() > 1
    }
}

fn clamp(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Normalises a path lexically: `.` dropped, `x/..` cancelled, `\` read as `/`.
pub fn normalize(path: &str) -> String {
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            ".." if absolute => {}
            p => parts.push(p),
        }
    }
    let joined = parts.join("/");
    if absolute {
        format!("/{joined}")
    } else {
        joined
    }
}

/// The key of `import "path"` written in the file with key `importer`.
pub fn import_key(importer: &str, path: &str) -> String {
    if path.starts_with('/') {
        return normalize(path);
    }
    let dir = match importer.rfind('/') {
        Some(i) => &importer[..i],
        None => "",
    };
    if dir.is_empty() {
        normalize(path)
    } else {
        normalize(&format!("{dir}/{path}"))
    }
}

/// The imports of a parsed file: (key, span of the path) in source order.
pub fn imports_of(file: &File, importer: &str) -> Vec<(String, Span)> {
    file.items
        .iter()
        .filter_map(|item| match item {
            Item::Import(i) => i
                .path
                .as_ref()
                .map(|p| (import_key(importer, p), i.path_span)),
            _ => None,
        })
        .collect()
}

/// Parses one file of a bundle: spans are offsets into the whole text.
pub fn parse_file(text: &str, file: &SourceFile) -> Parsed {
    let mut diagnostics = Vec::new();
    let base = file.start;
    let mut tokens = lex(&text[file.range()], &mut diagnostics);
    for t in &mut tokens {
        t.span = shift(t.span, base);
    }
    for d in &mut diagnostics {
        d.span = shift(d.span, base);
        for (s, _) in &mut d.related {
            *s = shift(*s, base);
        }
    }
    parse_tokens(text, tokens, diagnostics)
}

fn shift(s: Span, base: u32) -> Span {
    Span {
        start: s.start.saturating_add(base),
        end: s.end.saturating_add(base),
    }
}

/// A bundle parsed: every file's items (root first, then the others in
/// bundle order) and every syntax and import diagnostic.
#[derive(Debug, Clone)]
pub struct ParsedProgram {
    pub sources: Sources,
    pub file: File,
    pub diagnostics: Vec<Diagnostic>,
}

/// Parses a bundle text and resolves its imports (see the module docs).
pub fn parse_program(text: String) -> ParsedProgram {
    parse_program_rooted(text, None)
}

/// [`parse_program`] of a bundle whose root has no marker (see
/// [`bundle_with`]), knowing the root's key, so that an import of the root
/// is found (a cycle) rather than missing.
pub fn parse_program_rooted(text: String, root_key: Option<&str>) -> ParsedProgram {
    let mut sources = Sources::from_bundle(text);
    if let Some(key) = root_key
        && sources.files[0].key.is_empty()
    {
        sources.files[0].key = key.to_owned();
    }
    let mut parsed: Vec<Parsed> = sources
        .files
        .iter()
        .map(|f| parse_file(&sources.text, f))
        .collect();
    let mut diagnostics: Vec<Diagnostic> = Vec::new();
    let index: std::collections::HashMap<&str, usize> = sources
        .files
        .iter()
        .enumerate()
        .map(|(i, f)| (f.key.as_str(), i))
        .collect();
    let imports: Vec<Vec<(String, Span)>> = parsed
        .iter()
        .zip(&sources.files)
        .map(|(p, f)| imports_of(&p.file, &f.key))
        .collect();
    // Depth-first from the root, iteratively: `on_path` marks the files on
    // the current chain, `done` those finished.
    let n = sources.files.len();
    let mut state = vec![0u8; n]; // 0 new, 1 on the chain, 2 done
    let mut chain: Vec<(usize, usize, Option<Span>)> = vec![(0, 0, None)];
    state[0] = 1;
    while let Some(top) = chain.last_mut() {
        let (file, next, _) = *top;
        let Some((key, span)) = imports[file].get(next) else {
            state[file] = 2;
            chain.pop();
            continue;
        };
        top.1 += 1;
        if key.is_empty() || key.ends_with("..") {
            diagnostics.push(
                Diagnostic::error(
                    Code::ImportUnresolved,
                    *span,
                    "this import names a directory, not a file",
                )
                .with_label("imported here")
                .with_hint("name a `.troupe` file, relative to the importing file"),
            );
            continue;
        }
        match index.get(key.as_str()) {
            None => {
                let (what, hint) = if n == 1 {
                    (
                        format!("cannot import `{key}`: this text was not loaded from a file"),
                        "imports are read relative to the importing file when a file is loaded",
                    )
                } else {
                    (
                        format!("cannot find `{key}` among the files of this program"),
                        "the path is relative to the importing file",
                    )
                };
                diagnostics.push(
                    Diagnostic::error(Code::ImportUnresolved, *span, what)
                        .with_label("imported here")
                        .with_hint(hint),
                );
            }
            Some(&target) if state[target] == 1 => {
                let pos = chain.iter().position(|c| c.0 == target).unwrap_or(0);
                let mut names: Vec<&str> = chain[pos..]
                    .iter()
                    .map(|c| key_name(&sources.files[c.0].key))
                    .collect();
                names.push(key_name(&sources.files[target].key));
                let mut d = Diagnostic::error(
                    Code::ImportCycle,
                    *span,
                    format!("import cycle: {}", names.join(" → ")),
                )
                .with_label("this import closes the cycle")
                .with_hint("move what both files need into a third file that both import");
                for c in &chain[pos + 1..] {
                    if let Some(s) = c.2 {
                        d = d.with_related(s, "imported here");
                    }
                }
                diagnostics.push(d);
            }
            Some(&target) if state[target] == 0 => {
                state[target] = 1;
                chain.push((target, 0, Some(*span)));
            }
            Some(_) => {}
        }
    }
    let mut items = Vec::new();
    for p in &mut parsed {
        items.append(&mut p.file.items);
        diagnostics.append(&mut p.diagnostics);
    }
    diagnostics.sort_by_key(|d| (d.span.start, d.span.end));
    ParsedProgram {
        sources,
        file: File { items },
        diagnostics,
    }
}

fn key_name(key: &str) -> &str {
    if key.is_empty() { "(this file)" } else { key }
}

/// Builds the bundle of a root file and the files it imports, reading each
/// with `read(key)` (keys relative to the root's directory). A file that
/// cannot be read is left out, so the import that names it is reported by
/// [`parse_program`]; `errors` collects why it could not be read.
pub fn bundle(
    root_key: &str,
    root_text: String,
    read: &mut dyn FnMut(&str) -> Result<String, String>,
    errors: &mut Vec<(String, String)>,
) -> String {
    bundle_with(root_key, root_text, true, read, errors)
}

/// [`bundle`], optionally without the root's marker: the root's text then
/// starts the bundle at offset 0, so spans in it are offsets into the root
/// file as given (what an editor needs); imports of the root from other
/// files are then not found rather than reported as cycles.
pub fn bundle_with(
    root_key: &str,
    root_text: String,
    mark_root: bool,
    read: &mut dyn FnMut(&str) -> Result<String, String>,
    errors: &mut Vec<(String, String)>,
) -> String {
    let root = SourceFile {
        key: root_key.to_owned(),
        start: 0,
        end: clamp(root_text.len()),
    };
    let first = parse_file(&root_text, &root);
    let pending = imports_of(&first.file, root_key);
    if pending.is_empty() {
        return root_text;
    }
    let mut text = if mark_root {
        format!("{FILE_MARKER}{root_key}\n{root_text}")
    } else {
        root_text
    };
    let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
    seen.insert(normalize(root_key));
    let mut stack: Vec<String> = pending.into_iter().rev().map(|(k, _)| k).collect();
    while let Some(key) = stack.pop() {
        if !seen.insert(key.clone()) {
            continue;
        }
        if key.contains('\n') || key.is_empty() || key.ends_with("..") {
            continue;
        }
        match read(&key) {
            Ok(body) => {
                if !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(FILE_MARKER);
                text.push_str(&key);
                text.push('\n');
                let start = text.len();
                text.push_str(&body);
                let f = SourceFile {
                    key: key.clone(),
                    start: clamp(start),
                    end: clamp(text.len()),
                };
                let p = parse_file(&text, &f);
                stack.extend(imports_of(&p.file, &key).into_iter().rev().map(|(k, _)| k));
            }
            Err(e) => errors.push((key, e)),
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_relative_to_the_importer_and_normalised() {
        assert_eq!(import_key("main.troupe", "lib/a.troupe"), "lib/a.troupe");
        assert_eq!(import_key("lib/a.troupe", "b.troupe"), "lib/b.troupe");
        assert_eq!(import_key("lib/a.troupe", "../c.troupe"), "c.troupe");
        assert_eq!(import_key("main.troupe", "./x/../y.troupe"), "y.troupe");
        assert_eq!(import_key("main.troupe", "../up.troupe"), "../up.troupe");
    }

    #[test]
    fn a_text_without_markers_is_one_file_and_bundles_round_trip() {
        let s = Sources::from_bundle("workflow w() {}\n".into());
        assert_eq!(s.files.len(), 1);
        let mut files = std::collections::HashMap::new();
        files.insert("lib/a.troupe", "import \"b.troupe\"\nenum E { x }\n");
        files.insert("lib/b.troupe", "enum F { y }\n");
        let mut errors = Vec::new();
        let text = bundle(
            "main.troupe",
            "import \"lib/a.troupe\"\nimport \"lib/a.troupe\"\nworkflow w() {}\n".into(),
            &mut |k| files.get(k).map(|t| t.to_string()).ok_or("missing".into()),
            &mut errors,
        );
        assert!(errors.is_empty());
        let p = parse_program(text);
        assert!(p.diagnostics.is_empty(), "{:?}", p.diagnostics);
        let keys: Vec<_> = p.sources.files.iter().map(|f| f.key.as_str()).collect();
        assert_eq!(keys, ["main.troupe", "lib/a.troupe", "lib/b.troupe"]);
        assert_eq!(p.sources.file_text(2), "enum F { y }\n");
    }

    #[test]
    fn a_cycle_is_reported_with_its_chain() {
        let mut files = std::collections::HashMap::new();
        files.insert("a.troupe", "import \"b.troupe\"\n");
        files.insert("b.troupe", "import \"main.troupe\"\n");
        let text = bundle(
            "main.troupe",
            "import \"a.troupe\"\n".into(),
            &mut |k| files.get(k).map(|t| t.to_string()).ok_or("missing".into()),
            &mut Vec::new(),
        );
        let p = parse_program(text);
        assert_eq!(p.diagnostics.len(), 1, "{:?}", p.diagnostics);
        let d = &p.diagnostics[0];
        assert_eq!(d.code, Code::ImportCycle);
        assert_eq!(
            d.message,
            "import cycle: main.troupe → a.troupe → b.troupe → main.troupe"
        );
        assert_eq!(p.sources.file_at(d.span.start), 2);
        assert_eq!(d.related.len(), 2);
    }
}
