//! Checkpoints and retention, through the run lifecycle (`troupe_host`) as
//! `troupe run --store` and `troupe resume` drive it. (The store's own
//! tests cover damaged checkpoints; the crash test, SIGKILLs.)
//!
//! The oracle for every recorded history is a separate in-memory run of the
//! same workflow (no store, no checkpoint, no journal) whose trace gives
//! each lifeline's word: a run resumed from a checkpoint must have recorded
//! exactly those words — nothing lost, nothing twice — and its result.

use std::path::Path;
use std::sync::{Arc, Mutex};
use troupe_check::Value;
use troupe_host::{
    AnswerInput, Compiled, Host, HostConfig, NoTools, Notice, Overrides, RunEnd, RunSettings,
    StartPolicy,
};
use troupe_msc::Event;
use troupe_runtime::{EngineBuilder, RunOptions, ScriptedHumans};
use troupe_store::{Durability, Store};

/// Counts to `limit`, waits for a person, counts on to twice `limit`.
const SOURCE: &str = r#"
human go_on(k: Int) -> Bool { ask: "Go on after {k}?" }

workflow counted(limit: Int @ Ping) {
  lifelines Ping, Pong
  act Ping: k = 0
  while k < limit @ Ping {
    msg Ping(k) -> Pong(n)
    act Pong: n = n + 1
    msg Pong(n) -> Ping(k)
  }
  act Ping: ok = go_on(k)
  while k < limit * 2 @ Ping {
    msg Ping(k) -> Pong(n)
    act Pong: n = n + 1
    msg Pong(n) -> Ping(k)
  }
  return k @ Ping
}
"#;

/// As [`SOURCE`], but the second loop also asks whether Pong's counter was
/// once exactly 10, as far as Ping knows, and whether Ping's own `k` has
/// stayed positive since it was 10: long before the person is asked, so
/// only what the checkpoint kept remembers it — the `once` also in the
/// views the messages in flight carry, the `since` only in Ping's own.
fn causal() -> String {
    let plain = "while k < limit * 2 @ Ping";
    assert!(SOURCE.contains(plain));
    SOURCE.replace(
        plain,
        "while k < limit * 2 and once(at(Pong, n == 10)) and since(k > 0, k == 10) and seen(Pong).n == k @ Ping",
    )
}

fn compiled(source: &str) -> Compiled {
    Compiled::from_source(source.into(), "counted.troupe", Path::new("."), None).unwrap()
}

type Notices = Arc<Mutex<Vec<Notice>>>;

