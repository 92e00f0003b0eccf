//! `troupe lsp` end to end: the binary as a subprocess, spoken to in
//! JSON-RPC over its stdin/stdout the way an editor does.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long to wait for an answer before the test fails (a hang guard, not
/// a latency assertion).
const PATIENCE: Duration = Duration::from_secs(60);

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn uri_of(path: &Path) -> String {
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    format!("file://{}", path.display()).replace(' ', "%20")
}

struct Client {
    child: Child,
    stdin: ChildStdin,
    rx: mpsc::Receiver<Value>,
    /// Notifications that arrived while waiting for a response.
    pending: Vec<Value>,
    next_id: i64,
}

impl Client {
    fn start() -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_troupe"))
            .arg("lsp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            loop {
                let mut len = 0usize;
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let line = line.trim_end();
                    if line.is_empty() {
                        break;
                    }
                    if let Some(v) = line.strip_prefix("Content-Length: ") {
                        len = v.parse().unwrap();
                    }
                }
                let mut body = vec![0; len];
                if r.read_exact(&mut body).is_err() {
                    return;
                }
                let v: Value = serde_json::from_slice(&body).expect("the server writes JSON");
                if tx.send(v).is_err() {
                    return;
                }
            }
        });
        Client {
            child,
            stdin,
            rx,
            pending: Vec::new(),
            next_id: 1,
        }
    }

    fn started() -> Client {
        let mut c = Client::start();
        let init = c.request(
            "initialize",
            json!({ "processId": null, "rootUri": null, "capabilities": {} }),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "troupe", "{init}");
        c.notify("initialized", json!({}));
        c
    }

    fn send_raw(&mut self, body: &[u8]) {
        write!(self.stdin, "Content-Length: {}\r\n\r\n", body.len()).unwrap();
        self.stdin.write_all(body).unwrap();
        self.stdin.flush().unwrap();
    }

    fn send(&mut self, v: &Value) {
        self.send_raw(v.to_string().as_bytes());
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({ "jsonrpc": "2.0", "method": method, "params": params }));
    }

    fn recv(&mut self) -> Value {
        self.rx.recv_timeout(PATIENCE).expect("the server answers")
    }

    /// Sends a request and returns the whole response object.
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        self.response(&json!(id))
    }

    fn response(&mut self, id: &Value) -> Value {
        loop {
            let v = self.recv();
            if v.get("method").is_none() && v.get("id") == Some(id) {
                return v;
            }
            self.pending.push(v);
        }
    }

    /// The next `publishDiagnostics` for `uri`.
    fn diagnostics(&mut self, uri: &str) -> Vec<Value> {
        if let Some(i) = self.pending.iter().position(|v| {
            v["method"] == "textDocument/publishDiagnostics" && v["params"]["uri"] == uri
        }) {
            let v = self.pending.remove(i);
            return v["params"]["diagnostics"].as_array().unwrap().clone();
        }
        loop {
            let v = self.recv();
            if v["method"] == "textDocument/publishDiagnostics" && v["params"]["uri"] == uri {
                return v["params"]["diagnostics"].as_array().unwrap().clone();
            }
            self.pending.push(v);
        }
    }

    fn open(&mut self, uri: &str, text: &str) -> Vec<Value> {
        self.notify(
            "textDocument/didOpen",
            json!({ "textDocument": { "uri": uri, "languageId": "troupe", "version": 1, "text": text } }),
        );
        self.diagnostics(uri)
    }

    fn at(&mut self, method: &str, uri: &str, pos: (u32, u32), extra: Value) -> Value {
        let mut params = json!({
            "textDocument": { "uri": uri },
            "position": { "line": pos.0, "character": pos.1 },
        });
        if let (Some(p), Some(e)) = (params.as_object_mut(), extra.as_object()) {
            p.extend(e.clone());
        }
        self.request(method, params)
    }

    fn shutdown(mut self) -> std::process::ExitStatus {
        let r = self.request("shutdown", Value::Null);
        assert_eq!(r["result"], Value::Null, "{r}");
        self.notify("exit", Value::Null);
        self.child.wait().unwrap()
    }
}

/// The 0-based (line, UTF-16 column) of the `n`th occurrence of `needle`
/// plus `skip` characters.
fn pos_of(text: &str, needle: &str, n: usize, skip: usize) -> (u32, u32) {
    let off = text.match_indices(needle).nth(n).unwrap().0 + skip;
    let before = &text[..off];
    let line = before.matches('\n').count();
    let col = before.rsplit('\n').next().unwrap().encode_utf16().count();
    (line as u32, col as u32)
}

