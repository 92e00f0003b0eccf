//! Fuzz target: `--input-json` and `-i name=value` through
//! `troupe_runtime::parse_inputs`, with random JSON and JSON shaped like
//! each workflow's inputs, for every example and [`TYPED`]; what is
//! accepted reads back as the same value. A module of `fuzz_surfaces.rs`,
//! apart so that each target reads on its own.

use super::*;

#[derive(Debug, Clone)]
struct InputCase {
    program: usize,
    json: Option<J>,
    shaped_seed: Option<u64>,
    pairs: Vec<(Option<usize>, String, String)>,
}

fn input_case() -> impl Strategy<Value = InputCase> {
    (
        0..64usize,
        prop::option::of(json_value()),
        prop::option::of(any::<u64>()),
        prop::collection::vec(
            (prop::option::of(0..8usize), "[a-z]{1,5}", text_value()),
            0..4,
        ),
    )
        .prop_map(|(program, json, shaped_seed, pairs)| InputCase {
            program,
            json,
            shaped_seed,
            pairs,
        })
}

fn check_input(c: &InputCase) -> Result<(), TestCaseError> {
    let progs = programs();
    let (_, program) = &progs[c.program % progs.len()];
    for wf in &program.workflows {
        let names: Vec<String> = wf.inputs.iter().map(|v| wf.var(*v).name.clone()).collect();
        let pairs: Vec<(String, String)> = c
            .pairs
            .iter()
            .map(|(known, name, value)| {
                let name = match known {
                    Some(i) if !names.is_empty() => names[i % names.len()].clone(),
                    _ => name.clone(),
                };
                (name, value.clone())
            })
            .collect();
        let json = match (c.shaped_seed, &c.json) {
            (Some(seed), _) => {
                let mut seed = seed | 1;
                Some(J::Object(
                    wf.inputs
                        .iter()
                        .map(|v| {
                            let var = wf.var(*v);
                            (
                                var.name.clone(),
                                shaped(&var.ty, &program.types, &mut seed, 0),
                            )
                        })
                        .collect(),
                ))
            }
            (None, j) => j.clone(),
        };
        match troupe_runtime::parse_inputs(wf, &program.types, &pairs, json.as_ref()) {
            Ok(values) => {
                prop_assert_eq!(values.len(), wf.inputs.len());
                // What was accepted prints and reads back as the same value.
                for (v, value) in wf.inputs.iter().zip(&values) {
                    let ty = &wf.var(*v).ty;
                    let back = Value::from_json(&value.to_json(&program.types), ty, &program.types);
                    prop_assert!(back.is_ok(), "{value:?} does not read back: {back:?}");
                }
            }
            Err(e) => clear(&e.to_string())?,
        }
    }
    Ok(())
}

#[test]
fn random_input_json_and_pairs() {
    fuzz("input-json", 20_000, input_case, check_input);
}
