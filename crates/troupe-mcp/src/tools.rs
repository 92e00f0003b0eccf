//! [`McpTools`]: the MCP tool host as the run lifecycle's tools factory,
//! so that every way of running a workflow (the CLI, `troupe serve`,
//! `troupe mcp serve`, the benchmarks) calls MCP tools the same way.

use std::sync::Arc;
use troupe_check::ir::Program;
use troupe_host::{ToolOptions, ToolSession, ToolsFactory};

use crate::McpToolHost;

/// Makes one [`McpToolHost`] per run, closed when the run ends.
#[derive(Debug, Default, Clone, Copy)]
pub struct McpTools;

impl ToolsFactory for McpTools {
    fn session(&self, program: &Program, options: &ToolOptions) -> ToolSession {
        let host = Arc::new(McpToolHost::for_program(program).call_timeout(options.call_timeout));
        let closing = host.clone();
        ToolSession {
            host,
            close: Some(Box::new(move || {
                Box::pin(async move { closing.close_all().await })
            })),
        }
    }
}
