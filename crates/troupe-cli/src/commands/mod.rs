//! One module per `troupe` subcommand.

pub mod bench;
mod bench_lint;
pub mod check;
pub mod completions;
pub mod contracts;
pub mod durable;
pub mod explain;
pub mod fleet;
pub mod fork;
pub mod init;
pub mod inspect;
pub mod lsp;
pub mod mcp;
pub mod models;
pub mod pause;
pub mod project;
pub mod run;
pub mod schedules;
pub mod serve;
pub mod snapshot;
pub mod upgrade;
