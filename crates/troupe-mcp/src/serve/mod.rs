//! `troupe mcp serve FILE...`: workflows as an MCP server (rmcp, protocol
//! revisions 2026-07-28 — stateless, `server/discover` — and 2025-11-25
//! with sessions for older clients), over stdio or Streamable HTTP on a
//! loopback address (see [`http`] for its Origin, token and session rules).
//!
//! **People answer in their own client.** A 2026-07-28 client that
//! declares elicitation gets a run's pending human tasks as an
//! input-required result: one elicitation form per task (see
//! [`elicitation`]), the run as the request state. Its retry carries the
//! answers, which go through the host like every channel's (typed, first
//! answer wins, recorded as answered by `mcp elicitation`), and the call
//! goes on: the results, the next questions, or where the run stands.
//!
//! **Tools.** Each workflow of the given files is a tool: its name is the
//! workflow's name, its description the file's leading `//` comment, its
//! input schema one required property per workflow input (the JSON Schema of
//! the input's type). A call starts a *durable* run in the store (as `troupe
//! run FILE --store DB` does) and answers with the run's results
//! (`structuredContent` = the results object, the text content = the same
//! JSON, `_meta["troupe/run"]` = the run id); its output schema is that
//! results object's. If the run waits on people (a human task is pending)
//! or is still going after the deadline (2 s by default), the call answers
//! with an error result whose text is `{"run": "run-3", "status": "waiting"
//! | "running", "tasks": [...], "next": …}` — not the tool's output, so no
//! `structuredContent`; `next` says how to get it — and the run goes on in
//! the server process. A failed run is an error result too.
//!
//! A run that did not end in time is fetched with [`GET_RUN_TOOL`]
//! (`{"run": "run-3"}`: status, pending tasks with the JSON Schema of each
//! answer, results once done; a run orphaned by a stopped server is taken
//! up again). A workflow call may carry an idempotency key
//! ([`IDEMPOTENCY_ARG`] or `_meta.idempotencyKey`): the key is recorded with
//! the run it starts (`troupe_store::Keyed`), and a call with the same key
//! answers with that run instead of starting another.
//!
//! Human tasks are answered with one fixed tool, [`ANSWER_TOOL`]
//! (`{"task": "task-4", "answer": true}`; validated as `troupe answer`
//! validates: a confirm takes a boolean, a select one of its options), and
//! listed with [`LIST_TASKS_TOOL`] (and the resource `troupe://tasks`). The
//! tool list is therefore fixed for the life of the server: no
//! `notifications/tools/list_changed` is needed, and clients that cache the
//! tool list (most do) see every task. After an answer, the tool waits (up
//! to the deadline) for the run to end or to wait again and reports where it
//! stands.
//!
//! A task of a run whose process is gone (a server that stopped: the run is
//! `stalled`) can still be answered; the answer resumes the run in this
//! server, with its recorded source, inputs and steps.
//!
//! **Resources.** See [`resources`]: `troupe://runs`, `troupe://tasks`,
//! `troupe://runs/{id}` (status and results), `…/trace` (JSON) and
//! `…/chart` (Mermaid); the three per-run forms are also resource templates.
//! Starting a run sends `notifications/resources/list_changed` to the caller.
//!
//! **Progress and cancellation.** A workflow call whose `_meta` carries a
//! `progressToken` gets `notifications/progress` while it waits (the run's
//! recorded events plus finished steps, whenever they grew). A
//! `notifications/cancelled` for a workflow call cancels its run through
//! the host (`Host::cancel`): the run's in-flight actions are dropped at its
//! owner's next lease renewal, a command effect's process killed, and the
//! run recorded as cancelled.

mod elicitation;
pub mod http;
mod own_tools;
pub mod resources;
pub mod runs;
mod tasks;
pub mod workflows;

pub use http::{HttpOptions, HttpServing};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelledNotificationParam, ErrorData,
    Implementation, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, MetaObject,
    PaginatedRequestParams, ProgressNotificationParam, ProtocolVersion, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, RequestId, Resource, ResourceContents,
    ResourceTemplate, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer};
