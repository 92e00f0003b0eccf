//! Verified planning through the binary: the planner example with the
//! scripted model (a plan that does not check, then one that does: the
//! second prompt carries the first plan's diagnostics), a planner that runs
//! out of retries, and hostile plans — a forbidden action or lifeline, huge
//! or deeply nested source, text that is not troupe — each refused with its
//! diagnostic, never a panic. Expectations come from the script files, not
//! from the code under test.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn troupe(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_troupe"))
        .current_dir(dir)
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn status(dir: &Path) -> Value {
    let out = troupe(dir, &["status", "run-1", "--store", "db", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The model calls of the given step.
fn calls<'a>(status: &'a Value, step: &str) -> Vec<&'a Value> {
    status["llm_calls"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["step"] == step)
        .collect()
}

fn step<'a>(status: &'a Value, key: &str) -> &'a Value {
    status["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["key"] == key)
        .unwrap_or_else(|| panic!("no step {key}: {status:#}"))
}

#[test]
fn the_planner_example_reasks_with_the_diagnostics_and_runs_the_accepted_plan() {
    let dir = tempfile::tempdir().unwrap();
    let example = workspace().join("examples/planner.troupe");
    let script_path = workspace().join("examples/scripts/planner.json");
    let script: Value =
        serde_json::from_str(&std::fs::read_to_string(&script_path).unwrap()).unwrap();
    let llm = format!("scripted:{}", script_path.display());
    let out = troupe(
        dir.path(),
        &[
            "run",
            example.to_str().unwrap(),
            "--store",
            "db",
            "-i",
            "question=why is the sky blue?",
            "--llm",
            &llm,
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    // The accepted plan ends with the Writer's summary: the script's answer.
    assert_eq!(doc["results"]["answer"], script["summarize"], "{doc}");

    let status = status(dir.path());
    let plan_calls = calls(&status, "Desk/solve#0/plan#0");
    assert_eq!(plan_calls.len(), 2, "one rejected plan, one accepted");
    let first = plan_calls[0]["prompt"].as_str().unwrap();
    for part in [
        "Write a troupe workflow that answers: why is the sky blue?",
        "workflow plan(task: Text @ …)",
        "llm search(query: Text) -> (notes: Text)",
        "llm summarize(notes: Text) -> (summary: Text)",
        "Lifelines you may use: Researcher, Writer.",
    ] {
        assert!(first.contains(part), "{part:?} not in the prompt:\n{first}");
    }
    let second = plan_calls[1]["prompt"].as_str().unwrap();
    let rejected = script["solve"][0].as_str().unwrap();
    assert!(
        second.contains(rejected),
        "the rejected plan is shown:\n{second}"
    );
    assert!(
        second.contains("E0402") && second.contains("line 3"),
        "its diagnostics are in the re-ask:\n{second}"
    );
    // The accepted plan is journaled as it came, before its steps ran.
    let plan = step(&status, "Desk/solve#0/plan#0");
    assert_eq!(plan["kind"], "plan");
    assert_eq!(plan["status"], "done");
    assert_eq!(plan["outputs"], json!([script["solve"][1]]));
    // The nested run's steps live under the planner's step.
    assert_eq!(
        step(&status, "Desk/solve#0/Researcher/search#0")["outputs"],
        json!([script["search"]])
    );
    assert_eq!(
        step(&status, "Desk/solve#0/Writer/summarize#0")["outputs"],
        json!([script["summarize"]])
    );
    assert_eq!(
        step(&status, "Desk/solve#0")["outputs"],
        json!([script["summarize"]])
    );
    assert_eq!(calls(&status, "Desk/solve#0/Researcher/search#0").len(), 1);

    // `troupe trace` shows the plan and its nested run.
    let trace = troupe(dir.path(), &["trace", "run-1", "--store", "db"]);
    let shown = text(&trace.stdout);
    assert!(shown.contains("plan of Desk/solve#0"), "{shown}");
    assert!(
        shown.contains("act Writer: summary = summarize(notes)"),
        "{shown}"
    );
    assert!(shown.contains("Researcher"), "{shown}");
    let shown = text(&troupe(dir.path(), &["status", "run-1", "--store", "db"]).stdout);
    assert!(shown.contains("plan of Desk/solve#0"), "{shown}");

    // The chart of the run draws the plan as a nested box, in both formats.
    let mermaid = text(
        &troupe(
            dir.path(),
            &["msc", "run-1", "--store", "db", "--format", "mermaid"],
        )
        .stdout,
    );
    assert!(
        mermaid.contains("participant P2 as Researcher"),
        "{mermaid}"
    );
    assert!(mermaid.contains("participant P3 as Writer"), "{mermaid}");
    assert!(mermaid.contains("rect rgb(253, 242, 248)"), "{mermaid}");
    assert!(
        mermaid.contains("Note over P2: plan of solve at Desk"),
        "{mermaid}"
    );
    assert!(mermaid.contains("P2->>P3: notes"), "{mermaid}");
    let svg = text(&troupe(dir.path(), &["msc", "run-1", "--store", "db"]).stdout);
    assert!(
        svg.starts_with("<svg") && svg.contains("plan of solve at Desk"),
        "{svg}"
    );
}

/// A workflow whose planner may be re-asked `retries` times.
fn planner_workflow(retries: u32) -> String {
    format!(
        r#"
llm search(query: Text) -> (notes: Text) {{ prompt: "Find facts about: {{query}}" }}
llm summarize(notes: Text) -> (summary: Text) {{ prompt: "Summarize: {{notes}}" }}
effect publish(text: Text) -> Bool extern
planner solve(task: Text) -> (answer: Text) {{
  prompt: "Write a troupe workflow that answers: {{task}}"
  actions: [search, summarize]
  lifelines: [Researcher, Writer]
  retries: {retries}
}}
workflow ask(question: Text @ User) {{
  act User: answer = solve(question)
  return answer @ User
}}
"#
    )
}

/// Runs the planner workflow with `plans` as the model's successive plans.
fn run_with_plans(dir: &Path, retries: u32, plans: &[String]) -> Output {
    std::fs::write(dir.join("w.troupe"), planner_workflow(retries)).unwrap();
    let script = json!({
        "solve": plans,
        "search": "notes",
        "summarize": "summary",
    });
    std::fs::write(dir.join("script.json"), script.to_string()).unwrap();
    troupe(
        dir,
        &[
            "run",
            "w.troupe",
            "--store",
            "db",
            "-i",
            "question=q",
            "--llm",
            "scripted:script.json",
            "--mock-externs",
        ],
    )
}

const WRONG_ARITY: &str = "workflow plan(task: Text @ Researcher) {
  act Researcher: s = summarize(task, task)
  return s @ Researcher
}";

const GOOD: &str = "workflow plan(task: Text @ Researcher) {
  act Researcher: notes = search(task)
  act Researcher: s = summarize(notes)
  return s @ Researcher
}";

