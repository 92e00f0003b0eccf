//! Property tests of the projection over random well-typed IR workflows.

use proptest::prelude::*;
use std::collections::HashSet;
use troupe_check::ir::{Program, StmtId};
use troupe_project::flat::{flat_steps, tree_steps};
use troupe_project::testing::{Rng, arb_program, count_stmts};
use troupe_project::{Instr, project};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 300,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Every lifeline that is in `notify` of a construct appears in the local
/// program exactly where the construct is; lifelines outside R ∪ {owner} have
/// no instruction for it.
fn constructs_in(body: &[Instr], out: &mut Vec<StmtId>) {
    for i in body {
        match i {
            Instr::DecideIf(_) | Instr::DecideWhile(_) | Instr::Branch(_) | Instr::Loop(_) => {
                let (stmt, a, b) = match i {
                    Instr::DecideIf(x) => (&x.stmt, &x.then, &x.otherwise),
                    Instr::DecideWhile(x) => (&x.stmt, &x.body, &x.exit),
                    Instr::Branch(x) => (&x.stmt, &x.then, &x.otherwise),
                    Instr::Loop(x) => (&x.stmt, &x.body, &x.exit),
                    _ => unreachable!(),
                };
                out.push(*stmt);
                constructs_in(a, out);
                constructs_in(b, out);
            }
            _ => {}
        }
    }
}

fn check(program: &Program) -> Result<(), TestCaseError> {
    let w = &program.workflows[0];
    let p = project(program, w).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let stmts = count_stmts(&w.body);
    let l = w.lifelines.len();
    // The tight bound (tests/oracle.rs checks the exact size and that the
    // bound is approached): 2 per message, 1 + 2|R| ≤ 2|L| − 1 per construct.
    prop_assert!(
        p.size() <= (2 * l - 1) * stmts,
        "size {} > (2·{l}−1)·{stmts}",
        p.size()
    );

    // Tags are distinct, and each lifeline hears of exactly the constructs it
    // owns or is notified of.
    let tags: HashSet<_> = p.constructs.iter().map(|c| c.tag).collect();
    prop_assert_eq!(tags.len(), p.constructs.len());
    for local in &p.programs {
        let mut seen = Vec::new();
        constructs_in(&local.body, &mut seen);
        seen.sort();
        let expected: Vec<StmtId> = p
            .constructs
            .iter()
            .filter(|c| c.owner == local.lifeline || c.notify.contains(&local.lifeline))
            .map(|c| c.stmt)
            .collect();
        prop_assert_eq!(seen, expected);
    }
    for c in &p.constructs {
        prop_assert!(!c.notify.contains(&c.owner));
        prop_assert!(c.notify.windows(2).all(|w| w[0] < w[1]));
    }

    // Tree and flat forms take the same steps under the same decisions.
    let flat = p.flatten();
    for (tree, flat) in p.programs.iter().zip(&flat) {
        for seed in 0..4u64 {
            let mut r1 = Rng::new(seed);
            let mut r2 = Rng::new(seed);
            let (mut f1, mut f2) = (500usize, 500usize);
            let a = tree_steps(&tree.body, &mut |_| r1.chance(2, 3), &mut f1);
            let b = flat_steps(flat, &mut |_| r2.chance(2, 3), &mut f2);
            prop_assert_eq!(a, b);
        }
    }

    // Moving into flat form gives the same as cloning into it.
    prop_assert_eq!(p.clone().into_flat(), flat);

    // Deterministic: projecting again gives the same result.
    prop_assert_eq!(project(program, w).unwrap(), p);
    Ok(())
}

proptest! {
    #![proptest_config(config())]
    #[test]
    fn projection_properties(program in arb_program()) {
        check(&program)?;
    }
}

#[test]
fn large_workflow_projects_linearly() {
    let program = troupe_project::testing::generate_large(20_000, 50);
    let w = &program.workflows[0];
    let stmts = count_stmts(&w.body);
    assert!(stmts >= 20_000);
    let p = project(&program, w).unwrap();
    assert!(p.size() <= (2 * 50 - 1) * stmts);
}
