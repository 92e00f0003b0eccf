//! Durable runs started by the server: the same sequence as `troupe run FILE
//! --store DB` (parse inputs, record the run, claim it, open its journal,
//! run the engine with a `StoreInbox`), on a task of the server's runtime, so
//! a run that waits on people or takes long goes on after the tool call
//! returned. Answers to human tasks go through the store (`Store::answer`),
//! validated as `troupe answer` validates them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value as J, json};
use tokio::sync::watch;
use troupe_llm::{LlmBackend, MockBackend};
use troupe_runtime::{EngineBuilder, RunError, RunOptions};
use troupe_store::{NewRun, Store, StoreError, StoreInbox, TaskRow};

use super::ServeError;
use super::workflows::WorkflowEntry;
use crate::McpToolHost;

/// How a run of this process ended: its results (a JSON object) or its error.
pub type RunEnd = Result<Map<String, J>, String>;

/// A run driven by this process.
#[derive(Clone)]
struct LiveRun {
    /// `Some` once the run ended.
    end: watch::Receiver<Option<RunEnd>>,
    /// Counts the human tasks the run started waiting on.
    waits: watch::Receiver<u64>,
}

/// Where a run stands after a wait.
#[derive(Debug)]
pub enum Progress {
    /// It ended (in this process).
    Ended(RunEnd),
    /// It waits on people: a new human task is pending.
    Waiting,
    /// Still going after the deadline (or not run by this process).
    Running,
}

/// The runs of one store, and the backends new runs get.
pub struct Runs {
    store: Store,
    llm: Arc<dyn LlmBackend>,
    llm_name: String,
    live: Mutex<HashMap<i64, LiveRun>>,
}

impl std::fmt::Debug for Runs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runs").field("llm", &self.llm_name).finish()
    }
}

impl Runs {
    pub fn new(store: Store, llm: Arc<dyn LlmBackend>, llm_name: String) -> Runs {
        Runs {
            store,
            llm,
            llm_name,
            live: Mutex::new(HashMap::new()),
        }
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Starts a durable run of `entry` with `arguments` (a JSON object keyed
    /// by input name). Must be called inside a tokio runtime.
    pub fn start(
        &self,
        entry: &WorkflowEntry,
        arguments: &Map<String, J>,
    ) -> Result<i64, ServeError> {
        let program = entry.program.clone();
        let wf = program
            .workflow(&entry.name)
            .ok_or_else(|| ServeError::Workflows(format!("no workflow `{}`", entry.name)))?;
        let inputs = entry
            .probe
            .parse_inputs(&[], Some(&J::Object(arguments.clone())))
            .map_err(|e| ServeError::Input(e.to_string()))?;
        let inputs_json: Map<_, _> = wf
            .inputs
            .iter()
            .zip(&inputs)
            .map(|(v, value)| (wf.var(*v).name.clone(), value.to_json(&program.types)))
            .collect();
        let (fingerprint, canonical) = troupe_store::fingerprint(&program, wf);
        let run = self.store.create_run(&NewRun {
            workflow: wf.name.clone(),
            file: Some(entry.file.display().to_string()),
            source: entry.source.clone(),
            fingerprint,
            canonical,
            inputs_json: J::Object(inputs_json).to_string(),
            inputs: inputs.clone(),
            seed: 0,
            lifelines: wf.lifelines.len(),
            llm: self.llm_name.clone(),
        })?;
        let name = wf.name.clone();
        self.launch(run, program, &name, inputs, 0)?;
        Ok(run)
    }

    /// Resumes `run` in this process if it is unfinished and its process is
    /// gone (`stalled`), with its recorded source, inputs and seed; recorded
    /// steps are not redone. Returns whether it was resumed.
    pub fn resume_stalled(&self, run: i64) -> Result<bool, ServeError> {
        if self.is_live(run) {
            return Ok(false);
        }
        let detail = self.store.run(run)?;
        if detail.summary.status != "stalled" {
            return Ok(false);
        }
        let (program, _) = troupe_check::check_text(&detail.source);
        let Some(program) = program else {
            return Err(ServeError::Internal(format!(
                "the recorded source of {} no longer checks",
                detail.summary.name
            )));
        };
        self.launch(
            run,
            Arc::new(program),
            &detail.summary.workflow,
            detail.input_values.clone(),
            detail.seed,
        )?;
        Ok(true)
    }

    fn is_live(&self, run: i64) -> bool {
        self.live
            .lock()
            .map(|m| m.contains_key(&run))
            .unwrap_or(false)
    }

    /// Drives a recorded run on a task of the current runtime: the engine
    /// with the server's model, a `StoreInbox` and an MCP tool host; the
    /// run's journal (which replays what the run recorded already).
    fn launch(
        &self,
        run: i64,
        program: Arc<troupe_check::ir::Program>,
        workflow: &str,
        inputs: Vec<troupe_check::Value>,
        seed: u64,
    ) -> Result<(), ServeError> {
        let (waits_tx, waits_rx) = watch::channel(0u64);
        let waits_tx = Arc::new(waits_tx);
        let on_wait = {
            let waits_tx = waits_tx.clone();
            Arc::new(move |_: &str, _: &troupe_runtime::HumanTask| {
                waits_tx.send_modify(|n| *n += 1);
            })
        };
        let inbox = StoreInbox::new(self.store.clone(), run).on_wait(on_wait);
        let tools = Arc::new(McpToolHost::for_program(&program));
        let engine = EngineBuilder::from_program((*program).clone())
            .workflow(workflow)
            .llm(self.llm.clone())
            .mock_unbound_externs(Arc::new(MockBackend::new()))
            .humans(Arc::new(inbox))
            .tools(tools.clone())
            .build()
            .map_err(|e| self.failed(run, e.to_string()))?;
        self.store.claim(run)?;
        let journal = self
            .store
            .journal(run, Arc::new(engine.types().clone()))
            .map_err(|e| self.failed(run, e.to_string()))?;
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
        let store = self.store.clone();
        let options = RunOptions {
            run_id: Store::run_name(run),
            seed,
            trace: false,
            journal: Some(journal),
            ..RunOptions::default()
        };
        tokio::spawn(async move {
            let outcome = engine.run(inputs, options).await;
            let end = match outcome {
                Ok(o) => Ok(o
                    .results
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_json(engine.types())))
                    .collect()),
                Err(e) => {
                    if let RunError::NeedsResolution { .. } = &e {
                        let _ = store.needs_resolution(run, &e.to_string());
                    }
                    Err(e.to_string())
                }
            };
            tools.close_all().await;
            // Keep the sender alive until the end is sent.
            drop(waits_tx);
            let _ = end_tx.send(Some(end));
        });
        Ok(())
    }

