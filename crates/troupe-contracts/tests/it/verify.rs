//! Workflow verification against tool contracts, end to end: `.troupe` text
//! with an `mcp` server whose `contracts:` sidecar is written to a temporary
//! directory, checked, then verified.

use std::path::Path;

use proptest::prelude::*;
use troupe_contracts::{verify_workflows, verify_workflows_in_source};
use troupe_syntax::{Code, Diagnostic, LineIndex, Severity};

/// Checks `text` (which must be well-typed), writes the sidecars beside it
/// and verifies it.
fn verify(text: &str, files: &[(&str, &str)]) -> Vec<Diagnostic> {
    let dir = tempfile::tempdir().unwrap();
    for (name, content) in files {
        std::fs::write(dir.path().join(name), content).unwrap();
    }
    let (program, diagnostics) = troupe_check::check_text(text);
    let program = program.unwrap_or_else(|| panic!("{diagnostics:#?}\n{text}"));
    let with_lines = verify_workflows_in_source(&program, text, dir.path());
    let without = verify_workflows(&program, dir.path());
    let codes = |ds: &[Diagnostic]| ds.iter().map(|d| (d.code, d.span)).collect::<Vec<_>>();
    assert_eq!(codes(&with_lines), codes(&without), "same findings");
    with_lines
}

/// (code, line) of every finding.
fn found(text: &str, diagnostics: &[Diagnostic]) -> Vec<(Code, u32)> {
    let lines = LineIndex::new(text);
    diagnostics
        .iter()
        .map(|d| (d.code, lines.line(d.span.start)))
        .collect()
}

/// The 1-based line of the first line containing `needle`.
fn line_of(text: &str, needle: &str) -> u32 {
    text.lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("`{needle}` not in\n{text}")) as u32
        + 1
}

// ---------------------------------------------------------------------------
// A train-booking-like workflow and its broken variants.

const BOOKING_SIDECAR: &str = r#"{
  "get_user": {"transactional": false, "requires_confirmation": false,
               "failure_modes": [{"name": "MissingSlots", "description": "-", "retryable": true}]},
  "check_balance": {"transactional": false, "requires_confirmation": false,
                    "arguments": [
                      {"name": "account", "description": "The account", "domain": {"kind": "free_text"}, "required": true},
                      {"name": "amount", "description": "The amount", "domain": {"kind": "numeric"}, "required": true}],
                    "failure_modes": [{"name": "MissingSlots", "description": "-", "retryable": true}]},
  "book_ticket": {"transactional": true, "requires_confirmation": true,
                  "confirmation_shows": ["account", "price"],
                  "failure_modes": [
                    {"name": "insufficient_funds", "description": "The balance does not cover the price.", "retryable": false},
                    {"name": "ConfirmationDeclined", "description": "-", "retryable": false}],
                  "relations": [
                    {"kind": "requires", "tool": "check_balance",
                     "bindings": [{"this": "account", "other": "account"}, {"this": "price", "other": "amount"}]},
                    {"kind": "requires", "tool": "get_user", "bindings": [{"this": "user", "other": "id"}]},
                    {"kind": "precedes", "tool": "nothing_declared"}]},
  "not_declared_here": {"transactional": true, "requires_confirmation": true}
}"#;

const BOOKING_DECLS: &str = r#"record Customer { id: Text, email: Text, account: Text }
record Ticket { id: Text, price: Float }
mcp booking { command: "booking-server" contracts: "booking.contracts.json" }
tool get_user(user_id: Text) -> Customer { server: booking }
tool check_balance(account: Text, amount: Float) -> (valid: Bool, sufficient: Bool) { server: booking }
tool book_ticket(account: Text, user: Text, price: Float) -> Ticket { server: booking }
human confirm_booking(summary: Text) -> Bool { ask: "Book this ticket?\n{summary}" }
"#;

