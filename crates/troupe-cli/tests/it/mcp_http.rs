//! `troupe mcp serve --http`: the binary over Streamable HTTP, driven by a
//! raw HTTP client — Origin validation (loopback and `--allow-origin` only;
//! no Origin: a non-browser client, served), the bearer token (TROUPE_TOKEN
//! or a private `--token-file`), JSON-RPC errors for malformed bodies, and
//! sessions: bounded, closed when idle, and their memory freed.

use crate::mcp_http_client as http;
use crate::mcp_support as support;

use std::os::unix::fs::PermissionsExt;

use http::*;
use serde_json::{Value as J, json};
use support::*;

fn counter_call() -> J {
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
           "params": {"name": "counter", "arguments": {"limit": 3}}})
}

fn runs_in(db: &std::path::Path) -> usize {
    if !db.exists() {
        return 0;
    }
    let store = troupe_store::Store::open(db, troupe_store::Durability::Normal).expect("store");
    store.runs(None).expect("runs").len()
}

#[test]
fn foreign_origins_are_refused_and_loopback_ones_served() {
    let dir = project();
    let counter = examples().join("counter.troupe");
    let counter = counter.to_str().expect("path");
    let (_server, addr) = serve_http(
        dir.path(),
        &[
            counter,
            "--store",
            "db",
            "--allow-origin",
            "https://app.example:8443",
        ],
        &[],
    );
    // A page elsewhere cannot start runs through the user's browser.
    for origin in [
        "http://evil.example",
        "null",
        "http://localhost.evil.example",
        "https://app.example",
    ] {
        let refused = post(addr, &[("Origin", origin)], &initialize_body());
        assert_eq!(refused.status, 403, "{origin}: {refused:?}");
    }
    let session = open_session(addr, &[]);
    let refused = in_session(
        addr,
        &session,
        &[("Origin", "http://evil.example")],
        &counter_call(),
    );
    assert_eq!(refused.status, 403, "{refused:?}");
    assert_eq!(
        runs_in(&dir.path().join("db")),
        0,
        "a refused call started a run"
    );

    // Loopback pages, the allowed origin, and clients without Origin are served.
    for origin in [
        "http://localhost:5173",
        "http://127.0.0.1:8080",
        "http://[::1]:3000",
        "https://app.example:8443",
    ] {
        let id = open_session(addr, &[("Origin", origin)]);
        let done = in_session(addr, &id, &[("Origin", origin)], &counter_call());
        assert_eq!(done.status, 200, "{origin}: {done:?}");
        assert_eq!(
            done.json()["result"]["structuredContent"],
            json!({"k": 3}),
            "{origin}"
        );
    }
    let done = in_session(addr, &session, &[], &counter_call());
    assert_eq!(done.json()["result"]["structuredContent"], json!({"k": 3}));

    // A malformed body is a JSON-RPC error, not HTTP 415.
    let parse = post(addr, &[], r#"{"jsonrpc": "2.0", "id": 1, "method": "#);
    assert_eq!(parse.status, 400, "{parse:?}");
    assert_eq!(parse.header("content-type"), Some("application/json"));
    assert_eq!(parse.json()["error"]["code"], -32700, "{parse:?}");
    assert_eq!(parse.json()["id"], J::Null);
    let invalid = post(addr, &[], r#"{"jsonrpc": "2.0", "id": 7, "params": 3}"#);
    assert_eq!(invalid.status, 400, "{invalid:?}");
    assert_eq!(invalid.json()["error"]["code"], -32600, "{invalid:?}");
    assert_eq!(invalid.json()["id"], 7);
    let in_session_parse = post(
        addr,
        &[
            ("Mcp-Session-Id", &session),
            ("MCP-Protocol-Version", "2025-11-25"),
        ],
        "not json",
    );
    assert_eq!(in_session_parse.json()["error"]["code"], -32700);
    // A body that is not declared JSON stays HTTP's business.
    let text = request(
        addr,
        "POST",
        &[
            ("Content-Type", "text/plain"),
            ("Accept", "application/json, text/event-stream"),
        ],
        "hello",
    );
    assert_eq!(text.status, 415, "{text:?}");
}

#[test]
fn a_token_is_required_when_one_is_set() {
    let dir = project();
    let counter = examples().join("counter.troupe");
    let counter = counter.to_str().expect("path");

    // From the environment.
    let (server, addr) = serve_http(
        dir.path(),
        &[counter, "--store", "db"],
        &[("TROUPE_TOKEN", "tok-env-1")],
    );
    for auth in [
        None,
        Some("Bearer wrong"),
        Some("tok-env-1"),
        Some("Basic tok-env-1"),
    ] {
        let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("Authorization", *a)).collect();
        let refused = post(addr, &headers, &initialize_body());
        assert_eq!(refused.status, 401, "{auth:?}: {refused:?}");
        assert_eq!(refused.header("www-authenticate"), Some("Bearer"));
        assert_eq!(refused.json()["error"]["code"], -32001);
    }
    let bearer = [("Authorization", "Bearer tok-env-1")];
    let id = open_session(addr, &bearer);
    let done = in_session(addr, &id, &bearer, &counter_call());
    assert_eq!(done.json()["result"]["structuredContent"], json!({"k": 3}));
    // The session id alone is no credential.
    let stolen = in_session(addr, &id, &[], &counter_call());
    assert_eq!(stolen.status, 401, "{stolen:?}");
    drop(server);

    // From a private file; a file others can read is refused.
    let file = dir.path().join("token");
    std::fs::write(&file, "tok-file-2\n").expect("write");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let open = std::process::Command::new(troupe())
        .args([
            "mcp",
            "serve",
            counter,
            "--store",
            "db",
            "--http",
            "127.0.0.1:0",
            "--token-file",
        ])
        .arg(&file)
        .current_dir(dir.path())
        .output()
        .expect("runs");
    assert_eq!(open.status.code(), Some(2));
    let err = String::from_utf8_lossy(&open.stderr);
    assert!(err.contains("chmod 600"), "{err}");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let file = file.to_str().expect("path");
    let (_server, addr) = serve_http(
        dir.path(),
        &[counter, "--store", "db", "--token-file", file],
        &[("TROUPE_TOKEN", "not-this-one")],
    );
    assert_eq!(
        post(
            addr,
            &[("Authorization", "Bearer not-this-one")],
            &initialize_body()
        )
        .status,
        401
    );
    open_session(addr, &[("Authorization", "Bearer tok-file-2")]);
}

/// Opens sessions until the server refuses one, closes them again, and
/// returns how many it could open: the free places. Touches no other session
/// (a message in a session would keep it from expiring).
fn free_places(addr: std::net::SocketAddr) -> usize {
    let mut opened = Vec::new();
    loop {
        let answer = post(addr, &[], &initialize_body());
        if answer.status == 503 {
            break;
        }
        assert_eq!(answer.status, 200, "{answer:?}");
        opened.push(
            answer
                .header("mcp-session-id")
                .expect("a session")
                .to_owned(),
        );
    }
    for id in &opened {
        let ended = request(
            addr,
            "DELETE",
            &[
                ("Mcp-Session-Id", id),
                ("MCP-Protocol-Version", "2025-11-25"),
            ],
            "",
        );
        assert!(ended.status < 300, "{ended:?}");
    }
    opened.len()
}

#[test]
fn sessions_are_bounded_and_idle_ones_expire() {
    let dir = project();
    let counter = examples().join("counter.troupe");
    let counter = counter.to_str().expect("path");
    let (_server, addr) = serve_http(
        dir.path(),
        &[
            counter,
            "--store",
            "db",
            "--max-sessions",
            "3",
            "--session-idle",
            "1s",
        ],
        &[],
    );
    let ids: Vec<String> = (0..3).map(|_| open_session(addr, &[])).collect();
    let full = post(addr, &[], &initialize_body());
    assert_eq!(full.status, 503, "{full:?}");
    assert_eq!(full.json()["error"]["code"], -32000);
    assert!(
        full.json()["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("too many sessions"))
    );
    // Ending one makes room for one.
    let ended = request(
        addr,
        "DELETE",
        &[
            ("Mcp-Session-Id", &ids[0]),
            ("MCP-Protocol-Version", "2025-11-25"),
        ],
        "",
    );
    assert!(ended.status < 300, "{ended:?}");
    let ping = json!({"jsonrpc": "2.0", "id": 9, "method": "ping"});
    assert_eq!(
        in_session(addr, &ids[0], &[], &ping).status,
        404,
        "an ended session"
    );
    open_session(addr, &[]);
    assert_eq!(post(addr, &[], &initialize_body()).status, 503);
    // Nobody uses the sessions: they expire, and all three places are free.
    wait_for("the idle sessions to expire", || free_places(addr) == 3);
    assert_eq!(
        in_session(addr, &ids[1], &[], &ping).status,
        404,
        "an expired session"
    );
}

#[test]
fn five_thousand_sessions_do_not_keep_their_memory() {
    const N: usize = 5000;
    let dir = project();
    let counter = examples().join("counter.troupe");
    let counter = counter.to_str().expect("path");
    let (server, addr) = serve_http(
        dir.path(),
        &[
            counter,
            "--store",
            "db",
            "--max-sessions",
            &(N + 100).to_string(),
            "--session-idle",
            "8s",
        ],
        &[],
    );
    let round = |n: usize| -> Vec<String> {
        (0..n)
            .map(|_| {
                let answer = post(addr, &[], &initialize_body());
                assert_eq!(answer.status, 200, "{answer:?}");
                answer
                    .header("mcp-session-id")
                    .expect("a session")
                    .to_owned()
            })
            .collect()
    };
    // A message in a session keeps it: probe each session once, from the
    // newest back, a second apart. Once one is gone, so is every session
    // opened before it (all idle since they were opened).
    let expire = |ids: &[String]| {
        let ping = json!({"jsonrpc": "2.0", "id": 9, "method": "ping"});
        let mut probe = ids.iter().rev();
        wait_for("the sessions to expire", || {
            std::thread::sleep(std::time::Duration::from_secs(1));
            let id = probe.next().expect("a session to probe");
            in_session(addr, id, &[], &ping).status == 404
        });
    };
    // Warm up (the allocator, the runtime's threads), then measure.
    expire(&round(200));
    let base = server.rss_kb();
    let first = round(N);
    let peak1 = server.rss_kb();
    expire(&first);
    let after1 = server.rss_kb();
    let second = round(N);
    let peak2 = server.rss_kb();
    expire(&second);
    let after2 = server.rss_kb();
    eprintln!(
        "resident memory (kB): base {base}; {N} sessions {peak1}, expired {after1}; \
         {N} more {peak2}, expired {after2}"
    );
    let grown1 = peak1.saturating_sub(base);
    assert!(grown1 > 0, "the sessions cost nothing? {base} -> {peak1}");
    // Had the first sessions kept their memory, the second round would add
    // as much again; freed, it reuses it.
    let grown2 = peak2.saturating_sub(peak1);
    assert!(
        grown2 <= grown1 / 2 + 4096,
        "the second {N} sessions grew the server by {grown2} kB after the first grew it by {grown1} kB: \
         the expired sessions kept their memory"
    );
}
