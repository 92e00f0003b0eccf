//! `troupe mcp serve`: the server driven by an rmcp client over an in-process
//! pipe (the stdio transport's byte streams), and by a client of another SDK
//! (the official Python `mcp` package) over Streamable HTTP on 127.0.0.1.

use crate::support;

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
    ProtocolVersion, ReadResourceRequestParams, ResourceContents,
};
use rmcp::service::{RoleClient, RunningService};
use serde_json::{Value as J, json};
use troupe_mcp::serve::{ServeOptions, Server};

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// A fresh store path under the system's temporary directory.
fn temp_store(tag: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "troupe-mcp-serve-{}-{tag}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir.join("troupe.db")
}

fn server(tag: &str) -> (Server, PathBuf) {
    let store = temp_store(tag);
    let options = ServeOptions {
        store: store.clone(),
        deadline: Duration::from_secs(10),
        mock_externs: true,
        ..ServeOptions::new(vec![
            examples().join("counter.troupe"),
            examples().join("local_approval.troupe"),
        ])
    };
    (Server::new(&options).expect("the server starts"), store)
}

type Client = RunningService<RoleClient, ClientConfig>;

async fn connect(server: Server) -> Client {
    let (client_end, server_end) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(server_end);
    tokio::spawn(server.serve_io(read, write));
    let (read, write) = tokio::io::split(client_end);
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("serve-test", "0"),
    )
    .with_protocol_version(ProtocolVersion::V_2025_11_25)
    .serve((read, write))
    .await
    .expect("the handshake succeeds")
}

async fn call(client: &Client, tool: &str, args: J) -> CallToolResult {
    let J::Object(args) = args else {
        panic!("arguments must be an object")
    };
    client
        .peer()
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args))
        .await
        .expect("the call is answered")
}

/// The document of a workflow call's error result (an unfinished or failed
/// run): JSON text, and no structured content, which is the results'.
fn error_doc(r: &CallToolResult) -> J {
    assert_eq!(r.is_error, Some(true), "{r:?}");
    assert_eq!(r.structured_content, None, "{r:?}");
    let text = r.content.first().and_then(|c| c.as_text()).expect("text");
    serde_json::from_str(&text.text).expect("JSON")
}

