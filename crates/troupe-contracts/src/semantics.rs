//! Labelled transition semantics for SGD services, MCP servers and MCP+ servers, over
//! one common label alphabet, at two levels of observation, and their comparison by
//! bisimulation (see `docs/contracts.md` for the definitions and the results).
//!
//! # The common alphabet ([`Label`])
//!
//! * `list` — look the operations up (MCP `tools/list`; the SGD schema is public);
//!   a self-loop at the menu;
//! * `select(op)` — choose an operation (an SGD intent, an MCP tool);
//! * `collect(slot)` — supply a value for an argument; at the behavioural level the
//!   label also carries the argument's value domain (`collect(class∈{economy|business})`)
//!   and `(undescribed)` when nothing says what the argument means;
//! * `invoke(op)` — try to run the operation with the arguments collected so far;
//! * `error(op, MissingSlots{…})` — a required argument is missing;
//! * `error(op, Requires(r))` — (behavioural) a `requires` relation is not met: `r` has
//!   not succeeded yet in this session;
//! * `confirm(op)` / `decline(op)` — (behavioural) the person confirms or declines;
//! * `execute(op)` — the operation runs;
//! * `result(op)` / `error(op, M)` — it succeeds, or fails with failure mode `M`
//!   (structural: only `ExecutionFailed`; behavioural: every observable failure mode
//!   the formalism names, `InvalidValue` before execution).
//!
//! # Two levels ([`Level`])
//!
//! * **Structural** — the paper's level: which operations exist, which arguments each
//!   requires and accepts, and that a call either lacks arguments, succeeds or fails.
//!   One operation at a time (after a result the system is back at that operation).
//!   Φ preserves exactly this, so SGD ~ Φ(SGD) for every service (the paper's theorem).
//! * **Behavioural** — troupe's level: the structural observations plus the
//!   confirmation step of transactions, the named failure modes, the value domains
//!   and argument descriptions, and `requires` relations. The service is modelled as a
//!   whole: after each call the system returns to the menu, remembering which
//!   operations have succeeded (for the operations some `requires` names), so traces
//!   span several tools and a relation or failure mode that one side lacks shows in
//!   behaviour. SGD ≁ Φ(SGD) exactly for services with transactional intents (MCP's
//!   hints are not a protocol step); SGD ~ Φ⁺(SGD) for every service; and an MCP+
//!   contract stripped of its relations, failure modes, domains or descriptions is not
//!   behaviourally equivalent to the original.
//!
//! # The finite abstraction
//!
//! Slot values are abstracted to {unset, set}, per operation: an operation with r
//! required arguments has at most 4·2ʳ states, times 2ᵏ for the k operations some
//! `requires` names. An operation with more than [`MAX_REQUIRED_SLOTS`] required
//! arguments is left out of both sides and reported as skipped (every other verdict
//! stands).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Serialize, Serializer};

use crate::bisim::{Counterexample, check};
use crate::contract::{CONFIRMATION_DECLINED, Domain, MISSING_SLOTS, RelationKind};
use crate::error::{ContractsError, Result};
use crate::lts::Lts;
use crate::mcp::ToolList;
use crate::phi::{phi, phi_plus, tool_names};
use crate::sgd::SgdService;

/// Largest number of required arguments of one operation the abstraction handles.
pub const MAX_REQUIRED_SLOTS: usize = 12;

/// Largest number of operations whose success the behavioural model remembers.
pub const MAX_REMEMBERED: usize = 8;

