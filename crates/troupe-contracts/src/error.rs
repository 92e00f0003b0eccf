//! The crate's error type: everything that can go wrong while loading, converting or
//! checking tool contracts.

use std::path::PathBuf;

/// Errors raised by `troupe-contracts`.
#[derive(Debug, thiserror::Error)]
pub enum ContractsError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// Output could not be written.
    #[error("cannot write output: {0}")]
    Write(#[from] std::io::Error),
    /// Input was not valid JSON, or JSON of the wrong shape.
    #[error("{what}: invalid JSON: {source}")]
    Json {
        /// What was being parsed (a path or a description).
        what: String,
        /// The underlying parse error.
        source: serde_json::Error,
    },
    /// JSON that parsed, but is not any of the recognised MCP document shapes.
    #[error("{what}: not an MCP tool list: {reason}")]
    NotAToolList {
        /// What was being parsed.
        what: String,
        /// Why it was rejected.
        reason: String,
    },
    /// An MCP+ contract in a tool's `_meta` (or in a sidecar) is malformed.
    #[error("tool `{tool}`: invalid MCP+ contract: {source}")]
    InvalidContract {
        /// The tool whose contract is broken.
        tool: String,
        /// The underlying decoding error.
        source: serde_json::Error,
    },
    /// A file could not be written.
    #[error("cannot write {path}: {source}")]
    WriteFile {
        /// The file.
        path: PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// A lint rule id that no rule has.
    #[error("no lint rule `{0}`")]
    UnknownRule(String),
    /// A requested service does not exist in the schema.
    #[error("no service named `{0}` in the schema")]
    UnknownService(String),
    /// An intent has too many required slots for the finite abstraction used by the
    /// semantics (the state space would explode).
    #[error(
        "intent `{intent}` has {required} required slots; the abstraction supports at most {max}"
    )]
    AbstractionTooLarge {
        /// The intent or tool.
        intent: String,
        /// Its number of required slots.
        required: usize,
        /// The supported maximum.
        max: usize,
    },
}

/// Result alias for this crate.
pub type Result<T, E = ContractsError> = std::result::Result<T, E>;

/// Parses JSON, attaching `what` to the error.
pub(crate) fn parse_json<T: serde::de::DeserializeOwned>(what: &str, text: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|source| ContractsError::Json {
        what: what.to_owned(),
        source,
    })
}

/// Reads a file to a string.
pub(crate) fn read_file(path: &std::path::Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|source| ContractsError::Read {
        path: path.to_owned(),
        source,
    })
}
