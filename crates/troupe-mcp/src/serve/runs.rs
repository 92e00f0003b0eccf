//! Durable runs started by the server, through the run lifecycle of
//! `troupe-host` (the same code path as `troupe run FILE --store DB`): the
//! workflow is loaded and verified once, a call starts a run under this
//! server's lease and drives it on a task of the server's runtime, so a run
//! that waits on people or takes long goes on after the tool call returned.
//! Answers go through the host, which reads them by the task's type.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value as J, json};
use tokio::sync::watch;
use troupe_host::{AnswerInput, Host, Notice, Overrides, RunEnd, RunSettings, StartPolicy};
use troupe_store::{RunStatus, Store, StoreError, TaskRow};

use super::ServeError;
use super::workflows::WorkflowEntry;

/// How a run of this process ended: its results (a JSON object) or its error.
pub type RunResult = Result<Map<String, J>, String>;

/// A run driven by this process.
#[derive(Clone)]
struct LiveRun {
    /// `Some` once the run ended.
    end: watch::Receiver<Option<RunResult>>,
    /// Counts the human tasks the run started waiting on.
    waits: watch::Receiver<u64>,
}

/// Where a run stands after a wait.
#[derive(Debug)]
pub enum Progress {
    /// It ended (in this process).
    Ended(RunResult),
    /// It waits on people: a new human task is pending.
    Waiting,
    /// Still going after the deadline (or not run by this process).
    Running,
}

/// Wait counters of the runs this process drives, fed by the host's notices.
type Waits = Arc<Mutex<HashMap<String, Arc<watch::Sender<u64>>>>>;

/// How long [`Runs::shutdown`] waits for the runs' tasks to stop.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(1);

/// The runs of one store, and the settings new runs get.
pub struct Runs {
    host: Host,
    settings: RunSettings,
    waits: Waits,
    live: Mutex<HashMap<i64, LiveRun>>,
    /// The tasks driving the runs of this process (finished ones included).
    tasks: Mutex<HashMap<i64, tokio::task::JoinHandle<()>>>,
}

impl std::fmt::Debug for Runs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runs")
            .field("settings", &self.settings)
            .finish()
    }
}

/// Runs this process drives now, so that a stopping server waits for them
/// to reach their step boundary ([`driving`]).
static DRIVING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How many runs this process's servers drive now.
pub fn driving() -> usize {
    DRIVING.load(std::sync::atomic::Ordering::SeqCst)
}

impl Runs {
    /// The runs of `store`, started with `settings` (models, mock externs),
    /// under leases of length `lease` (the host's default when `None`),
    /// stopped at their step boundary when `interrupt` is triggered.
    pub fn new(
        store: Store,
        settings: RunSettings,
        lease: Option<Duration>,
        interrupt: Option<troupe_runtime::Interrupt>,
    ) -> Result<Runs, ServeError> {
        let dir = std::env::current_dir().map_err(|e| ServeError::Io {
            path: "(current directory)".into(),
            message: e.to_string(),
        })?;
        let waits: Waits = Arc::default();
        let mut config = troupe_host::HostConfig::new(dir);
        if let Some(lease) = lease {
            config.lease = lease;
        }
        config.interrupt = interrupt;
        let feed = waits.clone();
        config.observer = Some(Arc::new(move |n: &Notice| {
            if let Notice::Waiting { run, .. } = n
                && let Ok(map) = feed.lock()
                && let Some(tx) = map.get(run)
            {
                tx.send_modify(|n| *n += 1);
            }
        }));
        Ok(Runs {
            host: Host::new(store, config, Arc::new(crate::McpTools)),
            settings,
            waits,
            live: Mutex::new(HashMap::new()),
            tasks: Mutex::new(HashMap::new()),
        })
    }

    /// Stops the runs this process drives, as a crash would (what they
    /// recorded stays; a resume goes on from there), and releases their
    /// leases, so that another process may resume them at once instead of
    /// after the lease expired. A run whose task does not stop in time (a
    /// long computation that does not yield) keeps its lease: it expires.
    pub async fn shutdown(&self) {
        let tasks: Vec<(i64, tokio::task::JoinHandle<()>)> = match self.tasks.lock() {
            Ok(mut map) => map.drain().collect(),
            Err(_) => return,
        };
        let until = tokio::time::Instant::now() + SHUTDOWN_WAIT;
        for (run, task) in tasks {
            if task.is_finished() {
                continue;
            }
            task.abort();
            if tokio::time::timeout_at(until, task).await.is_ok() {
                let _ = self.store().release(run, &self.host.config().owner);
            }
        }
    }

    /// Asks the run to stop: its in-flight actions are dropped (a command
    /// effect's process is killed) when its owner sees the request, at its
    /// next lease renewal (every third of the lease).
    pub fn cancel(&self, run: i64, reason: &str) -> Result<troupe_host::Cancel, ServeError> {
        self.host
            .cancel(run, reason)
            .map_err(|e| ServeError::Internal(e.to_string()))
    }

