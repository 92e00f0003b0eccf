//! Runs as MCP resources:
//!
//! | URI | content |
//! |---|---|
//! | `troupe://runs` | the runs of the store (JSON) |
//! | `troupe://tasks` | the pending human tasks (JSON) |
//! | `troupe://runs/{id}` | a run's status, results or error, and its tasks (JSON) |
//! | `troupe://runs/{id}/trace` | its recorded events (JSON records, as `troupe trace --json`) |
//! | `troupe://runs/{id}/chart` | its sequence chart so far (Mermaid, `text/x-mermaid`) |

use std::sync::Arc;

use serde_json::{Value as J, json};
use troupe_llm::MockBackend;
use troupe_msc::{ChartOptions, Execution, execution_chart};
use troupe_runtime::{Engine, EngineBuilder, Trace, TraceEntry};
use troupe_store::Store;

use super::ServeError;
use super::runs::{Runs, task_json};

pub const RUNS_URI: &str = "troupe://runs";
pub const TASKS_URI: &str = "troupe://tasks";
pub const JSON_MIME: &str = "application/json";
pub const MERMAID_MIME: &str = "text/x-mermaid";

/// What a resource URI names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceRef {
    Runs,
    Tasks,
    Run(i64),
    Trace(i64),
    Chart(i64),
}

/// Parses a `troupe://` URI; `None` if it names no resource of the server.
pub fn parse_uri(uri: &str) -> Option<ResourceRef> {
    match uri {
        RUNS_URI | "troupe://runs/" => return Some(ResourceRef::Runs),
        TASKS_URI => return Some(ResourceRef::Tasks),
        _ => {}
    }
    let rest = uri.strip_prefix("troupe://runs/")?;
    let (id, tail) = match rest.split_once('/') {
        Some((id, tail)) => (id, Some(tail)),
        None => (rest, None),
    };
    if id.is_empty()
        || !id
            .trim_start_matches("run-")
            .bytes()
            .all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let id = Store::parse_run_id(id)?;
    match tail {
        None | Some("") => Some(ResourceRef::Run(id)),
        Some("trace") => Some(ResourceRef::Trace(id)),
        Some("chart") => Some(ResourceRef::Chart(id)),
        Some(_) => None,
    }
}

/// The text and MIME type of a resource.
pub fn read(runs: &Runs, r: ResourceRef) -> Result<(String, &'static str), ServeError> {
    let store = runs.store();
    let pretty = |v: &J| serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string());
    match r {
        ResourceRef::Runs => {
            let list: Vec<J> = store
                .runs(None)?
                .iter()
                .map(|s| {
                    json!({
                        "run": s.name,
                        "workflow": s.workflow,
                        "status": s.status,
                        "uri": format!("{RUNS_URI}/{}", s.id),
                        "updated_at": s.updated_at,
                    })
                })
                .collect();
            Ok((pretty(&J::Array(list)), JSON_MIME))
        }
        ResourceRef::Tasks => {
            let list: Vec<J> = runs.pending_tasks(None)?.iter().map(task_json).collect();
            Ok((pretty(&J::Array(list)), JSON_MIME))
        }
        ResourceRef::Run(id) => {
            let mut doc = runs.status_doc(id)?;
            let detail = store.run(id)?;
            if let Some(obj) = doc.as_object_mut() {
                obj.insert("file".into(), json!(detail.summary.file));
                obj.insert("inputs".into(), detail.inputs.clone());
                obj.insert("created_at".into(), json!(detail.summary.created_at));
                obj.insert("updated_at".into(), json!(detail.summary.updated_at));
                obj.insert("events".into(), json!(detail.events));
            }
            Ok((pretty(&doc), JSON_MIME))
        }
        ResourceRef::Trace(id) => {
            let (engine, events) = recorded(store, id)?;
            let trace = Trace {
                entries: events
                    .into_iter()
                    .enumerate()
                    .map(|(i, (lifeline, event))| TraceEntry {
                        time: i as u64,
                        lifeline,
                        event,
                    })
                    .collect(),
            };
            let json = trace.to_json(engine.program(), engine.workflow());
            Ok((pretty(&json), JSON_MIME))
        }
        ResourceRef::Chart(id) => {
            let (engine, events) = recorded(store, id)?;
            let mut exec = Execution::new(engine.workflow().lifelines.len());
            for (l, e) in events {
                if let Some(word) = exec.words.get_mut(l.0 as usize) {
                    word.push(e);
                }
            }
            let chart = execution_chart(
                engine.program(),
                engine.workflow(),
                &exec,
                &ChartOptions::default(),
            );
            Ok((troupe_msc::chart::mermaid::render(&chart), MERMAID_MIME))
        }
    }
}

type Events = Vec<(troupe_check::ir::LifelineId, troupe_msc::Event)>;

/// The recorded run's program (from its recorded source) and its events.
fn recorded(store: &Store, id: i64) -> Result<(Engine, Events), ServeError> {
    let detail = store.run(id)?;
    let engine = EngineBuilder::from_source(&detail.source)
        .map_err(|_| {
            ServeError::Internal(format!(
                "the recorded source of {} no longer checks",
                detail.summary.name
            ))
        })?
        .workflow(&detail.summary.workflow)
        .mock_unbound_externs(Arc::new(MockBackend::new()))
        .build()
        .map_err(|e| ServeError::Internal(e.to_string()))?;
    let (events, _) = store.events(id, 0)?;
    Ok((engine, events))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris() {
        assert_eq!(parse_uri("troupe://runs"), Some(ResourceRef::Runs));
        assert_eq!(parse_uri("troupe://runs/3"), Some(ResourceRef::Run(3)));
        assert_eq!(parse_uri("troupe://runs/run-3"), Some(ResourceRef::Run(3)));
        assert_eq!(
            parse_uri("troupe://runs/3/trace"),
            Some(ResourceRef::Trace(3))
        );
        assert_eq!(
            parse_uri("troupe://runs/3/chart"),
            Some(ResourceRef::Chart(3))
        );
        for bad in [
            "troupe://runs/x",
            "troupe://runs/3/other",
            "http://x",
            "troupe://runs/-1",
            "troupe://runs/99999999999999999999999",
            "",
        ] {
            assert_eq!(parse_uri(bad), None, "{bad}");
        }
    }
}
