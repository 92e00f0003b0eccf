//! The troupe language server.
//!
//! [`run_stdio`] speaks the Language Server Protocol over standard input and
//! output (the `troupe lsp` subcommand).

use lsp_server::{Connection, Message, Response};
use lsp_types::{InitializeResult, ServerCapabilities, ServerInfo};

/// Why the server stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum LspError {
    /// The connection to the client failed (closed stream, protocol error).
    #[error("protocol error: {0}")]
    Protocol(#[from] lsp_server::ProtocolError),
    /// A message could not be encoded or decoded.
    #[error("JSON error: {0}")]
    Json(#[from] serde_json::Error),
    /// The I/O threads failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

/// Serves one client over stdin/stdout until it sends `exit`.
pub fn run_stdio() -> Result<(), LspError> {
    let (connection, io_threads) = Connection::stdio();
    let (id, _params) = connection.initialize_start()?;
    let result = InitializeResult {
        capabilities: ServerCapabilities::default(),
        server_info: Some(ServerInfo {
            name: "troupe".into(),
            version: Some(env!("CARGO_PKG_VERSION").into()),
        }),
    };
    connection.initialize_finish(id, serde_json::to_value(result)?)?;
    for msg in &connection.receiver {
        if let Message::Request(req) = msg {
            if connection.handle_shutdown(&req)? {
                break;
            }
            let resp = Response::new_err(
                req.id,
                lsp_server::ErrorCode::MethodNotFound as i32,
                format!("unknown method {}", req.method),
            );
            connection
                .sender
                .send(Message::Response(resp))
                .map_err(|e| std::io::Error::other(e.to_string()))?;
        }
    }
    drop(connection);
    io_threads.join()?;
    Ok(())
}
