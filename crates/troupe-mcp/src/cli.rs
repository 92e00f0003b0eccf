//! `troupe mcp …`: the subcommands of this crate, for the `troupe` binary to mount.
//!
//! ```text
//! troupe mcp import "uvx mcp-server-time" -o time.troupe
//! troupe mcp import http://127.0.0.1:8931/mcp --name search
//! troupe mcp import --from-json ../shared/data/mcp-tools/time.json
//! troupe mcp lock "uvx mcp-server-time" -o troupe.lock.json
//! troupe mcp serve examples/counter.troupe examples/local_approval.troupe
//! troupe mcp serve flows/*.troupe --store runs.db --http 127.0.0.1:8940
//! ```

use std::io::Write;
use std::path::PathBuf;

use crate::error::McpError;
use crate::import::{
    ImportOptions, Listing, default_server_name, listing_from_json, listing_from_server,
    parse_server_spec, published_contracts, render_with_contracts, snake_identifier,
};
use crate::serve::{HttpOptions, ServeError, ServeOptions, Server};

/// MCP: import a server's tools as typed declarations, or serve workflows as an MCP server.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum McpCommand {
    /// Connect to an MCP server and write typed `tool` declarations for its tools.
    ///
    /// SERVER is a command line that starts the server over stdio (quote it:
    /// "uvx mcp-server-time"), an http(s):// URL of a Streamable HTTP
    /// endpoint, or, with --from-json, a captured tools/list file. The output
    /// checks clean; move the declarations you need into your workflow file.
    /// MCP+ contracts the server publishes in `_meta` are kept: with -o FILE
    /// they are written to FILE's stem + `.contracts.json` next to it and the
    /// `mcp` declaration names that sidecar; tools that publish none are
    /// marked as unverified.
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
    /// Pin a server's tool definitions: a SHA-256 of each tool's name,
    /// description and schemas, in a lock file.
    ///
    /// `troupe contracts lint --lock FILE TOOLS` then reports every tool whose
    /// definition changed since (a description changed after review: a "rug
    /// pull") as an error. SERVER is as for `import`.
    #[command(verbatim_doc_comment)]
    Lock {
        /// The server: a command line, a URL, or (with --from-json) a file.
        server: String,
        /// Write the lock to this file instead of standard output.
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Treat SERVER as a captured tools/list answer (JSON).
        #[arg(long)]
        from_json: bool,
    },
    /// Serve workflows as an MCP server (stdio, or Streamable HTTP with --http).
    ///
    /// Each workflow of FILE... is a tool that starts a durable run in the
    /// store and returns its results, or its run id and status when it waits
    /// on people or takes longer than --deadline-ms. Pending human tasks are
    /// answered with the tool `answer_task` (listed by `list_tasks`); runs
    /// are resources: troupe://runs, troupe://runs/{id}, troupe://runs/{id}/trace,
    /// troupe://runs/{id}/chart (Mermaid).
    ///
    /// A call with a progressToken gets notifications/progress as its run
    /// records events; notifications/cancelled cancels the call's run (its
    /// in-flight actions stop at the owner's next lease renewal; TROUPE_LEASE
    /// sets the lease, 15 s by default, renewed every third of it).
    ///
    /// Over HTTP, requests from a browser page (with an Origin header) are
    /// served only from loopback origins and --allow-origin ones; with a
    /// token (TROUPE_TOKEN, or --token-file) every request needs
    /// `Authorization: Bearer TOKEN`.
    #[command(verbatim_doc_comment)]
    Serve {
        /// The .troupe files whose workflows become tools.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// The store (an SQLite file; created if missing).
        #[arg(long, value_name = "DB", default_value = crate::serve::DEFAULT_STORE)]
        store: PathBuf,
        /// Serve Streamable HTTP at this loopback address (endpoint http://ADDR/mcp)
        /// instead of stdio, e.g. 127.0.0.1:8940.
        #[arg(long, value_name = "ADDR")]
        http: Option<std::net::SocketAddr>,
        /// The default model (default: mock).
        #[arg(long, value_name = "SPEC")]
        llm: Option<String>,
        /// A model for one action or lifeline: KEY=SPEC (repeatable).
        #[arg(long = "llm-for", value_name = "KEY=SPEC")]
        llm_for: Vec<String>,
        /// How long a tool call waits for its run before it answers with the run id.
        #[arg(long, value_name = "MS", default_value_t = 2000)]
        deadline_ms: u64,
        /// Answer `extern` actions that have no implementation with mock
        /// values (without it, such workflows' runs refuse to start).
        #[arg(long)]
        mock_externs: bool,
        /// With --http: also serve browser pages from this origin
        /// (scheme://host[:port], `:*` for any port, or `null`; repeatable).
        /// Loopback origins are always allowed; requests without an Origin
        /// header (non-browser clients) are always served.
        #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
        allow_origin: Vec<String>,
        /// With --http: read the bearer token from this file (its first
        /// line; the file must be private, mode 0600). TROUPE_TOKEN gives it
        /// too; never on the command line, where `ps` shows it.
        #[arg(long, value_name = "FILE", requires = "http")]
        token_file: Option<PathBuf>,
        /// With --http: the most sessions open at once; an `initialize`
        /// beyond them is refused (HTTP 503) until one ends or expires.
        #[arg(long, value_name = "N", default_value_t = crate::serve::http::DEFAULT_MAX_SESSIONS)]
        max_sessions: usize,
        /// With --http: close a session after this long without a message
        /// (e.g. 90s, 10m, 1h); its client starts a new one. Runs go on.
        #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
        session_idle: std::time::Duration,
    },
}