#[test]
fn a_planner_that_runs_out_of_retries_fails_clearly_and_asks_no_more() {
    let dir = tempfile::tempdir().unwrap();
    let plans = [
        WRONG_ARITY.to_owned(),
        WRONG_ARITY.to_owned(),
        GOOD.to_owned(),
    ];
    let out = run_with_plans(dir.path(), 1, &plans);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("`solve` asked the model for a plan 2 time(s) and none checked"),
        "{err}"
    );
    assert!(err.contains("E0402"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let status = status(dir.path());
    assert_eq!(status["status"], "failed", "{status:#}");
    assert_eq!(
        calls(&status, "User/solve#0/plan#0").len(),
        2,
        "retries: 1 is two asks"
    );
    assert!(
        status["steps"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["key"] != "User/solve#0/plan#0"),
        "no plan was accepted"
    );
}

#[test]
fn hostile_plans_are_refused_with_their_diagnostic() {
    let deep = format!(
        "workflow plan(task: Text @ Researcher) {{\n{}{}  return task @ Researcher\n}}",
        "if true @ Researcher {\n".repeat(2000),
        "}\n".repeat(2000)
    );
    let huge = format!(
        "workflow plan(task: Text @ Researcher) {{\n{}  return task @ Researcher\n}}",
        "  act Researcher: n = 1\n".repeat(20_000)
    );
    let cases: Vec<(String, &str)> = vec![
        (
            "workflow plan(task: Text @ Researcher) {\n  act Researcher: ok = publish(task)\n  return task @ Researcher\n}".into(),
            "E0805",
        ),
        (
            "workflow plan(task: Text @ Researcher) {\n  msg Researcher(task) -> Mallory(task)\n  return task @ Mallory\n}".into(),
            "E0803",
        ),
        (
            "llm steal(x: Text) -> Text { prompt: \"{x}\" }\nworkflow plan(task: Text @ Researcher) { return task @ Researcher }".into(),
            "E0802",
        ),
        (huge, "E0802"),
        (deep, "nesting is too deep"),
        ("I would first search, then summarize.".into(), "E0004"),
        ("{\"plan\": [\"search\", \"summarize\"]}".into(), "E0004"),
        ("\u{0}\u{7f}\u{1b}[31m".into(), "E0001"),
    ];
    for (plan, expect) in cases {
        let dir = tempfile::tempdir().unwrap();
        let out = run_with_plans(dir.path(), 0, std::slice::from_ref(&plan));
        let err = text(&out.stderr);
        let head: String = plan.chars().take(60).collect();
        assert_eq!(out.status.code(), Some(1), "{head:?}: {err}");
        assert!(
            err.contains("asked the model for a plan 1 time(s)"),
            "{head:?}: {err}"
        );
        assert!(err.contains(expect), "{head:?}: want {expect}: {err}");
        assert!(!err.contains("panicked"), "{head:?}: {err}");
        // Nothing of a refused plan ran.
        let status = status(dir.path());
        let ran = status["steps"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["key"].as_str().unwrap().starts_with("User/solve#0/"))
            .count();
        assert_eq!(ran, 0, "{head:?}: {status:#}");
    }
}

#[test]
fn a_plan_that_fails_once_is_accepted_on_the_reask() {
    let dir = tempfile::tempdir().unwrap();
    let forbidden = "workflow plan(task: Text @ Researcher) {\n  act Researcher: ok = publish(task)\n  return task @ Researcher\n}";
    let out = run_with_plans(dir.path(), 1, &[forbidden.to_owned(), GOOD.to_owned()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "answer = summary\n");
    let status = status(dir.path());
    let asks = calls(&status, "User/solve#0/plan#0");
    assert_eq!(asks.len(), 2);
    let second = asks[1]["prompt"].as_str().unwrap();
    assert!(second.contains("E0805"), "{second}");
    assert!(
        second.contains("a plan may call `search`, `summarize`"),
        "{second}"
    );
    // The forbidden effect never ran: no step of it, mocked or not.
    assert!(
        status["steps"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| !s["key"].as_str().unwrap().contains("publish")),
        "{status:#}"
    );
    assert_eq!(
        step(&status, "User/solve#0/plan#0")["outputs"],
        json!([GOOD])
    );
}

/// A fake OpenAI-compatible provider: answers request `n` with `answers[n]`
/// (the last one again after the list), and keeps every request body.
fn provider(answers: Vec<String>) -> (u16, std::sync::Arc<std::sync::Mutex<Vec<Value>>>) {
    use std::io::Write;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(mut stream) = stream else { continue };
            let (_, body) = crate::support::read_request(&stream);
            log.lock()
                .unwrap()
                .push(serde_json::from_slice(&body).unwrap_or(Value::Null));
            let content = answers[n.min(answers.len() - 1)].clone();
            let text = json!({
                "id": "c", "object": "chat.completion", "model": "gpt-4o-mini",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
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

#[test]
fn a_real_provider_is_told_the_language_the_actions_and_the_lifelines() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.troupe"), planner_workflow(0)).unwrap();
    // A model that fences its plan, as models do.
    let (port, seen) = provider(vec![
        format!("```troupe\n{GOOD}\n```"),
        "facts".into(),
        "a summary".into(),
    ]);
    let out = Command::new(env!("CARGO_BIN_EXE_troupe"))
        .current_dir(dir.path())
        .args([
            "run",
            "w.troupe",
            "-i",
            "question=why is the sky blue?",
            "--llm",
            "openai:gpt-4o-mini",
            "--mock-externs",
        ])
        .env("OPENAI_BASE_URL", format!("http://127.0.0.1:{port}/v1"))
        .env("OPENAI_API_KEY", "sk-test")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "answer = a summary\n");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 3, "the plan, then its two model calls");
    let asked = seen[0].to_string();
    for part in [
        "Write a troupe workflow that answers: why is the sky blue?",
        "A workflow is a message sequence chart between lifelines",
        "workflow plan(task: Text @ …)",
        "llm search(query: Text) -> (notes: Text)",
        "llm summarize(notes: Text) -> (summary: Text)",
        "Lifelines you may use: Researcher, Writer.",
    ] {
        let part = serde_json::to_string(part).unwrap();
        let part = &part[1..part.len() - 1];
        assert!(asked.contains(part), "{part} not sent:\n{asked}");
    }
    assert!(
        !asked.contains("publish"),
        "an unlisted action is not offered"
    );
    // The plan's own calls are the plan's prompts.
    assert!(
        seen[1]
            .to_string()
            .contains("Find facts about: why is the sky blue?")
    );
}

#[test]
fn a_plan_that_breaks_a_tool_contract_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let contracts = workspace().join("examples/train_booking.contracts.json");
    let workflow = format!(
        r#"
enum TravelClass {{ economy, business }}
record Ticket {{ id: Text, origin: Text, destination: Text, date: Text, class: TravelClass, price: Float }}
mcp booking {{
  command: "no-such-server"
  contracts: {}
}}
tool book_ticket(user_id: Text, origin: Text, destination: Text, date: Text, class: TravelClass, price: Float) -> Ticket {{ server: booking }}
human confirm_booking(summary: Text) -> Bool {{ ask: "Book?\n{{summary}}" }}
planner book(user: Text) -> (ticket: Text) {{
  prompt: "Book a ticket for {{user}}"
  actions: [book_ticket, confirm_booking]
  lifelines: [Agent]
  retries: 0
}}
workflow w(user: Text @ User) {{
  act User: ticket = book(user)
  return ticket @ User
}}
"#,
        serde_json::to_string(contracts.to_str().unwrap()).unwrap()
    );
    std::fs::write(dir.path().join("w.troupe"), workflow).unwrap();
    // The booking is not guarded by a person's confirmation.
    let plan = "workflow plan(user: Text @ Agent) {
  act Agent: t = book_ticket(user, \"Paris\", \"Lyon\", \"2026-12-24\", economy, 10.0)
  act Agent: id = t.id
  return id @ Agent
}";
    std::fs::write(
        dir.path().join("script.json"),
        json!({ "book": [plan] }).to_string(),
    )
    .unwrap();
    let out = troupe(
        dir.path(),
        &[
            "run",
            "w.troupe",
            "-i",
            "user=u1",
            "--llm",
            "scripted:script.json",
        ],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("asked the model for a plan 1 time(s)"),
        "{err}"
    );
    assert!(err.contains("E0601"), "{err}");
    assert!(
        !err.contains("no-such-server"),
        "the tool was never called: {err}"
    );
}

#[test]
fn a_plans_human_task_belongs_to_the_run_under_the_planner_step() {
    let dir = tempfile::tempdir().unwrap();
    let workflow = r#"
llm draft(task: Text) -> (text: Text) { prompt: "Draft: {task}" }
human approve(text: Text) -> Bool { ask: "Approve?\n{text}" }
planner solve(task: Text) -> (answer: Text, ok: Bool) {
  prompt: "Plan: {task}"
  actions: [draft, approve]
  lifelines: [Writer, Boss]
  retries: 0
}
workflow w(task: Text @ User) {
  act User: answer, ok = solve(task)
  return (answer @ User, ok @ User)
}
"#;
    std::fs::write(dir.path().join("w.troupe"), workflow).unwrap();
    let plan = "workflow plan(task: Text @ Writer) {
  act Writer: text = draft(task)
  msg Writer(text) -> Boss(text)
  act Boss: ok = approve(text)
  msg Boss(ok) -> Writer(ok)
  return (text @ Writer, ok @ Writer)
}";
    std::fs::write(
        dir.path().join("script.json"),
        json!({ "solve": [plan], "draft": "a draft" }).to_string(),
    )
    .unwrap();
    // A durable run in the background; the plan's task is answered from
    // another process, as a person would.
    let out = troupe(
        dir.path(),
        &[
            "run",
            "w.troupe",
            "--store",
            "db",
            "-i",
            "task=t",
            "--llm",
            "scripted:script.json",
            "--detach",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let wait = |what: &str, f: &dyn Fn() -> bool| {
        let start = std::time::Instant::now();
        while !f() {
            assert!(
                start.elapsed() < std::time::Duration::from_secs(60),
                "timed out: {what}"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    };
    let tasks = || -> Value {
        serde_json::from_slice(&troupe(dir.path(), &["tasks", "--store", "db", "--json"]).stdout)
            .unwrap_or(Value::Null)
    };
    wait("the plan's task", &|| {
        tasks().as_array().is_some_and(|t| !t.is_empty())
    });
    let task = tasks()[0].clone();
    assert_eq!(task["run"], "run-1");
    assert_eq!(task["key"], "User/solve#0/Boss/approve#0");
    assert_eq!(task["prompt"], "Approve?\na draft");
    let out = troupe(
        dir.path(),
        &[
            "answer",
            task["id"].as_str().unwrap(),
            "--yes",
            "--store",
            "db",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    wait("the run's end", &|| status(dir.path())["status"] == "done");
    let status = status(dir.path());
    assert_eq!(
        status["result"],
        json!({ "answer": "a draft", "ok": true }),
        "{status:#}"
    );
    let approval = step(&status, "User/solve#0/Boss/approve#0");
    assert_eq!(approval["kind"], "human");
    assert_eq!(approval["outputs"], json!([true]));
}
