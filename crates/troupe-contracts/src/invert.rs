//! Φ⁻¹: from MCP tool lists back to SGD services — partial, with a report of what
//! maps, what cannot, and what is lost or missing.
//!
//! For a tool carrying an MCP+ contract with an SGD origin (as written by Φ⁺) the
//! inversion is exact: the contract holds everything an SGD intent has. For a plain MCP
//! tool (or a contract without origin) it reconstructs what it can:
//!
//! * string properties become slots; `enum`s of strings become categorical slots;
//!   booleans become categorical `True`/`False` slots and small bounded integer ranges
//!   become categorical slots (both lossy: the JSON type is lost);
//! * nested objects, arrays, unbounded numbers, unions and free-form schemas cannot be
//!   represented by SGD slots (which are strings, categorical or free spans) and are
//!   reported as unmappable;
//! * the transactional flag is inferred from `readOnlyHint` — only a hint, and without
//!   any confirmation step;
//! * result slots come from `outputSchema`, and are missing without one;
//! * the service name comes from the server's name, its description is missing, and
//!   the slot table is the union of the tools' properties (its order, and the sample
//!   values of free-text slots, are lost; so is the order of result slots);
//! * what an MCP+ contract adds that SGD cannot hold is reported as unmappable:
//!   `requires`, `precedes`, `compensated_by` relations and `via` bindings, failure modes
//!   beyond SGD's dialogue acts, `confirmation_shows`; a confirmation that differs from
//!   the transactional flag is lossy.

use serde::Serialize;
use serde_json::Value;

use crate::contract::{
    CONFIRMATION_DECLINED, Domain, EXECUTION_FAILED, INVALID_VALUE, MISSING_SLOTS, RelationKind,
    ToolContract,
};
use crate::error::Result;
use crate::mcp::{McpTool, ToolList, pointer_token, tool_pointer};
use crate::naming::camel_case;
use crate::sgd::{DONTCARE, SgdIntent, SgdService, SgdSlot};

/// Largest integer range (maximum − minimum + 1) turned into a categorical slot.
pub const MAX_ENUMERATED_RANGE: i64 = 32;

/// How well one part of a tool maps to SGD.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MappingStatus {
    /// Maps exactly.
    Exact,
    /// Maps, but something is lost or only inferred.
    Lossy,
    /// Cannot be represented in SGD; left out.
    Unmappable,
    /// SGD needs it, MCP does not say it.
    Missing,
}

/// One entry of the loss report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MappingNote {
    /// How well it maps.
    pub status: MappingStatus,
    /// Where, as a JSON pointer into the `tools/list` result (empty for the service).
    pub pointer: String,
    /// What (an argument, the description, the transactional flag...).
    pub subject: String,
    /// Explanation.
    pub detail: String,
}

/// The report for one tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolReport {
    /// The tool's name.
    pub tool: String,
    /// The intent it became.
    pub intent: String,
    /// The service the intent was put in.
    pub service: String,
    /// Whether the tool had an MCP+ contract with an SGD origin.
    pub from_contract: bool,
    /// What maps, what does not.
    pub notes: Vec<MappingNote>,
}

/// The report for one tool list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InversionReport {
    /// The server's name, if known.
    pub server: Option<String>,
    /// Service-level notes (name, description, slot table).
    pub notes: Vec<MappingNote>,
    /// One report per tool, in tool order.
    pub tools: Vec<ToolReport>,
}

impl InversionReport {
    /// Whether everything mapped exactly.
    pub fn is_lossless(&self) -> bool {
        self.notes
            .iter()
            .chain(self.tools.iter().flat_map(|tool| &tool.notes))
            .all(|note| note.status == MappingStatus::Exact)
    }

    /// Number of notes with the given status.
    pub fn count(&self, status: MappingStatus) -> usize {
        self.notes
            .iter()
            .chain(self.tools.iter().flat_map(|tool| &tool.notes))
            .filter(|note| note.status == status)
            .count()
    }
}

/// The intent reconstructed from one tool, before grouping into services.
struct Draft {
    service: String,
    service_description: Option<String>,
    /// The origin's slot table, or the slots found in the tool's schemas.
    slots: Vec<SgdSlot>,
    slots_from_origin: bool,
    intent_index: Option<usize>,
    intent: SgdIntent,
}

