//! The front-end never panics and never hangs: random bytes, random mutations
//! of the examples, and pathological nesting all end in diagnostics.

use proptest::prelude::*;
use std::sync::mpsc;
use std::time::Duration;

/// Checks `text` on a thread with a generous deadline, so that a hang fails
/// the test instead of stalling CI. (A hang detector, not a benchmark.)
fn check_terminates(text: String) {
    let (tx, rx) = mpsc::channel();
    let shown: String = text.chars().take(200).collect();
    std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(move || {
            let result = std::panic::catch_unwind(|| troupe_check::check_text(&text));
            let _ = tx.send(result.map(|(p, d)| (p.is_some(), d.len())));
        })
        .unwrap();
    match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(Ok(_)) => {}
        Ok(Err(_)) => panic!("check panicked on {shown:?}"),
        Err(_) => panic!("check did not finish on {shown:?}"),
    }
}

fn example_texts() -> Vec<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut texts: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "troupe"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    texts.sort();
    texts
}

const FRAGMENTS: &[&str] = &[
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    "\"",
    "\"\"\"",
    "@",
    "->",
    ",",
    ":",
    "=",
    "==",
    "msg ",
    "act ",
    "if ",
    "else ",
    "while ",
    "exit ",
    "return ",
    "workflow ",
    "enum ",
    "llm ",
    "{x}",
    "\\",
    "'",
    "-",
    "not ",
    "//",
    "\n",
    "é",
    "\u{0}",
];

#[derive(Debug, Clone)]
enum Mutation {
    Delete { at: usize, len: usize },
    Insert { at: usize, fragment: usize },
    Duplicate { at: usize, len: usize },
    Truncate { at: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1usize..40).prop_map(|(at, len)| Mutation::Delete { at, len }),
        (any::<usize>(), 0..FRAGMENTS.len())
            .prop_map(|(at, fragment)| Mutation::Insert { at, fragment }),
        (any::<usize>(), 1usize..80).prop_map(|(at, len)| Mutation::Duplicate { at, len }),
        any::<usize>().prop_map(|at| Mutation::Truncate { at }),
    ]
}

/// The nearest char boundary at or below `i`.
fn floor(text: &str, i: usize) -> usize {
    let mut i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn apply(text: &mut String, m: &Mutation) {
    if text.is_empty() {
        return;
    }
    match *m {
        Mutation::Delete { at, len } => {
            let start = floor(text, at % text.len());
            let end = floor(text, start + len);
            text.replace_range(start..end, "");
        }
        Mutation::Insert { at, fragment } => {
            let at = floor(text, at % text.len());
            text.insert_str(at, FRAGMENTS[fragment]);
        }
        Mutation::Duplicate { at, len } => {
            let start = floor(text, at % text.len());
            let end = floor(text, start + len);
            let piece = text[start..end].to_owned();
            text.insert_str(end, &piece);
        }
        Mutation::Truncate { at } => {
            let at = floor(text, at % text.len());
            text.truncate(at);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        check_terminates(String::from_utf8_lossy(&bytes).into_owned());
    }

    #[test]
    fn random_token_soup_never_panics(parts in proptest::collection::vec(0..FRAGMENTS.len(), 0..200)) {
        let text: String = parts.iter().map(|&i| FRAGMENTS[i]).collect::<Vec<_>>().join(" ");
        check_terminates(text);
    }

    #[test]
    fn mutated_examples_never_panic(which in any::<usize>(), mutations in proptest::collection::vec(mutation(), 1..8)) {
        let texts = example_texts();
        let mut text = texts[which % texts.len()].clone();
        for m in &mutations {
            apply(&mut text, m);
        }
        check_terminates(text);
    }
}

#[test]
fn deep_nesting_is_reported_not_recursed() {
    let open_parens = format!(
        "workflow w(x: Int @ A) {{ act A: y = {}x }}",
        "(".repeat(100_000)
    );
    check_terminates(open_parens);
    let blocks = format!(
        "workflow w(x: Int @ A) {{ {} }}",
        "while x > 0 @ A { ".repeat(50_000)
    );
    check_terminates(blocks);
    let unary = format!(
        "workflow w(x: Int @ A) {{ act A: y = {}x }}",
        "- not ".repeat(100_000)
    );
    check_terminates(unary);
    let lists = format!("pure f(n: Int) -> Int = {}", "[".repeat(100_000));
    check_terminates(lists);
    let types = format!("pure f(n: {}Int) -> Int = n", "[".repeat(100_000));
    check_terminates(types);
}

#[test]
fn deep_but_legal_nesting_checks() {
    let depth = 150;
    let mut src = String::from("workflow w(x: Int @ A) {\n");
    for _ in 0..depth {
        src.push_str("if x > 0 @ A {\n");
    }
    src.push_str("msg A(x) -> B(x)\n");
    for _ in 0..depth {
        src.push_str("}\n");
    }
    src.push('}');
    let (program, diagnostics) = troupe_check::check_text(&src);
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    assert!(program.is_some());
}

/// Issue #21: chains of one precedence are parsed by a loop but make
/// left-nested trees; the parser bounds their depth, so checking a
/// million-term chain or a 10,000-deep field chain reports, never overflows.
#[test]
fn huge_chains_are_reported_with_a_location() {
    let chain = format!(
        "workflow w(x: Int @ A) {{\n  act A: y = {}\n  return y @ A\n}}",
        vec!["x"; 1_000_000].join(" + ")
    );
    let fields = format!(
        "record R {{ a: R }}\nworkflow w(x: R @ A) {{\n  act A: y = x{}\n  return y @ A\n}}",
        ".a".repeat(10_000)
    );
    for src in [chain, fields] {
        // The default test thread (2 MiB): stack use is fixed, not per term.
        let (program, diagnostics) = troupe_check::check_text(&src);
        assert!(program.is_none());
        let deep = diagnostics
            .iter()
            .find(|d| d.message == "expression is too deep")
            .expect("reported");
        let lines = troupe_syntax::LineIndex::new(&src);
        let act = src.find("act A").unwrap() as u32;
        assert_eq!(lines.line(deep.span.start), lines.line(act));
    }
    // At the bound the chain checks and evaluates: 256 terms of 3.
    let ok = format!(
        "workflow w(x: Int @ A) {{ act A: y = {} }}",
        vec!["x"; 256].join(" + ")
    );
    let (program, diagnostics) = troupe_check::check_text(&ok);
    let program = program.unwrap_or_else(|| panic!("{diagnostics:?}"));
    let troupe_check::ir::StmtKind::Act {
        call: troupe_check::ir::Call::Expr(e),
        ..
    } = &program.workflows[0].body.stmts[0].kind
    else {
        panic!()
    };
    let env = [troupe_check::Value::Int(3)];
    let value = troupe_check::eval::eval(e, env.as_slice(), &program.types).unwrap();
    assert_eq!(value, troupe_check::Value::Int(768));
}
