//! A fuzz suite for the surfaces behind the front end (issue #21), in
//! process, for volume: every case must end without a panic, within its
//! time bound, and — when it is refused — with a message that says why.
//!
//! Targets:
//! - `--input-json` and `-i name=value`: random JSON (and JSON shaped like
//!   each workflow's inputs, with random values) through
//!   `troupe_runtime::parse_inputs`, for every example and a workflow with
//!   records, enums, lists and floats;
//! - human answers: random texts, JSON texts and JSON values read as every
//!   type the programs declare (`Value::parse` / `Value::from_json`, what
//!   `troupe_host`'s validation applies), and through `Host::answer` on the
//!   pending tasks of a real store: a refused answer leaves its task
//!   pending, an accepted one is recorded in canonical form;
//! - `tools/list` captures, random and shaped (names, descriptions,
//!   schemas, annotations, `_meta` contracts), through the
//!   `troupe contracts lint` code path (`troupe_contracts::ops::lint`) in
//!   every output format;
//! - HTTP requests to `troupe serve`'s router (`tower` `oneshot`, no
//!   socket): random methods, paths, queries, headers (tokens, session
//!   cookies, CSRF tokens, origins) and bodies, over a store with a waiting
//!   run; no response is a 500.
//!
//! The binary-level targets (argument vectors, `--input-json` runs, raw
//! HTTP to `troupe serve`) are in `fuzz_cli.rs`; the front end (parse,
//! check, project, charts) in `troupe-msc/tests/it/fuzz_front_end.rs`. Case
//! counts and times are printed (`cargo test -- --nocapture`).
//!
//! This file holds the harness (a watched proptest runner), the programs
//! and the JSON strategies the targets share; each target is a module of
//! its own: `inputs.rs`, `answers.rs`, `tools_list.rs`, `http.rs`.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};
use serde_json::{Value as J, json};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use troupe_check::ir::Program;
use troupe_check::{Type, Value};

mod answers;
mod http;
mod inputs;
mod tools_list;
/// The longest one case may take (a hang detector, not a benchmark).
const CASE_DEADLINE: Duration = Duration::from_secs(20);

type Current = Arc<Mutex<Option<(Instant, String)>>>;

