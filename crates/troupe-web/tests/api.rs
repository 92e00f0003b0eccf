//! The HTTP side against a real store file: access control, the JSON API,
//! the pages and their forms, and the live event stream.

mod common;

use common::*;
use reqwest::StatusCode;
use reqwest::header::{AUTHORIZATION, COOKIE, LOCATION, SET_COOKIE};
use serde_json::{Value, json};
use std::time::Duration;

const TOKEN: &str = "s3cret-token";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_is_required() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(&dir);
    let addr = serve(&store, TOKEN).await;
    let c = client();
    let url = |p: &str| format!("http://{addr}{p}");

    // The API: bearer only.
    let r = c.get(url("/api/runs")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(r.text().await.unwrap().contains("Bearer"));
    let r = c
        .get(url("/api/runs"))
        .header(AUTHORIZATION, "Bearer wrong")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let r = c
        .get(url("/api/runs"))
        .header(AUTHORIZATION, "Bearer s3cret-tokeN")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let r = c
        .get(url("/api/runs"))
        .header(AUTHORIZATION, format!("Bearer {TOKEN}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.json::<Value>().await.unwrap(), json!([]));

    // Pages: refused without the token, or with a wrong one.
    for path in ["/", "/inbox", "/runs/1", "/?token=nope", "/inbox?token="] {
        let r = c.get(url(path)).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{path}");
        assert!(r.text().await.unwrap().contains("Not signed in"));
    }
    let r = c
        .get(url("/"))
        .header(COOKIE, "troupe_token=00")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);

    // ?token=T once: a cookie, and the token leaves the address bar.
    let r = c
        .get(url(&format!("/inbox?token={TOKEN}")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()[LOCATION], "/inbox");
    let cookie = r.headers()[SET_COOKIE].to_str().unwrap().to_owned();
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    assert!(cookie.contains("SameSite=Strict"), "{cookie}");
    assert!(!cookie.contains(TOKEN), "the cookie is not the raw token");
    let pair = cookie.split(';').next().unwrap().to_owned();
    let r = c
        .get(url("/inbox"))
        .header(COOKIE, &pair)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert!(r.text().await.unwrap().contains("No task waits"));
    let r = c.get(url("/")).header(COOKIE, &pair).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);

    // The webhook endpoint needs its per-task token, not the server's.
    let r = c
        .post(url("/hooks/answer/task-1"))
        .header(AUTHORIZATION, format!("Bearer {TOKEN}"))
        .json(&json!({"yes": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
}

fn bearer() -> String {
    format!("Bearer {TOKEN}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_answer_completes_the_waiting_run_and_a_second_conflicts() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(&dir);
    let addr = serve(&store, TOKEN).await;
    let c = client();
    let url = |p: &str| format!("http://{addr}{p}");
    let (run, handle) = start_run(&store, APPROVAL, &[("request", "buy a boat")]);
    let tasks = wait_tasks(&store, run, 1);
    let task = &tasks[0].id;
    wait_status(&store, run, "waiting");

    let runs: Value = c
        .get(url("/api/runs"))
        .header(AUTHORIZATION, bearer())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(runs[0]["name"], format!("run-{run}"));
    assert_eq!(runs[0]["status"], "waiting");
    let listed: Value = c
        .get(url("/api/tasks"))
        .header(AUTHORIZATION, bearer())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed[0]["id"], task.as_str());
    assert_eq!(listed[0]["kind"], "confirm");

    // Follow the run live while it is answered.
    let mut events = c
        .get(url(&format!("/runs/{run}/events")))
        .header(AUTHORIZATION, bearer())
        .send()
        .await
        .unwrap();
    assert_eq!(events.status(), StatusCode::OK);
    let first = tokio::time::timeout(Duration::from_secs(10), events.chunk())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let first = String::from_utf8_lossy(&first).to_string();
    assert!(first.contains("event: update"), "{first}");
    assert!(first.contains("waiting"), "{first}");

    // Validated like `troupe answer`: a confirm takes yes or no only.
    let answer = url(&format!("/api/tasks/{task}/answer"));
    for bad in [
        json!({"value": "maybe"}),
        json!({}),
        json!({"yes": true, "no": true}),
    ] {
        let r = c
            .post(&answer)
            .header(AUTHORIZATION, bearer())
            .json(&bad)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{bad}");
        assert!(r.json::<Value>().await.unwrap()["error"].is_string());
    }
    let r = c
        .post(&answer)
        .header(AUTHORIZATION, bearer())
        .body("not json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let r = c
        .post(url("/api/tasks/task-999/answer"))
        .header(AUTHORIZATION, bearer())
        .json(&json!({"yes": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);

    let r = c
        .post(&answer)
        .header(AUTHORIZATION, bearer())
        .json(&json!({"yes": true, "by": "alice"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let row: Value = r.json().await.unwrap();
    assert_eq!(row["status"], "answered");
    assert_eq!(row["answer"], "true");
    assert_eq!(row["answered_by"], "alice");

    let r = c
        .post(&answer)
        .header(AUTHORIZATION, bearer())
        .json(&json!({"no": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CONFLICT);
    let msg = r.json::<Value>().await.unwrap()["error"].to_string();
    assert!(msg.contains("already answered by alice"), "{msg}");

    let results = handle.join().unwrap().expect("the run finishes");
    assert!(results.contains("approved"), "{results}");
    wait_status(&store, run, "done");

    // The stream reports the end of the run, then closes.
    let mut seen = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while !seen.contains("event: end") {
        let chunk = tokio::time::timeout_at(deadline, events.chunk())
            .await
            .expect("the stream ends in time")
            .unwrap();
        match chunk {
            Some(b) => seen.push_str(&String::from_utf8_lossy(&b)),
            None => break,
        }
    }
    assert!(seen.contains("\"status\":\"done\""), "{seen}");
    assert!(
        seen.contains("record_decision"),
        "the chart shows the effect: {seen}"
    );
    assert!(seen.contains("event: end"));

    let detail: Value = c
        .get(url(&format!("/api/runs/run-{run}")))
        .header(AUTHORIZATION, bearer())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(detail["status"], "done");
    assert_eq!(detail["result"]["approved"], true, "{detail}");
    assert!(detail["trace"].as_array().unwrap().len() >= 8, "{detail}");
    let r = c
        .get(url("/api/runs/run-999"))
        .header(AUTHORIZATION, bearer())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
}

async fn signed_in(c: &reqwest::Client, base: &str) -> String {
    let r = c
        .get(format!("{base}/?token={TOKEN}"))
        .send()
        .await
        .unwrap();
    let cookie = r.headers()[SET_COOKIE].to_str().unwrap();
    cookie.split(';').next().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inbox_fits_each_kind_and_escapes_everything() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(&dir);
    let addr = serve(&store, TOKEN).await;
    let base = format!("http://{addr}");
    let c = client();
    let cookie = signed_in(&c, &base).await;
    let evil = "<script>alert('x')</script>";
    let (run, handle) = start_run(&store, KINDS, &[("plan", evil)]);
    let tasks = wait_tasks(&store, run, 5);
    let id = |action: &str| {
        tasks
            .iter()
            .find(|t| t.action == action)
            .unwrap()
            .id
            .clone()
    };

    let page = c
        .get(format!("{base}/inbox"))
        .header(COOKIE, &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!page.contains(evil), "user text is escaped");
    assert!(page.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"));
    assert!(
        page.contains("name=\"choice\" value=\"yes\""),
        "confirm: Yes/No"
    );
    assert!(
        page.contains("name=\"value\" value=\"small\""),
        "select: a button per option"
    );
    assert!(page.contains("name=\"value\" value=\"large\""));
    assert!(
        page.contains("<input type=\"text\" name=\"value\""),
        "input: a text field"
    );
    assert!(
        page.contains("<textarea name=\"value\">&lt;script&gt;"),
        "edit: a textarea with the prefill"
    );

    let post = |task: String, form: Vec<(&'static str, &'static str)>| {
        let c = c.clone();
        let cookie = cookie.clone();
        let base = base.clone();
        async move {
            let r = c
                .post(format!("{base}/inbox/{task}"))
                .header(COOKIE, cookie)
                .form(&form)
                .send()
                .await
                .unwrap();
            (r.status(), r.text().await.unwrap())
        }
    };
    // A select must be one of its options; a confirm a yes or no.
    let (s, body) = post(id("pick"), vec![("value", "medium")]).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(body.contains("one of small, large"), "{body}");
    let (s, _) = post(id("approve"), vec![("value", "sure")]).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let (s, _) = post(id("count"), vec![("value", "{"), ("as_json", "1")]).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    // An `Int` task: text that is no integer is refused with its type (the
    // form's JSON box unchecked), and the task stays pending.
    let (s, body) = post(id("count"), vec![("value", "three")]).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(body.contains("a value of type Int"), "{body}");
    let (s, body) = post(id("count"), vec![("value", "\"3\""), ("as_json", "1")]).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(
        store.task(&id("count")).unwrap().status,
        troupe_store::TaskStatus::Pending
    );

    let (s, body) = post(id("approve"), vec![("choice", "yes")]).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert!(body.contains("Answered"));
    let (s, body) = post(id("approve"), vec![("choice", "no")]).await;
    assert_eq!(s, StatusCode::CONFLICT);
    assert!(body.contains("Someone answered first"), "{body}");
    assert!(
        post(id("pick"), vec![("value", "large")])
            .await
            .0
            .is_success()
    );
    assert!(
        post(id("remark"), vec![("value", "fine <b>")])
            .await
            .0
            .is_success()
    );
    assert!(
        post(id("count"), vec![("value", "3"), ("as_json", "1")])
            .await
            .0
            .is_success()
    );
    assert!(
        post(id("rewrite"), vec![("value", "the new plan")])
            .await
            .0
            .is_success()
    );

    let results = handle.join().unwrap().expect("the run finishes");
    assert!(results.contains("the new plan"), "{results}");
    let answered = store.task(&id("remark")).unwrap();
    assert_eq!(answered.answer.as_deref(), Some("\"fine <b>\""));
    assert_eq!(answered.answered_by.as_deref(), Some("web"));
    wait_status(&store, run, "done");

    let page = c
        .get(format!("{base}/runs/{run}"))
        .header(COOKIE, &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("<svg"), "the run page has its chart");
    assert!(!page.contains(evil));
    assert!(page.contains("data-status=\"done\""));
    let list = c
        .get(format!("{base}/fragments/runs"))
        .header(COOKIE, &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(list.contains(&format!("/runs/{run}")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_carry_security_headers_and_foreign_origins_cannot_answer() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(&dir);
    let addr = serve(&store, TOKEN).await;
    let base = format!("http://{addr}");
    let c = client();
    let cookie = signed_in(&c, &base).await;
    let r = c
        .get(format!("{base}/inbox"))
        .header(COOKIE, &cookie)
        .send()
        .await
        .unwrap();
    let h = r.headers();
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert_eq!(h["referrer-policy"], "no-referrer");
    let csp = h["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");

    let (run, handle) = start_run(&store, APPROVAL, &[("request", "a boat")]);
    let task = wait_tasks(&store, run, 1)[0].id.clone();
    // A page on another port of the same host posts the form with the
    // person's cookie: refused, by its Origin and by Sec-Fetch-Site.
    for headers in [
        vec![("origin", "http://127.0.0.1:1")],
        vec![("origin", "null")],
        vec![("sec-fetch-site", "same-site")],
        vec![("sec-fetch-site", "cross-site"), ("origin", "null")],
    ] {
        let mut r = c
            .post(format!("{base}/inbox/{task}"))
            .header(COOKIE, &cookie);
        for (name, value) in &headers {
            r = r.header(*name, *value);
        }
        let r = r.form(&[("choice", "yes")]).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{headers:?}");
        assert_eq!(
            store.task(&task).unwrap().status,
            troupe_store::TaskStatus::Pending
        );
    }
    // The inbox itself still answers (a browser under no-referrer may say
    // `Origin: null` for its own page; `Sec-Fetch-Site` decides).
    let r = c
        .post(format!("{base}/inbox/{task}"))
        .header(COOKIE, &cookie)
        .header("origin", "null")
        .header("sec-fetch-site", "same-origin")
        .form(&[("choice", "yes")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    handle.join().unwrap().expect("the run finishes");
}