/// A duration: a whole number with `ms`, `s`, `m` or `h`.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration such as 90s, 10m or 1h"))?;
    let ms = match unit.trim() {
        "ms" => Some(n),
        "s" => n.checked_mul(1000),
        "m" | "min" => n.checked_mul(60_000),
        "h" => n.checked_mul(3_600_000),
        _ => None,
    }
    .ok_or_else(|| format!("`{text}` is not a duration such as 90s, 10m or 1h"))?;
    if ms == 0 {
        return Err("the duration must be more than zero".into());
    }
    Ok(std::time::Duration::from_millis(ms))
}

/// The bearer token of `--token-file`: its first line; the file must not be
/// readable or writable by others.
fn read_token_file(path: &std::path::Path) -> Result<String, McpError> {
    use std::os::unix::fs::PermissionsExt;
    let io = |e: std::io::Error| McpError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    };
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

/// What the binary read from its environment for the subcommands (the
/// library reads no environment variables itself).
#[derive(Debug, Clone, Default)]
pub struct Environment {
    /// The lease on runs `mcp serve` drives (`TROUPE_LEASE`); the host's
    /// default when `None`.
    pub lease: Option<std::time::Duration>,
    /// The bearer token `mcp serve --http` requires (`TROUPE_TOKEN`), unless
    /// `--token-file` names one.
    pub token: Option<String>,
    /// Triggered when the process is asked to stop (`mcp serve`'s runs
    /// stop at their step boundary and give their leases back).
    pub interrupt: Option<troupe_runtime::Interrupt>,
}

