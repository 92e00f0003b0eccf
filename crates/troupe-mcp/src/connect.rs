//! Opening a client session with one MCP server: a child process over stdio
//! (its standard error kept as a short tail for error messages) or a
//! Streamable HTTP endpoint; the `initialize` handshake at protocol revision
//! 2025-11-25.

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion, Tool};
use rmcp::service::{RoleClient, RunningService, ServiceExt};
use rmcp::transport::TokioChildProcess;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransport, StreamableHttpClientTransportConfig,
};
use tokio::io::AsyncBufReadExt;
use troupe_check::ir::{McpServer, McpTransport};

use crate::error::McpError;
use crate::http::Reqwest12;

/// How long `initialize` may take (npm servers take a second or two to start).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(60);

const TAIL_LINES: usize = 20;
const TAIL_LINE_CHARS: usize = 400;

/// The last lines a child process wrote to its standard error.
#[derive(Debug, Clone, Default)]
pub struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    fn push(&self, line: &str) {
        if let Ok(mut lines) = self.0.lock() {
            if lines.len() == TAIL_LINES {
                lines.pop_front();
            }
            lines.push_back(line.chars().take(TAIL_LINE_CHARS).collect());
        }
    }

    /// The tail as one string (empty when the server wrote nothing).
    pub fn text(&self) -> String {
        self.0
            .lock()
            .map(|lines| lines.iter().cloned().collect::<Vec<_>>().join("\n"))
            .unwrap_or_default()
    }

    /// ` (its last output: …)`, or nothing.
    pub fn suffix(&self) -> String {
        let text = self.text();
        if text.trim().is_empty() {
            String::new()
        } else {
            format!("; its last error output:\n{text}")
        }
    }
}

/// A client session with one server.
#[derive(Debug)]
pub struct Session {
    pub server: String,
    pub client: RunningService<RoleClient, ClientConfig>,
    pub stderr: StderrTail,
}

fn client_config() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("troupe", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(ProtocolVersion::V_2025_11_25)
}

/// Connects to `server` and performs the handshake, within `timeout`.
pub async fn connect(server: &McpServer, timeout: Duration) -> Result<Session, McpError> {
    let name = server.name.clone();
    let connect_err = |message: String| McpError::Connect {
        server: name.clone(),
        message,
    };
    match &server.transport {
        McpTransport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args).kill_on_drop(true);
            for (k, v) in env {
                cmd.env(k, v);
            }
            if let Some(dir) = cwd {
                cmd.current_dir(dir);
            }
            let (transport, stderr) = TokioChildProcess::builder(cmd)
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| McpError::Spawn {
                    server: name.clone(),
                    command: std::iter::once(command.as_str())
                        .chain(args.iter().map(String::as_str))
                        .collect::<Vec<_>>()
                        .join(" "),
                    message: match e.kind() {
                        std::io::ErrorKind::NotFound => format!(
                            "{e} (is `{command}` installed and on PATH, or is its path right relative to {}?)",
                            std::env::current_dir()
                                .map(|d| d.display().to_string())
                                .unwrap_or_else(|_| "the current directory".into())
                        ),
                        _ => e.to_string(),
                    },
                })?;
            let tail = StderrTail::default();
            if let Some(stderr) = stderr {
                let tail = tail.clone();
                tokio::spawn(async move {
                    let mut lines = tokio::io::BufReader::new(stderr).lines();
                    while let Ok(Some(line)) = lines.next_line().await {
                        tail.push(&line);
                    }
                });
            }
            let client = match tokio::time::timeout(timeout, client_config().serve(transport)).await
            {
                Ok(Ok(client)) => client,
                Ok(Err(e)) => {
                    // Give the reader a moment to collect why the process stopped.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    return Err(connect_err(format!("{e}{}", tail.suffix())));
                }
                Err(_) => {
                    return Err(connect_err(format!(
                        "no answer to `initialize` within {timeout:?}{}",
                        tail.suffix()
                    )));
                }
            };
            Ok(Session {
                server: name,
                client,
                stderr: tail,
            })
        }
        McpTransport::Http { url } => {
            let client = reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(10))
                .build()
                .map_err(|e| connect_err(e.to_string()))?;
            let transport = StreamableHttpClientTransport::with_client(
                Reqwest12(client),
                StreamableHttpClientTransportConfig::with_uri(url.as_str()),
            );
            let client = match tokio::time::timeout(timeout, client_config().serve(transport)).await
            {
                Ok(Ok(client)) => client,
                Ok(Err(e)) => return Err(connect_err(format!("{url}: {e}"))),
                Err(_) => {
                    return Err(connect_err(format!(
                        "{url}: no answer to `initialize` within {timeout:?}"
                    )));
                }
            };
            Ok(Session {
                server: name,
                client,
                stderr: StderrTail::default(),
            })
        }
    }
}

impl Session {
    /// Every tool the server offers (all pages of `tools/list`).
    pub async fn list_tools(&self, timeout: Duration) -> Result<Vec<Tool>, McpError> {
        match tokio::time::timeout(timeout, self.client.peer().list_all_tools()).await {
            Ok(Ok(tools)) => Ok(tools),
            Ok(Err(e)) => Err(McpError::Connect {
                server: self.server.clone(),
                message: format!("tools/list failed: {e}{}", self.stderr.suffix()),
            }),
            Err(_) => Err(McpError::Connect {
                server: self.server.clone(),
                message: format!("no answer to tools/list within {timeout:?}"),
            }),
        }
    }

    /// Whether the connection is gone (the process exited or the stream closed).
    pub fn is_closed(&self) -> bool {
        self.client.is_closed() || self.client.peer().is_transport_closed()
    }

    /// A human description of the server for comments: name, version, title.
    pub fn server_info(&self) -> Option<serde_json::Value> {
        self.client
            .peer_info()
            .and_then(|info| serde_json::to_value(info).ok())
    }
}
