//! The binary on hostile input (issue #21): huge expression chains, deep
//! field chains and parentheses end in a diagnostic or a correct result, never
//! a crash; 40,000 diagnostics print capped; a byte order mark is accepted;
//! NaN inputs and computed NaNs run, verify and print as documented in
//! docs/language.md ("Floats").

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A fresh directory for this test's files.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("troupe-hardening-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

fn troupe(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("run troupe")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn workflow_with(expr: &str) -> String {
    format!("workflow w(x: Int @ A) {{\n  act A: y = {expr}\n  return y @ A\n}}\n")
}

/// Every front-end command ends with a diagnostic (exit 1), not a signal.
fn rejected_everywhere(dir: &Path, file: &str) {
    for args in [
        vec!["check", file],
        vec!["project", file],
        vec!["msc", file],
        vec!["run", file, "-i", "x=1"],
    ] {
        let out = troupe(dir, &args);
        let shown = text(&out);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{args:?}: {}",
            &shown[..shown.len().min(2000)]
        );
        assert!(
            shown.contains("too deep"),
            "{args:?}: {}",
            &shown[..shown.len().min(2000)]
        );
    }
}

#[test]
fn a_million_term_chain_is_a_diagnostic_not_a_crash() {
    let dir = scratch("chain");
    let file = write(
        &dir,
        "chain.troupe",
        &workflow_with(&vec!["x"; 1_000_000].join(" + ")),
    );
    rejected_everywhere(&dir, &file);
}

#[test]
fn ten_thousand_deep_fields_parentheses_and_unary_chains_are_diagnostics() {
    let dir = scratch("fields");
    let fields = format!(
        "record R {{ a: R }}\nworkflow w(x: R @ A) {{\n  act A: y = x{}\n  return y @ A\n}}\n",
        ".a".repeat(10_000)
    );
    let cases = [
        ("fields.troupe", fields),
        (
            "parens.troupe",
            workflow_with(&format!("{}x{}", "(".repeat(10_000), ")".repeat(10_000))),
        ),
        (
            "neg.troupe",
            workflow_with(&format!("{}x", "- ".repeat(10_000))),
        ),
        (
            "product.troupe",
            workflow_with(&vec!["x"; 10_000].join(" * ")),
        ),
    ];
    for (name, src) in &cases {
        let file = write(&dir, name, src);
        rejected_everywhere(&dir, &file);
    }
}

#[test]
fn a_chain_at_the_bound_runs_to_the_right_result() {
    let dir = scratch("bound");
    // 256 terms: the deepest chain the parser builds.
    let file = write(
        &dir,
        "ok.troupe",
        &workflow_with(&vec!["x"; 256].join(" + ")),
    );
    let out = troupe(&dir, &["run", &file, "-i", "x=3", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["results"]["y"], 768);
    assert_eq!(json["verified"], true);
    for cmd in ["project", "msc"] {
        let out = troupe(&dir, &[cmd, &file]);
        assert_eq!(out.status.code(), Some(0), "{cmd}: {}", text(&out));
    }
}

#[test]
fn forty_thousand_diagnostics_print_the_first_two_hundred_and_a_count() {
    let dir = scratch("many");
    let mut src = String::from("workflow w(x: Int @ A) {\n");
    for i in 0..40_000 {
        src.push_str(&format!("  act A: y{i} = nope{i}\n"));
    }
    src.push_str("}\n");
    let file = write(&dir, "many.troupe", &src);
    let out = troupe(&dir, &["check", &file]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.matches("[E0301]").count(), 200);
    assert!(
        stdout.contains("… and 39800 more errors in "),
        "{}",
        &stdout[stdout.len().saturating_sub(500)..]
    );
    // The first snippet is the first error, and the summary counts them all.
    assert!(stdout.contains("`nope0` is not bound at A"));
    assert!(!stdout.contains("`nope200` is not bound"));
    assert!(text(&out).contains("40000 errors"));
    // JSON lists every one.
    let out = troupe(&dir, &["check", "--json", &file]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["diagnostics"].as_array().unwrap().len(), 40_000);
}

#[test]
fn a_byte_order_mark_is_accepted_and_positions_ignore_it() {
    let dir = scratch("bom");
    let ok = write(
        &dir,
        "ok.troupe",
        &format!("\u{feff}{}", workflow_with("x + 1")),
    );
    let out = troupe(&dir, &["check", &ok]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = troupe(&dir, &["run", &ok, "-i", "x=1", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let bad = write(
        &dir,
        "bad.troupe",
        &format!("\u{feff}{}", workflow_with("nope")),
    );
    let out = troupe(&dir, &["check", "--json", &bad]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let d = &json["diagnostics"][0];
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(2), Some(14))
    );
    let bad_first_line = write(&dir, "first.troupe", "\u{feff}workflow 1");
    let out = troupe(&dir, &["check", "--json", &bad_first_line]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // `1` is the tenth visible character of line 1.
    assert_eq!(json["diagnostics"][0]["column"], 10);
}

#[test]
fn nan_inputs_and_computed_nans_run_verify_and_print_as_strings() {
    let dir = scratch("nan");
    let input = write(
        &dir,
        "input.troupe",
        "workflow w(x: Float @ A) {\n  act A: y = x * 2.0\n  msg A(y) -> B(y)\n  act B: same = y == y\n  msg B(y, same) -> A(z, s)\n  return (z @ A, s @ A)\n}\n",
    );
    for (arg, shown) in [
        ("x=NaN", "NaN"),
        ("x=inf", "Infinity"),
        ("x=-Infinity", "-Infinity"),
    ] {
        let out = troupe(&dir, &["run", &input, "-i", arg, "--json"]);
        assert_eq!(out.status.code(), Some(0), "{arg}: {}", text(&out));
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(json["verified"], true, "{arg}");
        assert_eq!(json["results"]["z"], shown, "{arg}");
        // IEEE equality: NaN is not equal to itself, an infinity is.
        assert_eq!(json["results"]["s"], arg != "x=NaN", "{arg}");
    }
    let computed = write(
        &dir,
        "computed.troupe",
        "workflow w(x: Float @ A) {\n  act A: zero = x - x\n  act A: y = zero / zero\n  act A: t = \"y is {y}\"\n  msg A(y, t) -> B(y, t)\n  return (y @ B, t @ B)\n}\n",
    );
    let out = troupe(&dir, &["run", &computed, "-i", "x=1.5", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["verified"], true);
    assert_eq!(json["results"]["y"], "NaN");
    assert_eq!(json["results"]["t"], "y is NaN");
}
