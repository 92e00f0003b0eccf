//! The console over HTTP, without a browser: the runs table's filters as
//! query parameters (and the live fragment with the same ones), everything
//! a filter or search echoes escaped, the lifecycle buttons refused without
//! the session's CSRF token and refused for a run in the wrong state, the
//! inbox's typed fields and its stream; a run's model calls in the API.

use crate::common;

use common::*;
use reqwest::header::{COOKIE, SET_COOKIE};

const TOKEN: &str = "console-http-token";
const CONSENSUS: &str = include_str!("../../../../examples/consensus.troupe");

async fn signed_in(c: &reqwest::Client, base: &str) -> String {
    let r = c
        .get(format!("{base}/?token={TOKEN}"))
        .send()
        .await
        .unwrap();
    let cookie = r.headers()[SET_COOKIE].to_str().unwrap();
    cookie.split(';').next().unwrap().to_owned()
}

async fn get(c: &reqwest::Client, url: &str, cookie: &str) -> (u16, String) {
    let r = c.get(url).header(COOKIE, cookie).send().await.unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

fn csrf_in(page: &str) -> String {
    let needle = "<meta name=\"csrf-token\" content=\"";
    let at = page.find(needle).expect("a CSRF token");
    let rest = &page[at + needle.len()..];
    rest[..rest.find('"').unwrap()].to_owned()
}

fn rows(page: &str) -> usize {
    page.matches("<tr data-run=").count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filters_search_and_lifecycle_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(&dir);
    let addr = serve(&store, TOKEN).await;
    let base = format!("http://{addr}");
    let c = client();
    let cookie = signed_in(&c, &base).await;

    let evil = "<script>alert('x')</script>";
    let (waiting, _handle) = start_run(&store, APPROVAL, &[("request", evil)]);
    wait_tasks(&store, waiting, 1);
    wait_status(&store, waiting, "waiting");
    let (kinds, _kinds) = start_run(&store, KINDS, &[("plan", "the offsite")]);
    wait_tasks(&store, kinds, 5);

    let (consensus, handle) = start_run(&store, CONSENSUS, &[("case", "A refund request")]);
    handle.join().unwrap().expect("the consensus run finishes");

    let (s, all) = get(&c, &format!("{base}/"), &cookie).await;
    assert_eq!(s, 200);
    assert_eq!(rows(&all), 3);
    // The API gives a run's model calls too.
    let (_, api) = get(&c, &format!("{base}/api/runs/{consensus}"), &cookie).await;
    let api: serde_json::Value = serde_json::from_str(&api).unwrap();
    let calls = api["llm_calls"].as_array().expect("llm_calls");
    assert_eq!(calls.len(), store.llm_calls(consensus).unwrap().len());
    assert!(calls.len() >= 2);
    assert!(
        calls[0]["prompt"]
            .as_str()
            .unwrap()
            .contains("A refund request")
    );
    let (_, page) = get(&c, &format!("{base}/?workflow=kinds"), &cookie).await;
    assert_eq!(rows(&page), 1);
    assert!(page.contains(&format!("data-run=\"run-{kinds}\"")));
    let (_, page) = get(&c, &format!("{base}/?status=done"), &cookie).await;
    assert_eq!(rows(&page), 1);
    assert!(page.contains(&format!("data-run=\"run-{consensus}\"")));
    let (_, page) = get(&c, &format!("{base}/?status=failed"), &cookie).await;
    assert_eq!(rows(&page), 0);
    assert!(page.contains("No run matches the filters."));
    // The live refresh reads the same parameters.
    let (_, frag) = get(
        &c,
        &format!("{base}/fragments/runs?workflow=kinds"),
        &cookie,
    )
    .await;
    assert_eq!(rows(&frag), 1);
    // Search by input text; the echoed search and the inputs are escaped.
    let q = "%3Cscript%3Ealert";
    let (_, page) = get(&c, &format!("{base}/?q={q}"), &cookie).await;
    assert_eq!(rows(&page), 1, "{page}");
    assert!(page.contains(&format!("data-run=\"run-{waiting}\"")));
    assert!(!page.contains("<script>alert"), "nothing unescaped");
    assert!(page.contains("value=\"&lt;script&gt;alert\""));
    let (_, page) = get(
        &c,
        &format!("{base}/?workflow=%22%3E%3Cb%3E&from=%3Ci%3E"),
        &cookie,
    )
    .await;
    assert!(!page.contains("\"><b>") && !page.contains("<i>"));
    // The run page escapes the inputs too.
    let (_, page) = get(&c, &format!("{base}/runs/{waiting}"), &cookie).await;
    assert!(!page.contains("<script>alert"));
    assert!(page.contains("id=\"cancel\""));
    assert!(!page.contains("id=\"retry\""), "only a failed run retries");
    let csrf = csrf_in(&page);

    // Cancel without the session's CSRF token: refused, nothing changes.
    let r = c
        .post(format!("{base}/runs/{waiting}/cancel"))
        .header(COOKIE, &cookie)
        .form(&[("x", "1")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 403);
    assert!(store.run(waiting).unwrap().cancel_requested.is_none());
    // Retry of a run that did not fail: refused with the reason.
    let r = c
        .post(format!("{base}/runs/{waiting}/retry"))
        .header(COOKIE, &cookie)
        .form(&[("csrf", csrf.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 409);
    let body = r.text().await.unwrap();
    assert!(body.contains("Not retried"), "{body}");
    assert_eq!(
        store.run(waiting).unwrap().summary.status.as_str(),
        "waiting"
    );
    // With the token: the cancel is requested of the run's owner.
    let r = c
        .post(format!("{base}/runs/{waiting}/cancel"))
        .header(COOKIE, &cookie)
        .form(&[("csrf", csrf.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert!(r.text().await.unwrap().contains("Cancel requested"));
    assert!(store.run(waiting).unwrap().cancel_requested.is_some());
    wait_status(&store, waiting, "cancelled");

    // The inbox's fields follow the tasks' types.
    let (_, inbox) = get(&c, &format!("{base}/inbox"), &cookie).await;
    assert!(inbox.contains("type=\"number\" step=\"1\""), "an Int field");
    assert!(inbox.contains("<script src=\"/assets/inbox.js\"></script>"));
    // Its stream starts with the pending tasks.
    let mut r = c
        .get(format!("{base}/inbox/events"))
        .header(COOKIE, &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let mut seen = String::new();
    while !seen.contains("\n\n") {
        let chunk = tokio::time::timeout(std::time::Duration::from_secs(30), r.chunk())
            .await
            .expect("the stream sends the tasks")
            .unwrap()
            .expect("a chunk");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(seen.starts_with("event: tasks"), "{seen}");
    let tasks = store.tasks(false).unwrap();
    for t in &tasks {
        assert!(
            seen.contains(&format!("\"{}\"", t.id)),
            "{} in {seen}",
            t.id
        );
    }
}

/// The console's operator buttons: a run nobody drives is paused at once,
/// shows Unpause instead of Pause, and is queued again by Unpause; a
/// finished run forked after its last step replays every step (no task is
/// asked again) and ends with its result; forked at its person's step, the
/// fork asks the person again. Each POST without the CSRF token changes
/// nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_unpause_and_fork_from_the_run_page() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(&dir);
    let addr = serve(&store, TOKEN).await;
    let base = format!("http://{addr}");
    let c = client();
    let cookie = signed_in(&c, &base).await;
    let post = |url: String, form: Vec<(&'static str, String)>| {
        let (c, cookie) = (c.clone(), cookie.clone());
        async move {
            let r = c
                .post(url)
                .header(COOKIE, &cookie)
                .form(&form)
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };

    // A queued run, recorded and driven by nobody.
    let queued = store
        .create_run(&troupe_store::testing::bare_run("w"))
        .unwrap();
    let (_, page) = get(&c, &format!("{base}/runs/{queued}"), &cookie).await;
    assert!(page.contains("id=\"pause\"") && !page.contains("id=\"unpause\""));
    let csrf = csrf_in(&page);
    let (status, _) = post(format!("{base}/runs/{queued}/pause"), vec![]).await;
    assert_eq!(status, 403, "no CSRF token");
    assert_eq!(store.run(queued).unwrap().summary.status.as_str(), "queued");
    let (status, body) = post(
        format!("{base}/runs/{queued}/pause"),
        vec![("csrf", csrf.clone())],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("Paused"), "{body}");
    assert_eq!(store.run(queued).unwrap().summary.status.as_str(), "paused");
    assert!(body.contains("id=\"unpause\"") && !body.contains("id=\"pause\""));
    let (status, body) = post(
        format!("{base}/runs/{queued}/unpause"),
        vec![("csrf", csrf.clone())],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(store.run(queued).unwrap().summary.status.as_str(), "queued");
    let (status, body) = post(
        format!("{base}/runs/{queued}/unpause"),
        vec![("csrf", csrf.clone())],
    )
    .await;
    assert_eq!(status, 409, "not paused: {body}");

    // A finished run: a person approved it.
    let (done, handle) = start_run(&store, APPROVAL, &[("request", "a lamp")]);
    let task = wait_tasks(&store, done, 1)[0].id.clone();
    answer_yes(&store, &task);
    handle.join().unwrap().expect("the run finishes");
    let result = store.run(done).unwrap().summary.result;
    // Forked after its last step: everything replayed, nobody asked.
    let (status, body) = post(
        format!("{base}/runs/{done}/fork"),
        vec![("csrf", csrf.clone()), ("at", String::new())],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let fork = forked_run(&body);
    wait_status(&store, fork, "done");
    assert_eq!(store.run(fork).unwrap().summary.result, result);
    assert!(store.run_tasks(fork, false).unwrap().is_empty());
    // Forked at the person's step: asked again.
    let (status, body) = post(
        format!("{base}/runs/{done}/fork"),
        vec![("csrf", csrf.clone()), ("at", "Approver/approve#0".into())],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let again = forked_run(&body);
    assert_eq!(wait_tasks(&store, again, 1).len(), 1);
    // A step the run does not have: refused with the reason.
    let (status, body) = post(
        format!("{base}/runs/{done}/fork"),
        vec![("csrf", csrf), ("at", "Nobody/nothing#9".into())],
    )
    .await;
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("Not forked"), "{body}");
}

/// The run a fork notice links to.
fn forked_run(page: &str) -> i64 {
    let needle = "id=\"forked\">run-";
    let at = page.find(needle).expect("a link to the fork") + needle.len();
    let rest = &page[at..];
    rest[..rest.find('<').unwrap()].parse().unwrap()
}

fn answer_yes(store: &troupe_store::Store, task: &str) {
    let host = troupe_host::Host::new(
        store.clone(),
        troupe_host::HostConfig::new(std::env::temp_dir()),
        std::sync::Arc::new(troupe_host::NoTools),
    );
    host.answer(task, troupe_host::AnswerInput::Yes, "test")
        .unwrap();
}