/// Φ⁻¹ on one tool list: the SGD services it describes and the loss report.
///
/// Tools with an SGD origin are grouped by their origin's service; the others form one
/// service named after the server. Errors only on a malformed MCP+ contract.
pub fn invert(list: &ToolList) -> Result<(Vec<SgdService>, InversionReport)> {
    let fallback_service = list.server.clone().unwrap_or_else(|| "unknown".to_owned());
    let mut report = InversionReport {
        server: list.server.clone(),
        notes: vec![],
        tools: vec![],
    };
    let mut drafts = Vec::with_capacity(list.tools.len());
    for (index, tool) in list.tools.iter().enumerate() {
        let contract = tool.contract()?;
        let (draft, tool_report) = invert_tool(tool, index, contract.as_ref(), &fallback_service);
        drafts.push(draft);
        report.tools.push(tool_report);
    }
    let services = group(drafts, list.server.is_some(), &mut report.notes);
    Ok((services, report))
}

fn note(
    status: MappingStatus,
    pointer: String,
    subject: &str,
    detail: impl Into<String>,
) -> MappingNote {
    MappingNote {
        status,
        pointer,
        subject: subject.to_owned(),
        detail: detail.into(),
    }
}

fn invert_tool(
    tool: &McpTool,
    index: usize,
    contract: Option<&ToolContract>,
    fallback_service: &str,
) -> (Draft, ToolReport) {
    let at = tool_pointer(index);
    let mut notes = Vec::new();
    let origin = contract.and_then(|contract| contract.sgd.as_ref());

    let name = match origin {
        Some(origin) => origin.intent.clone(),
        None => {
            let name = camel_case(&tool.name);
            notes.push(note(
                MappingStatus::Lossy,
                format!("{at}/name"),
                "intent name",
                format!(
                    "reconstructed from the tool name `{}` as `{name}`",
                    tool.name
                ),
            ));
            name
        }
    };
    let description = match &tool.description {
        Some(description) => description.clone(),
        None => {
            notes.push(note(
                MappingStatus::Missing,
                format!("{at}/description"),
                "intent description",
                "the tool has no description",
            ));
            String::new()
        }
    };

    let (intent, slots) = match (contract, origin) {
        (Some(contract), Some(origin)) => {
            check_schema_agrees(tool, contract, &at, &mut notes);
            let intent = intent_from_contract(name, description, contract);
            (intent, origin.slots.clone())
        }
        _ => intent_from_schemas(tool, name, description, contract, &at, &mut notes),
    };

    if let Some(contract) = contract {
        contract_losses(contract, &at, &mut notes);
    }
    if origin.is_none()
        && intent.result_slots.len() > 1
        && contract.is_none_or(|c| c.results.is_empty())
    {
        notes.push(note(
            MappingStatus::Lossy,
            format!("{at}/outputSchema/properties"),
            "result slot order",
            "JSON object properties have no order: the order of the result slots is lost \
             (they are listed by name)",
        ));
    }
    let draft = Draft {
        service: origin.map_or_else(|| fallback_service.to_owned(), |o| o.service.clone()),
        service_description: origin.map(|origin| origin.service_description.clone()),
        slots,
        slots_from_origin: origin.is_some(),
        intent_index: origin.map(|origin| origin.intent_index),
        intent,
    };
    let tool_report = ToolReport {
        tool: tool.name.clone(),
        intent: draft.intent.name.clone(),
        service: draft.service.clone(),
        from_contract: origin.is_some(),
        notes,
    };
    (draft, tool_report)
}

