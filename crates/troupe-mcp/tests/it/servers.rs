//! The host against real MCP servers over stdio: `mcp-server-time` (PyPI) and
//! `@modelcontextprotocol/server-everything` (npm), installed by
//! `.ci/install-mcp-servers.sh`. (The train booking server's tests, in its own
//! crate, cover the booking example, a server dying mid-call and the call log.)

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use support::*;
use troupe_check::Value;
use troupe_mcp::{McpError, McpToolHost};
use troupe_runtime::{EngineBuilder, RunError, RunOptions};

fn time_workflow() -> String {
    format!(
        r#"mcp time {{ command: {} args: ["--local-timezone", "UTC"] env: ["LANG=C"] }}
record TimeResult {{ timezone: Text, datetime: Text, day_of_week: Text, is_dst: Bool }}
tool get_current_time(timezone: Text) -> TimeResult {{ server: time, idempotent: true }}

workflow clock(tz: Text @ A) {{
  act A: now = get_current_time(tz)
  act A: day = now.day_of_week
  msg A(day) -> B(day)
  return day @ B
}}
"#,
        lit(&time_server())
    )
}

async fn run(source: &str, inputs: Vec<Value>) -> Result<troupe_runtime::RunOutcome, RunError> {
    let (program, diags) = troupe_check::check_text(source);
    let program = program.unwrap_or_else(|| panic!("{diags:?}"));
    let engine = EngineBuilder::from_source(source)
        .unwrap()
        .tools(Arc::new(McpToolHost::for_program(&program)))
        .build()
        .unwrap();
    tokio::time::timeout(
        Duration::from_secs(120),
        engine.run(inputs, RunOptions::default()),
    )
    .await
    .expect("the run hung")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn structured_content_becomes_a_record_through_a_run() {
    let outcome = run(&time_workflow(), vec![Value::text("Europe/Paris")])
        .await
        .unwrap();
    let day = outcome.results[0].1.to_json(&Default::default());
    let days = [
        "Monday",
        "Tuesday",
        "Wednesday",
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
    ];
    assert!(days.iter().any(|d| json!(d) == day), "{day}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_error_fails_the_run_with_the_servers_message_and_location() {
    let err = run(&time_workflow(), vec![Value::text("Not/AZone")])
        .await
        .unwrap_err();
    match err {
        RunError::Action { at, message, .. } => {
            assert_eq!(at.lifeline, "A");
            assert_eq!(at.action.as_deref(), Some("get_current_time"));
            assert_eq!(at.line, 6);
            assert!(
                message.contains("MCP server `time`, tool `get_current_time` failed"),
                "{message}"
            );
            assert!(message.contains("Not/AZone"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_unknown_tool_wrong_type_and_missing_parameter() {
    let source = format!(
        r#"mcp time {{ command: {} }}
tool get_time(timezone: Text) -> Json {{ server: time }}
tool get_current_time(timezone: Int) -> Json {{ server: time }}
tool convert_time(source_timezone: Text, time: Text) -> Json {{ server: time }}

workflow w(tz: Text @ A) {{
  act A: now = get_time(tz)
  return now @ A
}}
"#,
        lit(&time_server())
    );
    let (program, _) = troupe_check::check_text(&source);
    let program = program.unwrap();
    let host = McpToolHost::for_program(&program);
    let errors = host.check(&program).await;
    let text: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
    assert_eq!(errors.len(), 3, "{text:#?}");
    assert!(errors.iter().all(|e| e.kind() == "drift"), "{text:#?}");
    assert!(text.iter().any(|e| e.contains("tool `get_time`") && e.contains("the server has no tool `get_time`; it offers `convert_time`, `get_current_time`")), "{text:#?}");
    assert!(
        text.iter().any(|e| e.contains("tool `get_current_time`")
            && e.contains("parameter `timezone` is declared Int but the server expects string")),
        "{text:#?}"
    );
    assert!(
        text.iter().any(|e| e.contains("tool `convert_time`")
            && e.contains("requires the parameter `target_timezone`, which the declaration lacks")),
        "{text:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_server_missing_arguments_defaults_and_text_results() {
    let everything = stdio("everything", &everything_server(), &[]);
    let host = McpToolHost::new();
    // `echo` requires `message`: refused before any call.
    let err = host
        .call_tool(call(&everything, "echo", json!({})))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        McpError::MissingSlots {
            server: "everything".into(),
            tool: "echo".into(),
            missing: vec!["message".into()]
        }
    );
    // An argument outside the schema's enum is refused too.
    let err = host
        .call_tool(call(
            &everything,
            "get-structured-content",
            json!({"location": "Atlantis"}),
        ))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "invalid_argument", "{err}");
    // A text result for a Json output: the text as a JSON string.
    let v = host
        .call_tool(call(&everything, "echo", json!({"message": "hi"})))
        .await
        .unwrap();
    assert_eq!(v[0].to_json(&Default::default()), json!("Echo: hi"));
    host.close_all().await;

    // Through a program: a default for a required parameter is drift.
    let source = format!(
        r#"mcp everything {{ command: {} }}
tool echo(message: Text = "hello") -> Text {{ server: everything }}
record Weather {{ temperature: Float, conditions: Text, humidity: Float }}
tool weather(location: Text) -> Weather {{ server: everything, name: "get-structured-content" }}
tool sum(a: Float, b: Float) -> Text {{ server: everything, name: "get-sum" }}

workflow w(place: Text @ A) {{
  act A: report = weather(place)
  act A: s = sum(report.temperature, 1)
  act A: said = echo()
  return s @ A
}}
"#,
        lit(&everything_server())
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
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0].contains("tool `echo`")
            && errors[0].contains(
                "requires the parameter `message`, but the declaration gives it a default"
            ),
        "{errors:#?}"
    );
    let err = run(&source, vec![Value::text("Chicago")])
        .await
        .unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("action `echo`") && message.contains("drift"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn structured_weather_and_sum_through_a_run() {
    let source = format!(
        r#"mcp everything {{ command: {} }}
record Weather {{ temperature: Float, conditions: Text, humidity: Float }}
tool weather(location: Text) -> Weather {{ server: everything, name: "get-structured-content" }}
tool sum(a: Float, b: Float) -> Text {{ server: everything, name: "get-sum" }}

workflow w(place: Text @ A) {{
  act A: report = weather(place)
  act A: s = sum(report.humidity, 1)
  return (s @ A, report @ A)
}}
"#,
        lit(&everything_server())
    );
    let outcome = run(&source, vec![Value::text("Chicago")]).await.unwrap();
    let s = outcome.results[0].1.to_json(&Default::default());
    assert!(
        s.as_str().is_some_and(|s| s.starts_with("The sum of")),
        "{s}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_server_is_a_clear_error_not_a_hang() {
    let missing = stdio(
        "nowhere",
        std::path::Path::new("/nonexistent/mcp-server"),
        &[],
    );
    let err = McpToolHost::new()
        .call_tool(call(&missing, "x", json!({})))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "spawn");
    assert!(
        err.to_string()
            .contains("MCP server `nowhere`: cannot start `/nonexistent/mcp-server`"),
        "{err}"
    );
    // A process that exits at once (not an MCP server).
    let sh = stdio(
        "shell",
        std::path::Path::new("/bin/sh"),
        &["-c", "echo broken >&2; exit 1"],
    );
    let err = McpToolHost::new()
        .call_tool(call(&sh, "x", json!({})))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "connect", "{err}");
    assert!(err.to_string().contains("broken"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_http_to_server_everything() {
    // A free port on the loopback interface, then the server on it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = tokio::process::Command::new(everything_server())
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "server-everything did not listen on {port}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let server = Arc::new(troupe_check::ir::McpServer {
        name: "remote".into(),
        transport: troupe_check::ir::McpTransport::Http {
            url: format!("http://127.0.0.1:{port}/mcp"),
        },
        contracts: None,
        span: Default::default(),
    });
    let host = McpToolHost::new();
    let v = host
        .call_tool(call(&server, "echo", json!({"message": "over http"})))
        .await
        .unwrap();
    assert_eq!(v[0].to_json(&Default::default()), json!("Echo: over http"));
    let err = host
        .call_tool(call(&server, "echo", json!({})))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "missing_slots");
    host.close_all().await;
    let _ = child.kill().await;
}