fn example(name: &str) -> (String, String) {
    let path = workspace().join("examples").join(name);
    (uri_of(&path), std::fs::read_to_string(&path).unwrap())
}

#[test]
fn initialize_advertises_the_features_and_shutdown_exits_cleanly() {
    let mut c = Client::start();
    // Before initialize, requests are refused, not crashed on.
    let early = c.request("textDocument/hover", json!({}));
    assert_eq!(early["error"]["code"], -32002, "{early}");
    let init = c.request("initialize", json!({ "capabilities": {} }));
    let caps = &init["result"]["capabilities"];
    assert_eq!(
        caps["textDocumentSync"]["change"], 2,
        "incremental sync: {caps}"
    );
    for cap in [
        "hoverProvider",
        "definitionProvider",
        "referencesProvider",
        "completionProvider",
        "documentSymbolProvider",
        "renameProvider",
        "codeActionProvider",
    ] {
        assert!(!caps[cap].is_null(), "{cap} in {caps}");
    }
    assert_eq!(
        caps["executeCommandProvider"]["commands"],
        json!(["troupe.project", "troupe.chart"])
    );
    let status = c.shutdown();
    assert!(status.success(), "{status:?}");
}

/// `troupe check --json` for one file: (code, line, column, end line, end
/// column, message, hint) per diagnostic, 1-based.
/// One diagnostic as (code, line, column, end line, end column, message, hint).
type Flat = (String, u64, u64, u64, u64, String, Option<String>);

