//! MCP for troupe.
//!
//! - [`McpToolHost`] performs `tool` actions: it implements
//!   [`troupe_runtime::ToolHost`] over the official Rust SDK (`rmcp`), with one
//!   lazily opened connection per `mcp` server (a child process over stdio or a
//!   Streamable HTTP endpoint), drift checks against `tools/list`, argument
//!   checks before each call (`MissingSlots`), and results typed by the
//!   declared outputs.
//! - [`import`] writes typed `tool` declarations for a server's tools, from a
//!   live server or a captured `tools/list` answer.
//! - [`serve`] is the other direction: workflows as an MCP server (tools that
//!   start durable runs, a tool to answer human tasks, runs as resources).
//! - [`lock`] pins a server's tool definitions (`troupe mcp lock`), so that a
//!   definition changed after review is found by `troupe contracts lint --lock`.
//! - [`ops`] are the operations behind `troupe mcp import` and `troupe mcp
//!   lock` (a server's listing, the declarations and sidecar an import
//!   writes), for the `troupe` binary to call.
//!
//! Protocol revision 2025-11-25.

pub mod connect;
pub mod error;
pub mod host;
pub mod http;
pub mod import;
pub mod lock;
pub mod ops;
pub mod results;
pub mod schema;
pub mod serve;
pub mod tools;

pub use error::McpError;
pub use host::{IDEMPOTENCY_META_KEY, McpToolHost};
pub use import::{ImportOptions, import_from_json, import_from_server, parse_server_spec};
pub use tools::McpTools;
