//! `troupe mcp serve` over stdio, as real clients start it: the binary as a
//! child process of the official Python SDK's client (PyPI `mcp`), of the MCP
//! Inspector's CLI mode (npm `@modelcontextprotocol/inspector`), and of a raw
//! JSON-RPC client that disconnects in the middle of a call.
//! The clients are installed by `.ci/install-test-deps.sh`.

use crate::mcp_support as support;

use std::path::Path;
use std::process::Command;

use serde_json::{Value as J, json};
use support::*;

#[test]
fn the_python_sdk_drives_the_binary_over_stdio() {
    let dir = project();
    let store = dir.path().join("db");
    let seen = python_client(
        "stdio_client.py",
        &[troupe().as_ref(), examples().as_os_str(), store.as_os_str()],
        dir.path(),
    );
    assert_eq!(seen["server"], "troupe");
    assert_eq!(seen["protocol"], "2025-11-25");
    assert_eq!(
        seen["tools"],
        json!([
            "answer_task",
            "counter",
            "get_run",
            "list_tasks",
            "local_approval"
        ])
    );
    assert_eq!(seen["counter"], json!({"k": 5}));
    assert_eq!(seen["waiting"]["status"], "waiting");
    assert_eq!(
        seen["answered"],
        json!({"status": "done", "results": {"approved": true}})
    );
    assert_eq!(
        seen["run"],
        json!({"status": "done", "results": {"approved": true}})
    );
    assert_eq!(
        seen["chart"],
        json!({"mime": "text/x-mermaid", "first_line": "sequenceDiagram"})
    );
    assert!(
        seen["trace_events"].as_u64().is_some_and(|n| n > 0),
        "{seen}"
    );
    assert_eq!(seen["pending_after"], 0);
    let resources = seen["resources"].as_array().expect("resources");
    for uri in [
        "troupe://runs",
        "troupe://tasks",
        "troupe://runs/1",
        "troupe://runs/2",
    ] {
        assert!(resources.contains(&json!(uri)), "{uri} missing: {seen}");
    }
    // The server's process ended with its client, and the runs are settled.
    assert_eq!(
        run_status(&store, 2),
        troupe_store::RunStatus::Done,
        "the answered run"
    );
}

/// One Inspector CLI call: `mcp-inspector --cli troupe mcp serve FILES… --method …`.
/// Each call starts the server afresh on the same store, as the Inspector does.
fn inspector_call(dir: &Path, method_args: &[&str]) -> J {
    inspector_call_exiting(dir, method_args, 0)
}

/// [`inspector_call`] whose Inspector exits with `code` (it exits with 5
/// when the tool's result is an error result).
fn inspector_call_exiting(dir: &Path, method_args: &[&str], code: i32) -> J {
    let examples = examples();
    let output = Command::new(inspector())
        .arg("--cli")
        .arg(troupe())
        .args(["mcp", "serve"])
        .arg(examples.join("counter.troupe"))
        .arg(examples.join("local_approval.troupe"))
        .args(["--store", "db", "--mock-externs", "--deadline-ms", "20000"])
        .args(method_args)
        .current_dir(dir)
        .env("TROUPE_LEASE", "1s")
        .env("NO_COLOR", "1")
        .output()
        .expect("the Inspector starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(code),
        "the Inspector on {method_args:?} ({}):\nstdout: {stdout}\nstderr: {stderr}",
        output.status
    );
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("the Inspector printed no JSON ({e}): {stdout}\n{stderr}"))
}

