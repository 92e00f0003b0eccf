//! `troupe mcp …`: the subcommands of this crate, for the `troupe` binary to mount.
//!
//! ```text
//! troupe mcp import "uvx mcp-server-time" -o time.troupe
//! troupe mcp import http://127.0.0.1:8931/mcp --name search
//! troupe mcp import --from-json ../shared/data/mcp-tools/time.json
//! ```

use std::io::Write;
use std::path::PathBuf;

use crate::error::McpError;
use crate::import::{
    ImportOptions, default_server_name, import_from_json, import_from_server, parse_server_spec,
    snake_identifier,
};

/// MCP servers: import their tools as typed declarations.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum McpCommand {
    /// Connect to an MCP server and write typed `tool` declarations for its tools.
    ///
    /// SERVER is a command line that starts the server over stdio (quote it:
    /// "uvx mcp-server-time"), an http(s):// URL of a Streamable HTTP
    /// endpoint, or, with --from-json, a captured tools/list file. The output
    /// checks clean; move the declarations you need into your workflow file.
    #[command(verbatim_doc_comment)]
    Import {
        /// The server: a command line, a URL, or (with --from-json) a file.
        server: String,
        /// The `mcp` server's name in the output (default: from the command, URL or file).
        #[arg(long)]
        name: Option<String>,
        /// Write to this file instead of standard output.
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Treat SERVER as a captured tools/list answer (JSON) instead of a server to start.
        #[arg(long)]
        from_json: bool,
    },
}

/// Runs a subcommand on its own single-threaded runtime (call it outside any
/// tokio runtime; from async code use [`run_async`]). Returns the exit status.
pub fn run(cmd: McpCommand, out: &mut dyn Write) -> Result<i32, McpError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| McpError::Io {
            path: "(runtime)".into(),
            message: e.to_string(),
        })?;
    let result = runtime.block_on(run_async(cmd, out));
    // Stop child processes before the runtime goes away.
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    result
}

/// Runs a subcommand. Returns the exit status (0 success).
pub async fn run_async(cmd: McpCommand, out: &mut dyn Write) -> Result<i32, McpError> {
    match cmd {
        McpCommand::Import {
            server,
            name,
            output,
            from_json,
        } => {
            let text = if from_json {
                let path = PathBuf::from(&server);
                let json = std::fs::read_to_string(&path).map_err(|e| McpError::Io {
                    path: server.clone(),
                    message: e.to_string(),
                })?;
                let stem = path
                    .file_stem()
                    .and_then(|s| s.to_str())
                    .unwrap_or("server")
                    .to_owned();
                let options = ImportOptions {
                    name: name.unwrap_or_else(|| snake_identifier(&stem)),
                    transport: None,
                    source: format!("the captured file {}", path.display()),
                };
                import_from_json(&json, &options)?
            } else {
                let transport = parse_server_spec(&server)?;
                let options = ImportOptions {
                    name: name.unwrap_or_else(|| default_server_name(&transport)),
                    transport: Some(transport),
                    source: format!("`{server}`"),
                };
                import_from_server(&options).await?
            };
            let io = |path: &str, e: std::io::Error| McpError::Io {
                path: path.to_owned(),
                message: e.to_string(),
            };
            match output {
                Some(path) => {
                    std::fs::write(&path, &text).map_err(|e| io(&path.display().to_string(), e))?
                }
                None => out
                    .write_all(text.as_bytes())
                    .map_err(|e| io("standard output", e))?,
            }
            Ok(0)
        }
    }
}
