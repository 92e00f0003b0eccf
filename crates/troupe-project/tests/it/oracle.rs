//! The projection against an oracle that shares no code with it: the local
//! programs, R of every construct, the tags and the size, all computed
//! naively from the *global* workflow (`troupe_oracle::reference`), on
//! random workflows of up to a few hundred statements (a quarter of them
//! with `par` regions and coregions) whose seeds vary per run
//! (`TROUPE_TEST_SEED` repeats one).

use troupe_check::ir::{Program, StmtId};
use troupe_oracle::generate::{self, Shape};
use troupe_oracle::reference;
use troupe_oracle::seeds::{Rng, Seeds, repeat_hint};
use troupe_project::project;
use troupe_project::testing::Builder;

fn shape(seed: u64) -> Shape {
    let mut rng = Rng::new(seed);
    match seed % 4 {
        0 => Shape::small(&mut rng),
        // `par` regions and coregions: one local `par` per lifeline with a
        // part, holding its parts in branch order.
        1 => Shape::concurrent(&mut rng, 300),
        _ => Shape::large(&mut rng, 300),
    }
}

fn first_difference(a: &[reference::RefInstr], b: &[reference::RefInstr]) -> String {
    let i = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let show = |x: Option<&reference::RefInstr>| {
        let mut s = format!("{x:?}");
        s.truncate(600);
        s
    };
    format!(
        "instruction {i} differs (lengths {} and {}):\n  expected {}\n  projected {}",
        a.len(),
        b.len(),
        show(a.get(i)),
        show(b.get(i))
    )
}

/// Everything the projection must agree on with the oracle.
fn check(program: &Program) -> Result<(), String> {
    let w = &program.workflows[0];
    let p = project(program, w).map_err(|e| e.to_string())?;

    // The local programs, instruction by instruction (payloads, guards,
    // recipients and both blocks of every construct).
    let expected = reference::local_programs(w);
    let projected = reference::from_projection(&p);
    for (l, (e, got)) in expected.iter().zip(&projected).enumerate() {
        if e != got {
            return Err(format!(
                "local program of {}: {}",
                w.lifelines[l].name,
                first_difference(e, got)
            ));
        }
    }

    // Every construct, with R from the global workflow.
    let mut oracle = reference::constructs(w);
    oracle.sort_by_key(|c| c.0);
    let real: Vec<_> = p
        .constructs
        .iter()
        .map(|c| (c.stmt, c.kind, c.owner, c.notify.clone()))
        .collect();
    if oracle != real {
        return Err(format!(
            "constructs differ:\n  expected {oracle:?}\n  projected {real:?}"
        ));
    }

    // Tags: distinct per construct, and the owner and every recipient carry
    // the construct's tag.
    let mut by_stmt = std::collections::HashMap::<StmtId, u64>::new();
    let mut distinct = std::collections::HashSet::new();
    for c in &p.constructs {
        by_stmt.insert(c.stmt, c.tag.0);
        if !distinct.insert(c.tag.0) {
            return Err(format!("the tag of s{} is used twice", c.stmt.0));
        }
    }
    for (stmt, l, tag) in reference::tags_in(&p) {
        if by_stmt.get(&stmt) != Some(&tag) {
            return Err(format!(
                "{} carries tag {tag:x} for s{}, the construct has {:?}",
                w.lifelines[l.0 as usize].name,
                stmt.0,
                by_stmt.get(&stmt)
            ));
        }
    }

    // The size, exactly.
    let size = reference::expected_size(w);
    if p.size() != size {
        return Err(format!("size {} but the oracle counts {size}", p.size()));
    }
    Ok(())
}

#[test]
fn projection_is_the_naive_projection_of_the_global_workflow() {
    let seeds = Seeds::new(
        "projection_is_the_naive_projection_of_the_global_workflow",
        600,
    );
    let (mut most, mut deepest, mut constructs) = (0, 0, 0);
    for seed in seeds.iter() {
        let program = generate::program(seed, &shape(seed));
        let w = &program.workflows[0];
        most = most.max(generate::count_stmts(&w.body));
        deepest = deepest.max(generate::depth(&w.body));
        constructs += reference::constructs(w).len();
        if let Err(e) = check(&program) {
            panic!("seed {seed}: {e}\n{}", repeat_hint(seed));
        }
    }
    eprintln!(
        "largest workflow {most} statements, deepest nesting {deepest}, {constructs} constructs"
    );
    if seeds.cases >= 100 {
        assert!(
            most >= 200 && deepest >= 4,
            "the generator makes small workflows only"
        );
    }
}

/// `size ≤ (2|L| − 1)·|P|`: a message is 2, an action 1, a construct
/// 1 + 2|R| ≤ 2|L| − 1. The bound holds on every generated workflow, and a
/// family of deep nests in which every lifeline is told of every construct
/// comes within 3 % of it, so it is the bound, not a figure of speech.
#[test]
fn the_size_bound_holds_and_is_approached() {
    let bound = |program: &Program| {
        let w = &program.workflows[0];
        (2 * w.lifelines.len() - 1) * generate::count_stmts(&w.body)
    };
    let seeds = Seeds::new("the_size_bound_holds_and_is_approached", 300);
    let mut max_ratio: f64 = 0.0;
    for seed in seeds.iter() {
        let program = generate::program(seed, &shape(seed));
        let w = &program.workflows[0];
        let size = project(&program, w).unwrap().size();
        let b = bound(&program);
        assert!(size <= b, "seed {seed}: size {size} > bound {b}");
        max_ratio = max_ratio.max(size as f64 / b as f64);
    }

    // Nested ifs of A, 100 deep, around a message chain through every lifeline.
    let mut b = Builder::new("nest");
    let names = ["A", "B", "C", "D"];
    let ls: Vec<_> = names.iter().map(|n| b.lifeline(n)).collect();
    let vs: Vec<_> = ls
        .iter()
        .map(|&l| b.input("n", l, troupe_check::types::Type::Int))
        .collect();
    fn nest(
        b: &mut Builder,
        depth: usize,
        ls: &[troupe_check::ir::LifelineId],
        vs: &[troupe_check::ir::VarId],
    ) -> Vec<troupe_check::ir::Stmt> {
        if depth == 0 {
            return (1..ls.len())
                .map(|i| b.msg(ls[i - 1], ls[i], &[(vs[i - 1], vs[i])]))
                .collect();
        }
        let guard = Builder::binary(troupe_check::ir::BinaryOp::Lt, b.v(vs[0]), Builder::int(1));
        vec![b.if_(ls[0], guard, |b| nest(b, depth - 1, ls, vs), |_| Vec::new())]
    }
    let body = nest(&mut b, 100, &ls, &vs);
    let program = b.finish(body);
    let size = project(&program, &program.workflows[0]).unwrap().size();
    let nest_ratio = size as f64 / bound(&program) as f64;
    eprintln!("size / bound: generated at most {max_ratio:.3}, the deep nest {nest_ratio:.3}");
    assert!(size <= bound(&program));
    assert!(
        nest_ratio > 0.97,
        "the deep nest is at {nest_ratio:.3} of the bound"
    );
}
