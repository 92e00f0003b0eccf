//! The routes: pages, the JSON API and the webhook answer endpoint.

use crate::answer::{self, AnswerBody, AnswerError, AnswerInput};
use crate::auth::{Auth, Csrf, SESSION_TTL, require_token};
use crate::constant_time_eq;
use crate::html::{STYLESHEET, clip, csrf_field, escape, page, status_badge};
use crate::live::{self, RunView};
use crate::notify::{NotifyDb, webhook};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Extension, Form, Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use std::sync::Arc;
use std::time::Duration;
use troupe_store::{RunSummary, Store, StoreError, TaskRow};

/// What every handler shares.
#[derive(Debug, Clone)]
pub(crate) struct App {
    pub(crate) store: Store,
    pub(crate) db: Arc<NotifyDb>,
}

/// The whole application: pages, API and hooks, behind the token, with
/// sessions that last [`SESSION_TTL`].
pub fn router(store: Store, token: String, db: Arc<NotifyDb>) -> Router {
    router_with(store, token, db, SESSION_TTL)
}

/// [`router`] with sessions that last `session_ttl`.
pub fn router_with(
    store: Store,
    token: String,
    db: Arc<NotifyDb>,
    session_ttl: Duration,
) -> Router {
    let auth = Arc::new(Auth::new(token, session_ttl));
    let app = App { store, db };
    Router::new()
        .route("/assets/troupe.css", get(stylesheet))
        .route("/assets/index.js", get(index_script))
        .route("/assets/run.js", get(run_script))
        .route("/", get(index))
        .route("/fragments/runs", get(runs_fragment))
        .route("/runs/{id}", get(run_page))
        .route("/runs/{id}/events", get(run_events))
        .route("/inbox", get(inbox))
        .route("/inbox/{task}", post(inbox_answer))
        .route("/api/runs", get(api_runs))
        .route("/api/runs/{id}", get(api_run))
        .route("/api/tasks", get(api_tasks))
        .route("/api/tasks/{id}", get(api_task))
        .route("/api/tasks/{id}/answer", post(api_answer))
        .route("/hooks/answer/{task}", post(hook_answer))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(auth, require_token))
        .layer(axum::middleware::from_fn(crate::guard::same_origin))
        .layer(axum::middleware::from_fn(crate::guard::headers))
        .with_state(app)
}

/// Runs blocking store work off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, (StatusCode, String)> {
    tokio::task::spawn_blocking(f).await.map_err(|e| {
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("internal error: {e}"),
        )
    })
}

