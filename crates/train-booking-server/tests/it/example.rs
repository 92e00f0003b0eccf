//! `examples/train_booking.troupe` run through troupe-runtime with the MCP
//! host against this crate's server (the binary cargo built for this test),
//! plus the host's failure paths against the same server: a tool error, a
//! missing argument (no call made), a server that dies mid-call, drift.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value as J, json};
use troupe_check::Value;
use troupe_mcp::{McpError, McpToolHost};
use troupe_runtime::{EngineBuilder, RunError, RunOptions, ScriptedHumans};

const SERVER: &str = env!("CARGO_BIN_EXE_train-booking-server");

fn example() -> String {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/train_booking.troupe");
    std::fs::read_to_string(path).unwrap()
}

/// A scratch directory for ledgers and call logs, fresh per test.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("train-booking-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn lit(p: &Path) -> String {
    troupe_mcp::import::string_literal(&p.display().to_string())
}

/// The example with its server started from the test's binary, with a
/// ledger file, a call log, and extra server arguments.
fn example_with(dir: &Path, extra: &[&str]) -> String {
    let text = example();
    let original = "  command: \"target/debug/train-booking-server\"\n";
    assert!(
        text.contains(original),
        "the example's server declaration changed"
    );
    let mut args = vec![
        lit(Path::new("--ledger")),
        lit(&dir.join("ledger.json")),
        lit(Path::new("--call-log")),
        lit(&dir.join("calls.jsonl")),
    ];
    args.extend(extra.iter().map(|a| lit(Path::new(a))));
    text.replace(
        original,
        &format!(
            "  command: {}\n  args: [{}]\n",
            lit(Path::new(SERVER)),
            args.join(", ")
        ),
    )
}