use rmcp::{ServerHandler, ServiceExt};
use serde_json::{Map, Value as J, json};
use troupe_store::{Durability, Store, StoreError};

use own_tools::own_tools;
use resources::{JSON_MIME, MERMAID_MIME, RUNS_URI, TASKS_URI};
use runs::{Progress, Runs};
use workflows::WorkflowEntry;

/// The tool that answers a pending human task.
pub const ANSWER_TOOL: &str = "answer_task";
/// The tool that lists the pending human tasks.
pub const LIST_TASKS_TOOL: &str = "list_tasks";
/// The tool that reports where a run stands, and its results once done.
pub const GET_RUN_TOOL: &str = "get_run";
/// The optional argument of a workflow tool that carries the call's
/// idempotency key (also read from `_meta.idempotencyKey`).
pub const IDEMPOTENCY_ARG: &str = "idempotency_key";
/// The `_meta` field of a call that carries its idempotency key.
pub const IDEMPOTENCY_META: &str = "idempotencyKey";
/// The store used when none is named.
pub use troupe_host::DEFAULT_STORE;
/// How long a tool call waits for a run before it answers with the run id.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(2);
/// The model used when none is named.
pub const DEFAULT_LLM: &str = "mock";
/// How often a call with a `progressToken` looks at its run's progress.
pub const PROGRESS_EVERY: Duration = Duration::from_millis(200);

/// What can go wrong serving workflows.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A file does not check, declares no workflow, or names collide.
    #[error("{0}")]
    Workflows(String),
    /// Reading a file, binding an address.
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The model configuration (`--llm`, `--llm-for`, `troupe.toml`).
    #[error("model configuration: {0}")]
    Llm(String),
    /// A tool's arguments are not acceptable.
    #[error("{0}")]
    Input(String),
    /// The MCP transport failed.
    #[error("MCP transport: {0}")]
    Transport(String),
    #[error("{0}")]
    Internal(String),
}

/// How to serve.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The `.troupe` files whose workflows become tools.
    pub files: Vec<PathBuf>,
    /// The store (an SQLite file; created with its directory if missing).
    pub store: PathBuf,
    /// The default model spec (`mock` when `None`).
    pub llm: Option<String>,
    /// `KEY=SPEC` overrides, as `troupe run --llm-for`.
    pub llm_for: Vec<String>,
    /// How long a tool call waits for its run.
    pub deadline: Duration,
    /// `extern` actions without an implementation answer with mock values.
    pub mock_externs: bool,
    /// The length of the leases on runs (the host's default, 15 s, when `None`).
    pub lease: Option<Duration>,
    /// Triggered when the process is asked to stop: the runs the server
    /// drives stop at their next step boundary and give their leases back.
    pub interrupt: Option<troupe_runtime::Interrupt>,
}

impl ServeOptions {
    pub fn new(files: Vec<PathBuf>) -> ServeOptions {
        ServeOptions {
            files,
            store: PathBuf::from(DEFAULT_STORE),
            llm: None,
            llm_for: Vec::new(),
            deadline: DEFAULT_DEADLINE,
            mock_externs: false,
            lease: None,
            interrupt: None,
        }
    }
}

struct Inner {
    workflows: Vec<WorkflowEntry>,
    runs: Runs,
    deadline: Duration,
    tools: Vec<Tool>,
}

/// The tool calls of one connection that wait on runs: request id → run.
type Calls = Arc<std::sync::Mutex<std::collections::HashMap<RequestId, i64>>>;

/// The MCP server over a set of workflows and a store. Cheap to clone: the
/// clones share the runs (one [`Server::for_session`] per Streamable HTTP
/// session).
#[derive(Clone)]
pub struct Server {
    inner: Arc<Inner>,
    /// The calls of this connection in flight, for `notifications/cancelled`.
    calls: Calls,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("workflows", &self.inner.workflows)
            .finish()
    }
}

