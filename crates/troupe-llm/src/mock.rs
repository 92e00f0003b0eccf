//! The mock backend: deterministic, type-directed answers with no model.
//!
//! Every answer is a valid value of the declared output types, chosen from
//! the run's seed and the [`CallKey`] only (lifeline, action, occurrence `k`;
//! never the prompt, a clock or `RandomState`), so a re-run call gets the
//! same answer. The answers are meant to *exercise* a workflow: across
//! seeds, loops iterate and both branches of a conditional occur, yet every
//! loop over a mock answer ends.
//!
//! Each choice (a `Bool`, an enum value, an `Int`, a list's length) has two
//! phases:
//!
//! - the first [`EXPLORE`] occurrences of a (lifeline, action) answer
//!   independently, each from a fixed hash of (seed, lifeline, action,
//!   output path, `k`): two lifelines asking the same thing may disagree,
//!   and a `while more` loop goes on with probability ½ per round;
//! - from occurrence [`EXPLORE`] on, the answer no longer depends on the
//!   lifeline and cycles: choice `(h + k) % n` with `h` a hash of (seed,
//!   action, output path). So lifelines that ask the same action as often
//!   agree (a consensus loop ends), and one lifeline's answers run through
//!   every value (a `while verdict == revise` or `while !done` loop ends
//!   too). A loop guarded by a mock `Bool` or enum of `n` values ends
//!   within `EXPLORE + n` calls, whatever its polarity.
//!
//! The values: `Bool` (choice of 2), enum value (choice of `n`), `Int`
//! (choice of 10), `Float` (the `Int` choice divided by 4), `Text`
//! (`mock answer k to action`; the output or field path replaces `answer`
//! when there are several), `Json` (`{"mock": action, "k": k}`), records
//! (each field in turn), lists (a choice of 0–2 items).
//!
//! A `planner`'s request (one with a [`PlanSpec`]) is answered with a plan
//! that checks: see [`write_plan`].

use crate::answer::check_types;
use crate::hash::stable_hash;
use crate::{BoxFuture, CallKey, LlmAnswer, LlmBackend, LlmError, LlmRequest, PlanSpec};
use std::sync::Arc;
use std::time::{Duration, Instant};
use troupe_check::{Type, TypeTable, Value};

/// How deep records and lists may nest before a list is left empty; beyond
/// twice this a record that contains itself directly has no finite value.
const MAX_DEPTH: usize = 8;

/// Occurrences of a (lifeline, action) that answer independently at
/// random; later ones cycle in step across lifelines (see the module doc).
pub const EXPLORE: u64 = 3;

#[derive(Debug, Clone, Default)]
pub struct MockBackend {
    latency: Option<Duration>,
}

impl MockBackend {
    pub fn new() -> MockBackend {
        MockBackend { latency: None }
    }

    /// A mock that sleeps `latency` before each answer, to stand in for a
    /// model's response time in benchmarks.
    pub fn with_latency(latency: Duration) -> MockBackend {
        MockBackend {
            latency: Some(latency),
        }
    }

    pub fn latency(&self) -> Option<Duration> {
        self.latency
    }

    /// The values the mock answers `request` with, without sleeping.
    pub fn answer_values(request: &LlmRequest) -> Result<Vec<Value>, LlmError> {
        if let Some(spec) = &request.plan {
            return write_plan(spec, &request.types)
                .map(|source| vec![Value::text(source)])
                .map_err(|message| LlmError::Permanent {
                    backend: "mock".into(),
                    message,
                });
        }
        check_types(&request.outputs, &request.types).map_err(|message| LlmError::Permanent {
            backend: "mock".into(),
            message,
        })?;
        let generator = Gen {
            seed: request.seed,
            key: &request.key,
            types: &request.types,
        };
        let single = request.outputs.len() == 1;
        request
            .outputs
            .iter()
            .map(|slot| {
                let label = if single { "answer" } else { slot.name.as_str() };
                generator
                    .value(&slot.ty, label, 0)
                    .ok_or_else(|| LlmError::Permanent {
                        backend: "mock".into(),
                        message: format!(
                            "output `{}` of {} has type {}, which has no finite value",
                            slot.name,
                            request.key.action,
                            request.types.display(&slot.ty)
                        ),
                    })
            })
            .collect()
    }
}

impl LlmBackend for MockBackend {
    fn model(&self, _: &LlmRequest) -> Option<String> {
        Some("mock".to_owned())
    }