/// A label of the common alphabet (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Label {
    /// Look the operations up.
    List,
    /// Choose an operation.
    Select(String),
    /// Supply an argument (rendered with its domain at the behavioural level).
    Collect(String),
    /// Try to run the operation.
    Invoke(String),
    /// A required argument is missing (the operation, the missing arguments).
    MissingSlots(String, Vec<String>),
    /// A `requires` relation is not met (the operation, the required one).
    Requires(String, String),
    /// The person confirms.
    Confirm(String),
    /// The person declines.
    Decline(String),
    /// The operation runs.
    Execute(String),
    /// It succeeded.
    Result(String),
    /// It failed with `ExecutionFailed`.
    Failed(String),
    /// It failed with another named failure mode (the operation, the mode).
    Fails(String, String),
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Label::List => f.write_str("list"),
            Label::Select(op) => write!(f, "select({op})"),
            Label::Collect(slot) => write!(f, "collect({slot})"),
            Label::Invoke(op) => write!(f, "invoke({op})"),
            Label::MissingSlots(op, missing) => {
                write!(f, "error({op}, MissingSlots{{{}}})", missing.join(", "))
            }
            Label::Requires(op, other) => write!(f, "error({op}, Requires({other}))"),
            Label::Confirm(op) => write!(f, "confirm({op})"),
            Label::Decline(op) => write!(f, "decline({op})"),
            Label::Execute(op) => write!(f, "execute({op})"),
            Label::Result(op) => write!(f, "result({op})"),
            Label::Failed(op) => write!(f, "error({op}, ExecutionFailed)"),
            Label::Fails(op, mode) => write!(f, "error({op}, {mode})"),
        }
    }
}

impl Serialize for Label {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// The level of observation (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// The paper's: operations, required and accepted arguments, success or failure.
    Structural,
    /// troupe's: also confirmation, failure modes, domains, descriptions, requires.
    Behavioural,
}

/// The failure mode whose observation is `Label::Failed`.
const EXECUTION_FAILED: &str = crate::contract::EXECUTION_FAILED;
/// The failure mode observed before execution.
const INVALID_VALUE: &str = crate::contract::INVALID_VALUE;

/// What a formalism tells about one operation: all the semantics needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operation {
    /// The operation's name in labels (the MCP tool name Φ gives it).
    pub name: String,
    /// Required arguments.
    pub required: Vec<String>,
    /// Optional arguments.
    pub optional: Vec<String>,
    /// Whether a person must confirm before it runs.
    pub confirmation: bool,
    /// Per argument with a finite domain: its values.
    pub domains: BTreeMap<String, Vec<String>>,
    /// Arguments nothing describes.
    pub undescribed: BTreeSet<String>,
    /// Observable failure modes (not `MissingSlots`, not `ConfirmationDeclined`).
    pub failures: BTreeSet<String>,
    /// Operations that must have succeeded before this one runs.
    pub requires: BTreeSet<String>,
}

impl Operation {
    /// A plain operation: arguments only, failing with `ExecutionFailed`.
    pub fn new(name: impl Into<String>, required: Vec<String>, optional: Vec<String>) -> Self {
        Operation {
            name: name.into(),
            required,
            optional,
            confirmation: false,
            domains: BTreeMap::new(),
            undescribed: BTreeSet::new(),
            failures: [EXECUTION_FAILED.to_owned()].into_iter().collect(),
            requires: BTreeSet::new(),
        }
    }

    /// The operations of an SGD service (named as Φ names its tools): confirmation
    /// iff transactional; `InvalidValue` iff a categorical argument; `ExecutionFailed`.
    pub fn from_sgd(service: &SgdService) -> Vec<Operation> {
        service
            .intents
            .iter()
            .zip(tool_names(service))
            .map(|(intent, name)| {
                let optional: Vec<String> = intent
                    .optional_slots
                    .iter()
                    .map(|(slot, _)| slot.clone())
                    .collect();
                let mut op = Operation::new(name, intent.required_slots.clone(), optional);
                op.confirmation = intent.is_transactional;
                for arg in op.required.iter().chain(&op.optional) {
                    match service.slot(arg) {
                        Some(slot) => {
                            if slot.is_categorical && !slot.possible_values.is_empty() {
                                op.domains.insert(arg.clone(), slot.possible_values.clone());
                            }
                            if slot.description.trim().is_empty() {
                                op.undescribed.insert(arg.clone());
                            }
                        }
                        None => {
                            op.undescribed.insert(arg.clone());
                        }
                    }
                }
                let categorical = op
                    .required
                    .iter()
                    .chain(&op.optional)
                    .any(|arg| service.slot(arg).is_some_and(|slot| slot.is_categorical));
                if categorical {
                    op.failures.insert(INVALID_VALUE.to_owned());
                }
                op
            })
            .collect()
    }

