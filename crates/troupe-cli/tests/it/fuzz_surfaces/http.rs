//! Fuzz target: HTTP requests to `troupe serve`'s router (`tower`
//! `oneshot`, no socket): random methods, paths, queries, headers and
//! bodies over a store with a waiting run; no response is a 500. A module
//! of `fuzz_surfaces.rs`, apart so that each target reads on its own.

use super::*;

const TOKEN: &str = "fuzz-token";

struct Web {
    _dir: tempfile::TempDir,
    rt: tokio::runtime::Runtime,
    app: axum::Router,
    cookie: String,
    csrf: String,
}

fn web() -> &'static Web {
    static WEB: OnceLock<Web> = OnceLock::new();
    WEB.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let store = troupe_store::Store::open(
            dir.path().join("troupe.db"),
            troupe_store::Durability::Normal,
        )
        .unwrap();
        let (_run, store) = waiting_run(store, dir.path());
        let db = Arc::new(troupe_web::NotifyDb::open(&store).unwrap());
        let app = troupe_web::router(store, TOKEN.into(), db);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        // A session, as a browser would have one.
        let (status, headers, _) = rt.block_on(send(
            &app,
            axum::http::Request::get(format!("/?token={TOKEN}"))
                .body(axum::body::Body::empty())
                .unwrap(),
        ));
        assert_eq!(status, 303);
        let cookie = headers
            .get("set-cookie")
            .unwrap()
            .to_str()
            .unwrap()
            .split(';')
            .next()
            .unwrap()
            .to_owned();
        let (_, _, page) = rt.block_on(send(
            &app,
            axum::http::Request::get("/inbox")
                .header("cookie", &cookie)
                .body(axum::body::Body::empty())
                .unwrap(),
        ));
        let page = String::from_utf8_lossy(&page);
        let needle = "<meta name=\"csrf-token\" content=\"";
        let at = page.find(needle).expect("the page carries a CSRF token") + needle.len();
        let csrf = page[at..at + 64].to_owned();
        Web {
            _dir: dir,
            rt,
            app,
            cookie,
            csrf,
        }
    })
}

async fn send(
    app: &axum::Router,
    req: axum::http::Request<axum::body::Body>,
) -> (u16, axum::http::HeaderMap, Vec<u8>) {
    use tower::ServiceExt;
    let resp = app.clone().oneshot(req).await.unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    // A live stream never ends by itself: its first bytes are enough.
    let streaming = headers
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    let body = if streaming {
        Vec::new()
    } else {
        axum::body::to_bytes(resp.into_body(), 4 << 20)
            .await
            .map(|b| b.to_vec())
            .unwrap_or_default()
    };
    (status, headers, body)
}

#[derive(Debug, Clone)]
struct HttpCase {
    method: String,
    path: String,
    query: Option<String>,
    auth: u8,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("run-1".to_owned()),
        Just("1".to_owned()),
        Just("task-1".to_owned()),
        Just("task-3".to_owned()),
        Just("task-8".to_owned()),
        Just("task-999".to_owned()),
        Just("99999999999999999999".to_owned()),
        Just("-1".to_owned()),
        Just("run-0".to_owned()),
        Just("..".to_owned()),
        Just("%00".to_owned()),
        Just("%ZZ".to_owned()),
        Just("%E2%80%AE".to_owned()),
        "[a-zA-Z0-9._~-]{0,10}",
    ]
}

fn path() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("/".to_owned()),
        Just("/inbox".to_owned()),
        Just("/api/runs".to_owned()),
        Just("/api/tasks".to_owned()),
        Just("/fragments/runs".to_owned()),
        Just("/login".to_owned()),
        Just("/logout".to_owned()),
        Just("/assets/troupe.css".to_owned()),
        segment().prop_map(|s| format!("/inbox/{s}")),
        segment().prop_map(|s| format!("/runs/{s}")),
        segment().prop_map(|s| format!("/runs/{s}/events")),
        segment().prop_map(|s| format!("/api/runs/{s}")),
        segment().prop_map(|s| format!("/api/tasks/{s}")),
        segment().prop_map(|s| format!("/api/tasks/{s}/answer")),
        segment().prop_map(|s| format!("/hooks/answer/{s}")),
        prop::collection::vec(segment(), 0..5).prop_map(|s| format!("/{}", s.join("/"))),
    ]
}