    /// Records a run that could not start as failed; returns the error.
    fn failed(&self, run: i64, message: String) -> ServeError {
        let _ = self.store.fail(run, &message);
        ServeError::Internal(message)
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
            .store
            .tasks(false)?
            .into_iter()
            .filter(|t| name.as_ref().is_none_or(|n| &t.run == n))
            .collect())
    }

    /// Where a run stands, as the tools report it: `{"run", "workflow",
    /// "status", "results" | "error", "tasks"}`.
    pub fn status_doc(&self, run: i64) -> Result<J, StoreError> {
        let detail = self.store.run(run)?;
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

    /// Answers a pending task, validated like `troupe answer`: a confirm
    /// takes a boolean, a select one of its options. Returns the task.
    pub fn answer(&self, task: &str, answer: &J, by: &str) -> Result<TaskRow, ServeError> {
        let row = self.store.task(task)?;
        if row.status != "pending" {
            return Err(ServeError::Input(format!(
                "{} is {} already{}",
                row.id,
                row.status,
                row.answer
                    .as_deref()
                    .map(|a| format!(" (answer {a})"))
                    .unwrap_or_default()
            )));
        }
        match row.kind.as_str() {
            "confirm" if !answer.is_boolean() => {
                return Err(ServeError::Input(format!(
                    "{} asks for a confirmation: answer true or false",
                    row.id
                )));
            }
            "select" => {
                let ok = answer
                    .as_str()
                    .is_some_and(|v| row.options.iter().any(|o| o == v));
                if !ok {
                    return Err(ServeError::Input(format!(
                        "{answer} is not a choice of {}; the choices are {}",
                        row.id,
                        row.options.join(", ")
                    )));
                }
            }
            "input" | "edit" if answer.is_null() => {
                return Err(ServeError::Input(format!("{} needs an answer", row.id)));
            }
            _ => {}
        }
        Ok(self.store.answer(task, answer, by)?)
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
    });
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
