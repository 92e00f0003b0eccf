//! `troupe mcp …`: mounts the MCP crate's subcommands.

use crate::ExitStatus;
use anyhow::Result;
use std::io::Write;
use troupe_mcp::cli::McpCommand;

pub fn run(cmd: McpCommand) -> Result<ExitStatus> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match troupe_mcp::cli::run(cmd, &mut out) {
        Ok(0) => Ok(ExitStatus::Success),
        Ok(1) => Ok(ExitStatus::Failure),
        Ok(_) => Ok(ExitStatus::Usage),
        Err(e) => {
            out.flush()?;
            eprintln!("error: {e}");
            Ok(ExitStatus::Usage)
        }
    }
}
