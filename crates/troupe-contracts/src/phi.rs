//! Φ and Φ⁺: from SGD services to MCP tool lists.
//!
//! Φ maps one SGD service to one MCP server (a `tools/list` result), intent by intent:
//!
//! | SGD | MCP |
//! | --- | --- |
//! | intent `CheckBalance` | tool `check_balance` (snake case, made unique) |
//! | intent description | tool `description` |
//! | required slots R | `inputSchema.required` (in order) and properties |
//! | optional slots O with defaults | properties with `default` (omitted for `dontcare`: any value) |
//! | slot description | property `description` |
//! | categorical slot | `"enum": possible_values` |
//! | result slots | `outputSchema` properties |
//! | transactional | `readOnlyHint: false, destructiveHint: true` |
//! | non-transactional | `readOnlyHint: true` |
//!
//! All slot values are strings (`"type": "string"`). What Φ drops: the service
//! description, the service's slot table (slot order, slots of other intents), the exact
//! intent name and order, the order of optional slots, and — above all — the fact that a
//! transactional intent *needs a confirmation*: MCP annotations are mere hints.
//!
//! Φ⁺ produces the same tools, each with an MCP+ contract (see [`crate::contract`]) in
//! `_meta` that keeps all of it, plus derived failure modes and `produces` relations,
//! so that Φ⁻¹ ∘ Φ⁺ is the identity.

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::{Map, Value, json};

use crate::contract::{
    ArgumentContract, Binding, CONFIRMATION_DECLINED, CONTRACT_VERSION, Domain, EXECUTION_FAILED,
    FailureMode, INVALID_VALUE, MISSING_SLOTS, Relation, RelationKind, ResultContract, SgdOrigin,
    ToolContract,
};
use crate::mcp::{McpTool, ToolAnnotations, ToolList};
use crate::naming::snake_case;
use crate::sgd::{DONTCARE, SgdIntent, SgdService, SgdSlot};

/// The MCP tool names Φ gives the intents of `service`, in intent order: the snake-case
/// intent name, suffixed with `_2`, `_3`, ... when that name is already taken.
pub fn tool_names(service: &SgdService) -> Vec<String> {
    let mut names: Vec<String> = Vec::with_capacity(service.intents.len());
    for intent in &service.intents {
        let base = match snake_case(&intent.name) {
            name if name.is_empty() => "intent".to_owned(),
            name => name,
        };
        let mut candidate = base.clone();
        let mut counter = 2;
        while names.contains(&candidate) {
            candidate = format!("{base}_{counter}");
            counter += 1;
        }
        names.push(candidate);
    }
    names
}

/// Φ: the plain MCP server of an SGD service.
pub fn phi(service: &SgdService) -> ToolList {
    let names = tool_names(service);
    let tools = service
        .intents
        .iter()
        .zip(names)
        .map(|(intent, name)| intent_to_tool(service, intent, name))
        .collect();
    ToolList {
        server: Some(service.service_name.clone()),
        tools,
        extra: Map::new(),
    }
}

/// Φ⁺: the MCP+ server of an SGD service — Φ plus a contract in each tool's `_meta`.
pub fn phi_plus(service: &SgdService) -> ToolList {
    let mut list = phi(service);
    let names: Vec<String> = list.tools.iter().map(|tool| tool.name.clone()).collect();
    for (index, tool) in list.tools.iter_mut().enumerate() {
        tool.set_contract(&intent_contract(service, index, &names));
    }
    list
}

/// Φ (or Φ⁺ with `plus`) over a whole schema: one tool list per service.
pub fn phi_schema(services: &[SgdService], plus: bool) -> Vec<ToolList> {
    let convert = if plus { phi_plus } else { phi };
    services.iter().map(convert).collect()
}

/// The JSON document for a set of converted services: a bare `tools/list` result for
/// one service, an object keyed by service name (in schema order) for several.
#[derive(Debug, Clone, Copy)]
pub struct ToolListsDocument<'a>(pub &'a [ToolList]);

impl Serialize for ToolListsDocument<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            [single] => single.serialize(serializer),
            lists => {
                let mut map = serializer.serialize_map(Some(lists.len()))?;
                for list in lists {
                    map.serialize_entry(list.server.as_deref().unwrap_or_default(), list)?;
                }
                map.end()
            }
        }
    }
}

