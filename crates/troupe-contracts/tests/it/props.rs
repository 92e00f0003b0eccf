//! Property tests over randomly generated SGD services and LTSs, so that nothing
//! depends on the particular data.

use proptest::prelude::*;

use troupe_contracts::bisim::check;
use troupe_contracts::invert::invert;
use troupe_contracts::lts::Lts;
use troupe_contracts::mcp::parse_tool_lists;
use troupe_contracts::phi::{phi, phi_plus};
use troupe_contracts::semantics::{Label, compare_service};
use troupe_contracts::sgd::{DONTCARE, SgdIntent, SgdService, SgdSlot};

fn slot() -> impl Strategy<Value = SgdSlot> {
    (
        "[a-z][a-z_]{0,8}",
        "\\PC{0,20}",
        any::<bool>(),
        prop::collection::vec("[A-Za-z0-9 ]{0,6}", 0..4),
    )
        .prop_map(
            |(name, description, is_categorical, possible_values)| SgdSlot {
                name,
                description,
                is_categorical,
                possible_values,
            },
        )
}

/// How an intent uses one slot.
#[derive(Debug, Clone)]
struct SlotUse {
    /// 0 unused, 1 required, 2 optional.
    role: u8,
    /// Whether it is a result slot.
    result: bool,
    /// The default, if optional.
    default: String,
}

/// An intent before its slot names are known.
#[derive(Debug, Clone)]
struct IntentDraft {
    name: String,
    description: String,
    is_transactional: bool,
    uses: Vec<SlotUse>,
    /// The order in which the intent lists its slots.
    order: Vec<usize>,
}

fn intent(slot_count: usize) -> impl Strategy<Value = IntentDraft> {
    let slot_use = (
        0u8..3,
        any::<bool>(),
        prop_oneof![Just(DONTCARE.to_owned()), "[a-z0-9]{0,5}"],
    )
        .prop_map(|(role, result, default)| SlotUse {
            role,
            result,
            default,
        });
    (
        "[A-Za-z][A-Za-z0-9_]{0,10}",
        "\\PC{0,30}",
        any::<bool>(),
        prop::collection::vec(slot_use, slot_count),
        Just((0..slot_count).collect::<Vec<usize>>()).prop_shuffle(),
    )
        .prop_map(
            |(name, description, is_transactional, uses, order)| IntentDraft {
                name,
                description,
                is_transactional,
                uses,
                order,
            },
        )
}