    /// The operations of a plain MCP server: annotations are hints, so never a
    /// confirmation step; `enum`s are domains (the schema rejects other values:
    /// `InvalidValue`); a failed call is `isError` (`ExecutionFailed`).
    pub fn from_mcp(list: &ToolList) -> Vec<Operation> {
        list.tools
            .iter()
            .map(|tool| {
                let required: Vec<String> = tool
                    .required_arguments()
                    .into_iter()
                    .map(str::to_owned)
                    .collect();
                let properties = tool.input_properties();
                let optional = properties
                    .iter()
                    .map(|(name, _)| (*name).to_owned())
                    .filter(|name| !required.contains(name))
                    .collect();
                let mut op = Operation::new(tool.name.clone(), required, optional);
                for (name, schema) in &properties {
                    if let Some(values) = schema.get("enum").and_then(|e| e.as_array())
                        && !values.is_empty()
                    {
                        let values = values
                            .iter()
                            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                            .collect();
                        op.domains.insert((*name).to_owned(), values);
                        op.failures.insert(INVALID_VALUE.to_owned());
                    }
                    let described = schema
                        .get("description")
                        .and_then(|d| d.as_str())
                        .is_some_and(|d| !d.trim().is_empty());
                    if !described {
                        op.undescribed.insert((*name).to_owned());
                    }
                }
                op
            })
            .collect()
    }

    /// The operations of an MCP+ server: arguments, domains, descriptions, failure
    /// modes, `requires` relations and confirmation from each tool's contract (tools
    /// without one behave as in MCP).
    pub fn from_mcp_plus(list: &ToolList) -> Result<Vec<Operation>> {
        let plain = Operation::from_mcp(list);
        list.tools
            .iter()
            .zip(plain)
            .map(|(tool, plain)| {
                Ok(match tool.contract()? {
                    None => plain,
                    Some(contract) => {
                        let required = contract
                            .required_arguments()
                            .into_iter()
                            .map(str::to_owned)
                            .collect();
                        let optional = contract
                            .arguments
                            .iter()
                            .filter(|argument| !argument.required)
                            .map(|argument| argument.name.clone())
                            .collect();
                        let mut op = Operation::new(tool.name.clone(), required, optional);
                        op.confirmation = contract.requires_confirmation;
                        op.failures = contract
                            .failure_modes
                            .iter()
                            .map(|m| m.name.clone())
                            .filter(|m| m != MISSING_SLOTS && m != CONFIRMATION_DECLINED)
                            .collect();
                        for argument in &contract.arguments {
                            if let Domain::Enumerated { values } = &argument.domain
                                && !values.is_empty()
                            {
                                op.domains.insert(argument.name.clone(), values.clone());
                            }
                            if argument.description.trim().is_empty() {
                                op.undescribed.insert(argument.name.clone());
                            }
                        }
                        op.requires = contract
                            .relations
                            .iter()
                            .filter(|r| r.kind == RelationKind::Requires)
                            .map(|r| r.tool.clone())
                            .collect();
                        op
                    }
                })
            })
            .collect()
    }

    /// What the structural level sees of the operation.
    fn structural(&self) -> Operation {
        Operation::new(
            self.name.clone(),
            self.required.clone(),
            self.optional.clone(),
        )
    }

    fn collect_label(&self, slot: &str, level: Level) -> Label {
        if level == Level::Structural {
            return Label::Collect(slot.to_owned());
        }
        let mut text = slot.to_owned();
        if let Some(values) = self.domains.get(slot) {
            text.push_str(&format!("∈{{{}}}", values.join("|")));
        }
        if self.undescribed.contains(slot) {
            text.push_str(" (undescribed)");
        }
        Label::Collect(text)
    }
}

/// Where an operation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Phase {
    Idle,
    Called,
    Confirmed,
    Running,
}

