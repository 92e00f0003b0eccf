//! The editor features on the repository's examples, in process.

use troupe_lsp::Analysis;
use troupe_lsp::analysis::{CompletionKind, ContractCache};

fn example(name: &str) -> String {
    let path = format!("{}/../../examples/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(path).unwrap()
}

fn analyse(text: &str) -> Analysis {
    let base = std::path::PathBuf::from(format!("{}/../../examples", env!("CARGO_MANIFEST_DIR")));
    Analysis::new(text.to_owned(), Some(&base), &mut ContractCache::default())
}

/// The byte offset of the `n`th (0-based) occurrence of `needle`, plus `skip`.
fn nth(text: &str, needle: &str, n: usize, skip: usize) -> usize {
    text.match_indices(needle).nth(n).unwrap().0 + skip
}

#[test]
fn hover_shows_a_variables_type_and_lifeline() {
    let text = example("consensus.troupe");
    let a = analyse(&text);
    assert!(a.program.is_some(), "{:?}", a.diagnostics);
    // `b_reason` in `msg Bob(b, b_reason) -> Alice(b, b_reason)`, read at Bob.
    let at = nth(&text, "msg Bob(b, b_reason)", 0, "msg Bob(b, ".len());
    let (hover, _) = a.hover(at).unwrap();
    assert!(hover.contains("b_reason: Text"), "{hover}");
    assert!(hover.contains("lifeline **Bob**"), "{hover}");
    // The same name received at Alice is Alice's variable.
    let at = nth(&text, "-> Alice(b, b_reason)", 0, "-> Alice(b, ".len());
    let (hover, _) = a.hover(at).unwrap();
    assert!(hover.contains("lifeline **Alice**"), "{hover}");
    // `a` is an enum-typed variable.
    let at = nth(&text, "act Alice: a, a_reason", 0, "act Alice: ".len());
    assert!(a.hover(at).unwrap().0.contains("a: Verdict"));
}

#[test]
fn hover_shows_an_actions_signature_and_body_and_a_lifelines_participation() {
    let text = example("consensus.troupe");
    let a = analyse(&text);
    let at = nth(&text, "= assess(case)", 0, 2);
    let (hover, _) = a.hover(at).unwrap();
    assert!(
        hover.contains("llm assess(case: Text) -> (verdict: Verdict, reason: Text)"),
        "{hover}"
    );
    assert!(hover.contains("prompt: \"Assess this case"), "{hover}");
    let at = nth(&text, "act Bob:", 0, 4);
    let (hover, _) = a.hover(at).unwrap();
    assert!(hover.contains("takes part in:"), "{hover}");
    assert!(
        hover.contains("receives decisions of: Alice (`while a != b and round < 5`"),
        "{hover}"
    );
    let at = nth(&text, "lifelines Alice", 0, "lifelines ".len());
    let (hover, _) = a.hover(at).unwrap();
    assert!(
        hover.contains("decides `while a != b and round < 5`"),
        "{hover}"
    );
}

#[test]
fn definition_and_references_respect_lifelines() {
    let text = example("consensus.troupe");
    let a = analyse(&text);
    // `case` read at Bob is defined by the receive in the first msg.
    let read = nth(
        &text,
        "act Bob: b, b_reason = assess(case)",
        0,
        "act Bob: b, b_reason = assess(".len(),
    );
    let def = a.definition(read).unwrap();
    assert_eq!(
        def.start as usize,
        nth(&text, "-> Bob(case)", 0, "-> Bob(".len())
    );
    // Alice's `case` is the workflow input.
    let read = nth(
        &text,
        "act Alice: a, a_reason = assess(case)",
        0,
        "act Alice: a, a_reason = assess(".len(),
    );
    let def = a.definition(read).unwrap();
    assert_eq!(def.start as usize, nth(&text, "case: Text @ Alice", 0, 0));
    // References of Bob's `case`: its receive and three reads at Bob.
    let refs = a.references(read, true);
    assert!(
        refs.iter()
            .all(|s| s.start as usize != nth(&text, "-> Bob(case)", 0, 7))
    );
    let bob = a.references(nth(&text, "-> Bob(case)", 0, 7), true);
    assert_eq!(bob.len(), 3, "{bob:?}");
    // An enum type and its use.
    let ty = a
        .definition(nth(&text, "verdict: Verdict", 0, "verdict: ".len()))
        .unwrap();
    assert_eq!(&text[ty.range()], "Verdict");
}

#[test]
fn rename_changes_every_occurrence_and_refuses_clashes() {
    let text = example("consensus.troupe");
    let a = analyse(&text);
    let at = nth(&text, "lifelines Alice, Bob", 0, "lifelines Alice, ".len());
    let spans = a.rename(at, "Robert").unwrap();
    let mut renamed = text.clone();
    let mut sorted = spans.clone();
    sorted.sort_by_key(|s| std::cmp::Reverse(s.start));
    for s in sorted {
        renamed.replace_range(s.range(), "Robert");
    }
    let code: Vec<&str> = renamed
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect();
    assert!(code.iter().all(|l| !l.contains("Bob")), "{renamed}");
    assert_eq!(
        spans.len(),
        8,
        "the lifelines line, five messages, two acts: {spans:?}"
    );
    let after = analyse(&renamed);
    assert!(after.program.is_some(), "{:?}", after.diagnostics);
    assert!(a.rename(at, "Alice").is_err());
    assert!(a.rename(at, "while").is_err());
    assert!(a.rename(at, "9x").is_err());
}

#[test]
fn the_missing_msg_fix_makes_the_file_check() {
    let text =
        "workflow w(task: Text @ User) {\n  act Planner: plan = task\n  return plan @ Planner\n}\n";
    let a = analyse(text);
    let d = a
        .diagnostics
        .iter()
        .find(|d| d.code.as_str() == "E0301")
        .unwrap();
    let fixes = a.fixes(d.span);
    let fix = fixes
        .iter()
        .find(|f| f.title.contains("msg User(task) -> Planner(task)"))
        .unwrap();
    let mut fixed = text.to_owned();
    for (span, new) in fix.edits.iter().rev() {
        fixed.replace_range(span.range(), new);
    }
    assert!(
        fixed.contains("  msg User(task) -> Planner(task)\n  act Planner"),
        "{fixed}"
    );
    let after = analyse(&fixed);
    assert!(after.program.is_some(), "{:?}", after.diagnostics);
}

#[test]
fn did_you_mean_hints_become_fixes() {
    let text = "pure inc(n: Int) -> Int = n + 1\nworkflow w(x: Int @ A) {\n  act A: y = inx(x)\n  return y @ A\n}\n";
    let a = analyse(text);
    let d = a
        .diagnostics
        .iter()
        .find(|d| d.code.as_str() == "E0401")
        .unwrap();
    let fixes = a.fixes(d.span);
    assert!(
        fixes
            .iter()
            .any(|f| f.edits == vec![(d.span, "inc".to_owned())]),
        "{fixes:?}"
    );
}

#[test]
fn completion_offers_the_variables_of_the_lifeline_in_scope() {
    let text = example("consensus.troupe");
    let at = nth(
        &text,
        "act Bob: b, b_reason = assess(case)",
        0,
        "act Bob: b, b_reason = assess(".len(),
    );
    let a = analyse(&text);
    let items = a.completions(at);
    let vars: Vec<&str> = items
        .iter()
        .filter(|c| c.kind == CompletionKind::Variable)
        .map(|c| c.label.as_str())
        .collect();
    assert_eq!(vars, vec!["case"], "{items:?}");
    assert!(
        items
            .iter()
            .any(|c| c.kind == CompletionKind::Action && c.label == "reconsider")
    );
    assert!(
        items
            .iter()
            .any(|c| c.kind == CompletionKind::Keyword && c.label == "msg")
    );
    assert!(
        items
            .iter()
            .any(|c| c.kind == CompletionKind::Lifeline && c.label == "Alice")
    );
    // After `@` only lifelines.
    let at = nth(&text, "round < 5 @ ", 0, "round < 5 @ ".len());
    let items = a.completions(at);
    assert!(
        items.iter().all(|c| c.kind == CompletionKind::Lifeline) && items.len() == 2,
        "{items:?}"
    );
}

#[test]
fn projection_and_chart_of_the_workflow_under_the_cursor() {
    let text = example("consensus.troupe");
    let a = analyse(&text);
    let at = nth(&text, "act Bob:", 0, 4);
    let p = a.projection(at).unwrap();
    assert!(p.contains("Bob"), "{p}");
    assert!(!p.contains("lifeline Alice"), "{p}");
    let chart = a.chart(at, false).unwrap();
    assert!(chart.starts_with("sequenceDiagram"), "{chart}");
}

#[test]
fn every_example_and_corpus_file_indexes_and_outlines() {
    let root = format!("{}/../..", env!("CARGO_MANIFEST_DIR"));
    let mut seen = 0;
    for dir in [
        "examples",
        "crates/troupe-check/tests/corpus/ok",
        "crates/troupe-check/tests/corpus/err",
    ] {
        for entry in std::fs::read_dir(format!("{root}/{dir}")).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "troupe") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let a = analyse(&text);
            for o in a.outline() {
                assert!(!o.name.is_empty());
            }
            // Every byte offset answers without a panic.
            for off in (0..=text.len()).step_by(7) {
                let _ = a.hover(off);
                let _ = a.completions(off);
                let _ = a.references(off, true);
            }
            seen += 1;
        }
    }
    assert!(seen > 60, "{seen}");
}

