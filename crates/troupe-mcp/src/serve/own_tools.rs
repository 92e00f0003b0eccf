//! The server's own tools — `answer_task`, `list_tasks` and `get_run` —
//! their definitions and their calls, and where a run that has not finished
//! stands (the status a workflow call answers with when it cannot answer
//! with the results). The workflow tools are in `mod.rs`.

use std::sync::Arc;

use rmcp::model::{CallToolResult, Tool, ToolAnnotations};
use serde_json::{Map, Value as J, json};
use troupe_store::Store;

use super::runs::{self, Progress};
use super::{ANSWER_TOOL, GET_RUN_TOOL, LIST_TASKS_TOOL, Server, tool_error};

fn schema(value: J) -> Arc<Map<String, J>> {
    match value {
        J::Object(m) => Arc::new(m),
        _ => Arc::new(Map::new()),
    }
}

pub(super) fn own_tools() -> Vec<Tool> {
    let answer = Tool::new(
        ANSWER_TOOL,
        "Answers a pending human task of a run (see list_tasks, or the `tasks` of a waiting run). \
         A confirm task takes true or false, a select task one of its options, an input or edit \
         task its text (or a JSON value of the asked type). The first answer wins.",
        schema(json!({
            "type": "object",
            "properties": {
                "task": {"type": "string", "description": "The task id, e.g. task-4."},
                "answer": {"description": "The answer: a boolean, an option, a text or a JSON value."},
                "by": {"type": "string", "description": "Who answers (recorded); default `mcp`."}
            },
            "required": ["task", "answer"]
        })),
    )
    .with_annotations(
        ToolAnnotations::new()
            .read_only(false)
            .destructive(false)
            .idempotent(false)
            .open_world(false),
    );
    let list = Tool::new(
        LIST_TASKS_TOOL,
        "Lists the pending human tasks (of one run, or of all runs in the store).",
        schema(json!({
            "type": "object",
            "properties": {
                "run": {"type": "string", "description": "Only the tasks of this run, e.g. run-3."}
            }
        })),
    )
    .with_annotations(reading());
    let get = Tool::new(
        GET_RUN_TOOL,
        "Where a run stands: its status, its results once done (or its error), and the human \
         tasks it waits on with the JSON Schema of each answer. Waits a moment for a run that is \
         still going. A run whose server stopped is taken up again. Use it with the `run` a \
         workflow call answered with when it did not finish in time.",
        schema(json!({
            "type": "object",
            "properties": {
                "run": {"type": "string", "description": "The run, e.g. run-3."}
            },
            "required": ["run"]
        })),
    )
    .with_annotations(reading());
    vec![answer, list, get]
}

/// The annotations of a tool that only reads the store.
fn reading() -> ToolAnnotations {
    ToolAnnotations::new()
        .read_only(true)
        .destructive(false)
        .idempotent(true)
        .open_world(false)
}

impl Server {
    /// `get_run`: where a run stands (see [`GET_RUN_TOOL`]).
    pub(super) async fn call_get_run(&self, args: &Map<String, J>) -> CallToolResult {
        let run = match args.get("run") {
            Some(J::String(s)) => match Store::parse_run_id(s) {
                Some(id) => id,
                None => return tool_error(&format!("`{s}` is not a run id (e.g. run-3)")),
            },
            _ => return tool_error("`run` (a run id such as run-3) is required"),
        };
        let runs = &self.inner.runs;
        if let Err(e) = runs.store().run(run) {
            return tool_error(&e.to_string());
        }
        // Orphaned by a server that stopped: it goes on here.
        if let Err(e) = runs.resume_stalled(run) {
            return tool_error(&e.to_string());
        }
        let progress = self.where_it_stands(run).await;
        self.status_result(run, &progress)
    }