/// What an MCP+ contract says that SGD has no place for: relations other than the
/// `produces` links Φ⁺ derives from shared slot names, failure modes beyond SGD's
/// dialogue acts, a confirmation that differs from the transactional flag, and the
/// arguments a confirmation must show.
fn contract_losses(contract: &ToolContract, at: &str, notes: &mut Vec<MappingNote>) {
    let base = format!("{at}/_meta/dev.troupe~1contract");
    for (i, relation) in contract.relations.iter().enumerate() {
        let derivable = relation.kind == RelationKind::Produces
            && relation
                .bindings
                .iter()
                .all(|b| b.via.is_none() && b.this == b.other);
        if !derivable {
            notes.push(note(
                MappingStatus::Unmappable,
                format!("{base}/relations/{i}"),
                "relation",
                format!(
                    "`{:?} {}` has no SGD counterpart (SGD relates intents only through shared \
                     slot names)",
                    relation.kind, relation.tool
                )
                .to_lowercase(),
            ));
        }
    }
    for (i, mode) in contract.failure_modes.iter().enumerate() {
        if ![
            MISSING_SLOTS,
            INVALID_VALUE,
            CONFIRMATION_DECLINED,
            EXECUTION_FAILED,
        ]
        .contains(&mode.name.as_str())
        {
            notes.push(note(
                MappingStatus::Unmappable,
                format!("{base}/failure_modes/{i}"),
                "failure mode",
                format!(
                    "`{}` has no SGD counterpart (SGD's failures are its dialogue acts: missing \
                     slots, invalid values, a declined confirmation, no result)",
                    mode.name
                ),
            ));
        }
    }
    if contract.requires_confirmation != contract.transactional {
        notes.push(note(
            MappingStatus::Lossy,
            format!("{base}/requires_confirmation"),
            "confirmation",
            "SGD confirms exactly the transactional intents; this contract's confirmation \
             differs from its transactional flag",
        ));
    }
    if contract.confirmation_shows.is_some() {
        notes.push(note(
            MappingStatus::Unmappable,
            format!("{base}/confirmation_shows"),
            "confirmation_shows",
            "SGD has no place for the arguments a confirmation must show",
        ));
    }
}

fn intent_from_contract(name: String, description: String, contract: &ToolContract) -> SgdIntent {
    SgdIntent {
        name,
        description,
        is_transactional: contract.transactional,
        required_slots: contract
            .arguments
            .iter()
            .filter(|argument| argument.required)
            .map(|argument| argument.name.clone())
            .collect(),
        optional_slots: contract
            .arguments
            .iter()
            .filter(|argument| !argument.required)
            .map(|argument| {
                let default = argument
                    .default
                    .clone()
                    .unwrap_or_else(|| DONTCARE.to_owned());
                (argument.name.clone(), default)
            })
            .collect(),
        result_slots: contract
            .results
            .iter()
            .map(|result| result.name.clone())
            .collect(),
    }
}

/// Notes disagreements between a contract and the schema it annotates.
fn check_schema_agrees(
    tool: &McpTool,
    contract: &ToolContract,
    at: &str,
    notes: &mut Vec<MappingNote>,
) {
    let mut from_schema: Vec<&str> = tool.required_arguments();
    let mut from_contract = contract.required_arguments();
    from_schema.sort_unstable();
    from_contract.sort_unstable();
    if from_schema != from_contract {
        notes.push(note(
            MappingStatus::Lossy,
            format!("{at}/inputSchema/required"),
            "required slots",
            format!(
                "the schema requires [{}] but the contract [{}]; the contract wins",
                from_schema.join(", "),
                from_contract.join(", ")
            ),
        ));
    }
}

