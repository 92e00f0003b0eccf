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

use std::collections::{BTreeSet, HashSet};
use std::fmt::Write as _;
use std::time::Duration;

use serde_json::{Map, Value as J};
use troupe_check::ir::{McpServer, McpTransport};

use crate::connect::{DEFAULT_CONNECT_TIMEOUT, connect};
use crate::error::McpError;
use crate::schema::{required, string_enum, types_of};

/// The language's keywords: not usable as identifiers (the lexer's list).
pub use troupe_check::KEYWORDS;

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

/// The troupe type of a parameter: its text, and an enum to generate if any.
struct ParamType {
    text: String,
    kind: Kind,
    new_enum: Option<(String, Vec<String>)>,
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Text,
    Int,
    Float,
    Bool,
    Enum(Vec<String>),
    List,
    Json,
}

fn resolve<'a>(schema: &'a J, root: &'a J) -> &'a J {
    let mut s = schema;
    for _ in 0..8 {
        let Some(r) = s.get("$ref").and_then(J::as_str) else {
            return s;
        };
        let path = r.strip_prefix("#/").unwrap_or("");
        let mut target = root;
        for part in path.split('/') {
            match target.get(part) {
                Some(t) => target = t,
                None => return s,
            }
        }
        s = target;
    }
    s
}

fn scalar_kind(schema: &J, root: &J) -> Kind {
    let schema = resolve(schema, root);
    let types: Vec<String> = types_of(schema)
        .into_iter()
        .filter(|t| t != "null")
        .collect();
    match types.as_slice() {
        [t] => match t.as_str() {
            "string" => Kind::Text,
            "integer" => Kind::Int,
            "number" => Kind::Float,
            "boolean" => Kind::Bool,
            "array" => Kind::List,
            _ => Kind::Json,
        },
        _ => Kind::Json,
    }
}

fn scalar_name(kind: &Kind) -> &'static str {
    match kind {
        Kind::Text => "Text",
        Kind::Int => "Int",
        Kind::Float => "Float",
        Kind::Bool => "Bool",
        _ => "Json",
    }
}

fn param_type(
    tool: &str,
    param: &str,
    schema: &J,
    root: &J,
    taken: &mut HashSet<String>,
) -> ParamType {
    let resolved = resolve(schema, root);
    let kind = scalar_kind(resolved, root);
    match kind {
        Kind::Text => {
            if let Some(values) = string_enum(resolved) {
                let unique: BTreeSet<&String> = values.iter().collect();
                if !values.is_empty()
                    && unique.len() == values.len()
                    && values.iter().all(|v| is_identifier(v))
                {
                    let name = unique_name(upper_camel(&[tool, param]), taken);
                    return ParamType {
                        text: name.clone(),
                        kind: Kind::Enum(values.clone()),
                        new_enum: Some((name, values)),
                    };
                }
            }
            ParamType {
                text: "Text".into(),
                kind,
                new_enum: None,
            }
        }
        Kind::List => {
            let item = resolved
                .get("items")
                .map(|i| scalar_kind(i, root))
                .unwrap_or(Kind::Json);
            let inner = match item {
                Kind::List => "Json",
                other => scalar_name(&other),
            };
            ParamType {
                text: format!("[{inner}]"),
                kind,
                new_enum: None,
            }
        }
        other => ParamType {
            text: scalar_name(&other).into(),
            kind: other,
            new_enum: None,
        },
    }
}

fn unique_name(base: String, taken: &mut HashSet<String>) -> String {
    let mut name = base.clone();
    let mut n = 2;
    while taken.contains(&name) {
        name = format!("{base}{n}");
        n += 1;
    }
    taken.insert(name.clone());
    name
}

/// The literal for a JSON default of a parameter of this kind, if it has one.
fn default_literal(default: &J, kind: &Kind) -> Option<String> {
    match (kind, default) {
        (Kind::Text, J::String(s)) => Some(string_literal(s)),
        (Kind::Enum(values), J::String(s)) if values.contains(s) => Some(s.clone()),
        (Kind::Int, J::Number(n)) => n.as_i64().map(|i| i.to_string()),
        (Kind::Float, J::Number(n)) => n
            .as_f64()
            .filter(|x| x.is_finite())
            .map(|x| format!("{x:?}")),
        (Kind::Bool, J::Bool(b)) => Some(b.to_string()),
        _ => None,
    }
}

