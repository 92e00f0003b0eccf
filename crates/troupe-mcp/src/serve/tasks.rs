//! Runs as MCP tasks (the `io.modelcontextprotocol/tasks` extension of the
//! 2026-07-28 revision): a workflow call that outlasts its deadline, made
//! by a client that declares the extension, becomes a task mapped one to
//! one onto the durable run — the task id is the run's name. `tasks/get`
//! reads the run (working, input-required with one form per pending human
//! task, completed with the tool's result, cancelled), `tasks/update`
//! answers its tasks through the host, `tasks/cancel` cancels the run.

use super::{Server, elicitation};
use rmcp::model::{
    CallToolResult, CreateTaskResult, DetailedTask, ErrorData, GetTaskResult, InputResponses,
    JsonObject, Task, TaskPayload, TaskStatus,
};
use serde_json::{Value as J, json};
use troupe_store::{RunStatus, Store};

/// How often a client should poll a run's task.
const POLL_MS: u64 = 500;

impl Server {
    /// The run named by a task id, or the protocol error for an unknown one.
    fn task_run(&self, task_id: &str) -> Result<i64, ErrorData> {
        let run = Store::parse_run_id(task_id)
            .ok_or_else(|| ErrorData::invalid_params(format!("no task {task_id}"), None))?;
        self.inner
            .runs
            .store()
            .run(run)
            .map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
        Ok(run)
    }

    /// The task a call answers with for `run`, which goes on.
    pub(super) fn task_created(&self, run: i64) -> Option<CreateTaskResult> {
        let detail = self.inner.runs.store().run(run).ok()?;
        let s = &detail.summary;
        serde_json::from_value(json!({
            "resultType": "task",
            "taskId": s.name,
            "status": "working",
            "createdAt": s.created_at,
            "lastUpdatedAt": s.updated_at,
            "ttlMs": null,
            "pollIntervalMs": POLL_MS,
        }))
        .ok()
    }

    /// `tasks/get`: where the run stands.
    pub(super) fn task_state(&self, task_id: &str) -> Result<GetTaskResult, ErrorData> {
        let run = self.task_run(task_id)?;
        let runs = &self.inner.runs;
        // Orphaned by a stopped server: it goes on here.
        let _ = runs.resume_stalled(run);
        let detail = runs
            .store()
            .run(run)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let s = &detail.summary;
        let internal = |e: serde_json::Error| ErrorData::internal_error(e.to_string(), None);
        let object = |result: CallToolResult| -> Result<JsonObject, ErrorData> {
            match serde_json::to_value(result).map_err(internal)? {
                J::Object(o) => Ok(o),
                _ => Err(ErrorData::internal_error(
                    "a tool result is an object",
                    None,
                )),
            }
        };
        let payload = match s.status {
            RunStatus::Done => TaskPayload::Completed {
                result: object(CallToolResult::structured(
                    s.result.clone().unwrap_or_else(|| json!({})),
                ))?,
            },
            // A failed run is the tool's answer, an error result.
            RunStatus::Failed | RunStatus::NeedsResolution => TaskPayload::Completed {
                result: object(super::error_doc(json!({
                    "run": s.name, "workflow": s.workflow, "status": s.status,
                    "error": s.error,
                })))?,
            },
            RunStatus::Cancelled => TaskPayload::Cancelled,
            _ => {
                let tasks = runs.pending_tasks(Some(run)).unwrap_or_default();
                if tasks.is_empty() {
                    TaskPayload::Working
                } else {
                    TaskPayload::InputRequired {
                        input_requests: serde_json::from_value(J::Object(elicitation::requests(
                            &tasks,
                        )))
                        .map_err(internal)?,
                    }
                }
            }
        };
        let task = Task::new(
            s.name.clone(),
            TaskStatus::Working,
            s.created_at.clone(),
            s.updated_at.clone(),
        )
        .with_poll_interval_ms(POLL_MS);
        Ok(GetTaskResult::new(DetailedTask::new(task, payload)))
    }

    /// `tasks/update`: the people's answers to the run's pending tasks.
    pub(super) fn task_answers(
        &self,
        task_id: &str,
        responses: &InputResponses,
    ) -> Result<(), ErrorData> {
        let run = self.task_run(task_id)?;
        self.apply_answers(run, responses)
            .map(|_| ())
            .map_err(|e| ErrorData::invalid_params(e, None))?;
        let _ = self.inner.runs.resume_stalled(run);
        Ok(())
    }

    /// `tasks/cancel`: the run is cancelled.
    pub(super) fn task_cancel(&self, task_id: &str) -> Result<(), ErrorData> {
        let run = self.task_run(task_id)?;
        self.inner
            .runs
            .cancel(run, "cancelled through its MCP task")
            .map(|_| ())
            .map_err(|e| ErrorData::invalid_params(e.to_string(), None))
    }
}
