//! The HTTP side against a real store file: access control (the token,
//! sessions and their CSRF tokens), the JSON API, the pages and their forms,
//! and the live event stream.

use crate::common;

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
        .header(COOKIE, "troupe_session=00")
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
    assert!(cookie.contains("Max-Age="), "the session expires: {cookie}");
    let pair = cookie.split(';').next().unwrap().to_owned();
    let id = pair.strip_prefix("troupe_session=").unwrap();
    assert_eq!(id.len(), 64, "{pair}");
    assert!(
        !id.contains(&hex(TOKEN)),
        "the session id is not derived from the token"
    );
    // Signing in again gives another session.
    let again = c
        .get(url(&format!("/?token={TOKEN}")))
        .send()
        .await
        .unwrap();
    let other = again.headers()[SET_COOKIE].to_str().unwrap();
    assert_ne!(other.split(';').next().unwrap(), pair);
    // The token in the old cookie form is no session.
    let r = c
        .get(url("/"))
        .header(COOKIE, format!("troupe_session={}", hex(TOKEN)))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
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

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

/// Signs in with `?token=`; returns the session cookie (`name=value`).
async fn signed_in(c: &reqwest::Client, base: &str) -> String {
    let r = c
        .get(format!("{base}/?token={TOKEN}"))
        .send()
        .await
        .unwrap();
    let cookie = r.headers()[SET_COOKIE].to_str().unwrap();
    cookie.split(';').next().unwrap().to_owned()
}

