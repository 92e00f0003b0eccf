//! An MCP server for troupe's train booking example (`examples/train_booking.troupe`).
//!
//! Six tools over a small ledger of users, accounts and tickets:
//! `get_user`, `quote_fare`, `check_balance` (read-only), `book_ticket`
//! (transactional: it debits the account), `print_ticket` and `email_ticket`.
//! Every tool carries its annotations and an MCP+ contract in
//! `_meta["dev.troupe/contract"]` (see `troupe-contracts`).
//!
//! The ledger lives in memory, seeded with three users; with a ledger file it
//! is loaded from and saved to that JSON file after every change, so a booking
//! survives restarts. `book_ticket` honours the idempotency key that troupe
//! sends in `_meta["dev.troupe/idempotency-key"]`: the same key books once.
//!
//! For tests, a call log (one JSON line per `tools/call`) shows which calls
//! reached the server, and `die_on` makes the process exit in the middle of a
//! named tool's call.

pub mod ledger;
pub mod tools;

use std::path::PathBuf;
use std::sync::Arc;

use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::{Value, json};
use tokio::sync::Mutex;

pub use ledger::{Ledger, LedgerError};

/// The `_meta` key carrying troupe's idempotency key on a `tools/call`.
pub const IDEMPOTENCY_KEY: &str = "dev.troupe/idempotency-key";

/// How the server is run.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Load the ledger from this JSON file (when it exists) and save every change to it.
    pub ledger: Option<PathBuf>,
    /// Append one JSON line per `tools/call` to this file (before the call runs).
    pub call_log: Option<PathBuf>,
    /// Exit the process (status 3) in the middle of a call of this tool, for tests.
    pub die_on: Option<String>,
    /// What the tools publish in `_meta` (for tests of contracts that come
    /// from elsewhere than the sidecar, or lie).
    pub meta: Meta,
    /// Poison `get_user`'s description with an instruction aimed at the
    /// model (for tests of the lint a run does before it starts).
    pub poison: bool,
    /// Answer every call of this tool with a 32 MiB result (for tests of
    /// what a client does with an answer its transport drops).
    pub huge: Option<String>,
}

/// The MCP+ contracts the tools publish in `_meta`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Meta {
    /// The example's contracts (the same as its sidecar).
    #[default]
    Contracts,
    /// None: only the annotations speak.
    None,
    /// A lie: every tool claims to be neither transactional nor in need of
    /// a confirmation, with no relations (the annotations still tell the
    /// truth: `book_ticket` is destructive).
    Lying,
}

impl std::str::FromStr for Meta {
    type Err = String;

    fn from_str(s: &str) -> Result<Meta, String> {
        match s {
            "contracts" => Ok(Meta::Contracts),
            "none" => Ok(Meta::None),
            "lying" => Ok(Meta::Lying),
            other => Err(format!(
                "--meta takes contracts, none or lying, not `{other}`"
            )),
        }
    }
}

/// The server: the ledger behind a lock, and the tool definitions.
#[derive(Debug, Clone)]
pub struct BookingServer {
    ledger: Arc<Mutex<Ledger>>,
    options: Arc<Options>,
    tools: Arc<Vec<Tool>>,
}

impl BookingServer {
    /// Opens the ledger (the file's, or the seeded one) and builds the tools.
    pub fn new(options: Options) -> Result<BookingServer, LedgerError> {
        let ledger = match &options.ledger {
            Some(path) => Ledger::open(path)?,
            None => Ledger::seeded(),
        };
        Ok(BookingServer {
            ledger: Arc::new(Mutex::new(ledger)),
            tools: Arc::new(tools::published(options.meta, options.poison)),
            options: Arc::new(options),
        })
    }

    fn log_call(&self, params: &CallToolRequestParams, key: Option<&str>) {
        let Some(path) = &self.options.call_log else {
            return;
        };
        let line = json!({
            "tool": params.name,
            "arguments": params.arguments,
            "idempotency_key": key,
        });
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(f, "{line}");
        }
    }

    /// Performs one call: the tool's result, or a tool-level error result.
    pub async fn call(
        &self,
        name: &str,
        args: &serde_json::Map<String, Value>,
        key: Option<&str>,
    ) -> CallToolResult {
        if self.options.huge.as_deref() == Some(name) {
            return CallToolResult::success(vec![ContentBlock::text("x".repeat(32 << 20))]);
        }
        let mut ledger = self.ledger.lock().await;
        match tools::call(&mut ledger, name, args, key) {
            Ok(outcome) => {
                if outcome.changed
                    && let Some(path) = &self.options.ledger
                    && let Err(e) = ledger.save(path)
                {
                    return error_result(format!(
                        "the booking was made but the ledger could not be saved: {e}"
                    ));
                }
                let mut result = CallToolResult::success(vec![ContentBlock::text(outcome.text)]);
                result.structured_content = outcome.structured;
                result
            }
            Err(e) => error_result(e.to_string()),
        }
    }
}

fn error_result(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

impl ServerHandler for BookingServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "train-booking-server",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "Books train tickets: look the user up, quote the fare, check the balance, \
                 book only after the user confirmed, then print or email the ticket.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // rmcp moves the request's `_meta` into the context.
        let key = context
            .meta
            .0
            .0
            .get(IDEMPOTENCY_KEY)
            .or_else(|| {
                request
                    .meta
                    .as_ref()
                    .and_then(|m| m.0.0.get(IDEMPOTENCY_KEY))
            })
            .and_then(Value::as_str)
            .map(str::to_owned);
        self.log_call(&request, key.as_deref());
        if !self.tools.iter().any(|t| t.name == request.name) {
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{}`", request.name),
                None,
            ));
        }
        if self.options.die_on.as_deref() == Some(&*request.name) {
            eprintln!(
                "train-booking-server: dying in the middle of `{}` (--die-on)",
                request.name
            );
            std::process::exit(3);
        }
        let args = request.arguments.clone().unwrap_or_default();
        Ok(self.call(&request.name, &args, key.as_deref()).await.into())
    }
}