fn store_status(e: &StoreError) -> StatusCode {
    match e {
        StoreError::UnknownRun(_) | StoreError::UnknownTask(_) => StatusCode::NOT_FOUND,
        StoreError::Conflict(_) => StatusCode::CONFLICT,
        StoreError::Locked { .. } => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

fn answer_status(e: &AnswerError) -> StatusCode {
    match e {
        AnswerError::Unknown(_) => StatusCode::NOT_FOUND,
        AnswerError::Invalid(_) => StatusCode::BAD_REQUEST,
        AnswerError::Conflict(_) => StatusCode::CONFLICT,
        AnswerError::Store(e) => store_status(e),
    }
}

// ---------------------------------------------------------------- pages

struct PageError(StatusCode, String);

impl From<(StatusCode, String)> for PageError {
    fn from((s, m): (StatusCode, String)) -> PageError {
        PageError(s, m)
    }
}

impl From<StoreError> for PageError {
    fn from(e: StoreError) -> PageError {
        PageError(store_status(&e), e.to_string())
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let title = self.0.canonical_reason().unwrap_or("Error");
        let body = format!(
            "<h1>{}</h1><div class=\"notice error\">{}</div>",
            escape(title),
            escape(&self.1)
        );
        (self.0, page(title, &body, "", None)).into_response()
    }
}

async fn not_found() -> PageError {
    PageError(StatusCode::NOT_FOUND, "No such page.".into())
}

async fn method_not_allowed(method: axum::http::Method) -> PageError {
    PageError(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("This page does not take {method} requests."),
    )
}

fn run_rows(runs: &[RunSummary]) -> String {
    if runs.is_empty() {
        return "<tr><td colspan=\"5\" class=\"meta\">No runs yet: record one with <code>troupe run FILE --store DB</code>.</td></tr>".into();
    }
    let mut out = String::new();
    for r in runs {
        let outcome = match (&r.result, &r.error) {
            (Some(v), _) => v.to_string(),
            (None, Some(e)) => e.clone(),
            _ => String::new(),
        };
        out.push_str(&format!(
            "<tr><td><a href=\"/runs/{id}\">{name}</a></td><td>{wf}</td><td>{status}</td><td class=\"meta\">{updated}</td><td class=\"mono\">{outcome}</td></tr>",
            id = r.id,
            name = escape(&r.name),
            wf = escape(&r.workflow),
            status = status_badge(r.status.as_str()),
            updated = escape(&r.updated_at),
            outcome = escape(&clip(&outcome, 100)),
        ));
    }
    out
}

const INDEX_SCRIPT: &str = r#"
setInterval(function(){
  fetch('/fragments/runs', {credentials: 'same-origin'}).then(function(r){ return r.ok ? r.text() : null; })
    .then(function(t){ if (t !== null) document.getElementById('runs').innerHTML = t; }).catch(function(){});
}, 2000);
"#;

/// The session's CSRF token, when the request came with a session.
type SessionCsrf = Option<Extension<Csrf>>;

fn token_of(csrf: &SessionCsrf) -> Option<&str> {
    csrf.as_ref().map(|Extension(Csrf(t))| t.as_str())
}

fn asset(content_type: &'static str, text: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        text,
    )
        .into_response()
}

async fn stylesheet() -> Response {
    asset("text/css; charset=utf-8", STYLESHEET)
}

async fn index_script() -> Response {
    asset("text/javascript; charset=utf-8", INDEX_SCRIPT)
}

async fn run_script() -> Response {
    asset("text/javascript; charset=utf-8", live::RUN_SCRIPT)
}

async fn index(State(app): State<App>, csrf: SessionCsrf) -> Result<Html<String>, PageError> {
    let store = app.store.clone();
    let (runs, pending) =
        blocking(move || Ok::<_, StoreError>((store.runs(None)?, store.tasks(false)?.len())))
            .await??;
    let inbox = match pending {
        0 => "<p class=\"meta\">No task waits for a person.</p>".to_owned(),
        n => format!(
            "<p><a href=\"/inbox\">{n} task{} wait{} for a person →</a></p>",
            if n == 1 { "" } else { "s" },
            if n == 1 { "s" } else { "" }
        ),
    };
    let body = format!(
        "<h1>Runs</h1>{inbox}<table><thead><tr><th>Run</th><th>Workflow</th><th>Status</th><th>Updated</th><th>Result</th></tr></thead><tbody id=\"runs\">{}</tbody></table>",
        run_rows(&runs)
    );
    Ok(page("Runs", &body, "index.js", token_of(&csrf)))
}

async fn runs_fragment(State(app): State<App>) -> Result<Html<String>, PageError> {
    let store = app.store.clone();
    let runs = blocking(move || store.runs(None)).await??;
    Ok(Html(run_rows(&runs)))
}

fn parse_run(id: &str) -> Result<i64, StoreError> {
    Store::parse_run_id(id).ok_or_else(|| StoreError::UnknownRun(id.to_owned()))
}

/// `?before=N`: the page of the trace that ends before event N.
#[derive(Debug, Deserialize)]
struct PageQuery {
    before: Option<u64>,
}

async fn run_page(
    State(app): State<App>,
    Path(id): Path<String>,
    Query(page_q): Query<PageQuery>,
    csrf: SessionCsrf,
) -> Result<Html<String>, PageError> {
    let run = parse_run(&id)?;
    let store = app.store.clone();
    let (detail, view, tasks) = blocking(move || {
        let detail = store.run(run)?;
        let view = RunView::load(&store, &detail, page_q.before)?;
        let name = Store::run_name(run);
        let tasks: Vec<TaskRow> = store
            .tasks(true)?
            .into_iter()
            .filter(|t| t.run == name)
            .collect();
        Ok::<_, StoreError>((detail, view, tasks))
    })
    .await??;
    let s = &detail.summary;
    let mut task_rows = String::new();
    for t in &tasks {
        let answer = t
            .answer
            .as_deref()
            .map(|a| {
                format!(
                    "{} (by {})",
                    clip(a, 80),
                    t.answered_by.as_deref().unwrap_or("?")
                )
            })
            .unwrap_or_else(|| "—".into());
        task_rows.push_str(&format!(
            "<tr><td>{}</td><td>{}/{}</td><td>{}</td><td>{}</td><td class=\"mono\">{}</td></tr>",
            escape(&t.id),
            escape(&t.lifeline),
            escape(&t.action),
            escape(t.kind.as_str()),
            status_badge(t.status.as_str()),
            escape(&answer)
        ));
    }
    let pending = tasks
        .iter()
        .any(|t| t.status == troupe_store::TaskStatus::Pending);
    let inbox_link = if pending {
        "<p><a href=\"/inbox\">Answer pending tasks in the inbox →</a></p>"
    } else {
        ""
    };
    let tasks_html = if tasks.is_empty() {
        String::new()
    } else {
        format!(
            "<h2>Human tasks</h2>{inbox_link}<table><thead><tr><th>Task</th><th>Action</th><th>Kind</th><th>Status</th><th>Answer</th></tr></thead><tbody>{task_rows}</tbody></table>"
        )
    };
    let body = format!(
        "<h1>{name} <span class=\"meta\">{wf}</span> <span id=\"status\">{badge}</span> <span class=\"meta\" id=\"live\"></span></h1>\
<div class=\"card grid\"><span class=\"meta\">file</span><span>{file}</span><span class=\"meta\">inputs</span><code>{inputs}</code>\
<span class=\"meta\">created</span><span>{created}</span><span class=\"meta\">events</span><span id=\"events\">{events}</span>\
<span class=\"meta\">outcome</span><div id=\"outcome\">{outcome}</div></div>\
<h2>Sequence chart</h2><div id=\"chart\">{chart}</div>{tasks_html}\
<h2>Trace</h2>{paging}<table><thead><tr><th>#</th><th>Lifeline</th><th>Event</th><th>Peer</th><th>Stmt</th><th>Values</th></tr></thead><tbody id=\"trace\">{rows}</tbody></table>",
        name = escape(&s.name),
        wf = escape(&s.workflow),
        badge = status_badge(s.status.as_str()),
        file = escape(s.file.as_deref().unwrap_or("-")),
        inputs = escape(&clip(&detail.inputs.to_string(), 300)),
        created = escape(&s.created_at),
        events = view.total(),
        outcome = live::outcome_html(&detail),
        chart = view.chart_svg(),
        rows = view.rows_html(0),
        paging = paging(run, &detail, &view, page_q.before.is_some()),
    );
    Ok(page(&s.name, &body, "run.js", token_of(&csrf)))
}

/// Links to the pages of a long run's trace.
fn paging(run: i64, detail: &troupe_store::RunDetail, view: &RunView, paged: bool) -> String {
    let mut links = Vec::new();
    if view.first() > detail.pruned {
        links.push(format!(
            "<a href=\"/runs/{run}?before={}\">← earlier events</a>",
            view.first()
        ));
    }
    if paged {
        links.push(format!("<a href=\"/runs/{run}\">latest events →</a>"));
    }
    let mut text = String::new();
    if view.first() > 0 || paged {
        text.push_str(&format!(
            "<p class=\"meta\">Events {}–{} of {}{}. {}</p>",
            view.first(),
            view.total().saturating_sub(1),
            detail.pruned + detail.events,
            if detail.pruned > 0 {
                format!(" (the first {} pruned by --history-keep)", detail.pruned)
            } else {
                String::new()
            },
            links.join(" · ")
        ));
    }
    text
}

async fn run_events(State(app): State<App>, Path(id): Path<String>) -> Result<Response, PageError> {
    let run = parse_run(&id)?;
    Ok(live::stream(app, run).into_response())
}

fn task_form(t: &TaskRow, csrf: Option<&str>) -> String {
    let action = format!("/inbox/{}", escape(&t.id));
    let controls = match t.kind.as_str() {
        "confirm" => "<button class=\"yes\" name=\"choice\" value=\"yes\">Yes</button><button class=\"no\" name=\"choice\" value=\"no\">No</button>".to_owned(),
        // An acknowledgement: one button, answered as yes (recorded as `{}`).
        "acknowledge" => "<button class=\"yes\" name=\"choice\" value=\"yes\">Acknowledge</button>".to_owned(),
        "select" => t
            .options
            .iter()
            .map(|o| format!("<button name=\"value\" value=\"{0}\">{0}</button>", escape(o)))
            .collect::<String>(),
        "edit" => format!(
            "<textarea name=\"value\">{}</textarea><br><button type=\"submit\">Save</button>",
            escape(t.prefill.as_deref().unwrap_or(""))
        ),
        _ => "<input type=\"text\" name=\"value\" autocomplete=\"off\"><br><label class=\"meta\"><input type=\"checkbox\" name=\"as_json\" value=\"1\"> the answer is JSON</label> <button type=\"submit\">Answer</button>".to_owned(),
    };
    format!(
        "<div class=\"card task\" id=\"{id}\" data-kind=\"{kind}\"><div class=\"meta\">{id} · <a href=\"/runs/{run}\">{run}</a> · {lifeline}/{action_name} · {kind} · expects <code class=\"type\">{ty}</code> · since {created}</div>\
<pre>{prompt}</pre><form method=\"post\" action=\"{action}\">{hidden}{controls}</form></div>",
        hidden = csrf.map(csrf_field).unwrap_or_default(),
        id = escape(&t.id),
        kind = escape(t.kind.as_str()),
        run = escape(&t.run),
        lifeline = escape(&t.lifeline),
        action_name = escape(&t.action),
        created = escape(&t.created_at),
        prompt = escape(&t.prompt),
        ty = escape(&t.ty),
    )
}

async fn inbox_page(
    app: &App,
    notice: &str,
    csrf: Option<&str>,
) -> Result<Html<String>, PageError> {
    let store = app.store.clone();
    let tasks = blocking(move || store.tasks(false)).await??;
    let list = if tasks.is_empty() {
        "<p class=\"meta\" id=\"empty\">No task waits for a person.</p>".to_owned()
    } else {
        tasks.iter().map(|t| task_form(t, csrf)).collect()
    };
    let body = format!("<h1>Inbox <a class=\"meta\" href=\"/inbox\">reload</a></h1>{notice}{list}");
    Ok(page("Inbox", &body, "", csrf))
}

async fn inbox(State(app): State<App>, csrf: SessionCsrf) -> Result<Html<String>, PageError> {
    inbox_page(&app, "", token_of(&csrf)).await
}

#[derive(Debug, Deserialize)]
struct InboxForm {
    choice: Option<String>,
    value: Option<String>,
    as_json: Option<String>,
}

async fn inbox_answer(
    State(app): State<App>,
    Path(task): Path<String>,
    csrf: SessionCsrf,
    Form(form): Form<InboxForm>,
) -> Result<Response, PageError> {
    let input = match (form.choice.as_deref(), form.value) {
        (Some("yes"), _) => Ok(AnswerInput::Yes),
        (Some("no"), _) => Ok(AnswerInput::No),
        (_, Some(v)) if form.as_json.is_some() => Ok(AnswerInput::Json(v)),
        (_, Some(v)) => Ok(AnswerInput::Value(v)),
        _ => Err(AnswerError::Invalid("no answer was given".into())),
    };
    let store = app.store.clone();
    let t = task.clone();
    let result = blocking(move || answer::submit(&store, &t, input?, "web")).await?;
    let (status, notice) = match result {
        Ok(row) => (
            StatusCode::OK,
            format!(
                "<div class=\"notice ok\" id=\"notice\">Answered {} ({}/{}) for <a href=\"/runs/{}\">{}</a>.</div>",
                escape(&row.id),
                escape(&row.lifeline),
                escape(&row.action),
                escape(&row.run),
                escape(&row.run)
            ),
        ),
        Err(AnswerError::Conflict(m)) => (
            StatusCode::CONFLICT,
            format!(
                "<div class=\"notice conflict\" id=\"notice\">Someone answered first: {}</div>",
                escape(&m)
            ),
        ),
        Err(e) => (
            answer_status(&e),
            format!(
                "<div class=\"notice error\" id=\"notice\">Not answered: {}</div>",
                escape(&e.to_string())
            ),
        ),
    };
    Ok((status, inbox_page(&app, &notice, token_of(&csrf)).await?).into_response())
}

// ---------------------------------------------------------------- API

struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, axum::Json(serde_json::json!({ "error": self.1 }))).into_response()
    }
}

