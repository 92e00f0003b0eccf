//! Reminders on the binary (`remind:` on a `human` action): two `troupe
//! serve` processes share a store and announce its tasks to one webhook
//! receiver; while the task waits, each reminder reaches the receiver
//! exactly once, numbered from 1 without gaps, with the announcement's
//! token; once the person answers through it, no more are due. Counted in
//! the receiver's own log, which deduplicates nothing.

use crate::support::{Project, read_request, said, wait_until};
use serde_json::Value;
use std::io::Write as _;
use std::net::TcpListener;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};

const WORKFLOW: &str = r#"
human approve(req: Text) -> Bool { ask: "Approve {req}?", remind: "1s" }

workflow ask(req: Text @ Clerk) {
  lifelines Clerk, Boss
  msg Clerk(req) -> Boss(req)
  act Boss: ok = approve(req)
  msg Boss(ok) -> Clerk(ok)
  return ok @ Clerk
}
"#;

/// A webhook receiver on loopback: every POST body, in arrival order.
fn receiver() -> (String, Arc<Mutex<Vec<Value>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let log = Arc::new(Mutex::new(Vec::new()));
    let posts = log.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (_, body) = read_request(&stream);
            if let Ok(doc) = serde_json::from_slice(&body) {
                posts.lock().unwrap().push(doc);
            }
            let _ = (&stream)
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        }
    });
    (url, log)
}

fn free_addr() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

fn serve(p: &Project, addr: &str) -> Child {
    p.cmd(&["serve", "--store", "db", "--bind", addr])
        .env("TROUPE_TOKEN", "a-token-of-the-test")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// POSTs `body` as JSON to `url` (`http://host:port/path`); the status.
fn post(url: &str, body: &Value) -> u16 {
    use std::io::Read as _;
    let rest = url.trim_start_matches("http://");
    let (host, path) = rest.split_at(rest.find('/').unwrap());
    let body = body.to_string();
    let mut s = std::net::TcpStream::connect(host).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

fn of(log: &Mutex<Vec<Value>>, event: &str) -> Vec<Value> {
    let log = log.lock().unwrap();
    log.iter()
        .filter(|d| d["event"] == event)
        .cloned()
        .collect()
}

#[test]
fn two_servers_send_each_reminder_once_until_the_person_answers() {
    let p = Project::new();
    p.write("ask.troupe", WORKFLOW);
    let (url, log) = receiver();
    let (a, b) = (free_addr(), free_addr());
    p.write(
        "troupe.toml",
        &format!("[notify]\npublic_url = \"http://{a}\"\n[notify.webhook]\nurl = \"{url}\"\n"),
    );
    let run = p.spawn(&[
        "run",
        "ask.troupe",
        "--store",
        "db",
        "-i",
        "req=a lamp",
        "--json",
    ]);
    // `serve` opens an existing store: the run's, once its task waits.
    wait_until("the task", || {
        let out = p.run(&["tasks", "--store", "db", "--json"]);
        serde_json::from_slice::<Value>(&out.stdout)
            .ok()
            .and_then(|v| v.as_array().map(|a| !a.is_empty()))
            .unwrap_or(false)
    });
    let mut servers = [serve(&p, &a), serve(&p, &b)];
    wait_until("three reminders", || of(&log, "reminder").len() >= 3);
    let task = of(&log, "task");
    assert_eq!(task.len(), 1, "announced once: {task:?}");
    let (id, token) = (&task[0]["task"]["id"], &task[0]["token"]);
    // The person answers through the webhook's answer URL.
    let answer_url = task[0]["answer_url"].as_str().unwrap().to_owned();
    let status = post(
        &answer_url,
        &serde_json::json!({"token": token, "yes": true}),
    );
    assert_eq!(status, 200, "answered through the webhook");
    let done = run.wait_with_output().unwrap();
    assert!(done.status.success(), "{}", said(&done));
    let doc: Value = serde_json::from_slice(&done.stdout).unwrap();
    assert_eq!(doc["results"]["ok"], true, "{doc}");
    // Every reminder the store counts as sent reached the receiver, once.
    let store =
        troupe_store::Store::open(p.path().join("db"), troupe_store::Durability::Full).unwrap();
    let n: i64 = id
        .as_str()
        .unwrap()
        .trim_start_matches("task-")
        .parse()
        .unwrap();
    wait_until("the receiver to have every reminder sent", || {
        of(&log, "reminder").len() as i64 == store.reminders_sent("webhook", n).unwrap()
    });
    let reminders = of(&log, "reminder");
    let numbers: Vec<i64> = reminders
        .iter()
        .map(|d| d["reminder"].as_i64().unwrap())
        .collect();
    assert_eq!(
        numbers,
        (1..=numbers.len() as i64).collect::<Vec<_>>(),
        "{reminders:?}"
    );
    for r in &reminders {
        assert_eq!(&r["task"]["id"], id, "{r}");
        assert_eq!(&r["token"], token, "{r}");
        assert_eq!(r["answer_url"], answer_url.as_str(), "{r}");
    }
    // Answered: nothing more is due.
    assert!(store.due_reminders("webhook").unwrap().is_empty());
    for s in &mut servers {
        let _ = s.kill();
        let _ = s.wait();
    }
}