fn calls(dir: &Path) -> Vec<J> {
    std::fs::read_to_string(dir.join("calls.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn ledger(dir: &Path) -> J {
    serde_json::from_str(&std::fs::read_to_string(dir.join("ledger.json")).unwrap()).unwrap()
}

fn inputs(user: &str) -> Vec<Value> {
    ["Paris", "Lyon", "2026-12-24"]
        .iter()
        .fold(vec![Value::text(user)], |mut v, s| {
            v.push(Value::text(*s));
            v
        })
}

async fn run_example(
    source: &str,
    user: &str,
) -> (Result<troupe_runtime::RunOutcome, RunError>, McpToolHost) {
    let (program, diags) = troupe_check::check_text(source);
    let program = program.unwrap_or_else(|| panic!("{diags:?}"));
    let host = McpToolHost::for_program(&program);
    let answers = json!({"confirm_booking": true, "choose_delivery": "email"});
    let engine = EngineBuilder::from_source(source)
        .unwrap()
        .tools(Arc::new(host.clone()))
        .humans(Arc::new(ScriptedHumans::new(
            answers.as_object().unwrap().clone(),
        )))
        .build()
        .unwrap();
    let class_ty = engine.program().workflows[0]
        .vars
        .iter()
        .find(|v| v.name == "class")
        .unwrap()
        .ty
        .clone();
    let class = Value::parse("economy", &class_ty, &engine.program().types).unwrap();
    let mut values = inputs(user);
    values.push(class);
    let outcome = tokio::time::timeout(
        Duration::from_secs(120),
        engine.run(values, RunOptions::default()),
    )
    .await
    .expect("the run hung");
    (outcome, host)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_books_and_emails_and_the_ledger_shows_the_debit() {
    let dir = scratch("happy");
    let (outcome, host) = run_example(&example_with(&dir, &[]), "u1").await;
    let outcome = outcome.unwrap();
    let (name, value) = &outcome.results[0];
    assert_eq!(name, "outcome");
    assert_eq!(
        value.to_json(&Default::default()),
        json!("emailed ticket T-0001 to ada@example.org")
    );

    let log = calls(&dir);
    let tools: Vec<&str> = log.iter().map(|c| c["tool"].as_str().unwrap()).collect();
    assert_eq!(
        tools,
        [
            "get_user",
            "quote_fare",
            "check_balance",
            "book_ticket",
            "email_ticket"
        ]
    );
    // Every call carries the run's idempotency key: the run's identity (a
    // UUID, never reused), then the step.
    let key = log[3]["idempotency_key"].as_str().unwrap();
    let (stem, step) = key.split_once('/').unwrap();
    assert_eq!(step, "Agent/book_ticket#0", "{key}");
    assert!(
        stem.len() == 36 && stem.chars().all(|c| c.is_ascii_hexdigit() || c == '-'),
        "{key}"
    );

    let ledger = ledger(&dir);
    let ticket = &ledger["tickets"][0];
    assert_eq!(ticket["id"], json!("T-0001"));
    let price = ticket["price"].as_f64().unwrap();
    let balance = ledger["balances"]["acct-ada"].as_f64().unwrap();
    assert!(
        (balance - (500.0 - price)).abs() < 1e-9,
        "balance {balance}, price {price}"
    );
    host.close_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_low_balance_takes_the_declined_branch_and_books_nothing() {
    let dir = scratch("declined");
    // u2 has 40.00 EUR; the economy fare from Paris to Lyon is 47.00 EUR.
    assert_eq!(
        train_booking_server::tools::fare_cents("Paris", "Lyon", "economy"),
        4_700
    );
    let (outcome, _host) = run_example(&example_with(&dir, &[]), "u2").await;
    let outcome = outcome.unwrap();
    let text = outcome.results[0].1.to_json(&Default::default());
    assert_eq!(
        text,
        json!("declined: the account is invalid or the balance too low")
    );
    let tools: Vec<String> = calls(&dir)
        .iter()
        .map(|c| c["tool"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(tools, ["get_user", "quote_fare", "check_balance"]);
    assert_eq!(ledger_or_seed(&dir)["balances"]["acct-alan"], json!(40.0));
}

/// The ledger file, or the seed when nothing was saved (no change happened).
fn ledger_or_seed(dir: &Path) -> J {
    if dir.join("ledger.json").exists() {
        ledger(dir)
    } else {
        train_booking_server::Ledger::seeded().to_json()
    }
}

fn server(dir: &Path, extra: &[&str]) -> Arc<troupe_check::ir::McpServer> {
    let mut args = vec![
        "--ledger".to_owned(),
        dir.join("ledger.json").display().to_string(),
        "--call-log".to_owned(),
        dir.join("calls.jsonl").display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    Arc::new(troupe_check::ir::McpServer {
        name: "booking".into(),
        transport: troupe_check::ir::McpTransport::Stdio {
            command: SERVER.into(),
            args,
            env: vec![],
            cwd: None,
        },
        contracts: None,
        span: Default::default(),
    })
}

fn call(
    server: &Arc<troupe_check::ir::McpServer>,
    tool: &str,
    args: J,
) -> troupe_runtime::ToolCall {
    troupe_runtime::ToolCall {
        server: server.clone(),
        tool: tool.into(),
        arguments: args.as_object().unwrap().clone(),
        outputs: vec![troupe_llm::OutputSlot::new(
            "result",
            troupe_check::Type::Json,
        )],
        types: Arc::new(Default::default()),
        idempotency_key: format!("test/{tool}#0"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insufficient_funds_is_a_tool_error_and_a_missing_argument_is_never_sent() {
    let dir = scratch("errors");
    let booking = server(&dir, &[]);
    let host = McpToolHost::new();
    let args = json!({"user_id": "u2", "origin": "Paris", "destination": "Lyon",
                      "date": "2026-12-24", "class": "business", "price": 400.0});
    let err = host
        .call_tool(call(&booking, "book_ticket", args.clone()))
        .await
        .unwrap_err();
    match &err {
        McpError::ToolFailed {
            server,
            tool,
            message,
        } => {
            assert_eq!((server.as_str(), tool.as_str()), ("booking", "book_ticket"));
            assert!(message.contains("insufficient_funds"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(calls(&dir).len(), 1);

    let mut partial = args.as_object().unwrap().clone();
    partial.remove("price");
    partial.remove("date");
    let err = host
        .call_tool(call(&booking, "book_ticket", J::Object(partial)))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        McpError::MissingSlots {
            server: "booking".into(),
            tool: "book_ticket".into(),
            missing: vec!["date".into(), "price".into()],
        }
    );
    assert!(err.to_string().contains("`date`, `price`"), "{err}");
    // The server saw only the first call.
    assert_eq!(calls(&dir).len(), 1, "{:?}", calls(&dir));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_dies_mid_call_fails_the_run_with_its_location_and_the_next_call_reconnects()
{
    let dir = scratch("dies");
    let source = example_with(&dir, &["--die-on", "email_ticket"]);
    let (outcome, host) = run_example(&source, "u1").await;
    let line = source
        .lines()
        .position(|l| l.contains("act Agent: outcome = email_ticket"))
        .unwrap()
        + 1;
    match outcome {
        Err(RunError::Action { at, message, .. }) => {
            assert_eq!(at.lifeline, "Agent");
            assert_eq!(at.action.as_deref(), Some("email_ticket"));
            assert_eq!(at.line as usize, line);
            assert!(
                message.contains("MCP server `booking`, tool `email_ticket`"),
                "{message}"
            );
            assert!(message.contains("disconnected"), "{message}");
            assert!(
                message.contains("--die-on"),
                "the server's last words: {message}"
            );
        }
        other => panic!("expected an action error, got {other:?}"),
    }
    // The booking before the crash is in the ledger.
    assert_eq!(ledger(&dir)["tickets"][0]["id"], json!("T-0001"));
    // The host reconnects (a new process) on the next call.
    let user = host
        .call_tool(call(
            &server(&dir, &["--die-on", "email_ticket"]),
            "get_user",
            json!({"user_id": "u3"}),
        ))
        .await;
    assert!(user.is_ok(), "{user:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_between_declarations_and_the_server_is_reported_before_any_call() {
    let dir = scratch("drift");
    let source = example_with(&dir, &[])
        .replace(
            "tool print_ticket(ticket: Ticket) -> Text { server: booking }",
            "tool print_ticket(ticket: Ticket, copies: Int = 1) -> Text { server: booking }",
        )
        .replace(
            "enum TravelClass { economy, business }",
            "enum TravelClass { economy, business, first }",
        )
        .replace(
            "tool email_ticket(ticket: Ticket, address: Text) -> Text { server: booking }",
            "tool email_ticket(ticket: Ticket, address: Text) -> Text { server: booking, name: \"send_ticket\" }",
        );
    let (program, diags) = troupe_check::check_text(&source);
    let program = program.unwrap_or_else(|| panic!("{diags:?}"));
    let host = McpToolHost::for_program(&program);
    let errors: Vec<String> = host
        .check(&program)
        .await
        .iter()
        .map(|e| e.to_string())
        .collect();
    assert_eq!(errors.len(), 4, "{errors:#?}");
    assert!(errors.iter().any(|e| e.contains("tool `quote_fare`") && e.contains("parameter `class` is declared TravelClass whose value(s) `first` the server does not accept")), "{errors:#?}");
    assert!(
        errors.iter().any(|e| e.contains("tool `book_ticket`")
            && e.contains("parameter `class` is declared TravelClass")),
        "{errors:#?}"
    );
    assert!(
        errors.iter().any(|e| e.contains("tool `print_ticket`")
            && e.contains("parameter `ticket` field `class` is declared TravelClass")
            && e.contains("; the declared parameter `copies` is not in the server's input schema")),
        "{errors:#?}"
    );
    assert!(errors.iter().any(|e| e.contains("tool `send_ticket`: drift between the declaration and the server: (declared as `email_ticket`) the server has no tool `send_ticket`")), "{errors:#?}");
    // A run stops at the first drifted tool (quote_fare), which is never called.
    let engine = EngineBuilder::from_source(&source)
        .unwrap()
        .tools(Arc::new(host))
        .build()
        .unwrap();
    let ty = engine.program().workflows[0]
        .vars
        .iter()
        .find(|v| v.name == "class")
        .unwrap()
        .ty
        .clone();
    let mut values = inputs("u1");
    values.push(Value::parse("economy", &ty, &engine.program().types).unwrap());
    let err = engine.run(values, RunOptions::default()).await.unwrap_err();
    assert!(
        err.to_string().contains("action `quote_fare`") && err.to_string().contains("drift"),
        "{err}"
    );
    let tools: Vec<J> = calls(&dir).iter().map(|c| c["tool"].clone()).collect();
    assert_eq!(tools, [json!("get_user")]);
}

#[test]
fn the_tools_carry_contracts_that_lint_without_errors() {
    let tools = serde_json::to_value(train_booking_server::tools::definitions()).unwrap();
    let text = json!({"tools": tools}).to_string();
    let lists = troupe_contracts::mcp::parse_tool_lists("train-booking-server", &text).unwrap();
    let report = troupe_contracts::lint::lint(&lists[0]);
    assert_eq!(report.tools.len(), 6);
    assert!(report.tools.iter().all(|t| t.has_contract), "{report:#?}");
    let errors: Vec<_> = report
        .findings()
        .filter(|f| f.severity == troupe_contracts::lint::Severity::Error)
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let book = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "book_ticket")
        .unwrap();
    let contract: troupe_contracts::ToolContract =
        serde_json::from_value(book["_meta"][troupe_contracts::META_KEY].clone()).unwrap();
    assert!(contract.transactional && contract.requires_confirmation);
    assert!(
        contract
            .failure_modes
            .iter()
            .any(|m| m.name == "insufficient_funds")
    );
    assert_eq!(book["annotations"]["destructiveHint"], json!(true));
    assert_eq!(book["annotations"]["idempotentHint"], json!(false));
}
