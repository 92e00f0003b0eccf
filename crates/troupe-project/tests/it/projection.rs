//! Snapshot and unit tests of the projection on hand-built IR workflows.

use troupe_check::ir::{BinaryOp, LifelineId, StmtId};
use troupe_check::types::Type;
use troupe_project::testing::{Builder, reviewed_plan};
use troupe_project::{Instr, ProjectError, project, render_flat_text, render_text, to_json};

fn ids(names: &[&str], program: &troupe_check::ir::Program) -> Vec<LifelineId> {
    let w = &program.workflows[0];
    names
        .iter()
        .map(|n| LifelineId(w.lifelines.iter().position(|l| l.name == *n).unwrap() as u32))
        .collect()
}

#[test]
fn reviewed_plan_text() {
    let program = reviewed_plan();
    let w = &program.workflows[0];
    let p = project(&program, w).unwrap();
    insta::assert_snapshot!(render_text(&p, &program, w, None));
}

#[test]
fn reviewed_plan_one_lifeline_and_json() {
    let program = reviewed_plan();
    let w = &program.workflows[0];
    let p = project(&program, w).unwrap();
    let reviewer = ids(&["Reviewer"], &program)[0];
    insta::assert_snapshot!(render_text(&p, &program, w, Some(reviewer)));
    let json = to_json(&p, &program, w, Some(reviewer));
    insta::assert_snapshot!(
        serde_json::to_string_pretty(&json)
            .unwrap()
            .replace(&p.constructs[0].tag.hex(), "TAG")
    );
}

#[test]
fn reviewed_plan_flat() {
    let program = reviewed_plan();
    let w = &program.workflows[0];
    let p = project(&program, w).unwrap();
    let flat = p.flatten();
    let text: String = flat
        .iter()
        .map(|f| render_flat_text(f, &program, w))
        .collect::<Vec<_>>()
        .join("\n");
    insta::assert_snapshot!(text);
}

#[test]
fn bystander_gets_no_control_message() {
    let program = reviewed_plan();
    let w = &program.workflows[0];
    let p = project(&program, w).unwrap();
    let [user, planner, reviewer, bystander] =
        ids(&["User", "Planner", "Reviewer", "Bystander"], &program)[..]
    else {
        panic!()
    };
    let c = &p.constructs[0];
    assert_eq!(c.owner, reviewer);
    assert_eq!(c.notify, vec![user, planner]);
    let by = &p.programs[bystander.0 as usize].body;
    assert!(by.iter().all(|i| matches!(
        i,
        Instr::Recv { .. } | Instr::Send { .. } | Instr::Act { .. }
    )));
    assert_eq!(by.len(), 1);
}

/// A nested `if` inside a `while`: the inner owner participates in the loop,
/// lifelines that act only in the inner branch are told about both, a lifeline
/// that acts only after the loop is told about neither.
#[test]
fn nested_participation() {
    let mut b = Builder::new("nested");
    let a = b.lifeline("A");
    let c = b.lifeline("C");
    let d = b.lifeline("D");
    let e = b.lifeline("E");
    let n_a = b.input("n", a, Type::Int);
    let n_c = b.input("n", c, Type::Int);
    let n_d = b.input("n", d, Type::Int);
    let n_e = b.input("n", e, Type::Int);
    let body = vec![b.while_(
        a,
        Builder::binary(BinaryOp::Lt, b.v(n_a), Builder::int(3)),
        |b| {
            vec![b.if_(
                c,
                Builder::binary(BinaryOp::Eq, b.v(n_c), Builder::int(0)),
                |b| vec![b.msg(d, e, &[(n_d, n_e)])],
                |_| vec![],
            )]
        },
        |_| vec![],
    )];
    let mut tail = b.msg(e, d, &[(n_e, n_d)]);
    tail.id = StmtId(3);
    let mut body = body;
    body.push(tail);
    let program = b.finish(body);
    let w = &program.workflows[0];
    let p = project(&program, w).unwrap();
    let outer = p.construct(StmtId(0)).unwrap();
    let inner = p.construct(StmtId(1)).unwrap();
    assert_eq!(outer.notify, vec![c, d, e]);
    assert_eq!(inner.notify, vec![d, e]);
    assert_ne!(outer.tag, inner.tag);
    insta::assert_snapshot!(render_text(&p, &program, w, None));
}

#[test]
fn tags_are_stable_and_depend_on_content() {
    let program = reviewed_plan();
    let w = &program.workflows[0];
    let t1 = project(&program, w).unwrap().constructs[0].tag;
    let t2 = project(&program.clone(), &w.clone()).unwrap().constructs[0].tag;
    assert_eq!(t1, t2);
    // Pinned: a change here breaks compatibility with recorded runs.
    insta::assert_snapshot!(t1.hex());
    let mut renamed = w.clone();
    renamed.name = "other".into();
    assert_ne!(project(&program, &renamed).unwrap().constructs[0].tag, t1);
}

#[test]
fn malformed_ir_is_an_error_not_a_panic() {
    let program = reviewed_plan();
    let mut w = program.workflows[0].clone();
    w.stmt_count = 2;
    assert!(matches!(
        project(&program, &w),
        Err(ProjectError::BadStmtId { .. })
    ));
    let mut w = program.workflows[0].clone();
    w.lifelines.truncate(2);
    assert!(matches!(
        project(&program, &w),
        Err(ProjectError::UnknownLifeline { .. })
    ));
    let mut w = program.workflows[0].clone();
    if let troupe_check::ir::StmtKind::Msg { to, .. } = &mut w.body.stmts[0].kind {
        *to = LifelineId(0);
    }
    assert!(matches!(
        project(&program, &w),
        Err(ProjectError::SelfMessage { .. })
    ));
    // Rendering with names out of range prints placeholders.
    let p = project(&program, &program.workflows[0]).unwrap();
    let mut w = program.workflows[0].clone();
    w.vars.clear();
    assert!(render_text(&p, &program, &w, None).contains("?var#"));
}

#[test]
fn deep_nesting_is_rejected() {
    let mut b = Builder::new("deep");
    let a = b.lifeline("A");
    let c = b.lifeline("C");
    let n = b.input("n", a, Type::Int);
    fn nest(
        b: &mut Builder,
        a: LifelineId,
        n: troupe_check::ir::VarId,
        depth: usize,
    ) -> Vec<troupe_check::ir::Stmt> {
        if depth == 0 {
            return vec![b.act(a, vec![], troupe_check::ir::Call::Expr(b.v(n)))];
        }
        let g = Builder::binary(BinaryOp::Lt, b.v(n), Builder::int(1));
        vec![b.if_(a, g, |b| nest(b, a, n, depth - 1), |_| vec![])]
    }
    let _ = c;
    let body = nest(&mut b, a, n, troupe_project::MAX_NESTING + 1);
    let program = b.finish(body);
    assert_eq!(
        project(&program, &program.workflows[0]),
        Err(ProjectError::TooDeep)
    );
}