const BOOKING: &str = r#"workflow booking(user_id: Text @ User, price: Float @ User) {
  lifelines User, Agent, Bank
  msg User(user_id, price) -> Agent(user_id, price)
  act Agent: customer = get_user(user_id)
  act Agent: account = customer.account
  msg Agent(account, price) -> Bank(account, price)
  act Bank: valid, sufficient = check_balance(account, price)
  msg Bank(valid, sufficient) -> Agent(valid, sufficient)
  if valid and sufficient @ Agent {
    act Agent: summary = "{price} EUR from {account}"
    msg Agent(summary) -> User(summary)
    act User: confirmed = confirm_booking(summary)
    msg User(confirmed) -> Agent(confirmed)
    if confirmed @ Agent {
      act Agent: ticket = book_ticket(customer.account, customer.id, price)
      msg Agent(ticket.id) -> User(outcome)
    } else {
      msg Agent("booking cancelled") -> User(outcome)
    }
  } else {
    msg Agent("declined") -> User(outcome)
  }
}
"#;

fn booking(workflow: &str) -> (String, Vec<Diagnostic>) {
    let text = format!("{BOOKING_DECLS}{workflow}");
    let diagnostics = verify(&text, &[("booking.contracts.json", BOOKING_SIDECAR)]);
    (text, diagnostics)
}

fn replaced(from: &str, to: &str) -> String {
    assert!(BOOKING.contains(from), "{from}");
    BOOKING.replacen(from, to, 1)
}

/// The variant fails with exactly `code` at the line of `book_ticket(`.
fn fails_at_booking(workflow: &str, code: Code) -> Diagnostic {
    let (text, diagnostics) = booking(workflow);
    assert_eq!(
        found(&text, &diagnostics),
        vec![(code, line_of(&text, "book_ticket(customer"))],
        "{diagnostics:#?}"
    );
    diagnostics.into_iter().next().unwrap()
}

#[test]
fn the_booking_workflow_passes() {
    let (_, diagnostics) = booking(BOOKING);
    assert_eq!(diagnostics, vec![]);
}

#[test]
fn a_booking_without_the_balance_check_fails() {
    let workflow = replaced(
        "act Bank: valid, sufficient = check_balance(account, price)",
        "act Bank: valid = true\n  act Bank: sufficient = true",
    );
    let d = fails_at_booking(&workflow, Code::MissingRequirement);
    assert!(d.message.contains("`check_balance`"), "{}", d.message);
    assert!(
        d.message.contains("is not called before `book_ticket`"),
        "{}",
        d.message
    );
    assert!(d.hint.is_some());
}

#[test]
fn a_balance_check_of_another_account_fails() {
    let workflow = replaced(
        "msg Agent(account, price) -> Bank(account, price)",
        "msg Agent(customer.email, price) -> Bank(account, price)",
    );
    let d = fails_at_booking(&workflow, Code::MissingRequirement);
    assert!(
        d.message.contains("is called with `account` = `account` while `book_ticket` gets `account` = `customer.account`"),
        "{}",
        d.message
    );
    assert!(d.message.contains("(line 14)"), "{}", d.message);
    assert_eq!(d.related.len(), 1);
}

#[test]
fn a_recomputed_price_is_another_value() {
    let workflow = replaced(
        "book_ticket(customer.account, customer.id, price)",
        "book_ticket(customer.account, customer.id, price * 1.0)",
    );
    let (text, diagnostics) = booking(&workflow);
    // Another value than the one checked, and than the one the person saw.
    let line = line_of(&text, "book_ticket(customer");
    assert_eq!(
        found(&text, &diagnostics),
        vec![
            (Code::UnconfirmedTransaction, line),
            (Code::MissingRequirement, line)
        ]
    );
    assert!(
        diagnostics[0].message.contains("does not show `price`"),
        "{}",
        diagnostics[0].message
    );
}

#[test]
fn a_booking_for_another_user_fails() {
    let workflow = replaced(
        "book_ticket(customer.account, customer.id, price)",
        "book_ticket(customer.account, user_id, price)",
    );
    let d = fails_at_booking(&workflow, Code::MissingRequirement);
    assert!(d.message.contains("`get_user`"), "{}", d.message);
}

#[test]
fn a_booking_without_the_users_confirmation_fails() {
    let workflow = replaced("if confirmed @ Agent {", "if valid @ Agent {");
    let d = fails_at_booking(&workflow, Code::UnconfirmedTransaction);
    assert!(
        d.message.contains(
            "on the path where `if valid and sufficient @ Agent` (line 16) is true and `if valid @ Agent` (line 21) is true"
        ),
        "{}",
        d.message
    );
    assert!(
        d.message
            .contains("the confirmation `confirm_booking` (line 19) guards no `if`"),
        "{}",
        d.message
    );
}

