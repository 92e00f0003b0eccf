//! Model calls are recorded with the run (issue #17): the binary runs a
//! workflow against fake OpenAI-compatible and Anthropic servers on
//! loopback (the first request of each is refused with a 429), and
//! `troupe status --json`, `troupe trace --json` and `troupe runs --json`
//! show each call's prompt, raw answer, token counts (cached ones too),
//! latency, the retry and its cause, and the cost from the price table —
//! computed here from the list prices and the tokens the fakes reported.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const WORKFLOW: &str = r#"
llm draft(topic: Text) -> (text: Text) {
  system: "You write short notes."
  prompt: "Write a note on {topic}"
}
llm review(text: Text) -> (notes: Text) {
  prompt: "Review this note: {text}"
}

workflow notes(topic: Text @ Writer) {
  lifelines Writer, Reviewer
  act Writer: text = draft(topic)
  msg Writer(text) -> Reviewer(text)
  act Reviewer: notes = review(text)
  return notes @ Reviewer
}
"#;

/// A provider that answers 429 to its first request, then `body`.
fn provider(body: Value) -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(stream) = stream else { continue };
            let path = answer(stream, n, &body);
            log.lock().unwrap().push(path);
        }
    });
    (port, seen)
}

fn answer(mut stream: TcpStream, n: usize, body: &Value) -> String {
    let (path, _request) = crate::support::read_request(&stream);
    let (status, text) = if n == 0 {
        (
            "429 Too Many Requests\r\nretry-after-ms: 20",
            json!({"error": {"message": "slow down", "type": "rate_limit"}}).to_string(),
        )
    } else {
        ("200 OK", body.to_string())
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
        text.len()
    );
    path
}

fn troupe(dir: &Path, env: &[(&str, String)], args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_troupe"));
    cmd.args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "troupe {args:?} hangs"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "troupe {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn json_out(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn model_calls_are_recorded_with_tokens_latency_retries_and_cost() {
    let (openai, openai_seen) = provider(json!({
        "id": "c1", "object": "chat.completion", "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Cake is good."}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1200, "completion_tokens": 300, "total_tokens": 1500,
                  "prompt_tokens_details": {"cached_tokens": 1000}}
    }));
    let (anthropic, anthropic_seen) = provider(json!({
        "id": "m1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
        "content": [{"type": "text", "text": "Add a date."}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 40, "output_tokens": 8, "cache_read_input_tokens": 60}
    }));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.troupe"), WORKFLOW).unwrap();
    let env = [
        ("OPENAI_BASE_URL", format!("http://127.0.0.1:{openai}/v1")),
        ("OPENAI_API_KEY", "sk-test".to_owned()),
        (
            "ANTHROPIC_BASE_URL",
            format!("http://127.0.0.1:{anthropic}"),
        ),
        ("ANTHROPIC_API_KEY", "sk-ant-test".to_owned()),
    ];
    troupe(
        dir.path(),
        &env,
        &[
            "run",
            "notes.troupe",
            "--store",
            "s.db",
            "-i",
            "topic=cake",
            "--llm-for",
            "Writer=openai:gpt-4o-mini",
            "--llm-for",
            "Reviewer=anthropic:claude-haiku-4-5",
        ],
    );
    assert_eq!(
        openai_seen.lock().unwrap().len(),
        2,
        "a 429, then the answer"
    );
    assert_eq!(anthropic_seen.lock().unwrap().len(), 2);

    let status = json_out(&troupe(
        dir.path(),
        &env,
        &["status", "run-1", "--store", "s.db", "--json"],
    ));
    let calls = status["llm_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2, "{status}");
    let (draft, review) = (&calls[0], &calls[1]);
    assert_eq!(draft["step"], "Writer/draft#0");
    assert_eq!(draft["model"], "openai:gpt-4o-mini");
    assert_eq!(draft["system"], "You write short notes.");
    assert_eq!(draft["prompt"], "Write a note on cake");
    assert_eq!(draft["answer"], "Cake is good.");
    assert_eq!(draft["outputs"], json!(["Cake is good."]));
    assert_eq!(
        (
            &draft["input_tokens"],
            &draft["output_tokens"],
            &draft["cached_input_tokens"]
        ),
        (&json!(1200), &json!(300), &json!(1000))
    );
    assert_eq!(draft["attempts"], 2);
    let retries = draft["retries"].as_array().unwrap();
    assert_eq!(retries.len(), 1);
    assert!(retries[0].as_str().unwrap().contains("429"), "{retries:?}");
    // gpt-4o-mini: $0.15 per 1M input, $0.075 cached, $0.60 output.
    let expected = (200.0 * 0.15 + 1000.0 * 0.075 + 300.0 * 0.60) / 1e6;
    assert!(
        (draft["cost_usd"].as_f64().unwrap() - expected).abs() < 1e-12,
        "{draft}"
    );
    assert!(draft["latency_ms"].as_u64().is_some());
    // Anthropic reports cache reads beside the uncached input.
    assert_eq!(review["model"], "anthropic:claude-haiku-4-5");
    assert_eq!(
        (&review["input_tokens"], &review["cached_input_tokens"]),
        (&json!(100), &json!(60))
    );
    let expected_review = (40.0 * 1.00 + 60.0 * 0.10 + 8.0 * 5.00) / 1e6;
    assert!((review["cost_usd"].as_f64().unwrap() - expected_review).abs() < 1e-12);
    let totals = &status["totals"];
    assert_eq!(totals["llm_calls"], 2);
    assert_eq!(totals["input_tokens"], 1300);
    assert!((totals["cost_usd"].as_f64().unwrap() - expected - expected_review).abs() < 1e-12);

    // The trace's JSON lines end with the calls.
    let trace = troupe(
        dir.path(),
        &env,
        &["trace", "run-1", "--store", "s.db", "--json"],
    );
    let lines: Vec<Value> = String::from_utf8_lossy(&trace.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let in_trace: Vec<&Value> = lines.iter().filter(|l| l["kind"] == "llm_call").collect();
    assert_eq!(in_trace.len(), 2);
    assert_eq!(in_trace[1]["answer"], "Add a date.");

    // Per-run totals in the listing; a resumed (finished) run calls nothing again.
    let runs = json_out(&troupe(
        dir.path(),
        &env,
        &["runs", "--store", "s.db", "--json"],
    ));
    assert_eq!(runs[0]["totals"]["llm_calls"], 2);
    assert_eq!(runs[0]["totals"]["output_tokens"], 308);
    let text = troupe(dir.path(), &env, &["status", "run-1", "--store", "s.db"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("2 call(s)"), "{text}");
    assert!(text.contains("429"), "{text}");
}

/// A collector: the JSON bodies POSTed to /v1/traces.
pub(crate) fn collector() -> (u16, Arc<Mutex<Vec<Value>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let got = Arc::new(Mutex::new(Vec::new()));
    let log = got.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let mut length = 0;
            loop {
                let mut h = String::new();
                reader.read_line(&mut h).unwrap();
                if h.trim().is_empty() {
                    break;
                }
                if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            if line.contains("/v1/traces") {
                log.lock()
                    .unwrap()
                    .push(serde_json::from_slice(&body).unwrap());
            }
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{{}}"
            );
        }
    });
    (port, got)
}