fn zero_literal(kind: &Kind) -> Option<String> {
    match kind {
        Kind::Text => Some("\"\"".into()),
        Kind::Int => Some("0".into()),
        Kind::Float => Some("0.0".into()),
        Kind::Bool => Some("false".into()),
        Kind::Enum(values) => values.first().cloned(),
        Kind::List | Kind::Json => None,
    }
}

fn comment(out: &mut String, indent: &str, text: &str) {
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            let _ = writeln!(out, "{indent}//");
        } else {
            let _ = writeln!(out, "{indent}// {line}");
        }
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A record to generate: its name and its fields' names and types.
type RecordDecl = (String, Vec<(String, String)>);

/// The output type of a tool, and a record to generate if any.
fn output_type(
    tool: &str,
    schema: Option<&J>,
    taken: &mut HashSet<String>,
    notes: &mut Vec<String>,
) -> (String, Option<RecordDecl>) {
    let Some(schema) = schema else {
        return ("Text".into(), None);
    };
    let Some(props) = schema.get("properties").and_then(J::as_object) else {
        return ("Json".into(), None);
    };
    let obj = schema.as_object().cloned().unwrap_or_default();
    let req = required(&obj);
    let mut fields = Vec::new();
    let mut left_out = Vec::new();
    // Required fields in the schema's `required` order.
    let ordered = req
        .iter()
        .filter_map(|r| props.get(r).map(|ps| (r, ps)))
        .collect::<Vec<_>>();
    left_out.extend(props.keys().filter(|k| !req.contains(k)).cloned());
    for (name, ps) in ordered {
        if !is_identifier(name) {
            return ("Json".into(), None);
        }
        let ps = resolve(ps, schema);
        let nullable = types_of(ps).iter().any(|t| t == "null");
        let ty = match scalar_kind(ps, schema) {
            _ if nullable => "Json".to_owned(),
            Kind::List => {
                let item = ps
                    .get("items")
                    .map(|i| scalar_kind(i, schema))
                    .unwrap_or(Kind::Json);
                format!(
                    "[{}]",
                    if item == Kind::List {
                        "Json"
                    } else {
                        scalar_name(&item)
                    }
                )
            }
            k => scalar_name(&k).to_owned(),
        };
        fields.push((name.clone(), ty));
    }
    if fields.is_empty() {
        return ("Json".into(), None);
    }
    if !left_out.is_empty() {
        notes.push(format!(
            "the result's optional field(s) {} are not in the record",
            left_out
                .iter()
                .map(|f| format!("`{f}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let name = unique_name(upper_camel(&[tool, "result"]), taken);
    (name.clone(), Some((name, fields)))
}

fn hints(annotations: Option<&J>) -> (String, bool) {
    let flag = |k: &str| annotations.and_then(|a| a.get(k)).and_then(J::as_bool);
    let read_only = flag("readOnlyHint").unwrap_or(false);
    let destructive = flag("destructiveHint").unwrap_or(true);
    let idempotent = flag("idempotentHint").unwrap_or(false);
    let open_world = flag("openWorldHint").unwrap_or(true);
    let mut words = Vec::new();
    if read_only {
        words.push("read-only");
    } else {
        words.push(if destructive {
            "destructive"
        } else {
            "additive"
        });
    }
    if idempotent {
        words.push("idempotent");
    }
    if open_world {
        words.push("open world");
    }
    let text = format!(
        "{}{}",
        words.join(", "),
        if annotations.is_none() {
            " (no annotations: MCP's defaults)"
        } else {
            " (server hints)"
        }
    );
    (text, read_only || idempotent)
}

/// Renders a listing as `.troupe` declarations.
pub fn render(listing: &Listing, options: &ImportOptions) -> String {
    render_with_contracts(listing, options, None)
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

/// [`render`], with `contracts: "SIDECAR"` in the `mcp` declaration when the
/// server's published contracts are written to that sidecar (relative to the
/// output file). Either way, every tool that publishes no contract is marked
/// as unverified, and the header says whether the server publishes any.
pub fn render_with_contracts(
    listing: &Listing,
    options: &ImportOptions,
    sidecar: Option<&str>,
) -> String {
    let server = if is_identifier(&options.name) {
        options.name.clone()
    } else {
        snake_identifier(&options.name)
    };
    let mut taken_types: HashSet<String> = HashSet::new();
    let mut taken_tools: HashSet<String> = HashSet::new();
    let mut types_out = String::new();
    let mut tools_out = String::new();
    let mut header = String::new();

    let info = listing
        .server_info
        .as_ref()
        .map(|i| {
            let name = i.get("name").and_then(J::as_str).unwrap_or("?");
            match i.get("version").and_then(J::as_str) {
                Some(v) => format!("{name} {v}"),
                None => name.to_owned(),
            }
        })
        .unwrap_or_else(|| "unknown server".to_owned());
    comment(
        &mut header,
        "",
        &format!(
            "Generated by `troupe mcp import` from {} ({info}{}).\n\
             {} tool(s). Parameters: required ones first, then optional ones with their defaults;\n\
             an optional argument left out of a call is not sent, so the server's own default applies.",
            options.source,
            listing
                .protocol_version
                .as_deref()
                .map(|v| format!(", protocol {v}"))
                .unwrap_or_default(),
            listing.tools.len()
        ),
    );
    let published = published_contracts(listing);
    match (&published, sidecar) {
        (None, _) => comment(
            &mut header,
            "",
            "The server publishes no MCP+ contracts: every tool below is unverified \
             (`troupe check` warns W0605); add a `contracts:` sidecar to verify workflows.",
        ),
        (Some(contracts), Some(file)) => comment(
            &mut header,
            "",
            &format!(
                "The server publishes MCP+ contracts for {} of {} tool(s): written to {file}.",
                contracts.len(),
                listing.tools.len()
            ),
        ),
        (Some(contracts), None) => comment(
            &mut header,
            "",
            &format!(
                "The server publishes MCP+ contracts for {} of {} tool(s): import with -o FILE \
                 to write them to a sidecar next to it.",
                contracts.len(),
                listing.tools.len()
            ),
        ),
    }
    header.push('\n');
    let contracts_field = match (&published, sidecar) {
        (Some(_), Some(file)) => format!(" contracts: {}", string_literal(file)),
        _ => String::new(),
    };
    match &options.transport {
        Some(McpTransport::Stdio {
            command,
            args,
            env,
            cwd,
        }) => {
            let mut decl = format!("mcp {server} {{ command: {}", string_literal(command));
            if !args.is_empty() {
                let list: Vec<String> = args.iter().map(|a| string_literal(a)).collect();
                let _ = write!(decl, " args: [{}]", list.join(", "));
            }
            if !env.is_empty() {
                let list: Vec<String> = env
                    .iter()
                    .map(|(k, v)| string_literal(&format!("{k}={v}")))
                    .collect();
                let _ = write!(decl, " env: [{}]", list.join(", "));
            }
            if let Some(cwd) = cwd {
                let _ = write!(decl, " cwd: {}", string_literal(cwd));
            }
            let _ = writeln!(header, "{decl}{contracts_field} }}");
        }
        Some(McpTransport::Http { url }) => {
            let _ = writeln!(
                header,
                "mcp {server} {{ url: {}{contracts_field} }}",
                string_literal(url)
            );
        }
        None => {
            let guess = listing
                .server_info
                .as_ref()
                .and_then(|i| i.get("name"))
                .and_then(J::as_str)
                .unwrap_or(&options.name)
                .to_owned();
            comment(
                &mut header,
                "",
                "Captured from a file: set the command (or `url:`) that starts this server.",
            );
            let _ = writeln!(
                header,
                "mcp {server} {{ command: {}{contracts_field} }}",
                string_literal(&guess)
            );
        }
    }

    for tool in &listing.tools {
        let Some(remote) = tool.get("name").and_then(J::as_str) else {
            comment(&mut tools_out, "", "skipped a tool without a name");
            continue;
        };
        if published.is_some()
            && tool
                .get("_meta")
                .and_then(|m| m.get(CONTRACT_KEY))
                .is_none()
        {
            tools_out.push('\n');
            comment(
                &mut tools_out,
                "",
                &format!(
                    "`{remote}` publishes no MCP+ contract: its calls are unverified (W0605)."
                ),
            );
        }
        render_tool(
            tool,
            remote,
            &server,
            &mut taken_types,
            &mut taken_tools,
            &mut types_out,
            &mut tools_out,
        );
    }

    let mut out = header;
    if !types_out.is_empty() {
        out.push('\n');
        out.push_str(&types_out);
    }
    out.push_str(&tools_out);
    render_extras(listing, &mut out);
    out
}

fn render_tool(
    tool: &J,
    remote: &str,
    server: &str,
    taken_types: &mut HashSet<String>,
    taken_tools: &mut HashSet<String>,
    types_out: &mut String,
    tools_out: &mut String,
) {
    let empty = J::Object(Map::new());
    let input = tool.get("inputSchema").unwrap_or(&empty);
    let input_obj = input.as_object().cloned().unwrap_or_default();
    let props = input
        .get("properties")
        .and_then(J::as_object)
        .cloned()
        .unwrap_or_default();
    let req: Vec<String> = required(&input_obj);
    let base = if is_identifier(remote) && snake_identifier(remote) == remote {
        remote.to_owned()
    } else {
        snake_identifier(remote)
    };
    let action = unique_name(base, taken_tools);

    // Parameters: required ones in `required` order, then the optional ones.
    let mut order: Vec<String> = req
        .iter()
        .filter(|r| props.contains_key(*r))
        .cloned()
        .collect();
    order.extend(props.keys().filter(|k| !req.contains(k)).cloned());
    let mut notes: Vec<String> = Vec::new();
    let mut params: Vec<String> = Vec::new();
    let mut param_docs: Vec<String> = Vec::new();
    let mut new_enums: Vec<(String, Vec<String>)> = Vec::new();
    for name in &order {
        let schema = &props[name];
        let is_required = req.contains(name);
        if !is_identifier(name) {
            if is_required {
                let mut skipped = String::new();
                comment(
                    &mut skipped,
                    "",
                    &format!(
                        "Tool `{remote}` skipped: its required parameter `{name}` is not an identifier of the language."
                    ),
                );
                tools_out.push('\n');
                tools_out.push_str(&skipped);
                return;
            }
            notes.push(format!(
                "optional parameter `{name}` left out: not an identifier of the language"
            ));
            continue;
        }
        let pt = param_type(&action, name, schema, input, taken_types);
        let mut decl = format!("{name}: {}", pt.text);
        if !is_required {
            let default = schema.get("default").filter(|d| !d.is_null());
            match default.and_then(|d| default_literal(d, &pt.kind)) {
                Some(lit) => {
                    let _ = write!(decl, " = {lit}");
                }
                None => match zero_literal(&pt.kind) {
                    Some(zero) => {
                        let _ = write!(decl, " = {zero}");
                        notes.push(match default {
                            Some(d) => format!("`{name}`: the server's default {d} has no literal of type {}; `{zero}` only makes it optional", pt.text),
                            None => format!("`{name}` is optional without a default; `{zero}` only makes it optional"),
                        });
                    }
                    None => {
                        // Give back the enum name if one was reserved.
                        if let Some((n, _)) = &pt.new_enum {
                            taken_types.remove(n);
                        }
                        notes.push(format!(
                            "optional parameter `{name}: {}` left out{}: a list or Json parameter has no literal default",
                            pt.text,
                            default.map(|d| format!(" (server default {d})")).unwrap_or_default()
                        ));
                        continue;
                    }
                },
            }
        }
        if let Some(e) = pt.new_enum {
            new_enums.push(e);
        }
        if let Some(d) = schema.get("description").and_then(J::as_str) {
            param_docs.push(format!("  {name}: {}", one_line(d)));
        }
        params.push(decl);
    }

    let (out_ty, record) = output_type(&action, tool.get("outputSchema"), taken_types, &mut notes);
    for (name, values) in &new_enums {
        let _ = writeln!(types_out, "enum {name} {{ {} }}", values.join(", "));
    }
    if let Some((name, fields)) = record {
        let fields: Vec<String> = fields.iter().map(|(f, t)| format!("{f}: {t}")).collect();
        let _ = writeln!(types_out, "record {name} {{ {} }}", fields.join(", "));
    }

    tools_out.push('\n');
    if let Some(title) = tool
        .get("title")
        .or_else(|| tool.get("annotations").and_then(|a| a.get("title")))
        .and_then(J::as_str)
    {
        comment(tools_out, "", &format!("{title}."));
    }
    if let Some(d) = tool.get("description").and_then(J::as_str) {
        comment(tools_out, "", d);
    }
    let (hint_text, idempotent) = hints(tool.get("annotations"));
    comment(tools_out, "", &format!("[{hint_text}]"));
    for doc in &param_docs {
        comment(tools_out, "", doc);
    }
    for note in &notes {
        comment(tools_out, "", &format!("note: {note}"));
    }
    let mut body = format!("server: {server}");
    if action != remote {
        let _ = write!(body, ", name: {}", string_literal(remote));
    }
    if idempotent {
        body.push_str(", idempotent: true");
    }
    let _ = writeln!(
        tools_out,
        "tool {action}({}) -> {out_ty} {{ {body} }}",
        params.join(", ")
    );
}

fn render_extras(listing: &Listing, out: &mut String) {
    let describe = |item: &J, key: &str| -> String {
        let id = item.get(key).and_then(J::as_str).unwrap_or("?");
        let name = item.get("name").and_then(J::as_str);
        let desc = item.get("description").and_then(J::as_str).map(one_line);
        let mut line = format!("  {id}");
        if let Some(n) = name.filter(|n| *n != id) {
            let _ = write!(line, " ({n})");
        }
        if let Some(d) = desc {
            let d: String = d.chars().take(160).collect();
            let _ = write!(line, " — {d}");
        }
        line
    };
    if !listing.resources.is_empty() || !listing.resource_templates.is_empty() {
        out.push('\n');
        comment(
            out,
            "",
            "Resources the server offers (read with resources/read, not tools):",
        );
        for r in &listing.resources {
            comment(out, "", &describe(r, "uri"));
        }
        for r in &listing.resource_templates {
            comment(out, "", &describe(r, "uriTemplate"));
        }
    }
    if !listing.prompts.is_empty() {
        out.push('\n');
        comment(out, "", "Prompts the server offers:");
        for p in &listing.prompts {
            let name = p.get("name").and_then(J::as_str).unwrap_or("?");
            let args: Vec<String> = p
                .get("arguments")
                .and_then(J::as_array)
                .map(|a| {
                    a.iter()
                        .map(|x| {
                            let n = x.get("name").and_then(J::as_str).unwrap_or("?");
                            if x.get("required").and_then(J::as_bool) == Some(true) {
                                n.to_owned()
                            } else {
                                format!("{n}?")
                            }
                        })
                        .collect()
                })
                .unwrap_or_default();
            let desc = p
                .get("description")
                .and_then(J::as_str)
                .map(one_line)
                .unwrap_or_default();
            let desc: String = desc.chars().take(160).collect();
            comment(
                out,
                "",
                &format!(
                    "  {name}({}){}",
                    args.join(", "),
                    if desc.is_empty() {
                        String::new()
                    } else {
                        format!(" — {desc}")
                    }
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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

    #[test]
    fn enums_defaults_and_renames_check_clean() {
        let list = json!({"tools": [{
            "name": "convert-Time",
            "description": "Converts {things}.",
            "inputSchema": {"type": "object", "properties": {
                "time": {"type": "string"},
                "unit": {"type": "string", "enum": ["hours", "minutes"], "default": "hours"},
                "weird": {"type": "string", "enum": ["a b", "c"]},
                "n": {"type": "integer"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "max-len": {"type": "integer"}
            }, "required": ["time"]},
            "outputSchema": {"type": "object", "properties": {"out": {"type": "string"}, "extra": {"type": "object"}}, "required": ["out"]}
        }]});
        let text = render(
            &listing_from_json(&list).unwrap(),
            &ImportOptions {
                name: "clock".into(),
                transport: Some(parse_server_spec("uvx mcp-server-time").unwrap()),
                source: "test".into(),
            },
        );
        assert!(
            text.contains("enum ConvertTimeUnit { hours, minutes }"),
            "{text}"
        );
        assert!(text.contains("unit: ConvertTimeUnit = hours"), "{text}");
        assert!(text.contains("weird: Text = \"\""), "{text}");
        assert!(text.contains("name: \"convert-Time\""), "{text}");
        assert!(
            text.contains("record ConvertTimeResult { out: Text }"),
            "{text}"
        );
        let (program, diags) = troupe_check::check_text(&text);
        assert!(program.is_some(), "{text}\n{diags:?}");
    }
}