    fn describe(&self) -> String {
        match self.latency {
            Some(d) => format!("mock (latency {} ms)", d.as_millis()),
            None => "mock".into(),
        }
    }

    fn call<'a>(&'a self, request: &'a LlmRequest) -> BoxFuture<'a, Result<LlmAnswer, LlmError>> {
        Box::pin(async move {
            let start = Instant::now();
            if let Some(d) = self.latency {
                tokio::time::sleep(d).await;
            }
            let values = MockBackend::answer_values(request)?;
            Ok(LlmAnswer {
                values,
                tool_calls: Vec::new(),
                model: "mock".into(),
                usage: None,
                latency: start.elapsed(),
                attempts: 1,
                detail: Default::default(),
            })
        })
    }
}

/// The mock's plan for a planner (see [`PlanSpec`]): at the first allowed
/// lifeline, every allowed action whose arguments can be found among the
/// variables bound so far (by type, the latest first) is called once, in
/// the order listed; the results (the latest variable of each output's
/// type, else a literal) are sent to the second lifeline, if there is one,
/// and returned there. Deterministic: the same spec, the same plan.
pub fn write_plan(spec: &PlanSpec, types: &TypeTable) -> Result<String, String> {
    use std::fmt::Write;
    let Some(first) = spec.lifelines.first() else {
        return Err("the planner lists no lifeline".into());
    };
    let ty = |t: &Type| types.display(t).to_string();
    let mut vars: Vec<(String, Type)> = spec
        .inputs
        .iter()
        .map(|p| (p.name.clone(), p.ty.clone()))
        .collect();
    let find = |vars: &[(String, Type)], want: &Type| {
        vars.iter()
            .rev()
            .find(|(_, t)| t.assignable_to(want) && !t.is_error())
            .map(|(n, _)| n.clone())
    };
    let inputs = spec
        .inputs
        .iter()
        .map(|p| format!("{}: {} @ {first}", p.name, ty(&p.ty)))
        .collect::<Vec<_>>()
        .join(", ");
    let mut body = String::new();
    for (i, action) in spec.actions.iter().enumerate() {
        let Some(args) = action
            .params
            .iter()
            .map(|p| find(&vars, &p.ty))
            .collect::<Option<Vec<_>>>()
        else {
            continue;
        };
        let outs: Vec<String> = (0..action.outputs.len())
            .map(|j| format!("r{i}_{j}"))
            .collect();
        let call = format!("{}({})", action.name, args.join(", "));
        if outs.is_empty() {
            let _ = writeln!(body, "  act {first}: {call}");
        } else {
            let _ = writeln!(body, "  act {first}: {} = {call}", outs.join(", "));
        }
        for (name, slot) in outs.into_iter().zip(&action.outputs) {
            vars.push((name, slot.ty.clone()));
        }
    }
    let mut results = Vec::new();
    for (j, slot) in spec.outputs.iter().enumerate() {
        // A result has exactly the output's type (an `Int` is no `Float`
        // result, though it is a `Float` argument).
        let exact = vars
            .iter()
            .rev()
            .find(|(_, t)| *t == slot.ty)
            .map(|(n, _)| n.clone());
        let name = match exact {
            Some(n) => n,
            None => {
                let literal = match &slot.ty {
                    Type::Bool => "true".to_owned(),
                    Type::Int => "0".to_owned(),
                    Type::Float => "0.0".to_owned(),
                    Type::Text => "\"mock plan\"".to_owned(),
                    Type::Enum(id) => match types
                        .enums
                        .get(id.0 as usize)
                        .and_then(|e| e.values.first())
                    {
                        Some(v) => v.clone(),
                        None => return Err(format!("enum {} has no value", ty(&slot.ty))),
                    },
                    other => {
                        return Err(format!(
                            "the mock cannot write a plan that returns a {} it cannot compute; script the plan instead",
                            ty(other)
                        ));
                    }
                };
                let n = format!("out{j}");
                let _ = writeln!(body, "  act {first}: {n} = {literal}");
                vars.push((n.clone(), slot.ty.clone()));
                n
            }
        };
        results.push(name);
    }
    let mut distinct: Vec<String> = Vec::new();
    for r in &results {
        if !distinct.contains(r) {
            distinct.push(r.clone());
        }
    }
    let at = match spec.lifelines.get(1) {
        Some(second) if !distinct.is_empty() => {
            let _ = writeln!(
                body,
                "  msg {first}({}) -> {second}({})",
                distinct.join(", "),
                distinct.join(", ")
            );
            second
        }
        _ => first,
    };
    let ret = match results.as_slice() {
        [] => String::new(),
        [one] => format!("  return {one} @ {at}\n"),
        many => format!(
            "  return ({})\n",
            many.iter()
                .map(|r| format!("{r} @ {at}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    Ok(format!("workflow plan({inputs}) {{\n{body}{ret}}}\n"))
}

struct Gen<'a> {
    seed: u64,
    key: &'a CallKey,
    types: &'a TypeTable,
}

impl Gen<'_> {
    /// Choice `path` of this call among `n` (`n > 0`): random for the first
    /// [`EXPLORE`] occurrences, then cycling independently of the lifeline.
    fn choice(&self, path: &str, n: u64) -> u64 {
        let k = self.key.occurrence;
        if k < EXPLORE {
            stable_hash(&[
                &self.seed.to_le_bytes(),
                self.key.lifeline.as_bytes(),
                self.key.action.as_bytes(),
                path.as_bytes(),
                &k.to_le_bytes(),
            ]) % n
        } else {
            let h = stable_hash(&[
                &self.seed.to_le_bytes(),
                self.key.action.as_bytes(),
                path.as_bytes(),
            ]);
            (h % n + k % n) % n
        }
    }

    fn value(&self, ty: &Type, path: &str, depth: usize) -> Option<Value> {
        let k = self.key.occurrence;
        Some(match ty {
            Type::Bool => Value::Bool(self.choice(path, 2) == 1),
            Type::Int => Value::Int(self.choice(path, 10) as i64),
            Type::Float => Value::Float(self.choice(path, 10) as f64 / 4.0),
            Type::Text => Value::text(format!("mock {path} {k} to {}", self.key.action)),
            Type::Json | Type::Error => Value::Json(Arc::new(
                serde_json::json!({"mock": self.key.action, "k": k}),
            )),
            Type::Enum(id) => {
                let n = self.types.enums.get(id.0 as usize)?.values.len() as u64;
                if n == 0 {
                    return None;
                }
                Value::Enum(*id, self.choice(path, n) as u32)
            }
            Type::Record(id) => {
                if depth > 2 * MAX_DEPTH {
                    return None;
                }
                let def = self.types.records.get(id.0 as usize)?;
                let fields = def
                    .fields
                    .iter()
                    .map(|(name, fty)| self.value(fty, &format!("{path}.{name}"), depth + 1))
                    .collect::<Option<Vec<_>>>()?;
                Value::Record(*id, fields.into())
            }
            Type::List(inner) => {
                let len = if depth >= MAX_DEPTH {
                    0
                } else {
                    self.choice(path, 3)
                };
                let items = (0..len)
                    .map(|i| self.value(inner, &format!("{path}[{i}]"), depth + 1))
                    .collect::<Option<Vec<_>>>()?;
                Value::List(items.into())
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::OutputSlot;
    use proptest::prelude::*;
    use troupe_check::types::{EnumDef, EnumId, RecordDef, RecordId};

    fn table() -> TypeTable {
        TypeTable {
            enums: vec![
                EnumDef {
                    name: "Verdict".into(),
                    values: vec!["approve".into(), "revise".into()],
                },
                EnumDef {
                    name: "Colour".into(),
                    values: vec!["red".into(), "green".into(), "blue".into()],
                },
            ],
            records: vec![
                RecordDef {
                    name: "Ticket".into(),
                    fields: vec![
                        ("id".into(), Type::Text),
                        ("price".into(), Type::Float),
                        ("ok".into(), Type::Bool),
                    ],
                },
                RecordDef {
                    name: "Tree".into(),
                    fields: vec![
                        ("label".into(), Type::Int),
                        (
                            "kids".into(),
                            Type::List(Box::new(Type::Record(RecordId(1)))),
                        ),
                    ],
                },
                RecordDef {
                    name: "Loop".into(),
                    fields: vec![("me".into(), Type::Record(RecordId(2)))],
                },
            ],
        }
    }

    fn request(
        outputs: Vec<OutputSlot>,
        seed: u64,
        lifeline: &str,
        action: &str,
        k: u64,
    ) -> LlmRequest {
        let mut r = LlmRequest::new(
            CallKey::new(lifeline, action, k),
            "prompt",
            outputs,
            Arc::new(table()),
        );
        r.seed = seed;
        r
    }

    #[test]
    fn text_placeholder_names_action_and_occurrence() {
        let r = request(
            vec![OutputSlot::new("plan", Type::Text)],
            0,
            "Planner",
            "make_plan",
            2,
        );
        assert_eq!(
            MockBackend::answer_values(&r).unwrap(),
            vec![Value::text("mock answer 2 to make_plan")]
        );
    }

    /// The values of output 0 of `action` at `lifeline` for occurrences
    /// `0..n` under `seed`.
    fn answers(ty: Type, seed: u64, lifeline: &str, action: &str, n: u64) -> Vec<Value> {
        (0..n)
            .map(|k| {
                let outs = vec![OutputSlot::new("x", ty.clone())];
                MockBackend::answer_values(&request(outs, seed, lifeline, action, k))
                    .unwrap()
                    .remove(0)
            })
            .collect()
    }

    #[test]
    fn later_occurrences_cycle_in_step_across_lifelines() {
        for seed in 0..20 {
            let colours = answers(Type::Enum(EnumId(1)), seed, "Alice", "pick", 12);
            let bools = answers(Type::Bool, seed, "Alice", "more", 12);
            for k in EXPLORE as usize + 1..12 {
                let (Value::Enum(_, a), Value::Enum(_, b)) = (&colours[k - 1], &colours[k]) else {
                    panic!("{:?}", colours[k])
                };
                assert_eq!(
                    (a + 1) % 3,
                    *b,
                    "the enum cycles from occurrence {EXPLORE} on"
                );
                assert_ne!(bools[k - 1], bools[k], "the Bool alternates");
            }
            let bob = answers(Type::Enum(EnumId(1)), seed, "Bob", "pick", 12);
            assert_eq!(
                colours[EXPLORE as usize..],
                bob[EXPLORE as usize..],
                "lifelines agree from occurrence {EXPLORE} on"
            );
        }
    }

    #[test]
    fn early_occurrences_vary_by_lifeline_and_occurrence() {
        // Over 64 seeds (pinned by the fixed hash), the first answers of two
        // lifelines both agree and disagree, and one lifeline's first two
        // answers both repeat and change: a consensus loop sometimes runs,
        // a `while more` loop sometimes iterates.
        let mut agree = [false; 2];
        let mut repeat = [false; 2];
        for seed in 0..64 {
            let a = answers(Type::Bool, seed, "Alice", "assess", 2);
            let b = answers(Type::Bool, seed, "Bob", "assess", 2);
            agree[usize::from(a[0] == b[0])] = true;
            repeat[usize::from(a[0] == a[1])] = true;
        }
        assert_eq!(agree, [true; 2]);
        assert_eq!(repeat, [true; 2]);
    }

    #[test]
    fn seed_changes_some_choice() {
        let outs = vec![
            OutputSlot::new("ok", Type::Bool),
            OutputSlot::new("n", Type::Int),
        ];
        let differs = (0..32u64).any(|seed| {
            MockBackend::answer_values(&request(outs.clone(), seed, "A", "f", 0)).unwrap()
                != MockBackend::answer_values(&request(outs.clone(), seed + 1, "A", "f", 0))
                    .unwrap()
        });
        assert!(differs);
    }

    #[test]
    fn directly_recursive_record_is_a_clear_error() {
        let r = request(
            vec![OutputSlot::new("x", Type::Record(RecordId(2)))],
            0,
            "A",
            "f",
            0,
        );
        let err = MockBackend::answer_values(&r).unwrap_err();
        assert!(err.to_string().contains("no finite value"), "{err}");
    }

    #[test]
    fn a_bad_type_table_is_an_error_not_a_panic() {
        let r = request(
            vec![OutputSlot::new(
                "x",
                Type::List(Box::new(Type::Enum(EnumId(9)))),
            )],
            0,
            "A",
            "f",
            0,
        );
        let err = MockBackend::answer_values(&r).unwrap_err();
        assert!(err.to_string().contains("enum #9"), "{err}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn latency_is_applied() {
        let r = request(vec![OutputSlot::new("t", Type::Text)], 0, "A", "f", 0);
        let m = MockBackend::with_latency(Duration::from_millis(30));
        let a = m.call(&r).await.unwrap();
        assert!(a.latency >= Duration::from_millis(30));
        assert_eq!(m.describe(), "mock (latency 30 ms)");
    }

    fn arb_type() -> impl Strategy<Value = Type> {
        let leaf = prop_oneof![
            Just(Type::Bool),
            Just(Type::Int),
            Just(Type::Float),
            Just(Type::Text),
            Just(Type::Json),
            Just(Type::Enum(EnumId(0))),
            Just(Type::Enum(EnumId(1))),
            Just(Type::Record(RecordId(0))),
            Just(Type::Record(RecordId(1))),
        ];
        leaf.prop_recursive(3, 16, 2, |inner| {
            inner.prop_map(|t| Type::List(Box::new(t)))
        })
    }

    /// Calls `while guard(answer) { ask again }` makes: the first answer
    /// decides whether the loop is entered, each later one whether it goes on.
    fn loop_calls(
        seed: u64,
        lifeline: &str,
        action: &str,
        ty: &Type,
        guard: impl Fn(&Value) -> bool,
    ) -> u64 {
        let outs = vec![OutputSlot::new("x", ty.clone())];
        let mut k = 0;
        loop {
            let v = MockBackend::answer_values(&request(outs.clone(), seed, lifeline, action, k))
                .unwrap();
            k += 1;
            if !guard(&v[0]) || k > 1000 {
                return k;
            }
        }
    }

    proptest! {
        #[test]
        fn mock_values_are_valid_and_deterministic(
            tys in proptest::collection::vec(arb_type(), 1..4),
            seed in any::<u64>(),
            k in 0u64..50,
            lifeline in "[A-Z][a-z]{0,6}",
            action in "[a-z_]{1,8}",
        ) {
            let outs: Vec<OutputSlot> = tys.iter().enumerate().map(|(i, t)| OutputSlot::new(format!("o{i}"), t.clone())).collect();
            let r = request(outs.clone(), seed, &lifeline, &action, k);
            let a = MockBackend::answer_values(&r).unwrap();
            prop_assert_eq!(&a, &MockBackend::answer_values(&r).unwrap());
            let t = table();
            for (v, slot) in a.iter().zip(&outs) {
                let json = v.to_json(&t);
                let back = Value::from_json(&json, &slot.ty, &t);
                prop_assert!(back.is_ok(), "{:?} does not read back as {:?}: {:?}", json, slot.ty, back);
            }
        }

        #[test]
        fn loops_over_mock_answers_end_within_a_bound(
            seed in any::<u64>(),
            lifeline in "[A-Z][a-z]{0,6}",
            action in "[a-z_]{1,8}",
            target in 0u32..3,
        ) {
            // Whatever the polarity of the guard: `while more`, `while !done`,
            // `while colour == red`, `while colour != red`.
            let colour = Type::Enum(EnumId(1));
            let bounds = [
                (loop_calls(seed, &lifeline, &action, &Type::Bool, |v| *v == Value::Bool(true)), EXPLORE + 2),
                (loop_calls(seed, &lifeline, &action, &Type::Bool, |v| *v == Value::Bool(false)), EXPLORE + 2),
                (loop_calls(seed, &lifeline, &action, &colour, |v| *v == Value::Enum(EnumId(1), target)), EXPLORE + 3),
                (loop_calls(seed, &lifeline, &action, &colour, |v| *v != Value::Enum(EnumId(1), target)), EXPLORE + 3),
            ];
            for (i, (calls, bound)) in bounds.into_iter().enumerate() {
                prop_assert!(calls <= bound, "loop {} took {} calls, bound {}", i, calls, bound);
            }
        }

        #[test]
        fn a_conditional_on_a_mock_bool_takes_both_branches_across_seeds(
            first in 0u64..1_000_000,
            lifeline in "[A-Z][a-z]{0,6}",
            action in "[a-z_]{1,8}",
            k in 0u64..20,
        ) {
            // 40 consecutive seeds: both branches, unless the fixed hash is
            // badly skewed (a chance of 2^-39 per case for a fair one).
            let outs = vec![OutputSlot::new("ok", Type::Bool)];
            let taken: std::collections::BTreeSet<bool> = (first..first + 40)
                .map(|seed| {
                    let r = request(outs.clone(), seed, &lifeline, &action, k);
                    let a = MockBackend::answer_values(&r).unwrap();
                    a[0] == Value::Bool(true)
                })
                .collect();
            prop_assert_eq!(taken.len(), 2);
        }
    }
}
