//! Helpers shared by the integration tests: locating and loading the shared data.
#![allow(dead_code)]

use std::path::PathBuf;

use troupe_contracts::mcp::{ToolList, load_tool_lists};
use troupe_contracts::sgd::{SgdService, load_schema};

/// The shared data directory: `$TROUPE_SHARED_DATA` if set, else `shared/data` beside
/// the repository clone.
pub fn shared_data() -> PathBuf {
    match std::env::var_os("TROUPE_SHARED_DATA") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data")),
    }
}

/// The SGD schema file of a split (`train` or `dev`).
pub fn sgd_schema_path(split: &str) -> PathBuf {
    shared_data().join("sgd").join(split).join("schema.json")
}

/// The services of a split.
pub fn sgd_services(split: &str) -> Vec<SgdService> {
    let path = sgd_schema_path(split);
    load_schema(&path).unwrap_or_else(|error| panic!("cannot load {}: {error}", path.display()))
}

/// The services of train and dev, each with its split.
pub fn all_sgd_services() -> Vec<(&'static str, SgdService)> {
    ["train", "dev"]
        .into_iter()
        .flat_map(|split| sgd_services(split).into_iter().map(move |s| (split, s)))
        .collect()
}

/// The captured MCP tool files, sorted by name.
pub fn mcp_tool_files() -> Vec<PathBuf> {
    let dir = shared_data().join("mcp-tools");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("cannot list {}: {error}", dir.display()))
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no MCP tool files in {}", dir.display());
    files
}

/// The tool lists of one captured file.
pub fn mcp_tools(path: &std::path::Path) -> Vec<ToolList> {
    load_tool_lists(path).unwrap_or_else(|error| panic!("cannot load {}: {error}", path.display()))
}