/// Runs a subcommand on its own runtime (call it outside any tokio runtime;
/// from async code use [`run_async`]). Returns the exit status.
///
/// `mcp serve` gets a multi-threaded runtime: a run that computes for long
/// without waiting (a long pure loop) holds its thread, and the transport
/// must still read the client's messages (and its disconnection) meanwhile.
///
/// `stop` resolving (the CLI's first SIGINT or SIGTERM, which also triggers
/// [`Environment::interrupt`]) ends the command with the status it gives;
/// the runs `mcp serve` drives then get until their step boundary (at most
/// an effect's grace) to stop and give their leases back.
pub fn run(
    cmd: McpCommand,
    out: &mut dyn Write,
    env: &Environment,
    stop: impl std::future::Future<Output = i32>,
) -> Result<i32, McpError> {
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
    }
    .map_err(|e| McpError::Io {
        path: "(runtime)".into(),
        message: e.to_string(),
    })?;
    let result = runtime.block_on(async {
        tokio::select! {
            r = run_async(cmd, out, env) => r,
            code = stop => {
                // Interrupted: the runs in flight reach their step boundary
                // (an effect gets its grace) and give their leases back.
                let deadline = tokio::time::Instant::now()
                    + troupe_host::DEFAULT_GRACE
                    + std::time::Duration::from_secs(1);
                while crate::serve::runs::driving() > 0 && tokio::time::Instant::now() < deadline {
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                }
                Ok(code)
            }
        }
    });
    // Stop child processes before the runtime goes away.
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    result
}