impl Server {
    /// Loads the workflows, opens (or creates) the store and builds the model router.
    pub fn new(options: &ServeOptions) -> Result<Server, ServeError> {
        let workflows = workflows::load(&options.files)?;
        if let Some(dir) = options.store.parent()
            && !dir.as_os_str().is_empty()
        {
            std::fs::create_dir_all(dir).map_err(|e| ServeError::Io {
                path: dir.display().to_string(),
                message: e.to_string(),
            })?;
        }
        let store = Store::open(&options.store, Durability::Full)?;
        let settings = troupe_host::RunSettings {
            llm: Some(options.llm.clone().unwrap_or_else(|| DEFAULT_LLM.into())),
            llm_for: options.llm_for.clone(),
            mock_externs: options.mock_externs,
            ..troupe_host::RunSettings::default()
        };
        // The model configuration is checked before any run starts.
        let dir = std::env::current_dir().map_err(|e| ServeError::Io {
            path: "(current directory)".into(),
            message: e.to_string(),
        })?;
        let config =
            troupe_llm::LlmConfig::discover(dir).map_err(|e| ServeError::Llm(e.to_string()))?;
        let overrides = settings
            .llm_for
            .iter()
            .map(|s| troupe_llm::parse_override(s))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ServeError::Llm(e.to_string()))?;
        troupe_llm::Router::from_config(&config, &overrides, settings.llm.as_deref())
            .map_err(|e| ServeError::Llm(e.to_string()))?;
        let mut tools: Vec<Tool> = workflows
            .iter()
            .map(|w| {
                Tool::new(
                    w.name.clone(),
                    w.description.clone(),
                    Arc::new(w.input_schema.clone()),
                )
                .with_raw_output_schema(Arc::new(w.output_schema.clone()))
                .with_annotations(w.annotations.clone())
            })
            .collect();
        tools.extend(own_tools());
        Ok(Server {
            inner: Arc::new(Inner {
                workflows,
                runs: Runs::new(store, settings, options.lease, options.interrupt.clone())?,
                deadline: options.deadline,
                tools,
            }),
            calls: Calls::default(),
        })
    }

    /// The same server for another connection: shares the workflows and
    /// runs, not the table of calls in flight (request ids are per connection).
    pub fn for_session(&self) -> Server {
        Server {
            inner: self.inner.clone(),
            calls: Calls::default(),
        }
    }

    /// The names of the served workflows.
    pub fn workflow_names(&self) -> Vec<String> {
        self.inner
            .workflows
            .iter()
            .map(|w| w.name.clone())
            .collect()
    }

    /// Serves one client over a byte stream pair (stdio, a pipe) until it disconnects.
    pub async fn serve_io<R, W>(self, read: R, write: W) -> Result<(), ServeError>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let running = self
            .clone()
            .serve((read, write))
            .await
            .map_err(|e| ServeError::Transport(e.to_string()))?;
        running
            .waiting()
            .await
            .map_err(|e| ServeError::Transport(e.to_string()))?;
        Ok(())
    }

    /// Serves one client over standard input and output until it
    /// disconnects (closes standard input), then stops the runs this
    /// process drives (see [`Runs::shutdown`]): the process is the client's
    /// child and ends with it.
    pub async fn serve_stdio(self) -> Result<(), ServeError> {
        let (read, write) = rmcp::transport::stdio();
        let served = self.clone().serve_io(read, write).await;
        self.inner.runs.shutdown().await;
        served
    }

    fn entry(&self, name: &str) -> Option<&WorkflowEntry> {
        self.inner.workflows.iter().find(|w| w.name == name)
    }

    async fn call_workflow(
        &self,
        entry: &WorkflowEntry,
        args: &Map<String, J>,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let runs = &self.inner.runs;
        // The call's idempotency key: an argument (unless the workflow has
        // an input of that name), else `_meta.idempotencyKey`.
        let mut args = args.clone();
        let takes_key = !entry
            .compiled
            .workflow()
            .inputs
            .iter()
            .any(|v| entry.compiled.workflow().var(*v).name == IDEMPOTENCY_ARG);
        let key = match takes_key.then(|| args.remove(IDEMPOTENCY_ARG)).flatten() {
            Some(J::String(k)) if !k.is_empty() => Some(k),
            Some(_) => return tool_error("`idempotency_key` must be a non-empty string").into(),
            None => context
                .meta
                .get(IDEMPOTENCY_META)
                .and_then(J::as_str)
                .map(str::to_owned),
        };
        let (run, new) = match &key {
            Some(k) => match runs.start_keyed(entry, &args, k) {
                Ok(started) => started,
                Err(e) => return tool_error(&e.to_string()).into(),
            },
            None => match runs.start(entry, &args) {
                Ok(run) => (run, true),
                Err(e) => return tool_error(&e.to_string()).into(),
            },
        };
        if !new {
            // The key's run: where it stands, as `get_run` tells it, its
            // results when it is done.
            return self.existing_run(run).await.into();
        }
        if let Ok(mut calls) = self.calls.lock() {
            calls.insert(context.id.clone(), run);
        }
        // The run is a new resource; a client that is gone does not matter.
        let _ = context.peer.notify_resource_list_changed().await;
        self.follow(entry, run, 0, context).await
    }

    /// Waits (up to the deadline) for `run` to end or to wait on a person
    /// beyond its first `waits_before` waits, and answers the call: the
    /// results; the people's questions as an input-required result for a
    /// client that answers them itself (2026-07-28, with elicitation);
    /// otherwise where the run stands.
    async fn follow(
        &self,
        entry: &WorkflowEntry,
        run: i64,
        waits_before: u64,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let runs = &self.inner.runs;
        let name = Store::run_name(run);
        let mut waits_before = waits_before;
        let progress = loop {
            let reports = self.report_progress(run, &name, context);
            let progress = tokio::select! {
                p = runs.wait(run, self.inner.deadline, waits_before) => p,
                () = reports => unreachable!("progress reports until the call ends"),
                // Cancelled (`notifications/cancelled`, handled by
                // `on_cancelled`) or the client went away: nobody reads the
                // answer, and the run goes on unless it was cancelled.
                () = context.ct.cancelled() => {
                    return tool_error(&format!("the call was cancelled; {name} goes on unless it was cancelled too")).into();
                }
            };
            // An older client (2025-11-25) that declares elicitation is
            // asked each question in its session, and the call goes on.
            if let Progress::Waiting = progress
                && elicits_in_session(context)
            {
                waits_before = runs.waits(run);
                if self.ask_in_session(run, context).await > 0 {
                    continue;
                }
            }
            break progress;
        };
        if let Ok(mut calls) = self.calls.lock() {
            calls.remove(&context.id);
        }
        // Still going: a client with the tasks extension gets the run as a
        // task to poll (its questions come with it).
        if matches!(progress, Progress::Running | Progress::Waiting)
            && tasks_for(context)
            && let Some(task) = self.task_created(run)
        {
            return task.into();
        }
        if let Progress::Waiting = progress
            && elicits(context)
            && let Some(asked) = self.questions(run)
        {
            return asked.into();
        }
        match progress {
            Progress::Ended(Ok(results)) => {
                let mut result = CallToolResult::structured(J::Object(results));
                let mut meta = Map::new();
                meta.insert("troupe/run".into(), json!(name));
                result.meta = Some(MetaObject(meta));
                result.into()
            }
            Progress::Ended(Err(error)) => error_doc(json!({
                "run": name, "workflow": entry.name, "status": "failed", "error": error
            }))
            .into(),
            p => self.unfinished(run, &p).into(),
        }
    }

    /// Asks the caller's user each pending task of `run` with
    /// `elicitation/create` in its session, and records the accepted
    /// answers through the host; how many there were. Waits as long as the
    /// person takes (the call's cancellation ends it).
    async fn ask_in_session(&self, run: i64, context: &RequestContext<RoleServer>) -> usize {
        let tasks = self.inner.runs.pending_tasks(Some(run)).unwrap_or_default();
        let mut responses = rmcp::model::InputResponses::new();
        for t in &tasks {
            let Ok(schema) = serde_json::from_value(elicitation::form(t)) else {
                continue;
            };
            let params = rmcp::model::ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: elicitation::message(t),
                requested_schema: schema,
            };
            let asked = tokio::select! {
                r = context.peer.create_elicitation(params) => r,
                () = context.ct.cancelled() => return 0,
            };
            if let Ok(answer) = asked
                && let Ok(answer) = serde_json::to_value(answer)
            {
                responses.insert(t.id.clone(), answer);
            }
        }
        self.apply_answers(run, &responses).unwrap_or(0)
    }

    /// The pending tasks of `run` as an input-required result: one
    /// elicitation form per task (its answer's JSON Schema as the form),
    /// keyed by task id, with the run as the request state.
    fn questions(&self, run: i64) -> Option<rmcp::model::InputRequiredResult> {
        let tasks = self.inner.runs.pending_tasks(Some(run)).ok()?;
        if tasks.is_empty() {
            return None;
        }
        serde_json::from_value(json!({
            "resultType": "input_required",
            "inputRequests": elicitation::requests(&tasks),
            "requestState": Store::run_name(run),
        }))
        .ok()
    }

    /// Records the accepted answers of `responses` (keyed by task id) to
    /// pending tasks of `run`, through the host; how many there were.
    fn apply_answers(
        &self,
        run: i64,
        responses: &rmcp::model::InputResponses,
    ) -> Result<usize, String> {
        let runs = &self.inner.runs;
        let pending = runs.pending_tasks(Some(run)).unwrap_or_default();
        let mut answers = 0;
        for (task, response) in responses {
            let Some(t) = pending.iter().find(|t| &t.id == task) else {
                continue;
            };
            if let Some(value) = elicitation::accepted(t, response) {
                runs.answer(task, &value, "mcp elicitation")
                    .map_err(|e| format!("{task}: {e}"))?;
                answers += 1;
            }
        }
        Ok(answers)
    }

    /// A retried call carrying people's answers (`inputResponses`) for the
    /// run named by its `requestState`: each accepted answer goes through
    /// the host like every channel's (typed; the first answer wins), then
    /// the call follows the run as a first call does.
    async fn answered(
        &self,
        entry: &WorkflowEntry,
        state: &str,
        responses: &rmcp::model::InputResponses,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let runs = &self.inner.runs;
        // The state comes back from the client: trusted only as far as it
        // names a run of this tool's workflow.
        let Some(run) = Store::parse_run_id(state) else {
            return tool_error("the request state names no run").into();
        };
        match runs.store().run(run) {
            Ok(d) if d.summary.workflow == entry.name => {}
            Ok(_) => return tool_error("the request state names a run of another workflow").into(),
            Err(e) => return tool_error(&e.to_string()).into(),
        }
        let waits_before = runs.waits(run);
        let answers = match self.apply_answers(run, responses) {
            Ok(n) => n,
            Err(e) => return tool_error(&e).into(),
        };
        if answers == 0 {
            // Declined or cancelled: the tasks stay pending for any channel,
            // and the call says where the run stands rather than ask again.
            return self.unfinished(run, &Progress::Waiting).into();
        }
        // Orphaned by a stopped server: the answer lets it go on here.
        let _ = runs.resume_stalled(run);
        self.follow(entry, run, waits_before, context).await
    }

    /// Sends `notifications/progress` while `run` goes on, when the call
    /// asked for them (a `progressToken` in its `_meta`): the progress is
    /// the run's recorded events plus its finished steps, reported when it
    /// grew, checked every [`PROGRESS_EVERY`]. Never ends by itself.
    async fn report_progress(&self, run: i64, name: &str, context: &RequestContext<RoleServer>) {
        let Some(token) = context.meta.get_progress_token() else {
            return std::future::pending().await;
        };
        let mut last = 0u64;
        loop {
            tokio::time::sleep(PROGRESS_EVERY).await;
            let Ok((events, steps)) = self.inner.runs.progress(run) else {
                continue;
            };
            let now = events + steps as u64;
            if now > last {
                last = now;
                let note = ProgressNotificationParam::new(token.clone(), now as f64).with_message(
                    format!("{name}: {events} events recorded, {steps} steps done"),
                );
                // A client that is gone does not matter: the call ends with it.
                let _ = context.peer.notify_progress(note).await;
            }
        }
    }

    /// A run started before (by an idempotency key): its results when it
    /// is done, as a first call would have answered; otherwise where it
    /// stands, after waiting up to the deadline for a run this process
    /// drives that waits on nobody.
    async fn existing_run(&self, run: i64) -> CallToolResult {
        let progress = self.where_it_stands(run).await;
        let name = Store::run_name(run);
        match self.inner.runs.store().run(run) {
            Ok(d) if d.summary.status == troupe_store::RunStatus::Done => {
                let mut result =
                    CallToolResult::structured(d.summary.result.unwrap_or_else(|| json!({})));
                let mut meta = Map::new();
                meta.insert("troupe/run".into(), json!(name));
                result.meta = Some(MetaObject(meta));
                result
            }
            Ok(d) if d.summary.status == troupe_store::RunStatus::Failed => error_doc(json!({
                "run": name, "workflow": d.summary.workflow, "status": "failed",
                "error": d.summary.error
            })),
            Ok(_) => self.unfinished(run, &progress),
            Err(e) => tool_error(&e.to_string()),
        }
    }

    /// Where a run started before stands: waiting on people when it has
    /// pending tasks; else, driven by this process, whatever happens first
    /// within the deadline.
    async fn where_it_stands(&self, run: i64) -> Progress {
        let runs = &self.inner.runs;
        if runs.pending_tasks(Some(run)).is_ok_and(|t| !t.is_empty()) {
            Progress::Waiting
        } else if runs.is_live(run) {
            runs.wait(run, self.inner.deadline, runs.waits(run)).await
        } else {
            Progress::Running
        }
    }
}

