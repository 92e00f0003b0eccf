//! `troupe mcp lock`: pins of a server's tool definitions, in the lock format of
//! `troupe_contracts::lock` (`{"version": 1, "servers": {SERVER: {TOOL: "sha256:…"}}}`),
//! so that `troupe contracts lint --lock FILE` reports a definition changed since (a
//! "rug pull") as an error.
//!
//! The pin of a tool is the SHA-256 of the canonical JSON (keys sorted at every level,
//! no whitespace) of `{"description", "inputSchema", "name", "outputSchema"}`, an absent
//! description or output schema being `null` and an absent input schema `{"type":
//! "object"}` — byte for byte what `troupe_contracts::lock::tool_hash` hashes (a test of
//! the train booking server checks both agree). SHA-256 is implemented here (FIPS
//! 180-4) to keep this crate's dependencies as they are.

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

/// The pin of one tool definition (a `tools/list` entry): `sha256:` and 64 hex digits.
pub fn tool_hash(tool: &J) -> String {
    let pinned = json!({
        "name": tool.get("name").cloned().unwrap_or(J::Null),
        "description": tool.get("description").cloned().unwrap_or(J::Null),
        "inputSchema": tool.get("inputSchema").cloned().unwrap_or_else(|| json!({"type": "object"})),
        "outputSchema": tool.get("outputSchema").cloned().unwrap_or(J::Null),
    });
    let mut text = String::new();
    canonical(&pinned, &mut text, 0);
    let digest = sha256(text.as_bytes());
    let mut out = String::from("sha256:");
    for byte in digest {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

fn canonical(value: &J, out: &mut String, depth: usize) {
    if depth > 256 {
        out.push_str(&value.to_string());
        return;
    }
    match value {
        J::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&J::String(key.clone()).to_string());
                out.push(':');
                if let Some(v) = map.get(key) {
                    canonical(v, out, depth + 1);
                }
            }
            out.push('}');
        }
        J::Array(items) => {
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

const K: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

/// SHA-256 of `data` (FIPS 180-4).
pub fn sha256(data: &[u8]) -> [u8; 32] {
    let mut h: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
        0x5be0cd19,
    ];
    let mut message = data.to_vec();
    let bits = (data.len() as u64).wrapping_mul(8);
    message.push(0x80);
    while message.len() % 64 != 56 {
        message.push(0);
    }
    message.extend_from_slice(&bits.to_be_bytes());
    for block in message.chunks_exact(64) {
        let mut w = [0u32; 64];
        for (i, word) in block.chunks_exact(4).enumerate() {
            w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16]
                .wrapping_add(s0)
                .wrapping_add(w[i - 7])
                .wrapping_add(s1);
        }
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut hh] = h;
        for i in 0..64 {
            let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
            let ch = (e & f) ^ (!e & g);
            let t1 = hh
                .wrapping_add(s1)
                .wrapping_add(ch)
                .wrapping_add(K[i])
                .wrapping_add(w[i]);
            let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
            let maj = (a & b) ^ (a & c) ^ (b & c);
            let t2 = s0.wrapping_add(maj);
            hh = g;
            g = f;
            f = e;
            e = d.wrapping_add(t1);
            d = c;
            c = b;
            b = a;
            a = t1.wrapping_add(t2);
        }
        for (slot, v) in h.iter_mut().zip([a, b, c, d, e, f, g, hh]) {
            *slot = slot.wrapping_add(v);
        }
    }
    let mut out = [0u8; 32];
    for (i, word) in h.iter().enumerate() {
        out[i * 4..i * 4 + 4].copy_from_slice(&word.to_be_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn sha256_matches_the_standard_vectors() {
        assert_eq!(
            hex(&sha256(b"")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            hex(&sha256(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            hex(&sha256(
                b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
            )),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
        let million = vec![b'a'; 1_000_000];
        assert_eq!(
            hex(&sha256(&million)),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
        );
    }

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