fn intent_to_tool(service: &SgdService, intent: &SgdIntent, name: String) -> McpTool {
    let mut properties = Map::new();
    for slot in &intent.required_slots {
        properties.insert(slot.clone(), slot_schema(service.slot(slot), None));
    }
    for (slot, default) in &intent.optional_slots {
        properties.insert(slot.clone(), slot_schema(service.slot(slot), Some(default)));
    }
    let mut results = Map::new();
    for slot in &intent.result_slots {
        results.insert(slot.clone(), slot_schema(service.slot(slot), None));
    }
    let annotations = if intent.is_transactional {
        ToolAnnotations {
            read_only_hint: Some(false),
            destructive_hint: Some(true),
            ..Default::default()
        }
    } else {
        ToolAnnotations {
            read_only_hint: Some(true),
            ..Default::default()
        }
    };
    McpTool {
        description: Some(intent.description.clone()),
        input_schema: json!({
            "type": "object",
            "properties": properties,
            "required": intent.required_slots,
            "additionalProperties": false,
        }),
        output_schema: Some(json!({"type": "object", "properties": results})),
        annotations: Some(annotations),
        ..McpTool::new(name)
    }
}

/// The JSON Schema of one slot; `default` is the optional slot's default.
fn slot_schema(slot: Option<&SgdSlot>, default: Option<&String>) -> Value {
    let mut schema = Map::new();
    schema.insert("type".into(), "string".into());
    if let Some(slot) = slot {
        schema.insert("description".into(), slot.description.clone().into());
        // An empty `enum` would accept nothing: a categorical slot without values
        // (SGD has some) is left unconstrained.
        if slot.is_categorical && !slot.possible_values.is_empty() {
            schema.insert("enum".into(), slot.possible_values.clone().into());
        }
    }
    if let Some(default) = default.filter(|default| *default != DONTCARE) {
        schema.insert("default".into(), default.clone().into());
    }
    Value::Object(schema)
}

/// The value domain of a slot.
pub fn slot_domain(slot: Option<&SgdSlot>) -> Domain {
    match slot {
        Some(slot) if slot.is_categorical => Domain::Enumerated {
            values: slot.possible_values.clone(),
        },
        _ => Domain::FreeText,
    }
}

/// The MCP+ contract Φ⁺ gives intent `index` of `service`; `names` are the tool names.
pub fn intent_contract(service: &SgdService, index: usize, names: &[String]) -> ToolContract {
    let Some(intent) = service.intents.get(index) else {
        return ToolContract {
            version: CONTRACT_VERSION,
            arguments: vec![],
            results: vec![],
            transactional: false,
            requires_confirmation: false,
            confirmation_shows: None,
            failure_modes: vec![],
            relations: vec![],
            sgd: None,
        };
    };
    let describe = |name: &str| {
        service
            .slot(name)
            .map(|slot| slot.description.clone())
            .unwrap_or_default()
    };
    let required = intent.required_slots.iter().map(|name| ArgumentContract {
        name: name.clone(),
        description: describe(name),
        domain: slot_domain(service.slot(name)),
        required: true,
        default: None,
    });
    let optional = intent
        .optional_slots
        .iter()
        .map(|(name, default)| ArgumentContract {
            name: name.clone(),
            description: describe(name),
            domain: slot_domain(service.slot(name)),
            required: false,
            default: Some(default.clone()),
        });
    let results = intent
        .result_slots
        .iter()
        .map(|name| ResultContract {
            name: name.clone(),
            description: describe(name),
            domain: slot_domain(service.slot(name)),
        })
        .collect();
    ToolContract {
        version: CONTRACT_VERSION,
        arguments: required.chain(optional).collect(),
        results,
        transactional: intent.is_transactional,
        requires_confirmation: intent.is_transactional,
        confirmation_shows: None,
        failure_modes: failure_modes(service, intent),
        relations: produced_relations(service, index, names),
        sgd: Some(SgdOrigin {
            service: service.service_name.clone(),
            service_description: service.description.clone(),
            intent: intent.name.clone(),
            intent_index: index,
            slots: service.slots.clone(),
        }),
    }
}

/// The failure modes implied by SGD's dialogue semantics for `intent`.
fn failure_modes(service: &SgdService, intent: &SgdIntent) -> Vec<FailureMode> {
    let mut modes = Vec::new();
    if !intent.required_slots.is_empty() {
        modes.push(FailureMode {
            name: MISSING_SLOTS.into(),
            description: format!(
                "Some of the required slots ({}) were not given; ask for them and call again.",
                intent.required_slots.join(", ")
            ),
            retryable: true,
            compensation: None,
        });
    }
    let categorical = intent
        .required_slots
        .iter()
        .chain(intent.optional_slots.iter().map(|(name, _)| name))
        .any(|name| service.slot(name).is_some_and(|slot| slot.is_categorical));
    if categorical {
        modes.push(FailureMode {
            name: INVALID_VALUE.into(),
            description: "A categorical argument is not one of its possible values.".into(),
            retryable: true,
            compensation: None,
        });
    }
    if intent.is_transactional {
        modes.push(FailureMode {
            name: CONFIRMATION_DECLINED.into(),
            description: "The user did not confirm the transaction; nothing was done.".into(),
            retryable: false,
            compensation: None,
        });
    }
    modes.push(FailureMode {
        name: EXECUTION_FAILED.into(),
        description: if intent.is_transactional {
            "The service could not carry out the transaction; nothing was done.".into()
        } else {
            "The service found nothing matching the arguments.".into()
        },
        retryable: !intent.is_transactional,
        compensation: None,
    });
    modes
}