/// A span as the collector got it.
#[derive(Debug, Clone)]
pub(crate) struct Span {
    pub(crate) trace: String,
    pub(crate) id: String,
    pub(crate) parent: String,
    pub(crate) name: String,
    /// OTLP's span kind (3: CLIENT) and status code (2: ERROR).
    pub(crate) kind: i64,
    pub(crate) status: i64,
    pub(crate) attributes: Vec<(String, String)>,
    /// Each attribute's OTLP value type (`intValue`, `stringValue`, …).
    types: Vec<(String, String)>,
}

pub(crate) fn spans(bodies: &[Value]) -> Vec<Span> {
    let mut out = Vec::new();
    for body in bodies {
        for rs in body["resourceSpans"].as_array().into_iter().flatten() {
            for ss in rs["scopeSpans"].as_array().into_iter().flatten() {
                for s in ss["spans"].as_array().into_iter().flatten() {
                    let attributes = s["attributes"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|a| {
                            let v = &a["value"];
                            let v = ["stringValue", "intValue", "boolValue", "doubleValue"]
                                .iter()
                                .find_map(|k| v.get(*k))
                                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                                .unwrap_or_default();
                            (a["key"].as_str().unwrap_or("").to_owned(), v)
                        })
                        .collect();
                    let types = s["attributes"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|a| {
                            let ty = a["value"]
                                .as_object()
                                .and_then(|o| o.keys().next().cloned())
                                .unwrap_or_default();
                            (a["key"].as_str().unwrap_or("").to_owned(), ty)
                        })
                        .collect();
                    out.push(Span {
                        kind: s["kind"].as_i64().unwrap_or(0),
                        status: s["status"]["code"].as_i64().unwrap_or(0),
                        types,
                        trace: s["traceId"].as_str().unwrap_or("").to_owned(),
                        id: s["spanId"].as_str().unwrap_or("").to_owned(),
                        parent: s["parentSpanId"].as_str().unwrap_or("").to_owned(),
                        name: s["name"].as_str().unwrap_or("").to_owned(),
                        attributes,
                    });
                }
            }
        }
    }
    out
}

pub(crate) fn attr(s: &Span, k: &str) -> Option<String> {
    s.attributes
        .iter()
        .find(|(key, _)| key == k)
        .map(|(_, v)| v.clone())
}

fn attr_type(s: &Span, k: &str) -> Option<String> {
    s.types
        .iter()
        .find(|(key, _)| key == k)
        .map(|(_, v)| v.clone())
}

