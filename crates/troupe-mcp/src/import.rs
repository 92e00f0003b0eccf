//! `troupe mcp import`: typed `tool` declarations for an MCP server's tools.
//!
//! From a live server (a stdio command line or an `http(s)://` URL) or from a
//! captured `tools/list` answer, it writes `.troupe` text that checks clean:
//!
//! - an `mcp NAME { … }` declaration for the server;
//! - per tool, its description, annotations and parameter descriptions as
//!   `//` comments, then `tool name(params) -> Output { server: NAME … }`;
//! - parameter types from the input schema: string → `Text`, integer → `Int`,
//!   number → `Float`, boolean → `Bool`, array → `[T]`, anything else (objects,
//!   unions, `$ref`) → `Json`; a `null` alternative is dropped. A string enum
//!   whose values are all identifiers becomes a generated `enum` named after
//!   the tool and the parameter (`ConvertTimeUnit`), otherwise `Text`;
//! - required parameters first, in the schema's `required` order, then the
//!   optional ones (in the schema's property order) with their JSON default
//!   as `= literal`. **Choice:** an optional scalar parameter without a
//!   default gets the type's zero (`""`, `0`, `0.0`, `false`, the enum's first
//!   value) and a comment saying so — a call that leaves it out does not send
//!   it, so the zero is never sent in its place. An optional list or `Json`
//!   parameter cannot have a literal default: it is left out of the
//!   declaration and named in a comment;
//! - the output: an `outputSchema` object becomes a generated `record`
//!   (`GetCurrentTimeResult`) of its required properties (nested objects and
//!   nullable fields as `Json`; optional properties are left out, the host
//!   ignores extra fields), another output schema `Json`, none `Text`;
//! - `idempotent: true` when the server hints the tool is read-only or idempotent;
//! - identifiers: a tool name with `-`, capitals, a leading digit or a keyword is
//!   renamed to snake_case and keeps its remote name with `name: "original"`;
//!   a tool whose required parameter is not an identifier is skipped (a comment
//!   says why); an optional one is left out;
//! - resources, resource templates and prompts, listed as comments.
//!
//! This file holds the options, identifiers, server specs and listings;
//! `types.rs` maps JSON Schemas to troupe types and `render.rs` writes the
//! declarations.

use std::time::Duration;

use serde_json::{Map, Value as J};
use troupe_check::ir::{McpServer, McpTransport};

use crate::connect::{DEFAULT_CONNECT_TIMEOUT, connect};
use crate::error::McpError;

/// The language's keywords: not usable as identifiers (the lexer's list).
pub use troupe_check::KEYWORDS;

mod render;
mod types;

pub use render::{render, render_with_contracts};

/// What the importer knows about a server: its tool list and the rest.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Listing {
    /// `serverInfo` of the `initialize` result, when known.
    pub server_info: Option<J>,
    pub protocol_version: Option<String>,
    pub tools: Vec<J>,
    pub resources: Vec<J>,
    pub resource_templates: Vec<J>,
    pub prompts: Vec<J>,
}

/// How to write the declarations.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportOptions {
    /// The `mcp` server's name in the file.
    pub name: String,
    /// How to reach the server; `None` writes a placeholder command to fill in.
    pub transport: Option<McpTransport>,
    /// Where the tools came from, for the header comment.
    pub source: String,
}

/// Whether `s` is an identifier of the language (and not a keyword).
pub fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !KEYWORDS.contains(&s)
}

/// `getTinyImage`, `get-tiny-image`, `2fa` → `get_tiny_image`, `get_tiny_image`, `t_2fa`.
pub fn snake_identifier(s: &str) -> String {
    let mut out = String::new();
    let mut prev_lower = false;
    for c in s.chars() {
        if c.is_ascii_uppercase() {
            if prev_lower {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
            prev_lower = false;
        } else if c.is_ascii_alphanumeric() {
            out.push(c);
            prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        } else {
            if !out.ends_with('_') {
                out.push('_');
            }
            prev_lower = false;
        }
    }
    let mut out = out.trim_matches('_').to_owned();
    if out.is_empty() {
        out = "tool".to_owned();
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out = format!("t_{out}");
    }
    if KEYWORDS.contains(&out.as_str()) {
        out.push_str("_tool");
    }
    out
}

/// `convert_time` + `unit` → `ConvertTimeUnit`.
pub fn upper_camel(parts: &[&str]) -> String {
    let mut out = String::new();
    for part in parts {
        for word in snake_identifier(part).split('_').filter(|w| !w.is_empty()) {
            let mut cs = word.chars();
            if let Some(first) = cs.next() {
                out.push(first.to_ascii_uppercase());
                out.extend(cs);
            }
        }
    }
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'T');
    }
    out
}

