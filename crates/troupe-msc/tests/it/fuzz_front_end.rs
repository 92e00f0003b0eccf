//! A fuzz suite for the front end (issue #21): every input goes through parse
//! → check → project → flatten → local-program rendering → charts (SVG and
//! Mermaid, with and without control) and, for workflows that check, a
//! simulated run whose execution must be a member of ⟦P⟧ and draw as a chart.
//!
//! Targets: random bytes, token soup, grammar-aware mutations of every
//! example and every corpus workflow (token edits, splices between files,
//! statement templates, wrapping in parentheses, `not` and blocks), random
//! deep and long expressions (chains of one precedence, field chains, nested
//! parentheses, unary chains, lists, mixed trees) with an exact oracle for
//! the depth bound, and random well-typed IR workflows.
//!
//! Each target runs its cases on one worker thread with a fixed stack (the
//! bounds make every pass's stack use fixed; a debug build needs a few KiB
//! per level) while the test thread watches the clock: a case that runs
//! longer than [`CASE_DEADLINE`] fails the test with its input, so a hang
//! cannot stall CI. Case counts are sized for the dev profile (about 30,000
//! cases in all).

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use troupe_check::ir::{Program, Workflow};
use troupe_msc::{
    ChartOptions, Decisions, MemberOptions, Semantics, SimError, SimOptions, chart_mermaid,
    chart_svg, execution_chart, simulate,
};

/// The longest one case may take (a hang detector, not a benchmark).
const CASE_DEADLINE: Duration = Duration::from_secs(20);

/// The deepest expression tree the parser builds (troupe_syntax::MAX_EXPR_DEPTH).
const MAX_EXPR_DEPTH: usize = 256;

/// The fewest parentheses (unary minuses, list brackets) around an operand
/// that the parser's nesting bound (troupe_syntax::MAX_DEPTH, 200 levels of
/// recursion, the expression itself counting one) rejects.
const NESTING_LIMIT: usize = 200;

/// What the case being run is, and since when.
type Current = Arc<Mutex<Option<(Instant, String)>>>;

/// Runs `cases` cases of the strategy that `strategy` makes through `test` on
/// a worker thread with a 64 MiB stack, failing on a panic, a failed
/// assertion or a case that overruns the deadline. (The strategy is made on
/// the worker: boxed strategies are not `Send`.)
fn fuzz<S>(
    name: &str,
    cases: u32,
    strategy: fn() -> S,
    test: fn(&S::Value) -> Result<(), TestCaseError>,
) where
    S: Strategy + 'static,
    S::Value: std::fmt::Debug,
{
    let current: Current = Arc::new(Mutex::new(None));
    let shared = current.clone();
    let worker = std::thread::Builder::new()
        .name(name.to_owned())
        .stack_size(64 << 20)
        .spawn(move || {
            let config = Config {
                cases,
                failure_persistence: None,
                // Shrinking re-runs the pipeline many times; a few hundred
                // iterations find a small input without stalling CI.
                max_shrink_iters: 256,
                ..Config::default()
            };
            let mut runner = TestRunner::new(config);
            runner
                .run(&strategy(), |input| {
                    let shown = format!("{input:?}");
                    *shared.lock().unwrap() = Some((Instant::now(), shown));
                    let result = test(&input);
                    *shared.lock().unwrap() = None;
                    result
                })
                .map_err(|e| match e {
                    TestError::Fail(why, input) => format!("{why}: {input:?}"),
                    TestError::Abort(why) => format!("aborted: {why}"),
                })
        })
        .unwrap();
    while !worker.is_finished() {
        std::thread::sleep(Duration::from_millis(50));
        if let Some((start, shown)) = &*current.lock().unwrap()
            && start.elapsed() > CASE_DEADLINE
        {
            let shown: String = shown.chars().take(2_000).collect();
            panic!("{name}: a case ran longer than {CASE_DEADLINE:?}: {shown}");
        }
    }
    if let Err(e) = worker.join().unwrap() {
        let e: String = e.chars().take(4_000).collect();
        panic!("{name}: {e}");
    }
}

/// How far a text got.
#[derive(Debug, PartialEq)]
enum Outcome {
    Rejected(Vec<String>),
    Checked,
}

/// The whole front end on `text`. Every step's invariants are asserted: a
/// checked workflow projects, its simulated runs are members of ⟦P⟧.
fn pipeline(text: &str) -> Result<Outcome, TestCaseError> {
    let (program, diagnostics) = troupe_check::check_text(text);
    let Some(program) = program else {
        prop_assert!(
            diagnostics.iter().any(|d| d.is_error()),
            "no program, but no error either"
        );
        return Ok(Outcome::Rejected(
            diagnostics.into_iter().map(|d| d.message).collect(),
        ));
    };
    for wf in &program.workflows {
        back_end(&program, wf, text.len() as u64)?;
    }
    Ok(Outcome::Checked)
}