    /// How far `run` got: its recorded events and finished steps.
    pub fn progress(&self, run: i64) -> Result<(u64, usize), StoreError> {
        let detail = self.store().run(run)?;
        let done = detail
            .steps
            .iter()
            .filter(|s| s.status == troupe_store::StepStatus::Done)
            .count();
        Ok((detail.events, done))
    }

    pub fn store(&self) -> &Store {
        self.host.store()
    }

    /// Starts a durable run of `entry` with `arguments` (a JSON object keyed
    /// by input name). Must be called inside a tokio runtime.
    pub fn start(
        &self,
        entry: &WorkflowEntry,
        arguments: &Map<String, J>,
    ) -> Result<i64, ServeError> {
        let inputs = entry
            .compiled
            .parse_inputs(&[], Some(&J::Object(arguments.clone())))
            .map_err(|e| ServeError::Input(e.to_string()))?;
        let started = self
            .host
            .start(&entry.compiled, inputs, &self.settings, StartPolicy::New)
            .map_err(|e| ServeError::Input(e.to_string()))?;
        self.launch(started.run)?;
        Ok(started.run)
    }

    /// [`Runs::start`] under the client's idempotency key `key`: the run
    /// that key started when it started one (resumed here if nobody drives
    /// it), else a new one. Returns the run and whether it is new.
    pub fn start_keyed(
        &self,
        entry: &WorkflowEntry,
        arguments: &Map<String, J>,
        key: &str,
    ) -> Result<(i64, bool), ServeError> {
        let inputs = entry
            .compiled
            .parse_inputs(&[], Some(&J::Object(arguments.clone())))
            .map_err(|e| ServeError::Input(e.to_string()))?;
        match self
            .host
            .start_keyed(&entry.compiled, inputs, &self.settings, key)
            .map_err(|e| ServeError::Input(e.to_string()))?
        {
            troupe_store::Keyed::Created(run) => {
                self.launch(run)?;
                Ok((run, true))
            }
            troupe_store::Keyed::Existing(run) => {
                self.resume_stalled(run)?;
                Ok((run, false))
            }
        }
    }

    /// Resumes `run` in this process if it is unfinished and nobody holds
    /// its lease (`stalled`), with its recorded source, inputs and settings;
    /// recorded steps are not redone. Returns whether it was resumed.
    pub fn resume_stalled(&self, run: i64) -> Result<bool, ServeError> {
        if self.is_live(run) {
            return Ok(false);
        }
        let detail = self.store().run(run)?;
        if detail.summary.status != RunStatus::Stalled {
            return Ok(false);
        }
        match self.host.claim(run) {
            Ok(()) => {}
            // Another process claimed it first: it runs it.
            Err(troupe_host::HostError::Owned { .. }) => return Ok(false),
            Err(e) => return Err(ServeError::Internal(e.to_string())),
        }
        self.launch(run)?;
        Ok(true)
    }

    pub fn is_live(&self, run: i64) -> bool {
        self.live
            .lock()
            .map(|m| m.contains_key(&run))
            .unwrap_or(false)
    }

    /// Drives a claimed run on a task of the current runtime.
    fn launch(&self, run: i64) -> Result<(), ServeError> {
        let name = Store::run_name(run);
        let (waits_tx, waits_rx) = watch::channel(0u64);
        let waits_tx = Arc::new(waits_tx);
        self.waits
            .lock()
            .map_err(|_| ServeError::Internal("the wait table is poisoned".into()))?
            .insert(name.clone(), waits_tx.clone());
        let (end_tx, end_rx) = watch::channel(None);
        self.live
            .lock()
            .map_err(|_| ServeError::Internal("the run table is poisoned".into()))?
            .insert(
                run,
                LiveRun {
                    end: end_rx,
                    waits: waits_rx,
                },
            );
        let host = self.host.clone();
        let waits = self.waits.clone();
        DRIVING.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let task = tokio::spawn(async move {
            let driven = host.drive(run, &Overrides::default(), None).await;
            DRIVING.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            let end = match driven {
                Ok(f) => match f.end {
                    RunEnd::Done { results, .. } => Ok(results
                        .iter()
                        .map(|(k, v)| (k.clone(), v.to_json(f.compiled.types())))
                        .collect()),
                    RunEnd::Failed(e) => Err(e.to_string()),
                    RunEnd::NeedsResolution { message, .. } => Err(message),
                    RunEnd::Cancelled { reason } => Err(format!("cancelled: {reason}")),
                    RunEnd::LeaseLost => Err("another process took the run over".into()),
                    // This host waits in place (it parks nothing).
                    RunEnd::Parked { .. } => {
                        Err("the run was given back to wait for a person".into())
                    }
                    RunEnd::Paused => Err("the run was paused by an operator".into()),
                    RunEnd::Interrupted => Err(
                        "the server was stopped; the run continues where it stopped when resumed"
                            .into(),
                    ),
                    // `drive` runs whole runs; parts are driven by workers.
                    RunEnd::PartDone { .. } => Err("the run is placed on workers".into()),
                },
                Err(e) => Err(e.to_string()),
            };
            if let Ok(mut map) = waits.lock() {
                map.remove(&name);
            }
            // Keep the sender alive until the end is sent.
            drop(waits_tx);
            let _ = end_tx.send(Some(end));
        });
        self.tasks
            .lock()
            .map_err(|_| ServeError::Internal("the task table is poisoned".into()))?
            .insert(run, task);
        Ok(())
    }

