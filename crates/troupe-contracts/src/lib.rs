//! Tool contracts: Schema-Guided Dialogue (SGD) services and MCP servers, the maps
//! between them, the MCP+ extension that makes them equivalent, their labelled
//! transition semantics with a bisimulation checker, and a linter scoring MCP tools on
//! the four MCP+ principles.
//!
//! Module map:
//! * [`sgd`] — the SGD service model and `schema.json` loader;
//! * [`mcp`] — the MCP tool model and `tools/list` document loader;
//! * [`contract`] — MCP+ contracts (in `_meta` or a sidecar file);
//! * [`phi`] — Φ and Φ⁺ (SGD → MCP, SGD → MCP+);
//! * [`invert`] — Φ⁻¹ (MCP → SGD) with a loss report;
//! * [`lts`], [`bisim`], [`semantics`] — labelled transition systems, strong
//!   bisimulation with shortest counterexamples, and the semantics of the three formalisms;
//! * [`lint`] — the MCP+ linter (also a security linter), one rule per file;
//! * [`lock`] — pins of tool definitions, so that a changed one is found;
//! * [`resolve`] — one contract per tool from the sidecar, `_meta` and the
//!   annotations, the strictest winning;
//! * [`ops`] — the operations behind `troupe contracts …` (lint, lock, Φ, Φ⁻¹,
//!   bisimulation) on files, returning values, and [`render`] — their renderings
//!   for people;
//! * [`verify`] — workflows checked against the contracts of the tools they call
//!   (E0601 confirmations, E0602 requirements, W0603 failures, E0604 sidecars, E0607 predecessors,
//!   W0605 unverified tools, W0606 sources that disagree).

pub mod bisim;
pub mod contract;
pub mod error;
#[cfg(test)]
pub(crate) mod fixtures;
pub mod invert;
pub mod lint;
pub mod lock;
pub mod lts;
pub mod mcp;
pub mod naming;
pub mod ops;
pub mod phi;
pub mod render;
pub mod resolve;
pub mod semantics;
pub mod sgd;
pub mod verify;

pub use contract::{META_KEY, ToolContract};
pub use error::{ContractsError, Result};
pub use mcp::{McpTool, ToolList};
pub use sgd::SgdService;
pub use verify::{
    VerifyOptions, verify_workflows, verify_workflows_in_source, verify_workflows_with,
};