/// A state: the menu, or operation `op` in `phase` with the required arguments in
/// `collected` (a bit set over `Operation::required`); `memory` is the set of
/// remembered operations that have succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum State {
    Menu {
        memory: u32,
    },
    At {
        op: usize,
        phase: Phase,
        collected: u32,
        memory: u32,
    },
}

/// A server's operations ready for exploration at one level.
struct Model<'a> {
    ops: Vec<Operation>,
    level: Level,
    /// The operations whose success is remembered (bit i = `remembered[i]`).
    remembered: Vec<&'a str>,
}

/// The LTS of a server offering `operations`, at the behavioural level.
pub fn server_lts(operations: &[Operation]) -> Result<Lts<Label>> {
    server_lts_at(operations, Level::Behavioural)
}

/// The LTS of a server offering `operations` at `level` (see the module docs).
pub fn server_lts_at(operations: &[Operation], level: Level) -> Result<Lts<Label>> {
    if let Some(op) = operations
        .iter()
        .find(|op| op.required.len() > MAX_REQUIRED_SLOTS)
    {
        return Err(ContractsError::AbstractionTooLarge {
            intent: op.name.clone(),
            required: op.required.len(),
            max: MAX_REQUIRED_SLOTS,
        });
    }
    let ops: Vec<Operation> = match level {
        Level::Structural => operations.iter().map(Operation::structural).collect(),
        Level::Behavioural => operations.to_vec(),
    };
    let names: BTreeSet<&str> = operations.iter().map(|op| op.name.as_str()).collect();
    let remembered: Vec<&str> = match level {
        Level::Structural => vec![],
        Level::Behavioural => operations
            .iter()
            .flat_map(|op| op.requires.iter().map(String::as_str))
            .collect::<BTreeSet<&str>>()
            .into_iter()
            .filter(|r| names.contains(r))
            .take(MAX_REMEMBERED)
            .collect(),
    };
    let model = Model {
        ops,
        level,
        remembered,
    };
    let limit = (1 + model
        .ops
        .iter()
        .map(|op| 4usize << op.required.len())
        .sum::<usize>())
        << model.remembered.len();
    let step = |state: &State| model.step(state);
    let name = |state: &State| model.state_name(state);
    Lts::explore(State::Menu { memory: 0 }, step, name, limit + 1).map_err(|_| {
        ContractsError::AbstractionTooLarge {
            intent: "server".into(),
            required: MAX_REQUIRED_SLOTS + 1,
            max: MAX_REQUIRED_SLOTS,
        }
    })
}

/// The LTS of a single operation (a server offering only it), behavioural.
pub fn operation_lts(operation: &Operation) -> Result<Lts<Label>> {
    server_lts(std::slice::from_ref(operation))
}