/// A run whose model refuses every request (401): the model call's span
/// and the run's are ERROR, each with its `error.type`.
#[test]
fn a_failed_run_and_its_model_call_are_error_spans_over_otlp() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let openai = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let _ = crate::support::read_request(&stream);
            let text = json!({"error": {"message": "bad key", "type": "invalid_request_error"}})
                .to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    });
    let (port, bodies) = collector();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.troupe"), WORKFLOW).unwrap();
    let env = [
        ("OPENAI_BASE_URL", format!("http://127.0.0.1:{openai}/v1")),
        ("OPENAI_API_KEY", "sk-test".to_owned()),
    ];
    let otlp = format!("http://127.0.0.1:{port}");
    let out = Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args([
            "run",
            "notes.troupe",
            "-i",
            "topic=cake",
            "--llm-for",
            "Writer=openai:gpt-4o-mini",
            "--otlp",
            &otlp,
        ])
        .current_dir(dir.path())
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "the run fails");
    let spans = spans(&bodies.lock().unwrap());
    let call = spans
        .iter()
        .find(|s| s.name == "chat gpt-4o-mini")
        .unwrap_or_else(|| panic!("no model call span: {spans:#?}"));
    assert_eq!(call.status, 2, "an ERROR span: {call:#?}");
    assert_eq!(attr(call, "error.type").as_deref(), Some("permanent"));
    let run = spans.iter().find(|s| s.name == "run").expect("a run span");
    assert_eq!(run.status, 2, "an ERROR span: {run:#?}");
    assert_eq!(attr(run, "error.type").as_deref(), Some("action"));
}

#[test]
fn a_run_is_one_trace_of_nested_spans_with_genai_attributes_over_otlp() {
    let (openai, _) = provider(json!({
        "id": "c1", "object": "chat.completion", "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Fine."}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 21, "completion_tokens": 4, "total_tokens": 25}
    }));
    let (port, bodies) = collector();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.troupe"), WORKFLOW).unwrap();
    let env = [
        ("OPENAI_BASE_URL", format!("http://127.0.0.1:{openai}/v1")),
        ("OPENAI_API_KEY", "sk-test".to_owned()),
    ];
    let otlp = format!("http://127.0.0.1:{port}");
    troupe(
        dir.path(),
        &env,
        &[
            "run",
            "notes.troupe",
            "-i",
            "topic=cake",
            "--llm-for",
            "Writer=openai:gpt-4o-mini",
            "--otlp",
            &otlp,
        ],
    );
    // The command flushes before it exits.
    let spans = spans(&bodies.lock().unwrap());
    let run: Vec<&Span> = spans.iter().filter(|s| s.name == "run").collect();
    assert_eq!(run.len(), 1, "one run span: {spans:#?}");
    let run = run[0];
    assert!(spans.iter().all(|s| s.trace == run.trace), "one trace");
    let by_id = |id: &str| spans.iter().find(|s| s.id == id);
    // The GenAI conventions: a CLIENT span `chat MODEL`, the provider and
    // the bare model apart, token counts as integers.
    let call = spans
        .iter()
        .find(|s| s.name == "chat gpt-4o-mini")
        .unwrap_or_else(|| panic!("no `chat gpt-4o-mini` span: {spans:#?}"));
    assert_eq!(call.kind, 3, "a CLIENT span");
    assert_eq!(call.status, 0, "not an error");
    assert_eq!(
        attr(call, "gen_ai.provider.name").as_deref(),
        Some("openai")
    );
    assert_eq!(
        attr(call, "gen_ai.request.model").as_deref(),
        Some("gpt-4o-mini")
    );
    assert_eq!(
        attr(call, "gen_ai.usage.input_tokens").as_deref(),
        Some("21")
    );
    assert_eq!(
        attr(call, "gen_ai.usage.output_tokens").as_deref(),
        Some("4")
    );
    for k in ["gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"] {
        assert_eq!(attr_type(call, k).as_deref(), Some("intValue"), "{k}");
    }
    assert_eq!(attr(call, "gen_ai.operation.name").as_deref(), Some("chat"));
    // The mock model's call of the other lifeline is its own provider.
    assert!(
        spans
            .iter()
            .any(|s| s.name == "chat mock"
                && attr(s, "gen_ai.provider.name").as_deref() == Some("mock")),
        "{spans:#?}"
    );
    // troupe's spans only: no library's.
    let ours = ["run", "lifeline", "step", "chat gpt-4o-mini", "chat mock"];
    assert!(
        spans.iter().all(|s| ours.contains(&s.name.as_str())),
        "a foreign span: {:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    // Nested: model call → step → lifeline → run.
    let step = by_id(&call.parent).expect("the call's parent");
    assert_eq!(step.name, "step");
    assert_eq!(attr(step, "step").as_deref(), Some("Writer/draft#0"));
    let lifeline = by_id(&step.parent).expect("the step's parent");
    assert_eq!(lifeline.name, "lifeline");
    assert_eq!(attr(lifeline, "lifeline").as_deref(), Some("Writer"));
    assert_eq!(lifeline.parent, run.id);
    assert!(attr(run, "workflow").as_deref() == Some("notes"));
}