/// The CSRF token a page of the session `cookie` carries (in its `<meta>`).
async fn csrf_of(c: &reqwest::Client, base: &str, cookie: &str) -> String {
    let page = c
        .get(format!("{base}/inbox"))
        .header(COOKIE, cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let needle = "<meta name=\"csrf-token\" content=\"";
    let at = page
        .find(needle)
        .unwrap_or_else(|| panic!("no CSRF token in {page}"));
    let rest = &page[at + needle.len()..];
    rest[..rest.find('"').unwrap()].to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inbox_fits_each_kind_and_escapes_everything() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(&dir);
    let addr = serve(&store, TOKEN).await;
    let base = format!("http://{addr}");
    let c = client();
    let cookie = signed_in(&c, &base).await;
    let csrf = csrf_of(&c, &base, &cookie).await;
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
    assert_eq!(
        page.matches(&format!("name=\"csrf\" value=\"{csrf}\""))
            .count(),
        6,
        "every form carries the session's CSRF token (5 tasks and sign-out)"
    );
    assert!(
        !page.contains("<script>"),
        "no inline script (the CSP forbids it)"
    );

    let post = |task: String, form: Vec<(&'static str, &'static str)>| {
        let c = c.clone();
        let cookie = cookie.clone();
        let base = base.clone();
        let mut form: Vec<(&str, String)> =
            form.into_iter().map(|(k, v)| (k, v.to_owned())).collect();
        form.push(("csrf", csrf.clone()));
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
    let csrf = csrf_of(&c, &base, &cookie).await;
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
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    // The page's own script and style are files of the server, served to
    // anyone (they hold no secret) with their types.
    for (asset, ty) in [
        ("/assets/troupe.css", "text/css"),
        ("/assets/run.js", "text/javascript"),
        ("/assets/index.js", "text/javascript"),
    ] {
        let r = c.get(format!("{base}{asset}")).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{asset}");
        assert!(
            r.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with(ty),
            "{asset}"
        );
    }

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
        let r = r
            .form(&[("choice", "yes"), ("csrf", csrf.as_str())])
            .send()
            .await
            .unwrap();
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
        .form(&[("choice", "yes"), ("csrf", csrf.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    handle.join().unwrap().expect("the run finishes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_change_on_the_cookie_alone_needs_the_sessions_csrf_token() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(&dir);
    let addr = serve(&store, TOKEN).await;
    let base = format!("http://{addr}");
    let c = client();
    let cookie = signed_in(&c, &base).await;
    let csrf = csrf_of(&c, &base, &cookie).await;
    let other = signed_in(&c, &base).await;
    let others_csrf = csrf_of(&c, &base, &other).await;
    assert_ne!(csrf, others_csrf);
    assert_eq!(csrf.len(), 64);

    let (run, handle) = start_run(&store, APPROVAL, &[("request", "a boat")]);
    let task = wait_tasks(&store, run, 1)[0].id.clone();
    let pending = || store.task(&task).unwrap().status == troupe_store::TaskStatus::Pending;
    let inbox = format!("{base}/inbox/{task}");
    let api = format!("{base}/api/tasks/{task}/answer");
    // Same-origin as far as the headers say, the cookie sent along — but no
    // CSRF token, a wrong one, or another session's: refused.
    for form in [
        vec![("choice", "yes")],
        vec![("choice", "yes"), ("csrf", "")],
        vec![("choice", "yes"), ("csrf", "00")],
        vec![("choice", "yes"), ("csrf", others_csrf.as_str())],
    ] {
        let r = c
            .post(&inbox)
            .header(COOKIE, &cookie)
            .header("sec-fetch-site", "same-origin")
            .form(&form)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{form:?}");
        assert!(r.text().await.unwrap().contains("CSRF token"));
        assert!(pending(), "{form:?}");
    }
    // The API on the cookie: the header, never a form field or nothing.
    for csrf_header in [None, Some("00"), Some(others_csrf.as_str())] {
        let mut r = c
            .post(&api)
            .header(COOKIE, &cookie)
            .json(&json!({"yes": true}));
        if let Some(h) = csrf_header {
            r = r.header("x-csrf-token", h);
        }
        let r = r.send().await.unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{csrf_header:?}");
        assert!(
            r.json::<Value>().await.unwrap()["error"]
                .as_str()
                .unwrap()
                .contains("CSRF")
        );
        assert!(pending());
    }
    // A text/plain body (what a cross-site form can send) is no form.
    let r = c
        .post(&inbox)
        .header(COOKIE, &cookie)
        .header("content-type", "text/plain")
        .body(format!("choice=yes&csrf={csrf}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert!(pending());

    // With its own token the session answers, through the form or the header.
    let r = c
        .post(&api)
        .header(COOKIE, &cookie)
        .header("x-csrf-token", &csrf)
        .json(&json!({"value": "maybe"}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status(),
        StatusCode::BAD_REQUEST,
        "past the CSRF check, refused by type"
    );
    let r = c
        .post(&inbox)
        .header(COOKIE, &cookie)
        .form(&[("choice", "yes"), ("csrf", csrf.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert!(r.text().await.unwrap().contains("Answered"));
    handle.join().unwrap().expect("the run finishes");

    // Scripts with the bearer token need no CSRF token (no page can add the
    // header); a session signs out with its token, and is gone.
    let r = c
        .post(&api)
        .header(AUTHORIZATION, bearer())
        .json(&json!({"no": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status(),
        StatusCode::CONFLICT,
        "bearer passes, the task is answered"
    );
    let r = c
        .post(format!("{base}/logout"))
        .header(COOKIE, &cookie)
        .form(&[("csrf", others_csrf.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status(),
        StatusCode::FORBIDDEN,
        "sign-out needs the token too"
    );
    let r = c
        .post(format!("{base}/logout"))
        .header(COOKIE, &cookie)
        .form(&[("csrf", csrf.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert!(
        r.headers()[SET_COOKIE]
            .to_str()
            .unwrap()
            .contains("Max-Age=0")
    );
    let r = c
        .get(format!("{base}/inbox"))
        .header(COOKIE, &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let r = c
        .get(format!("{base}/inbox"))
        .header(COOKIE, &other)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK, "the other session lives on");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sign_in_form_opens_a_session_and_sessions_expire() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(&dir);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let options = troupe_web::ServeOptions {
        token: TOKEN.into(),
        notify: troupe_web::NotifyConfig::default(),
        announce: false,
        session_ttl: Duration::from_secs(1),
        interrupt: None,
    };
    tokio::spawn(troupe_web::serve_listener(listener, store.clone(), options));
    let base = format!("http://{addr}");
    let c = client();

    let page = c.get(format!("{base}/runs/1")).send().await.unwrap();
    assert_eq!(page.status(), StatusCode::UNAUTHORIZED);
    let page = page.text().await.unwrap();
    assert!(page.contains("action=\"/login\""), "{page}");
    assert!(page.contains("name=\"next\" value=\"/runs/1\""), "{page}");
    let r = c
        .post(format!("{base}/login"))
        .form(&[("token", "wrong"), ("next", "/inbox")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(r.headers().get(SET_COOKIE).is_none());
    // Another site as `next` is not followed.
    let r = c
        .post(format!("{base}/login"))
        .form(&[("token", TOKEN), ("next", "//evil.example/")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()[LOCATION], "/");
    let r = c
        .post(format!("{base}/login"))
        .form(&[("token", TOKEN), ("next", "/inbox")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()[LOCATION], "/inbox");
    let cookie = r.headers()[SET_COOKIE].to_str().unwrap();
    assert!(cookie.contains("Max-Age=1"), "{cookie}");
    let cookie = cookie.split(';').next().unwrap().to_owned();
    let r = c
        .get(format!("{base}/inbox"))
        .header(COOKIE, &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    // A login from another origin is refused like any state change.
    let r = c
        .post(format!("{base}/login"))
        .header("sec-fetch-site", "same-site")
        .form(&[("token", TOKEN)])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);

    // Past its lifetime the session is refused, and says why.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let r = c
        .get(format!("{base}/inbox"))
        .header(COOKIE, &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(r.text().await.unwrap().contains("expired"));
    let r = c
        .get(format!("{base}/api/tasks"))
        .header(COOKIE, &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_finishes_its_headers_is_disconnected() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(&dir);
    let addr = serve(&store, TOKEN).await;
    // Headers begun and never ended, as a slow-loris client sends them.
    let mut slow = tokio::net::TcpStream::connect(addr).await.unwrap();
    slow.write_all(b"GET /inbox HTTP/1.1\r\nhost: 127.0.0.1\r\nx-slow: 1\r\n")
        .await
        .unwrap();
    // Meanwhile the server answers others.
    let r = client()
        .get(format!("http://{addr}/api/runs"))
        .header(AUTHORIZATION, bearer())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    // The slow connection is closed once its time for headers is up (a
    // bound far above it only detects a server that never closes it).
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(
        troupe_web::HEADER_READ_TIMEOUT * 6,
        slow.read_to_end(&mut rest),
    )
    .await;
    assert!(closed.is_ok(), "the server keeps a half-sent request open");
}
