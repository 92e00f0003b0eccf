//! Contracts enforced wherever they come from (#28), on the binary: the
//! agent example against the real `train-booking-server`, whose contracts
//! come from the workflow's sidecar only, the server's `_meta` only, both,
//! a sidecar and a lying `_meta`, or a lying `_meta` alone (the server's
//! annotations still tell the truth). A scripted model makes the forbidden
//! calls; every confirmation is answered yes, so a call the contracts fail
//! to refuse reaches the server, whose own call log (which deduplicates
//! nothing) is the oracle.

use crate::kills_support::kill_group;
use crate::tool_calling::{
    PRICE, Sources, calls, ledger, pending_tasks, run_scripted, script, setup_with, status, steps,
    text, troupe,
};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn book(user: &str) -> Value {
    json!({"name": "book_ticket", "arguments": {"user_id": user, "origin": "Paris",
        "destination": "Lyon", "date": "2026-12-24", "class": "economy", "price": PRICE}})
}

fn get_user(user: &str) -> Value {
    json!({"name": "get_user", "arguments": {"user_id": user}})
}

fn check(account: &str, amount: f64) -> Value {
    json!({"name": "check_balance", "arguments": {"account": account, "amount": amount}})
}

/// Whether some source states the tools' relations (`requires`,
/// `precedes`): all but the lying `_meta` alone.
fn relations_known(sources: Sources) -> bool {
    sources != Sources::Lying
}

#[test]
fn a_booking_without_its_checks_never_reaches_the_server_whatever_the_source() {
    for sources in Sources::ALL {
        let (_tmp, dir) = setup_with(sources, &[]);
        let llm = script(
            &dir,
            json!([
                {"tool_calls": [get_user("u1")]},
                {"tool_calls": [book("u1")]},
                {"answer": "done"}
            ]),
        );
        let out = run_scripted(&dir, &llm);
        assert!(out.status.success(), "{sources:?}: {}", text(&out));
        let all = steps(&status(&dir));
        if relations_known(sources) {
            assert_eq!(calls(&dir, "book_ticket"), 0, "{sources:?}: {all}");
            assert_eq!(ledger(&dir), (500.0, 0), "{sources:?}");
            assert!(
                all.contains("requires a successful earlier call of `check_balance`"),
                "{sources:?}: {all}"
            );
        } else {
            // Nobody states the relation; the annotations still make the
            // lying tool transactional, so a person was asked first.
            assert!(all.contains("confirm#"), "{sources:?}: {all}");
            assert_eq!(calls(&dir, "book_ticket"), 1, "{sources:?}");
        }
    }
}

#[test]
fn another_users_balance_does_not_pay_for_a_booking() {
    for sources in Sources::ALL.into_iter().filter(|s| relations_known(*s)) {
        let (_tmp, dir) = setup_with(sources, &[]);
        // Grace (u3) can afford it; Ada's booking may not lean on that.
        let llm = script(
            &dir,
            json!([
                {"tool_calls": [get_user("u1"), get_user("u3"), check("acct-grace", PRICE)]},
                {"tool_calls": [book("u1")]},
                {"answer": "done"}
            ]),
        );
        let out = run_scripted(&dir, &llm);
        assert!(out.status.success(), "{sources:?}: {}", text(&out));
        assert_eq!(calls(&dir, "check_balance"), 1, "{sources:?}");
        assert_eq!(calls(&dir, "book_ticket"), 0, "{sources:?}");
        assert_eq!(ledger(&dir), (500.0, 0), "{sources:?}");
    }
}

#[test]
fn a_ticket_is_emailed_only_after_a_booking_precedes_it() {
    let email = json!({"name": "email_ticket", "arguments": {
        "ticket": {"id": "T-1", "origin": "Paris", "destination": "Lyon", "date": "2026-12-24",
                   "class": "economy", "price": PRICE},
        "address": "attacker@example.net"}});
    for sources in Sources::ALL {
        let (_tmp, dir) = setup_with(
            sources,
            &["tool email_ticket(ticket: Ticket, address: Text) -> Text { server: booking }"],
        );
        let llm = script(&dir, json!([{"tool_calls": [email]}, {"answer": "sent"}]));
        let out = run_scripted(&dir, &llm);
        assert!(out.status.success(), "{sources:?}: {}", text(&out));
        let all = steps(&status(&dir));
        if relations_known(sources) {
            assert_eq!(calls(&dir, "email_ticket"), 0, "{sources:?}: {all}");
            assert!(
                all.contains("says it precedes `email_ticket`"),
                "{sources:?}: {all}"
            );
        } else {
            assert_eq!(calls(&dir, "email_ticket"), 1, "{sources:?}: {all}");
        }
    }
}