/// Reconstructs an intent from the JSON Schemas (and a contract without origin).
fn intent_from_schemas(
    tool: &McpTool,
    name: String,
    description: String,
    contract: Option<&ToolContract>,
    at: &str,
    notes: &mut Vec<MappingNote>,
) -> (SgdIntent, Vec<SgdSlot>) {
    let mut slots: Vec<SgdSlot> = Vec::new();
    let required_names = tool.required_arguments();
    let mut required_slots = Vec::new();
    let mut optional_slots = Vec::new();
    let properties = tool.input_properties();
    let props_at = format!("{at}/inputSchema/properties");

    // Required arguments first, in the order of `required`.
    let mut ordered: Vec<(&str, &Value, bool)> = required_names
        .iter()
        .filter_map(|name| {
            properties
                .iter()
                .find(|(prop, _)| prop == name)
                .map(|(prop, schema)| (*prop, *schema, true))
        })
        .collect();
    for missing in required_names
        .iter()
        .filter(|name| !properties.iter().any(|(p, _)| p == *name))
    {
        notes.push(note(
            MappingStatus::Unmappable,
            format!("{at}/inputSchema/required"),
            missing,
            "listed as required but has no property schema",
        ));
    }
    ordered.extend(
        properties
            .iter()
            .filter(|(prop, _)| !required_names.contains(prop))
            .map(|(prop, schema)| (*prop, *schema, false)),
    );
    let optional_count = ordered.iter().filter(|(_, _, required)| !required).count();

    for (prop, schema, required) in ordered {
        let pointer = format!("{props_at}/{}", pointer_token(prop));
        let argument = contract.and_then(|contract| contract.argument(prop));
        let mapped = map_property(prop, schema, argument.map(|a| &a.domain));
        let mut slot = match mapped {
            PropertyMapping::Unmappable(why) => {
                let consequence = if required {
                    "; the intent loses a required argument"
                } else {
                    ""
                };
                notes.push(note(
                    MappingStatus::Unmappable,
                    pointer,
                    prop,
                    format!("{why}{consequence}"),
                ));
                continue;
            }
            PropertyMapping::Slot { slot, loss } => {
                match loss {
                    Some(loss) => {
                        notes.push(note(MappingStatus::Lossy, pointer.clone(), prop, loss))
                    }
                    None => notes.push(note(MappingStatus::Exact, pointer.clone(), prop, "slot")),
                }
                slot
            }
        };
        if slot.description.is_empty() {
            if let Some(argument) = argument.filter(|a| !a.description.is_empty()) {
                slot.description = argument.description.clone();
            } else {
                notes.push(note(
                    MappingStatus::Missing,
                    format!("{pointer}/description"),
                    prop,
                    "slot description missing",
                ));
            }
        }
        if required {
            required_slots.push(prop.to_owned());
        } else {
            let default = match schema.get("default") {
                None | Some(Value::Null) => argument
                    .and_then(|argument| argument.default.clone())
                    .unwrap_or_else(|| DONTCARE.to_owned()),
                Some(Value::String(default)) => default.clone(),
                Some(other) => {
                    notes.push(note(
                        MappingStatus::Lossy,
                        format!("{pointer}/default"),
                        prop,
                        format!("non-string default {other} kept as a string"),
                    ));
                    json_to_sgd_value(other)
                }
            };
            optional_slots.push((prop.to_owned(), default));
        }
        merge_slot(&mut slots, slot);
    }
    if optional_count > 1 {
        notes.push(note(
            MappingStatus::Lossy,
            props_at.clone(),
            "optional slot order",
            "JSON Schema properties are unordered; optional slots are listed alphabetically",
        ));
    }

    let is_transactional = match contract {
        Some(contract) => contract.transactional,
        None => {
            let hints = tool.hints();
            let detail = match &tool.annotations {
                None => "no annotations: MCP's defaults (not read-only) make it transactional; \
                         no confirmation step is known"
                    .to_owned(),
                Some(_) => format!(
                    "inferred from readOnlyHint={} (a hint, not a guarantee); \
                     MCP has no confirmation step",
                    hints.read_only
                ),
            };
            notes.push(note(
                MappingStatus::Lossy,
                format!("{at}/annotations"),
                "is_transactional",
                detail,
            ));
            !hints.read_only
        }
    };

    let result_slots = results(tool, contract, at, notes, &mut slots);
    let intent = SgdIntent {
        name,
        description,
        is_transactional,
        required_slots,
        optional_slots,
        result_slots,
    };
    (intent, slots)
}

fn results(
    tool: &McpTool,
    contract: Option<&ToolContract>,
    at: &str,
    notes: &mut Vec<MappingNote>,
    slots: &mut Vec<SgdSlot>,
) -> Vec<String> {
    if let Some(contract) = contract.filter(|contract| !contract.results.is_empty()) {
        for result in &contract.results {
            let (is_categorical, possible_values) = match &result.domain {
                Domain::Enumerated { values } => (true, values.clone()),
                _ => (false, vec![]),
            };
            merge_slot(
                slots,
                SgdSlot {
                    name: result.name.clone(),
                    description: result.description.clone(),
                    is_categorical,
                    possible_values,
                },
            );
        }
        return contract
            .results
            .iter()
            .map(|result| result.name.clone())
            .collect();
    }
    let Some(output) = &tool.output_schema else {
        notes.push(note(
            MappingStatus::Missing,
            at.to_owned(),
            "result slots",
            "no outputSchema: the results are unknown",
        ));
        return vec![];
    };
    let mut names = Vec::new();
    for (prop, schema) in crate::mcp::schema_properties(output) {
        let pointer = format!("{at}/outputSchema/properties/{}", pointer_token(prop));
        match map_property(prop, schema, None) {
            PropertyMapping::Unmappable(why) => {
                notes.push(note(MappingStatus::Unmappable, pointer, prop, why));
            }
            PropertyMapping::Slot { slot, loss } => {
                if slot.description.is_empty() {
                    notes.push(note(
                        MappingStatus::Missing,
                        format!("{pointer}/description"),
                        prop,
                        "result slot description missing",
                    ));
                }
                let status = if loss.is_some() {
                    MappingStatus::Lossy
                } else {
                    MappingStatus::Exact
                };
                notes.push(note(
                    status,
                    pointer,
                    prop,
                    loss.unwrap_or_else(|| "result slot".into()),
                ));
                names.push(prop.to_owned());
                merge_slot(slots, slot);
            }
        }
    }
    names
}

