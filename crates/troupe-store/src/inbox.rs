//! `StoreInbox`: human tasks of durable runs. A task is recorded durably
//! with a stable id and answered from anywhere (`troupe answer`, the web
//! page, a chat) by a conditional update: the first answer wins. The run
//! waits by polling its task, so an answer from another process reaches it;
//! on PostgreSQL the answer's notification wakes it at once. A task with a
//! deadline is answered by the clock once due (`deadline.rs`).

use crate::writer::Op;
use crate::{NewTask, RunStatus, Store};
use std::sync::Arc;
use std::time::Duration;
use troupe_check::TypeTable;
use troupe_llm::BoxFuture;
use troupe_runtime::{HumanInbox, HumanTask};

/// Called once per task when the run starts waiting on it: `(task id, task)`.
pub type OnWait = dyn Fn(&str, &HumanTask) + Send + Sync;

#[derive(Clone)]
pub struct StoreInbox {
    store: Store,
    run: i64,
    /// To write each task's expected type as data (its name and schema).
    types: Arc<TypeTable>,
    /// Answers to apply at once, keyed like `ScriptedHumans`.
    scripted: Option<serde_json::Map<String, serde_json::Value>>,
    on_wait: Option<Arc<OnWait>>,
    poll: Duration,
}

impl std::fmt::Debug for StoreInbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreInbox")
            .field("run", &self.run)
            .finish()
    }
}

impl StoreInbox {
    pub fn new(store: Store, run: i64, types: Arc<TypeTable>) -> StoreInbox {
        StoreInbox {
            store,
            run,
            types,
            scripted: None,
            on_wait: None,
            poll: Duration::from_millis(100),
        }
    }

    /// Answers from a script (`--answers FILE`), applied as soon as a task appears.
    pub fn scripted(mut self, answers: serde_json::Map<String, serde_json::Value>) -> StoreInbox {
        self.scripted = Some(answers);
        self
    }

    pub fn on_wait(mut self, f: Arc<OnWait>) -> StoreInbox {
        self.on_wait = Some(f);
        self
    }

    fn script_answer(&self, task: &HumanTask) -> Option<serde_json::Value> {
        let answers = self.scripted.as_ref()?;
        let occurrence: usize = task
            .key
            .rsplit('#')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        let v = answers
            .get(&format!("{}.{}", task.lifeline, task.action))
            .or_else(|| answers.get(&task.action))?;
        match v {
            serde_json::Value::Array(list) => list.get(occurrence).cloned(),
            v => Some(v.clone()),
        }
    }
}

impl HumanInbox for StoreInbox {
    fn ask(&self, task: HumanTask) -> BoxFuture<'static, Result<serde_json::Value, String>> {
        let inbox = self.clone();
        Box::pin(async move {
            let writer = inbox.store.writer()?;
            let new = NewTask {
                run: inbox.run,
                key: task.key.clone(),
                lifeline: task.lifeline.clone(),
                action: task.action.clone(),
                kind: task.answer.into(),
                prompt: task.prompt.clone(),
                prefill: task.prefill.clone(),
                options: task.options.clone(),
                ty: inbox.types.display(&task.ty).to_string(),
                schema: troupe_llm::json_schema(&task.ty, &inbox.types).to_string(),
                deadline: task.deadline.as_ref().map(|d| (d.after, d.default.clone())),
                remind: task.remind,
            };
            writer
                .send_durable(Op::Task(new))
                .await
                .map_err(|_| "the store writer stopped".to_owned())??;
            let id = inbox
                .store
                .task_row_id(inbox.run, &task.key)
                .map_err(|e| e.to_string())?
                .ok_or("the task was not recorded")?;
            let task_id = format!("task-{id}");
            // Subscribed before the first look, so that an answer between
            // the look and the wait still wakes it.
            let mut wakeups = inbox.store.subscribe();
            if let Some(answer) = inbox.script_answer(&task) {
                // Conflict means someone answered first: theirs wins.
                let _ = inbox.store.answer(&task_id, &answer, "script");
            }
            let mut announced = false;
            loop {
                let row = inbox.store.task(&task_id).map_err(|e| e.to_string())?;
                if let Some(answer) = row.answer {
                    let _ = writer.send(Op::Status {
                        run: inbox.run,
                        status: RunStatus::Running,
                    });
                    return serde_json::from_str(&answer)
                        .map_err(|e| format!("task {task_id}: stored answer is not JSON: {e}"));
                }
                if !announced {
                    announced = true;
                    // Recorded, unanswered: the run may park on it now.
                    task.asked.waiting();
                    let _ = writer.send(Op::Status {
                        run: inbox.run,
                        status: RunStatus::Waiting,
                    });
                    if let Some(f) = &inbox.on_wait {
                        f(&task_id, &task);
                    }
                }
                // A deadline: answered by the clock once due (first answer
                // wins), looked at again no later than that.
                let (mut timeout, mut poll) = (inbox.poll.max(Duration::from_secs(1)), inbox.poll);
                if task.deadline.is_some() {
                    match inbox.store.due_in(&task_id).map_err(|e| e.to_string())? {
                        Some(ms) if ms <= 0 => {
                            inbox
                                .store
                                .answer_due(Some(inbox.run))
                                .map_err(|e| e.to_string())?;
                            continue;
                        }
                        Some(ms) => {
                            let left = Duration::from_millis(ms as u64);
                            timeout = timeout.min(left);
                            poll = poll.min(left);
                        }
                        None => {}
                    }
                }
                crate::fleet::wait_for_run(&mut wakeups, inbox.run, timeout, poll).await;
            }
        })
    }
}
