//! The workflows a server exposes: files read and checked once at start, one
//! tool per workflow (name, description from the file's leading `//`
//! comment, input schema from the declared inputs).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value as J, json};
use troupe_check::ir::Program;
use troupe_host::{Compiled, HostError};

use super::ServeError;

/// Tool names the server uses for itself; a workflow may not take them.
pub const RESERVED_TOOLS: &[&str] = &[
    super::ANSWER_TOOL,
    super::LIST_TASKS_TOOL,
    super::GET_RUN_TOOL,
];

/// One workflow of one file, ready to start runs of.
#[derive(Clone)]
pub struct WorkflowEntry {
    /// The workflow's name: the tool's name.
    pub name: String,
    /// The file as given on the command line.
    pub file: PathBuf,
    /// The file's text (recorded with each run).
    pub source: String,
    pub program: Arc<Program>,
    /// The tool's description.
    pub description: String,
    /// The tool's input schema (an object with one required property per input).
    pub input_schema: Map<String, J>,
    /// The tool's output schema: the results object of a finished run (see
    /// [`output_schema`]).
    pub output_schema: Map<String, J>,
    /// What a call may do to the world, as the workflow says (see
    /// [`annotations`]).
    pub annotations: rmcp::model::ToolAnnotations,
    /// The workflow, checked and verified against its tools' contracts.
    pub compiled: Arc<Compiled>,
}

impl std::fmt::Debug for WorkflowEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkflowEntry")
            .field("name", &self.name)
            .field("file", &self.file)
            .finish()
    }
}

/// The leading `//` comment of a file (before any other line), as one text;
/// blank lines inside it separate paragraphs. The commands it shows
/// (indented lines starting with `troupe `, continued by a trailing `\`)
/// are for people at a terminal, not for a model: they are left out.
pub fn leading_comment(source: &str) -> Option<String> {
    let mut lines = Vec::new();
    let mut in_command = false;
    for line in source.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("//") {
            let command =
                in_command || (rest.starts_with("  ") && rest.trim().starts_with("troupe "));
            if command {
                in_command = rest.trim_end().ends_with('\\');
                continue;
            }
            lines.push(rest.strip_prefix(' ').unwrap_or(rest).trim_end().to_owned());
        } else if t.is_empty() && lines.is_empty() {
            continue;
        } else {
            break;
        }
    }
    let text = lines.join("\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
}

/// The input schema of a workflow: `json_schema` of each input's type, all
/// required. Definitions of recursive records (`$defs`) are moved to the root,
/// where their `$ref`s point.
pub fn input_schema(program: &Program, wf: &troupe_check::ir::Workflow) -> Map<String, J> {
    let mut schema = object_schema(program, wf, &wf.inputs);
    // A call may carry an idempotency key (unless an input has its name):
    // calling again with it returns the run it started.
    if let Some(J::Object(properties)) = schema.get_mut("properties")
        && !properties.contains_key(super::IDEMPOTENCY_ARG)
    {
        properties.insert(
            super::IDEMPOTENCY_ARG.into(),
            json!({
                "type": "string",
                "description": "Optional. A key of your own for this call: calling again with the same key returns the run it started (with its status or results) instead of starting another, so a retried call performs nothing twice. Also taken from `_meta.idempotencyKey`."
            }),
        );
    }
    schema
}

/// An object with one required property per variable of `vars` (the JSON
/// Schema of its type), no other property, and the definitions of
/// recursive records (`$defs`) moved to the root, where their `$ref`s point.
fn object_schema(
    program: &Program,
    wf: &troupe_check::ir::Workflow,
    vars: &[troupe_check::ir::VarId],
) -> Map<String, J> {
    let mut properties = Map::new();
    let mut required = Vec::new();
    let mut defs = Map::new();
    for v in vars {
        let var = wf.var(*v);
        let mut schema = troupe_llm::schema::json_schema(&var.ty, &program.types);
        if let Some(obj) = schema.as_object_mut()
            && let Some(J::Object(d)) = obj.remove("$defs")
        {
            defs.extend(d);
        }
        properties.insert(var.name.clone(), schema);
        required.push(J::String(var.name.clone()));
    }
    let mut schema = Map::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), J::Object(properties));
    schema.insert("required".into(), J::Array(required));
    schema.insert("additionalProperties".into(), J::Bool(false));
    if !defs.is_empty() {
        schema.insert("$defs".into(), J::Object(defs));
    }
    schema
}

/// The output schema of a workflow: the object a finished run answers
/// with, one required property per result (the JSON Schema of its type,
/// `$defs` at the root). A run that has not finished when the call returns
/// answers with an error result that says where it stands; the status
/// shape is `get_run`'s, not the tool's.
pub fn output_schema(program: &Program, wf: &troupe_check::ir::Workflow) -> Map<String, J> {
    object_schema(program, wf, &wf.results)
}

