//! The tree-sitter grammar in `editors/tree-sitter-troupe`: its own tests
//! (`tree-sitter test`: corpus trees and highlight assertions), every example
//! and every `ok` corpus file parsed without error nodes, agreement with the
//! real parser on the `err` corpus, highlight snapshots of the examples, and
//! the committed generated parser being up to date with `grammar.js`.
//!
//! Needs the tree-sitter CLI (`.ci/install-editor.sh` builds it). Under CI a
//! missing CLI fails the test; on a developer machine without it the test
//! says so loudly and passes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn grammar_dir() -> PathBuf {
    root().join("editors/tree-sitter-troupe")
}

/// `name` on PATH or in cargo's bin directory.
pub fn find_tool(name: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    if let Some(home) = std::env::var_os("CARGO_HOME") {
        dirs.push(PathBuf::from(home).join("bin"));
    }
    if let Some(home) = std::env::var_os("HOME") {
        dirs.push(PathBuf::from(home).join(".cargo/bin"));
    }
    dirs.into_iter().map(|d| d.join(name)).find(|p| p.is_file())
}

fn tree_sitter() -> Option<PathBuf> {
    match find_tool("tree-sitter") {
        Some(p) => Some(p),
        None if std::env::var_os("CI").is_some() => {
            panic!("the tree-sitter CLI is missing under CI: .ci/install-editor.sh builds it")
        }
        None => {
            loud_note(
                "\n!!! NOTE: the tree-sitter CLI is not installed; the tree-sitter grammar tests \
                 did NOT run.\n!!! Run `bash .ci/install-editor.sh` (CI fails instead of skipping).\n",
            );
            None
        }
    }
}

/// One tree-sitter at a time: the first run of a grammar compiles it into a
/// shared cache, and parallel tests would race on that file.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn run(ts: &Path, dir: &Path, args: &[&str]) -> Output {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    Command::new(ts)
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn troupe_files(dir: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "troupe"))
        .collect();
    files.sort();
    files
}

/// Whether the tree of `file` has error or missing nodes.
fn has_errors(ts: &Path, file: &Path) -> (bool, String) {
    let out = run(ts, &grammar_dir(), &["parse", file.to_str().unwrap()]);
    let tree = String::from_utf8_lossy(&out.stdout).into_owned();
    let bad = !out.status.success() || tree.contains("(ERROR") || tree.contains("(MISSING");
    (
        bad,
        format!("{tree}{}", String::from_utf8_lossy(&out.stderr)),
    )
}

#[test]
fn tree_sitter_test_passes() {
    let Some(ts) = tree_sitter() else { return };
    let out = run(&ts, &grammar_dir(), &["test"]);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains("failed parses: 0"), "{all}");
    assert!(all.contains("assertions"), "the highlight tests ran: {all}");
}

#[test]
fn every_example_and_ok_corpus_file_parses_without_error_nodes() {
    let Some(ts) = tree_sitter() else { return };
    let files: Vec<PathBuf> = troupe_files("examples")
        .into_iter()
        .chain(troupe_files("crates/troupe-check/tests/corpus/ok"))
        .collect();
    assert!(files.len() >= 8);
    for file in files {
        let (bad, tree) = has_errors(&ts, &file);
        assert!(!bad, "{}:\n{tree}", file.display());
        assert!(tree.contains("(workflow_declaration"), "{}", file.display());
    }
}

#[test]
fn the_grammar_agrees_with_the_parser_on_the_error_corpus() {
    let Some(ts) = tree_sitter() else { return };
    let mut checked = 0;
    for file in troupe_files("crates/troupe-check/tests/corpus/err") {
        let source = std::fs::read_to_string(&file).unwrap();
        let parsed = troupe_syntax::parse(&source);
        let syntax_error = parsed.diagnostics.iter().any(|d| {
            d.is_error() && d.code != troupe_syntax::Code::InvalidNumber // a value range, not a shape
        });
        let (bad, tree) = has_errors(&ts, &file);
        assert_eq!(
            bad,
            syntax_error,
            "{}: tree-sitter error nodes {bad}, parser syntax errors {syntax_error}\n{tree}",
            file.display()
        );
        checked += 1;
    }
    assert!(checked > 40, "{checked}");
}

