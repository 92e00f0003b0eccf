//! `troupe mcp …`: import a server's tools as typed declarations, pin them
//! in a lock, or serve workflows as an MCP server.
//!
//! The work is `troupe_mcp`'s (`ops` for import and lock, `serve` for the
//! server); this module parses the arguments ([`args`]), reads what the
//! library does not (`TROUPE_TOKEN`, `--token-file`, the lease), writes the
//! files and decides the exit status: 0, 2 on errors, 130 or 143 when
//! SIGINT or SIGTERM stopped it.
//!
//! ```text
//! troupe mcp import "uvx mcp-server-time" -o time.troupe
//! troupe mcp import http://127.0.0.1:8931/mcp --name search
//! troupe mcp import --from-json ../shared/data/mcp-tools/time.json
//! troupe mcp lock "uvx mcp-server-time" -o troupe.lock.json
//! troupe mcp serve examples/counter.troupe examples/local_approval.troupe
//! troupe mcp serve flows/*.troupe --store runs.db --http 127.0.0.1:8940
//! ```

mod args;

pub use args::McpCommand;

use crate::ExitStatus;
use anyhow::Result;
use std::io::Write;
use std::path::Path;
use troupe_mcp::McpError;
use troupe_mcp::serve::{HttpOptions, ServeError, ServeOptions, Server};

/// What the command reads from its environment for the library.
struct Environment {
    /// The lease on runs `mcp serve` drives (`TROUPE_LEASE`).
    lease: Option<std::time::Duration>,
    /// The bearer token `mcp serve --http` requires (`TROUPE_TOKEN`), unless
    /// `--token-file` names one.
    token: Option<String>,
    /// Triggered at the first SIGINT or SIGTERM: the runs `mcp serve`
    /// drives stop at their step boundary and give their leases back.
    interrupt: troupe_runtime::Interrupt,
}

/// Runs a subcommand on its own runtime. `mcp serve` gets a multi-threaded
/// one: a run that computes for long without waiting (a long pure loop)
/// holds its thread, and the transport must still read the client's
/// messages (and its disconnection) meanwhile.
pub fn run(cmd: McpCommand) -> Result<ExitStatus> {
    // Not locked for the whole command: `mcp serve` writes its stdio
    // transport to stdout from another thread, and a held lock would stall
    // it for ever. `Stdout` locks per write.
    let mut out = std::io::stdout();
    let env = Environment {
        lease: Some(crate::commands::durable::host_config()?.lease),
        token: std::env::var("TROUPE_TOKEN").ok(),
        interrupt: crate::signals::interrupt(),
    };
    let runtime = match cmd {
        McpCommand::Serve { .. } => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(
                std::thread::available_parallelism()
                    .map_or(2, |n| n.get())
                    .max(2),
            )
            .enable_all()
            .build(),
        _ => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
    };
    let result = match runtime {
        Ok(runtime) => {
            let result = runtime.block_on(async {
                tokio::select! {
                    r = execute(cmd, &mut out, &env) => r,
                    () = crate::signals::first_signal("the runs this server drives") => {
                        // Interrupted: the runs in flight reach their step
                        // boundary (an effect gets its grace) and give their
                        // leases back; exit 130 or 143.
                        troupe_mcp::ops::wait_for_runs().await;
                        Ok(ExitStatus::Signalled(crate::signals::received().unwrap_or(15)))
                    }
                }
            });
            // Stop child processes before the runtime goes away.
            runtime.shutdown_timeout(std::time::Duration::from_secs(2));
            result
        }
        Err(e) => Err(McpError::Io {
            path: "(runtime)".into(),
            message: e.to_string(),
        }),
    };
    match result {
        Ok(status) => Ok(status),
        Err(e) => {
            out.flush()?;
            crate::note!("error: {e}");
            Ok(ExitStatus::Usage)
        }
    }
}

/// An error writing `path`.
fn io_error(path: &str, e: std::io::Error) -> McpError {
    McpError::Io {
        path: path.to_owned(),
        message: e.to_string(),
    }
}

