//! Typed errors of the MCP host and the importer. Every error that concerns a
//! call names the server and the tool.

/// What can go wrong talking to an MCP server or importing its tools.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum McpError {
    /// The server's process could not be started.
    #[error("MCP server `{server}`: cannot start `{command}`: {message}")]
    Spawn {
        server: String,
        command: String,
        message: String,
    },
    /// The connection or the `initialize` handshake failed.
    #[error("MCP server `{server}`: cannot connect: {message}")]
    Connect { server: String, message: String },
    /// A declared tool does not match the server's tool (or the server has no such tool).
    #[error(
        "MCP server `{server}`, tool `{tool}`: drift between the declaration and the server: {detail}"
    )]
    Drift {
        server: String,
        tool: String,
        detail: String,
    },
    /// Required arguments are missing: the call was not made.
    #[error("MCP server `{server}`, tool `{tool}`: MissingSlots: required argument(s) {} not supplied; the tool was not called", missing.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", "))]
    MissingSlots {
        server: String,
        tool: String,
        missing: Vec<String>,
    },
    /// An argument does not fit the tool's input schema: the call was not made.
    #[error(
        "MCP server `{server}`, tool `{tool}`: argument `{argument}` {detail}; the tool was not called"
    )]
    InvalidArgument {
        server: String,
        tool: String,
        argument: String,
        detail: String,
    },
    /// No answer within the call timeout: the server is stuck, or its
    /// answer was dropped (the stdio transport drops a message over 16
    /// MiB). Whether the tool ran is unknown.
    #[error(
        "MCP server `{server}`, tool `{tool}`: no answer within {} (a result over 16 MiB is dropped by the transport and never arrives); whether the tool ran is unknown. `[mcp] call_timeout` in troupe.toml sets the limit",
        seconds(*after)
    )]
    NoAnswer {
        server: String,
        tool: String,
        after: std::time::Duration,
    },
    /// The tool ran and reported a failure (`isError: true`).
    #[error("MCP server `{server}`, tool `{tool}` failed: {message}")]
    ToolFailed {
        server: String,
        tool: String,
        message: String,
    },
    /// The server answered the request with a JSON-RPC error.
    #[error("MCP server `{server}`, tool `{tool}`: protocol error {code}: {message}")]
    Protocol {
        server: String,
        tool: String,
        code: i32,
        message: String,
    },
    /// The connection was lost (the server exited or closed its stream) before the answer.
    #[error("MCP server `{server}`, tool `{tool}`: the server disconnected before answering{}", if detail.is_empty() { String::new() } else { format!(": {detail}") })]
    Disconnected {
        server: String,
        tool: String,
        detail: String,
    },
    /// The tool's result does not fit the declared outputs.
    #[error(
        "MCP server `{server}`, tool `{tool}`: the result does not fit the declared outputs: {detail}"
    )]
    Result {
        server: String,
        tool: String,
        detail: String,
    },
    /// A `tools/list` document (or another input of the importer) is malformed.
    #[error("{what}: {message}")]
    Input { what: String, message: String },
    /// Reading or writing a file.
    #[error("{path}: {message}")]
    Io { path: String, message: String },
}

impl McpError {
    /// The short name of the error's kind (for tests and JSON reports).
    pub fn kind(&self) -> &'static str {
        match self {
            McpError::Spawn { .. } => "spawn",
            McpError::Connect { .. } => "connect",
            McpError::Drift { .. } => "drift",
            McpError::MissingSlots { .. } => "missing_slots",
            McpError::InvalidArgument { .. } => "invalid_argument",
            McpError::ToolFailed { .. } => "tool_failed",
            McpError::NoAnswer { .. } => "no_answer",
            McpError::Protocol { .. } => "protocol",
            McpError::Disconnected { .. } => "disconnected",
            McpError::Result { .. } => "result",
            McpError::Input { .. } => "input",
            McpError::Io { .. } => "io",
        }
    }
}

/// A duration as people write it in `troupe.toml` (`300s`, `1.5s`).
fn seconds(d: std::time::Duration) -> String {
    format!("{}s", d.as_secs_f64())
}
