//! The troupe language server.
//!
//! [`run_stdio`] speaks the Language Server Protocol over standard input and
//! output (the `troupe lsp` subcommand); [`serve`] does the same over any
//! pair of byte streams. On every change the server publishes the same
//! diagnostics as `troupe check` (codes, related locations, hints, contract
//! findings), and answers hover, definition, references, completion,
//! document symbols, rename, code actions and two commands
//! (`troupe.project`, `troupe.chart`). [`bench`] measures the latency of
//! diagnostics on a large file.

pub mod analysis;
pub mod bench;
mod causal;
pub mod index;
pub mod server;
pub mod text;

pub use analysis::Analysis;
pub use server::{COMMAND_CHART, COMMAND_PROJECT, serve};

/// Why the server stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum LspError {
    /// A message could not be encoded.
    #[error("JSON error: {0}")]
    Json(#[from] serde_json::Error),
    /// Writing to the client failed, or the reader thread could not start.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

/// Serves one client over stdin/stdout until it sends `exit` or closes its
/// end of the connection.
pub fn run_stdio() -> Result<(), LspError> {
    serve(std::io::stdin(), std::io::stdout())
}