/// Runs a subcommand. Returns the exit status (0 success).
pub async fn run_async(
    cmd: McpCommand,
    out: &mut dyn Write,
    env: &Environment,
) -> Result<i32, McpError> {
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
            let store = troupe_host::store_address(Some(&store), std::path::Path::new("."))
                .map_err(|e| McpError::Io {
                    path: troupe_llm::config::CONFIG_FILE.into(),
                    message: e.to_string(),
                })?;
            let options = ServeOptions {
                files,
                store,
                llm,
                llm_for,
                deadline: std::time::Duration::from_millis(deadline_ms),
                mock_externs,
                lease: env.lease,
                interrupt: env.interrupt.clone(),
            };
            serve(options, http).await.map_err(|e| McpError::Input {
                what: "troupe mcp serve".into(),
                message: e.to_string(),
            })?;
            Ok(0)
        }
        McpCommand::Import {
            server,
            name,
            output,
            from_json,
        } => {
            let (listing, options) = fetch(&server, name, from_json).await?;
            let io = |path: &str, e: std::io::Error| McpError::Io {
                path: path.to_owned(),
                message: e.to_string(),
            };
            match output {
                Some(path) => {
                    let sidecar = published_contracts(&listing).map(|contracts| {
                        let stem = path
                            .file_stem()
                            .and_then(|s| s.to_str())
                            .unwrap_or("tools")
                            .to_owned();
                        (format!("{stem}.contracts.json"), contracts)
                    });
                    if let Some((file, contracts)) = &sidecar {
                        let at = path.with_file_name(file);
                        let text = serde_json::to_string_pretty(contracts).unwrap_or_default();
                        std::fs::write(&at, text + "\n")
                            .map_err(|e| io(&at.display().to_string(), e))?;
                    }
                    let text = render_with_contracts(
                        &listing,
                        &options,
                        sidecar.as_ref().map(|(file, _)| file.as_str()),
                    );
                    std::fs::write(&path, &text).map_err(|e| io(&path.display().to_string(), e))?
                }
                None => out
                    .write_all(render_with_contracts(&listing, &options, None).as_bytes())
                    .map_err(|e| io("standard output", e))?,
            }
            Ok(0)
        }
        McpCommand::Lock {
            server,
            output,
            from_json,
        } => {
            let (listing, options) = fetch(&server, None, from_json).await?;
            let lock = crate::lock::lock_json(&listing, &options.name);
            let text = serde_json::to_string_pretty(&lock).unwrap_or_default() + "\n";
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

/// The listing of a server (live, or a captured file with `from_json`) and the
/// import options naming it.
async fn fetch(
    server: &str,
    name: Option<String>,
    from_json: bool,
) -> Result<(Listing, ImportOptions), McpError> {
    if from_json {
        let path = PathBuf::from(server);
        let json = std::fs::read_to_string(&path).map_err(|e| McpError::Io {
            path: server.to_owned(),
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
        let value: serde_json::Value =
            serde_json::from_str(&json).map_err(|e| McpError::Input {
                what: options.source.clone(),
                message: format!("not JSON: {e}"),
            })?;
        Ok((listing_from_json(&value)?, options))
    } else {
        let transport = parse_server_spec(server)?;
        let options = ImportOptions {
            name: name.unwrap_or_else(|| default_server_name(&transport)),
            transport: Some(transport.clone()),
            source: format!("`{server}`"),
        };
        let declared = troupe_check::ir::McpServer {
            name: options.name.clone(),
            transport,
            contracts: None,
            span: Default::default(),
        };
        let listing =
            listing_from_server(&declared, crate::connect::DEFAULT_CONNECT_TIMEOUT).await?;
        Ok((listing, options))
    }
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
            let _ = writeln!(
                std::io::stderr(),
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
            let _ = writeln!(
                std::io::stderr(),
                "serving {names} over stdio (store {})",
                options.store.display()
            );
            server.serve_stdio().await
        }
    }
}

#[cfg(test)]
mod lock_tests {
    use super::*;

    fn run_to_string(cmd: McpCommand) -> (i32, String) {
        let mut out = Vec::new();
        let code = run(
            cmd,
            &mut out,
            &Environment::default(),
            std::future::pending(),
        )
        .unwrap();
        (code, String::from_utf8(out).unwrap())
    }

    #[test]
    fn import_keeps_published_contracts_and_marks_the_others() {
        let dir = std::env::temp_dir().join(format!("troupe-mcp-import-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let capture = dir.join("booking.json");
        std::fs::write(
            &capture,
            serde_json::json!({"tools": [
                {"name": "book", "description": "Books.", "inputSchema": {"type": "object"},
                 "_meta": {"dev.troupe/contract": {"transactional": true, "requires_confirmation": true}}},
                {"name": "look", "description": "Looks.", "inputSchema": {"type": "object"}}
            ]})
            .to_string(),
        )
        .unwrap();
        let output = dir.join("booking.troupe");
        let (code, _) = run_to_string(McpCommand::Import {
            server: capture.display().to_string(),
            name: None,
            output: Some(output.clone()),
            from_json: true,
        });
        assert_eq!(code, 0);
        let text = std::fs::read_to_string(&output).unwrap();
        assert!(
            text.contains(r#"contracts: "booking.contracts.json""#),
            "{text}"
        );
        assert!(text.contains("`look` publishes no MCP+ contract"), "{text}");
        assert!(
            !text.contains("`book` publishes no MCP+ contract"),
            "{text}"
        );
        let sidecar: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join("booking.contracts.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(sidecar["book"]["transactional"], true);
        assert!(sidecar.get("look").is_none());
        // The declarations check clean with the sidecar beside them.
        let (program, diagnostics) = troupe_check::check_text(&text);
        assert!(program.is_some(), "{diagnostics:#?}");
        // On standard output: no sidecar, so no `contracts:` line, but the note.
        let (_, printed) = run_to_string(McpCommand::Import {
            server: capture.display().to_string(),
            name: None,
            output: None,
            from_json: true,
        });
        assert!(!printed.contains("contracts:"), "{printed}");
        assert!(printed.contains("import with -o FILE"), "{printed}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn durations_read_with_their_unit() {
        use std::time::Duration;
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        for bad in [
            "",
            "10",
            "s",
            "0s",
            "1.5s",
            "-1s",
            "10 days",
            "99999999999999999999h",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn lock_pins_every_tool_of_a_capture() {
        let capture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/data/mcp-tools/time.json");
        let (code, text) = run_to_string(McpCommand::Lock {
            server: capture.display().to_string(),
            output: None,
            from_json: true,
        });
        assert_eq!(code, 0);
        let lock: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(lock["version"], 1);
        let tools = lock["servers"]["mcp-time"].as_object().unwrap();
        assert_eq!(tools.len(), 2, "{lock}");
        assert!(
            tools["get_current_time"]
                .as_str()
                .unwrap()
                .starts_with("sha256:")
        );
    }
}
