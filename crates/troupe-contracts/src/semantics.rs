//! Labelled transition semantics for SGD services, MCP servers and MCP+ servers, over
//! one common label alphabet, and their comparison by bisimulation.
//!
//! # The common alphabet ([`Label`])
//!
//! * `list` — look the operations up (MCP `tools/list`; the SGD schema is public, so
//!   for SGD it is the schema lookup); a self-loop wherever the system is idle;
//! * `select(op)` — choose an operation (an SGD intent, an MCP tool);
//! * `collect(slot)` — supply a value for an argument (SGD: the user fills a slot; MCP:
//!   the client puts the argument in the call);
//! * `invoke(op)` — try to run the operation with the arguments collected so far
//!   (MCP: `tools/call`);
//! * `error(op, MissingSlots{…})` — a required argument is missing; in SGD the system
//!   must ask for R ∖ params, in MCP the server rejects the call (schema validation,
//!   a protocol error naming the missing properties), in MCP+ the contract's required
//!   arguments and its `MissingSlots` failure mode say the same;
//! * `confirm(op)` / `decline(op)` — the person confirms or declines a transaction;
//! * `execute(op)` — the operation runs;
//! * `result(op)` / `error(op, ExecutionFailed)` — it succeeds (MCP: a result) or fails
//!   (MCP: `isError`).
//!
//! # The finite abstraction
//!
//! Slot values are abstracted to {unset, set}, per operation (not per service): the
//! state of an operation is the set of its *required* arguments collected so far plus
//! a phase (idle, called, confirmed, running). Optional arguments are collected by
//! self-loops — their absence is never observable, since a default applies — so an
//! operation with r required arguments has at most 4·2ʳ states; r is capped at
//! [`MAX_REQUIRED_SLOTS`]. A server's LTS starts in a menu offering `select(op)` for
//! each operation and then behaves as that operation (each with its own slot memory);
//! two servers are bisimilar iff they have the same operations and each pair is.
//!
//! # What the three semantics see
//!
//! All three use the same construction ([`server_lts`]) and differ in what the
//! formalism's definitions tell about each operation ([`Operation`]):
//! * SGD: required slots R, optional slots O, and a confirmation step iff the intent is
//!   transactional;
//! * MCP: the schema's `required` and other properties; no confirmation step ever —
//!   `readOnlyHint`/`destructiveHint` are hints and not part of the protocol;
//! * MCP+: the contract's required and optional arguments, and a confirmation step iff
//!   the contract says `requires_confirmation` (tools without a contract behave as MCP).
//!
//! Hence SGD ≁ MCP exactly for services with transactional intents (the counterexample
//! ends in `SGD can do confirm(op)`), and SGD ~ MCP+ for every service mapped by Φ⁺.

use std::fmt;

use serde::{Serialize, Serializer};

use crate::bisim::{Counterexample, check};
use crate::error::{ContractsError, Result};
use crate::lts::Lts;
use crate::mcp::ToolList;
use crate::phi::{phi, phi_plus, tool_names};
use crate::sgd::SgdService;

/// Largest number of required arguments of one operation the abstraction handles.
pub const MAX_REQUIRED_SLOTS: usize = 12;

/// A label of the common alphabet (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Label {
    /// Look the operations up.
    List,
    /// Choose an operation.
    Select(String),
    /// Supply an argument.
    Collect(String),
    /// Try to run the operation.
    Invoke(String),
    /// A required argument is missing (the operation, the missing arguments).
    MissingSlots(String, Vec<String>),
    /// The person confirms.
    Confirm(String),
    /// The person declines.
    Decline(String),
    /// The operation runs.
    Execute(String),
    /// It succeeded.
    Result(String),
    /// It failed.
    Failed(String),
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
            Label::Confirm(op) => write!(f, "confirm({op})"),
            Label::Decline(op) => write!(f, "decline({op})"),
            Label::Execute(op) => write!(f, "execute({op})"),
            Label::Result(op) => write!(f, "result({op})"),
            Label::Failed(op) => write!(f, "error({op}, ExecutionFailed)"),
        }
    }
}

impl Serialize for Label {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

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
}