#[test]
fn the_mcp_inspector_cli_drives_the_binary_over_stdio() {
    let dir = project();
    let d = dir.path();

    let listed = inspector_call(d, &["--method", "tools/list"]);
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
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
    assert_eq!(
        listed["tools"][0]["inputSchema"]["properties"]["limit"],
        json!({"type": "integer"})
    );

    let done = inspector_call(
        d,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "counter",
            "--tool-arg",
            "limit=7",
        ],
    );
    assert_eq!(done["isError"], false, "{done}");
    assert_eq!(done["structuredContent"], json!({"k": 7}));
    assert_eq!(done["_meta"]["troupe/run"], "run-1");

    let waiting = inspector_call_exiting(
        d,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "local_approval",
            "--tool-arg",
            "request=a desk lamp",
        ],
        5,
    );
    // An error result (not the tool's output, whose schema the Inspector
    // checks): where the run stands, as JSON text.
    assert_eq!(waiting["isError"], true, "{waiting}");
    assert!(waiting.get("structuredContent").is_none(), "{waiting}");
    let doc: J =
        serde_json::from_str(waiting["content"][0]["text"].as_str().expect("text")).expect("JSON");
    let doc = &doc;
    assert_eq!(doc["status"], "waiting", "{waiting}");
    assert_eq!(doc["run"], "run-2");
    let task = doc["tasks"][0]["task"].as_str().expect("a task").to_owned();

    // That server ended with the Inspector's call and released its run: the
    // next server takes the answer and finishes the run from the store.
    let answered = inspector_call(
        d,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "answer_task",
            "--tool-arg",
            &format!("task={task}"),
            "answer=false",
        ],
    );
    let doc = &answered["structuredContent"];
    assert_eq!(doc["status"], "done", "{answered}");
    assert_eq!(doc["results"], json!({"approved": false}));

    let resources = inspector_call(d, &["--method", "resources/list"]);
    let uris: Vec<&str> = resources["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    assert!(uris.contains(&"troupe://runs/2"), "{resources}");
    let templates = inspector_call(d, &["--method", "resources/templates/list"]);
    assert_eq!(
        templates["resourceTemplates"].as_array().map(Vec::len),
        Some(3),
        "{templates}"
    );
    let read = inspector_call(
        d,
        &["--method", "resources/read", "--uri", "troupe://runs/2"],
    );
    let run: J = serde_json::from_str(read["contents"][0]["text"].as_str().expect("text"))
        .expect("the run as JSON");
    assert_eq!(run["status"], "done", "{run}");
    assert_eq!(run["results"], json!({"approved": false}));
}

#[test]
fn a_client_that_disconnects_mid_call_ends_the_server_cleanly() {
    let dir = project();
    let d = dir.path();
    // A lease far longer than the test: the run is `stalled` at once only
    // if the server released it.
    let mut client = serve_stdio(
        d,
        "10m",
        &["slow.troupe", "--store", "db", "--deadline-ms", "600000"],
    );
    let init = client.handshake();
    assert_eq!(init["result"]["serverInfo"]["name"], "troupe", "{init}");
    client.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "slow_one", "arguments": {"n": 1}}}));
    let pid_file = d.join("slow.pid");
    wait_for("the effect to start", || {
        std::fs::read_to_string(&pid_file).is_ok_and(|t| t.trim().parse::<u32>().is_ok())
    });
    let effect: u32 = std::fs::read_to_string(&pid_file)
        .expect("pid")
        .trim()
        .parse()
        .expect("a pid");
    assert!(alive(effect), "the effect runs while the call is in flight");

    let status = client.disconnect_and_wait();
    assert!(status.success(), "the server exited with {status}");
    // Its in-flight action was stopped with it, and its lease released: the
    // run can be resumed (it is `stalled`, not `running` under a dead owner).
    wait_for("the effect's process to end", || !alive(effect));
    assert_eq!(
        run_status(&d.join("db"), 1),
        troupe_store::RunStatus::Stalled
    );
}