impl From<(StatusCode, String)> for ApiError {
    fn from((s, m): (StatusCode, String)) -> ApiError {
        ApiError(s, m)
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        ApiError(store_status(&e), e.to_string())
    }
}

impl From<AnswerError> for ApiError {
    fn from(e: AnswerError) -> ApiError {
        ApiError(answer_status(&e), e.to_string())
    }
}

type Json = axum::Json<serde_json::Value>;

fn to_json<T: serde::Serialize>(v: &T) -> Result<Json, ApiError> {
    serde_json::to_value(v)
        .map(axum::Json)
        .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))
}

#[derive(Debug, Deserialize)]
struct RunsQuery {
    status: Option<String>,
}

async fn api_runs(State(app): State<App>, Query(q): Query<RunsQuery>) -> Result<Json, ApiError> {
    let store = app.store.clone();
    let runs =
        blocking(move || store.runs(q.status.as_deref().and_then(|s| s.parse().ok()))).await??;
    to_json(&runs)
}

async fn api_run(
    State(app): State<App>,
    Path(id): Path<String>,
    Query(page_q): Query<PageQuery>,
) -> Result<Json, ApiError> {
    let run = parse_run(&id)?;
    let store = app.store.clone();
    let (detail, view) = blocking(move || {
        let detail = store.run(run)?;
        let view = RunView::load(&store, &detail, page_q.before)?;
        Ok::<_, StoreError>((detail, view))
    })
    .await??;
    let mut doc = to_json(&detail)?.0;
    if let Some(o) = doc.as_object_mut() {
        // A window of the trace (the last events, or those before
        // `?before=N`), with where it starts.
        o.insert("trace".into(), view.trace_json());
        o.insert("trace_from".into(), view.first().into());
    }
    Ok(axum::Json(doc))
}

