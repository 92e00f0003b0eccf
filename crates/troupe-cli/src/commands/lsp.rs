//! `troupe lsp`: the language server over stdio.

use crate::ExitStatus;
use anyhow::Result;

/// Serves one editor over stdin/stdout until it exits.
pub fn run() -> Result<ExitStatus> {
    troupe_lsp::run_stdio()?;
    Ok(ExitStatus::Success)
}