/// The captures of the highlight query on `file`, one line each:
/// `row:col-row:col capture text`.
fn highlights(ts: &Path, file: &Path) -> String {
    let out = run(
        ts,
        &grammar_dir(),
        &[
            "query",
            "--captures",
            "queries/highlights.scm",
            file.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let mut lines = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((_, rest)) = line.split_once("capture: ") else {
            continue;
        };
        // `N - name, start: (r, c), end: (r, c), text: `…``
        let name = rest
            .split(" - ")
            .nth(1)
            .and_then(|s| s.split(',').next())
            .unwrap_or("?");
        let pos = |key: &str| {
            rest.split(key)
                .nth(1)
                .and_then(|s| s.split(')').next())
                .map(|s| s.trim_start_matches('(').replace(", ", ":"))
                .unwrap_or_default()
        };
        let text = rest.split("text: ").nth(1).unwrap_or("");
        lines.push(format!("{}-{} {name} {text}", pos("start: "), pos("end: ")));
    }
    lines.join("\n") + "\n"
}

#[test]
fn highlight_snapshots_of_the_examples() {
    let Some(ts) = tree_sitter() else { return };
    let snapshots = grammar_dir().join("test/snapshots");
    let update = std::env::var_os("TROUPE_UPDATE_SNAPSHOTS").is_some();
    for file in troupe_files("examples") {
        let got = highlights(&ts, &file);
        let name = file.file_stem().unwrap().to_string_lossy().into_owned();
        let path = snapshots.join(format!("{name}.highlights"));
        if update {
            std::fs::create_dir_all(&snapshots).unwrap();
            std::fs::write(&path, &got).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&path).unwrap_or_else(|_| {
            panic!(
                "no snapshot {}; run with TROUPE_UPDATE_SNAPSHOTS=1",
                path.display()
            )
        });
        assert!(
            got == want,
            "highlights of {} changed; review and run with TROUPE_UPDATE_SNAPSHOTS=1\n{}",
            file.display(),
            first_difference(&want, &got)
        );
        // Every keyword of the example is highlighted as one.
        for kw in ["workflow", "msg", "act", "return"] {
            assert!(got.contains(&format!(" keyword `{kw}`")), "{name}: {kw}");
        }
    }
}

fn first_difference(want: &str, got: &str) -> String {
    for (i, (a, b)) in want.lines().zip(got.lines()).enumerate() {
        if a != b {
            return format!("line {}: snapshot `{a}`, now `{b}`", i + 1);
        }
    }
    format!(
        "{} lines in the snapshot, {} now",
        want.lines().count(),
        got.lines().count()
    )
}

#[test]
fn the_committed_parser_is_generated_from_grammar_js() {
    let Some(ts) = tree_sitter() else { return };
    if find_tool("node").is_none() {
        // `generate` evaluates grammar.js with node; install-editor.sh
        // installs it, so under CI its absence is a failure.
        assert!(std::env::var_os("CI").is_none(), "node is missing under CI");
        loud_note("!!! NOTE: node is not installed; the generated parser was not compared");
        return;
    }
    let tmp = std::env::temp_dir().join(format!("troupe-ts-gen-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    for f in ["grammar.js", "tree-sitter.json"] {
        std::fs::copy(grammar_dir().join(f), tmp.join(f)).unwrap();
    }
    // ABI 14: what Neovim 0.7–0.10 and current Helix load.
    let out = run(&ts, &tmp, &["generate", "--abi", "14"]);
    assert!(out.status.success(), "{}", text(&out));
    for f in ["src/grammar.json", "src/node-types.json", "src/parser.c"] {
        let fresh = std::fs::read_to_string(tmp.join(f)).unwrap();
        let committed = std::fs::read_to_string(grammar_dir().join(f)).unwrap();
        assert!(
            fresh == committed,
            "{f} is stale: run `tree-sitter generate` in editors/tree-sitter-troupe"
        );
    }
    let _ = std::fs::remove_dir_all(&tmp);
}

/// Writes straight to the process's stderr, past the test harness's output
/// capture, so that a skipped editor test is seen.
fn loud_note(text: &str) {
    use std::io::Write as _;
    let _ = std::io::stderr().write_all(text.as_bytes());
}
