//! `troupe mcp …`: mounts the MCP crate's subcommands.

use crate::ExitStatus;
use anyhow::Result;
use std::io::Write;
use troupe_mcp::cli::McpCommand;

pub fn run(cmd: McpCommand) -> Result<ExitStatus> {
    // Not locked for the whole command: `mcp serve` writes its stdio
    // transport to stdout from another thread, and a held lock would stall
    // it for ever. `Stdout` locks per write.
    let mut out = std::io::stdout();
    let env = troupe_mcp::cli::Environment {
        lease: Some(crate::commands::durable::host_config()?.lease),
        token: std::env::var("TROUPE_TOKEN").ok(),
    };
    match troupe_mcp::cli::run(cmd, &mut out, &env) {
        Ok(0) => Ok(ExitStatus::Success),
        Ok(1) => Ok(ExitStatus::Failure),
        Ok(_) => Ok(ExitStatus::Usage),
        Err(e) => {
            out.flush()?;
            crate::note!("error: {e}");
            Ok(ExitStatus::Usage)
        }
    }
}
