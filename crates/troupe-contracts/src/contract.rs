//! MCP+: MCP tool definitions extended with a *contract* covering four principles.
//!
//! 1. **Semantic completeness** — every argument and result is described, with its value
//!    domain ([`ArgumentContract`], [`ResultContract`], [`Domain`]).
//! 2. **Explicit action boundaries** — whether the tool is transactional (changes the
//!    world) and whether a person must confirm before it runs
//!    ([`ToolContract::transactional`], [`ToolContract::requires_confirmation`]). Unlike
//!    MCP's annotations these are commitments, not hints.
//! 3. **Failure modes** — the named errors the tool can return, what each means, whether
//!    a retry can succeed and what compensates it ([`FailureMode`]).
//! 4. **Inter-tool relationships** — `requires`, `precedes`, `compensated_by`,
//!    `produces` (→ consumes), with argument bindings ([`Relation`]).
//!
//! A contract travels inside the tool definition, in `_meta` under the namespaced key
//! [`META_KEY`] (plain MCP clients ignore `_meta`), or — for servers one does not
//! control — in a *sidecar* JSON file mapping tool name → contract ([`Sidecar`]); the
//! crate's `examples/filesystem.contracts.json` is one for the reference filesystem
//! server (`troupe contracts lint filesystem.json --contracts filesystem.contracts.json`).
//!
//! Example (abridged):
//!
//! ```json
//! {"name": "transfer_money", "inputSchema": {"...": "..."},
//!  "_meta": {"dev.troupe/contract": {
//!    "version": 1, "transactional": true, "requires_confirmation": true,
//!    "arguments": [{"name": "amount", "description": "The amount of money to transfer",
//!                   "domain": {"kind": "free_text"}, "required": true}],
//!    "failure_modes": [{"name": "MissingSlots", "description": "...", "retryable": true}],
//!    "relations": [{"kind": "requires", "tool": "check_balance",
//!                   "bindings": [{"this": "account_type", "other": "account_type"}]}]}}}
//! ```
//!
//! The optional [`SgdOrigin`] records what an SGD schema knows that MCP has no place
//! for (service name and description, the service's slot table, the intent's name and
//! position), so that an SGD service converted to MCP+ can be recovered exactly.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Number, Value};

use crate::error::{ContractsError, Result, parse_json, read_file};
use crate::mcp::{McpTool, ToolList};
use crate::sgd::SgdSlot;

/// The `_meta` key under which a tool carries its MCP+ contract.
pub const META_KEY: &str = "dev.troupe/contract";

/// The contract format version written by this crate.
pub const CONTRACT_VERSION: u32 = 1;

/// Failure mode: a required argument was not supplied.
pub const MISSING_SLOTS: &str = "MissingSlots";
/// Failure mode: an argument is outside its declared domain.
pub const INVALID_VALUE: &str = "InvalidValue";
/// Failure mode: the person declined the confirmation.
pub const CONFIRMATION_DECLINED: &str = "ConfirmationDeclined";
/// Failure mode: the operation itself failed (nothing matched, the backend refused...).
pub const EXECUTION_FAILED: &str = "ExecutionFailed";

/// The MCP+ contract of one tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolContract {
    /// Format version ([`CONTRACT_VERSION`]).
    #[serde(default = "default_version")]
    pub version: u32,
    /// Principle 1: every argument, in order, with meaning and domain.
    #[serde(default)]
    pub arguments: Vec<ArgumentContract>,
    /// Principle 1: every result field, in order, with meaning and domain.
    #[serde(default)]
    pub results: Vec<ResultContract>,
    /// Principle 2: the tool changes the world (an SGD transactional intent).
    pub transactional: bool,
    /// Principle 2: a person must confirm each call before it runs.
    pub requires_confirmation: bool,
    /// Principle 2: the arguments a confirmation must show the person (the
    /// values that identify the transaction: what is booked, paid, deleted).
    /// A workflow's confirmation question must be computed from these values
    /// (by provenance). `None`: every argument of the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation_shows: Option<Vec<String>>,
    /// Principle 3: the named errors the tool can return.
    #[serde(default)]
    pub failure_modes: Vec<FailureMode>,
    /// Principle 4: how the tool relates to other tools of the same server.
    #[serde(default)]
    pub relations: Vec<Relation>,
    /// What is needed to invert the tool back to an SGD intent losslessly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sgd: Option<SgdOrigin>,
}

fn default_version() -> u32 {
    CONTRACT_VERSION
}