#[derive(Debug, Deserialize)]
struct TasksQuery {
    #[serde(default)]
    all: bool,
}

async fn api_tasks(State(app): State<App>, Query(q): Query<TasksQuery>) -> Result<Json, ApiError> {
    let store = app.store.clone();
    let tasks = blocking(move || store.tasks(q.all)).await??;
    to_json(&tasks)
}

async fn api_task(State(app): State<App>, Path(id): Path<String>) -> Result<Json, ApiError> {
    let store = app.store.clone();
    let task = blocking(move || store.task(&id)).await??;
    to_json(&task)
}

fn parse_body(body: &[u8]) -> Result<AnswerBody, ApiError> {
    serde_json::from_slice(body).map_err(|e| {
        ApiError(
            StatusCode::BAD_REQUEST,
            format!("the body is not an answer: {e}; send e.g. {{\"yes\": true}} or {{\"value\": \"…\"}}"),
        )
    })
}

async fn api_answer(
    State(app): State<App>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Json, ApiError> {
    let body = parse_body(&body)?;
    let input = body.input()?;
    let by = body.by.clone().unwrap_or_else(|| "api".into());
    let store = app.store.clone();
    let row = blocking(move || answer::submit(&store, &id, input, &by)).await??;
    to_json(&row)
}

/// `POST /hooks/answer/{task}`: an answer from the webhook's receiver, with
/// the per-task token it was given (in the body's `token` or the
/// `X-Troupe-Task-Token` header).
async fn hook_answer(
    State(app): State<App>,
    Path(task): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json, ApiError> {
    let body = parse_body(&body)?;
    let given = body
        .token
        .clone()
        .or_else(|| {
            headers
                .get("x-troupe-task-token")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        })
        .unwrap_or_default();
    let refused = || {
        ApiError(
            StatusCode::UNAUTHORIZED,
            "wrong or missing task token".into(),
        )
    };
    let n = crate::notify::task_number(&task).ok_or_else(refused)?;
    let db = app.db.clone();
    let secret = blocking(move || db.secret(webhook::CHANNEL, n))
        .await?
        .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    let Some(secret) = secret.filter(|s| constant_time_eq(s.as_bytes(), given.as_bytes())) else {
        return Err(refused());
    };
    drop(secret);
    let input = body.input()?;
    let by = match &body.by {
        Some(b) => format!("webhook:{b}"),
        None => "webhook".into(),
    };
    let store = app.store.clone();
    let id = format!("task-{n}");
    let row = blocking(move || answer::submit(&store, &id, input, &by)).await??;
    to_json(&row)
}