impl Model<'_> {
    fn bit(&self, name: &str) -> Option<u32> {
        self.remembered
            .iter()
            .position(|r| *r == name)
            .map(|i| 1u32 << i)
    }

    fn step(&self, state: &State) -> Vec<(Label, State)> {
        let (op, phase, collected, memory) = match *state {
            State::Menu { memory } => {
                let mut out = vec![(Label::List, State::Menu { memory })];
                out.extend(self.ops.iter().enumerate().map(|(op, operation)| {
                    let start = State::At {
                        op,
                        phase: Phase::Idle,
                        collected: 0,
                        memory,
                    };
                    (Label::Select(operation.name.clone()), start)
                }));
                return out;
            }
            State::At {
                op,
                phase,
                collected,
                memory,
            } => (op, phase, collected, memory),
        };
        let Some(operation) = self.ops.get(op) else {
            return vec![];
        };
        let name = || operation.name.clone();
        let at = |phase, collected| State::At {
            op,
            phase,
            collected,
            memory,
        };
        let idle = at(Phase::Idle, collected);
        // Structural: back at the operation; behavioural: back at the menu.
        let done = |memory: u32| match self.level {
            Level::Structural => at(Phase::Idle, collected),
            Level::Behavioural => State::Menu { memory },
        };
        let all = (1u32 << operation.required.len()) - 1;
        match phase {
            Phase::Idle => {
                let mut out = vec![(Label::List, idle)];
                for (bit, slot) in operation.required.iter().enumerate() {
                    out.push((
                        operation.collect_label(slot, self.level),
                        at(Phase::Idle, collected | (1 << bit)),
                    ));
                }
                for slot in &operation.optional {
                    out.push((operation.collect_label(slot, self.level), idle));
                }
                out.push((Label::Invoke(name()), at(Phase::Called, collected)));
                out
            }
            Phase::Called if collected != all => {
                let mut missing: Vec<String> = operation
                    .required
                    .iter()
                    .enumerate()
                    .filter(|(bit, _)| collected & (1 << bit) == 0)
                    .map(|(_, slot)| slot.clone())
                    .collect();
                missing.sort();
                vec![(Label::MissingSlots(name(), missing), idle)]
            }
            Phase::Called => {
                let unmet = operation
                    .requires
                    .iter()
                    .find(|r| self.bit(r).is_some_and(|bit| memory & bit == 0));
                if let Some(required) = unmet {
                    return vec![(Label::Requires(name(), required.clone()), done(memory))];
                }
                let mut out = Vec::new();
                if operation.failures.contains(INVALID_VALUE) {
                    out.push((Label::Fails(name(), INVALID_VALUE.to_owned()), done(memory)));
                }
                if operation.confirmation {
                    out.push((Label::Confirm(name()), at(Phase::Confirmed, collected)));
                    out.push((Label::Decline(name()), done(memory)));
                } else {
                    out.push((Label::Execute(name()), at(Phase::Running, collected)));
                }
                out
            }
            Phase::Confirmed => {
                vec![(Label::Execute(name()), at(Phase::Running, collected))]
            }
            Phase::Running => {
                let succeeded = memory | self.bit(&operation.name).unwrap_or(0);
                let mut out = vec![(Label::Result(name()), done(succeeded))];
                for mode in &operation.failures {
                    if mode == INVALID_VALUE {
                        continue;
                    }
                    let label = if mode == EXECUTION_FAILED {
                        Label::Failed(name())
                    } else {
                        Label::Fails(name(), mode.clone())
                    };
                    out.push((label, done(memory)));
                }
                out
            }
        }
    }

    fn state_name(&self, state: &State) -> String {
        let State::At {
            op,
            phase,
            collected,
            ..
        } = *state
        else {
            return "menu".to_owned();
        };
        let Some(operation) = self.ops.get(op) else {
            return "?".to_owned();
        };
        let have: Vec<&str> = operation
            .required
            .iter()
            .enumerate()
            .filter(|(bit, _)| collected & (1 << bit) != 0)
            .map(|(_, slot)| slot.as_str())
            .collect();
        format!("{}:{phase:?}{{{}}}", operation.name, have.join(","))
    }
}

/// The verdicts for one intent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IntentVerdict {
    /// The SGD intent.
    pub intent: String,
    /// The MCP tool Φ makes of it.
    pub tool: String,
    /// Whether the intent is transactional.
    pub transactional: bool,
    /// Structural level: `None` if SGD ~ Φ(SGD) for this intent (the paper's theorem).
    pub structural: Option<Counterexample<Label>>,
    /// Behavioural level: `None` if SGD ~ MCP for this intent, else why not.
    pub mcp: Option<Counterexample<Label>>,
    /// Behavioural level: `None` if SGD ~ MCP+ for this intent, else why not.
    pub mcp_plus: Option<Counterexample<Label>>,
    /// Why the intent was not compared (too many required slots), if it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

/// The verdicts for one service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServiceVerdict {
    /// The SGD service.
    pub service: String,
    /// States of the behavioural SGD, MCP and MCP+ server LTSs.
    pub states: [usize; 3],
    /// Structural level: `None` if SGD ~ Φ(SGD) as a whole.
    pub structural: Option<Counterexample<Label>>,
    /// Behavioural level: `None` if SGD ~ MCP for the whole service, else why not.
    pub mcp: Option<Counterexample<Label>>,
    /// Behavioural level: `None` if SGD ~ MCP+ for the whole service, else why not.
    pub mcp_plus: Option<Counterexample<Label>>,
    /// Per intent.
    pub intents: Vec<IntentVerdict>,
}

