//! Locating the real MCP servers the tests talk to (installed by
//! `.ci/install-mcp-servers.sh`) and the shared test data. A missing server
//! fails the test with the command that installs it: nothing is skipped.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;

/// `$TROUPE_MCP_SERVERS`, or `~/.cache/troupe/mcp-servers`.
pub fn servers_dir() -> PathBuf {
    match std::env::var_os("TROUPE_MCP_SERVERS") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
            .join(".cache/troupe/mcp-servers"),
    }
}

fn installed(relative: &str, what: &str) -> PathBuf {
    let path = servers_dir().join(relative);
    assert!(
        path.exists(),
        "{what} is not installed at {}: run `bash .ci/install-mcp-servers.sh` from the repository root \
         (set TROUPE_MCP_SERVERS to use another directory)",
        path.display()
    );
    path
}

/// The `mcp-server-time` executable (PyPI).
pub fn time_server() -> PathBuf {
    installed("venv/bin/mcp-server-time", "mcp-server-time")
}

/// The `mcp-server-everything` executable (npm).
pub fn everything_server() -> PathBuf {
    installed(
        "npm/node_modules/.bin/mcp-server-everything",
        "@modelcontextprotocol/server-everything",
    )
}

/// `../shared/data` beside the repository.
pub fn shared_data() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data");
    assert!(
        dir.exists(),
        "the shared data is missing at {}",
        dir.display()
    );
    dir
}

pub fn stdio(
    name: &str,
    command: &std::path::Path,
    args: &[&str],
) -> Arc<troupe_check::ir::McpServer> {
    Arc::new(troupe_check::ir::McpServer {
        name: name.to_owned(),
        transport: troupe_check::ir::McpTransport::Stdio {
            command: command.display().to_string(),
            args: args.iter().map(|s| s.to_string()).collect(),
            env: Vec::new(),
            cwd: None,
        },
        contracts: None,
        span: Default::default(),
    })
}

/// A direct call of `tool` with JSON arguments and one `Json` output.
pub fn call(
    server: &Arc<troupe_check::ir::McpServer>,
    tool: &str,
    args: serde_json::Value,
) -> troupe_runtime::ToolCall {
    troupe_runtime::ToolCall {
        server: server.clone(),
        tool: tool.to_owned(),
        arguments: args.as_object().cloned().unwrap_or_default(),
        outputs: vec![troupe_llm::OutputSlot::new(
            "result",
            troupe_check::Type::Json,
        )],
        types: Arc::new(troupe_check::TypeTable::default()),
        idempotency_key: format!("test/{tool}#0"),
    }
}

/// Quotes a path as a string literal of the language.
pub fn lit(path: &std::path::Path) -> String {
    troupe_mcp::import::string_literal(&path.display().to_string())
}