/// Applies the fix titled with `title_part` and returns the new text.
fn apply_fix(text: &str, code: &str, title_part: &str) -> String {
    let a = analyse(text);
    let d = a
        .diagnostics
        .iter()
        .find(|d| d.code.as_str() == code)
        .unwrap_or_else(|| panic!("no {code} in {:?}", a.diagnostics));
    let fixes = a.fixes(d.span);
    let fix = fixes
        .iter()
        .find(|f| f.title.contains(title_part))
        .unwrap_or_else(|| panic!("no fix `{title_part}` in {fixes:?}"));
    let mut fixed = text.to_owned();
    let mut edits = fix.edits.clone();
    edits.sort_by_key(|(s, _)| std::cmp::Reverse(s.start));
    for (span, new) in edits {
        fixed.replace_range(span.range(), &new);
    }
    fixed
}

#[test]
fn the_other_mechanical_fixes_make_the_file_check() {
    let cases = [
        (
            "E0407",
            "Add `C`",
            "workflow w(x: Int @ A) {\n  lifelines A, B\n  msg A(x) -> C(x)\n  return x @ C\n}\n",
        ),
        (
            "E0404",
            "Bind the 2 output(s)",
            "pure two(n: Int) -> (a: Int, b: Int) = n\nworkflow w(x: Int @ A) {\n  act A: two(x)\n  return x @ A\n}\n",
        ),
        (
            "E0002",
            "Close the string",
            "workflow w(x: Int @ A) {\n  act A: t = \"open\n  return x @ A\n}\n",
        ),
    ];
    for (code, title, text) in cases {
        let fixed = apply_fix(text, code, title);
        let after = analyse(&fixed);
        assert!(
            after.diagnostics.iter().all(|d| d.code.as_str() != code),
            "{code}: {fixed}\n{:?}",
            after.diagnostics
        );
    }
}

