//! Projections of the example workflows in /examples (checked by troupe-check).

use std::path::PathBuf;
use troupe_project::{project, render_text};

fn examples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

fn projected(file: &str) -> String {
    let text = std::fs::read_to_string(examples_dir().join(file)).unwrap();
    let (program, diags) = troupe_check::check_text(&text);
    let program = program.unwrap_or_else(|| panic!("{file} does not check: {diags:?}"));
    let mut out = String::new();
    for w in &program.workflows {
        let p = project(&program, w).unwrap();
        out.push_str(&format!("== workflow {}\n", w.name));
        out.push_str(&render_text(&p, &program, w, None));
    }
    out
}

#[test]
fn reviewed_execution() {
    let text = projected("reviewed_execution.troupe");
    // The Executor takes no part in the `if` and hears nothing of it.
    let executor = text.split("lifeline Executor:").nth(1).unwrap();
    assert!(!executor.contains('κ'));
    insta::assert_snapshot!(text);
}

#[test]
fn consensus() {
    insta::assert_snapshot!(projected("consensus.troupe"));
}

#[test]
fn local_approval() {
    insta::assert_snapshot!(projected("local_approval.troupe"));
}

#[test]
fn train_booking() {
    insta::assert_snapshot!(projected("train_booking.troupe"));
}

/// Every example that checks projects, within the size bound, and the tree
/// and flat forms agree on their sizes' order of magnitude.
#[test]
fn every_example_projects() {
    for entry in std::fs::read_dir(examples_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "troupe") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let (Some(program), _) = troupe_check::check_text(&text) else {
            continue;
        };
        for w in &program.workflows {
            let p = project(&program, w).unwrap();
            let l = w.lifelines.len();
            assert!(
                p.size() <= (3 * l + 2) * w.stmt_count as usize,
                "{}",
                path.display()
            );
        }
    }
}