async fn read(client: &Client, uri: &str) -> (String, Option<String>) {
    let result = client
        .peer()
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
        .unwrap_or_else(|e| panic!("{uri}: {e}"));
    match result.contents.into_iter().next() {
        Some(ResourceContents::TextResourceContents {
            text, mime_type, ..
        }) => (text, mime_type),
        other => panic!("{uri}: unexpected contents {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_client_lists_calls_answers_and_reads() {
    let (server, store) = server("rmcp");
    let client = connect(server).await;

    let tools = client.peer().list_all_tools().await.expect("tools/list");
    let names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
    assert_eq!(
        names,
        [
            "counter",
            "local_approval",
            "answer_task",
            "list_tasks",
            "get_run"
        ]
    );
    let counter = &tools[0];
    assert_eq!(counter.input_schema["required"], json!(["limit"]));
    // Annotations from what the workflow reaches: the counter touches
    // nothing outside its run; the approval records a decision with an
    // `extern` effect.
    let hints = |t: &rmcp::model::Tool| {
        let a = t.annotations.clone().expect("annotations");
        (
            a.read_only_hint,
            a.destructive_hint,
            a.idempotent_hint,
            a.open_world_hint,
        )
    };
    assert_eq!(
        hints(counter),
        (Some(true), Some(false), Some(false), Some(false))
    );
    assert_eq!(
        hints(&tools[1]),
        (Some(false), Some(true), Some(false), Some(false))
    );
    assert_eq!(
        counter.input_schema["properties"]["limit"],
        json!({"type": "integer"})
    );
    assert!(
        counter
            .description
            .as_deref()
            .is_some_and(|d| d.starts_with("Counter loop: Ping and Pong")),
        "{:?}",
        counter.description
    );
    assert_eq!(
        tools[1].input_schema["properties"]["request"],
        json!({"type": "string"})
    );
    // The output schema is the results object of a finished run.
    assert_eq!(
        counter.output_schema.as_deref().cloned().map(J::Object),
        Some(json!({
            "type": "object",
            "properties": {"k": {"type": "integer"}},
            "required": ["k"],
            "additionalProperties": false
        }))
    );
    // The description is the file's comment without its command lines.
    assert!(
        counter
            .description
            .as_deref()
            .is_some_and(|d| !d.contains("troupe run")),
        "{:?}",
        counter.description
    );

    // A run that ends within the deadline: its results.
    let done = call(&client, "counter", json!({"limit": 3})).await;
    assert_eq!(done.is_error, Some(false), "{done:?}");
    assert_eq!(done.structured_content, Some(json!({"k": 3})));
    assert_eq!(
        done.meta.as_ref().map(|m| m.0["troupe/run"].clone()),
        Some(json!("run-1"))
    );

    // Bad inputs are tool errors, not protocol errors.
    let bad = call(&client, "counter", json!({"limit": "three"})).await;
    assert_eq!(bad.is_error, Some(true));
    let missing = call(&client, "counter", json!({})).await;
    assert_eq!(missing.is_error, Some(true));
    let extra = call(&client, "counter", json!({"limit": 1, "other": 2})).await;
    assert_eq!(extra.is_error, Some(true));
    // An unknown tool is a protocol error (-32602).
    let unknown = client
        .peer()
        .call_tool(CallToolRequestParams::new("nope"))
        .await;
    assert!(unknown.is_err(), "{unknown:?}");

    // A run that waits on a person: its id, status and tasks.
    let waiting = call(&client, "local_approval", json!({"request": "buy a plant"})).await;
    let doc = error_doc(&waiting);
    assert_eq!(doc["status"], "waiting", "{doc}");
    // Not the tool's output (whose schema is the results'): an error
    // result that says how to get them.
    assert_eq!(waiting.is_error, Some(true), "{doc}");
    assert!(
        doc["next"].as_str().is_some_and(|n| n.contains("get_run")),
        "{doc}"
    );
    // Inputs are checked before anything is recorded: the rejected calls made no runs.
    assert_eq!(doc["run"], "run-2", "{doc}");
    let tasks = doc["tasks"].as_array().expect("tasks");
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0]["kind"], "confirm");
    assert!(
        tasks[0]["prompt"]
            .as_str()
            .is_some_and(|p| p.contains("buy a plant"))
    );
    let task = tasks[0]["task"].as_str().expect("task id").to_owned();

    let listed = call(&client, "list_tasks", json!({})).await;
    assert_eq!(
        listed.structured_content.expect("structured")["tasks"][0]["task"],
        json!(task)
    );

    // Answers are validated as `troupe answer` validates them.
    let wrong = call(
        &client,
        "answer_task",
        json!({"task": task, "answer": "yes"}),
    )
    .await;
    assert_eq!(wrong.is_error, Some(true));
    let why = format!("{:?}", wrong.content);
    assert!(why.contains("a confirmation (yes or no)"), "{why}");
    // A wrongly typed answer leaves the task pending.
    let listed = call(&client, "list_tasks", json!({})).await;
    assert_eq!(
        listed.structured_content.expect("structured")["tasks"][0]["task"],
        json!(task)
    );
    let no_task = call(
        &client,
        "answer_task",
        json!({"task": "task-99", "answer": true}),
    )
    .await;
    assert_eq!(no_task.is_error, Some(true));
    let answered = call(
        &client,
        "answer_task",
        json!({"task": task, "answer": true}),
    )
    .await;
    assert_eq!(answered.is_error, Some(false), "{answered:?}");
    let doc = answered.structured_content.expect("structured");
    assert_eq!(doc["status"], "done", "{doc}");
    assert_eq!(doc["results"], json!({"approved": true}));
    assert_eq!(doc["answered"], json!(task));
    let again = call(
        &client,
        "answer_task",
        json!({"task": task, "answer": false}),
    )
    .await;
    assert_eq!(again.is_error, Some(true), "a task is answered once");

    // The run as resources.
    let (text, mime) = read(&client, "troupe://runs/2").await;
    assert_eq!(mime.as_deref(), Some("application/json"));
    let run: J = serde_json::from_str(&text).expect("JSON");
    assert_eq!(run["status"], "done", "{run}");
    assert_eq!(run["results"], json!({"approved": true}));
    assert_eq!(run["inputs"], json!({"request": "buy a plant"}));

    let (chart, mime) = read(&client, "troupe://runs/2/chart").await;
    assert_eq!(mime.as_deref(), Some("text/x-mermaid"));
    assert!(chart.starts_with("sequenceDiagram"), "{chart}");
    for lifeline in ["Requester", "Approver", "Ledger"] {
        assert!(chart.contains(lifeline), "{chart}");
    }

    let (trace, _) = read(&client, "troupe://runs/2/trace").await;
    let trace: J = serde_json::from_str(&trace).expect("JSON");
    assert!(trace.as_array().is_some_and(|a| !a.is_empty()));

    let (list, _) = read(&client, "troupe://runs").await;
    let list: J = serde_json::from_str(&list).expect("JSON");
    assert_eq!(list.as_array().map(Vec::len), Some(2), "{list}");

    let resources = client.peer().list_all_resources().await.expect("list");
    let uris: Vec<_> = resources.iter().map(|r| r.uri.clone()).collect();
    assert!(uris.contains(&"troupe://runs/2".to_owned()), "{uris:?}");
    let templates = client
        .peer()
        .list_resource_templates(None)
        .await
        .expect("templates");
    assert_eq!(templates.resource_templates.len(), 3);

    for bad in [
        "troupe://runs/77",
        "troupe://elsewhere",
        "troupe://runs/2/x",
    ] {
        let r = client
            .peer()
            .read_resource(ReadResourceRequestParams::new(bad))
            .await;
        assert!(r.is_err(), "{bad}: {r:?}");
    }

    let _ = client.cancel().await;
    let _ = std::fs::remove_dir_all(store.parent().expect("dir"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_run_answers_with_its_id_and_goes_on() {
    let store = temp_store("slow");
    let options = ServeOptions {
        store: store.clone(),
        deadline: Duration::from_millis(1),
        ..ServeOptions::new(vec![examples().join("counter.troupe")])
    };
    let client = connect(Server::new(&options).expect("server")).await;
    let r = call(&client, "counter", json!({"limit": 20000})).await;
    let doc = error_doc(&r);
    assert_eq!(doc["run"], "run-1", "{doc}");
    assert!(
        matches!(doc["status"].as_str(), Some("running" | "done")),
        "{doc}"
    );
    // It ends in the background.
    let mut status = J::Null;
    for _ in 0..300 {
        let (text, _) = read(&client, "troupe://runs/1").await;
        status = serde_json::from_str(&text).expect("JSON");
        if status["status"] == "done" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status["results"], json!({"k": 20000}), "{status}");
    let _ = client.cancel().await;
    let _ = std::fs::remove_dir_all(store.parent().expect("dir"));
}

#[test]
fn bad_files_and_addresses_are_refused() {
    let store = temp_store("bad");
    let missing = ServeOptions {
        store: store.clone(),
        ..ServeOptions::new(vec![PathBuf::from("/nonexistent/x.troupe")])
    };
    assert!(Server::new(&missing).is_err());
    let none = ServeOptions {
        store: store.clone(),
        ..ServeOptions::new(vec![])
    };
    assert!(Server::new(&none).is_err());
    let twice = ServeOptions {
        store: store.clone(),
        ..ServeOptions::new(vec![
            examples().join("counter.troupe"),
            examples().join("counter.troupe"),
        ])
    };
    let e = Server::new(&twice).expect_err("duplicate names");
    assert!(
        e.to_string().contains("two workflows are named `counter`"),
        "{e}"
    );

    // A workflow that breaks the contracts of the tools it calls (a
    // booking nobody confirms) is refused, as `troupe run` refuses it.
    let dir = store.parent().expect("dir");
    let unsafe_file = dir.join("unconfirmed.troupe");
    let corpus =
        examples().join("../crates/troupe-contracts/tests/corpus/err/e0601_never_confirmed.troupe");
    let text = std::fs::read_to_string(&corpus).expect("the corpus file");
    let sidecar = examples().join("train_booking.contracts.json");
    let text: String = text
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("contracts:") {
                format!("  contracts: \"{}\"", sidecar.display())
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::create_dir_all(dir).expect("dir");
    std::fs::write(&unsafe_file, text).expect("write");
    let refused = ServeOptions {
        store: store.clone(),
        ..ServeOptions::new(vec![unsafe_file])
    };
    let e = Server::new(&refused).expect_err("a contract violation");
    assert!(
        e.to_string().contains("breaks the contracts") && e.to_string().contains("E0601"),
        "{e}"
    );

    let ok = ServeOptions {
        store: store.clone(),
        ..ServeOptions::new(vec![examples().join("counter.troupe")])
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let server = Server::new(&ok).expect("server");
    let public =
        rt.block_on(server.bind_http("0.0.0.0:0".parse().expect("addr"), &Default::default()));
    assert!(public.is_err(), "a non-loopback address is refused");
    let _ = std::fs::remove_dir_all(store.parent().expect("dir"));
}

/// The Python SDK's client (PyPI `mcp`, installed by
/// `.ci/install-mcp-servers.sh`) against the server over Streamable HTTP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_client_over_streamable_http() {
    let python = support::servers_dir().join("venv/bin/python");
    assert!(
        python.exists(),
        "the Python venv with the `mcp` package is missing at {}: run `bash .ci/install-mcp-servers.sh` \
         from the repository root (set TROUPE_MCP_SERVERS to use another directory)",
        python.display()
    );
    let (server, store) = server("python");
    let serving = server
        .bind_http("127.0.0.1:0".parse().expect("addr"), &Default::default())
        .await
        .expect("bind");
    let url = format!("http://{}/mcp", serving.addr);
    let task = tokio::spawn(serving.run());
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/serve_client.py");
    let output = tokio::time::timeout(
        Duration::from_secs(40),
        tokio::process::Command::new(&python)
            .arg(&script)
            .arg(&url)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the Python client finishes within 40 s")
    .expect("the Python client starts");
    task.abort();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the Python client failed ({}):\nstdout: {stdout}\nstderr: {stderr}\n\
         (is the `mcp` package installed? run `bash .ci/install-mcp-servers.sh`)",
        output.status
    );
    let seen: J = serde_json::from_str(stdout.trim()).expect("the client prints JSON");
    assert_eq!(seen["server"], "troupe");
    assert_eq!(seen["counter"], json!({"k": 4}));
    assert_eq!(
        seen["run"],
        json!({"status": "done", "results": {"approved": true}})
    );
    let _ = std::fs::remove_dir_all(store.parent().expect("dir"));
}

/// A server stops while a run waits on a person; another server on the same
/// store takes the answer and finishes the run from its journal.
#[test]
fn an_answer_resumes_a_run_whose_server_stopped() {
    let store = temp_store("resume");
    let options = ServeOptions {
        store: store.clone(),
        deadline: Duration::from_secs(10),
        mock_externs: true,
        ..ServeOptions::new(vec![examples().join("local_approval.troupe")])
    };
    let runtime = || {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime")
    };
    let first = runtime();
    let task = first.block_on(async {
        let client = connect(Server::new(&options).expect("server")).await;
        let r = call(&client, "local_approval", json!({"request": "a lamp"})).await;
        let doc = error_doc(&r);
        assert_eq!(doc["status"], "waiting", "{doc}");
        let _ = client.cancel().await;
        doc["tasks"][0]["task"].as_str().expect("task").to_owned()
    });
    // The first server's process is gone: its run task with it, and its
    // lease on the run has expired.
    first.shutdown_timeout(Duration::from_secs(2));
    let db = rusqlite::Connection::open(&store).expect("open the store");
    db.busy_timeout(Duration::from_secs(5))
        .expect("busy timeout");
    db.execute("UPDATE runs SET lease_expires = 0 WHERE id = 1", [])
        .expect("update");
    drop(db);

    let second = runtime();
    second.block_on(async {
        let client = connect(Server::new(&options).expect("server")).await;
        let (text, _) = read(&client, "troupe://runs/1").await;
        let run: J = serde_json::from_str(&text).expect("JSON");
        assert_eq!(run["status"], "stalled", "{run}");
        let answered = call(
            &client,
            "answer_task",
            json!({"task": task, "answer": false}),
        )
        .await;
        let doc = answered.structured_content.expect("structured");
        assert_eq!(doc["status"], "done", "{doc}");
        assert_eq!(doc["results"], json!({"approved": false}));
        let _ = client.cancel().await;
    });
    second.shutdown_timeout(Duration::from_secs(2));
    let _ = std::fs::remove_dir_all(store.parent().expect("dir"));
}