/// Projection, renderings, charts and a simulated run of one checked workflow.
fn back_end(program: &Program, wf: &Workflow, seed: u64) -> Result<(), TestCaseError> {
    let projection = troupe_project::project(program, wf)
        .map_err(|e| TestCaseError::fail(format!("a checked workflow does not project: {e}")))?;
    let text = troupe_project::render_text(&projection, program, wf, None);
    prop_assert!(!text.is_empty());
    let _ = troupe_project::to_json(&projection, program, wf, None).to_string();
    for flat in projection.flatten() {
        let _ = troupe_project::render_flat_text(&flat, program, wf);
    }
    for show_control in [false, true] {
        let opts = ChartOptions {
            show_control,
            inline: false,
        };
        prop_assert!(chart_svg(program, wf, &opts).starts_with("<svg"));
        let _ = chart_mermaid(program, wf, &opts);
    }
    let semantics = Semantics::new(program, wf)
        .map_err(|e| TestCaseError::fail(format!("no semantics: {e}")))?;
    let inputs: Vec<_> = wf
        .inputs
        .iter()
        .map(|v| troupe_msc::eval::placeholder(&wf.vars[v.0 as usize].ty, &program.types))
        .collect();
    let opts = SimOptions {
        seed,
        decisions: Decisions::Random { seed },
        loop_bound: Some(3),
        max_steps: 20_000,
    };
    match simulate(program, wf, &projection, &inputs, &opts) {
        Ok(run) => {
            prop_assert!(run.stuck.is_empty(), "a projected run deadlocked");
            let member = semantics.check(
                &run.execution,
                &MemberOptions {
                    control: true,
                    prefix: false,
                },
            );
            prop_assert!(member.is_ok(), "a simulated run is not in ⟦P⟧: {member:?}");
            let chart = execution_chart(program, wf, &run.execution, &ChartOptions::default());
            prop_assert!(!chart.lifelines.is_empty() || wf.lifelines.is_empty());
        }
        // Placeholder values may divide by zero or overflow; the step limit
        // is the simulator's bound, not a failure of the front end.
        Err(SimError::Eval { .. } | SimError::StepLimit(_)) => {}
        Err(e) => return Err(TestCaseError::fail(format!("simulation failed: {e}"))),
    }
    Ok(())
}

// ---- inputs ------------------------------------------------------------

fn sources() -> &'static [String] {
    static SOURCES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    SOURCES.get_or_init(|| {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut texts = Vec::new();
        for dir in [
            root.join("examples"),
            root.join("crates/troupe-check/tests/corpus/ok"),
            root.join("crates/troupe-check/tests/corpus/err"),
        ] {
            let mut paths: Vec<_> = std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "troupe"))
                .collect();
            paths.sort();
            texts.extend(paths.iter().map(|p| std::fs::read_to_string(p).unwrap()));
        }
        assert!(texts.len() > 40, "examples and corpus found");
        texts
    })
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
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    "+",
    "-",
    "*",
    "/",
    "%",
    ".",
    ";",
    "msg ",
    "act ",
    "if ",
    "else ",
    "while ",
    "exit ",
    "return ",
    "workflow ",
    "lifelines ",
    "enum ",
    "record ",
    "llm ",
    "pure ",
    "effect ",
    "human ",
    "tool ",
    "mcp ",
    "extern ",
    "true",
    "false",
    "and ",
    "or ",
    "not ",
    "{x}",
    "\\",
    "'",
    "//",
    "\n",
    "é",
    "\u{0}",
    "\u{feff}",
    "_",
    "0",
    "-1",
    "0.5",
    "99999999999999999999",
    "x",
    "A",
    "B",
    "Int",
    "Text",
    "[Int]",
];

/// Whole statements, spliced in at random places.
const TEMPLATES: &[&str] = &[
    "msg A(x) -> B(x)\n",
    "msg B(1) -> A(1)\n",
    "act A: y = x + 1\n",
    "act A: x = x * 2\n",
    "if x > 0 @ A { msg A(x) -> B(x) } else { msg A(0) -> B(x) }\n",
    "while x < 3 @ A { act A: x = x + 1 } exit { msg A(x) -> C(x) }\n",
    "return x @ A\n",
    "lifelines A, B, C\n",
    "act A: t = \"{x} and {y}\"\n",
];