/// Meaning and domain of one argument.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArgumentContract {
    /// Argument name (a property of the input schema).
    pub name: String,
    /// What the value means.
    pub description: String,
    /// Which values are valid.
    pub domain: Domain,
    /// Whether the tool cannot run without it.
    pub required: bool,
    /// The value assumed when it is omitted (`dontcare`: any value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// Meaning and domain of one result field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultContract {
    /// Field name (a property of the output schema).
    pub name: String,
    /// What the value means.
    pub description: String,
    /// Which values can occur.
    pub domain: Domain,
}

/// A value domain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Domain {
    /// One of a finite list of values (an SGD categorical slot).
    Enumerated {
        /// The values.
        values: Vec<String>,
    },
    /// A free natural-language value, such as a name or a date as said (an SGD
    /// non-categorical slot).
    FreeText,
    /// A string matching a regular expression.
    Pattern {
        /// The regular expression.
        pattern: String,
    },
    /// A string of a JSON Schema `format` (`uri`, `date-time`, ...).
    Format {
        /// The format name.
        format: String,
    },
    /// A number, optionally bounded.
    Numeric {
        /// Inclusive lower bound.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        minimum: Option<Number>,
        /// Inclusive upper bound.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        maximum: Option<Number>,
    },
    /// `true` or `false`.
    Boolean,
    /// A structured value described by the JSON Schema of the argument.
    Structured,
}

/// A named error a tool can return.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureMode {
    /// Stable error name, e.g. `MissingSlots`.
    pub name: String,
    /// What it means and when it happens.
    pub description: String,
    /// Whether calling again (possibly with corrected arguments) can succeed.
    pub retryable: bool,
    /// The tool or action that undoes partial effects, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compensation: Option<String>,
}

/// A relationship from this tool to another tool of the same server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Relation {
    /// The kind of relationship.
    pub kind: RelationKind,
    /// The other tool.
    pub tool: String,
    /// Equalities between this tool's fields and the other tool's.
    #[serde(default)]
    pub bindings: Vec<Binding>,
    /// `requires` only: conditions on the required tool's results that must
    /// be tested true before this tool runs (e.g. `sufficient == true`): the
    /// call must lie in a branch whose guard implies them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guard: Vec<ResultCondition>,
}

/// A required tool's boolean result tested for a value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultCondition {
    /// A result field of the required tool (an output, or a field of its
    /// single record output).
    pub output: String,
    /// The value it must have.
    #[serde(default = "yes")]
    pub equals: bool,
}

fn yes() -> bool {
    true
}

/// Kinds of inter-tool relationships.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RelationKind {
    /// This tool may only run after a successful call of the other tool (with the
    /// bound arguments equal), e.g. `book_ticket` requires `check_balance`.
    Requires,
    /// This tool is meant to run before the other tool.
    Precedes,
    /// The other tool undoes this tool's effects.
    CompensatedBy,
    /// This tool's results feed the other tool's arguments (`this` is a result field,
    /// `other` an argument of the other tool).
    Produces,
}

/// `this` field of the tool carrying the relation equals `other` field of the related tool.
///
/// With `via`, the value is reached through a third tool instead: `other` of
/// the related tool equals result `via.field` of a call of `via.tool` whose
/// own bindings (`this` of the tool carrying the relation, `other` of
/// `via.tool`) hold. E.g. `book_ticket requires check_balance` with
/// `{"other": "account", "via": {"tool": "get_user", "field": "account",
/// "bindings": [{"this": "user_id", "other": "id"}]}}`: the account checked is
/// the account of the user who books.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Binding {
    /// A field of the tool carrying the relation (empty with `via`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub this: String,
    /// A field of the related tool.
    pub other: String,
    /// The third tool through which `other` is bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<Via>,
}

/// How a binding reaches its value through a call of a third tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Via {
    /// The third tool.
    pub tool: String,
    /// Its result field whose value the binding's `other` must have.
    pub field: String,
    /// Which call of it: `this` (of the tool carrying the relation) equals
    /// `other` (a parameter or result of the third tool).
    #[serde(default)]
    pub bindings: Vec<Binding>,
}

/// What an SGD schema knows about a tool's intent that MCP has no place for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SgdOrigin {
    /// The SGD service name.
    pub service: String,
    /// The SGD service description.
    pub service_description: String,
    /// The intent's exact name.
    pub intent: String,
    /// The intent's position in the service.
    pub intent_index: usize,
    /// The service's whole slot table, in order (with `is_categorical`,
    /// `possible_values`).
    pub slots: Vec<SgdSlot>,
}

/// Contracts for the tools of a server one does not control: tool name → contract.
pub type Sidecar = BTreeMap<String, ToolContract>;

impl ToolContract {
    /// The failure mode called `name`, if declared.
    pub fn failure_mode(&self, name: &str) -> Option<&FailureMode> {
        self.failure_modes.iter().find(|mode| mode.name == name)
    }