#[test]
fn a_booking_in_the_else_branch_of_the_confirmation_fails() {
    let workflow = replaced(
        r#"      act Agent: ticket = book_ticket(customer.account, customer.id, price)
      msg Agent(ticket.id) -> User(outcome)
    } else {
      msg Agent("booking cancelled") -> User(outcome)
    }"#,
        r#"      msg Agent("booking cancelled") -> User(outcome)
    } else {
      act Agent: ticket = book_ticket(customer.account, customer.id, price)
      msg Agent(ticket.id) -> User(outcome)
    }"#,
    );
    let d = fails_at_booking(&workflow, Code::UnconfirmedTransaction);
    assert!(
        d.message
            .contains("it runs when `if confirmed @ Agent` (line 21) is false"),
        "{}",
        d.message
    );
}

#[test]
fn a_booking_after_a_loop_that_confirms_fails() {
    let workflow = replaced(
        r#"    act User: confirmed = confirm_booking(summary)
    msg User(confirmed) -> Agent(confirmed)
    if confirmed @ Agent {"#,
        r#"    act User: tries = 0
    while tries < 3 @ User {
      act User: confirmed = confirm_booking(summary)
      act User: tries = tries + 1
    }
    if true @ Agent {"#,
    );
    let d = fails_at_booking(&workflow, Code::UnconfirmedTransaction);
    assert!(
        d.message
            .contains("inside `while tries < 3 @ User` (line 20) guards no `if`")
            || d.message.contains("guards no `if`"),
        "{}",
        d.message
    );
}

#[test]
fn a_confirmation_variable_set_before_a_loop_fails() {
    // `confirmed` is `true` when the loop runs zero times.
    let workflow = replaced(
        r#"    act User: confirmed = confirm_booking(summary)
    msg User(confirmed) -> Agent(confirmed)"#,
        r#"    act User: confirmed = true
    act User: again = true
    while again @ User {
      act User: confirmed = confirm_booking(summary)
      act User: again = not confirmed
    }
    msg User(confirmed) -> Agent(confirmed)"#,
    );
    let d = fails_at_booking(&workflow, Code::UnconfirmedTransaction);
    assert!(
        d.message.contains("tests `confirmed`, which is not a person's answer on the path where `while again @ User` (line 21) runs its body zero times"),
        "{}",
        d.message
    );
}

#[test]
fn asking_until_confirmed_then_booking_on_exit_passes() {
    let workflow = replaced(
        r#"    act User: confirmed = confirm_booking(summary)
    msg User(confirmed) -> Agent(confirmed)
    if confirmed @ Agent {"#,
        r#"    act User: confirmed = false
    while not confirmed @ User {
      act User: confirmed = confirm_booking(summary)
    } exit {
      msg User(confirmed) -> Agent(confirmed)
    }
    if confirmed @ Agent {"#,
    );
    let (_, diagnostics) = booking(&workflow);
    assert_eq!(diagnostics, vec![]);
}

#[test]
fn a_confirmation_on_one_branch_of_an_earlier_if_fails() {
    let workflow = replaced(
        r#"    act User: confirmed = confirm_booking(summary)
    msg User(confirmed) -> Agent(confirmed)"#,
        r#"    if price > 100.0 @ Agent {
      msg Agent(summary) -> User(summary2)
      act User: confirmed = confirm_booking(summary2)
      msg User(confirmed) -> Agent(confirmed)
    } else {
      act Agent: confirmed = true
    }"#,
    );
    let d = fails_at_booking(&workflow, Code::UnconfirmedTransaction);
    assert!(
        d.message.contains(
            "`if confirmed @ Agent` (line 26) tests `confirmed`, which is not a person's answer on the path where `if price > 100.0 @ Agent` (line 19) is false"
        ),
        "{}",
        d.message
    );
}

#[test]
fn a_balance_check_on_one_branch_only_fails_and_names_the_path() {
    let workflow = replaced(
        "  act Bank: valid, sufficient = check_balance(account, price)",
        "  act Bank: valid = false\n  act Bank: sufficient = false\n  if price > 0.0 @ Bank {\n    act Bank: valid, sufficient = check_balance(account, price)\n  }",
    );
    let d = fails_at_booking(&workflow, Code::MissingRequirement);
    assert!(
        d.message.contains("on the path where `if price > 0.0 @ Bank` (line 16) is false, `check_balance` is not called before `book_ticket`"),
        "{}",
        d.message
    );
}

#[test]
fn using_the_booked_ticket_unchecked_warns_and_a_guard_silences_it() {
    let returned = replaced(
        "msg Agent(\"declined\") -> User(outcome)\n  }\n",
        "msg Agent(\"declined\") -> User(outcome)\n  }\n  return outcome @ User\n",
    );
    let (text, diagnostics) = booking(&returned);
    assert_eq!(
        found(&text, &diagnostics),
        vec![(
            Code::UnhandledFailure,
            line_of(&text, "book_ticket(customer")
        )]
    );
    let d = &diagnostics[0];
    assert_eq!(d.severity, Severity::Warning);
    assert!(d.message.contains("`insufficient_funds`"), "{}", d.message);
    assert!(!d.message.contains("ConfirmationDeclined"), "{}", d.message);
    assert!(
        d.hint
            .as_deref()
            .unwrap()
            .contains("does not cover the price")
    );

    let inspected = returned.replace(
        "      msg Agent(ticket.id) -> User(outcome)\n",
        "      if ticket.price > 0.0 @ Agent { act Agent: id = ticket.id } else { act Agent: id = \"failed\" }\n      msg Agent(id) -> User(outcome)\n",
    );
    let (_, diagnostics) = booking(&inspected);
    assert_eq!(diagnostics, vec![]);
}

#[test]
fn an_unusable_sidecar_is_reported_at_the_server() {
    let text = format!("{BOOKING_DECLS}{BOOKING}");
    for files in [
        vec![],
        vec![("booking.contracts.json", "{\"book_ticket\": [")],
    ] {
        let diagnostics = verify(&text, &files);
        assert_eq!(
            found(&text, &diagnostics),
            vec![(Code::ContractUnavailable, 3)]
        );
        assert!(diagnostics[0].message.contains("`booking`"));
    }
}

#[test]
fn a_binding_naming_no_parameter_is_a_contract_mismatch() {
    let sidecar = BOOKING_SIDECAR.replace(
        r#"{"this": "user", "other": "id"}"#,
        r#"{"this": "customer", "other": "id"}"#,
    );
    let text = format!("{BOOKING_DECLS}{BOOKING}");
    let diagnostics = verify(&text, &[("booking.contracts.json", &sidecar)]);
    assert_eq!(
        found(&text, &diagnostics),
        vec![(Code::ContractUnavailable, 6)]
    );
}

// ---------------------------------------------------------------------------
// The example in the repository.

#[test]
fn the_train_booking_example_has_no_contract_errors() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let text = std::fs::read_to_string(root.join("train_booking.troupe")).unwrap();
    let (program, diagnostics) = troupe_check::check_text(&text);
    let program = program.unwrap_or_else(|| panic!("{diagnostics:#?}"));
    // Whether or not the example names its sidecar yet, verify it with one.
    let text = if text.contains("contracts:") {
        text
    } else {
        text.replacen(
            "mcp booking {",
            "mcp booking { contracts: \"train_booking.contracts.json\"",
            1,
        )
    };
    let (with_sidecar, diagnostics) = troupe_check::check_text(&text);
    let with_sidecar = with_sidecar.unwrap_or_else(|| panic!("{diagnostics:#?}"));
    let all = verify_workflows_in_source(&with_sidecar, &text, &root);
    // The example relies on results without inspecting them: warnings only.
    assert!(
        all.iter().all(|d| d.code == Code::UnhandledFailure),
        "{all:#?}"
    );
    let errors: Vec<_> = all.into_iter().filter(Diagnostic::is_error).collect();
    assert_eq!(errors, vec![]);
    let _ = verify_workflows(&program, &root);
}

// ---------------------------------------------------------------------------
// Generic properties: random tool and parameter names, generated workflows,
// compared with a reference that enumerates paths.

#[derive(Debug, Clone)]
enum Gen {
    /// Call the required tool (`true`) or the dependent one, at lifeline
    /// A or B, with input `a` or `b`.
    Call {
        required: bool,
        at_b: bool,
        arg_b: bool,
    },
    /// Ask for a confirmation at U and send it to A.
    Ask,
    If {
        guard: Guard,
        then: Vec<Gen>,
        otherwise: Vec<Gen>,
    },
    While {
        body: Vec<Gen>,
        exit: Vec<Gen>,
    },
}

#[derive(Debug, Clone, Copy)]
enum Guard {
    C,
    Ok,
    NotOk,
    OkAndC,
    OkOrC,
}

fn gen_block() -> impl Strategy<Value = Vec<Gen>> {
    let leaf = prop_oneof![
        4 => (any::<bool>(), any::<bool>(), any::<bool>())
            .prop_map(|(required, at_b, arg_b)| Gen::Call { required, at_b, arg_b }),
        1 => Just(Gen::Ask),
    ];
    let guard = prop_oneof![
        Just(Guard::C),
        Just(Guard::Ok),
        Just(Guard::NotOk),
        Just(Guard::OkAndC),
        Just(Guard::OkOrC)
    ];
    let stmt = leaf.prop_recursive(3, 24, 3, move |inner| {
        let block = prop::collection::vec(inner, 0..3);
        prop_oneof![
            (guard.clone(), block.clone(), block.clone()).prop_map(|(guard, then, otherwise)| {
                Gen::If {
                    guard,
                    then,
                    otherwise,
                }
            }),
            (block.clone(), block).prop_map(|(body, exit)| Gen::While { body, exit }),
        ]
    });
    prop::collection::vec(stmt, 1..5)
}

#[derive(Debug, Clone)]
struct Names {
    required: String,
    dependent: String,
    p: String,
    q: String,
}

fn names() -> impl Strategy<Value = Names> {
    ("[a-z]{3,8}", "[a-z]{3,8}", "[a-z]{2,6}", "[a-z]{2,6}").prop_filter_map(
        "distinct names",
        |(r, d, p, q)| {
            let names = Names {
                required: format!("t_{r}"),
                dependent: format!("u_{d}"),
                p: format!("p_{p}"),
                q: format!("q_{q}"),
            };
            (r != d).then_some(names)
        },
    )
}

/// Renders the workflow; returns its text and, per generated call of the
/// dependent tool, its line.
fn render(names: &Names, block: &[Gen]) -> String {
    let mut out = format!(
        "mcp srv {{ command: \"x\" contracts: \"c.json\" }}\n\
         tool {r}({q}: Text) -> Bool {{ server: srv }}\n\
         tool {d}({p}: Text) -> Bool {{ server: srv }}\n\
         human ask(x: Text) -> Bool {{ ask: \"ok {{x}}?\" }}\n\
         workflow w(a: Text @ A, b: Text @ A, c: Bool @ A) {{\n\
         lifelines A, B, U\n\
         msg A(a, b) -> B(a, b)\n\
         msg A(a) -> U(a)\n\
         act A: ok = false\n",
        r = names.required,
        d = names.dependent,
        p = names.p,
        q = names.q,
    );
    write_block(names, block, &mut out);
    out.push_str("}\n");
    out
}

fn write_block(names: &Names, block: &[Gen], out: &mut String) {
    for stmt in block {
        match stmt {
            Gen::Call {
                required,
                at_b,
                arg_b,
            } => {
                let tool = if *required {
                    &names.required
                } else {
                    &names.dependent
                };
                let at = if *at_b { "B" } else { "A" };
                let arg = if *arg_b { "b" } else { "a" };
                out.push_str(&format!("act {at}: _ = {tool}({arg})\n"));
            }
            Gen::Ask => out.push_str("act U: yes = ask(a)\nmsg U(yes) -> A(ok)\n"),
            Gen::If {
                guard,
                then,
                otherwise,
            } => {
                let g = match guard {
                    Guard::C => "c",
                    Guard::Ok => "ok",
                    Guard::NotOk => "not ok",
                    Guard::OkAndC => "c and ok",
                    Guard::OkOrC => "ok or c",
                };
                out.push_str(&format!("if {g} @ A {{\n"));
                write_block(names, then, out);
                out.push_str("} else {\n");
                write_block(names, otherwise, out);
                out.push_str("}\n");
            }
            Gen::While { body, exit } => {
                out.push_str("while c @ A {\n");
                write_block(names, body, out);
                out.push_str("} exit {\n");
                write_block(names, exit, out);
                out.push_str("}\n");
            }
        }
    }
}

/// Reference for E0602: the lines of dependent calls that some path (ifs
/// both ways, loops zero or one time) reaches with no earlier required call
/// with the same argument. A state is which arguments (`a`, `b`) the
/// required tool was called with; a set of states stands for the paths.
fn reference_requirements(block: &[Gen]) -> Vec<u32> {
    type States = std::collections::BTreeSet<(bool, bool)>;
    fn walk(block: &[Gen], mut states: States, line: &mut u32, bad: &mut Vec<u32>) -> States {
        for stmt in block {
            match stmt {
                Gen::Call {
                    required, arg_b, ..
                } => {
                    if *required {
                        states = states
                            .into_iter()
                            .map(|(a, b)| if *arg_b { (a, true) } else { (true, b) })
                            .collect();
                    } else if states.iter().any(|&(a, b)| if *arg_b { !b } else { !a }) {
                        bad.push(*line);
                    }
                    *line += 1;
                }
                Gen::Ask => *line += 2,
                Gen::If {
                    then, otherwise, ..
                } => {
                    *line += 1;
                    let t = walk(then, states.clone(), line, bad);
                    *line += 1;
                    let e = walk(otherwise, states, line, bad);
                    *line += 1;
                    states = t.into_iter().chain(e).collect();
                }
                Gen::While { body, exit } => {
                    *line += 1;
                    let after_one = walk(body, states.clone(), line, bad);
                    *line += 1;
                    let mut start = states;
                    start.extend(after_one);
                    states = walk(exit, start, line, bad);
                    *line += 1;
                }
            }
        }
        states
    }
    let mut bad = Vec::new();
    walk(
        block,
        [(false, false)].into_iter().collect(),
        &mut 10,
        &mut bad,
    );
    bad
}

/// Reference for E0601, by enumerating paths (ifs both ways, every loop
/// run zero to three times: an answer, another call and the checked call
/// may each need their own iteration) with a concrete clock: a dependent call is
/// fine on a path if an enclosing branch confirmed it (`ok`, `c and ok` true;
/// `not ok` false) with an answer asked after the last dependent call before
/// it, and its argument is the one the question shows (`a`), or if it lies in
/// a branch that confirms while `ok` is the literal `false` (never taken).
/// A call is reported if some path reaches it not fine. `None` when there
/// are too many paths to enumerate.
fn reference_confirmations(block: &[Gen]) -> Option<Vec<u32>> {
    const VACUOUS: u32 = u32::MAX;
    #[derive(Clone)]
    struct State {
        clock: u32,
        /// `None`: the literal `false`; else when the answer was asked.
        ok: Option<u32>,
        last_call: Option<u32>,
    }
    /// Line numbers of every statement, in the layout of `write_block`.
    fn number(block: &[Gen], line: &mut u32, out: &mut Vec<u32>) {
        for stmt in block {
            out.push(*line);
            match stmt {
                Gen::Call { .. } => *line += 1,
                Gen::Ask => *line += 2,
                Gen::If {
                    then, otherwise, ..
                } => {
                    *line += 1;
                    number(then, line, out);
                    *line += 1;
                    number(otherwise, line, out);
                    *line += 1;
                }
                Gen::While { body, exit } => {
                    *line += 1;
                    number(body, line, out);
                    *line += 1;
                    number(exit, line, out);
                    *line += 1;
                }
            }
        }
    }
    struct Walk<'a> {
        lines: &'a [u32],
        bad: std::collections::BTreeSet<u32>,
        budget: usize,
    }
    /// Runs `block[i..]` (statement numbers from `index`), then `rest`.
    fn run<'g>(
        w: &mut Walk<'_>,
        stmts: &[(&'g Gen, usize)],
        confirmed_by: &[u32],
        st: State,
        rest: &mut Vec<Vec<(&'g Gen, usize)>>,
        rest_conf: &mut Vec<Vec<u32>>,
    ) {
        if w.budget == 0 {
            return;
        }
        w.budget -= 1;
        let Some((&(stmt, index), tail)) = stmts.split_first() else {
            if let (Some(next), Some(conf)) = (rest.pop(), rest_conf.pop()) {
                run(w, &next, &conf, st, rest, rest_conf);
                rest.push(next);
                rest_conf.push(conf);
            }
            return;
        };
        let mut st = st;
        match stmt {
            Gen::Call {
                required, arg_b, ..
            } => {
                if !required {
                    let fine = confirmed_by.iter().any(|&asked| {
                        asked == VACUOUS || (st.last_call.is_none_or(|c| asked > c) && !*arg_b)
                    });
                    if !fine {
                        w.bad.insert(w.lines[index]);
                    }
                    st.clock += 1;
                    st.last_call = Some(st.clock);
                }
                run(w, tail, confirmed_by, st, rest, rest_conf);
            }
            Gen::Ask => {
                st.clock += 1;
                st.ok = Some(st.clock);
                run(w, tail, confirmed_by, st, rest, rest_conf);
            }
            Gen::If {
                guard,
                then,
                otherwise,
            } => {
                let children = |b: &'g [Gen], first: usize| -> (Vec<(&'g Gen, usize)>, usize) {
                    let mut out = Vec::new();
                    let mut i = first;
                    for g in b {
                        out.push((g, i));
                        i += count(g);
                    }
                    (out, i)
                };
                let (t, after_then) = children(then, index + 1);
                let (e, _) = children(otherwise, after_then);
                // (branch, needs ok true, confirms)
                let (then_needs, then_confirms, else_needs, else_confirms) = match guard {
                    Guard::Ok | Guard::OkAndC => (true, true, false, false),
                    Guard::NotOk => (false, false, true, true),
                    Guard::C | Guard::OkOrC => (false, false, false, false),
                };
                for (body, needs, confirms) in [
                    (t, then_needs, then_confirms),
                    (e, else_needs, else_confirms),
                ] {
                    let _ = needs;
                    let mut conf = confirmed_by.to_vec();
                    if confirms {
                        conf.push(st.ok.unwrap_or(VACUOUS));
                    }
                    rest.push(tail.to_vec());
                    rest_conf.push(confirmed_by.to_vec());
                    run(w, &body, &conf, st.clone(), rest, rest_conf);
                    rest.pop();
                    rest_conf.pop();
                }
            }
            Gen::While { body, exit } => {
                let mut b = Vec::new();
                let mut i = index + 1;
                for g in body {
                    b.push((g, i));
                    i += count(g);
                }
                let mut e = Vec::new();
                for g in exit {
                    e.push((g, i));
                    i += count(g);
                }
                for times in 0..=3 {
                    let mut seq: Vec<(&Gen, usize)> = Vec::new();
                    for _ in 0..times {
                        seq.extend(b.iter().copied());
                    }
                    seq.extend(e.iter().copied());
                    seq.extend(tail.iter().copied());
                    run(w, &seq, confirmed_by, st.clone(), rest, rest_conf);
                }
            }
        }
    }
    fn count(g: &Gen) -> usize {
        1 + match g {
            Gen::If {
                then, otherwise, ..
            } => then.iter().chain(otherwise).map(count).sum(),
            Gen::While { body, exit } => body.iter().chain(exit).map(count).sum(),
            _ => 0,
        }
    }
    let mut lines = Vec::new();
    number(block, &mut 10, &mut lines);
    let mut top = Vec::new();
    let mut i = 0;
    for g in block {
        top.push((g, i));
        i += count(g);
    }
    let mut w = Walk {
        lines: &lines,
        bad: Default::default(),
        budget: 200_000,
    };
    let start = State {
        clock: 0,
        ok: None,
        last_call: None,
    };
    run(&mut w, &top, &[], start, &mut Vec::new(), &mut Vec::new());
    (w.budget > 0).then(|| w.bad.into_iter().collect())
}

fn lines_with(text: &str, diagnostics: &[Diagnostic], code: Code) -> Vec<u32> {
    found(text, diagnostics)
        .into_iter()
        .filter(|&(c, _)| c == code)
        .map(|(_, l)| l)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn requirements_hold_exactly_when_every_path_calls_first(
        names in names(),
        block in gen_block(),
    ) {
        let text = render(&names, &block);
        let sidecar = format!(
            r#"{{"{d}": {{"transactional": false, "requires_confirmation": false,
                 "relations": [{{"kind": "requires", "tool": "{r}",
                                 "bindings": [{{"this": "{p}", "other": "{q}"}}]}}]}},
                "{r}": {{"transactional": false, "requires_confirmation": false}}}}"#,
            d = names.dependent, r = names.required, p = names.p, q = names.q
        );
        let diagnostics = verify(&text, &[("c.json", &sidecar)]);
        prop_assert_eq!(
            lines_with(&text, &diagnostics, Code::MissingRequirement),
            reference_requirements(&block),
            "{}", text
        );
        prop_assert_eq!(diagnostics.len(), lines_with(&text, &diagnostics, Code::MissingRequirement).len());
    }

    #[test]
    fn transactions_run_exactly_inside_confirmed_branches(
        names in names(),
        block in gen_block(),
    ) {
        let text = render(&names, &block);
        let sidecar = format!(
            r#"{{"{d}": {{"transactional": true, "requires_confirmation": true,
                          "confirmation_shows": ["{p}"]}},
                "{r}": {{"transactional": false, "requires_confirmation": false}}}}"#,
            d = names.dependent, r = names.required, p = names.p
        );
        let reference = reference_confirmations(&block);
        prop_assume!(reference.is_some(), "too many paths");
        let diagnostics = verify(&text, &[("c.json", &sidecar)]);
        prop_assert_eq!(
            Some(lines_with(&text, &diagnostics, Code::UnconfirmedTransaction)),
            reference,
            "{}", text
        );
        prop_assert_eq!(diagnostics.len(), lines_with(&text, &diagnostics, Code::UnconfirmedTransaction).len());
    }

    /// Arbitrary sidecar contents never make verification panic.
    #[test]
    fn arbitrary_sidecars_never_panic(
        names in names(),
        block in gen_block(),
        sidecar in "\\PC{0,200}",
        relation_tool in "[a-z_]{1,8}",
        this in "[a-z_]{1,6}",
        other in "[a-z_]{1,6}",
    ) {
        let text = render(&names, &block);
        verify(&text, &[("c.json", &sidecar)]);
        let structured = format!(
            r#"{{"{d}": {{"transactional": true, "requires_confirmation": true,
                 "failure_modes": [{{"name": "x", "description": "y", "retryable": true}}],
                 "relations": [{{"kind": "requires", "tool": "{relation_tool}",
                                 "bindings": [{{"this": "{this}", "other": "{other}"}}]}}]}}}}"#,
            d = names.dependent
        );
        verify(&text, &[("c.json", &structured)]);
    }
}