/// Adds `slot` unless a slot of that name is already known (the first one wins; a
/// missing description is filled in).
fn merge_slot(slots: &mut Vec<SgdSlot>, slot: SgdSlot) {
    match slots.iter_mut().find(|known| known.name == slot.name) {
        Some(known) if known.description.is_empty() => known.description = slot.description,
        Some(_) => {}
        None => slots.push(slot),
    }
}

/// How one property schema maps to an SGD slot.
enum PropertyMapping {
    /// It maps, with a loss if `Some`.
    Slot { slot: SgdSlot, loss: Option<String> },
    /// It cannot be represented, and why.
    Unmappable(String),
}

fn json_to_sgd_value(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        other => other.to_string(),
    }
}

/// Maps one property schema; `declared` is a domain from a contract, if any.
fn map_property(name: &str, schema: &Value, declared: Option<&Domain>) -> PropertyMapping {
    let description = schema
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let slot = |is_categorical: bool, possible_values: Vec<String>| SgdSlot {
        name: name.to_owned(),
        description: description.clone(),
        is_categorical,
        possible_values,
    };
    if let Some(Domain::Enumerated { values }) = declared {
        return PropertyMapping::Slot {
            slot: slot(true, values.clone()),
            loss: None,
        };
    }
    if schema.get("$ref").is_some() {
        return PropertyMapping::Unmappable("reference ($ref) to a nested schema".into());
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let all_strings = values.iter().all(Value::is_string);
        return PropertyMapping::Slot {
            slot: slot(true, values.iter().map(json_to_sgd_value).collect()),
            loss: (!all_strings).then(|| "non-string enum values kept as strings".to_owned()),
        };
    }
    if let Some(constant) = schema.get("const") {
        return PropertyMapping::Slot {
            slot: slot(true, vec![json_to_sgd_value(constant)]),
            loss: (!constant.is_string())
                .then(|| "non-string constant kept as a string".to_owned()),
        };
    }
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(single)) => vec![single.as_str()],
        Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    };
    match types.as_slice() {
        ["string"] => {
            let constraints: Vec<&str> = ["pattern", "format", "minLength", "maxLength"]
                .into_iter()
                .filter(|key| schema.get(key).is_some())
                .collect();
            PropertyMapping::Slot {
                slot: slot(false, vec![]),
                loss: (!constraints.is_empty())
                    .then(|| format!("string constraints dropped: {}", constraints.join(", "))),
            }
        }
        ["boolean"] => PropertyMapping::Slot {
            slot: slot(true, vec!["True".into(), "False".into()]),
            loss: Some("boolean mapped to a categorical slot True/False".into()),
        },
        ["integer"] => match finite_range(schema) {
            Some((min, max)) => PropertyMapping::Slot {
                slot: slot(true, (min..=max).map(|n| n.to_string()).collect()),
                loss: Some(format!(
                    "integer range {min}..={max} mapped to a categorical slot"
                )),
            },
            None => PropertyMapping::Unmappable(
                "integer without a small finite domain: SGD slots are categorical or free text"
                    .into(),
            ),
        },
        ["number"] => PropertyMapping::Unmappable(
            "number without a finite domain: SGD slots are categorical or free text".into(),
        ),
        ["array"] => PropertyMapping::Unmappable("array: SGD slots hold a single value".into()),
        ["object"] => PropertyMapping::Unmappable("nested object: SGD slots are flat".into()),
        many if many.len() > 1 && many.contains(&"string") => PropertyMapping::Slot {
            slot: slot(false, vec![]),
            loss: Some(format!(
                "union type [{}] narrowed to string",
                many.join(", ")
            )),
        },
        [] => match nullable_string(schema) {
            true => PropertyMapping::Slot {
                slot: slot(false, vec![]),
                loss: Some("nullable string: null is not an SGD value".into()),
            },
            false => PropertyMapping::Unmappable(
                "free-form or union schema without a string type".into(),
            ),
        },
        other => {
            PropertyMapping::Unmappable(format!("type [{}] has no SGD slot", other.join(", ")))
        }
    }
}