/// A workflow tool's annotations, from the actions the workflow can reach
/// (a model's `tools:` included): read-only when it reaches no effect and
/// no MCP tool (models and people change nothing outside the run);
/// otherwise destructive, as an effect or a tool may be (an `extern`
/// effect's command, a tool whose contract is not known here); open-world
/// when it reaches a model or a tool; never idempotent, since each call
/// starts a run (an idempotency key makes a repeated call return the
/// first run, see [`super::IDEMPOTENCY_ARG`]).
pub fn annotations(
    program: &Program,
    wf: &troupe_check::ir::Workflow,
) -> rmcp::model::ToolAnnotations {
    use troupe_check::ir::{ActionKind, Call, StmtKind};
    let actions = wf
        .stmts_by_id()
        .into_iter()
        .flatten()
        .filter_map(|s| match &s.kind {
            StmtKind::Act {
                call: Call::Action { action, .. },
                ..
            } => Some(*action),
            _ => None,
        });
    let mut reached: Vec<&ActionKind> = Vec::new();
    for a in actions {
        let kind = &program.action(a).kind;
        if let ActionKind::Llm(llm) = kind {
            reached.extend(llm.tools.iter().map(|t| &program.action(*t).kind));
        }
        reached.push(kind);
    }
    let writes = reached
        .iter()
        .any(|k| matches!(k, ActionKind::Effect { .. } | ActionKind::Tool(_)));
    let open = reached
        .iter()
        .any(|k| matches!(k, ActionKind::Llm(_) | ActionKind::Tool(_)));
    rmcp::model::ToolAnnotations::new()
        .read_only(!writes)
        .destructive(writes)
        .idempotent(false)
        .open_world(open)
}

/// Reads and checks the files; every workflow becomes an entry. Fails on a
/// file that cannot be read or does not check, and on duplicate names.
pub fn load(files: &[PathBuf]) -> Result<Vec<WorkflowEntry>, ServeError> {
    let mut entries: Vec<WorkflowEntry> = Vec::new();
    for file in files {
        for entry in load_file(file)? {
            if RESERVED_TOOLS.contains(&entry.name.as_str()) {
                return Err(ServeError::Workflows(format!(
                    "{}: the workflow name `{}` is reserved for the server's own tool",
                    file.display(),
                    entry.name
                )));
            }
            if let Some(other) = entries.iter().find(|e| e.name == entry.name) {
                return Err(ServeError::Workflows(format!(
                    "two workflows are named `{}` ({} and {}); a tool name must be unique",
                    entry.name,
                    other.file.display(),
                    file.display()
                )));
            }
            entries.push(entry);
        }
    }
    if entries.is_empty() {
        return Err(ServeError::Workflows(
            "no workflow to serve: give at least one .troupe file that declares a workflow".into(),
        ));
    }
    Ok(entries)
}

fn load_file(file: &Path) -> Result<Vec<WorkflowEntry>, ServeError> {
    let source = std::fs::read_to_string(file).map_err(|e| ServeError::Io {
        path: file.display().to_string(),
        message: e.to_string(),
    })?;
    // The same loading as `troupe run`: check, then the contracts of the
    // tools the workflows call; a workflow that breaks them is not served.
    let base = file
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_owned);
    let shown = file.display().to_string();
    let first = Compiled::from_source(source.clone(), &shown, &base, None);
    let program = match first {
        Ok(c) => c.program.clone(),
        Err(HostError::WhichWorkflow { .. }) => {
            // Several workflows: each is compiled on its own below.
            Arc::new(
                troupe_check::check_text(&source)
                    .0
                    .ok_or_else(|| ServeError::Workflows(format!("{shown} does not check")))?,
            )
        }
        Err(e) => return Err(refusal(file, e)),
    };
    let comment = leading_comment(&source);
    let mut out = Vec::new();
    for wf in &program.workflows {
        let compiled = Compiled::from_source(source.clone(), &shown, &base, Some(&wf.name))
            .map_err(|e| refusal(file, e))?;
        let description = match &comment {
            Some(c) => c.clone(),
            None => format!(
                "Runs the workflow `{}` of {} as a durable run.",
                wf.name,
                file.display()
            ),
        };
        out.push(WorkflowEntry {
            name: wf.name.clone(),
            file: file.to_owned(),
            source: source.clone(),
            input_schema: input_schema(&program, wf),
            output_schema: output_schema(&program, wf),
            annotations: annotations(&program, wf),
            program: program.clone(),
            description,
            compiled: Arc::new(compiled),
        });
    }
    Ok(out)
}

/// Why a file is not served, with the first diagnostics spelled out.
fn refusal(file: &Path, e: HostError) -> ServeError {
    let shown = file.display();
    match &e {
        HostError::DoesNotCheck { diagnostics, .. } | HostError::Contracts { diagnostics, .. } => {
            let first: Vec<String> = diagnostics
                .iter()
                .take(3)
                .map(|d| format!("{}: {}", d.code.as_str(), d.message))
                .collect();
            ServeError::Workflows(format!(
                "{e}: {}; see `troupe check {shown}`",
                first.join("; ")
            ))
        }
        _ => ServeError::Workflows(format!("{shown}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leading_comment_stops_at_code() {
        let src = "\n// One\n// two\n//\n// three\n\nworkflow x() {}\n// not this";
        assert_eq!(leading_comment(src).as_deref(), Some("One\ntwo\n\nthree"));
        assert_eq!(leading_comment("workflow x() {}"), None);
        assert_eq!(leading_comment(""), None);
    }
}
