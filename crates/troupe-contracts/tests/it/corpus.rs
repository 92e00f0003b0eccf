//! The verification corpus: `tests/corpus/{ok,err}/*.troupe`, workflows over
//! the train booking tools verified against the example's own sidecar
//! (`examples/train_booking.contracts.json`, the one source of its
//! contracts). Each file first checks clean, then verification yields
//! exactly the findings its `//~` annotations name (as in troupe-check's
//! corpus: `//~ E0601` on the finding's line, `//~^ E0601` for the line
//! above). `ok/` files are the safe variants: no errors (and no annotation
//! of one); `err/` files the unsafe patterns, each with at least one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use troupe_syntax::{LineIndex, Severity};

fn corpus(kind: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(kind);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "troupe"))
        .collect();
    files.sort();
    files
}

/// (line, code) → count, from the `//~` annotations of `text`.
fn expected(text: &str) -> BTreeMap<(u32, String), usize> {
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let Some(pos) = line.find("//~") else {
            continue;
        };
        let rest = &line[pos + 3..];
        let ups = rest.chars().take_while(|&c| c == '^').count() as u32;
        for code in rest[ups as usize..].split_whitespace() {
            *out.entry((i as u32 + 1 - ups, code.to_owned()))
                .or_insert(0) += 1;
        }
    }
    out
}

/// (line, code) → count of what verification reports for `path`.
fn actual(path: &Path) -> (BTreeMap<(u32, String), usize>, Vec<String>) {
    let text = std::fs::read_to_string(path).unwrap();
    let (program, diagnostics) = troupe_check::check_text(&text);
    let program =
        program.unwrap_or_else(|| panic!("{} does not check: {diagnostics:#?}", path.display()));
    let found =
        troupe_contracts::verify_workflows_in_source(&program, &text, path.parent().unwrap());
    let lines = LineIndex::new(&text);
    let mut out = BTreeMap::new();
    let mut messages = Vec::new();
    for d in &found {
        let line = lines.line(d.span.start);
        *out.entry((line, d.code.as_str().to_owned())).or_insert(0) += 1;
        messages.push(format!("{line}: {} {}", d.code, d.message));
    }
    (out, messages)
}

fn run(kind: &str) -> usize {
    let mut failures = Vec::new();
    let files = corpus(kind);
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let want = expected(&text);
        let (got, messages) = actual(path);
        if got != want {
            failures.push(format!(
                "{}:\n  expected {want:?}\n  found    {got:?}\n  {}",
                path.display(),
                messages.join("\n  ")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    files.len()
}

#[test]
fn safe_workflows_verify_without_errors() {
    assert!(run("ok") >= 4);
    for path in corpus("ok") {
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            expected(&text)
                .keys()
                .all(|(_, code)| !code.starts_with('E')),
            "{} annotates an error",
            path.display()
        );
    }
}

#[test]
fn unsafe_workflows_report_exactly_their_annotations() {
    assert!(run("err") >= 10);
    for path in corpus("err") {
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!expected(&text).is_empty(), "{} has no //~", path.display());
    }
}

/// The findings are errors (warnings for W codes), located at the call.
#[test]
fn findings_have_the_severity_of_their_code() {
    for path in corpus("err") {
        let text = std::fs::read_to_string(&path).unwrap();
        let (program, _) = troupe_check::check_text(&text);
        let program = program.unwrap();
        for d in troupe_contracts::verify_workflows(&program, path.parent().unwrap()) {
            let want = if d.code.as_str().starts_with('E') {
                Severity::Error
            } else {
                Severity::Warning
            };
            assert_eq!(d.severity, want, "{}: {d:?}", path.display());
        }
    }
}