    /// The argument called `name`, if declared.
    pub fn argument(&self, name: &str) -> Option<&ArgumentContract> {
        self.arguments.iter().find(|argument| argument.name == name)
    }

    /// The names of the required arguments, in order.
    pub fn required_arguments(&self) -> Vec<&str> {
        self.arguments
            .iter()
            .filter(|argument| argument.required)
            .map(|argument| argument.name.as_str())
            .collect()
    }
}

impl McpTool {
    /// The tool's MCP+ contract from `_meta`, `Ok(None)` if it has none.
    pub fn contract(&self) -> Result<Option<ToolContract>> {
        let Some(value) = self.meta.as_ref().and_then(|meta| meta.get(META_KEY)) else {
            return Ok(None);
        };
        serde_json::from_value(value.clone())
            .map(Some)
            .map_err(|source| ContractsError::InvalidContract {
                tool: self.name.clone(),
                source,
            })
    }

    /// Stores `contract` in the tool's `_meta`, replacing any previous one.
    pub fn set_contract(&mut self, contract: &ToolContract) {
        let value = serde_json::to_value(contract).unwrap_or(Value::Null);
        self.meta
            .get_or_insert_with(Default::default)
            .insert(META_KEY.to_owned(), value);
    }
}

/// Parses a sidecar file: a JSON object mapping tool names to contracts.
pub fn parse_sidecar(what: &str, text: &str) -> Result<Sidecar> {
    parse_json(what, text)
}

/// Loads a sidecar file (see [`parse_sidecar`]).
pub fn load_sidecar(path: &std::path::Path) -> Result<Sidecar> {
    let text = read_file(path)?;
    parse_sidecar(&path.display().to_string(), &text)
}

/// Attaches the sidecar's contracts to the matching tools; returns the sidecar's tool
/// names that match no tool of the list.
pub fn apply_sidecar(list: &mut ToolList, sidecar: &Sidecar) -> Vec<String> {
    for tool in &mut list.tools {
        if let Some(contract) = sidecar.get(&tool.name) {
            tool.set_contract(contract);
        }
    }
    sidecar
        .keys()
        .filter(|name| !list.tools.iter().any(|tool| &tool.name == *name))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ToolContract {
        ToolContract {
            version: CONTRACT_VERSION,
            arguments: vec![ArgumentContract {
                name: "user_id".into(),
                description: "The user".into(),
                domain: Domain::Pattern {
                    pattern: "^u[0-9]+$".into(),
                },
                required: true,
                default: None,
            }],
            results: vec![],
            transactional: true,
            requires_confirmation: true,
            confirmation_shows: None,
            failure_modes: vec![FailureMode {
                name: "InsufficientFunds".into(),
                description: "The balance does not cover the price".into(),
                retryable: false,
                compensation: None,
            }],
            relations: vec![Relation {
                kind: RelationKind::Requires,
                tool: "check_balance".into(),
                bindings: vec![Binding {
                    this: "user_id".into(),
                    other: "user_id".into(),
                    via: None,
                }],
                guard: vec![],
            }],
            sgd: None,
        }
    }

    #[test]
    fn stores_and_reads_the_contract_in_meta() {
        let mut tool = McpTool::new("book_ticket");
        assert_eq!(tool.contract().unwrap(), None);
        tool.set_contract(&sample());
        assert_eq!(tool.contract().unwrap(), Some(sample()));
        let json = serde_json::to_value(&tool).unwrap();
        assert_eq!(
            json.pointer("/_meta/dev.troupe~1contract/relations/0/kind"),
            Some(&Value::from("requires"))
        );
    }

    #[test]
    fn reports_a_malformed_contract() {
        let mut tool = McpTool::new("t");
        tool.meta =
            Some(serde_json::from_str(r#"{"dev.troupe/contract": {"transactional": 1}}"#).unwrap());
        assert!(matches!(
            tool.contract(),
            Err(ContractsError::InvalidContract { .. })
        ));
    }

    #[test]
    fn applies_a_sidecar() {
        let mut list = ToolList {
            tools: vec![McpTool::new("book_ticket")],
            ..Default::default()
        };
        let sidecar: Sidecar = [
            ("book_ticket".to_owned(), sample()),
            ("nope".to_owned(), sample()),
        ]
        .into_iter()
        .collect();
        let text = serde_json::to_string(&sidecar).unwrap();
        let parsed = parse_sidecar("sidecar", &text).unwrap();
        assert_eq!(apply_sidecar(&mut list, &parsed), vec!["nope".to_owned()]);
        assert!(list.tools[0].contract().unwrap().is_some());
    }
}
