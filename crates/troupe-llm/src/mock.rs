//! The mock backend: deterministic, type-directed answers with no model.
//!
//! Every answer is a valid value of the declared output types, chosen from
//! the run's seed and the [`CallKey`] only (never the prompt, a clock or
//! `RandomState`), so a re-run call gets the same answer. Successive
//! occurrences `k` of one (lifeline, action) cycle through values, which is
//! what makes workflows driven by the mock finish and exercise both branches:
//!
//! - `Bool`: alternates, starting from a bit derived from the seed and key;
//! - enum: value `(offset + k) % n`, so a `while verdict == revise` loop ends
//!   within `n` rounds;
//! - `Int`: `(offset + k) % 10`; `Float`: the same divided by 4;
//! - `Text`: `mock answer k to action` (the output or field path replaces
//!   `answer` when there are several);
//! - `Json`: `{"mock": action, "k": k}`;
//! - records: each field in turn; lists: `(offset + k) % 3` items.
//!
//! Offsets come from a fixed hash of (seed, lifeline, action, output path).

use crate::answer::check_types;
use crate::hash::stable_hash;
use crate::{BoxFuture, CallKey, LlmAnswer, LlmBackend, LlmError, LlmRequest};
use std::sync::Arc;
use std::time::{Duration, Instant};
use troupe_check::{Type, TypeTable, Value};

/// How deep records and lists may nest before a list is left empty; beyond
/// twice this a record that contains itself directly has no finite value.
const MAX_DEPTH: usize = 8;

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
                model: "mock".into(),
                usage: None,
                latency: start.elapsed(),
                attempts: 1,
                detail: Default::default(),
            })
        })
    }
}

struct Gen<'a> {
    seed: u64,
    key: &'a CallKey,
    types: &'a TypeTable,
}

impl Gen<'_> {
    fn offset(&self, path: &str) -> u64 {
        stable_hash(&[
            &self.seed.to_le_bytes(),
            self.key.lifeline.as_bytes(),
            self.key.action.as_bytes(),
            path.as_bytes(),
        ])
    }

    fn value(&self, ty: &Type, path: &str, depth: usize) -> Option<Value> {
        let k = self.key.occurrence;
        let off = self.offset(path);
        Some(match ty {
            Type::Bool => Value::Bool(((off ^ k) & 1) == 1),
            Type::Int => Value::Int((off.wrapping_add(k) % 10) as i64),
            Type::Float => Value::Float((off.wrapping_add(k) % 10) as f64 / 4.0),
            Type::Text => Value::text(format!("mock {path} {k} to {}", self.key.action)),
            Type::Json | Type::Error => Value::Json(Arc::new(
                serde_json::json!({"mock": self.key.action, "k": k}),
            )),
            Type::Enum(id) => {
                let n = self.types.enums.get(id.0 as usize)?.values.len() as u64;
                if n == 0 {
                    return None;
                }
                Value::Enum(*id, (off.wrapping_add(k) % n) as u32)
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
                    off.wrapping_add(k) % 3
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

    #[test]
    fn bool_alternates_and_enum_cycles() {
        let outs = vec![
            OutputSlot::new("ok", Type::Bool),
            OutputSlot::new("v", Type::Enum(EnumId(1))),
        ];
        let answers: Vec<Vec<Value>> = (0..6)
            .map(|k| {
                MockBackend::answer_values(&request(outs.clone(), 7, "R", "review", k)).unwrap()
            })
            .collect();
        for k in 1..6 {
            assert_ne!(answers[k][0], answers[k - 1][0], "Bool alternates");
            let (Value::Enum(_, a), Value::Enum(_, b)) = (&answers[k - 1][1], &answers[k][1])
            else {
                panic!()
            };
            assert_eq!((a + 1) % 3, *b, "enum cycles");
        }
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
    }
}