impl Operation {
    /// The operations of an SGD service (named as Φ names its tools).
    pub fn from_sgd(service: &SgdService) -> Vec<Operation> {
        service
            .intents
            .iter()
            .zip(tool_names(service))
            .map(|(intent, name)| Operation {
                name,
                required: intent.required_slots.clone(),
                optional: intent
                    .optional_slots
                    .iter()
                    .map(|(slot, _)| slot.clone())
                    .collect(),
                confirmation: intent.is_transactional,
            })
            .collect()
    }

    /// The operations of a plain MCP server: annotations are hints, so never a
    /// confirmation step.
    pub fn from_mcp(list: &ToolList) -> Vec<Operation> {
        list.tools
            .iter()
            .map(|tool| {
                let required: Vec<String> = tool
                    .required_arguments()
                    .into_iter()
                    .map(str::to_owned)
                    .collect();
                let optional = tool
                    .input_properties()
                    .into_iter()
                    .map(|(name, _)| name.to_owned())
                    .filter(|name| !required.contains(name))
                    .collect();
                Operation {
                    name: tool.name.clone(),
                    required,
                    optional,
                    confirmation: false,
                }
            })
            .collect()
    }

    /// The operations of an MCP+ server: arguments and confirmation from each tool's
    /// contract (tools without one behave as in MCP).
    pub fn from_mcp_plus(list: &ToolList) -> Result<Vec<Operation>> {
        let plain = Operation::from_mcp(list);
        list.tools
            .iter()
            .zip(plain)
            .map(|(tool, plain)| {
                Ok(match tool.contract()? {
                    None => plain,
                    Some(contract) => Operation {
                        name: tool.name.clone(),
                        required: contract
                            .required_arguments()
                            .into_iter()
                            .map(str::to_owned)
                            .collect(),
                        optional: contract
                            .arguments
                            .iter()
                            .filter(|argument| !argument.required)
                            .map(|argument| argument.name.clone())
                            .collect(),
                        confirmation: contract.requires_confirmation,
                    },
                })
            })
            .collect()
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
/// `collected` (a bit set over `Operation::required`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum State {
    Menu,
    At {
        op: usize,
        phase: Phase,
        collected: u32,
    },
}

/// The LTS of a server offering `operations` (see the module docs).
pub fn server_lts(operations: &[Operation]) -> Result<Lts<Label>> {
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
    let limit = 1 + operations
        .iter()
        .map(|op| 4usize << op.required.len())
        .sum::<usize>();
    let step = |state: &State| step(operations, state);
    let name = |state: &State| state_name(operations, state);
    Lts::explore(State::Menu, step, name, limit).map_err(|_| ContractsError::AbstractionTooLarge {
        intent: "server".into(),
        required: MAX_REQUIRED_SLOTS + 1,
        max: MAX_REQUIRED_SLOTS,
    })
}

/// The LTS of a single operation (a server offering only it).
pub fn operation_lts(operation: &Operation) -> Result<Lts<Label>> {
    server_lts(std::slice::from_ref(operation))
}

fn step(operations: &[Operation], state: &State) -> Vec<(Label, State)> {
    let State::At {
        op,
        phase,
        collected,
    } = *state
    else {
        let mut out = vec![(Label::List, State::Menu)];
        out.extend(operations.iter().enumerate().map(|(op, operation)| {
            let start = State::At {
                op,
                phase: Phase::Idle,
                collected: 0,
            };
            (Label::Select(operation.name.clone()), start)
        }));
        return out;
    };
    let Some(operation) = operations.get(op) else {
        return vec![];
    };
    let name = || operation.name.clone();
    let at = |phase, collected| State::At {
        op,
        phase,
        collected,
    };
    let idle = at(Phase::Idle, collected);
    let all = (1u32 << operation.required.len()) - 1;
    match phase {
        Phase::Idle => {
            let mut out = vec![(Label::List, idle)];
            for (bit, slot) in operation.required.iter().enumerate() {
                out.push((
                    Label::Collect(slot.clone()),
                    at(Phase::Idle, collected | (1 << bit)),
                ));
            }
            for slot in &operation.optional {
                out.push((Label::Collect(slot.clone()), idle));
            }
            out.push((Label::Invoke(name()), at(Phase::Called, collected)));
            out
        }
        Phase::Called if collected != all => {
            let missing = operation
                .required
                .iter()
                .enumerate()
                .filter(|(bit, _)| collected & (1 << bit) == 0)
                .map(|(_, slot)| slot.clone());
            let mut missing: Vec<String> = missing.collect();
            missing.sort();
            vec![(Label::MissingSlots(name(), missing), idle)]
        }
        Phase::Called if operation.confirmation => vec![
            (Label::Confirm(name()), at(Phase::Confirmed, collected)),
            (Label::Decline(name()), idle),
        ],
        Phase::Called | Phase::Confirmed => {
            vec![(Label::Execute(name()), at(Phase::Running, collected))]
        }
        Phase::Running => vec![(Label::Result(name()), idle), (Label::Failed(name()), idle)],
    }
}

fn state_name(operations: &[Operation], state: &State) -> String {
    let State::At {
        op,
        phase,
        collected,
    } = *state
    else {
        return "menu".to_owned();
    };
    let Some(operation) = operations.get(op) else {
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

/// The verdicts for one intent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IntentVerdict {
    /// The SGD intent.
    pub intent: String,
    /// The MCP tool Φ makes of it.
    pub tool: String,
    /// Whether the intent is transactional.
    pub transactional: bool,
    /// `None` if SGD ~ MCP for this intent, else why not.
    pub mcp: Option<Counterexample<Label>>,
    /// `None` if SGD ~ MCP+ for this intent, else why not.
    pub mcp_plus: Option<Counterexample<Label>>,
}

/// The verdicts for one service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServiceVerdict {
    /// The SGD service.
    pub service: String,
    /// States of the SGD, MCP and MCP+ server LTSs.
    pub states: [usize; 3],
    /// `None` if SGD ~ MCP for the whole service, else why not.
    pub mcp: Option<Counterexample<Label>>,
    /// `None` if SGD ~ MCP+ for the whole service, else why not.
    pub mcp_plus: Option<Counterexample<Label>>,
    /// Per intent.
    pub intents: Vec<IntentVerdict>,
}

/// Compares an SGD service with Φ(service) and Φ⁺(service), as a whole and per intent.
pub fn compare_service(service: &SgdService) -> Result<ServiceVerdict> {
    let sgd = Operation::from_sgd(service);
    let mcp = Operation::from_mcp(&phi(service));
    let plus = Operation::from_mcp_plus(&phi_plus(service))?;
    let (sgd_lts, mcp_lts, plus_lts) = (server_lts(&sgd)?, server_lts(&mcp)?, server_lts(&plus)?);
    let mut intents = Vec::with_capacity(sgd.len());
    for (index, intent) in service.intents.iter().enumerate() {
        let lts_of = |ops: &[Operation]| match ops.get(index) {
            Some(op) => operation_lts(op),
            None => server_lts(&[]),
        };
        let sgd_op = lts_of(&sgd)?;
        intents.push(IntentVerdict {
            intent: intent.name.clone(),
            tool: sgd.get(index).map(|op| op.name.clone()).unwrap_or_default(),
            transactional: intent.is_transactional,
            mcp: check(&sgd_op, &lts_of(&mcp)?),
            mcp_plus: check(&sgd_op, &lts_of(&plus)?),
        });
    }
    Ok(ServiceVerdict {
        service: service.service_name.clone(),
        states: [
            sgd_lts.state_count(),
            mcp_lts.state_count(),
            plus_lts.state_count(),
        ],
        mcp: check(&sgd_lts, &mcp_lts),
        mcp_plus: check(&sgd_lts, &plus_lts),
        intents,
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
        let op = Operation {
            name: "pay".into(),
            required: vec!["amount".into(), "to".into()],
            optional: vec!["memo".into()],
            confirmation: true,
        };
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
            "after select(transfer_money) · collect(account_type) · collect(amount) · \
             invoke(transfer_money): SGD can do confirm(transfer_money), \
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
    fn refuses_too_many_required_slots() {
        let op = Operation {
            name: "big".into(),
            required: (0..=MAX_REQUIRED_SLOTS).map(|i| format!("s{i}")).collect(),
            optional: vec![],
            confirmation: false,
        };
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
