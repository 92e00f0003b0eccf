//! Where the store is: the one resolution every command uses (`run`,
//! `worker`, `serve`, `mcp serve`, `msc RUN`, …), so that a fleet's
//! machines name their shared database once.
//!
//! In order: the address given on the command line, then `TROUPE_STORE`,
//! then `[store] path` in the project's `troupe.toml`, then
//! [`DEFAULT_STORE`].

use crate::HostError;
use std::path::{Path, PathBuf};

/// The store used when nothing names one.
pub const DEFAULT_STORE: &str = ".troupe/troupe.db";

/// The environment variable that names the store when the command line
/// does not.
pub const STORE_ENV: &str = "TROUPE_STORE";

/// The store to use, given what the command line said (`None`, or the
/// default itself, when it said nothing) and the project directory `dir`.
pub fn store_address(given: Option<&Path>, dir: &Path) -> Result<PathBuf, HostError> {
    if let Some(given) = given.filter(|g| *g != Path::new(DEFAULT_STORE)) {
        return Ok(given.to_owned());
    }
    if let Ok(s) = std::env::var(STORE_ENV)
        && !s.trim().is_empty()
    {
        return Ok(PathBuf::from(s.trim()));
    }
    Ok(crate::ProjectConfig::load(dir)?
        .store
        .path
        .map_or_else(|| PathBuf::from(DEFAULT_STORE), PathBuf::from))
}