fn host(dir: &Path) -> (Host, Notices) {
    let store = Store::open(dir.join("store.db"), Durability::Normal).unwrap();
    let mut config = HostConfig::new(dir.to_owned());
    // Every incarnation is the same owner: it adopts the lease of the
    // process it replaces, as `--detach` hands one over.
    config.owner = "checkpoint-test".into();
    let notices: Notices = Arc::default();
    let seen = notices.clone();
    config.observer = Some(Arc::new(move |n: &Notice| {
        seen.lock().unwrap().push(n.clone());
    }));
    (Host::new(store, config, Arc::new(NoTools)), notices)
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Each lifeline's word in an in-memory run of the workflow.
fn oracle(source: &str, limit: i64) -> Vec<Vec<Event>> {
    let answers = serde_json::json!({ "go_on": true })
        .as_object()
        .cloned()
        .unwrap();
    let engine = EngineBuilder::from_source(source)
        .unwrap()
        .humans(Arc::new(ScriptedHumans::new(answers)))
        .build()
        .unwrap();
    let outcome = rt()
        .block_on(engine.run(vec![Value::Int(limit)], RunOptions::default()))
        .unwrap();
    assert_eq!(outcome.results[0].1, Value::Int(2 * limit));
    outcome.trace.unwrap().execution(2).words
}

/// Each lifeline's word as the store recorded it (the retained part).
fn recorded(store: &Store, run: i64) -> Vec<Vec<Event>> {
    let mut words = vec![Vec::new(), Vec::new()];
    store
        .for_each_event(run, |l, e| words[l.0 as usize].push(e.clone()))
        .unwrap();
    words
}

/// Starts the run and drives it until it waits for the person; then the
/// process "stops" (the drive is dropped, as a killed process stops).
fn run_until_waiting(
    source: &str,
    host: &Host,
    notices: &Notices,
    settings: &RunSettings,
    limit: i64,
) -> i64 {
    let started = host
        .start(
            &compiled(source),
            vec![Value::Int(limit)],
            settings,
            StartPolicy::New,
        )
        .unwrap();
    let rt = rt();
    let overrides = Overrides::default();
    rt.block_on(async {
        let drive = host.drive(started.run, &overrides, None);
        let waiting = async {
            loop {
                if notices
                    .lock()
                    .unwrap()
                    .iter()
                    .any(|n| matches!(n, Notice::Waiting { .. }))
                {
                    return;
                }
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
        };
        tokio::select! {
            end = drive => panic!("the run ended before it waited: {:?}", end.map(|f| format!("{:?}", f.end))),
            () = waiting => {}
        }
    });
    started.run
}

/// Answers the waiting task and drives the run to its end: the result.
fn answer_and_resume(host: &Host, run: i64) -> i64 {
    let task = host.store().tasks(false).unwrap().remove(0);
    host.answer(&task.id, AnswerInput::Yes, "test").unwrap();
    host.claim(run).unwrap();
    let finished = rt()
        .block_on(host.drive(run, &Overrides::default(), None))
        .unwrap();
    match finished.end {
        RunEnd::Done {
            results, verified, ..
        } => {
            verified.expect("the resumed run verifies online");
            match results[0].1 {
                Value::Int(k) => k,
                ref other => panic!("result {other:?}"),
            }
        }
        other => panic!("the resumed run ended with {other:?}"),
    }
}

fn resumed_from(notices: &Notices) -> Option<u64> {
    notices.lock().unwrap().iter().find_map(|n| match n {
        Notice::Resuming { checkpoint, .. } => *checkpoint,
        _ => None,
    })
}

#[test]
fn a_run_resumes_from_its_checkpoint_and_records_exactly_its_words() {
    let dir = tempfile::tempdir().unwrap();
    let (host, notices) = host(dir.path());
    let limit = 5_000;
    let settings = RunSettings {
        checkpoint_every: Some(997),
        ..RunSettings::default()
    };
    let run = run_until_waiting(SOURCE, &host, &notices, &settings, limit);
    let (at, _) = host
        .store()
        .checkpoints(run)
        .unwrap()
        .expect("a checkpoint");
    // The first loop is 4 events a round: the checkpoint is well into it.
    assert!(
        at >= 4 * limit as u64 - 997,
        "the latest checkpoint is at {at}"
    );
    // Only the latest checkpoint is kept when the whole history is.
    let k = host.store().checkpoints(run).unwrap();
    assert!(k.is_some());

    let (host, notices) = self::host(dir.path());
    assert_eq!(answer_and_resume(&host, run), 2 * limit);
    let from = resumed_from(&notices).expect("the run resumed from a checkpoint");
    assert!(
        from > 0 && from <= at,
        "resumed from {from}, latest was {at}"
    );

    // Nothing lost, nothing twice: the recorded words are the oracle's.
    let expected = oracle(SOURCE, limit);
    let got = recorded(host.store(), run);
    for l in 0..2 {
        assert_eq!(
            got[l].len(),
            expected[l].len(),
            "lifeline {l}'s word length"
        );
        assert!(got[l] == expected[l], "lifeline {l}'s word differs");
    }
    let v = host.verify(run).unwrap().unwrap();
    assert_eq!(
        (v.from, v.events as usize),
        (0, expected[0].len() + expected[1].len())
    );
}

#[test]
fn retention_bounds_the_history_and_verification_covers_the_window() {
    let dir = tempfile::tempdir().unwrap();
    let (host, notices) = host(dir.path());
    let limit = 60_000;
    let keep = 20_000;
    let settings = RunSettings {
        history_keep: Some(keep),
        ..RunSettings::default()
    };
    let run = run_until_waiting(SOURCE, &host, &notices, &settings, limit);
    let (host, _) = self::host(dir.path());
    assert_eq!(answer_and_resume(&host, run), 2 * limit);

    let expected = oracle(SOURCE, limit);
    let total = (expected[0].len() + expected[1].len()) as u64;
    let detail = host.store().run(run).unwrap();
    assert!(detail.pruned > 0, "nothing was pruned");
    assert_eq!(
        detail.events + detail.pruned,
        total,
        "retained + pruned = all events"
    );
    // At least `keep` kept, and at most `keep` plus one checkpoint interval
    // (keep / 2) plus the chunk being written.
    assert!(detail.events >= keep, "{} events kept", detail.events);
    assert!(
        detail.events <= keep + keep / 2 + 8_000,
        "{} events kept with --history-keep {keep}",
        detail.events
    );
    // The retained events are the last ones of the oracle's words, in order.
    let got = recorded(host.store(), run);
    for l in 0..2 {
        let tail = &expected[l][expected[l].len() - got[l].len()..];
        assert!(
            got[l] == tail,
            "lifeline {l}'s retained word is not its tail"
        );
    }
    let v = host.verify(run).unwrap().unwrap();
    assert_eq!((v.from, v.events), (detail.pruned, total));
}

#[test]
fn a_causal_guard_resumed_from_a_checkpoint_decides_on_what_was_seen_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let (host, notices) = host(dir.path());
    let limit = 500;
    let settings = RunSettings {
        checkpoint_every: Some(97),
        ..RunSettings::default()
    };
    let run = run_until_waiting(&causal(), &host, &notices, &settings, limit);
    let (host, notices) = self::host(dir.path());
    // The second loop runs only if the restored view remembers n == 10.
    assert_eq!(answer_and_resume(&host, run), 2 * limit);
    let from = resumed_from(&notices).expect("the run resumed from a checkpoint");
    assert!(from > 40, "resumed from event {from}, before n was 10");
    let expected = oracle(&causal(), limit);
    let got = recorded(host.store(), run);
    for l in 0..2 {
        assert!(got[l] == expected[l], "lifeline {l}'s word differs");
    }
    // `verify` recomputes both loops' decisions from the recorded chart.
    let v = host.verify(run).unwrap().unwrap();
    assert_eq!(v.events as usize, expected[0].len() + expected[1].len());
}

#[test]
fn a_pruned_causal_run_is_rechecked_from_the_checkpoint_its_history_starts_at() {
    let dir = tempfile::tempdir().unwrap();
    let (host, notices) = host(dir.path());
    let limit = 3_000;
    let settings = RunSettings {
        history_keep: Some(2_000),
        ..RunSettings::default()
    };
    let run = run_until_waiting(&causal(), &host, &notices, &settings, limit);
    let (host, _) = self::host(dir.path());
    assert_eq!(answer_and_resume(&host, run), 2 * limit);
    let detail = host.store().run(run).unwrap();
    assert!(detail.pruned > 0, "nothing was pruned");
    // The second loop's decisions depend on n == 10, long pruned: the
    // recheck starts from the views of the checkpoint the history starts
    // at, and agrees with every decision after it.
    let v = host.verify(run).unwrap().unwrap();
    assert_eq!(v.from, detail.pruned);
}
