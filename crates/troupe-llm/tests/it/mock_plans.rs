//! The mock writes plans that check: for random planners (actions of random
//! signatures over a few types, one or two lifelines, outputs of types the
//! mock can compute or write as literals), `write_plan`'s source passes
//! `troupe_check::plan::check_plan` — a checker that shares no code with
//! the writer — and the same spec always gives the same plan.

use proptest::prelude::*;
use troupe_check::ir::{ActionId, ActionKind};
use troupe_llm::mock::write_plan;
use troupe_llm::{OutputSlot, PlanAction, PlanSpec};

const TYPES: [&str; 5] = ["Text", "Int", "Bool", "Float", "Tone"];

fn params(names: &str, types: &[usize]) -> String {
    types
        .iter()
        .enumerate()
        .map(|(i, t)| format!("{names}{i}: {}", TYPES[*t]))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The source of a program with these actions and a planner over them.
fn source(
    actions: &[(Vec<usize>, Vec<usize>)],
    inputs: &[usize],
    outputs: &[usize],
    two: bool,
) -> String {
    let mut s = String::from("enum Tone { plain, friendly }\n");
    for (i, (ps, os)) in actions.iter().enumerate() {
        s.push_str(&format!(
            "llm a{i}({}) -> ({}) {{ prompt: \"go\" }}\n",
            params("p", ps),
            params("o", os)
        ));
    }
    let names: Vec<String> = (0..actions.len()).map(|i| format!("a{i}")).collect();
    s.push_str(&format!(
        "planner solve({}) -> ({}) {{\n  prompt: \"plan\"\n  actions: [{}]\n  lifelines: [{}]\n}}\n",
        params("x", inputs),
        params("y", outputs),
        names.join(", "),
        if two { "Left, Right" } else { "Left" }
    ));
    s
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn mock_plans_check(
        actions in prop::collection::vec(
            (prop::collection::vec(0..5usize, 0..3), prop::collection::vec(0..5usize, 1..3)),
            1..5,
        ),
        inputs in prop::collection::vec(0..5usize, 0..3),
        outputs in prop::collection::vec(0..5usize, 1..3),
        two in any::<bool>(),
    ) {
        let text = source(&actions, &inputs, &outputs, two);
        let (program, d) = troupe_check::check_text(&text);
        let program = program.unwrap_or_else(|| panic!("{text}\n{d:#?}"));
        let id = program.actions.iter().position(|a| a.name == "solve").unwrap();
        let decl = &program.actions[id];
        let ActionKind::Planner(p) = &decl.kind else { unreachable!() };
        let slots = |ps: &[troupe_check::ir::Param]| {
            ps.iter().map(|p| OutputSlot::new(p.name.clone(), p.ty.clone())).collect::<Vec<_>>()
        };
        let spec = PlanSpec {
            inputs: slots(&decl.params),
            outputs: slots(&decl.outputs),
            actions: p.actions.iter().map(|a| {
                let a = program.action(*a);
                PlanAction { name: a.name.clone(), params: slots(&a.params), outputs: slots(&a.outputs) }
            }).collect(),
            lifelines: p.lifelines.clone(),
        };
        let plan = write_plan(&spec, &program.types).unwrap();
        prop_assert_eq!(&plan, &write_plan(&spec, &program.types).unwrap());
        let checked = troupe_check::plan::check_plan(&program, ActionId(id as u32), &plan);
        prop_assert!(checked.is_ok(), "{}\n{}\n{:#?}", text, plan, checked.err());
    }
}