/// Splits operations into those the abstraction handles and the names of the others.
fn tractable(ops: Vec<Operation>) -> (Vec<Operation>, Vec<String>) {
    let (ok, big): (Vec<Operation>, Vec<Operation>) = ops
        .into_iter()
        .partition(|op| op.required.len() <= MAX_REQUIRED_SLOTS);
    (ok, big.into_iter().map(|op| op.name).collect())
}

/// Compares an SGD service with Φ(service) (both levels) and Φ⁺(service)
/// (behavioural), as a whole and per intent. Intents with more than
/// [`MAX_REQUIRED_SLOTS`] required slots are skipped (and left out of the
/// whole-service comparison); every other verdict stands.
pub fn compare_service(service: &SgdService) -> Result<ServiceVerdict> {
    let (sgd, skipped) = tractable(Operation::from_sgd(service));
    let keep = |ops: Vec<Operation>| -> Vec<Operation> {
        ops.into_iter()
            .filter(|op| !skipped.contains(&op.name))
            .collect()
    };
    let mcp = keep(Operation::from_mcp(&phi(service)));
    let plus = keep(Operation::from_mcp_plus(&phi_plus(service))?);
    let (sgd_lts, mcp_lts, plus_lts) = (server_lts(&sgd)?, server_lts(&mcp)?, server_lts(&plus)?);
    let structural = check(
        &server_lts_at(&sgd, Level::Structural)?,
        &server_lts_at(&mcp, Level::Structural)?,
    );
    let names = tool_names(service);
    let mut intents = Vec::with_capacity(service.intents.len());
    for (intent, tool) in service.intents.iter().zip(&names) {
        let mut verdict = IntentVerdict {
            intent: intent.name.clone(),
            tool: tool.clone(),
            transactional: intent.is_transactional,
            structural: None,
            mcp: None,
            mcp_plus: None,
            skipped: None,
        };
        if skipped.contains(tool) {
            verdict.skipped = Some(format!(
                "{} required slots; the abstraction handles at most {MAX_REQUIRED_SLOTS}",
                intent.required_slots.len()
            ));
            intents.push(verdict);
            continue;
        }
        let find = |ops: &[Operation]| ops.iter().find(|op| &op.name == tool).cloned();
        let lts_of = |op: Option<Operation>, level| match op {
            Some(op) => server_lts_at(std::slice::from_ref(&op), level),
            None => server_lts_at(&[], level),
        };
        let sgd_op = lts_of(find(&sgd), Level::Behavioural)?;
        verdict.structural = check(
            &lts_of(find(&sgd), Level::Structural)?,
            &lts_of(find(&mcp), Level::Structural)?,
        );
        verdict.mcp = check(&sgd_op, &lts_of(find(&mcp), Level::Behavioural)?);
        verdict.mcp_plus = check(&sgd_op, &lts_of(find(&plus), Level::Behavioural)?);
        intents.push(verdict);
    }
    Ok(ServiceVerdict {
        service: service.service_name.clone(),
        states: [
            sgd_lts.state_count(),
            mcp_lts.state_count(),
            plus_lts.state_count(),
        ],
        structural,
        mcp: check(&sgd_lts, &mcp_lts),
        mcp_plus: check(&sgd_lts, &plus_lts),
        intents,
    })
}

/// One side of a comparison: an SGD service, or an MCP server read as MCP or MCP+.
#[derive(Debug, Clone)]
pub enum Side {
    /// An SGD service.
    Sgd(SgdService),
    /// A tool list; `plus`: read its MCP+ contracts.
    Tools {
        /// The tools.
        list: ToolList,
        /// Whether contracts count (MCP+) or not (MCP).
        plus: bool,
    },
}

