//! `troupe upgrade` on the binary. A durable run waiting for a person's
//! approval moves to a version that adds an audit effect after the
//! approval: after the answer it runs the new effect, once, and its chart
//! and verification show both versions. A version whose change lies
//! behind where the run stands is refused, the diverging step named, and
//! the run keeps running its version. A fleet of runs stopped at two
//! different points under two workers on PostgreSQL: the runs before the
//! change move and finish under the new version, the others finish under
//! theirs; the effects' own ledger (which deduplicates nothing) shows each
//! effect once and none lost.

use crate::support::{Project, said, signal_group, wait_until};
use serde_json::Value;
use std::collections::BTreeMap;

const V1: &str = r#"
human approve(request: Text) -> Bool { ask: "Approve {request}?" }
effect book(request: Text, approved: Bool) -> Int extern
effect audit(request: Text, approved: Bool) -> Int extern

workflow approval(request: Text @ Requester) {
  lifelines Requester, Approver, Ledger
  msg Requester(request) -> Approver(request)
  act Approver: approved = approve(request)
  msg Approver(request, approved) -> Ledger(request, approved)
  act Ledger: recorded = book(request, approved)
  msg Ledger(approved) -> Requester(approved)
  return approved @ Requester
}
"#;

/// `V1` with an audit after the approval.
fn v2() -> String {
    V1.replace(
        "  msg Approver(request, approved) -> Ledger(request, approved)\n",
        "  act Approver: audited = audit(request, approved)\n  msg Approver(request, approved) -> Ledger(request, approved)\n",
    )
}

/// `V1` with an audit before the approval: behind a run waiting for it.
fn v3() -> String {
    V1.replace(
        "  act Approver: approved = approve(request)\n",
        "  act Approver: audited = audit(request, false)\n  act Approver: approved = approve(request)\n",
    )
}

/// Effects as commands that append their name and arguments to `ledger`.
fn project() -> Project {
    let p = Project::new();
    p.write("v1.troupe", V1);
    p.write("v2.troupe", &v2());
    p.write("v3.troupe", &v3());
    let ledger = p.path().join("ledger");
    let effect = |name: &str| {
        let script = format!(
            "read -r j; echo \"{name} $j\" >> '{}'; echo 1",
            ledger.display()
        );
        format!(
            "[externs.{name}]\ncommand = [\"sh\", \"-c\", {}]\n",
            Value::String(script)
        )
    };
    p.write("troupe.toml", &(effect("book") + &effect("audit")));
    p
}

fn json(p: &Project, args: &[&str]) -> Value {
    let out = p.run(args);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", said(&out)))
}

/// Starts `troupe run FILE --store db` and stops it with SIGINT once it
/// waits for its person: a durable run nobody drives, waiting.
fn waiting_run(p: &Project, input: &str) {
    let mut child = p.spawn(&["run", "v1.troupe", "--store", "db", "-i", input]);
    wait_until("the approval task", || {
        let out = p.run(&["tasks", "--store", "db", "--json"]);
        serde_json::from_slice::<Value>(&out.stdout)
            .ok()
            .and_then(|t| t.as_array().map(|t| !t.is_empty()))
            .unwrap_or(false)
    });
    signal_group(child.id(), "-INT");
    let _ = child.wait().unwrap();
}