    /// How many human tasks `run` (a run of this process) has waited on so
    /// far (0 for a run of another process).
    pub fn waits(&self, run: i64) -> u64 {
        match self.live.lock() {
            Ok(map) => map.get(&run).map(|l| *l.waits.borrow()).unwrap_or(0),
            Err(_) => 0,
        }
    }

    /// Waits up to `deadline` for `run` (a run of this process) to end or to
    /// wait on a human task beyond the first `waits_before` ones (see
    /// [`Runs::waits`]).
    pub async fn wait(&self, run: i64, deadline: Duration, waits_before: u64) -> Progress {
        let live = match self.live.lock() {
            Ok(map) => map.get(&run).cloned(),
            Err(_) => None,
        };
        let Some(LiveRun { mut end, mut waits }) = live else {
            return Progress::Running;
        };
        let ended = async {
            match end.wait_for(Option::is_some).await {
                Ok(e) => e.clone(),
                Err(_) => None,
            }
        };
        let waiting = async {
            // The sender goes away when the run ends: then only `ended` matters.
            if waits.wait_for(|n| *n > waits_before).await.is_err() {
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            biased;
            e = ended => match e {
                Some(e) => Progress::Ended(e),
                None => Progress::Running,
            },
            () = waiting => Progress::Waiting,
            () = tokio::time::sleep(deadline) => Progress::Running,
        }
    }

    /// The pending tasks (of one run, or of all).
    pub fn pending_tasks(&self, run: Option<i64>) -> Result<Vec<TaskRow>, StoreError> {
        let name = run.map(Store::run_name);
        Ok(self
            .store()
            .tasks(false)?
            .into_iter()
            .filter(|t| name.as_ref().is_none_or(|n| &t.run == n))
            .collect())
    }

    /// Where a run stands, as the tools report it: `{"run", "workflow",
    /// "status", "results" | "error", "tasks"}`.
    pub fn status_doc(&self, run: i64) -> Result<J, StoreError> {
        let detail = self.store().run(run)?;
        let s = &detail.summary;
        let mut doc = Map::new();
        doc.insert("run".into(), json!(s.name));
        doc.insert("workflow".into(), json!(s.workflow));
        doc.insert("status".into(), json!(s.status));
        if let Some(r) = &s.result {
            doc.insert("results".into(), r.clone());
        }
        if let Some(e) = &s.error {
            doc.insert("error".into(), json!(e));
        }
        let tasks: Vec<J> = self
            .pending_tasks(Some(run))?
            .iter()
            .map(task_json)
            .collect();
        doc.insert("tasks".into(), J::Array(tasks));
        Ok(J::Object(doc))
    }

    /// Answers a pending task: read by the task's expected type (a confirm
    /// takes true or false, a select one of its options, an `Int` a number);
    /// a wrong answer is refused and the task stays pending.
    pub fn answer(&self, task: &str, answer: &J, by: &str) -> Result<TaskRow, ServeError> {
        self.host
            .answer(task, AnswerInput::Raw(answer.clone()), by)
            .map_err(|e| ServeError::Input(e.to_string()))
    }
}

/// A task as the tools and resources show it.
pub fn task_json(t: &TaskRow) -> J {
    let mut doc = json!({
        "task": t.id,
        "run": t.run,
        "lifeline": t.lifeline,
        "action": t.action,
        "kind": t.kind,
        "prompt": t.prompt,
        "status": t.status,
        "expects": t.ty,
    });
    // What an answer must look like, for a client that builds a form.
    if let (Some(schema), Some(obj)) = (&t.schema, doc.as_object_mut()) {
        obj.insert("schema".into(), schema.clone());
    }
    if let Some(obj) = doc.as_object_mut() {
        if !t.options.is_empty() {
            obj.insert("options".into(), json!(t.options));
        }
        if let Some(p) = &t.prefill {
            obj.insert("prefill".into(), json!(p));
        }
        if let Some(a) = &t.answer {
            obj.insert(
                "answer".into(),
                serde_json::from_str(a).unwrap_or_else(|_| json!(a)),
            );
        }
    }
    doc
}