/// Runs a subcommand.
async fn execute(
    cmd: McpCommand,
    out: &mut dyn Write,
    env: &Environment,
) -> Result<ExitStatus, McpError> {
    match cmd {
        McpCommand::Serve {
            files,
            store,
            http,
            llm,
            llm_for,
            deadline_ms,
            mock_externs,
            allow_origin,
            token_file,
            max_sessions,
            session_idle,
        } => {
            let token = match &token_file {
                Some(path) => Some(read_token_file(path)?),
                None => env.token.clone().filter(|_| http.is_some()),
            };
            let http = http.map(|addr| {
                (
                    addr,
                    HttpOptions {
                        allow_origins: allow_origin,
                        token,
                        max_sessions,
                        session_idle,
                    },
                )
            });
            // `--store`, else `TROUPE_STORE`, else `[store] path`, else the
            // default: the host's one resolution.
            let store = troupe_host::store_address(Some(&store), Path::new(".")).map_err(|e| {
                McpError::Io {
                    path: troupe_llm::config::CONFIG_FILE.into(),
                    message: e.to_string(),
                }
            })?;
            let options = ServeOptions {
                files,
                store,
                llm,
                llm_for,
                deadline: std::time::Duration::from_millis(deadline_ms),
                mock_externs,
                lease: env.lease,
                interrupt: Some(env.interrupt.clone()),
            };
            serve(options, http).await.map_err(|e| McpError::Input {
                what: "troupe mcp serve".into(),
                message: e.to_string(),
            })?;
            Ok(ExitStatus::Success)
        }
        McpCommand::Import {
            server,
            name,
            output,
            from_json,
        } => {
            let (listing, options) = troupe_mcp::ops::fetch(&server, name, from_json).await?;
            let written = troupe_mcp::ops::declarations(&listing, &options, output.as_deref());
            if let Some((at, contracts)) = &written.sidecar {
                let text = serde_json::to_string_pretty(contracts).unwrap_or_default();
                std::fs::write(at, text + "\n")
                    .map_err(|e| io_error(&at.display().to_string(), e))?;
            }
            match output {
                Some(path) => std::fs::write(&path, &written.text)
                    .map_err(|e| io_error(&path.display().to_string(), e))?,
                None => out
                    .write_all(written.text.as_bytes())
                    .map_err(|e| io_error("standard output", e))?,
            }
            Ok(ExitStatus::Success)
        }
        McpCommand::Lock {
            server,
            output,
            from_json,
        } => {
            let (listing, options) = troupe_mcp::ops::fetch(&server, None, from_json).await?;
            let lock = troupe_mcp::lock::lock_json(&listing, &options.name);
            let text = serde_json::to_string_pretty(&lock).unwrap_or_default() + "\n";
            match output {
                Some(path) => std::fs::write(&path, &text)
                    .map_err(|e| io_error(&path.display().to_string(), e))?,
                None => out
                    .write_all(text.as_bytes())
                    .map_err(|e| io_error("standard output", e))?,
            }
            Ok(ExitStatus::Success)
        }
    }
}

/// The bearer token of `--token-file`: its first line; the file must not be
/// readable or writable by others.
fn read_token_file(path: &Path) -> Result<String, McpError> {
    use std::os::unix::fs::PermissionsExt;
    let io = |e: std::io::Error| io_error(&path.display().to_string(), e);
    let mode = std::fs::metadata(path).map_err(io)?.permissions().mode();
    if mode & 0o077 != 0 {
        return Err(McpError::Input {
            what: format!("--token-file {}", path.display()),
            message: format!(
                "the file is readable by others (mode {:o}); `chmod 600 {}` first",
                mode & 0o777,
                path.display()
            ),
        });
    }
    let text = std::fs::read_to_string(path).map_err(io)?;
    Ok(text.lines().next().unwrap_or("").trim().to_owned())
}

/// `troupe mcp serve`: serves until the client disconnects (stdio) or the
/// process ends (HTTP). Messages go to standard error: standard output is
/// the protocol's.
async fn serve(
    options: ServeOptions,
    http: Option<(std::net::SocketAddr, HttpOptions)>,
) -> Result<(), ServeError> {
    let server = Server::new(&options)?;
    let names = server.workflow_names().join(", ");
    match http {
        Some((addr, http)) => {
            let serving = server.bind_http(addr, &http).await?;
            crate::note!(
                "serving {names} at http://{}/mcp (store {}{})",
                serving.addr,
                options.store.display(),
                if http.token.is_some() {
                    "; bearer token required"
                } else {
                    ""
                }
            );
            serving.run().await
        }
        None => {
            crate::note!(
                "serving {names} over stdio (store {})",
                options.store.display()
            );
            server.serve_stdio().await
        }
    }
}