fn header() -> impl Strategy<Value = (String, String)> {
    let value = prop_oneof![
        Just("null".to_owned()),
        Just("http://127.0.0.1:1".to_owned()),
        Just("same-origin".to_owned()),
        Just("same-site".to_owned()),
        Just("cross-site".to_owned()),
        Just("application/json".to_owned()),
        Just("application/x-www-form-urlencoded".to_owned()),
        Just("text/plain".to_owned()),
        Just("troupe_session=00".to_owned()),
        "[ -~]{0,30}",
    ];
    (
        prop_oneof![
            Just("origin"),
            Just("sec-fetch-site"),
            Just("content-type"),
            Just("cookie"),
            Just("x-csrf-token"),
            Just("host"),
            Just("x-troupe-task-token"),
            Just("accept"),
        ],
        value,
    )
        .prop_map(|(k, v)| (k.to_owned(), v))
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(Vec::new()),
        json_value().prop_map(|j| j.to_string().into_bytes()),
        prop_oneof![
            Just(json!({"yes": true})),
            Just(json!({"no": true})),
            Just(json!({"value": "small"})),
            Just(json!({"json": "3"})),
            Just(json!({"answer": {"items": [], "note": "", "urgent": true}})),
            Just(json!({"yes": true, "token": "x"})),
        ]
        .prop_map(|j| j.to_string().into_bytes()),
        (
            prop::option::of(prop_oneof![
                Just("yes".to_owned()),
                Just("no".to_owned()),
                "[a-z]{0,4}"
            ]),
            prop::option::of(text_value()),
            any::<bool>(),
            any::<bool>()
        )
            .prop_map(|(choice, value, as_json, csrf)| {
                let mut pairs = Vec::new();
                if let Some(c) = choice {
                    pairs.push(format!("choice={c}"));
                }
                if let Some(v) = value {
                    let enc: String = v
                        .bytes()
                        .map(|b| {
                            if b.is_ascii_alphanumeric() {
                                (b as char).to_string()
                            } else {
                                format!("%{b:02X}")
                            }
                        })
                        .collect();
                    pairs.push(format!("value={enc}"));
                }
                if as_json {
                    pairs.push("as_json=1".into());
                }
                if csrf {
                    pairs.push("csrf=CSRF".into());
                }
                pairs.join("&").into_bytes()
            }),
        prop::collection::vec(any::<u8>(), 0..300),
    ]
}

fn http_case() -> impl Strategy<Value = HttpCase> {
    (
        prop_oneof![
            4 => Just("GET".to_owned()),
            4 => Just("POST".to_owned()),
            1 => Just("HEAD".to_owned()),
            1 => Just("PUT".to_owned()),
            1 => Just("DELETE".to_owned()),
            1 => Just("OPTIONS".to_owned()),
            1 => "[A-Z]{1,8}",
        ],
        path(),
        prop::option::of(prop_oneof![
            Just(format!("token={TOKEN}")),
            Just("token=wrong".to_owned()),
            Just("all=true".to_owned()),
            Just("all=maybe".to_owned()),
            Just("status=failed".to_owned()),
            Just("status=%FF".to_owned()),
            "[a-z=&%0-9]{0,20}",
        ]),
        any::<u8>(),
        prop::collection::vec(header(), 0..4),
        body(),
    )
        .prop_map(|(method, path, query, auth, headers, body)| HttpCase {
            method,
            path,
            query,
            auth,
            headers,
            body,
        })
}

fn check_http(c: &HttpCase) -> Result<(), TestCaseError> {
    let w = web();
    let uri = match &c.query {
        Some(q) => format!("{}?{q}", c.path),
        None => c.path.clone(),
    };
    let mut req = axum::http::Request::builder()
        .method(c.method.as_str())
        .uri(&uri);
    // Most requests are signed in, so that they reach the handlers.
    match c.auth % 4 {
        0 | 1 => req = req.header("authorization", format!("Bearer {TOKEN}")),
        2 => req = req.header("cookie", &w.cookie),
        _ => {}
    }
    for (k, v) in &c.headers {
        let v = v.replace("CSRF", &w.csrf);
        req = req.header(k.as_str(), v);
    }
    let body = String::from_utf8_lossy(&c.body).replace("CSRF", &w.csrf);
    let body = if c.body.is_ascii() {
        body.into_bytes()
    } else {
        c.body.clone()
    };
    let Ok(req) = req.body(axum::body::Body::from(body)) else {
        // Not an HTTP request at all (a method or header value the HTTP
        // types refuse): nothing reaches the server.
        STATUSES.lock().unwrap()[0] += 1;
        return Ok(());
    };
    let (status, _, body) =
        w.rt.block_on(async { tokio::time::timeout(CASE_DEADLINE, send(&w.app, req)).await })
            .map_err(|_| TestCaseError::fail("no response in time"))?;
    STATUSES.lock().unwrap()[(status / 100) as usize % 6] += 1;
    prop_assert!(status != 500, "500: {}", String::from_utf8_lossy(&body));
    if status >= 400 && c.method != "HEAD" {
        prop_assert!(!body.is_empty(), "a {status} without a word");
    }
    Ok(())
}

/// Requests that were no HTTP request, then responses by class (2xx..5xx).
static STATUSES: Mutex<[u32; 6]> = Mutex::new([0; 6]);

#[test]
fn random_http_requests_to_the_router() {
    fuzz("http-router", 20_000, http_case, check_http);
    let s = *STATUSES.lock().unwrap();
    println!(
        "fuzz http-router: {} not HTTP; responses 2xx {} 3xx {} 4xx {} 5xx {}",
        s[0], s[2], s[3], s[4], s[5]
    );
    assert!(s[2] > 500, "enough requests reach the handlers: {s:?}");
}