#[test]
fn the_careful_booking_completes_under_every_source_and_disagreements_are_named() {
    for sources in Sources::ALL {
        let (_tmp, dir) = setup_with(sources, &[]);
        let llm = script(
            &dir,
            json!([
                {"tool_calls": [get_user("u1"), check("acct-ada", PRICE)]},
                {"tool_calls": [book("u1")]},
                {"answer": "Booked."}
            ]),
        );
        let out = run_scripted(&dir, &llm);
        let said = text(&out);
        assert!(out.status.success(), "{sources:?}: {said}");
        assert_eq!(calls(&dir, "book_ticket"), 1, "{sources:?}");
        assert_eq!(ledger(&dir), (500.0 - PRICE, 1), "{sources:?}");
        assert!(
            steps(&status(&dir)).contains("confirm#"),
            "{sources:?}: a person confirmed the booking"
        );
        let disagree = matches!(sources, Sources::Disagreeing | Sources::Lying);
        assert_eq!(said.contains("W0606"), disagree, "{sources:?}: {said}");
        if sources == Sources::Disagreeing {
            assert!(
                said.contains("the sidecar says it is transactional and `_meta` says it is not"),
                "{said}"
            );
        }
    }
}

#[test]
fn a_workflow_that_breaks_a_published_contract_is_refused_before_any_call() {
    for sources in [Sources::Meta, Sources::Lying] {
        let (_tmp, dir) = setup_with(sources, &[]);
        let agent = std::fs::read_to_string(dir.join("agent.troupe")).unwrap();
        let head = agent.split("llm assist").next().unwrap();
        let direct = format!(
            "{head}\nworkflow direct(user: Text @ Agent) {{\n  lifelines Agent\n  \
             act Agent: t = book_ticket(user, \"Paris\", \"Lyon\", \"2026-12-24\", economy, 47.0)\n  \
             return t @ Agent\n}}\n"
        );
        std::fs::write(dir.join("direct.troupe"), direct).unwrap();
        let out = troupe(
            &dir,
            &[],
            &["run", "direct.troupe", "--store", "db", "-i", "user=u1"],
        )
        .output()
        .unwrap();
        let said = text(&out);
        assert_eq!(out.status.code(), Some(1), "{sources:?}: {said}");
        assert!(said.contains("E0601"), "{sources:?}: {said}");
        // Only `_meta` states the requirements; the lie states none.
        assert_eq!(
            said.contains("E0602"),
            sources == Sources::Meta,
            "{sources:?}: {said}"
        );
        assert_eq!(calls(&dir, "book_ticket"), 0, "{sources:?}");
        assert_eq!(ledger(&dir), (500.0, 0));
    }
}

