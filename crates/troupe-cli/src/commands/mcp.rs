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
        interrupt: Some(crate::signals::interrupt()),
    };
    // SIGINT or SIGTERM: the runs `mcp serve` drives stop at their step
    // boundary and give their leases back; exit 130 or 143.
    let stop = async {
        crate::signals::first_signal("the runs this server drives").await;
        128 + crate::signals::received().unwrap_or(15)
    };
    match troupe_mcp::cli::run(cmd, &mut out, &env, stop) {
        Ok(0) => Ok(ExitStatus::Success),
        Ok(code) if code > 128 => Ok(ExitStatus::Signalled(code - 128)),
        Ok(1) => Ok(ExitStatus::Failure),
        Ok(_) => Ok(ExitStatus::Usage),
        Err(e) => {
            out.flush()?;
            crate::note!("error: {e}");
            Ok(ExitStatus::Usage)
        }
    }
}
