//! `troupe fork` on the binary: a four-step run (model, effect, model,
//! effect) against a fake OpenAI-compatible server on loopback, forked at
//! each step. What reached the model server (its own request log) and what
//! the effect command did (its own ledger) prove that the steps before the
//! cut were taken from the recorded run and the others performed live; the
//! fork records its lineage and verifies.

use crate::support::{Project, said};
use serde_json::{Value, json};
use std::io::Write;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

const WORKFLOW: &str = r#"
llm draft(topic: Text) -> (text: Text) { prompt: "Draft about {topic}" }
effect log_note(note: Text) -> Int extern

workflow four(topic: Text @ A) {
  lifelines A, B
  act A: t1 = draft(topic)
  act A: r1 = log_note(t1)
  msg A(t1) -> B(t1)
  act B: t2 = draft(t1)
  act B: r2 = log_note(t2)
  msg B(t2) -> A(t2)
  return t2 @ A
}
"#;

/// A fake chat-completions server: every request body it receives is
/// logged; it answers `A note on …` with the request's last words.
fn model_server() -> (u16, Arc<Mutex<Vec<Value>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let (_, body) = crate::support::read_request(&stream);
            let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            log.lock().unwrap().push(request);
            let text = json!({
                "id": "c", "object": "chat.completion", "model": "gpt-4o-mini",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "a note"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
            })
            .to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    });
    (port, seen)
}

fn project() -> Project {
    let p = Project::new();
    p.write("four.troupe", WORKFLOW);
    let script = format!(
        "read -r j; echo \"$TROUPE_IDEMPOTENCY_KEY\" >> '{}'; echo 1",
        p.path().join("effects").display()
    );
    p.write(
        "troupe.toml",
        &format!(
            "[externs.log_note]\ncommand = [\"sh\", \"-c\", {}]\n",
            serde_json::Value::String(script)
        ),
    );
    p
}

fn troupe(p: &Project, port: u16, args: &[&str]) -> std::process::Output {
    p.cmd(args)
        .env("OPENAI_BASE_URL", format!("http://127.0.0.1:{port}/v1"))
        .env("OPENAI_API_KEY", "sk-test")
        .output()
        .unwrap()
}

fn json_of(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", said(out)))
}

/// The run's identity, the stem of its effects' keys.
fn uid(p: &Project, port: u16, run: &str) -> String {
    let doc = json_of(&troupe(
        p,
        port,
        &["status", run, "--store", "db", "--json"],
    ));
    doc["uid"].as_str().unwrap().to_owned()
}

#[test]
fn a_fork_takes_the_steps_before_its_cut_and_performs_the_rest_live() {
    let p = project();
    let (port, requests) = model_server();
    let calls = || requests.lock().unwrap().len();
    let effects = || {
        p.read("effects")
            .lines()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let first = troupe(
        &p,
        port,
        &[
            "run",
            "four.troupe",
            "--store",
            "db",
            "-i",
            "topic=tea",
            "--llm",
            "openai:gpt-4o-mini",
            "--json",
        ],
    );
    assert!(first.status.success(), "{}", said(&first));
    assert_eq!(calls(), 2);
    assert_eq!(effects().len(), 2);

    // (fork `--at`, the run's name, model calls, effects, by whom)
    let cases: [(Option<&str>, &str, usize, &[&str]); 4] = [
        // At the third step: the first model call and the first effect
        // are taken; B's call and effect are performed.
        (Some("3"), "run-2", 1, &["B/log_note#0"]),
        // The same cut by key.
        (Some("B/draft#0"), "run-3", 1, &["B/log_note#0"]),
        // At the first: everything live.
        (Some("1"), "run-4", 2, &["A/log_note#0", "B/log_note#0"]),
        // Without `--at`: everything taken.
        (None, "run-5", 0, &[]),
    ];
    for (at, name, new_calls, new_effects) in cases {
        let (calls_before, effects_before) = (calls(), effects().len());
        let mut args = vec!["fork", "run-1", "--store", "db", "--json"];
        if let Some(at) = at {
            args.extend(["--at", at]);
        }
        let out = troupe(&p, port, &args);
        assert!(out.status.success(), "{at:?}: {}", said(&out));
        let doc = json_of(&out);
        assert_eq!(doc["run"], name, "{doc}");
        assert_eq!(doc["results"]["t2"], "a note", "{doc}");
        assert_eq!(calls() - calls_before, new_calls, "{at:?}: model calls");
        // The effects performed, keyed by the fork's own identity.
        let stem = uid(&p, port, name);
        let performed: Vec<String> = effects()[effects_before..].to_vec();
        let expected: Vec<String> = new_effects.iter().map(|s| format!("{stem}/{s}")).collect();
        assert_eq!(performed, expected, "{at:?}");
        // Its lineage, and a verified recorded execution.
        let status = json_of(&troupe(
            &p,
            port,
            &["status", name, "--store", "db", "--json"],
        ));
        assert_eq!(status["lineage"]["forked_from"], "run-1", "{status}");
        let live_from = match at {
            Some("3") | Some("B/draft#0") => json!("B/draft#0"),
            Some("1") => json!("A/draft#0"),
            _ => Value::Null,
        };
        assert_eq!(status["lineage"]["at"], live_from, "{status}");
        let verify = troupe(&p, port, &["verify", name, "--store", "db"]);
        assert!(verify.status.success(), "{}", said(&verify));
    }
    // The second model call of the fork at step 3 was B's, not A's: its
    // prompt drafts about A's recorded note.
    let log = requests.lock().unwrap();
    let prompt = log[2]["messages"].to_string();
    assert!(prompt.contains("Draft about a note"), "{prompt}");

    // Out of range, an unknown key, an unknown run: clear refusals.
    for args in [
        vec!["fork", "run-1", "--at", "9", "--store", "db"],
        vec!["fork", "run-1", "--at", "A/nothing#0", "--store", "db"],
        vec!["fork", "run-77", "--store", "db"],
    ] {
        let out = troupe(&p, port, &args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", said(&out));
        assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
    }
}