#[test]
fn a_run_resumed_from_a_checkpoint_remembers_the_checks_made_before_it() {
    // One model looks the user up and checks the balance; a person says
    // go on; another model books. The run is killed while the person
    // decides, after a checkpoint; resumed from it, the booking's
    // requirements are still met by the calls before the checkpoint.
    let (_tmp, dir) = setup_with(Sources::Both, &[]);
    let agent = std::fs::read_to_string(dir.join("agent.troupe")).unwrap();
    let head = agent.split("llm assist").next().unwrap();
    let source = format!(
        "{head}
llm lookup(request: Text) -> (found: Text) {{
  prompt: \"Look up and check: {{request}}\"
  tools: [get_user, check_balance]
}}
llm book(request: Text) -> (reply: Text) {{
  prompt: \"Book: {{request}}\"
  tools: [book_ticket]
}}
human go_on(found: Text) -> Bool {{ ask: \"Book it? {{found}}\" }}
workflow twice(request: Text @ User) {{
  lifelines User, Agent
  msg User(request) -> Agent(request)
  act Agent: found = lookup(request)
  msg Agent(found) -> User(found)
  act User: ok = go_on(found)
  msg User(ok) -> Agent(ok)
  act Agent: reply = book(request)
  msg Agent(reply) -> User(reply)
  return reply @ User
}}
"
    );
    std::fs::write(dir.join("twice.troupe"), source).unwrap();
    std::fs::write(
        dir.join("script.json"),
        json!({
            "lookup": {"turns": [
                {"tool_calls": [get_user("u1"), check("acct-ada", PRICE)]},
                {"answer": "Ada can pay."}
            ]},
            "book": {"turns": [{"tool_calls": [book("u1")]}, {"answer": "Booked."}]}
        })
        .to_string(),
    )
    .unwrap();
    std::fs::write(dir.join("answers.json"), r#"{"book_ticket": true}"#).unwrap();
    let mut run = {
        use std::os::unix::process::CommandExt;
        let mut c = troupe(
            &dir,
            &[],
            &[
                "run",
                "twice.troupe",
                "--store",
                "db",
                "-i",
                "request=Book",
                "--llm",
                "scripted:script.json",
                "--checkpoint-every",
                "1",
            ],
        );
        c.process_group(0);
        c.spawn().unwrap()
    };
    let start = Instant::now();
    let task = loop {
        if let Some(t) = pending_tasks(&dir)
            .into_iter()
            .find(|t| t["action"] == "go_on")
        {
            break t;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the person's task never came"
        );
        std::thread::sleep(Duration::from_millis(25));
    };
    kill_group(&mut run);
    let id = task["id"].as_str().unwrap();
    let out = troupe(&dir, &[], &["answer", id, "--yes", "--store", "db"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let out = troupe(
        &dir,
        &[],
        &[
            "resume",
            "run-1",
            "--store",
            "db",
            "--answers",
            "answers.json",
        ],
    )
    .output()
    .unwrap();
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("from its checkpoint"), "{said}");
    assert_eq!(
        (calls(&dir, "get_user"), calls(&dir, "check_balance")),
        (1, 1),
        "the checks ran once, before the checkpoint"
    );
    assert_eq!(calls(&dir, "book_ticket"), 1, "{}", steps(&status(&dir)));
    assert_eq!(ledger(&dir), (500.0 - PRICE, 1));
}

#[test]
fn unverified_tools_are_one_finding_per_server_and_the_project_decides() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../troupe-contracts/tests/corpus/err/w0605_no_contracts_line.troupe");
    let source = std::fs::read_to_string(corpus)
        .unwrap()
        .replace(" //~ W0605", "");
    std::fs::write(dir.path().join("w.troupe"), source).unwrap();
    let check = |toml: Option<&str>, extra: &[&str]| {
        match toml {
            Some(t) => std::fs::write(dir.path().join("troupe.toml"), t).unwrap(),
            None => {
                let _ = std::fs::remove_file(dir.path().join("troupe.toml"));
            }
        }
        let mut args = vec!["check", "w.troupe"];
        args.extend_from_slice(extra);
        let out = troupe(dir.path(), &[], &args).output().unwrap();
        (out.status.code(), text(&out))
    };
    // Four unverified tools of one server: one warning naming all four.
    let (code, said) = check(None, &[]);
    assert_eq!(code, Some(0), "{said}");
    assert_eq!(said.matches("W0605").count(), 1, "{said}");
    assert!(
        said.contains("4 tools `get_user`, `quote_fare`, `check_balance`, `book_ticket` of `booking` are unverified"),
        "{said}"
    );
    let (code, said) = check(Some("[contracts]\nunverified = \"allow\"\n"), &[]);
    assert_eq!(code, Some(0), "{said}");
    assert!(!said.contains("W0605"), "{said}");
    // The flag wins over the project's allowance.
    let (code, said) = check(
        Some("[contracts]\nunverified = \"allow\"\n"),
        &["--deny-unverified"],
    );
    assert_eq!(code, Some(1), "{said}");
    let (code, said) = check(Some("[contracts]\nunverified = \"deny\"\n"), &[]);
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("W0605"), "{said}");
    let (code, said) = check(Some("[contracts]\nunverified = \"never\"\n"), &[]);
    assert_ne!(code, Some(0), "{said}");
    assert!(
        said.contains("troupe.toml") && said.contains("line 2") && said.contains("allow"),
        "{said}"
    );
}

/// The agent example against a server whose `get_user` description hides
/// an instruction to the model (`--poison`).
fn poisoned(dir: &std::path::Path) {
    let agent = std::fs::read_to_string(dir.join("agent.troupe")).unwrap();
    let poisoned = agent.replace(
        "\"--meta\", \"contracts\"]",
        "\"--meta\", \"contracts\", \"--poison\"]",
    );
    assert_ne!(agent, poisoned);
    std::fs::write(dir.join("agent.troupe"), poisoned).unwrap();
}

fn careful(dir: &std::path::Path) -> String {
    script(
        dir,
        json!([
            {"tool_calls": [get_user("u1"), check("acct-ada", PRICE)]},
            {"tool_calls": [book("u1")]},
            {"answer": "Booked."}
        ]),
    )
}

fn server_calls(dir: &std::path::Path) -> usize {
    std::fs::read_to_string(dir.join("calls.log"))
        .unwrap_or_default()
        .lines()
        .count()
}

#[test]
fn poisoned_tools_refuse_the_run_before_any_call_unless_the_project_allows_the_rule() {
    let (_tmp, dir) = setup_with(Sources::Both, &[]);
    poisoned(&dir);
    let llm = careful(&dir);
    let out = run_scripted(&dir, &llm);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("nothing was run")
            && said.contains("error[model-instruction] server `booking`, tool `get_user`"),
        "{said}"
    );
    assert_eq!(server_calls(&dir), 0, "the server saw no call");

    // The project reviewed what the rule flags and allows it.
    let (_tmp, dir) = setup_with(Sources::Both, &[]);
    poisoned(&dir);
    std::fs::write(
        dir.join("troupe.toml"),
        "[contracts]\nallow = [\"model-instruction\"]\n",
    )
    .unwrap();
    let llm = careful(&dir);
    let out = run_scripted(&dir, &llm);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(calls(&dir, "book_ticket"), 1);
}

#[test]
fn a_tool_changed_since_the_project_locked_it_refuses_the_run() {
    let (_tmp, dir) = setup_with(Sources::Both, &[]);
    let server = std::path::Path::new(env!("CARGO_BIN_EXE_troupe"))
        .parent()
        .unwrap()
        .join("train-booking-server");
    // Locked while clean.
    let out = troupe(
        &dir,
        &[],
        &[
            "mcp",
            "lock",
            &server.display().to_string(),
            "-o",
            "troupe.lock.json",
        ],
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    // A clean run passes the lock.
    let llm = careful(&dir);
    let out = run_scripted(&dir, &llm);
    assert!(out.status.success(), "{}", text(&out));
    // The description changes after the review (a rug pull): even with the
    // instruction's own rule allowed, the lock refuses it.
    let (_tmp2, dir2) = setup_with(Sources::Both, &[]);
    std::fs::copy(dir.join("troupe.lock.json"), dir2.join("troupe.lock.json")).unwrap();
    poisoned(&dir2);
    std::fs::write(
        dir2.join("troupe.toml"),
        "[contracts]\nallow = [\"model-instruction\"]\n",
    )
    .unwrap();
    let llm = careful(&dir2);
    let out = run_scripted(&dir2, &llm);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("error[tool-drift]")
            && said.contains("`get_user` changed since it was locked"),
        "{said}"
    );
    assert_eq!(server_calls(&dir2), 0);
}

#[test]
fn a_tool_result_the_transport_drops_ends_the_call_within_its_timeout() {
    let (_tmp, dir) = setup_with(Sources::Both, &[]);
    let agent = std::fs::read_to_string(dir.join("agent.troupe")).unwrap();
    let huge = agent.replace(
        "\"--meta\", \"contracts\"]",
        "\"--meta\", \"contracts\", \"--huge\", \"get_user\"]",
    );
    std::fs::write(dir.join("agent.troupe"), huge).unwrap();
    std::fs::write(dir.join("troupe.toml"), "[mcp]\ncall_timeout = \"2s\"\n").unwrap();
    let llm = script(
        &dir,
        json!([{"tool_calls": [get_user("u1")]}, {"answer": "Could not look up."}]),
    );
    let out = run_scripted(&dir, &llm);
    let said = text(&out);
    // Not a hang, not a crash: the call fails, the model is told, the run
    // says so.
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("warning: 1 tool call(s) a model chose did not happen")
            && said.contains("no answer within 2s"),
        "{said}"
    );
    assert_eq!(calls(&dir, "get_user"), 1, "the server's own log");
    // A limit that is not a duration is refused, naming the setting.
    let (_tmp, dir) = setup_with(Sources::Both, &[]);
    std::fs::write(dir.join("troupe.toml"), "[mcp]\ncall_timeout = \"soon\"\n").unwrap();
    let llm = careful(&dir);
    let out = run_scripted(&dir, &llm);
    assert_ne!(out.status.code(), Some(0));
    assert!(text(&out).contains("[mcp] call_timeout"), "{}", text(&out));
}