/// Runs `cases` cases of `strategy()` through `test` on a worker thread
/// while this thread watches the clock; prints the count and the time.
fn fuzz<S>(
    name: &str,
    cases: u32,
    strategy: fn() -> S,
    test: fn(&S::Value) -> Result<(), TestCaseError>,
) where
    S: Strategy + 'static,
    S::Value: std::fmt::Debug,
{
    let current: Current = Arc::new(Mutex::new(None));
    let shared = current.clone();
    let started = Instant::now();
    let worker = std::thread::Builder::new()
        .name(name.to_owned())
        .stack_size(16 << 20)
        .spawn(move || {
            let config = Config {
                cases,
                failure_persistence: None,
                max_shrink_iters: 256,
                ..Config::default()
            };
            let mut runner = TestRunner::new(config);
            runner
                .run(&strategy(), |input| {
                    *shared.lock().unwrap() = Some((Instant::now(), format!("{input:?}")));
                    let result = test(&input);
                    *shared.lock().unwrap() = None;
                    result
                })
                .map_err(|e| match e {
                    TestError::Fail(why, input) => format!("{why}: {input:?}"),
                    TestError::Abort(why) => format!("aborted: {why}"),
                })
        })
        .unwrap();
    while !worker.is_finished() {
        std::thread::sleep(Duration::from_millis(50));
        if let Some((start, shown)) = &*current.lock().unwrap()
            && start.elapsed() > CASE_DEADLINE
        {
            let shown: String = shown.chars().take(2_000).collect();
            panic!("{name}: a case ran longer than {CASE_DEADLINE:?}: {shown}");
        }
    }
    if let Err(e) = worker.join().unwrap() {
        let e: String = e.chars().take(4_000).collect();
        panic!("{name}: {e}");
    }
    println!(
        "fuzz {name}: {cases} cases in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

fn clear(message: &str) -> Result<(), TestCaseError> {
    prop_assert!(!message.trim().is_empty(), "an error without a message");
    Ok(())
}

// ------------------------------------------------------------ programs

/// A workflow whose inputs and human actions have every kind of type.
const TYPED: &str = r#"
enum Size { small, large }
record Item { name: Text, qty: Int, price: Float, size: Size }
record Order { items: [Item], note: Text, urgent: Bool }
human approve(o: Order) -> Bool { ask: "Approve?" }
human pick(o: Order) -> Size { ask: "Size?" }
human count(o: Order) -> Int { ask: "How many?" }
human weigh(o: Order) -> Float { ask: "Weight?" }
human amend(o: Order) -> Order { ask: "Amend the order" }
human tags(o: Order) -> [Text] { ask: "Tags?" }
human matrix(o: Order) -> [[Float]] { ask: "Numbers?" }
human edit(note: Text) -> Text { ask: "Edit", prefill: "{note}" }

workflow typed(order: Order @ A, sizes: [Size] @ A, limit: Int @ A, ratio: Float @ A, label: Text @ A, flag: Bool @ A) {
  lifelines A, B, C, D, E, F, G, H, I
  msg A(order) -> B(order)
  msg A(order) -> C(order)
  msg A(order) -> D(order)
  msg A(order) -> E(order)
  msg A(order) -> F(order)
  msg A(order) -> G(order)
  msg A(order) -> H(order)
  msg A(order) -> I(order)
  act B: ok = approve(order)
  act C: s = pick(order)
  act D: n = count(order)
  act E: w = weigh(order)
  act F: o2 = amend(order)
  act G: t = tags(order)
  act H: m = matrix(order)
  act I: e = edit(order.note)
  msg B(ok) -> A(ok)
  msg C(s) -> A(s)
  msg D(n) -> A(n)
  msg E(w) -> A(w)
  msg F(o2) -> A(o2)
  msg G(t) -> A(t)
  msg H(m) -> A(m)
  msg I(e) -> A(e)
  return ok @ A
}
"#;

/// Every example that checks on its own, and [`TYPED`].
fn programs() -> &'static [(String, Program)] {
    static PROGRAMS: OnceLock<Vec<(String, Program)>> = OnceLock::new();
    PROGRAMS.get_or_init(|| {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
        let mut out = Vec::new();
        let mut names: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "troupe"))
            .collect();
        names.sort();
        for path in names {
            let text = std::fs::read_to_string(&path).unwrap();
            if let (Some(p), _) = troupe_check::check_text(&text) {
                out.push((path.display().to_string(), p));
            }
        }
        let (typed, diags) = troupe_check::check_text(TYPED);
        let typed = typed.unwrap_or_else(|| panic!("TYPED does not check: {diags:?}"));
        out.push(("TYPED".into(), typed));
        assert!(out.len() >= 4, "the examples check");
        out
    })
}

/// Every type the programs declare for inputs and action outputs.
fn types() -> &'static [(usize, Type)] {
    static TYPES: OnceLock<Vec<(usize, Type)>> = OnceLock::new();
    TYPES.get_or_init(|| {
        let mut out = Vec::new();
        for (i, (_, p)) in programs().iter().enumerate() {
            for a in &p.actions {
                for o in a.outputs.iter().chain(&a.params) {
                    out.push((i, o.ty.clone()));
                }
            }
            for wf in &p.workflows {
                for v in &wf.inputs {
                    out.push((i, wf.var(*v).ty.clone()));
                }
            }
        }
        out
    })
}

