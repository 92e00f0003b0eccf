//! troupe-host: the one owner of durable runs.
//!
//! The CLI, `troupe serve`, `troupe mcp serve` and the benchmarks are thin
//! layers over this crate. It owns a run's whole lifecycle:
//!
//! - **load once** ([`Compiled`]): parse, check, contract verification and
//!   the fingerprint together;
//! - **backends** ([`Host::engine`]): the model router from `troupe.toml`
//!   and the run's recorded settings, command `extern`s from `troupe.toml`,
//!   the durable human inbox, and MCP tools through [`ToolsFactory`];
//! - **runs**: [`Host::start`] (new, or resume the same unfinished run),
//!   [`Host::drive`], [`Host::answer`] (typed), [`Host::resolve`],
//!   [`Host::cancel`], [`Host::retry`], [`Host::delete`], [`Host::verify`];
//! - **fleets** ([`Host::enqueue`], [`Host::work`]): runs queued in a shared
//!   store and driven by whichever worker claims them.
//!
//! A process runs a run only while it holds the run's *lease* (see
//! `troupe_store::Claim`): claiming is an atomic compare-and-swap in the
//! store, the owner renews the lease while it runs, and a crashed owner's
//! lease expires after [`HostConfig::lease`]. So of any number of processes
//! that start or resume one run at the same moment, exactly one runs it.
//!
//! A run's settings ([`RunSettings`]) are recorded with it and used again on
//! resume unless explicitly overridden (and the override is recorded).

mod answer;
mod backends;
mod causal;
pub mod chosen;
mod compile;
mod config;
mod drive;
mod error;
pub mod externs;
mod host;
mod keeper;
pub mod metrics;
mod outcome;
mod plans;
mod policy;
mod project;
pub mod schedule;
mod settings;
mod settle;
pub mod snapshot;
mod start;
mod store_address;
mod upgrade;
mod verify;
mod worker;

pub use answer::{AnswerInput, example as example_answer, scripted_answers};
pub use backends::{Backends, NoTools, ToolOptions, ToolSession, ToolsFactory};
pub use compile::Compiled;
pub use config::{DEFAULT_GRACE, DEFAULT_LEASE, HostConfig, Notice, Observer, new_owner_id};
pub use error::HostError;
pub use host::Host;
pub use outcome::{Cancel, Finished, Resolution, RunEnd, StartPolicy, Started};
pub use project::{
    ContractsSection, DEFAULT_CALL_TIMEOUT, McpSection, ProjectConfig, StoreSection, Unverified,
};
pub use settings::{DurabilitySetting, Overrides, RunSettings};
pub use start::valid_label;
pub use store_address::{DEFAULT_STORE, STORE_ENV, store_address};
pub use upgrade::{Upgrade, Upgraded, chart_moves};
pub use verify::Verified;
pub use worker::{WorkerConfig, WorkerEvent, WorkerReport};
