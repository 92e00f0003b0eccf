//! Failures: an action error, a timeout or an ill-typed answer stops the run
//! with an error naming the lifeline, the action and the line; the other
//! lifelines end with it (no hang), and nothing keeps running afterwards.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;
use troupe_check::Value;
use troupe_runtime::{EngineBuilder, Externs, RunError, RunOptions};

const SOURCE: &str = r#"
effect charge(amount: Int) -> Int extern
workflow pay(amount: Int @ Shop) {
  lifelines Shop, Bank, Auditor
  msg Shop(amount) -> Bank(amount)
  act Bank: receipt = charge(amount)
  msg Bank(receipt) -> Shop(receipt)
  msg Shop(receipt) -> Auditor(receipt)
  return receipt @ Auditor
}
"#;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn engine(externs: Externs, timeout: Option<Duration>) -> troupe_runtime::Engine {
    let mut b = EngineBuilder::from_source(SOURCE).unwrap().externs(externs);
    if let Some(t) = timeout {
        b = b.timeout("charge", t);
    }
    b.build().unwrap()
}

#[test]
fn an_action_error_names_lifeline_action_and_line() {
    let mut externs = Externs::new();
    externs.effect("charge", |_| async {
        Err::<Vec<Value>, _>("card declined".to_owned())
    });
    let err = rt()
        .block_on(engine(externs, None).run(vec![Value::Int(5)], RunOptions::default()))
        .unwrap_err();
    match &err {
        RunError::Action { at, message, .. } => {
            assert_eq!(at.lifeline, "Bank");
            assert_eq!(at.action.as_deref(), Some("charge"));
            assert_eq!(at.line, 6);
            assert_eq!(message, "card declined");
        }
        other => panic!("{other:?}"),
    }
    assert!(
        err.to_string()
            .contains("lifeline Bank, action `charge` (line 6): card declined"),
        "{err}"
    );
}

#[test]
fn a_slow_action_times_out_and_is_cancelled() {
    // The action counts itself live while its future exists and finished
    // when it ran to the end: a timeout must drop it unfinished.
    let live = Arc::new(AtomicUsize::new(0));
    let finished = Arc::new(AtomicBool::new(false));
    let (l, f) = (live.clone(), finished.clone());
    let mut externs = Externs::new();
    externs.effect("charge", move |_| {
        l.fetch_add(1, Ordering::SeqCst);
        let guard = Guard(l.clone());
        let f = f.clone();
        async move {
            let _guard = guard;
            tokio::time::sleep(Duration::from_secs(3600)).await;
            f.store(true, Ordering::SeqCst);
            Ok(vec![Value::Int(1)])
        }
    });
    let rt = rt();
    let err = rt
        .block_on(
            engine(externs, Some(Duration::from_millis(50)))
                .run(vec![Value::Int(5)], RunOptions::default()),
        )
        .unwrap_err();
    assert!(err.to_string().contains("timed out after 50ms"), "{err}");
    assert!(
        !finished.load(Ordering::SeqCst),
        "the run waited for the action instead of timing out"
    );
    assert_eq!(
        live.load(Ordering::SeqCst),
        0,
        "the timed-out action was not cancelled"
    );
}

struct Guard(Arc<AtomicUsize>);

impl Drop for Guard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[test]
fn an_ill_typed_answer_is_refused_with_the_output_name() {
    let mut externs = Externs::new();
    externs.effect("charge", |_| async {
        Ok(vec![Value::text("not a number")])
    });
    let err = rt()
        .block_on(engine(externs, None).run(vec![Value::Int(5)], RunOptions::default()))
        .unwrap_err();
    assert!(
        err.to_string().contains("output `result` should be Int"),
        "{err}"
    );
}

/// Dropping a run (e.g. its caller gave up) drops its pending actions.
#[test]
fn dropping_a_run_cancels_its_actions() {
    let live = Arc::new(AtomicUsize::new(0));
    let l = live.clone();
    let mut externs = Externs::new();
    externs.effect("charge", move |_| {
        l.fetch_add(1, Ordering::SeqCst);
        let guard = Guard(l.clone());
        async move {
            let _guard = guard;
            tokio::time::sleep(Duration::from_secs(30)).await;
            Ok(vec![Value::Int(1)])
        }
    });
    let engine = engine(externs, None);
    let rt = rt();
    rt.block_on(async {
        let run = engine.run(vec![Value::Int(5)], RunOptions::default());
        let _ = tokio::time::timeout(Duration::from_millis(50), run).await;
    });
    assert_eq!(live.load(Ordering::SeqCst), 0, "an action outlived its run");
}

#[test]
fn many_runs_proceed_at_once_on_a_multi_thread_runtime() {
    // How many actions are under way at once, at most: runs that proceed
    // one after another would never have two.
    let in_flight = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let (i, m) = (in_flight.clone(), most.clone());
    let mut externs = Externs::new();
    externs.effect("charge", move |call| {
        let now = i.fetch_add(1, Ordering::SeqCst) + 1;
        m.fetch_max(now, Ordering::SeqCst);
        let i = i.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            i.fetch_sub(1, Ordering::SeqCst);
            match call.args.first() {
                Some(Value::Int(n)) => Ok(vec![Value::Int(n * 10)]),
                _ => Err("bad".into()),
            }
        }
    });
    let engine = engine(externs, None);
    let results = rt().block_on(async {
        let mut set = tokio::task::JoinSet::new();
        for i in 0..500 {
            let engine = engine.clone();
            set.spawn(async move {
                engine
                    .run(
                        vec![Value::Int(i)],
                        RunOptions {
                            trace: false,
                            ..RunOptions::default()
                        },
                    )
                    .await
            });
        }
        let mut sum = 0i64;
        while let Some(r) = set.join_next().await {
            if let Value::Int(n) = r.unwrap().unwrap().results[0].1 {
                sum += n;
            }
        }
        sum
    });
    assert_eq!(results, (0..500).map(|i| i * 10).sum::<i64>());
    // 500 runs start within one 20 ms action of each other, so most of
    // their actions overlap (one at a time would mean sequential runs).
    let most = most.load(Ordering::SeqCst);
    assert!(most >= 50, "at most {most} actions were under way at once");
}
