//! Tool-calling `llm` actions under enforced contracts (issue #14), through
//! the binary: `examples/agent_booking.troupe` against the real
//! `train-booking-server` (its ledger file and its call log, which
//! deduplicates nothing, are the oracles), with a fake OpenAI-compatible
//! model on loopback that reads the tool results it is sent and asks for
//! `get_user`, `check_balance`, then `book_ticket`, or with the scripted
//! model.

use crate::kills_support as support;

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::kill_group;

pub(crate) const PRICE: f64 = 47.0;

/// A model that books for u1: it answers each request by the last tool
/// result in it (so it proves the results reach it, by their call ids),
/// and logs every request body.
struct Model {
    port: u16,
    requests: Arc<Mutex<Vec<Value>>>,
    /// While set, the request after `book_ticket`'s result gets no answer.
    hold_final: Arc<AtomicBool>,
}

impl Model {
    fn start() -> Model {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let hold_final = Arc::new(AtomicBool::new(false));
        let (log, hold) = (requests.clone(), hold_final.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (log, hold) = (log.clone(), hold.clone());
                std::thread::spawn(move || serve(stream, &log, &hold));
            }
        });
        Model {
            port,
            requests,
            hold_final,
        }
    }

    fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            (
                "OPENAI_BASE_URL",
                format!("http://127.0.0.1:{}/v1", self.port),
            ),
            ("OPENAI_API_KEY", "sk-test".to_owned()),
        ]
    }

    fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }
}

fn serve(mut stream: TcpStream, log: &Mutex<Vec<Value>>, hold: &AtomicBool) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let mut length = 0;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).is_err() {
            return;
        }
        if h.trim().is_empty() {
            break;
        }
        if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let request: Value = serde_json::from_slice(&body).unwrap();
    log.lock().unwrap().push(request.clone());
    let message = next_message(&request);
    if message.get("tool_calls").is_none() {
        while hold.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let text = json!({
        "id": "c", "object": "chat.completion", "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
    })
    .to_string();
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
        text.len()
    );
}

fn call(id: &str, name: &str, arguments: Value) -> Value {
    json!({"role": "assistant", "content": null, "tool_calls": [{
        "id": id, "type": "function",
        "function": {"name": name, "arguments": arguments.to_string()},
    }]})
}

/// The fake model's policy, by the last tool result it was sent.
fn next_message(request: &Value) -> Value {
    let messages = request["messages"].as_array().unwrap();
    let last_tool = messages.iter().rev().find(|m| m["role"] == "tool");
    match last_tool.map(|m| {
        (
            m["tool_call_id"].as_str().unwrap(),
            m["content"].as_str().unwrap(),
        )
    }) {
        None => call("c-user", "get_user", json!({"user_id": "u1"})),
        Some(("c-user", content)) => {
            let user: Value = serde_json::from_str(content).unwrap();
            call(
                "c-balance",
                "check_balance",
                json!({"account": user["account"], "amount": PRICE}),
            )
        }
        Some(("c-balance", _)) => call(
            "c-book",
            "book_ticket",
            json!({"user_id": "u1", "origin": "Paris", "destination": "Lyon",
                   "date": "2026-12-24", "class": "economy", "price": PRICE}),
        ),
        Some((_, content)) => json!({"role": "assistant", "content": format!("Done: {content}")}),
    }
}

/// A directory with the example pointed at the built server, its ledger
/// file and call log, and the contracts sidecar.
fn setup() -> (tempfile::TempDir, PathBuf) {
    setup_with(Sources::Both, &[])
}

/// Where the tools' contracts come from in a test's setup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sources {
    /// The workflow's sidecar; the server publishes none in `_meta`.
    Sidecar,
    /// The server's `_meta`; the workflow names no sidecar.
    Meta,
    /// Both, agreeing.
    Both,
    /// The sidecar, and a `_meta` that lies (no tool transactional, no
    /// relations).
    Disagreeing,
    /// Only the lying `_meta` (and the server's truthful annotations).
    Lying,
}

impl Sources {
    pub(crate) const ALL: [Sources; 5] = [
        Sources::Sidecar,
        Sources::Meta,
        Sources::Both,
        Sources::Disagreeing,
        Sources::Lying,
    ];

    fn sidecar(self) -> bool {
        matches!(
            self,
            Sources::Sidecar | Sources::Both | Sources::Disagreeing
        )
    }

    fn meta(self) -> &'static str {
        match self {
            Sources::Sidecar => "none",
            Sources::Meta | Sources::Both => "contracts",
            Sources::Disagreeing | Sources::Lying => "lying",
        }
    }
}