/// A string literal of the language (escapes `\n \t \" \\ {{ }}`).
pub fn string_literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '{' => out.push_str("{{"),
            '}' => out.push_str("}}"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Parses `SERVER`: an `http(s)://` URL, or a command line (words split on
/// white space; single or double quotes group words).
pub fn parse_server_spec(spec: &str) -> Result<McpTransport, McpError> {
    let spec = spec.trim();
    if spec.starts_with("http://") || spec.starts_with("https://") {
        return Ok(McpTransport::Http {
            url: spec.to_owned(),
        });
    }
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut has_word = false;
    for c in spec.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                has_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if has_word {
                    words.push(std::mem::take(&mut cur));
                    has_word = false;
                }
            }
            (None, c) => {
                cur.push(c);
                has_word = true;
            }
        }
    }
    if quote.is_some() {
        return Err(McpError::Input {
            what: "the server command".into(),
            message: format!("unbalanced quote in `{spec}`"),
        });
    }
    if has_word {
        words.push(cur);
    }
    let mut words = words.into_iter();
    let Some(command) = words.next() else {
        return Err(McpError::Input {
            what: "the server command".into(),
            message: "empty: give a command line (e.g. `uvx mcp-server-time`) or an http(s):// URL"
                .into(),
        });
    };
    Ok(McpTransport::Stdio {
        command,
        args: words.collect(),
        env: Vec::new(),
        cwd: None,
    })
}

/// A server name from a spec: `uvx mcp-server-time` → `time`,
/// `npx -y @modelcontextprotocol/server-everything` → `everything`, a URL → its host's first label.
pub fn default_server_name(transport: &McpTransport) -> String {
    let raw = match transport {
        McpTransport::Http { url } => url
            .split("://")
            .nth(1)
            .and_then(|rest| rest.split(['/', ':', '.']).next())
            .unwrap_or("remote")
            .to_owned(),
        McpTransport::Stdio { command, args, .. } => {
            // Behind a launcher (`uvx`, `npx -y`, `node`…) the package names the server.
            let launcher = command.rsplit('/').next().unwrap_or(command);
            let launchers = [
                "uvx", "npx", "node", "python", "python3", "pipx", "bunx", "deno", "uv", "bun",
                "docker",
            ];
            let word = if launchers.contains(&launcher) {
                args.iter()
                    .find(|a| !a.starts_with('-') && !["run", "-m"].contains(&a.as_str()))
                    .unwrap_or(command)
            } else {
                command
            };
            let base = word.rsplit('/').next().unwrap_or(word);
            let base = base.split('@').next().unwrap_or(base);
            let base = base
                .strip_suffix(".js")
                .or_else(|| base.strip_suffix(".py"))
                .unwrap_or(base);
            base.strip_prefix("mcp-server-")
                .or_else(|| base.strip_prefix("server-"))
                .or_else(|| base.strip_prefix("mcp-"))
                .unwrap_or(base)
                .to_owned()
        }
    };
    let name = snake_identifier(&raw);
    if name == "tool" || name == "localhost" || name == "127" || name == "t_127" {
        "remote".to_owned()
    } else {
        name
    }
}

fn result_of(v: &J) -> &J {
    v.get("result").unwrap_or(v)
}