/// `anyOf`/`oneOf` of a string and null (pydantic's `Optional[str]`).
fn nullable_string(schema: &Value) -> bool {
    let variants = schema
        .get("anyOf")
        .or_else(|| schema.get("oneOf"))
        .and_then(Value::as_array);
    let Some(variants) = variants else {
        return false;
    };
    let kind = |variant: &Value| {
        variant
            .get("type")
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let kinds: Vec<Option<String>> = variants.iter().map(kind).collect();
    kinds.contains(&Some("string".into()))
        && kinds
            .iter()
            .all(|kind| matches!(kind.as_deref(), Some("string" | "null")))
}

fn finite_range(schema: &Value) -> Option<(i64, i64)> {
    let min = schema.get("minimum").and_then(Value::as_i64)?;
    let max = schema.get("maximum").and_then(Value::as_i64)?;
    (min <= max && max.checked_sub(min)? < MAX_ENUMERATED_RANGE).then_some((min, max))
}

/// Groups drafts into services, in order of first appearance; intents with an origin
/// are sorted by their recorded position.
fn group(drafts: Vec<Draft>, server_named: bool, notes: &mut Vec<MappingNote>) -> Vec<SgdService> {
    let mut order: Vec<String> = Vec::new();
    for draft in &drafts {
        if !order.contains(&draft.service) {
            order.push(draft.service.clone());
        }
    }
    let mut services = Vec::with_capacity(order.len());
    for name in order {
        let mut members: Vec<&Draft> = drafts.iter().filter(|d| d.service == name).collect();
        members.sort_by_key(|draft| draft.intent_index.unwrap_or(usize::MAX));
        let description = members.iter().find_map(|d| d.service_description.clone());
        let from_origin = members.iter().find(|draft| draft.slots_from_origin);
        let mut slots = from_origin
            .map(|draft| draft.slots.clone())
            .unwrap_or_default();
        for draft in &members {
            if from_origin.is_some() && draft.slots_from_origin && draft.slots != slots {
                notes.push(note(
                    MappingStatus::Lossy,
                    String::new(),
                    "slot table",
                    format!(
                        "intent `{}` records a different slot table for `{name}`; the first is kept",
                        draft.intent.name
                    ),
                ));
            }
            for slot in &draft.slots {
                merge_slot(&mut slots, slot.clone());
            }
        }
        if from_origin.is_none() {
            let status = if server_named {
                MappingStatus::Lossy
            } else {
                MappingStatus::Missing
            };
            notes.push(note(
                status,
                String::new(),
                "service name",
                format!("not in MCP; `{name}` is the server's name or a placeholder"),
            ));
            notes.push(note(
                MappingStatus::Lossy,
                String::new(),
                "slot table",
                "rebuilt from the tools' properties: slot order and unused slots are lost",
            ));
            notes.push(note(
                MappingStatus::Missing,
                String::new(),
                "sample values",
                "SGD lists sample values for free-text slots; MCP schemas keep only the enums \
                 of categorical ones",
            ));
        }
        if description.is_none() {
            notes.push(note(
                MappingStatus::Missing,
                String::new(),
                "service description",
                "MCP tool lists do not describe the server",
            ));
        }
        services.push(SgdService {
            service_name: name,
            description: description.unwrap_or_default(),
            slots,
            intents: members
                .into_iter()
                .map(|draft| draft.intent.clone())
                .collect(),
        });
    }
    services
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phi::{phi, phi_plus};
    use crate::sgd::parse_schema;

    fn bank() -> SgdService {
        parse_schema("bank", crate::fixtures::BANK)
            .unwrap()
            .remove(0)
    }

    #[test]
    fn inverts_phi_plus_exactly() {
        let service = bank();
        let (services, report) = invert(&phi_plus(&service)).unwrap();
        assert_eq!(services, vec![service]);
        assert!(report.is_lossless(), "{report:#?}");
    }

    #[test]
    fn inverts_plain_phi_partially() {
        let service = bank();
        let (services, report) = invert(&phi(&service)).unwrap();
        let [recovered] = &services[..] else {
            panic!("one service")
        };
        assert_eq!(recovered.service_name, "Banks_1");
        assert_eq!(recovered.description, "");
        // Intents, slots and transactional flags survive; the description does not.
        assert_eq!(recovered.intents.len(), 2);
        assert_eq!(recovered.intents[1].name, "TransferMoney");
        assert!(recovered.intents[1].is_transactional);
        assert_eq!(
            recovered.intents[1].optional_slots,
            vec![("memo".into(), "dontcare".into())]
        );
        assert!(!report.is_lossless());
        assert!(report.count(MappingStatus::Missing) >= 1);
    }

    #[test]
    fn reports_unmappable_properties() {
        let tool: McpTool = serde_json::from_value(serde_json::json!({
            "name": "edit_file",
            "inputSchema": {"type": "object", "required": ["path", "edits"], "properties": {
                "path": {"type": "string", "description": "File"},
                "edits": {"type": "array", "items": {"type": "object"}},
                "head": {"type": "number"},
                "dryRun": {"type": "boolean", "default": false},
                "level": {"type": "integer", "minimum": 1, "maximum": 3},
                "since": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null},
                "blob": {}
            }}
        }))
        .unwrap();
        let list = ToolList {
            tools: vec![tool],
            ..Default::default()
        };
        let (services, report) = invert(&list).unwrap();
        let intent = &services[0].intents[0];
        assert_eq!(intent.required_slots, vec!["path"]);
        assert!(intent.is_transactional, "no annotations: not read-only");
        let status_of = |subject: &str| {
            report.tools[0]
                .notes
                .iter()
                .find(|n| n.subject == subject)
                .map(|n| n.status)
        };
        assert_eq!(status_of("edits"), Some(MappingStatus::Unmappable));
        assert_eq!(status_of("head"), Some(MappingStatus::Unmappable));
        assert_eq!(status_of("blob"), Some(MappingStatus::Unmappable));
        assert_eq!(status_of("dryRun"), Some(MappingStatus::Lossy));
        assert_eq!(status_of("level"), Some(MappingStatus::Lossy));
        assert_eq!(status_of("since"), Some(MappingStatus::Lossy));
        assert_eq!(status_of("result slots"), Some(MappingStatus::Missing));
        assert_eq!(intent.default_of("dryRun"), Some("False"));
        let level = services[0].slot("level").unwrap();
        assert_eq!(level.possible_values, vec!["1", "2", "3"]);
    }

    #[test]
    fn uses_a_contract_without_origin() {
        let mut list = ToolList {
            server: Some("tickets".into()),
            tools: vec![
                serde_json::from_value(serde_json::json!({
                    "name": "book_ticket", "description": "Book a ticket",
                    "inputSchema": {"type": "object", "required": ["seat"], "properties": {
                        "seat": {"type": "string"}, "class": {"type": "string"}}}
                }))
                .unwrap(),
            ],
            ..Default::default()
        };
        let sidecar: crate::contract::Sidecar = serde_json::from_value(serde_json::json!({
            "book_ticket": {"transactional": true, "requires_confirmation": true,
                "arguments": [
                    {"name": "seat", "description": "Seat number", "domain": {"kind": "free_text"},
                     "required": true},
                    {"name": "class", "description": "Travel class", "required": false,
                     "domain": {"kind": "enumerated", "values": ["first", "second"]},
                     "default": "second"}],
                "results": [{"name": "price", "description": "Price", "domain": {"kind": "free_text"}}]}
        }))
        .unwrap();
        crate::contract::apply_sidecar(&mut list, &sidecar);
        let (services, report) = invert(&list).unwrap();
        let service = &services[0];
        let intent = &service.intents[0];
        assert!(intent.is_transactional);
        assert_eq!(intent.default_of("class"), Some("second"));
        assert_eq!(intent.result_slots, vec!["price"]);
        let class = service.slot("class").unwrap();
        assert!(class.is_categorical && class.description == "Travel class");
        let subjects: Vec<&str> = report.tools[0]
            .notes
            .iter()
            .map(|n| n.subject.as_str())
            .collect();
        assert!(
            !subjects.contains(&"is_transactional"),
            "known from the contract"
        );
        assert!(
            !subjects.contains(&"result slots"),
            "known from the contract"
        );
    }
}