impl Side {
    /// The side's name (service or server).
    pub fn name(&self) -> String {
        match self {
            Side::Sgd(service) => service.service_name.clone(),
            Side::Tools { list, .. } => list.server.clone().unwrap_or_else(|| "(unnamed)".into()),
        }
    }

    /// What kind of side it is: `SGD`, `MCP` or `MCP+`.
    pub fn kind(&self) -> &'static str {
        match self {
            Side::Sgd(_) => "SGD",
            Side::Tools { plus: true, .. } => "MCP+",
            Side::Tools { plus: false, .. } => "MCP",
        }
    }

    /// The side's operations.
    pub fn operations(&self) -> Result<Vec<Operation>> {
        match self {
            Side::Sgd(service) => Ok(Operation::from_sgd(service)),
            Side::Tools { list, plus: true } => Operation::from_mcp_plus(list),
            Side::Tools { list, plus: false } => Ok(Operation::from_mcp(list)),
        }
    }
}

/// The verdicts of comparing two given sides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Comparison {
    /// The left side: kind and name.
    pub left: String,
    /// The right side: kind and name.
    pub right: String,
    /// Structural level: `None` if bisimilar.
    pub structural: Option<Counterexample<Label>>,
    /// Behavioural level: `None` if bisimilar.
    pub behavioural: Option<Counterexample<Label>>,
    /// Operations left out on either side (too many required arguments).
    pub skipped: Vec<String>,
}

