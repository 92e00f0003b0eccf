//! The TextMate grammar (`editors/textmate/troupe.tmLanguage.json`),
//! tokenized by VS Code's own engine (vscode-textmate with Oniguruma, run by
//! node): token snapshots of every example, the scopes that matter, and the
//! VS Code extension's copy of the grammar being the same file.
//!
//! Needs node and `npm ci` in `editors/textmate/test` (`.ci/install-editor.sh`
//! does both). Under CI their absence fails the test; on a developer machine
//! the test says so loudly and passes.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn find_node() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("node"))
        .find(|p| p.is_file())
}

/// node, when it and the engine are installed.
fn engine() -> Option<PathBuf> {
    let node = find_node();
    let modules = root().join("editors/textmate/test/node_modules/vscode-textmate");
    match node {
        Some(node) if modules.is_dir() => Some(node),
        _ if std::env::var_os("CI").is_some() => {
            panic!(
                "node or vscode-textmate is missing under CI: .ci/install-editor.sh installs them"
            )
        }
        _ => {
            loud_note(
                "\n!!! NOTE: node or editors/textmate/test/node_modules is missing; the TextMate \
                 grammar test did NOT run.\n!!! Run `bash .ci/install-editor.sh` (CI fails instead of skipping).\n",
            );
            None
        }
    }
}

fn tokens(node: &Path, file: &Path) -> String {
    let out = Command::new(node)
        .arg(root().join("editors/textmate/test/tokenize.mjs"))
        .arg(file)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn examples() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "troupe"))
        .collect();
    files.sort();
    files
}

#[test]
fn the_vscode_extension_ships_the_same_grammar() {
    let a = std::fs::read(root().join("editors/textmate/troupe.tmLanguage.json")).unwrap();
    let b = std::fs::read(root().join("editors/vscode/syntaxes/troupe.tmLanguage.json")).unwrap();
    assert!(
        a == b,
        "copy editors/textmate/troupe.tmLanguage.json to editors/vscode/syntaxes/"
    );
    let grammar: serde_json::Value = serde_json::from_slice(&a).unwrap();
    assert_eq!(grammar["scopeName"], "source.troupe");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root().join("editors/vscode/package.json")).unwrap())
            .unwrap();
    assert_eq!(
        manifest["contributes"]["grammars"][0]["scopeName"],
        "source.troupe"
    );
    assert_eq!(
        manifest["contributes"]["languages"][0]["extensions"][0],
        ".troupe"
    );
}

#[test]
fn textmate_token_snapshots_of_the_examples() {
    let Some(node) = engine() else { return };
    let snapshots = root().join("editors/textmate/test/snapshots");
    let update = std::env::var_os("TROUPE_UPDATE_SNAPSHOTS").is_some();
    for file in examples() {
        let got = tokens(&node, &file);
        let name = file.file_stem().unwrap().to_string_lossy().into_owned();
        let path = snapshots.join(format!("{name}.tokens"));
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
        if got != want {
            let diff = want
                .lines()
                .zip(got.lines())
                .find(|(a, b)| a != b)
                .map(|(a, b)| format!("snapshot `{a}`, now `{b}`"))
                .unwrap_or_else(|| "different lengths".into());
            panic!(
                "TextMate tokens of {} changed ({diff}); review and run with TROUPE_UPDATE_SNAPSHOTS=1",
                file.display()
            );
        }
    }
}

#[test]
fn the_scopes_that_matter_are_assigned() {
    let Some(node) = engine() else { return };
    let got = tokens(&node, &root().join("examples/consensus.troupe"));
    for want in [
        "keyword.declaration.workflow.troupe workflow",
        "entity.name.function.workflow.troupe consensus",
        "keyword.declaration.function.troupe llm",
        "entity.name.function.troupe assess",
        "keyword.other.msg.troupe msg",
        "keyword.other.act.troupe act",
        "entity.name.namespace.lifeline.troupe Bob",
        "keyword.control.troupe while",
        "keyword.operator.logical.troupe and",
        "variable.other.interpolated.troupe case",
        "constant.character.escape.troupe \\n",
        "support.type.builtin.troupe Text",
        "entity.name.type.troupe Verdict",
        "entity.name.function.call.troupe reconsider",
        "constant.numeric.integer.troupe 5",
        "comment.line.double-slash.troupe // Consensus",
    ] {
        assert!(got.contains(want), "no `{want}` in\n{got}");
    }
    // A `"""` string spans lines: its middle line is string, not code.
    let middle = got
        .lines()
        .find(|l| l.ends_with("Reconsider, and answer approve or reject with a reason."))
        .unwrap_or_else(|| panic!("{got}"));
    assert!(middle.contains("string.quoted.triple.troupe"), "{middle}");
}

/// Writes straight to the process's stderr, past the test harness's output
/// capture, so that a skipped editor test is seen.
fn loud_note(text: &str) {
    use std::io::Write as _;
    let _ = std::io::stderr().write_all(text.as_bytes());
}