#[test]
fn interpolations_fields_and_tools_resolve_on_the_train_booking_example() {
    let text = example("train_booking.troupe");
    let a = analyse(&text);
    assert!(a.program.is_some(), "{:?}", a.diagnostics);
    // Agent's `origin` is read inside the summary's `{origin}` hole.
    let hole = nth(&text, "\"{origin} to", 0, 2);
    let refs = a.references(hole, true);
    let def = a.definition(hole).unwrap();
    assert_eq!(
        def.start as usize,
        nth(
            &text,
            "-> Agent(user_id, origin",
            0,
            "-> Agent(user_id, ".len()
        )
    );
    assert!(
        refs.len() >= 4,
        "receive, quote_fare, summary, book_ticket: {refs:?}"
    );
    // `customer.account`: the field of the record Customer.
    let field = nth(&text, "customer.account", 0, "customer.".len());
    let (hover, _) = a.hover(field).unwrap();
    assert!(
        hover.contains("account: Text") && hover.contains("record `Customer`"),
        "{hover}"
    );
    assert_eq!(
        a.definition(field).unwrap().start as usize,
        nth(&text, "account: Text }", 0, 0)
    );
    // `server: booking` names the mcp declaration.
    let server = nth(&text, "server: booking", 0, "server: ".len());
    assert_eq!(
        a.definition(server).unwrap().start as usize,
        nth(&text, "mcp booking", 0, 4)
    );
    // An enum value in a guard: `print` of Delivery.
    let value = nth(&text, "delivery == print", 0, "delivery == ".len());
    assert!(
        a.hover(value)
            .unwrap()
            .0
            .contains("value of enum `Delivery`")
    );
    // Agent's `outcome` is bound in both branches: one symbol.
    let at_user = nth(&text, "return outcome @ User", 0, "return ".len());
    assert_eq!(
        a.references(at_user, true).len(),
        5,
        "four receives and the return"
    );
}

