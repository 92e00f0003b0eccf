//! The console in headless Chromium (the driver of `common::browser`): the
//! runs table's filters and search, durations, tokens and cost; a run's
//! timeline and model calls; cancel and retry through the run lifecycle;
//! the inbox that updates live and whose forms enforce the expected type
//! (in the browser, and on the server when the browser's check is bypassed:
//! the refusal shows in the form); dark mode and a phone-sized window.
//!
//! Screenshots are checked to be PNGs; with `TROUPE_CONSOLE_SCREENSHOTS=DIR`
//! they are also written to DIR (that is how `docs/console-*.png` are made).

use crate::common;

use common::browser::*;
use common::*;
use serde_json::{Value, json};
use std::sync::Arc;

const TOKEN: &str = "console-token";
const CONSENSUS: &str = include_str!("../../../../examples/consensus.troupe");

/// Records a run of `source` with the mock model `llm` (`mock:120ms`
/// sleeps before each answer, as a model would) and `seed`, not driven yet.
fn record_run(
    store: &troupe_store::Store,
    source: &str,
    inputs: &[(&str, &str)],
    llm: &str,
    seed: u64,
) -> (troupe_host::Host, i64) {
    let compiled = troupe_host::Compiled::from_source(
        source.to_owned(),
        "test.troupe",
        std::path::Path::new("."),
        None,
    )
    .expect("the workflow loads");
    let pairs: Vec<(String, String)> = inputs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let values = compiled.parse_inputs(&pairs, None).expect("inputs");
    let host = troupe_host::Host::new(
        store.clone(),
        troupe_host::HostConfig::new(std::env::temp_dir()),
        Arc::new(troupe_host::NoTools),
    );
    let settings = troupe_host::RunSettings {
        llm: Some(llm.into()),
        mock_externs: true,
        seed,
        ..troupe_host::RunSettings::default()
    };
    let started = host
        .start(&compiled, values, &settings, troupe_host::StartPolicy::New)
        .expect("start");
    (host, started.run)
}

/// Records a run of `source` and marks it failed, without an owner (as a
/// run whose process gave up).
fn failed_run(store: &troupe_store::Store, source: &str, inputs: &[(&str, &str)]) -> i64 {
    let (_, run) = record_run(store, source, inputs, "mock", 0);
    store.fail(run, "the ledger was offline").expect("fail");
    run
}

/// Runs the consensus example to its end with a mock that takes 120 ms
/// per answer and the README's seed (three rounds).
fn consensus_run(store: &troupe_store::Store) -> i64 {
    let (host, run) = record_run(
        store,
        CONSENSUS,
        &[("case", "A refund request")],
        "mock:120ms",
        5,
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let finished = std::thread::spawn(move || {
        rt.block_on(host.drive(run, &troupe_host::Overrides::default(), None))
            .map(|f| matches!(f.end, troupe_host::RunEnd::Done { .. }))
            .map_err(|e| e.to_string())
    })
    .join()
    .unwrap();
    assert_eq!(finished, Ok(true), "the consensus run finishes");
    run
}

fn base64_decode(s: &str) -> Vec<u8> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0);
    for v in s.bytes().filter_map(value) {
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}

/// A screenshot of the driver's window, checked to be a PNG of a page;
/// also written to `$TROUPE_CONSOLE_SCREENSHOTS/NAME` when that is set.
async fn screenshot(driver: &Driver, name: &str) {
    let b64 = driver.cmd("GET", "/screenshot", None).await;
    let png = base64_decode(b64.as_str().expect("base64"));
    assert!(png.starts_with(b"\x89PNG"), "{name}: a PNG");
    assert!(png.len() > 5_000, "{name}: a page, not a blank");
    if let Some(dir) = std::env::var_os("TROUPE_CONSOLE_SCREENSHOTS") {
        std::fs::write(std::path::Path::new(&dir).join(name), &png).unwrap();
    }
}

async fn text(driver: &Driver, script: &str) -> String {
    match driver.js(script).await {
        Value::String(s) => s,
        v => v.to_string(),
    }
}