#[test]
fn long_workflows_verify_in_one_pass() {
    let mut text = String::from(
        "mcp s { command: \"x\" contracts: \"c.json\" }\n\
         tool check(x: Text) -> Bool { server: s }\n\
         tool pay(x: Text) -> Text { server: s }\n\
         human ok(x: Text) -> Bool { ask: \"ok {x}?\" }\n\
         workflow w(a: Text @ A, c: Bool @ A) {\n",
    );
    for i in 0..3000 {
        text.push_str(&format!(
            "act A: v{i} = a + \"{i}\"\n\
             act A: ok{i} = check(v{i})\n\
             msg A(v{i}) -> U(v{i})\n\
             act U: yes{i} = ok(v{i})\n\
             msg U(yes{i}) -> A(yes{i})\n\
             if yes{i} and c @ A {{ act A: r{i} = pay(v{i}) }}\n"
        ));
    }
    text.push_str("act A: _ = pay(a)\n}\n");
    let sidecar = r#"{"pay": {"transactional": true, "requires_confirmation": true,
        "relations": [{"kind": "requires", "tool": "check", "bindings": [{"this": "x", "other": "x"}]}]},
        "check": {"transactional": false, "requires_confirmation": false}}"#;
    let diagnostics = verify(&text, &[("c.json", sidecar)]);
    let lines = text.lines().count() as u32;
    assert_eq!(
        found(&text, &diagnostics),
        vec![
            (Code::UnconfirmedTransaction, lines - 1),
            (Code::MissingRequirement, lines - 1)
        ]
    );
}