fn list_in(v: &J, key: &str) -> Vec<J> {
    result_of(v)
        .get(key)
        .and_then(J::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Reads a listing from JSON: a captured file keyed by method (`tools/list`,
/// `initialize`, …, each a JSON-RPC response), a JSON-RPC response or result of
/// `tools/list`, or a bare array of tools.
pub fn listing_from_json(value: &J) -> Result<Listing, McpError> {
    let bad = |message: &str| McpError::Input {
        what: "the tools/list document".into(),
        message: message.to_owned(),
    };
    if let J::Array(tools) = value {
        return Ok(Listing {
            tools: tools.clone(),
            ..Listing::default()
        });
    }
    let J::Object(map) = value else {
        return Err(bad("expected a JSON object or an array of tools"));
    };
    if let Some(tl) = map.get("tools/list") {
        if let Some(err) = tl.get("error") {
            return Err(bad(&format!("the captured tools/list is an error: {err}")));
        }
        let tools = result_of(tl)
            .get("tools")
            .and_then(J::as_array)
            .ok_or_else(|| bad("`tools/list` has no `tools` list"))?;
        let init = map.get("initialize").map(result_of);
        return Ok(Listing {
            server_info: init.and_then(|i| i.get("serverInfo")).cloned(),
            protocol_version: init
                .and_then(|i| i.get("protocolVersion"))
                .and_then(J::as_str)
                .map(str::to_owned),
            tools: tools.clone(),
            resources: map
                .get("resources/list")
                .map(|v| list_in(v, "resources"))
                .unwrap_or_default(),
            resource_templates: map
                .get("resources/templates/list")
                .map(|v| list_in(v, "resourceTemplates"))
                .unwrap_or_default(),
            prompts: map
                .get("prompts/list")
                .map(|v| list_in(v, "prompts"))
                .unwrap_or_default(),
        });
    }
    match result_of(value).get("tools").and_then(J::as_array) {
        Some(tools) => Ok(Listing {
            tools: tools.clone(),
            ..Listing::default()
        }),
        None => Err(bad(
            "no `tools` list found (expected a captured file keyed by `tools/list`, a tools/list response or result, or an array of tools)",
        )),
    }
}

/// Reads a listing from a live server: `tools/list`, and `resources/list`,
/// `resources/templates/list` and `prompts/list` when the server offers them.
pub async fn listing_from_server(
    server: &McpServer,
    timeout: Duration,
) -> Result<Listing, McpError> {
    let session = connect(server, timeout).await?;
    let tools = session.list_tools(timeout).await?;
    let peer = session.client.peer();
    let caps = peer.peer_info().map(|i| i.capabilities.clone());
    let mut listing = Listing {
        server_info: session
            .server_info()
            .and_then(|i| i.get("serverInfo").cloned()),
        protocol_version: session.server_info().and_then(|i| {
            i.get("protocolVersion")
                .and_then(J::as_str)
                .map(str::to_owned)
        }),
        tools: tools
            .iter()
            .map(|t| serde_json::to_value(t).unwrap_or(J::Null))
            .collect(),
        ..Listing::default()
    };
    if let Some(caps) = caps {
        if caps.resources.is_some() {
            if let Ok(Ok(r)) = tokio::time::timeout(timeout, peer.list_all_resources()).await {
                listing.resources = r
                    .iter()
                    .map(|x| serde_json::to_value(x).unwrap_or(J::Null))
                    .collect();
            }
            if let Ok(Ok(r)) =
                tokio::time::timeout(timeout, peer.list_all_resource_templates()).await
            {
                listing.resource_templates = r
                    .iter()
                    .map(|x| serde_json::to_value(x).unwrap_or(J::Null))
                    .collect();
            }
        }
        if caps.prompts.is_some()
            && let Ok(Ok(p)) = tokio::time::timeout(timeout, peer.list_all_prompts()).await
        {
            listing.prompts = p
                .iter()
                .map(|x| serde_json::to_value(x).unwrap_or(J::Null))
                .collect();
        }
    }
    Ok(listing)
}

/// Declarations from a captured `tools/list` document (see [`listing_from_json`]).
pub fn import_from_json(text: &str, options: &ImportOptions) -> Result<String, McpError> {
    let value: J = serde_json::from_str(text).map_err(|e| McpError::Input {
        what: options.source.clone(),
        message: format!("not JSON: {e}"),
    })?;
    Ok(render(&listing_from_json(&value)?, options))
}

/// Declarations from a live server.
pub async fn import_from_server(options: &ImportOptions) -> Result<String, McpError> {
    let Some(transport) = options.transport.clone() else {
        return Err(McpError::Input {
            what: options.source.clone(),
            message: "no command or URL to reach the server".into(),
        });
    };
    let server = McpServer {
        name: options.name.clone(),
        transport,
        contracts: None,
        span: Default::default(),
    };
    let listing = listing_from_server(&server, DEFAULT_CONNECT_TIMEOUT).await?;
    Ok(render(&listing, options))
}

/// The `_meta` key of an MCP+ contract (`troupe_contracts::META_KEY`).
pub const CONTRACT_KEY: &str = "dev.troupe/contract";

/// The MCP+ contracts the server publishes in its tools' `_meta`, as a sidecar
/// (a JSON object: tool name → contract); `None` when no tool publishes one.
pub fn published_contracts(listing: &Listing) -> Option<Map<String, J>> {
    let sidecar: Map<String, J> = listing
        .tools
        .iter()
        .filter_map(|tool| {
            let name = tool.get("name")?.as_str()?;
            let contract = tool.get("_meta")?.get(CONTRACT_KEY)?;
            contract
                .is_object()
                .then(|| (name.to_owned(), contract.clone()))
        })
        .collect();
    (!sidecar.is_empty()).then_some(sidecar)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers() {
        assert_eq!(snake_identifier("get-tiny-image"), "get_tiny_image");
        assert_eq!(snake_identifier("getTinyImage"), "get_tiny_image");
        assert_eq!(snake_identifier("2fa"), "t_2fa");
        assert_eq!(snake_identifier("exit"), "exit_tool");
        assert_eq!(upper_camel(&["convert_time", "unit"]), "ConvertTimeUnit");
        assert!(!is_identifier("if") && is_identifier("x_1") && !is_identifier("1x"));
    }

    #[test]
    fn specs() {
        assert_eq!(
            parse_server_spec("uvx mcp-server-time --local-timezone 'Europe/Paris'").unwrap(),
            McpTransport::Stdio {
                command: "uvx".into(),
                args: vec![
                    "mcp-server-time".into(),
                    "--local-timezone".into(),
                    "Europe/Paris".into()
                ],
                env: vec![],
                cwd: None
            }
        );
        assert!(parse_server_spec("  ").is_err());
        assert!(parse_server_spec("a 'b").is_err());
        let t =
            parse_server_spec("npx -y @modelcontextprotocol/server-everything@2026.8.31").unwrap();
        assert_eq!(default_server_name(&t), "everything");
        assert_eq!(
            default_server_name(&parse_server_spec("uvx mcp-server-time").unwrap()),
            "time"
        );
        assert_eq!(
            default_server_name(&parse_server_spec("http://127.0.0.1:8931/mcp").unwrap()),
            "remote"
        );
    }
}