/// Compares any two sides at both levels.
pub fn compare_sides(left: &Side, right: &Side) -> Result<Comparison> {
    let (l, mut skipped) = tractable(left.operations()?);
    let (r, more) = tractable(right.operations()?);
    skipped.extend(more);
    let keep = |ops: Vec<Operation>| -> Vec<Operation> {
        ops.into_iter()
            .filter(|op| !skipped.contains(&op.name))
            .collect()
    };
    let (l, r) = (keep(l), keep(r));
    Ok(Comparison {
        left: format!("{} {}", left.kind(), left.name()),
        right: format!("{} {}", right.kind(), right.name()),
        structural: check(
            &server_lts_at(&l, Level::Structural)?,
            &server_lts_at(&r, Level::Structural)?,
        ),
        behavioural: check(&server_lts(&l)?, &server_lts(&r)?),
        skipped,
    })
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
    fn builds_a_small_deterministic_lts() {
        let mut op = Operation::new(
            "pay",
            vec!["amount".into(), "to".into()],
            vec!["memo".into()],
        );
        op.confirmation = true;
        let lts = operation_lts(&op).unwrap();
        // menu + 4 subsets × {idle, called} + {confirmed, running} for the full subset.
        assert_eq!(lts.state_count(), 1 + 4 * 2 + 2);
        assert!(lts.is_deterministic());
    }

    #[test]
    fn transactional_intents_lose_their_confirmation_in_mcp() {
        let verdict = compare_service(&bank()).unwrap();
        let [check_balance, transfer] = &verdict.intents[..] else {
            panic!("two intents")
        };
        assert!(check_balance.mcp.is_none());
        let counterexample = transfer.mcp.as_ref().unwrap();
        assert_eq!(
            counterexample.render("SGD", "MCP"),
            "after select(transfer_money) · collect(account_type∈{checking|savings}) · \
             collect(amount) · invoke(transfer_money): SGD can do confirm(transfer_money), \
             decline(transfer_money) but MCP cannot; MCP can do execute(transfer_money) \
             but SGD cannot"
        );
        assert!(verdict.mcp.is_some());
        assert!(verdict.mcp_plus.is_none());
        assert!(
            verdict
                .intents
                .iter()
                .all(|intent| intent.mcp_plus.is_none())
        );
    }

    #[test]
    fn the_structural_level_is_the_papers_theorem() {
        let verdict = compare_service(&bank()).unwrap();
        assert!(verdict.structural.is_none());
        assert!(verdict.intents.iter().all(|i| i.structural.is_none()));
        // A structural difference does show: a required slot Φ would not lose.
        let mut sgd = Operation::from_sgd(&bank());
        sgd[0].required.push("extra".into());
        let mcp = Operation::from_mcp(&phi(&bank()));
        assert!(
            check(
                &server_lts_at(&sgd, Level::Structural).unwrap(),
                &server_lts_at(&mcp, Level::Structural).unwrap()
            )
            .is_some()
        );
    }

    #[test]
    fn an_intent_with_too_many_slots_is_skipped_alone() {
        let mut service = bank();
        let mut big = service.intents[0].clone();
        big.name = "Huge".into();
        big.required_slots = (0..=MAX_REQUIRED_SLOTS).map(|i| format!("s{i}")).collect();
        service.intents.push(big);
        let verdict = compare_service(&service).unwrap();
        assert_eq!(verdict.intents.len(), 3);
        assert!(verdict.intents[2].skipped.is_some());
        assert!(verdict.intents[1].mcp.is_some(), "the other verdicts stand");
        assert!(verdict.mcp_plus.is_none());
    }

    #[test]
    fn stripping_a_contract_is_noticed_in_behaviour() {
        let original = phi_plus(&bank());
        let base = Side::Tools {
            list: original.clone(),
            plus: true,
        };
        let strip = |edit: &dyn Fn(&mut crate::contract::ToolContract)| {
            let mut list = original.clone();
            for tool in &mut list.tools {
                let mut contract = tool.contract().unwrap().unwrap();
                edit(&mut contract);
                tool.set_contract(&contract);
            }
            Side::Tools { list, plus: true }
        };
        let same = compare_sides(&base, &strip(&|_| {})).unwrap();
        assert!(same.behavioural.is_none() && same.structural.is_none());
        let edits: [&dyn Fn(&mut crate::contract::ToolContract); 3] = [
            &|c| c.failure_modes.clear(),
            &|c| {
                for a in &mut c.arguments {
                    a.domain = Domain::FreeText;
                }
            },
            &|c| {
                for a in &mut c.arguments {
                    a.description.clear();
                }
            },
        ];
        for edit in edits {
            let verdict = compare_sides(&base, &strip(edit)).unwrap();
            assert!(verdict.behavioural.is_some(), "{verdict:?}");
            assert!(verdict.structural.is_none(), "{verdict:?}");
        }
        // SGD against MCP+ directly, and against plain MCP.
        let sgd = Side::Sgd(bank());
        assert!(compare_sides(&sgd, &base).unwrap().behavioural.is_none());
        let plain = Side::Tools {
            list: original,
            plus: false,
        };
        let verdict = compare_sides(&sgd, &plain).unwrap();
        assert!(verdict.structural.is_none() && verdict.behavioural.is_some());
    }

    #[test]
    fn requires_relations_are_observable_across_tools() {
        let mut check_op = Operation::new("check", vec![], vec![]);
        check_op.failures.clear();
        let mut book = Operation::new("book", vec![], vec![]);
        book.failures.clear();
        let mut requiring = book.clone();
        requiring.requires.insert("check".into());
        let with = server_lts(&[check_op.clone(), requiring]).unwrap();
        let without = server_lts(&[check_op, book]).unwrap();
        let counterexample = check(&with, &without).unwrap();
        assert_eq!(
            counterexample.render("A", "B"),
            "after select(book) · invoke(book): A can do error(book, Requires(check)) but B \
             cannot; B can do execute(book) but A cannot"
        );
        // After a successful check, the requirement holds.
        let labels: Vec<String> = counterexample
            .trace
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(labels.len(), 2);
    }

    #[test]
    fn refuses_too_many_required_slots() {
        let op = Operation::new(
            "big",
            (0..=MAX_REQUIRED_SLOTS).map(|i| format!("s{i}")).collect(),
            vec![],
        );
        assert!(matches!(
            operation_lts(&op),
            Err(ContractsError::AbstractionTooLarge { .. })
        ));
    }

    #[test]
    fn renders_labels() {
        let label = Label::MissingSlots("pay".into(), vec!["a".into(), "b".into()]);
        assert_eq!(label.to_string(), "error(pay, MissingSlots{a, b})");
    }
}
