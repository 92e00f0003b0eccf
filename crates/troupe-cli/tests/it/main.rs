//! The integration tests of `troupe-cli`, as one test binary: each module
//! was a binary of its own, linking the whole dependency graph again.
//! Shared helpers live in the support modules beside them.

mod checkpoint;
mod cli;
mod contract_sources;
mod deadlines;
mod ergonomics;
mod fleet;
mod fork;
mod fuzz_cli;
mod fuzz_surfaces;
mod hardening;
mod health;
mod identity;
mod json_output;
mod kills_support;
mod language;
mod lifecycle;
mod llm_calls;
mod locations;
mod lsp;
mod lsp_nvim;
mod mcp_http;
mod mcp_http_client;
mod mcp_import;
mod mcp_stdio;
mod mcp_support;
mod mock_workflows;
mod output;
mod pause;
mod placement;
mod planner;
mod postgres;
mod providers;
mod race;
mod readonly;
mod redaction;
mod signals;
mod store_address;
mod store_files;
mod support;
mod tool_calling;
mod transcripts;
mod verify;
mod zombie;
