//! The IR of the forms of LANGUAGE.md §6 that troupe implements: what the
//! checker carries for `tools:`/`max_steps:`, the desugaring of `for`, the
//! inlining of `call`, and acknowledgements.

use troupe_check::ir::{ActionKind, AnswerKind, Call, ExprKind, StmtKind};

fn corpus(name: &str) -> troupe_check::ir::Program {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus/ok")
        .join(name);
    let loaded = troupe_check::load_file(&path).unwrap();
    let (program, d) = loaded.check();
    program.unwrap_or_else(|| panic!("{d:#?}"))
}

#[test]
fn llm_tools_and_max_steps_are_carried_in_the_ir() {
    let p = corpus("llm_tools.troupe");
    let assist = p.actions.iter().find(|a| a.name == "assist").unwrap();
    let ActionKind::Llm(l) = &assist.kind else {
        panic!("{assist:?}")
    };
    let names: Vec<&str> = l.tools.iter().map(|t| p.action(*t).name.as_str()).collect();
    assert_eq!(names, ["get_user", "check_balance"]);
    assert_eq!(l.max_steps, Some(8));
}

#[test]
fn a_human_action_without_outputs_is_an_acknowledgement() {
    let p = corpus("acknowledge.troupe");
    let notice = p.actions.iter().find(|a| a.name == "notice").unwrap();
    assert!(notice.outputs.is_empty());
    assert!(matches!(&notice.kind, ActionKind::Human(h) if h.answer == AnswerKind::Acknowledge));
}

#[test]
fn a_for_becomes_an_owned_while_over_a_hidden_index() {
    let p = corpus("for_each.troupe");
    let w = &p.workflows[0];
    assert_eq!(w.for_each.len(), 3);
    for f in &w.for_each {
        assert_eq!(f.init.0 + 1, f.stmt.0);
        assert_eq!(
            f.steps,
            [
                troupe_check::ir::StmtId(f.stmt.0 + 1),
                troupe_check::ir::StmtId(f.stmt.0 + 2)
            ]
        );
        assert!(w.var(f.index).name.starts_with('#'));
        assert!(w.is_for_step(f.init) && w.is_for_step(f.steps[0]) && w.is_for_step(f.steps[1]));
        assert!(!w.is_for_step(f.stmt));
    }
    // The first statement after the two `act`s is the loop; its guard
    // compares the index with the list's length.
    let StmtKind::While { guard, body, .. } = &w.body.stmts[2].kind else {
        panic!("{:?}", w.body.stmts[2])
    };
    assert!(matches!(&guard.kind, ExprKind::Binary(_, _, r) if matches!(r.kind, ExprKind::Len(_))));
    assert!(matches!(
        &body.stmts[0].kind,
        StmtKind::Act { call: Call::Expr(e), .. } if matches!(e.kind, ExprKind::Index(..))
    ));
}

#[test]
fn calls_are_inlined_with_fresh_variables_and_recorded() {
    let p = corpus("calls.troupe");
    let main = p.workflow("main").unwrap();
    assert!(!main.imported);
    assert!(p.workflow("sum").unwrap().imported);
    // Three calls written in `main`, two more inlined from `twice`.
    let outer: Vec<&str> = main
        .calls
        .iter()
        .filter(|c| c.depth == 0)
        .map(|c| c.callee.as_str())
        .collect();
    assert_eq!(outer, ["twice", "ping", "sum"]);
    assert_eq!(main.calls.iter().filter(|c| c.depth == 1).count(), 2);
    // The `for` of the imported `sum` came along, renumbered into `main`.
    assert_eq!(main.for_each.len(), 1);
    let sum = main.calls.iter().find(|c| c.callee == "sum").unwrap();
    assert!(sum.contains(main.for_each[0].stmt));
    // Every statement id is used once, in pre-order, 0..stmt_count.
    let mut ids = Vec::new();
    let mut stack = vec![&main.body];
    while let Some(b) = stack.pop() {
        for s in &b.stmts {
            ids.push(s.id.0);
            match &s.kind {
                StmtKind::If {
                    then, otherwise, ..
                } => stack.extend([then, otherwise]),
                StmtKind::While { body, exit, .. } => stack.extend([body, exit]),
                _ => {}
            }
        }
    }
    ids.sort();
    assert_eq!(ids, (0..main.stmt_count).collect::<Vec<_>>());
    // Callee variables are fresh per call (named after the callee, which
    // no source can name), also through a nested call.
    assert!(main.vars.iter().any(|v| v.name == "ping.y"));
    let nested = main
        .vars
        .iter()
        .filter(|v| v.name == "twice.ping.y")
        .count();
    assert_eq!(nested, 4, "two calls of ping in twice, y at P and at Q");
}