/// Whether the caller answers people's questions itself: a 2026-07-28
/// client (input-required results) that declares elicitation.
fn elicits(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| !v.has_initialize())
        && context
            .client_capabilities()
            .is_some_and(|c| c.elicitation.is_some())
}

/// Whether the caller takes runs as tasks: a 2026-07-28 client that
/// declares the tasks extension (which that revision defines).
fn tasks_for(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| !v.has_initialize())
        && context
            .client_capabilities()
            .is_some_and(|c| c.supports_tasks())
}

/// Whether the caller is an older client (with a session) whose user can
/// be asked with `elicitation/create`.
fn elicits_in_session(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v.has_initialize())
        && context
            .client_capabilities()
            .is_some_and(|c| c.elicitation.is_some())
}

fn tool_error(message: &str) -> CallToolResult {
    CallToolResult::error(vec![rmcp::model::ContentBlock::text(message.to_owned())])
}

/// An error result of a workflow tool: `doc` as JSON text, without
/// `structuredContent` — a workflow tool's structured content is its
/// results, and clients check it against the output schema even on errors
/// (the TypeScript SDK does).
pub(crate) fn error_doc(doc: J) -> CallToolResult {
    CallToolResult::error(vec![rmcp::model::ContentBlock::text(doc.to_string())])
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        let names = self.workflow_names().join(", ");
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_resources_list_changed()
                .enable_tasks()
                .build(),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
        .with_server_info(Implementation::new("troupe", env!("CARGO_PKG_VERSION")))
        .with_instructions(format!(
            "troupe workflows as tools ({names}). A call starts a durable run and returns its \
             results, or its run id and status when it waits on people or takes long; answer \
             pending human tasks with `{ANSWER_TOOL}` (list them with `{LIST_TASKS_TOOL}`); \
             read runs as resources under {RUNS_URI}."
        ))
    }

    /// `notifications/cancelled` of a workflow call: the call's run is
    /// cancelled (its in-flight actions stop, a command effect's process is
    /// killed, when the run's owner sees the request at its next lease
    /// renewal). The call itself gets no answer, as the protocol says.
    async fn on_cancelled(
        &self,
        notification: CancelledNotificationParam,
        _context: NotificationContext<RoleServer>,
    ) {
        let Some(id) = notification.request_id else {
            return;
        };
        let run = match self.calls.lock() {
            Ok(mut calls) => calls.remove(&id),
            Err(_) => None,
        };
        if let Some(run) = run {
            let reason = notification
                .reason
                .unwrap_or_else(|| "cancelled by the MCP client".into());
            // A run that ended meanwhile has nothing to cancel; a notification
            // has no answer to carry an error.
            let _ = self.inner.runs.cancel(run, &reason);
        }
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, ErrorData> {
        self.task_state(&request.task_id)
    }

    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.task_answers(&request.task_id, &request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.task_cancel(&request.task_id)
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2026_07_28))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.inner.tools.clone()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.inner.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.clone().unwrap_or_default();
        let result = match request.name.as_ref() {
            ANSWER_TOOL => self.call_answer(&args).await,
            LIST_TASKS_TOOL => self.call_list_tasks(&args),
            GET_RUN_TOOL => self.call_get_run(&args).await,
            name => match self.entry(name) {
                Some(entry) => {
                    let entry = entry.clone();
                    // A retry of an input-required answer: the people's
                    // answers, and the run they are for.
                    if let Some(state) = &request.request_state {
                        let responses = request.input_responses.clone().unwrap_or_default();
                        return Ok(self.answered(&entry, state, &responses, &context).await);
                    }
                    return Ok(self.call_workflow(&entry, &args, &context).await);
                }
                None => {
                    return Err(ErrorData::invalid_params(
                        format!(
                            "no tool `{name}`; the tools are {}",
                            self.inner
                                .tools
                                .iter()
                                .map(|t| t.name.to_string())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                        None,
                    ));
                }
            },
        };
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let mut list = vec![
            Resource::new(RUNS_URI, "runs")
                .with_description("The runs in the store")
                .with_mime_type(JSON_MIME),
            Resource::new(TASKS_URI, "tasks")
                .with_description("The pending human tasks")
                .with_mime_type(JSON_MIME),
        ];
        let runs = self
            .inner
            .runs
            .store()
            .runs(None)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        for r in runs {
            list.push(
                Resource::new(format!("{RUNS_URI}/{}", r.id), r.name.clone())
                    .with_description(format!("{} of `{}`: {}", r.name, r.workflow, r.status))
                    .with_mime_type(JSON_MIME),
            );
        }
        Ok(ListResourcesResult::with_all_items(list))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new(format!("{RUNS_URI}/{{id}}"), "run")
                .with_description("A run: status, results or error, pending tasks")
                .with_mime_type(JSON_MIME),
            ResourceTemplate::new(format!("{RUNS_URI}/{{id}}/trace"), "run trace")
                .with_description("The recorded events of a run")
                .with_mime_type(JSON_MIME),
            ResourceTemplate::new(format!("{RUNS_URI}/{{id}}/chart"), "run chart")
                .with_description("The sequence chart of a run so far (Mermaid)")
                .with_mime_type(MERMAID_MIME),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri;
        let Some(r) = resources::parse_uri(&uri) else {
            return Err(ErrorData::resource_not_found(
                format!("no resource `{uri}`; see {RUNS_URI}"),
                None,
            ));
        };
        match resources::read(&self.inner.runs, r) {
            Ok((text, mime)) => Ok(ReadResourceResult::new(vec![
                ResourceContents::text(text, uri).with_mime_type(mime),
            ])
            .into()),
            Err(ServeError::Store(StoreError::UnknownRun(_))) => Err(
                ErrorData::resource_not_found(format!("no run for `{uri}`"), None),
            ),
            Err(e) => Err(ErrorData::internal_error(e.to_string(), None)),
        }
    }
}