fn check_json(path: &Path) -> Vec<Flat> {
    let out = Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args(["check", "--json"])
        .arg(path)
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    // Only the file itself: the editor shows a finding in an imported file
    // at the `import` (compared separately).
    let root = path.display().to_string();
    doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["file"].as_str() == Some(root.as_str()))
        .map(|d| {
            (
                d["code"].as_str().unwrap().to_owned(),
                d["line"].as_u64().unwrap(),
                d["column"].as_u64().unwrap(),
                d["end_line"].as_u64().unwrap(),
                d["end_column"].as_u64().unwrap(),
                d["message"].as_str().unwrap().to_owned(),
                d["hint"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

fn from_lsp(d: &Value) -> Flat {
    let msg = d["message"].as_str().unwrap();
    let (message, hint) = match msg.split_once("\nhint: ") {
        Some((m, h)) => (m.to_owned(), Some(h.to_owned())),
        None => (msg.to_owned(), None),
    };
    let r = &d["range"];
    (
        d["code"].as_str().unwrap().to_owned(),
        r["start"]["line"].as_u64().unwrap() + 1,
        r["start"]["character"].as_u64().unwrap() + 1,
        r["end"]["line"].as_u64().unwrap() + 1,
        r["end"]["character"].as_u64().unwrap() + 1,
        message,
        hint,
    )
}

#[test]
fn diagnostics_equal_troupe_check_on_the_whole_error_corpus() {
    let mut c = Client::started();
    let dir = workspace().join("crates/troupe-check/tests/corpus/err");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "troupe"))
        .collect();
    files.sort();
    assert!(files.len() > 40);
    let mut with_related = 0;
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let uri = uri_of(path);
        let lsp = c.open(&uri, &text);
        let ours: Vec<_> = lsp
            .iter()
            .map(from_lsp)
            .filter(|d| !d.5.starts_with("in `"))
            .collect();
        let theirs = check_json(path);
        // Columns: the CLI counts characters, LSP UTF-16 units; the corpus is
        // ASCII where they agree except in the non-ASCII files, so compare
        // those by line only.
        if text.is_ascii() {
            assert_eq!(ours, theirs, "{}", path.display());
        } else {
            let lines = |v: &[Flat]| {
                v.iter()
                    .map(|d| (d.0.clone(), d.1, d.5.clone()))
                    .collect::<Vec<_>>()
            };
            assert_eq!(lines(&ours), lines(&theirs), "{}", path.display());
        }
        assert!(lsp.iter().all(|d| d["source"] == "troupe"));
        with_related += lsp
            .iter()
            .filter(|d| d["relatedInformation"].is_array())
            .count();
        c.notify(
            "textDocument/didClose",
            json!({ "textDocument": { "uri": uri } }),
        );
        assert!(
            c.diagnostics(&uri).is_empty(),
            "closing clears the diagnostics"
        );
    }
    assert!(
        with_related > 20,
        "labels and related spans are carried: {with_related}"
    );
    assert!(c.shutdown().success());
}

#[test]
fn contract_findings_are_published_like_troupe_check() {
    let dir = std::env::temp_dir().join(format!("troupe-lsp-contracts-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        workspace().join("examples/train_booking.contracts.json"),
        dir.join("train_booking.contracts.json"),
    )
    .unwrap();
    let example =
        std::fs::read_to_string(workspace().join("examples/train_booking.troupe")).unwrap();
    let unconfirmed = example.replace("if confirmed @ Agent {", "if true @ Agent {");
    let file = dir.join("unconfirmed.troupe");
    std::fs::write(&file, &unconfirmed).unwrap();
    let mut c = Client::started();
    let uri = uri_of(&file);
    let diags = c.open(&uri, &unconfirmed);
    let ours: Vec<_> = diags.iter().map(from_lsp).collect();
    assert!(ours.iter().any(|d| d.0 == "E0601"), "{ours:?}");
    assert_eq!(ours, check_json(&file));
    // Restoring the confirmation (an incremental edit) clears the finding.
    let (line, col) = pos_of(&unconfirmed, "if true @ Agent {", 0, 3);
    c.notify(
        "textDocument/didChange",
        json!({
            "textDocument": { "uri": uri, "version": 2 },
            "contentChanges": [{ "range": { "start": { "line": line, "character": col }, "end": { "line": line, "character": col + 4 } }, "text": "confirmed" }],
        }),
    );
    let after: Vec<_> = c.diagnostics(&uri).iter().map(from_lsp).collect();
    assert!(after.iter().all(|d| d.0 != "E0601"), "{after:?}");
    std::fs::write(&file, example.as_bytes()).unwrap();
    assert_eq!(after, check_json(&file));
    assert!(c.shutdown().success());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn incremental_changes_update_the_diagnostics() {
    let mut c = Client::started();
    let (uri, text) = example("counter.troupe");
    assert!(c.open(&uri, &text).is_empty(), "the example checks");
    let (line, _) = pos_of(&text, "workflow counter(", 0, 0);
    // Insert a line that reads a variable bound nowhere.
    let change = |c: &mut Client, version: i64, range: Value, new: &str| {
        c.notify(
            "textDocument/didChange",
            json!({ "textDocument": { "uri": uri, "version": version }, "contentChanges": [{ "range": range, "text": new }] }),
        );
    };
    let body_line = line + 2;
    change(
        &mut c,
        2,
        json!({ "start": { "line": body_line, "character": 0 }, "end": { "line": body_line, "character": 0 } }),
        "  act Pong: q = missing + 1\n",
    );
    let diags = c.diagnostics(&uri);
    assert!(diags.iter().any(|d| d["code"] == "E0301"), "{diags:?}");
    assert!(
        diags
            .iter()
            .all(|d| d["range"]["start"]["line"] == body_line),
        "{diags:?}"
    );
    // Remove it again.
    change(
        &mut c,
        3,
        json!({ "start": { "line": body_line, "character": 0 }, "end": { "line": body_line + 1, "character": 0 } }),
        "",
    );
    assert!(c.diagnostics(&uri).is_empty());
    assert!(c.shutdown().success());
}

#[test]
fn hover_definition_references_and_rename_on_an_example() {
    let mut c = Client::started();
    let (uri, text) = example("consensus.troupe");
    c.open(&uri, &text);
    // Hover on Bob's `b_reason`.
    let pos = pos_of(&text, "msg Bob(b, b_reason)", 0, "msg Bob(b, ".len());
    let hover = c.at("textDocument/hover", &uri, pos, json!({}));
    let value = hover["result"]["contents"]["value"].as_str().unwrap();
    assert!(
        value.contains("b_reason: Text") && value.contains("**Bob**"),
        "{value}"
    );
    // Hover on an action: signature and body.
    let pos = pos_of(&text, "= reconsider(", 0, 2);
    let hover = c.at("textDocument/hover", &uri, pos, json!({}));
    let value = hover["result"]["contents"]["value"].as_str().unwrap();
    assert!(
        value.contains("llm reconsider(case: Text, mine: Verdict")
            && value.contains("Reconsider, and answer"),
        "{value}"
    );
    // Definition of Bob's `case`: the receive of the first message.
    let pos = pos_of(
        &text,
        "act Bob: b, b_reason = assess(case)",
        0,
        "act Bob: b, b_reason = assess(".len(),
    );
    let def = c.at("textDocument/definition", &uri, pos, json!({}));
    let want = pos_of(&text, "-> Bob(case)", 0, "-> Bob(".len());
    assert_eq!(def["result"]["uri"], uri.as_str());
    assert_eq!(
        def["result"]["range"]["start"],
        json!({ "line": want.0, "character": want.1 }),
        "{def}"
    );
    // References of the action `reconsider`: its declaration and two calls.
    let refs = c.at(
        "textDocument/references",
        &uri,
        pos_of(&text, "llm reconsider", 0, 4),
        json!({ "context": { "includeDeclaration": true } }),
    );
    assert_eq!(refs["result"].as_array().unwrap().len(), 3, "{refs}");
    // Rename the variable `round` (all of Alice's occurrences).
    let pos = pos_of(&text, "act Alice: round = 1", 0, "act Alice: ".len());
    let prep = c.at("textDocument/prepareRename", &uri, pos, json!({}));
    assert_eq!(
        prep["result"]["start"],
        json!({ "line": pos.0, "character": pos.1 }),
        "{prep}"
    );
    let edit = c.at(
        "textDocument/rename",
        &uri,
        pos,
        json!({ "newName": "turn" }),
    );
    let edits = edit["result"]["changes"][uri.as_str()].as_array().unwrap();
    let in_code: usize = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .map(|l| l.matches("round").count())
        .sum();
    assert_eq!(
        edits.len(),
        in_code,
        "every `round` outside comments: {edits:?}"
    );
    assert!(edits.iter().all(|e| e["newText"] == "turn"));
    let bad = c.at("textDocument/rename", &uri, pos, json!({ "newName": "a" }));
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already"),
        "{bad}"
    );
    // Document symbols: the enum, both actions, the workflow.
    let syms = c.request(
        "textDocument/documentSymbol",
        json!({ "textDocument": { "uri": uri } }),
    );
    let names: Vec<&str> = syms["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["Verdict", "assess", "reconsider", "consensus"]);
    // Completion inside an act of Bob's.
    let pos = pos_of(
        &text,
        "reconsider(case, b, a, a_reason)",
        0,
        "reconsider(".len(),
    );
    let items = c.at("textDocument/completion", &uri, pos, json!({}));
    let labels: Vec<&str> = items["result"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == 6)
        .map(|i| i["label"].as_str().unwrap())
        .collect();
    assert!(
        labels.contains(&"case") && labels.contains(&"a_reason") && !labels.contains(&"round"),
        "{labels:?}"
    );
    assert!(c.shutdown().success());
}

#[test]
fn the_missing_msg_code_action_fixes_the_file() {
    let mut c = Client::started();
    let (uri, text) = example("consensus.troupe");
    // Bob reads `round`, which only Alice has.
    let broken = text.replace(
        "act Bob: b, b_reason = reconsider(case, b, a, a_reason)",
        "act Bob: b, b_reason = reconsider(case, b, a, a_reason)\n    act Bob: late = round > 3",
    );
    let diags = c.open(&uri, &broken);
    let d = diags
        .iter()
        .find(|d| d["code"] == "E0301")
        .unwrap_or_else(|| panic!("{diags:?}"))
        .clone();
    let actions = c.request(
        "textDocument/codeAction",
        json!({ "textDocument": { "uri": uri }, "range": d["range"], "context": { "diagnostics": [d] } }),
    );
    let list = actions["result"].as_array().unwrap();
    let fix = list
        .iter()
        .find(|a| {
            a["title"]
                .as_str()
                .unwrap()
                .contains("msg Alice(round) -> Bob(round)")
        })
        .unwrap_or_else(|| panic!("{list:?}"));
    assert_eq!(fix["kind"], "quickfix");
    let edits = fix["edit"]["changes"][uri.as_str()].as_array().unwrap();
    // Apply the edit through the protocol and see the error go.
    let mut changes = Vec::new();
    for e in edits.iter().rev() {
        changes.push(json!({ "range": e["range"], "text": e["newText"] }));
    }
    c.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": uri, "version": 2 }, "contentChanges": changes }),
    );
    let after = c.diagnostics(&uri);
    assert!(after.is_empty(), "{after:?}");
    assert!(c.shutdown().success());
}

#[test]
fn execute_command_shows_the_projection_and_the_chart() {
    let mut c = Client::started();
    let (uri, text) = example("consensus.troupe");
    c.open(&uri, &text);
    let pos = pos_of(&text, "act Bob: b, b_reason = assess", 0, 4);
    let r = c.request(
        "workspace/executeCommand",
        json!({ "command": "troupe.project", "arguments": [uri, { "line": pos.0, "character": pos.1 }] }),
    );
    assert_eq!(r["result"]["title"], "projection of Bob", "{r}");
    let projection = r["result"]["text"].as_str().unwrap();
    // The same text as `troupe project --lifeline Bob`.
    let out = Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args(["project", "--lifeline", "Bob"])
        .arg(workspace().join("examples/consensus.troupe"))
        .output()
        .unwrap();
    assert_eq!(projection, String::from_utf8_lossy(&out.stdout));
    let r = c.request(
        "workspace/executeCommand",
        json!({ "command": "troupe.chart", "arguments": [uri, { "line": pos.0, "character": pos.1 }] }),
    );
    let chart = r["result"]["text"].as_str().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args(["msc", "--format", "mermaid"])
        .arg(workspace().join("examples/consensus.troupe"))
        .output()
        .unwrap();
    assert_eq!(chart, String::from_utf8_lossy(&out.stdout));
    let bad = c.request(
        "workspace/executeCommand",
        json!({ "command": "troupe.nothing", "arguments": [uri] }),
    );
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert!(c.shutdown().success());
}

#[test]
fn garbage_is_answered_with_errors_and_the_server_goes_on() {
    let mut c = Client::started();
    // Not JSON.
    c.send_raw(b"{ this is not json");
    let r = c.recv();
    assert_eq!(r["error"]["code"], -32700, "{r}");
    assert_eq!(r["id"], Value::Null);
    // Not UTF-8.
    c.send_raw(&[0xff, 0xfe, b'{', b'}', 0x80]);
    assert_eq!(c.recv()["error"]["code"], -32700);
    // JSON, but no JSON-RPC message.
    c.send(&json!({ "id": 77, "hello": "world" }));
    let r = c.recv();
    assert_eq!(
        (r["id"].clone(), r["error"]["code"].clone()),
        (json!(77), json!(-32600)),
        "{r}"
    );
    // An unknown method.
    let r = c.request("troupe/nothing", json!({}));
    assert_eq!(r["error"]["code"], -32601, "{r}");
    // Params of the wrong shape.
    let r = c.request("textDocument/hover", json!({ "textDocument": 5 }));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    // A document that is not open.
    let r = c.at(
        "textDocument/hover",
        "file:///nowhere.troupe",
        (0, 0),
        json!({}),
    );
    assert!(
        r["error"]["message"].as_str().unwrap().contains("not open"),
        "{r}"
    );
    // Positions far outside the text, on a document with invalid content.
    let uri = "untitled:garbage";
    let diags = c.open(
        uri,
        "workflow \u{0}\u{1F600} { msg A(\"x) -> -> }}}} \u{feff}",
    );
    assert!(!diags.is_empty());
    for pos in [(0, 9999), (9999, 0), (u32::MAX, u32::MAX)] {
        for method in [
            "textDocument/hover",
            "textDocument/definition",
            "textDocument/completion",
            "textDocument/prepareRename",
        ] {
            let r = c.at(method, uri, pos, json!({}));
            assert!(r.get("result").is_some() || r.get("error").is_some(), "{r}");
        }
    }
    // An edit with a range past the end.
    c.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": uri, "version": 2 }, "contentChanges": [{ "range": { "start": { "line": 500, "character": 3 }, "end": { "line": 2, "character": 0 } }, "text": "x" }] }),
    );
    c.diagnostics(uri);
    // Still alive and answering.
    let r = c.request(
        "textDocument/documentSymbol",
        json!({ "textDocument": { "uri": uri } }),
    );
    assert!(r["result"].is_array(), "{r}");
    assert!(c.shutdown().success());
}

#[test]
fn end_of_input_without_exit_ends_the_server() {
    let c = Client::started();
    let Client {
        mut child, stdin, ..
    } = c;
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
}