/// A call that outlasts its deadline, retried by the Python SDK with its
/// idempotency key (as an argument and in `_meta`), starts one run whose
/// every effect happens once (counted by the effect's own ledger, which
/// deduplicates nothing), and `get_run` fetches its result.
#[test]
fn a_retried_call_with_its_key_starts_one_run_and_get_run_fetches_its_result() {
    let dir = project();
    // The steps' effect, counted in a ledger of its own.
    std::fs::write(
        dir.path().join("troupe.toml"),
        "[externs.step]\ncommand = [\"python3\", \"-c\", \"import json, sys, time; a = json.load(sys.stdin); time.sleep(0.2); open('ledger', 'a').write(str(a['i']) + '\\\\n'); print(a['i'] + 1)\"]\n",
    )
    .expect("write");
    let seen = python_client(
        "retry_client.py",
        &[troupe().as_ref(), std::ffi::OsStr::new("call-7")],
        dir.path(),
    );
    assert_eq!(seen["get_run_read_only"], true, "{seen}");
    assert_eq!(seen["key_in_schema"], true, "{seen}");
    assert_eq!(seen["first"]["run"], "run-1", "{seen}");
    assert_eq!(seen["first"]["status"], "running", "{seen}");
    assert_eq!(
        seen["again"]["run"], "run-1",
        "the same key, the same run: {seen}"
    );
    assert_eq!(seen["by_meta"]["run"], "run-1", "the key in _meta: {seen}");
    assert_eq!(seen["get_run"]["status"], "done", "{seen}");
    assert_eq!(seen["get_run"]["results"], json!({"i": 12}), "{seen}");
    assert_eq!(
        seen["last"],
        json!({"error": false, "result": {"i": 12}}),
        "{seen}"
    );
    assert_eq!(seen["unknown_is_error"], true, "{seen}");
    let store = troupe_store::Store::open(dir.path().join("db"), troupe_store::Durability::Normal)
        .expect("the store");
    assert_eq!(
        store.runs(None).expect("runs").len(),
        1,
        "one run for one key"
    );
    let ledger = std::fs::read_to_string(dir.path().join("ledger")).expect("the ledger");
    let steps: Vec<&str> = ledger.lines().collect();
    let expected: Vec<String> = (0..12).map(|i| i.to_string()).collect();
    assert_eq!(steps, expected, "each effect once");
}

/// A client that answers people's questions itself: on 2026-07-28 the
/// approval is asked as an input-required result, on 2025-11-25 with
/// `elicitation/create` in its session; answered through the client's
/// elicitation (recorded as such, through the host), the call returns the
/// run's results; declined or not asked, the run waits.
#[test]
fn a_person_answers_in_their_own_client_on_the_2026_revision() {
    let dir = project();
    let seen = python_client(
        "elicit_client.py",
        &[troupe().as_ref(), examples().as_os_str()],
        dir.path(),
    );
    assert_eq!(seen["protocol"], "2026-07-28", "{seen}");
    assert_eq!(seen["counter"], json!({"k": 3}), "{seen}");
    assert_eq!(
        seen["approved"],
        json!({"error": false, "result": {"approved": true}}),
        "{seen}"
    );
    assert_eq!(seen["legacy_protocol"], "2025-11-25", "{seen}");
    assert_eq!(
        seen["legacy"],
        json!({"error": false, "result": {"approved": true}}),
        "an older client is asked in its session: {seen}"
    );
    let asked = seen["asked"].as_array().expect("questions");
    assert_eq!(asked.len(), 2, "asked once per client that answers: {seen}");
    assert_eq!(
        asked[0]["requestedSchema"]["properties"]["answer"]["type"], "boolean",
        "{seen}"
    );
    assert!(
        asked[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("a lamp")),
        "{seen}"
    );
    for which in ["declined", "plain"] {
        assert_eq!(seen[which]["status"], "waiting", "{which}: {seen}");
        assert_eq!(
            seen[which]["tasks"][0]["status"], "pending",
            "{which}: {seen}"
        );
    }
    let store = troupe_store::Store::open(dir.path().join("db"), troupe_store::Durability::Normal)
        .expect("the store");
    let tasks = store.tasks(true).expect("tasks");
    let lamp = tasks
        .iter()
        .find(|t| t.prompt.contains("a lamp"))
        .expect("the lamp's task");
    assert_eq!(lamp.answered_by.as_deref(), Some("mcp elicitation"));
    assert_eq!(lamp.answer.as_deref(), Some("true"));
}

/// The 2026-07-28 request metadata of a client with the tasks extension.
fn meta_2026() -> J {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        },
        "io.modelcontextprotocol/clientInfo": {"name": "raw-2026", "version": "0"}
    })
}

