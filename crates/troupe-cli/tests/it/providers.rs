//! End-to-end runs of an example through each real provider API, against a
//! fake provider on loopback: `troupe run --llm openai:…` and
//! `--llm anthropic:…` send real HTTP requests and parse real answers.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};

/// A minimal HTTP/1.1 server: one thread, keep-alive, JSON answers made by
/// `answer` from the request path and body. Records every request body.
fn fake_provider(
    answer: fn(&str, &serde_json::Value) -> serde_json::Value,
) -> (u16, Arc<Mutex<Vec<serde_json::Value>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let log = log.clone();
            std::thread::spawn(move || serve(stream, answer, &log));
        }
    });
    (port, seen)
}

fn serve(
    stream: TcpStream,
    answer: fn(&str, &serde_json::Value) -> serde_json::Value,
    log: &Mutex<Vec<serde_json::Value>>,
) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let path = request_line
            .split_whitespace()
            .nth(1)
            .unwrap_or("")
            .to_owned();
        let mut length = 0usize;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            if header == "\r\n" {
                break;
            }
            if let Some((k, v)) = header.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let body: serde_json::Value =
            serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
        log.lock().unwrap().push(body.clone());
        let reply = answer(&path, &body).to_string();
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            reply.len()
        );
        if out
            .write_all(head.as_bytes())
            .and_then(|()| out.write_all(reply.as_bytes()))
            .is_err()
        {
            return;
        }
    }
}

/// Structured requests (make_plan) get a plan that needs review; the rest text.
fn openai(_path: &str, body: &serde_json::Value) -> serde_json::Value {
    let content = if body.get("response_format").is_some() {
        serde_json::json!({"plan": "1. book the venue\n2. invite the team", "needs_review": true})
            .to_string()
    } else {
        "a fine answer".to_owned()
    };
    serde_json::json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-test",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}
    })
}

fn anthropic(_path: &str, body: &serde_json::Value) -> serde_json::Value {
    let content = if body.get("tool_choice").is_some() {
        serde_json::json!([{"type": "tool_use", "id": "toolu_1", "name": "answer",
                            "input": {"plan": "1. book the venue", "needs_review": false}}])
    } else {
        serde_json::json!([{"type": "text", "text": "a fine answer"}])
    };
    serde_json::json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": content, "stop_reason": "end_turn",
        "usage": {"input_tokens": 12, "output_tokens": 7}
    })
}

fn troupe(args: &[&str], env: &[(&str, String)]) -> std::process::Output {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_troupe"));
    cmd.args(args).current_dir(root).env("NO_COLOR", "1");
    for k in [
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
    ] {
        cmd.env_remove(k);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

#[test]
fn an_example_runs_through_the_openai_compatible_api() {
    let (port, seen) = fake_provider(openai);
    let out = troupe(
        &[
            "run",
            "examples/reviewed_execution.troupe",
            "-i",
            "task=plan an offsite",
            "--llm",
            "openai:gpt-test",
            "--json",
        ],
        &[
            ("OPENAI_API_KEY", "sk-test-secret".into()),
            ("OPENAI_BASE_URL", format!("http://127.0.0.1:{port}/v1")),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["results"]["answer"], "a fine answer");
    assert_eq!(doc["verified"], true);
    let bodies = seen.lock().unwrap();
    // make_plan, critique_plan (the plan needs review), execute, finalize.
    assert_eq!(bodies.len(), 4, "{bodies:?}");
    assert_eq!(bodies[0]["model"], "gpt-test");
    assert!(
        bodies[0]["response_format"]["json_schema"]["schema"]["properties"]["needs_review"]
            .is_object()
    );
    assert!(!stderr.contains("sk-test-secret"));
}

#[test]
fn an_example_runs_through_the_anthropic_api() {
    let (port, seen) = fake_provider(anthropic);
    let out = troupe(
        &[
            "run",
            "examples/reviewed_execution.troupe",
            "-i",
            "task=plan an offsite",
            "--llm",
            "anthropic:claude-test",
            "--json",
        ],
        &[
            ("ANTHROPIC_API_KEY", "sk-ant-secret".into()),
            ("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}")),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["results"]["answer"], "a fine answer");
    // No review was needed: make_plan, execute, finalize.
    assert_eq!(seen.lock().unwrap().len(), 3);
    assert!(!stderr.contains("sk-ant-secret"));
}