/// Starts a run of [`TYPED`] with valid inputs and drives it on a thread of
/// its own until it waits for people.
fn waiting_run(store: troupe_store::Store, dir: &std::path::Path) -> (i64, troupe_store::Store) {
    let compiled =
        troupe_host::Compiled::from_source(TYPED.to_owned(), "typed.troupe", dir, None).unwrap();
    let inputs = json!({
        "order": {"items": [{"name": "a", "qty": 1, "price": 2.5, "size": "small"}], "note": "n", "urgent": false},
        "sizes": ["large"], "limit": 3, "ratio": 0.5, "label": "x", "flag": true
    });
    let values = compiled.parse_inputs(&[], Some(&inputs)).unwrap();
    let host = troupe_host::Host::new(
        store.clone(),
        troupe_host::HostConfig::new(dir.to_owned()),
        Arc::new(troupe_host::NoTools),
    );
    let settings = troupe_host::RunSettings {
        llm: Some("mock".into()),
        ..troupe_host::RunSettings::default()
    };
    let started = host
        .start(&compiled, values, &settings, troupe_host::StartPolicy::New)
        .unwrap();
    let run = started.run;
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let _ = rt.block_on(host.drive(run, &troupe_host::Overrides::default(), None));
    });
    (run, store)
}

// ------------------------------------------------------------ JSON

fn text_value() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z]{0,8}",
        Just(String::new()),
        Just("NaN".to_owned()),
        Just("-inf".to_owned()),
        Just("1e309".to_owned()),
        Just("99999999999999999999999".to_owned()),
        Just("-9223372036854775808".to_owned()),
        Just("small".to_owned()),
        Just("large".to_owned()),
        Just("true".to_owned()),
        Just("\u{1b}[31mred\u{7}".to_owned()),
        Just("\u{202e}evil\u{200b}".to_owned()),
        "\\PC{0,12}",
        any::<String>(),
    ]
}

fn json_value() -> impl Strategy<Value = J> {
    let leaf = prop_oneof![
        Just(J::Null),
        any::<bool>().prop_map(J::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        prop_oneof![Just(0.5), Just(-0.0), Just(1e300), Just(f64::MIN_POSITIVE)]
            .prop_map(|f| json!(f)),
        text_value().prop_map(J::String),
    ];
    leaf.prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(J::Array),
            prop::collection::vec(
                (
                    prop_oneof![
                        "[a-z]{1,6}",
                        Just("name".to_owned()),
                        Just("qty".to_owned()),
                        Just("items".to_owned()),
                        Just("size".to_owned()),
                        Just("note".to_owned()),
                        Just("urgent".to_owned()),
                        Just("price".to_owned()),
                    ],
                    inner
                ),
                0..6
            )
            .prop_map(|kv| J::Object(kv.into_iter().collect())),
        ]
    })
}

/// A step of a xorshift generator.
fn next(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

/// A value shaped like `ty`, with a random mistake now and then (another
/// kind of value, a missing or an extra field, an unknown enum value).
fn shaped(ty: &Type, types: &troupe_check::TypeTable, seed: &mut u64, depth: u32) -> J {
    let r = next(seed);
    if matches!(r % 9, 0) || depth > 6 {
        // A mistake: another kind of value.
        return match r % 5 {
            0 => J::Null,
            1 => json!("wrong"),
            2 => json!(1.5),
            3 => json!([]),
            _ => json!({"x": 1}),
        };
    }
    match ty {
        Type::Bool => J::Bool(matches!(r % 2, 0)),
        Type::Int => json!((r as i64) >> (r % 60)),
        Type::Float => json!(((r % 2000) as f64 - 1000.0) / 7.0),
        Type::Text | Type::Json | Type::Error => json!(format!("t{}", r % 100)),
        Type::Enum(id) => {
            let values = &types.enum_def(*id).values;
            match values.get((r as usize) % (values.len() + 1)) {
                Some(v) => json!(v),
                None => json!("medium"),
            }
        }
        Type::Record(id) => {
            let mut o = serde_json::Map::new();
            for (name, t) in &types.record_def(*id).fields {
                if !matches!(next(seed) % 11, 0) {
                    o.insert(name.clone(), shaped(t, types, seed, depth + 1));
                }
            }
            if matches!(next(seed) % 13, 0) {
                o.insert("extra".into(), json!(true));
            }
            J::Object(o)
        }
        Type::List(inner) => J::Array(
            (0..(r % 4))
                .map(|_| shaped(inner, types, seed, depth + 1))
                .collect(),
        ),
    }
}