/// A stateless 2026-07-28 request and its answer.
fn request_2026(client: &mut RawClient, id: i64, method: &str, mut params: J) -> J {
    params["_meta"] = meta_2026();
    client.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    client.answer(id, &mut Vec::new())
}

/// Polls `tasks/get` of `task` until its status is not `working`.
fn task_settled(client: &mut RawClient, first_id: i64, task: &str) -> J {
    for id in first_id..first_id + 600 {
        let got = request_2026(client, id, "tasks/get", json!({"taskId": task}));
        if got["result"]["status"] != "working" {
            return got["result"].clone();
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("{task} stays working");
}

/// Runs as MCP tasks (2026-07-28 with the tasks extension), on the wire: a
/// call that outlasts its deadline is a task named after its run;
/// `tasks/get` asks the run's person through an elicitation form,
/// `tasks/update` answers it (recorded through the host), the task
/// completes with the tool's result; `tasks/cancel` cancels a long run.
#[test]
fn a_long_call_is_a_task_that_asks_its_person_and_can_be_cancelled() {
    let dir = project();
    let approval = examples().join("local_approval.troupe");
    let mut client = serve_stdio(
        dir.path(),
        "15s",
        &[
            approval.to_str().expect("a path"),
            "steps.troupe",
            "--store",
            "db",
            "--mock-externs",
            "--deadline-ms",
            "300",
        ],
    );
    let discovered = request_2026(&mut client, 1, "server/discover", json!({}));
    assert!(
        discovered["result"]["supportedVersions"]
            .as_array()
            .is_some_and(|v| v.contains(&json!("2026-07-28")) && v.contains(&json!("2025-11-25"))),
        "{discovered}"
    );
    assert_eq!(
        discovered["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
        json!({}),
        "{discovered}"
    );
    let call = request_2026(
        &mut client,
        2,
        "tools/call",
        json!({"name": "local_approval", "arguments": {"request": "a lamp"}}),
    );
    assert_eq!(call["result"]["resultType"], "task", "{call}");
    assert_eq!(call["result"]["taskId"], "run-1", "{call}");
    let asked = task_settled(&mut client, 3, "run-1");
    assert_eq!(asked["status"], "input_required", "{asked}");
    let form = &asked["inputRequests"]["task-1"];
    assert_eq!(form["method"], "elicitation/create", "{asked}");
    assert_eq!(
        form["params"]["requestedSchema"]["properties"]["answer"]["type"],
        "boolean"
    );
    let update = request_2026(
        &mut client,
        1000,
        "tasks/update",
        json!({"taskId": "run-1", "inputResponses": {"task-1": {"action": "accept", "content": {"answer": true}}}}),
    );
    assert!(update.get("error").is_none(), "{update}");
    let done = task_settled(&mut client, 1001, "run-1");
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["structuredContent"],
        json!({"approved": true}),
        "{done}"
    );
    // A long run, cancelled through its task.
    let long = request_2026(
        &mut client,
        2000,
        "tools/call",
        json!({"name": "steps", "arguments": {"n": 200}}),
    );
    assert_eq!(long["result"]["taskId"], "run-2", "{long}");
    let cancel = request_2026(
        &mut client,
        2001,
        "tasks/cancel",
        json!({"taskId": "run-2"}),
    );
    assert!(cancel.get("error").is_none(), "{cancel}");
    let cancelled = task_settled(&mut client, 2002, "run-2");
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    let unknown = request_2026(&mut client, 3000, "tasks/get", json!({"taskId": "run-77"}));
    assert!(unknown.get("error").is_some(), "{unknown}");
    let status = client.disconnect_and_wait();
    assert!(
        status.success(),
        "a 2026 client's disconnect is a clean end: {status:?}"
    );
    let store = troupe_store::Store::open(dir.path().join("db"), troupe_store::Durability::Normal)
        .expect("the store");
    let task = store.task("task-1").expect("the task");
    assert_eq!(task.answered_by.as_deref(), Some("mcp elicitation"));
    assert_eq!(
        run_status(&dir.path().join("db"), 2),
        troupe_store::RunStatus::Cancelled
    );
}

#[test]
fn a_call_with_a_progress_token_gets_progress_notifications() {
    let dir = project();
    let seen = python_client("progress_client.py", &[troupe().as_ref()], dir.path());
    assert_eq!(seen["error"], false, "{seen}");
    assert_eq!(seen["result"], json!({"i": 5}), "{seen}");
    let progress: Vec<f64> = seen["progress"]
        .as_array()
        .expect("progress")
        .iter()
        .filter_map(J::as_f64)
        .collect();
    assert!(!progress.is_empty(), "no progress notification: {seen}");
    assert!(
        progress.windows(2).all(|w| w[0] < w[1]),
        "progress must grow: {progress:?}"
    );
    assert!(
        seen["messages"][0]
            .as_str()
            .is_some_and(|m| m.starts_with("run-1: ") && m.contains("events recorded")),
        "{seen}"
    );
}

#[test]
fn a_cancelled_call_cancels_its_run_and_stops_its_effect() {
    let dir = project();
    let d = dir.path();
    let mut client = serve_stdio(
        d,
        "1s",
        &["slow.troupe", "--store", "db", "--deadline-ms", "600000"],
    );
    client.handshake();
    client.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "slow_one", "arguments": {"n": 1}, "_meta": {"progressToken": "p-1"}}}));
    let pid_file = d.join("slow.pid");
    wait_for("the effect to start", || {
        std::fs::read_to_string(&pid_file).is_ok_and(|t| t.trim().parse::<u32>().is_ok())
    });
    let effect: u32 = std::fs::read_to_string(&pid_file)
        .expect("pid")
        .trim()
        .parse()
        .expect("a pid");
    assert!(alive(effect));
    client.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 1, "reason": "the user stopped it"}}),
    );
    // The run's in-flight effect is stopped and the run recorded as cancelled.
    wait_for("the effect's process to end", || !alive(effect));
    let db = d.join("db");
    wait_for("the run to be cancelled", || {
        run_status(&db, 1) == troupe_store::RunStatus::Cancelled
    });
    let store = troupe_store::Store::open(&db, troupe_store::Durability::Normal).expect("store");
    let run = store.run(1).expect("run");
    assert!(
        run.summary
            .error
            .as_deref()
            .is_some_and(|e| e.contains("the user stopped it")),
        "{:?}",
        run.summary.error
    );
    // The server goes on serving; the cancelled call gets no answer.
    client.send(json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}));
    let mut before = Vec::new();
    let pong = client.answer(2, &mut before);
    assert!(pong.get("result").is_some(), "{pong}");
    assert!(
        before.iter().all(|m| m.get("id") != Some(&json!(1))),
        "the cancelled call was answered: {before:?}"
    );
    let status = client.disconnect_and_wait();
    assert!(status.success(), "{status}");
}

