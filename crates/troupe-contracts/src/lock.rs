//! Tool pins: a lock file records a SHA-256 hash of each tool's definition (its name,
//! description, input schema and output schema), so that a definition changed after it
//! was reviewed — a "rug pull" — is found by the next lint (rule `tool-drift`).
//!
//! Format (`troupe.lock.json`):
//!
//! ```json
//! {"version": 1, "servers": {"filesystem": {"read_file": "sha256:…", "write_file": "sha256:…"}}}
//! ```
//!
//! The hash is over the canonical JSON of `{"name", "description", "inputSchema",
//! "outputSchema"}` (object keys sorted at every level, no whitespace; an absent
//! field is `null`), so it does not depend on how a server orders its keys.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::{Result, parse_json, read_file};
use crate::mcp::{McpTool, ToolList};

/// The lock format version written by this crate.
pub const LOCK_VERSION: u32 = 1;

/// The server name used for a tool list whose server is not known.
pub const UNNAMED: &str = "(unnamed)";

/// Pinned tool definitions: server → tool → hash.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lock {
    /// Format version ([`LOCK_VERSION`]).
    pub version: u32,
    /// Per server, per tool, `sha256:<hex>`.
    pub servers: BTreeMap<String, BTreeMap<String, String>>,
}

/// The key of a tool list in a lock.
pub fn server_key(list: &ToolList) -> &str {
    list.server.as_deref().unwrap_or(UNNAMED)
}

/// The pin of one tool definition: `sha256:` and 64 hex digits.
pub fn tool_hash(tool: &McpTool) -> String {
    pin(&serde_json::json!({
        "name": tool.name,
        "description": tool.description,
        "inputSchema": tool.input_schema,
        "outputSchema": tool.output_schema,
    }))
}

/// The pin of a `tools/list` entry as the server sent it: the same as
/// [`tool_hash`] of the parsed tool (an absent description or output schema
/// is `null`, an absent input schema `{"type": "object"}`). `troupe mcp
/// lock` pins live servers with it.
pub fn tool_json_hash(tool: &Value) -> String {
    let field = |k: &str| tool.get(k).cloned().unwrap_or(Value::Null);
    pin(&serde_json::json!({
        "name": field("name"),
        "description": field("description"),
        "inputSchema": tool
            .get("inputSchema")
            .cloned()
            .unwrap_or_else(|| serde_json::json!({"type": "object"})),
        "outputSchema": field("outputSchema"),
    }))
}

/// SHA-256 of the canonical JSON of `pinned`.
fn pin(pinned: &Value) -> String {
    let mut text = String::new();
    canonical(pinned, &mut text, 0);
    let digest = Sha256::digest(text.as_bytes());
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for byte in digest {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

/// Canonical JSON (sorted keys, no spaces); iterative depth is bounded by the
/// parser's own limit, and deeper values are written as their plain text.
fn canonical(value: &Value, out: &mut String, depth: usize) {
    if depth > 256 {
        out.push_str(&value.to_string());
        return;
    }
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                if let Some(v) = map.get(key) {
                    canonical(v, out, depth + 1);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out, depth + 1);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

impl Lock {
    /// Pins every tool of `lists`.
    pub fn of(lists: &[ToolList]) -> Lock {
        let mut servers = BTreeMap::new();
        for list in lists {
            let tools: &mut BTreeMap<String, String> =
                servers.entry(server_key(list).to_owned()).or_default();
            for tool in &list.tools {
                tools.insert(tool.name.clone(), tool_hash(tool));
            }
        }
        Lock {
            version: LOCK_VERSION,
            servers,
        }
    }

    /// Parses a lock file.
    pub fn parse(what: &str, text: &str) -> Result<Lock> {
        parse_json(what, text)
    }

    /// Loads a lock file.
    pub fn load(path: &std::path::Path) -> Result<Lock> {
        let text = read_file(path)?;
        Lock::parse(&path.display().to_string(), &text)
    }

    /// The lock as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// The pinned hash of `tool` of `server`, if any.
    pub fn pinned(&self, server: &str, tool: &str) -> Option<&str> {
        self.servers.get(server)?.get(tool).map(String::as_str)
    }

    /// Whether the lock has an entry for `server`.
    pub fn has_server(&self, server: &str) -> bool {
        self.servers.contains_key(server)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_ignores_key_order_but_not_content() {
        let a: McpTool = serde_json::from_str(
            r#"{"name": "t", "description": "d", "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}}}"#,
        )
        .unwrap();
        let b: McpTool = serde_json::from_str(
            r#"{"inputSchema": {"properties": {"x": {"type": "string"}}, "type": "object"}, "description": "d", "name": "t"}"#,
        )
        .unwrap();
        assert_eq!(tool_hash(&a), tool_hash(&b));
        assert!(tool_hash(&a).starts_with("sha256:") && tool_hash(&a).len() == 71);
        let mut c = a.clone();
        c.description = Some("d ".into());
        assert_ne!(tool_hash(&a), tool_hash(&c));
        // Annotations and _meta are not pinned.
        let mut d = a.clone();
        d.annotations = Some(Default::default());
        assert_eq!(tool_hash(&a), tool_hash(&d));
    }

    #[test]
    fn round_trips() {
        let list = ToolList {
            server: Some("s".into()),
            tools: vec![McpTool::new("a")],
            ..Default::default()
        };
        let lock = Lock::of(std::slice::from_ref(&list));
        let again = Lock::parse("lock", &lock.to_json()).unwrap();
        assert_eq!(again, lock);
        assert!(again.pinned("s", "a").is_some());
        assert!(again.pinned("s", "b").is_none());
    }
}