#[test]
fn hover_on_a_causal_form_says_what_it_means_and_whose_events_it_reads() {
    let text = example("causal_refund.troupe");
    let a = analyse(&text);
    assert!(a.program.is_some(), "{:?}", a.diagnostics);
    let at = nth(&text, "not at(Ledger", 0, "not a".len());
    let (hover, span) = a.hover(at).unwrap();
    assert!(hover.contains("at(Ledger, frozen)"), "{hover}");
    assert!(
        hover.contains("latest event of Ledger that Clerk has causally seen"),
        "{hover}"
    );
    assert!(hover.contains("names are Ledger's variables"), "{hover}");
    assert_eq!(&text[span.range()], "at(Ledger, frozen)");
    let at = nth(&text, "if seen(Manager)", 0, "if s".len());
    let (hover, _) = a.hover(at).unwrap();
    assert!(hover.contains("a variable of Manager"), "{hover}");
    // Inside the form, names are still symbols: `frozen` is Ledger's input.
    let at = nth(&text, "at(Ledger, frozen)", 0, "at(Ledger, f".len());
    assert!(a.hover(at).is_none_or(|(h, _)| !h.contains("**at")));
}

/// Names inside causal forms are the symbols of the lifeline the form
/// says: `frozen` in `at(Ledger, frozen)` is Ledger's input, `ok` in
/// `seen(Manager).ok` is the Manager's variable, and the lifelines they
/// name are occurrences of the workflow's lifelines.
#[test]
fn definition_inside_a_causal_form_follows_the_lifeline_it_names() {
    let text = example("causal_refund.troupe");
    let a = analyse(&text);
    assert!(a.program.is_some(), "{:?}", a.diagnostics);
    let frozen = nth(&text, "not at(Ledger, frozen)", 0, "not at(Ledger, f".len());
    let def = a.definition(frozen).unwrap();
    assert_eq!(
        def.start as usize,
        nth(&text, "frozen: Bool @ Ledger", 0, 0),
        "{}",
        &text[def.range()]
    );
    let ok = nth(&text, "seen(Manager).ok", 0, "seen(Manager).".len());
    let def = a.definition(ok).unwrap();
    let bound = nth(&text, "act Manager: ok", 0, "act Manager: ".len());
    assert_eq!(def.start as usize, bound, "{}", &text[def.range()]);
    // The reads inside the guard are references of those variables.
    let refs = a.references(bound, true);
    assert!(
        refs.iter().any(|s| s.start as usize == ok),
        "seen(Manager).ok is not a reference of Manager's ok: {refs:?}"
    );
    let ledger = nth(&text, "not at(Ledger", 0, "not at(".len());
    let def = a.definition(ledger).unwrap();
    assert_eq!(&text[def.range()], "Ledger");
}
