//! The routes: pages, the JSON API and the webhook answer endpoint.

use crate::answer::{self, AnswerBody, AnswerError, AnswerInput};
use crate::auth::{Auth, Csrf, SESSION_TTL, require_token};
use crate::console::{self, RunFilter};
use crate::constant_time_eq;
use crate::html::{STYLESHEET, clip, csrf_field, escape, page, status_badge};
use crate::live::{self, RunView};
use crate::notify::{NotifyDb, webhook};
use crate::operate;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Extension, Form, Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use troupe_store::{RunSummary, RunTotals, Store, StoreError, TaskRow};

/// What every handler shares.
#[derive(Debug, Clone)]
pub(crate) struct App {
    pub(crate) store: Store,
    pub(crate) db: Arc<NotifyDb>,
    /// Given to the hosts that drive runs here (retry, fork): triggered
    /// when the server is asked to stop.
    pub(crate) interrupt: Option<troupe_runtime::Interrupt>,
}

/// Runs this process drives (retried or forked from the console), so that
/// a stopping server waits for them to reach their step boundary.
static DRIVING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How many runs this process drives now.
pub(crate) fn driving() -> usize {
    DRIVING.load(std::sync::atomic::Ordering::SeqCst)
}

/// Drives `run` on this server's runtime (a retried or forked run),
/// counted in [`driving`] until it ends or stops.
pub(crate) fn spawn_drive(host: troupe_host::Host, run: i64) {
    DRIVING.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    tokio::spawn(async move {
        let _ = host
            .drive(run, &troupe_host::Overrides::default(), None)
            .await;
        DRIVING.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    });
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
    router_app(store, token, db, session_ttl, None)
}

