//! The arguments of `troupe mcp …` (clap): the subcommands, their flags and
//! help texts, and the durations they read. [`super`] runs them.

use std::path::PathBuf;

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
        #[arg(long, value_name = "DB", default_value = troupe_mcp::serve::DEFAULT_STORE)]
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
        #[arg(long, value_name = "N", default_value_t = troupe_mcp::serve::http::DEFAULT_MAX_SESSIONS)]
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(subcommand)]
        mcp: McpCommand,
    }

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
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
    fn the_serve_subcommand_parses() {
        let cli = Cli::try_parse_from([
            "mcp",
            "serve",
            "a.troupe",
            "b.troupe",
            "--store",
            "x.db",
            "--http",
            "127.0.0.1:8940",
            "--llm",
            "mock",
            "--llm-for",
            "Approver=mock",
            "--deadline-ms",
            "500",
        ])
        .expect("parses");
        match cli.mcp {
            McpCommand::Serve {
                files,
                store,
                http,
                llm,
                llm_for,
                deadline_ms,
                mock_externs,
                ..
            } => {
                assert!(!mock_externs);
                assert_eq!(files.len(), 2);
                assert_eq!(store, PathBuf::from("x.db"));
                assert_eq!(http, Some("127.0.0.1:8940".parse().expect("addr")));
                assert_eq!(llm.as_deref(), Some("mock"));
                assert_eq!(llm_for, ["Approver=mock"]);
                assert_eq!(deadline_ms, 500);
            }
            other => panic!("{other:?}"),
        }
        let defaults = Cli::try_parse_from(["mcp", "serve", "a.troupe"]).expect("parses");
        let McpCommand::Serve { store, http, .. } = defaults.mcp else {
            panic!("not serve")
        };
        assert_eq!(store, PathBuf::from(".troupe/troupe.db"));
        assert_eq!(http, None);
        assert!(
            Cli::try_parse_from(["mcp", "serve"]).is_err(),
            "FILE is required"
        );
    }
}