#[test]
fn a_run_waiting_for_approval_moves_to_a_version_with_an_audit_and_runs_it_after_the_answer() {
    let p = project();
    waiting_run(&p, "request=a laptop");
    let before = json(&p, &["status", "run-1", "--store", "db", "--json"]);

    // An audit before the approval lies behind the run: refused, named.
    let out = p.run(&["upgrade", "run-1", "--to", "v3.troupe", "--store", "db"]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("step Approver/approve#0 is under way")
            && text.contains("act Approver: audited = audit(request, false)"),
        "{}",
        said(&out)
    );
    // A dry run of the good version changes nothing either.
    let dry = json(
        &p,
        &[
            "upgrade",
            "run-1",
            "--to",
            "v2.troupe",
            "--store",
            "db",
            "--dry-run",
            "--json",
        ],
    );
    assert_eq!(dry[0]["outcome"], "would_move", "{dry}");
    let unchanged = json(&p, &["status", "run-1", "--store", "db", "--json"]);
    assert_eq!(unchanged["fingerprint"], before["fingerprint"]);
    assert_eq!(unchanged["version"], 1);

    let out = p.run(&["upgrade", "run-1", "--to", "v2.troupe", "--store", "db"]);
    assert!(out.status.success(), "{}", said(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("moved to v2.troupe (version 2)"));
    let runs = p.run(&["runs", "--store", "db"]);
    assert!(
        String::from_utf8_lossy(&runs.stdout).contains("approval@v2"),
        "{}",
        said(&runs)
    );

    let out = p.run(&["answer", "task-1", "--yes", "--store", "db"]);
    assert!(out.status.success(), "{}", said(&out));
    let out = p.run(&["resume", "run-1", "--store", "db", "--json"]);
    assert!(out.status.success(), "{}", said(&out));
    // Each effect once; the new one after the answer.
    let ledger = p.read("ledger");
    let lines: Vec<&str> = ledger.lines().collect();
    assert_eq!(lines.len(), 2, "{ledger}");
    assert!(
        lines[0].starts_with("audit ") && lines[0].contains("true"),
        "{ledger}"
    );
    assert!(lines[1].starts_with("book "), "{ledger}");
    // Nobody was asked twice.
    let tasks = json(&p, &["tasks", "--all", "--store", "db", "--json"]);
    assert_eq!(tasks.as_array().map(Vec::len), Some(1), "{tasks}");

    let status = json(&p, &["status", "run-1", "--store", "db", "--json"]);
    assert_eq!(status["status"], "done");
    assert_eq!(status["version"], 2);
    assert_eq!(status["versions"][0]["fingerprint"], before["fingerprint"]);
    let verify = p.run(&["verify", "run-1", "--store", "db"]);
    assert!(verify.status.success(), "{}", said(&verify));
    assert!(
        String::from_utf8_lossy(&verify.stdout).contains("under version 1 is a prefix"),
        "{}",
        said(&verify)
    );
    let chart = p.run(&["msc", "run-1", "--store", "db", "--format", "mermaid"]);
    let chart = String::from_utf8_lossy(&chart.stdout).into_owned();
    let mark = chart
        .find("moved from version 1 to version 2")
        .expect(&chart);
    // The request went before the move, the audit after it.
    assert!(chart.find("request = ").unwrap() < mark, "{chart}");
    assert!(
        chart.find("audit(request, approved)").unwrap() > mark,
        "{chart}"
    );
}

/// Two people in turn: a run waits for the approval, then for the
/// confirmation; `fleet_v2` audits right after the approval.
const FLEET_V1: &str = r#"
human approve(request: Text) -> Bool { ask: "Approve {request}?" }
human confirm(request: Text) -> Bool { ask: "Confirm {request}?" }
effect book(request: Text, approved: Bool) -> Int extern
effect audit(request: Text, approved: Bool) -> Int extern

workflow twice(request: Text @ Requester) {
  lifelines Requester, Approver, Ledger
  msg Requester(request) -> Approver(request)
  act Approver: approved = approve(request)
  msg Approver(request, approved) -> Ledger(request, approved)
  act Ledger: confirmed = confirm(request)
  act Ledger: recorded = book(request, confirmed)
  msg Ledger(approved) -> Requester(approved)
  return approved @ Requester
}
"#;

#[test]
fn a_fleet_moves_the_runs_before_the_change_and_the_others_finish_their_own_version() {
    const RUNS: usize = 100;
    let p = project();
    p.write("fleet1.troupe", FLEET_V1);
    p.write(
        "fleet2.troupe",
        &FLEET_V1.replace(
            "  msg Approver(request, approved) -> Ledger(request, approved)\n",
            "  act Approver: audited = audit(request, approved)\n  msg Approver(request, approved) -> Ledger(request, approved)\n",
        ),
    );
    let db = troupe_store::testing::TestDatabase::new();
    for i in 0..RUNS {
        let out = p.run(&[
            "run",
            "fleet1.troupe",
            "--store",
            &db.url,
            "--detach",
            "-i",
            &format!("request=r{i}"),
        ]);
        assert!(out.status.success(), "{}", said(&out));
    }
    let worker = || {
        p.cmd(&[
            "worker",
            "--store",
            &db.url,
            "--park-after",
            "1ms",
            "--sweep",
            "200ms",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
    };
    let mut workers = [worker(), worker()];
    let runs = || json(&p, &["runs", "--store", &db.url, "--json"]);
    let count = |status: &str| {
        runs()
            .as_array()
            .map_or(0, |r| r.iter().filter(|r| r["status"] == status).count())
    };
    let pending = |action: &str| {
        json(&p, &["tasks", "--store", &db.url, "--json"])
            .as_array()
            .map_or(0, |t| t.iter().filter(|t| t["action"] == action).count())
    };
    wait_until("every run parked at its approval", || {
        count("parked") == RUNS && pending("approve") == RUNS
    });
    // About half of them are approved and go on to wait for their
    // confirmation: their Approver stands past where the new version adds
    // the audit.
    let tasks = json(&p, &["tasks", "--store", &db.url, "--json"]);
    let mut past = Vec::new();
    for t in tasks.as_array().unwrap().iter().filter(|_| rand_half()) {
        let out = p.run(&[
            "answer",
            t["id"].as_str().unwrap(),
            "--yes",
            "--store",
            &db.url,
        ]);
        assert!(out.status.success(), "{}", said(&out));
        past.push(t["run"].as_str().unwrap().to_owned());
    }
    assert!(
        !past.is_empty() && past.len() < RUNS,
        "a coin that always fell one way"
    );
    wait_until("the approved runs parked at their confirmation", || {
        count("parked") == RUNS && pending("confirm") == past.len()
    });
    let out = p.run(&[
        "upgrade",
        "--workflow",
        "twice",
        "--to",
        "fleet2.troupe",
        "--store",
        &db.url,
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(1), "some runs stay: {}", said(&out));
    let outcomes: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", said(&out)));
    let outcomes = outcomes.as_array().unwrap();
    assert_eq!(outcomes.len(), RUNS);
    for o in outcomes {
        let stays = past.iter().any(|r| o["run"] == r.as_str());
        assert_eq!(o["outcome"], if stays { "refused" } else { "moved" }, "{o}");
        if stays {
            assert!(
                o["reason"]
                    .as_str()
                    .unwrap()
                    .contains("act Approver: audited = audit(request, approved)"),
                "{o}"
            );
        }
    }
    // Everyone answers what is asked until every run is done.
    wait_until("every run done", || {
        for t in json(&p, &["tasks", "--store", &db.url, "--json"])
            .as_array()
            .unwrap()
        {
            let _ = p.run(&[
                "answer",
                t["id"].as_str().unwrap(),
                "--yes",
                "--store",
                &db.url,
            ]);
        }
        count("done") == RUNS
    });
    for w in &mut workers {
        stop(w);
    }
    // The ledger, by request: the moved runs audited once and recorded
    // once, the others recorded once and never audited.
    let mut seen: BTreeMap<(String, String), usize> = BTreeMap::new();
    for line in p.read("ledger").lines() {
        let (effect, args) = line.split_once(' ').unwrap();
        let args: Value = serde_json::from_str(args).unwrap();
        *seen
            .entry((
                effect.to_owned(),
                args["request"].as_str().unwrap().to_owned(),
            ))
            .or_default() += 1;
    }
    for r in runs().as_array().unwrap() {
        let name = r["name"].as_str().unwrap();
        let detail = json(&p, &["status", name, "--store", &db.url, "--json"]);
        let request = detail["inputs"]["request"].as_str().unwrap().to_owned();
        let moved = !past.iter().any(|a| a == name);
        assert_eq!(
            seen.get(&("book".into(), request.clone())),
            Some(&1),
            "{name}"
        );
        assert_eq!(
            seen.get(&("audit".into(), request.clone()))
                .copied()
                .unwrap_or(0),
            usize::from(moved),
            "{name}"
        );
        assert_eq!(detail["version"], if moved { 2 } else { 1 }, "{name}");
        let verify = p.run(&["verify", name, "--store", &db.url]);
        assert!(verify.status.success(), "{}", said(&verify));
    }
    assert_eq!(seen.values().sum::<usize>(), 2 * RUNS - past.len());
}

/// A coin for each task, different per test run.
fn rand_half() -> bool {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u8(0);
    h.finish().is_multiple_of(2)
}

fn stop(child: &mut std::process::Child) {
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let _ = child.wait();
}