/// The runs the table shows, by name.
async fn shown_runs(driver: &Driver) -> Vec<String> {
    let v = driver
        .js("return Array.prototype.map.call(document.querySelectorAll('#runs tr[data-run]'), function(r){ return r.getAttribute('data-run'); })")
        .await;
    serde_json::from_value(v).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_in_a_browser() {
    let chromium = find_program("TROUPE_CHROMIUM", &["chromium", "chromium-browser"]);
    let chromedriver = find_program("TROUPE_CHROMEDRIVER", &["chromedriver"]);
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(&dir);
    let addr = serve(&store, TOKEN).await;
    let base = format!("http://{addr}");

    // A finished consensus run (model calls, with tokens and cost set as a
    // priced model would have recorded them), a run waiting on a person, a
    // run of every task kind and a failed run.
    let done = consensus_run(&store);
    let calls = store.llm_calls(done).unwrap().len();
    assert!(
        calls >= 6,
        "three rounds of two calls are recorded: {calls}"
    );
    {
        let c = rusqlite::Connection::open(dir.path().join("troupe.db")).unwrap();
        c.execute(
            "UPDATE llm_calls SET input_tokens = 120, output_tokens = 30, cost_usd = 0.0015 WHERE run = ?1",
            [done],
        )
        .unwrap();
    }
    let (waiting, waiting_handle) =
        start_run(&store, APPROVAL, &[("request", "Buy a sailing boat")]);
    wait_tasks(&store, waiting, 1);
    wait_status(&store, waiting, "waiting");
    let (kinds, _kinds_handle) = start_run(&store, KINDS, &[("plan", "the offsite")]);
    wait_tasks(&store, kinds, 5);
    let failed = failed_run(&store, APPROVAL, &[("request", "Repaint the office")]);
    let name = troupe_store::Store::run_name;

    let profile = tempfile::tempdir().unwrap();
    let driver = Driver::start(&chromium, &chromedriver, profile.path()).await;
    driver
        .cmd(
            "POST",
            "/window/rect",
            Some(json!({"width": 1100, "height": 820})),
        )
        .await;

    // ---- the runs table: every run, with duration, tokens and cost.
    driver.goto(&format!("{base}/?token={TOKEN}")).await;
    let mut all = shown_runs(&driver).await;
    all.sort();
    let mut expected = vec![name(done), name(waiting), name(kinds), name(failed)];
    expected.sort();
    assert_eq!(all, expected);
    let row = |run: i64, cell: &str| {
        format!(
            "return document.querySelector('#runs tr[data-run=\"{}\"] td.{cell}').textContent",
            name(run)
        )
    };
    assert_eq!(
        text(&driver, &row(done, "tokens")).await,
        (150 * calls).to_string()
    );
    assert_eq!(
        text(&driver, &row(done, "cost")).await,
        format!("${:.4}", 0.0015 * calls as f64)
    );
    assert_eq!(text(&driver, &row(waiting, "tokens")).await, "—");
    let duration = text(
        &driver,
        &format!(
            "return document.querySelector('#runs tr[data-run=\"{}\"] td[data-label=Duration]').textContent",
            name(done)
        ),
    )
    .await;
    assert!(
        duration.ends_with(" ms") || duration.ends_with(" s"),
        "{duration}"
    );
    screenshot(&driver, "console-runs.png").await;

    // Filters: the form is a plain GET form (no script needed).
    driver
        .js("document.querySelector('select[name=status]').value = 'failed'; document.getElementById('filters').submit(); return true")
        .await;
    driver
        .wait_for(
            "return location.search.indexOf('status=failed') >= 0 && document.readyState === 'complete'",
            "the status filter",
        )
        .await;
    assert_eq!(shown_runs(&driver).await, vec![name(failed)]);
    assert_eq!(
        text(
            &driver,
            "return document.querySelector('select[name=status]').value"
        )
        .await,
        "failed",
        "the form keeps the filter"
    );
    driver.goto(&format!("{base}/?workflow=kinds")).await;
    assert_eq!(shown_runs(&driver).await, vec![name(kinds)]);
    driver
        .goto(&format!("{base}/?from=2000-01-01&to=2000-01-31"))
        .await;
    assert!(shown_runs(&driver).await.is_empty());
    assert!(
        text(
            &driver,
            "return document.getElementById('no-match') ? 'yes' : 'no'"
        )
        .await
            == "yes"
    );
    let today = store.run(done).unwrap().summary.created_at[..10].to_owned();
    driver
        .goto(&format!("{base}/?from={today}&to={today}"))
        .await;
    assert_eq!(shown_runs(&driver).await.len(), 4);
    // Search by input text, then by id, typed into the form.
    driver.goto(&format!("{base}/")).await;
    driver
        .js("document.querySelector('input[name=q]').value = 'SAILING boat'; document.getElementById('filters').submit(); return true")
        .await;
    driver
        .wait_for(
            "return location.search.indexOf('q=') >= 0 && document.readyState === 'complete'",
            "the search",
        )
        .await;
    assert_eq!(shown_runs(&driver).await, vec![name(waiting)]);
    driver.goto(&format!("{base}/?q={}", name(kinds))).await;
    assert_eq!(shown_runs(&driver).await, vec![name(kinds)]);
    driver.goto(&format!("{base}/?q=run-999")).await;
    assert!(shown_runs(&driver).await.is_empty());

    // ---- the run page: a timeline per lifeline, the model calls.
    driver.goto(&format!("{base}/runs/{done}")).await;
    driver
        .wait_for(
            "return document.getElementById('live').textContent === 'finished'",
            "the stream of a finished run",
        )
        .await;
    for lifeline in ["Alice", "Bob"] {
        let bars = driver
            .js(&format!(
                "return document.querySelectorAll('#timeline rect.bar[data-lifeline={lifeline}]').length"
            ))
            .await;
        assert!(bars.as_u64().unwrap() >= 2, "{lifeline}: {bars}");
    }
    let kinds_drawn = text(
        &driver,
        "return Array.prototype.map.call(document.querySelectorAll('#timeline rect.bar'), function(r){ return r.getAttribute('data-kind'); }).join(' ')",
    )
    .await;
    assert!(kinds_drawn.contains("llm"), "{kinds_drawn}");
    assert!(
        kinds_drawn.contains("model"),
        "waits on models: {kinds_drawn}"
    );
    let shown_calls = driver
        .js("return document.querySelectorAll('details.call').length")
        .await;
    assert_eq!(shown_calls.as_u64().unwrap() as usize, calls);
    let summary = text(
        &driver,
        "return document.querySelector('details.call summary').textContent",
    )
    .await;
    assert!(summary.contains("120 in · 30 out"), "{summary}");
    assert!(summary.contains("$0.0015"), "{summary}");
    assert_eq!(
        driver
            .js("return document.querySelector('details.call').open")
            .await,
        json!(false),
        "collapsed at first"
    );
    driver.click("details.call summary").await;
    assert_eq!(
        driver
            .js("return document.querySelector('details.call').open")
            .await,
        json!(true),
        "opened by a click"
    );
    let prompt = text(
        &driver,
        "return document.querySelector('details.call .prompt').innerText",
    )
    .await;
    assert!(prompt.contains("A refund request"), "{prompt}");
    assert!(
        text(
            &driver,
            "return document.getElementById('cancel') ? 'yes' : 'no'"
        )
        .await
            == "no",
        "a finished run has no cancel button"
    );
    screenshot(&driver, "console-run.png").await;

    // ---- cancel: the run is owned by its process, which stops it.
    driver.goto(&format!("{base}/runs/{waiting}")).await;
    driver
        .wait_for(
            "return document.getElementById('live').textContent === 'live'",
            "the live stream",
        )
        .await;
    let person = driver
        .js("return document.querySelectorAll('#timeline rect.bar[data-kind=person]').length")
        .await;
    assert_eq!(person, json!(1), "the wait on a person is drawn");
    driver.click("#cancel").await;
    driver
        .wait_for(
            "var n = document.getElementById('notice'); return !!n && n.textContent.indexOf('Cancel') === 0",
            "the cancel notice",
        )
        .await;
    wait_status(&store, waiting, "cancelled");
    driver
        .wait_for(
            "return document.body.getAttribute('data-status') === 'cancelled'",
            "the run as cancelled, live",
        )
        .await;
    assert!(waiting_handle.join().unwrap().is_err(), "the run stopped");

    // ---- retry: the failed run continues in the server, from its last
    // durable step, and asks its person.
    driver.goto(&format!("{base}/runs/{failed}")).await;
    driver.click("#retry").await;
    driver
        .wait_for(
            "var n = document.getElementById('notice'); return !!n && n.textContent.indexOf('Retrying') === 0",
            "the retry notice",
        )
        .await;
    wait_tasks(&store, failed, 1);
    driver
        .wait_for(
            "return document.querySelectorAll('#tasks tr[data-task]').length === 1",
            "the new task in the task table, live",
        )
        .await;

    // ---- the inbox: typed forms, a refused answer, live updates.
    driver.goto(&format!("{base}/inbox")).await;
    driver
        .wait_for(
            "return document.getElementById('live').textContent === 'live'",
            "the inbox stream",
        )
        .await;
    let count = wait_tasks(&store, kinds, 5)
        .into_iter()
        .find(|t| t.action == "count")
        .unwrap();
    let field = format!(
        "document.getElementById('{}').querySelector('[name=value]')",
        count.id
    );
    assert_eq!(
        text(
            &driver,
            &format!("var f = {field}; return f.type + ' ' + f.step")
        )
        .await,
        "number 1",
        "an Int task asks for a whole number"
    );
    assert_eq!(
        driver
            .js(&format!(
                "var f = {field}; f.value = '4.5'; return f.checkValidity()"
            ))
            .await,
        json!(false),
        "the browser refuses a fraction"
    );
    // Past the browser's check: the server refuses, in the form.
    driver
        .js(&format!(
            "var f = {field}; f.type = 'text'; f.value = 'forty'; f.form.noValidate = true; return true"
        ))
        .await;
    driver
        .click(&format!("#{} button[type=submit]", count.id))
        .await;
    driver
        .wait_for(
            &format!(
                "var c = document.getElementById('{}'); return !!c && !!c.querySelector('.refusal')",
                count.id
            ),
            "the refusal in the form",
        )
        .await;
    let refusal = text(
        &driver,
        &format!(
            "return document.getElementById('{}').querySelector('.refusal').textContent",
            count.id
        ),
    )
    .await;
    assert!(refusal.starts_with("Not answered"), "{refusal}");
    assert_eq!(
        store.task(&count.id).unwrap().status.as_str(),
        "pending",
        "a refused answer changes nothing"
    );
    driver
        .js(&format!(
            "document.getElementById('{}').scrollIntoView({{block: 'center'}}); return true",
            count.id
        ))
        .await;
    screenshot(&driver, "console-inbox.png").await;

    // A task of a new run appears without a reload; an answered one goes.
    driver.goto(&format!("{base}/inbox")).await;
    driver
        .wait_for(
            "return document.getElementById('live').textContent === 'live'",
            "the inbox stream",
        )
        .await;
    driver.js("window.notReloaded = true; return true").await;
    let (late, late_handle) = start_run(&store, APPROVAL, &[("request", "Order new laptops")]);
    let late_task = wait_tasks(&store, late, 1).remove(0);
    driver
        .wait_for(
            &format!("return !!document.getElementById('{}')", late_task.id),
            "the new task, live",
        )
        .await;
    assert_eq!(
        driver.js("return window.notReloaded === true").await,
        json!(true)
    );
    assert!(
        text(
            &driver,
            &format!(
                "return document.getElementById('{}').innerText",
                late_task.id
            )
        )
        .await
        .contains("Order new laptops")
    );
    troupe_web::answer::submit(
        &store,
        &count.id,
        troupe_web::answer::AnswerInput::Value("3".into()),
        "cli",
    )
    .expect("a whole number is accepted");
    driver
        .wait_for(
            &format!("return !document.getElementById('{}')", count.id),
            "the answered task to go, live",
        )
        .await;
    driver.click(&format!("#{} button.yes", late_task.id)).await;
    driver
        .wait_for(
            "var n = document.getElementById('notice'); return !!n && n.textContent.indexOf('Answered') === 0",
            "the answer recorded",
        )
        .await;
    late_handle.join().unwrap().expect("the late run finishes");

    // ---- the finished approval run lists its tool call (the ledger's
    // effect, mocked here).
    driver.goto(&format!("{base}/runs/{late}")).await;
    let tools = text(
        &driver,
        "var t = document.getElementById('tools'); return t ? t.innerText : ''",
    )
    .await;
    assert!(tools.contains("Ledger/record_decision"), "{tools}");

    // ---- dark mode follows the system.
    let light = text(
        &driver,
        "return getComputedStyle(document.body).backgroundColor",
    )
    .await;
    driver
        .cmd(
            "POST",
            "/goog/cdp/execute",
            Some(json!({"cmd": "Emulation.setEmulatedMedia", "params": {"features": [{"name": "prefers-color-scheme", "value": "dark"}]}})),
        )
        .await;
    let dark = text(
        &driver,
        "return getComputedStyle(document.body).backgroundColor",
    )
    .await;
    assert_eq!(light, "rgb(246, 247, 251)");
    assert_eq!(dark, "rgb(18, 21, 28)");

    // ---- a phone: the runs table stacks, nothing scrolls sideways.
    driver
        .cmd(
            "POST",
            "/window/rect",
            Some(json!({"width": 390, "height": 844})),
        )
        .await;
    driver.goto(&format!("{base}/")).await;
    let wide = driver
        .js("return document.documentElement.scrollWidth <= window.innerWidth + 1")
        .await;
    assert_eq!(wide, json!(true), "the page fits a phone's width");
    assert_eq!(
        text(
            &driver,
            "return getComputedStyle(document.querySelector('table.runs thead')).display"
        )
        .await,
        "none"
    );
    screenshot(&driver, "console-phone.png").await;
    driver.cmd("DELETE", "", None).await;
}