/// The agent example against the real server, its contracts from
/// `sources`; `extra` lines are added to the workflow after its tools, and
/// an extra tool named in them is offered to the model too.
pub(crate) fn setup_with(sources: Sources, extra: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_owned();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let server = Path::new(env!("CARGO_BIN_EXE_troupe"))
        .parent()
        .unwrap()
        .join("train-booking-server");
    assert!(
        server.exists(),
        "{} is missing: `cargo build -p train-booking-server` (cargo test --workspace builds it)",
        server.display()
    );
    let sidecar = examples
        .join("train_booking.contracts.json")
        .canonicalize()
        .unwrap();
    let source: String = std::fs::read_to_string(examples.join("agent_booking.troupe"))
        .unwrap()
        .lines()
        .map(|l| {
            let t = l.trim_start();
            if t.starts_with("command:") {
                format!(
                    "  command: \"{}\"\n  args: [\"--ledger\", \"{}\", \"--call-log\", \"{}\", \"--meta\", \"{}\"]",
                    server.display(),
                    dir.join("ledger.json").display(),
                    dir.join("calls.log").display(),
                    sources.meta()
                )
            } else if t.starts_with("contracts:") {
                if sources.sidecar() {
                    format!("  contracts: \"{}\"", sidecar.display())
                } else {
                    String::new()
                }
            } else if t.starts_with("llm assist") {
                format!("{}\n{l}", extra.join("\n"))
            } else if t.starts_with("tools:") && !extra.is_empty() {
                let names: Vec<&str> = extra
                    .iter()
                    .filter_map(|e| e.strip_prefix("tool ")?.split('(').next())
                    .collect();
                l.replace("book_ticket]", &format!("book_ticket, {}]", names.join(", ")))
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(dir.join("agent.troupe"), source).unwrap();
    (tmp, dir)
}

pub(crate) fn troupe(dir: &Path, env: &[(&str, String)], args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_troupe"));
    c.current_dir(dir)
        .args(args)
        .env("NO_COLOR", "1")
        .env("TROUPE_LEASE", "1s")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

fn output(mut c: Command) -> Output {
    c.output().unwrap()
}

pub(crate) fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

pub(crate) fn json_of(dir: &Path, args: &[&str]) -> Value {
    let out = output(troupe(dir, &[], args));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {}", text(&out)))
}

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "timed out: {what}"
        );
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Every `tools/call` the server received, by tool (its own log).
pub(crate) fn calls(dir: &Path, tool: &str) -> usize {
    std::fs::read_to_string(dir.join("calls.log"))
        .unwrap_or_default()
        .lines()
        .filter(|l| serde_json::from_str::<Value>(l).unwrap()["tool"] == tool)
        .count()
}

/// Ada's balance and the tickets, from the server's own ledger file (the
/// seed when the server never wrote one).
pub(crate) fn ledger(dir: &Path) -> (f64, usize) {
    match std::fs::read_to_string(dir.join("ledger.json")) {
        Ok(t) => {
            let l: Value = serde_json::from_str(&t).unwrap();
            (
                l["balances"]["acct-ada"].as_f64().unwrap(),
                l["tickets"].as_array().unwrap().len(),
            )
        }
        Err(_) => (500.0, 0),
    }
}

fn start_run(dir: &Path, env: &[(&str, String)], llm: &str) -> Child {
    use std::os::unix::process::CommandExt;
    let mut c = troupe(
        dir,
        env,
        &[
            "run",
            "agent.troupe",
            "--store",
            "db",
            "-i",
            "request=Book u1 from Paris to Lyon on 2026-12-24",
            "--llm",
            llm,
        ],
    );
    c.stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    c.spawn().unwrap()
}

pub(crate) fn pending_tasks(dir: &Path) -> Vec<Value> {
    if !dir.join("db").exists() {
        return Vec::new();
    }
    json_of(dir, &["tasks", "--store", "db", "--json"])
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn wait_for_confirmation(dir: &Path) -> Value {
    let mut task = Value::Null;
    wait_for("the confirmation of book_ticket", || {
        match pending_tasks(dir)
            .into_iter()
            .find(|t| t["action"] == "book_ticket")
        {
            Some(t) => {
                task = t;
                true
            }
            None => false,
        }
    });
    task
}

fn finish(mut c: Child) {
    let start = Instant::now();
    while c.try_wait().unwrap().is_none() {
        assert!(start.elapsed() < Duration::from_secs(60), "the run hangs");
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub(crate) fn status(dir: &Path) -> Value {
    json_of(dir, &["status", "run-1", "--store", "db", "--json"])
}

fn answer(dir: &Path, task: &Value, yes: bool) {
    let id = task["id"].as_str().unwrap();
    let out = output(troupe(
        dir,
        &[],
        &[
            "answer",
            id,
            if yes { "--yes" } else { "--no" },
            "--by",
            "tester",
            "--store",
            "db",
        ],
    ));
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn a_booking_a_person_declines_debits_nothing_and_the_model_is_told() {
    let model = Model::start();
    let (_tmp, dir) = setup();
    let run = start_run(&dir, &model.env(), "openai:gpt-4o-mini");
    let task = wait_for_confirmation(&dir);
    // The task shows the exact tool and arguments; nothing booked yet.
    let prompt = task["prompt"].as_str().unwrap();
    assert!(
        prompt.contains("`book_ticket`")
            && prompt.contains("\"price\": 47.0")
            && prompt.contains("\"user_id\": \"u1\""),
        "{prompt}"
    );
    assert_eq!(task["kind"], "confirm", "{task}");
    assert_eq!(
        (calls(&dir, "get_user"), calls(&dir, "check_balance")),
        (1, 1)
    );
    assert_eq!(calls(&dir, "book_ticket"), 0);
    answer(&dir, &task, false);
    finish(run);
    let s = status(&dir);
    assert_eq!(s["status"], "done", "{s}");
    assert_eq!(
        calls(&dir, "book_ticket"),
        0,
        "a no is never sent to the server"
    );
    assert_eq!(ledger(&dir), (500.0, 0), "no debit, no ticket");
    // The model saw its tools, and got the refusal as the book call's result.
    let requests = model.requests();
    assert_eq!(requests.len(), 4, "three tool turns and the answer");
    let tools: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        ["get_user", "quote_fare", "check_balance", "book_ticket"]
    );
    let book = &requests[0]["tools"][3]["function"];
    assert_eq!(
        book["parameters"]["required"].as_array().unwrap().len(),
        6,
        "{book}"
    );
    assert!(
        book["description"].as_str().unwrap().len() > 10,
        "the server's description: {book}"
    );
    let last = requests[3]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["role"], "tool");
    assert_eq!(last["tool_call_id"], "c-book");
    assert!(
        last["content"].as_str().unwrap().contains("declined"),
        "{last}"
    );
    let reply = s["result"]["reply"].as_str().unwrap_or_default().to_owned();
    assert!(reply.contains("declined"), "{s}");
    // Every model turn is a model-call record.
    assert_eq!(s["llm_calls"].as_array().unwrap().len(), 4, "{s}");
    // Status and trace show each call inside the action.
    let chosen = s["tool_calls"].as_array().unwrap();
    let shown: Vec<(&str, &str)> = chosen
        .iter()
        .map(|c| (c["tool"].as_str().unwrap(), c["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        shown,
        [
            ("get_user", "done"),
            ("check_balance", "done"),
            ("book_ticket", "declined")
        ],
        "{s}"
    );
    assert_eq!(chosen[2]["step"], "Agent/assist#0");
    assert_eq!(chosen[2]["arguments"]["price"], PRICE);
    let trace = output(troupe(&dir, &[], &["trace", "run-1", "--store", "db"]));
    let trace = text(&trace);
    assert!(
        trace.contains("Agent/assist#0 #2 book_ticket(") && trace.contains("declined by a person"),
        "{trace}"
    );
}

#[test]
fn a_booking_a_person_confirms_debits_once() {
    let model = Model::start();
    let (_tmp, dir) = setup();
    // Its trace, exported: each tool call an `execute_tool` span.
    let (port, bodies) = crate::llm_calls::collector();
    let mut env = model.env();
    env.push((
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        format!("http://127.0.0.1:{port}"),
    ));
    let run = start_run(&dir, &env, "openai:gpt-4o-mini");
    let task = wait_for_confirmation(&dir);
    answer(&dir, &task, true);
    finish(run);
    let s = status(&dir);
    assert_eq!(s["status"], "done", "{s}");
    assert_eq!(calls(&dir, "book_ticket"), 1);
    assert_eq!(ledger(&dir), (500.0 - PRICE, 1), "exactly one debit");
    let last = model.requests().last().unwrap()["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(
        last["content"].as_str().unwrap().contains("\"price\":47.0"),
        "{last}"
    );
    let book = s["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["tool"] == "book_ticket")
        .unwrap()
        .clone();
    assert_eq!(book["status"], "done", "{book}");
    assert_eq!(book["detail"]["price"], PRICE, "{book}");
    assert_eq!(book["confirmed_by"], "tester", "{book}");
    let spans = crate::llm_calls::spans(&bodies.lock().unwrap());
    for tool in ["get_user", "check_balance", "book_ticket"] {
        let span = spans
            .iter()
            .find(|s| s.name == format!("execute_tool {tool}"))
            .unwrap_or_else(|| panic!("no execute_tool span of {tool}: {spans:#?}"));
        let attr = |k: &str| crate::llm_calls::attr(span, k);
        assert_eq!(span.kind, 3, "a CLIENT span");
        assert_eq!(attr("gen_ai.tool.name").as_deref(), Some(tool));
        assert_eq!(
            attr("gen_ai.operation.name").as_deref(),
            Some("execute_tool")
        );
        assert_eq!(attr("mcp.method.name").as_deref(), Some("tools/call"));
    }
    // The web run page lists the call and draws it under its action.
    let page = web_page(&dir, "/runs/run-1");
    assert!(page.contains("Tool calls chosen by models"), "{page}");
    let table = &page[page.find("id=\"chosen\"").unwrap()..];
    assert!(
        table.contains("book_ticket") && table.contains("tester"),
        "{table}"
    );
    assert!(
        page.contains("↳ #2 book_ticket("),
        "the chart shows the call: {page}"
    );
}

/// A page of `troupe serve` over the test's store.
fn web_page(dir: &Path, path: &str) -> String {
    struct Serve(Child);
    impl Drop for Serve {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut c = troupe(
        dir,
        &[("TROUPE_TOKEN", "web-test".to_owned())],
        &[
            "serve",
            "--store",
            "db",
            "--bind",
            &format!("127.0.0.1:{port}"),
            "--no-notify",
        ],
    );
    c.stdout(Stdio::null()).stderr(Stdio::null());
    let _serve = Serve(c.spawn().unwrap());
    let request = format!(
        "GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer web-test\r\nconnection: close\r\n\r\n"
    );
    let start = Instant::now();
    loop {
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) {
            s.write_all(request.as_bytes()).unwrap();
            let mut out = String::new();
            let _ = s.read_to_string(&mut out);
            if out.starts_with("HTTP/1.1 200") {
                return out;
            }
            panic!("{path}: {out}");
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "troupe serve did not listen"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn killed_during_the_conversation_a_resumed_run_repeats_no_call() {
    let model = Model::start();
    let (_tmp, dir) = setup();
    // Killed while the confirmation waits, after two tool calls.
    let mut first = start_run(&dir, &model.env(), "openai:gpt-4o-mini");
    let task = wait_for_confirmation(&dir);
    kill_group(&mut first);
    assert_eq!(model.requests().len(), 3);
    answer(&dir, &task, true);
    // Killed again after book_ticket ran, while the model's last turn is
    // asked (the fake holds its answer).
    model.hold_final.store(true, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(1300));
    let mut c = troupe(&dir, &model.env(), &["resume", "run-1", "--store", "db"]);
    use std::os::unix::process::CommandExt;
    c.stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    let mut second = c.spawn().unwrap();
    wait_for("the model's last turn", || model.requests().len() == 4);
    assert_eq!(calls(&dir, "book_ticket"), 1);
    kill_group(&mut second);
    model.hold_final.store(false, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(1300));
    let out = output(troupe(
        &dir,
        &model.env(),
        &["resume", "run-1", "--store", "db"],
    ));
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(status(&dir)["status"], "done");
    // Each tool once, by the server's own log; one debit by its ledger;
    // the model asked once per turn, plus the turn that was in flight.
    assert_eq!(
        (
            calls(&dir, "get_user"),
            calls(&dir, "check_balance"),
            calls(&dir, "book_ticket")
        ),
        (1, 1, 1)
    );
    assert_eq!(ledger(&dir), (500.0 - PRICE, 1));
    assert_eq!(
        model.requests().len(),
        5,
        "turns 0-2, then turn 3 twice (killed in flight)"
    );
}

/// A scripted model, written into the directory.
pub(crate) fn script(dir: &Path, turns: Value) -> String {
    std::fs::write(
        dir.join("script.json"),
        json!({"assist": {"turns": turns}}).to_string(),
    )
    .unwrap();
    "scripted:script.json".to_owned()
}

/// Runs with the scripted model; a confirmation, if one is asked for, is
/// answered yes (so a call the contracts should have refused would reach
/// the server and show in its log).
pub(crate) fn run_scripted(dir: &Path, llm: &str) -> Output {
    std::fs::write(dir.join("answers.json"), r#"{"book_ticket": true}"#).unwrap();
    let mut c = troupe(
        dir,
        &[],
        &[
            "run",
            "agent.troupe",
            "--store",
            "db",
            "-i",
            "request=Book",
            "--llm",
            llm,
            "--answers",
            "answers.json",
        ],
    );
    let child = c.spawn().unwrap();
    let start = Instant::now();
    let mut child = child;
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("the scripted run hangs");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

pub(crate) fn steps(s: &Value) -> String {
    s["steps"].to_string()
}

#[test]
fn a_booking_before_its_required_check_is_refused_and_never_reaches_the_server() {
    let (_tmp, dir) = setup();
    let book = json!({"name": "book_ticket", "arguments": {"user_id": "u1", "origin": "Paris",
        "destination": "Lyon", "date": "2026-12-24", "class": "economy", "price": PRICE}});
    let llm = script(
        &dir,
        json!([
            {"tool_calls": [{"name": "get_user", "arguments": {"user_id": "u1"}}]},
            {"tool_calls": [book]},
            // A check of another amount does not satisfy the relation either.
            {"tool_calls": [{"name": "check_balance", "arguments": {"account": "acct-ada", "amount": 1.0}}]},
            {"tool_calls": [book]},
            {"answer": "I could not book."}
        ]),
    );
    let out = run_scripted(&dir, &llm);
    assert!(out.status.success(), "{}", text(&out));
    // The model's reply is not the only word: the run says which of its
    // calls did not happen.
    let said = text(&out);
    assert!(
        said.contains("warning: 2 tool call(s) a model chose did not happen")
            && said.matches("`book_ticket` was not called").count() == 2,
        "{said}"
    );
    assert_eq!(calls(&dir, "book_ticket"), 0, "the server saw no booking");
    assert_eq!(
        (calls(&dir, "get_user"), calls(&dir, "check_balance")),
        (1, 1)
    );
    assert_eq!(ledger(&dir), (500.0, 0));
    let s = status(&dir);
    let all = steps(&s);
    assert_eq!(
        all.matches("requires a successful earlier call of `check_balance`")
            .count(),
        2,
        "{all}"
    );
    assert!(
        !all.contains("confirm#"),
        "no confirmation was asked for: {all}"
    );
    assert!(pending_tasks(&dir).is_empty());
    let refused = s["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["tool"] == "book_ticket" && c["status"] == "refused")
        .count();
    assert_eq!(refused, 2, "{s}");
}

#[test]
fn hostile_tool_calls_go_back_to_the_model_and_count_as_turns() {
    let (_tmp, dir) = setup();
    let llm = script(
        &dir,
        json!([
            {"tool_calls": [
                {"name": "drop_tables", "arguments": {}},
                {"name": "get_user", "arguments": "{\"user_id\": "},
                {"name": "get_user", "arguments": {"user_id": 5}},
                {"name": "get_user", "arguments": {"user_id": "u1", "admin": true}},
                {"name": "get_user", "arguments": "[1, 2]"},
                {"name": "get_user", "arguments": {}}
            ]},
            {"answer": "ok"}
        ]),
    );
    let out = run_scripted(&dir, &llm);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(calls(&dir, "get_user"), 0, "nothing reached the server");
    // Over max_steps (8 turns), the run fails naming the action and the limit.
    let (_tmp2, dir2) = setup();
    let turn = json!({"tool_calls": [{"name": "get_user", "arguments": {"user_id": "u1"}}]});
    let llm = script(&dir2, Value::Array(vec![turn; 12]));
    let out = run_scripted(&dir2, &llm);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = text(&out);
    assert!(
        err.contains("`assist`") && err.contains("max_steps: 8") && err.contains("line"),
        "{err}"
    );
    assert_eq!(
        calls(&dir2, "get_user"),
        8,
        "one call per turn, eight turns"
    );
}

#[test]
fn a_turn_asking_for_ten_thousand_calls_makes_sixteen() {
    let (_tmp, dir) = setup();
    let many = vec![json!({"name": "get_user", "arguments": {"user_id": "u1"}}); 10_000];
    let llm = script(
        &dir,
        json!([{"tool_calls": many}, {"answer": "Looked up."}]),
    );
    let out = run_scripted(&dir, &llm);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(calls(&dir, "get_user"), 16, "the server's own log");
    let s = status(&dir);
    let made = s["tool_calls"].as_array().unwrap().len();
    assert_eq!(made, 16, "{s}");
}
