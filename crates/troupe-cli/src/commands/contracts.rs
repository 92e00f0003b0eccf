//! `troupe contracts …`: mounts the contracts crate's subcommands.

use crate::ExitStatus;
use anyhow::Result;
use std::io::Write;
use troupe_contracts::cli::ContractsCommand;

pub fn run(cmd: ContractsCommand) -> Result<ExitStatus> {
    // Not locked for the whole command: `mcp serve` writes its stdio
    // transport to stdout from another thread, and a held lock would stall
    // it for ever. `Stdout` locks per write.
    let mut out = std::io::stdout();
    match troupe_contracts::cli::run(cmd, &mut out) {
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