/// One token-level or structural edit. Positions are taken modulo the text.
#[derive(Debug, Clone)]
enum Mutation {
    DeleteToken(usize),
    ReplaceToken(usize, usize),
    InsertFragment(usize, usize),
    DuplicateTokens(usize, usize),
    SwapTokens(usize, usize),
    /// Put a token of the text somewhere else (names, operators the file uses).
    CopyToken(usize, usize),
    WrapInParens(usize, usize),
    PrefixNot(usize),
    WrapInBlock(usize, usize),
    InsertTemplate(usize, usize),
    /// A line of another source.
    Splice(usize, usize, usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let n = FRAGMENTS.len();
    prop_oneof![
        any::<usize>().prop_map(Mutation::DeleteToken),
        (any::<usize>(), 0..n).prop_map(|(a, b)| Mutation::ReplaceToken(a, b)),
        (any::<usize>(), 0..n).prop_map(|(a, b)| Mutation::InsertFragment(a, b)),
        (any::<usize>(), 1usize..30).prop_map(|(a, b)| Mutation::DuplicateTokens(a, b)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapTokens(a, b)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::CopyToken(a, b)),
        (any::<usize>(), 1usize..6).prop_map(|(a, b)| Mutation::WrapInParens(a, b)),
        any::<usize>().prop_map(Mutation::PrefixNot),
        (any::<usize>(), 1usize..20).prop_map(|(a, b)| Mutation::WrapInBlock(a, b)),
        (any::<usize>(), 0..TEMPLATES.len()).prop_map(|(a, b)| Mutation::InsertTemplate(a, b)),
        (any::<usize>(), any::<usize>(), any::<usize>())
            .prop_map(|(a, b, c)| Mutation::Splice(a, b, c)),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

/// Byte ranges of the text's tokens, roughly as the lexer sees them: names
/// and numbers, strings, and single punctuation characters.
fn tokens(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c.is_ascii_alphanumeric() || c == b'_' {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
        } else if c == b'"' {
            i += 1;
            while i < bytes.len() && bytes[i] != b'"' && bytes[i] != b'\n' {
                i += 1;
            }
            i = (i + 1).min(bytes.len());
        } else {
            i += text[i..].chars().next().map_or(1, char::len_utf8);
        }
        while !text.is_char_boundary(i) {
            i += 1;
        }
        out.push((start, i));
    }
    out
}

fn apply(text: &mut String, m: &Mutation) {
    let toks = tokens(text);
    let tok = |k: usize| toks.get(k % toks.len().max(1)).copied();
    let at = |k: usize, text: &str| {
        let mut i = k % (text.len() + 1);
        while !text.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    match *m {
        Mutation::DeleteToken(k) => {
            if let Some((s, e)) = tok(k) {
                text.replace_range(s..e, "");
            }
        }
        Mutation::ReplaceToken(k, f) => {
            if let Some((s, e)) = tok(k) {
                text.replace_range(s..e, FRAGMENTS[f]);
            }
        }
        Mutation::InsertFragment(k, f) => {
            let i = tok(k).map_or(0, |(s, _)| s);
            text.insert_str(i, FRAGMENTS[f]);
        }
        Mutation::DuplicateTokens(k, len) => {
            if let Some((s, _)) = tok(k) {
                let last = toks[(k % toks.len() + len).min(toks.len() - 1)].1;
                let piece = text[s..last].to_owned();
                text.insert_str(last, &piece);
            }
        }
        Mutation::SwapTokens(a, b) => {
            if let (Some(x), Some(y)) = (tok(a), tok(b)) {
                let (x, y) = if x.0 <= y.0 { (x, y) } else { (y, x) };
                if x.1 <= y.0 {
                    let (tx, ty) = (text[x.0..x.1].to_owned(), text[y.0..y.1].to_owned());
                    text.replace_range(y.0..y.1, &tx);
                    text.replace_range(x.0..x.1, &ty);
                }
            }
        }
        Mutation::CopyToken(a, b) => {
            if let (Some(x), Some(y)) = (tok(a), tok(b)) {
                let piece = format!(" {} ", &text[x.0..x.1]);
                text.insert_str(y.0, &piece);
            }
        }
        Mutation::WrapInParens(k, len) => {
            if let Some((s, _)) = tok(k) {
                let last = toks[(k % toks.len() + len - 1).min(toks.len() - 1)].1;
                text.insert(last, ')');
                text.insert(s, '(');
            }
        }
        Mutation::PrefixNot(k) => {
            if let Some((s, _)) = tok(k) {
                text.insert_str(s, "not ");
            }
        }
        Mutation::WrapInBlock(k, len) => {
            if let Some((s, _)) = tok(k) {
                let last = toks[(k % toks.len() + len - 1).min(toks.len() - 1)].1;
                text.insert_str(last, "\n}\n");
                text.insert_str(s, "while true @ A {\n");
            }
        }
        Mutation::InsertTemplate(k, t) => {
            let i = at(k, text);
            let i = text[..i].rfind('\n').map_or(0, |n| n + 1);
            text.insert_str(i, TEMPLATES[t]);
        }
        Mutation::Splice(k, which, line) => {
            let other = &sources()[which % sources().len()];
            let lines: Vec<&str> = other.lines().collect();
            if !lines.is_empty() {
                let piece = format!("{}\n", lines[line % lines.len()]);
                let i = at(k, text);
                let i = text[..i].rfind('\n').map_or(0, |n| n + 1);
                text.insert_str(i, &piece);
            }
        }
        Mutation::Truncate(k) => {
            let i = at(k, text);
            text.truncate(i);
        }
    }
}

fn mutated_source() -> impl Strategy<Value = String> {
    (any::<usize>(), proptest::collection::vec(mutation(), 1..6)).prop_map(|(which, ms)| {
        let mut text = sources()[which % sources().len()].clone();
        for m in &ms {
            apply(&mut text, m);
        }
        text
    })
}

// ---- expressions -------------------------------------------------------

/// A random expression and the depth of its tree as the parser counts it.
fn expression() -> impl Strategy<Value = (String, usize)> {
    let leaf = prop_oneof![
        Just(("x".to_owned(), 1)),
        Just(("r".to_owned(), 1)),
        Just(("1".to_owned(), 1)),
        Just(("2.5".to_owned(), 1)),
        Just(("\"s{x}\"".to_owned(), 1)),
        Just(("true".to_owned(), 1)),
        Just(("r.n".to_owned(), 2)),
    ];
    leaf.prop_recursive(12, 64, 4, |inner| {
        prop_oneof![
            (
                inner.clone(),
                prop::sample::select(&["+", "-", "*", "/", "%", "==", "<", "and", "or"][..]),
                inner.clone()
            )
                .prop_map(|((a, da), op, (b, db))| (format!("({a}) {op} ({b})"), da.max(db) + 2)),
            inner
                .clone()
                .prop_map(|(a, d)| (format!("not ({a})"), d + 2)),
            proptest::collection::vec(inner.clone(), 0..4).prop_map(|items| {
                let depth = items.iter().map(|(_, d)| *d).max().unwrap_or(0) + 1;
                let text = items
                    .into_iter()
                    .map(|(t, _)| t)
                    .collect::<Vec<_>>()
                    .join(", ");
                (format!("[{text}]"), depth)
            }),
        ]
    })
}

#[derive(Debug, Clone)]
enum Long {
    /// `x op x op …` with `n` terms of one precedence level.
    Chain(usize, usize),
    /// `r.a.a… .n` with `n` field accesses.
    Fields(usize),
    /// `n` parentheses around `x`.
    Parens(usize),
    /// `n` unary minuses (with spaces: no literal folding) before `x`.
    Negations(usize),
    /// `n` nested list literals.
    Lists(usize),
    /// A chain of `n` random expressions.
    Mixed(Vec<(String, usize)>),
}

const LEVELS: &[&[&str]] = &[&["+", "-"], &["*", "/", "%"], &["and"], &["or"]];

fn long() -> impl Strategy<Value = Long> {
    // Mostly short and near the bound; rarely very long (a million terms is
    // tested once, in troupe-syntax and through the binary).
    let near = prop_oneof![
        4 => 1usize..40,
        4 => (MAX_EXPR_DEPTH - 4)..(MAX_EXPR_DEPTH + 4),
        2 => 40usize..3_000,
        1 => Just(100_000usize),
    ];
    prop_oneof![
        (near.clone(), 0..LEVELS.len()).prop_map(|(n, l)| Long::Chain(n, l)),
        prop_oneof![
            1usize..40,
            (MAX_EXPR_DEPTH - 4)..(MAX_EXPR_DEPTH + 4),
            40usize..10_000
        ]
        .prop_map(Long::Fields),
        prop_oneof![1usize..300, Just(100_000usize)].prop_map(Long::Parens),
        prop_oneof![1usize..300, Just(100_000usize)].prop_map(Long::Negations),
        prop_oneof![1usize..300, Just(100_000usize)].prop_map(Long::Lists),
        proptest::collection::vec(expression(), 1..300).prop_map(Long::Mixed),
    ]
}

/// The source of a `Long`, and the depth of its tree when it is well formed.
fn long_source(l: &Long) -> (String, usize) {
    let (expr, depth) = match l {
        Long::Chain(n, level) => {
            let ops = LEVELS[*level];
            let operand = if *level >= 2 { "b" } else { "x" };
            let mut s = String::with_capacity(n * 4);
            s.push_str(operand);
            for i in 1..*n {
                s.push(' ');
                s.push_str(ops[i % ops.len()]);
                s.push(' ');
                s.push_str(operand);
            }
            (s, *n)
        }
        Long::Fields(n) => (format!("r{}.n", ".a".repeat(*n - 1)), n + 1),
        Long::Parens(n) => (format!("{}x{}", "(".repeat(*n), ")".repeat(*n)), n + 1),
        Long::Negations(n) => (format!("{}x", "- ".repeat(*n)), n + 1),
        Long::Lists(n) => (format!("{}x{}", "[".repeat(*n), "]".repeat(*n)), n + 1),
        Long::Mixed(items) => {
            let mut depth = 0;
            let mut s = String::new();
            for (i, (t, d)) in items.iter().enumerate() {
                if i > 0 {
                    s.push_str(" + ");
                }
                s.push('(');
                s.push_str(t);
                s.push(')');
                depth = depth.max(d + 1) + usize::from(i > 0);
            }
            (s, depth)
        }
    };
    let src = format!(
        "record R {{ a: R, n: Int }}\nworkflow w(x: Int @ A, r: R @ A, b: Bool @ A) {{\n  act A: y = {expr}\n  msg A(y) -> B(y)\n  return y @ B\n}}\n"
    );
    (src, depth)
}

fn check_long(l: &Long) -> Result<(), TestCaseError> {
    let (src, depth) = long_source(l);
    let outcome = pipeline(&src)?;
    let too_deep = match &outcome {
        Outcome::Rejected(messages) => messages.iter().any(|m| m.contains("too deep")),
        Outcome::Checked => false,
    };
    match l {
        // Exact: a well-typed shape is rejected exactly when it is too deep.
        // (Parentheses, unary operators and lists also meet the parser's
        // nesting bound of 200, which says "nesting is too deep".)
        Long::Chain(..) | Long::Fields(_) => {
            prop_assert_eq!(too_deep, depth > MAX_EXPR_DEPTH, "{:?}", outcome);
            if depth <= MAX_EXPR_DEPTH {
                prop_assert_eq!(&outcome, &Outcome::Checked);
            }
        }
        Long::Parens(n) | Long::Negations(n) | Long::Lists(n) => {
            prop_assert_eq!(too_deep, *n >= NESTING_LIMIT, "{:?}", outcome);
            if *n < NESTING_LIMIT {
                prop_assert_eq!(&outcome, &Outcome::Checked);
            }
        }
        Long::Mixed(_) => {
            if depth > MAX_EXPR_DEPTH + 2 {
                prop_assert!(too_deep, "depth {depth}: {:?}", outcome);
            }
        }
    }
    Ok(())
}

// ---- the targets -------------------------------------------------------

#[test]
fn random_bytes() {
    fuzz(
        "random_bytes",
        6_000,
        || proptest::collection::vec(any::<u8>(), 0..300),
        |bytes| pipeline(&String::from_utf8_lossy(bytes)).map(drop),
    );
}

#[test]
fn token_soup() {
    fuzz(
        "token_soup",
        6_000,
        || proptest::collection::vec(0..FRAGMENTS.len(), 0..120),
        |parts| {
            let text: String = parts
                .iter()
                .map(|&i| FRAGMENTS[i])
                .collect::<Vec<_>>()
                .join(" ");
            pipeline(&text).map(drop)
        },
    );
}

#[test]
fn mutated_examples_and_corpus() {
    fuzz(
        "mutated_examples_and_corpus",
        12_000,
        mutated_source,
        |text| pipeline(text).map(drop),
    );
}

#[test]
fn every_source_unmutated_goes_through_the_pipeline() {
    // The seeds of the mutations: every ok file and example checks and runs.
    let mut checked = 0;
    for text in sources() {
        if pipeline(text).unwrap() == Outcome::Checked {
            checked += 1;
        }
    }
    assert!(checked >= 5, "{checked}");
}

#[test]
fn deep_and_long_expressions() {
    fuzz("deep_and_long_expressions", 3_000, long, check_long);
}

#[test]
fn random_well_typed_workflows() {
    fuzz(
        "random_well_typed_workflows",
        3_000,
        troupe_project::testing::arb_program,
        |program| {
            for wf in &program.workflows {
                back_end(program, wf, wf.stmt_count.into())?;
            }
            Ok(())
        },
    );
}