fn service() -> impl Strategy<Value = SgdService> {
    prop::collection::vec(slot(), 0..7)
        .prop_map(|slots| {
            // Slot names are unique within a service.
            let mut unique: Vec<SgdSlot> = Vec::new();
            for slot in slots {
                if !unique.iter().any(|s| s.name == slot.name) {
                    unique.push(slot);
                }
            }
            unique
        })
        .prop_flat_map(|slots| {
            let count = slots.len();
            (
                Just(slots),
                "[A-Za-z][A-Za-z0-9_]{0,10}",
                "\\PC{0,30}",
                prop::collection::vec(intent(count), 1..5),
            )
        })
        .prop_map(|(slots, service_name, description, intents)| {
            let intents = intents
                .into_iter()
                .map(|draft| {
                    let name_of = |i: usize| slots[i].name.clone();
                    let (roles, order) = (&draft.uses, &draft.order);
                    SgdIntent {
                        name: draft.name,
                        description: draft.description,
                        is_transactional: draft.is_transactional,
                        required_slots: order
                            .iter()
                            .filter(|&&i| roles[i].role == 1)
                            .map(|&i| name_of(i))
                            .collect(),
                        optional_slots: order
                            .iter()
                            .filter(|&&i| roles[i].role == 2)
                            .map(|&i| (name_of(i), roles[i].default.clone()))
                            .collect(),
                        result_slots: order
                            .iter()
                            .rev()
                            .filter(|&&i| roles[i].result)
                            .map(|&i| name_of(i))
                            .collect(),
                    }
                })
                .collect();
            SgdService {
                service_name,
                description,
                slots,
                intents,
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn phi_plus_then_inverse_is_the_identity(service in service()) {
        let (services, report) = invert(&phi_plus(&service)).unwrap();
        prop_assert_eq!(&services, &vec![service.clone()]);
        prop_assert!(report.is_lossless());
        // Also through the JSON text a client would see.
        let text = serde_json::to_string(&phi_plus(&service)).unwrap();
        let lists = parse_tool_lists("generated", &text).unwrap();
        let (services, _) = invert(&lists[0]).unwrap();
        prop_assert_eq!(services, vec![service]);
    }

    #[test]
    fn plain_phi_keeps_intents_slots_and_transactionality(service in service()) {
        let (services, _) = invert(&phi(&service)).unwrap();
        prop_assert_eq!(services.len(), 1);
        let recovered = &services[0];
        prop_assert_eq!(recovered.intents.len(), service.intents.len());
        for (original, intent) in service.intents.iter().zip(&recovered.intents) {
            prop_assert_eq!(&original.required_slots, &intent.required_slots);
            prop_assert_eq!(original.is_transactional, intent.is_transactional);
            let mut optional = original.optional_slots.clone();
            optional.sort();
            prop_assert_eq!(optional, intent.optional_slots.clone());
        }
    }

    #[test]
    fn mcp_differs_exactly_where_it_loses_information(service in service()) {
        let verdict = compare_service(&service).unwrap();
        prop_assert!(verdict.mcp_plus.is_none());
        prop_assert!(verdict.structural.is_none(), "the paper's theorem");
        // What MCP loses: the confirmation of a transaction; and that an intent
        // rejects invalid values when its only categorical slots have empty value
        // lists (MCP says "closed domain" only with a non-empty `enum`).
        let loses = |intent: &SgdIntent| {
            let slots = || {
                intent
                    .required_slots
                    .iter()
                    .chain(intent.optional_slots.iter().map(|(s, _)| s))
                    .filter_map(|s| service.slot(s))
                    .filter(|s| s.is_categorical)
            };
            intent.is_transactional
                || (slots().any(|s| s.possible_values.is_empty())
                    && slots().all(|s| s.possible_values.is_empty()))
        };
        prop_assert_eq!(verdict.mcp.is_some(), service.intents.iter().any(loses));
        for (intent, result) in service.intents.iter().zip(&verdict.intents) {
            prop_assert!(result.mcp_plus.is_none());
            prop_assert!(result.structural.is_none());
            prop_assert_eq!(result.mcp.is_some(), loses(intent));
            if let Some(counterexample) = &result.mcp
                && intent.is_transactional
            {
                prop_assert!(counterexample.left_only.contains(&Label::Confirm(result.tool.clone())));
            }
        }
    }
}

/// A random deterministic LTS over labels a, b, c with up to 6 states.
fn deterministic_lts() -> impl Strategy<Value = Lts<char>> {
    (1usize..7).prop_flat_map(|states| {
        prop::collection::vec(
            prop::collection::vec(prop::option::of(0..states), 3),
            states,
        )
        .prop_map(move |table| {
            let transitions = table
                .into_iter()
                .map(|row| {
                    row.into_iter()
                        .zip(['a', 'b', 'c'])
                        .filter_map(|(target, label)| target.map(|t| (label, t)))
                        .collect()
                })
                .collect();
            Lts::from_transitions((0..states).map(|s| format!("s{s}")).collect(), transitions)
        })
    })
}

fn step(lts: &Lts<char>, state: usize, label: char) -> Option<usize> {
    lts.successors(state)
        .iter()
        .find(|(l, _)| *l == label)
        .map(|(_, t)| *t)
}

fn enabled(lts: &Lts<char>, state: usize) -> Vec<char> {
    let mut labels: Vec<char> = lts.successors(state).iter().map(|(l, _)| *l).collect();
    labels.sort_unstable();
    labels
}

/// The length of a shortest trace after which the enabled labels differ, by BFS over
/// the product (for deterministic systems, bisimilarity is trace equivalence).
fn shortest_difference(left: &Lts<char>, right: &Lts<char>) -> Option<usize> {
    let mut seen = std::collections::HashSet::new();
    let mut queue = std::collections::VecDeque::from([((0, 0), 0)]);
    while let Some(((p, q), depth)) = queue.pop_front() {
        if !seen.insert((p, q)) {
            continue;
        }
        if enabled(left, p) != enabled(right, q) {
            return Some(depth);
        }
        for label in enabled(left, p) {
            if let (Some(p2), Some(q2)) = (step(left, p, label), step(right, q, label)) {
                queue.push_back(((p2, q2), depth + 1));
            }
        }
    }
    None
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn bisimulation_finds_shortest_counterexamples(left in deterministic_lts(), right in deterministic_lts()) {
        prop_assert!(check(&left, &left).is_none());
        let verdict = check(&left, &right);
        prop_assert_eq!(verdict.as_ref().map(|c| c.trace.len()), shortest_difference(&left, &right));
        if let Some(counterexample) = verdict {
            // Replay the trace on both systems and check the claimed difference.
            let (mut p, mut q) = (0, 0);
            for &label in &counterexample.trace {
                p = step(&left, p, label).unwrap();
                q = step(&right, q, label).unwrap();
            }
            for label in &counterexample.left_only {
                prop_assert!(step(&left, p, *label).is_some() && step(&right, q, *label).is_none());
            }
            for label in &counterexample.right_only {
                prop_assert!(step(&right, q, *label).is_some() && step(&left, p, *label).is_none());
            }
            prop_assert!(!counterexample.left_only.is_empty() || !counterexample.right_only.is_empty());
        }
    }
}