/// SIGTERM to `troupe mcp serve` while a call's run is in flight (a
/// supervisor stopping the server): the run is interrupted at its step
/// boundary and the server exits 143, rather than dying by the signal.
#[test]
fn sigterm_stops_the_server_with_143_while_a_call_runs() {
    let dir = project();
    let d = dir.path();
    let mut client = serve_stdio(
        d,
        "10m",
        &["slow.troupe", "--store", "db", "--deadline-ms", "600000"],
    );
    client.handshake();
    client.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "slow_one", "arguments": {"n": 1}}}));
    let pid_file = d.join("slow.pid");
    wait_for("the effect to start", || {
        std::fs::read_to_string(&pid_file).is_ok_and(|t| t.trim().parse::<u32>().is_ok())
    });
    let sent = Command::new("kill")
        .args(["-TERM", &client.child.id().to_string()])
        .status()
        .expect("kill");
    assert!(sent.success());
    let status = client.disconnect_and_wait();
    assert_eq!(status.code(), Some(143), "{status}");
    // The effect outlived its grace: recorded as started, the run held by
    // nobody and continued (after `resolve`) by the next process.
    assert!(
        matches!(
            run_status(&d.join("db"), 1),
            troupe_store::RunStatus::Stalled | troupe_store::RunStatus::NeedsResolution
        ),
        "{:?}",
        run_status(&d.join("db"), 1)
    );
}