/// [`router_with`] whose driven runs stop when `interrupt` is triggered.
pub(crate) fn router_app(
    store: Store,
    token: String,
    db: Arc<NotifyDb>,
    session_ttl: Duration,
    interrupt: Option<troupe_runtime::Interrupt>,
) -> Router {
    let auth = Arc::new(Auth::new(token, session_ttl));
    let app = App {
        store,
        db,
        interrupt,
    };
    Router::new()
        .route("/assets/troupe.css", get(stylesheet))
        .route("/assets/index.js", get(index_script))
        .route("/assets/run.js", get(run_script))
        .route("/assets/inbox.js", get(inbox_script))
        .route("/", get(index))
        .route("/fragments/runs", get(runs_fragment))
        .route("/runs/{id}", get(run_page))
        .route("/runs/{id}/events", get(run_events))
        .route("/runs/{id}/cancel", post(operate::run_cancel))
        .route("/runs/{id}/retry", post(operate::run_retry))
        .route("/runs/{id}/pause", post(operate::run_pause))
        .route("/runs/{id}/unpause", post(operate::run_unpause))
        .route("/runs/{id}/fork", post(operate::run_fork))
        .route("/inbox", get(inbox))
        .route("/inbox/events", get(inbox_events))
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
pub(crate) async fn blocking<T: Send + 'static>(
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

pub(crate) struct PageError(pub(crate) StatusCode, pub(crate) String);

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

const INDEX_SCRIPT: &str = r#"
setInterval(function(){
  fetch('/fragments/runs' + location.search, {credentials: 'same-origin'}).then(function(r){ return r.ok ? r.text() : null; })
    .then(function(t){ if (t !== null) document.getElementById('runs').innerHTML = t; }).catch(function(){});
}, 2000);
"#;

/// The session's CSRF token, when the request came with a session.
pub(crate) type SessionCsrf = Option<Extension<Csrf>>;

pub(crate) fn token_of(csrf: &SessionCsrf) -> Option<&str> {
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

async fn inbox_script() -> Response {
    asset("text/javascript; charset=utf-8", live::INBOX_SCRIPT)
}

async fn run_script() -> Response {
    asset("text/javascript; charset=utf-8", live::RUN_SCRIPT)
}

/// The runs the filters keep, every run's totals, the workflows (for the
/// filter's choices) and whether there is any run at all.
type Filtered = (Vec<RunSummary>, BTreeMap<i64, RunTotals>, Vec<String>, bool);

/// The runs the filters keep, with what the table shows of them. Blocking.
fn filtered_runs(store: &Store, f: &RunFilter) -> Result<Filtered, StoreError> {
    let all = store.runs(None)?;
    let any = !all.is_empty();
    let mut workflows: Vec<String> = all.iter().map(|r| r.workflow.clone()).collect();
    workflows.sort();
    workflows.dedup();
    let q = f.query();
    let mut runs = Vec::new();
    for r in all.into_iter().filter(|r| f.keeps(r)) {
        let keep = match &q {
            None => true,
            Some(q) if RunFilter::matches_name(q, &r) => true,
            // The inputs are read only for runs the name does not match.
            Some(q) => store
                .run(r.id)
                .map(|d| d.inputs.to_string().to_lowercase().contains(q.as_str()))
                .unwrap_or(false),
        };
        if keep {
            runs.push(r);
        }
    }
    Ok((runs, store.run_totals()?, workflows, any))
}

async fn index(
    State(app): State<App>,
    Query(filter): Query<RunFilter>,
    csrf: SessionCsrf,
) -> Result<Html<String>, PageError> {
    let store = app.store.clone();
    let f = filter.clone();
    let ((runs, totals, workflows, any), pending) = blocking(move || {
        Ok::<_, StoreError>((filtered_runs(&store, &f)?, store.tasks(false)?.len()))
    })
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
        "<h1>Runs</h1>{inbox}{form}<div class=\"scroll\"><table class=\"runs\"><thead><tr><th>Run</th><th>Workflow</th><th>Status</th><th>Created</th><th>Duration</th><th>Tokens</th><th>Cost</th><th>Result</th></tr></thead><tbody id=\"runs\">{rows}</tbody></table></div>",
        form = console::filter_form(&filter, &workflows),
        rows = console::run_rows(&runs, &totals, any)
    );
    Ok(page("Runs", &body, "index.js", token_of(&csrf)))
}

async fn runs_fragment(
    State(app): State<App>,
    Query(filter): Query<RunFilter>,
) -> Result<Html<String>, PageError> {
    let store = app.store.clone();
    let (runs, totals, _, any) = blocking(move || filtered_runs(&store, &filter)).await??;
    Ok(Html(console::run_rows(&runs, &totals, any)))
}

pub(crate) fn parse_run(id: &str) -> Result<i64, StoreError> {
    Store::parse_run_id(id).ok_or_else(|| StoreError::UnknownRun(id.to_owned()))
}

/// `?before=N`: the page of the trace that ends before event N.
#[derive(Debug, Deserialize)]
struct PageQuery {
    before: Option<u64>,
}

/// The tasks of one run (answered ones too). Blocking.
pub(crate) fn run_tasks(store: &Store, run: i64) -> Result<Vec<TaskRow>, StoreError> {
    let name = Store::run_name(run);
    Ok(store
        .tasks(true)?
        .into_iter()
        .filter(|t| t.run == name)
        .collect())
}

/// The run's timeline, model calls and tool calls (redrawn by the live
/// stream as the run goes on). Blocking.
pub(crate) fn run_activity(
    store: &Store,
    detail: &troupe_store::RunDetail,
    lifelines: &[String],
    tasks: &[TaskRow],
) -> Result<String, StoreError> {
    let calls = store.llm_calls(detail.summary.id)?;
    Ok(format!(
        "<h2>Timeline</h2>{}{}{}{}{}",
        console::timeline(detail, lifelines, tasks, &calls),
        console::model_calls(&calls),
        console::chosen_calls(&troupe_host::chosen::chosen_calls(detail, tasks)),
        console::tool_calls(&detail.steps),
        console::plans(&detail.steps)
    ))
}

async fn run_page(
    State(app): State<App>,
    Path(id): Path<String>,
    Query(page_q): Query<PageQuery>,
    csrf: SessionCsrf,
) -> Result<Html<String>, PageError> {
    run_page_with(&app, &id, page_q.before, "", token_of(&csrf)).await
}

pub(crate) async fn run_page_with(
    app: &App,
    id: &str,
    before: Option<u64>,
    notice: &str,
    csrf: Option<&str>,
) -> Result<Html<String>, PageError> {
    let run = parse_run(id)?;
    let store = app.store.clone();
    let (detail, view, tasks, activity) = blocking(move || {
        let detail = store.run(run)?;
        let view = RunView::load(&store, &detail, before)?;
        let tasks = run_tasks(&store, run)?;
        let activity = run_activity(&store, &detail, &view.lifeline_names(), &tasks)?;
        Ok::<_, StoreError>((detail, view, tasks, activity))
    })
    .await??;
    let s = &detail.summary;
    let pending = tasks
        .iter()
        .any(|t| t.status == troupe_store::TaskStatus::Pending);
    let inbox_link = if pending {
        "<p><a href=\"/inbox\">Answer pending tasks in the inbox →</a></p>"
    } else {
        ""
    };
    let cancel_note = detail
        .cancel_requested
        .as_deref()
        .filter(|_| !crate::live::is_over(s.status.as_str()))
        .map(|r| format!("<p class=\"notice conflict\" id=\"cancel-requested\">Cancel requested: {}; its owner stops it at its next lease renewal.</p>", escape(r)))
        .unwrap_or_default();
    let body = format!(
        "<h1>{name} <span class=\"meta\">{wf}</span> <span id=\"status\">{badge}</span> <span class=\"meta\" id=\"live\" data-events=\"/runs/{run}/events\"></span></h1>{notice}{cancel_note}\
<div id=\"lifecycle\">{buttons}</div>\
<div class=\"card grid\"><span class=\"meta\">file</span><span>{file}</span><span class=\"meta\">inputs</span><code>{inputs}</code>\
<span class=\"meta\">created</span><span>{created}</span><span class=\"meta\">events</span><span id=\"events\">{events}</span>\
<span class=\"meta\">outcome</span><div id=\"outcome\">{outcome}</div></div>\
<div id=\"activity\">{activity}</div>\
<h2>Sequence chart</h2><div id=\"chart\">{chart}</div>\
<h2>Human tasks</h2>{inbox_link}<div class=\"scroll\"><table><thead><tr><th>Task</th><th>Action</th><th>Kind</th><th>Status</th><th>Answer</th></tr></thead><tbody id=\"tasks\">{task_rows}</tbody></table></div>\
<h2>Trace</h2>{paging}<div class=\"scroll\"><table><thead><tr><th>#</th><th>Lifeline</th><th>Event</th><th>Peer</th><th>Stmt</th><th>Values</th></tr></thead><tbody id=\"trace\">{rows}</tbody></table></div>",
        name = escape(&s.name),
        wf = escape(&s.workflow),
        badge = status_badge(s.status.as_str()),
        buttons = operate::lifecycle_buttons(run, s.status.as_str(), csrf),
        file = escape(s.file.as_deref().unwrap_or("-")),
        inputs = escape(&clip(&detail.inputs.to_string(), 300)),
        created = escape(&s.created_at),
        events = view.total(),
        outcome = live::outcome_html(&detail),
        chart = view.chart_svg(&troupe_host::chosen::chosen_calls(&detail, &tasks)),
        task_rows = console::task_rows(&tasks),
        rows = view.rows_html(0),
        paging = paging(run, &detail, &view, before.is_some()),
    );
    Ok(page(&s.name, &body, "run.js", csrf))
}

/// The run lifecycle, for the cancel and retry buttons: a host over the
/// server's store.
pub(crate) fn host(app: &App) -> troupe_host::Host {
    let dir = std::env::current_dir().unwrap_or_else(|_| ".".into());
    let mut config = troupe_host::HostConfig::new(dir);
    config.interrupt = app.interrupt.clone();
    troupe_host::Host::new(app.store.clone(), config, Arc::new(troupe_host::NoTools))
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

/// The answer field of a value task, from its expected type: a number
/// field for `Int` (whole numbers) and `Float`, a text field for `Text`,
/// and JSON (checked as JSON by the browser's pattern-less textarea and by
/// the server) for lists, records and the rest.
fn typed_field(t: &TaskRow) -> String {
    let hint = |s: &str| format!("<span class=\"meta hint\">{}</span>", escape(s));
    match t.ty.as_str() {
        "Int" => format!(
            "<input type=\"number\" step=\"1\" inputmode=\"numeric\" name=\"value\" placeholder=\"42\" required autocomplete=\"off\" data-type=\"Int\">{}",
            hint("a whole number, e.g. 42")
        ),
        "Float" => format!(
            "<input type=\"number\" step=\"any\" inputmode=\"decimal\" name=\"value\" placeholder=\"2.5\" required autocomplete=\"off\" data-type=\"Float\">{}",
            hint("a number, e.g. 2.5")
        ),
        "Text" => "<input type=\"text\" name=\"value\" autocomplete=\"off\" data-type=\"Text\">"
            .to_owned(),
        ty => {
            let example = t
                .schema
                .as_ref()
                .map(|s| clip(&s.to_string(), 200))
                .unwrap_or_default();
            format!(
                "<textarea name=\"value\" required data-type=\"{ty}\" placeholder=\"JSON\"></textarea><input type=\"hidden\" name=\"as_json\" value=\"1\">{}",
                hint(&format!(
                    "JSON of type {ty}{}",
                    if example.is_empty() {
                        String::new()
                    } else {
                        format!("; schema {example}")
                    }
                )),
                ty = escape(ty),
            )
        }
    }
}

/// A pending task as a card with its form; `refusal` is why the last
/// answer to it was refused, shown in the form.
pub(crate) fn task_form(t: &TaskRow, csrf: Option<&str>, refusal: Option<&str>) -> String {
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
        _ => format!("{}<br><button type=\"submit\">Answer</button>", typed_field(t)),
    };
    let refusal = refusal
        .map(|m| {
            format!(
                "<div class=\"notice error refusal\" role=\"alert\">{}</div>",
                escape(m)
            )
        })
        .unwrap_or_default();
    format!(
        "<div class=\"card task\" id=\"{id}\" data-kind=\"{kind}\"><div class=\"meta\">{id} · <a href=\"/runs/{run}\">{run}</a> · {lifeline}/{action_name} · {kind} · expects <code class=\"type\">{ty}</code> · since {created}</div>\
<pre>{prompt}</pre><form method=\"post\" action=\"{action}\">{hidden}{refusal}{controls}</form></div>",
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

/// The text shown when no task is pending.
pub(crate) const NO_TASKS: &str = "<p class=\"meta\" id=\"empty\">No task waits for a person.</p>";

async fn inbox_page(
    app: &App,
    notice: &str,
    csrf: Option<&str>,
    refused: Option<(&str, &str)>,
) -> Result<Html<String>, PageError> {
    let store = app.store.clone();
    let tasks = blocking(move || store.tasks(false)).await??;
    let list = if tasks.is_empty() {
        NO_TASKS.to_owned()
    } else {
        tasks
            .iter()
            .map(|t| {
                let refusal = refused.filter(|(id, _)| *id == t.id).map(|(_, m)| m);
                task_form(t, csrf, refusal)
            })
            .collect()
    };
    let body = format!(
        "<h1>Inbox <span class=\"meta\" id=\"live\"></span> <a class=\"meta\" href=\"/inbox\">reload</a></h1>{notice}<div id=\"tasks\">{list}</div>"
    );
    Ok(page("Inbox", &body, "inbox.js", csrf))
}

async fn inbox(State(app): State<App>, csrf: SessionCsrf) -> Result<Html<String>, PageError> {
    inbox_page(&app, "", token_of(&csrf), None).await
}

async fn inbox_events(State(app): State<App>, csrf: SessionCsrf) -> Response {
    live::inbox_stream(app, token_of(&csrf).map(str::to_owned)).into_response()
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
        Err(e) => {
            let message = format!("Not answered: {e}");
            let page = inbox_page(
                &app,
                &format!(
                    "<div class=\"notice error\" id=\"notice\">Not answered: <a href=\"#{0}\">{0}</a> says why in its form.</div>",
                    escape(&task)
                ),
                token_of(&csrf),
                Some((&task, &message)),
            )
            .await?;
            return Ok((answer_status(&e), page).into_response());
        }
    };
    Ok((
        status,
        inbox_page(&app, &notice, token_of(&csrf), None).await?,
    )
        .into_response())
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
    let (detail, view, calls) = blocking(move || {
        let detail = store.run(run)?;
        let view = RunView::load(&store, &detail, page_q.before)?;
        let calls = store.llm_calls(run)?;
        Ok::<_, StoreError>((detail, view, calls))
    })
    .await??;
    let mut doc = to_json(&detail)?.0;
    if let Some(o) = doc.as_object_mut() {
        // Its model calls: prompts, answers, tokens, latency, cost.
        o.insert("llm_calls".into(), to_json(&calls)?.0);
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