/// `produces` relations from intent `index` to every other intent that takes one of its
/// result slots as an argument, bound on the slot name.
fn produced_relations(service: &SgdService, index: usize, names: &[String]) -> Vec<Relation> {
    let Some(producer) = service.intents.get(index) else {
        return vec![];
    };
    service
        .intents
        .iter()
        .zip(names)
        .enumerate()
        .filter(|(other, _)| *other != index)
        .filter_map(|(_, (consumer, consumer_name))| {
            let bindings: Vec<Binding> = producer
                .result_slots
                .iter()
                .filter(|slot| {
                    consumer.required_slots.contains(slot) || consumer.default_of(slot).is_some()
                })
                .map(|slot| Binding {
                    this: slot.clone(),
                    other: slot.clone(),
                    via: None,
                })
                .collect();
            (!bindings.is_empty()).then(|| Relation {
                kind: RelationKind::Produces,
                tool: consumer_name.clone(),
                bindings,
                guard: vec![],
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sgd::parse_schema;

    fn bank() -> SgdService {
        parse_schema("bank", crate::fixtures::BANK)
            .unwrap()
            .remove(0)
    }

    #[test]
    fn maps_intents_to_tools() {
        let list = phi(&bank());
        let [check, transfer] = &list.tools[..] else {
            panic!("two tools expected")
        };
        assert_eq!(check.name, "check_balance");
        assert_eq!(check.required_arguments(), vec!["account_type"]);
        assert_eq!(
            check.input_schema.pointer("/properties/account_type/enum"),
            Some(&json!(["checking", "savings"]))
        );
        assert!(check.hints().read_only);
        assert!(!transfer.hints().read_only && transfer.hints().destructive);
        // `dontcare` defaults are left implicit.
        assert_eq!(
            transfer.input_schema.pointer("/properties/memo/default"),
            None
        );
        assert!(
            transfer
                .output_properties()
                .iter()
                .any(|(name, _)| *name == "amount")
        );
        assert!(check.contract().unwrap().is_none());
    }

    #[test]
    fn plus_adds_a_complete_contract() {
        let list = phi_plus(&bank());
        let contract = list.tools[1].contract().unwrap().unwrap();
        assert!(contract.transactional && contract.requires_confirmation);
        assert_eq!(
            contract.required_arguments(),
            vec!["account_type", "amount"]
        );
        assert_eq!(
            contract.argument("memo").unwrap().default.as_deref(),
            Some("dontcare")
        );
        assert!(contract.failure_mode(CONFIRMATION_DECLINED).is_some());
        assert_eq!(contract.sgd.unwrap().intent, "TransferMoney");
        // CheckBalance's results feed TransferMoney's arguments.
        let check = list.tools[0].contract().unwrap().unwrap();
        assert_eq!(check.relations[0].kind, RelationKind::Produces);
        assert_eq!(check.relations[0].tool, "transfer_money");
    }

    #[test]
    fn a_categorical_slot_without_values_gets_no_empty_enum() {
        let mut service = bank();
        for slot in &mut service.slots {
            if slot.is_categorical {
                slot.possible_values.clear();
            }
        }
        let list = phi(&service);
        let text = serde_json::to_string(&list).unwrap();
        assert!(!text.contains(r#""enum":[]"#), "{text}");
        assert!(text.contains("account_type"));
    }

    #[test]
    fn makes_tool_names_unique() {
        let mut service = bank();
        service.intents[1].name = "check_balance".into();
        assert_eq!(
            tool_names(&service),
            vec!["check_balance", "check_balance_2"]
        );
    }

    #[test]
    fn documents_one_or_many_services() {
        let mut other = bank();
        other.service_name = "Aardvark_1".into();
        let one = serde_json::to_string(&ToolListsDocument(&phi_schema(&[bank()], false))).unwrap();
        assert!(one.starts_with(r#"{"tools":["#));
        let two = phi_schema(&[bank(), other], false);
        let text = serde_json::to_string(&ToolListsDocument(&two)).unwrap();
        assert!(
            text.find("Banks_1") < text.find("Aardvark_1"),
            "schema order is kept"
        );
    }
}