    /// A workflow call's answer when its run has not finished: where the
    /// run stands (`{"run", "status", "tasks", "next"}`, `next` saying how
    /// to get the results) as the JSON text of an *error* result: the call
    /// did not produce the tool's output, whose schema is the results'.
    /// The run goes on.
    pub(super) fn unfinished(&self, run: i64, progress: &Progress) -> CallToolResult {
        let mut doc = match self.where_doc(run, progress) {
            Ok(doc) => doc,
            Err(e) => return e,
        };
        let name = Store::run_name(run);
        let how = match progress {
            Progress::Waiting => format!(
                "{name} waits on people: answer its tasks (`{ANSWER_TOOL}`), then call `{GET_RUN_TOOL}` with {{\"run\": \"{name}\"}} for its results"
            ),
            _ => format!(
                "{name} is still running: call `{GET_RUN_TOOL}` with {{\"run\": \"{name}\"}} for its results"
            ),
        };
        if let Some(obj) = doc.as_object_mut() {
            obj.insert("next".into(), json!(how));
        }
        super::error_doc(doc)
    }

    /// `{"run", "status", "tasks", ...}` of a run that did not end in time.
    pub(super) fn status_result(&self, run: i64, progress: &Progress) -> CallToolResult {
        match self.where_doc(run, progress) {
            Ok(doc) => CallToolResult::structured(doc),
            Err(e) => e,
        }
    }

    /// Where `run` stands, as `get_run` and an unfinished call say it (a
    /// tool error when the store cannot tell).
    fn where_doc(&self, run: i64, progress: &Progress) -> Result<J, CallToolResult> {
        let mut doc = self
            .inner
            .runs
            .status_doc(run)
            .map_err(|e| tool_error(&e.to_string()))?;
        if let (Progress::Waiting, Some(obj)) = (progress, doc.as_object_mut()) {
            // The status is written after the task, without waiting.
            obj.insert("status".into(), json!("waiting"));
        }
        Ok(doc)
    }

    pub(super) async fn call_answer(&self, args: &Map<String, J>) -> CallToolResult {
        let Some(task) = args.get("task").and_then(J::as_str) else {
            return tool_error("`task` (a task id such as task-4) is required");
        };
        let Some(answer) = args.get("answer") else {
            return tool_error("`answer` is required");
        };
        let by = args.get("by").and_then(J::as_str).unwrap_or("mcp");
        let runs = &self.inner.runs;
        // Tasks the run waited on before this answer do not count as new waits.
        let waits_before = runs
            .store()
            .task(task)
            .ok()
            .and_then(|t| Store::parse_run_id(&t.run))
            .map_or(0, |r| runs.waits(r));
        let row = match runs.answer(task, answer, by) {
            Ok(row) => row,
            Err(e) => return tool_error(&e.to_string()),
        };
        let Some(run) = Store::parse_run_id(&row.run) else {
            return tool_error(&format!("{} names no run", row.id));
        };
        // A run whose process is gone (a server that stopped) goes on here.
        if let Err(e) = runs.resume_stalled(run) {
            return tool_error(&format!(
                "{} is answered, but {} could not be resumed: {e}",
                row.id, row.run
            ));
        }
        let progress = runs.wait(run, self.inner.deadline, waits_before).await;
        let mut result = self.status_result(run, &progress);
        if let (Progress::Ended(Ok(results)), Some(J::Object(doc))) =
            (&progress, result.structured_content.as_mut())
        {
            doc.insert("status".into(), json!("done"));
            doc.insert("results".into(), J::Object(results.clone()));
        }
        if let Some(J::Object(doc)) = result.structured_content.as_mut() {
            doc.insert("answered".into(), json!(row.id));
            let text = J::Object(doc.clone()).to_string();
            result.content = vec![rmcp::model::ContentBlock::text(text)];
        }
        result
    }

    pub(super) fn call_list_tasks(&self, args: &Map<String, J>) -> CallToolResult {
        let run = match args.get("run") {
            None | Some(J::Null) => None,
            Some(J::String(s)) => match Store::parse_run_id(s) {
                Some(id) => Some(id),
                None => return tool_error(&format!("`{s}` is not a run id (e.g. run-3)")),
            },
            Some(other) => return tool_error(&format!("`run` must be a string, not {other}")),
        };
        match self.inner.runs.pending_tasks(run) {
            Ok(tasks) => CallToolResult::structured(json!({
                "tasks": tasks.iter().map(runs::task_json).collect::<Vec<_>>()
            })),
            Err(e) => tool_error(&e.to_string()),
        }
    }
}
