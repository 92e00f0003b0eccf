//! `troupe mcp lock`: pins of a server's tool definitions, in the lock format of
//! `troupe_contracts::lock` (`{"version": 1, "servers": {SERVER: {TOOL: "sha256:…"}}}`),
//! so that `troupe contracts lint --lock FILE` reports a definition changed since (a
//! "rug pull") as an error.
//!
//! The pin of a tool is the SHA-256 of the canonical JSON (keys sorted at every level,
//! no whitespace) of `{"description", "inputSchema", "name", "outputSchema"}`, an absent
//! description or output schema being `null` and an absent input schema `{"type":
//! "object"}` — computed by `troupe_contracts::lock::tool_json_hash` (a test of the
//! train booking server checks it agrees with `troupe contracts lock`).

use serde_json::{Map, Value as J, json};

use crate::import::Listing;

/// The lock format version.
pub const LOCK_VERSION: u32 = 1;

/// The lock of one server's tools, as the JSON a lock file holds; `server` names it
/// (the `serverInfo.name` of its `initialize` result, or a fallback).
pub fn lock_json(listing: &Listing, fallback: &str) -> J {
    let server = listing
        .server_info
        .as_ref()
        .and_then(|i| i.get("name"))
        .and_then(J::as_str)
        .unwrap_or(fallback)
        .to_owned();
    let mut tools = Map::new();
    for tool in &listing.tools {
        if let Some(name) = tool.get("name").and_then(J::as_str) {
            tools.insert(name.to_owned(), J::String(tool_hash(tool)));
        }
    }
    let mut servers = Map::new();
    servers.insert(server, J::Object(tools));
    json!({"version": LOCK_VERSION, "servers": servers})
}

/// The pin of one tool definition (a `tools/list` entry): `sha256:` and 64 hex
/// digits, as `troupe_contracts::lock` computes it.
pub fn tool_hash(tool: &J) -> String {
    troupe_contracts::lock::tool_json_hash(tool)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locks_every_tool_by_key_order_independent_hash() {
        let listing = Listing {
            server_info: Some(json!({"name": "time"})),
            tools: vec![
                json!({"name": "a", "description": "d", "inputSchema": {"type": "object", "properties": {}}}),
                json!({"inputSchema": {"properties": {}, "type": "object"}, "description": "d", "name": "a2"}),
            ],
            ..Default::default()
        };
        let lock = lock_json(&listing, "fallback");
        let a = lock["servers"]["time"]["a"].as_str().unwrap();
        assert!(a.starts_with("sha256:") && a.len() == 71);
        let mut renamed = listing.tools[1].clone();
        renamed["name"] = json!("a");
        assert_eq!(tool_hash(&renamed), a);
        let mut changed = listing.tools[0].clone();
        changed["description"] = json!("d!");
        assert_ne!(tool_hash(&changed), a);
    }
}
