//! The MCP+ contracts of a run's tools, from wherever they come: the
//! servers are listed before the run starts, what they publish (`_meta`
//! contracts, annotations) is merged with the workflow's `contracts:`
//! sidecars (the strictest wins, `troupe_contracts::resolve`), the
//! workflow is verified again under the merged contracts (a `_meta`
//! `requires` the sidecar lacks refuses a workflow that breaks it, as a
//! sidecar's would), and [`ContractPolicy`] enforces the same merged
//! contracts on the tool calls models choose.
//!
//! The listed tools are also linted as `troupe contracts lint` does, and
//! checked against the project's lock (`troupe.lock.json`, written by
//! `troupe mcp lock`) when it has one: an error-level finding (an
//! instruction aimed at the model, a definition changed since it was
//! locked) refuses the run unless `[contracts] allow` lists its rule.
//!
//! Why here: the static check (`troupe check`, the LSP) cannot list
//! servers, so before this a contract published only in `_meta` triggered
//! the confirmation but none of its `requires`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use troupe_check::Value;
use troupe_check::ir::{ActionId, ActionKind, Program};
use troupe_contracts::ToolList;
use troupe_contracts::VerifyOptions;
use troupe_contracts::lint::{Severity, lint_all};
use troupe_contracts::lock::Lock;
use troupe_contracts::resolve::{PublishedTools, published_of};
use troupe_contracts::verify::enforce::{Call, Enforcer};
use troupe_runtime::{ListedTools, ToolHost, ToolPolicy, ToolRecord};
use troupe_syntax::Diagnostic;

use crate::{Compiled, HostError};

#[derive(Debug)]
pub struct ContractPolicy(Enforcer);

impl ContractPolicy {
    /// The contracts of `program`'s tools, with sidecars relative to the
    /// directory of `file` (the workflow file as it was named), merged
    /// with what the servers published.
    pub fn load(
        program: Arc<Program>,
        file: &str,
        published: Option<&PublishedTools>,
    ) -> ContractPolicy {
        ContractPolicy(Enforcer::load_with(program, &base_dir(file), published))
    }
}

/// The directory contract sidecars are found relative to: the workflow
/// file's, or `.` for a bare file name.
pub(crate) fn base_dir(file: &str) -> PathBuf {
    Path::new(file)
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_owned)
}

/// The tool lists of the servers of `program`'s tools, by declared server
/// name, listed through `host` (servers it cannot list are left out: their
/// first call says why). These are the lists the model's tool
/// descriptions come from: the connection is kept for the run.
pub async fn listed(program: &Program, host: &dyn ToolHost) -> BTreeMap<String, ListedTools> {
    let mut servers = BTreeSet::new();
    let mut out = BTreeMap::new();
    for action in &program.actions {
        let ActionKind::Tool(tool) = &action.kind else {
            continue;
        };
        if !servers.insert(tool.server.name.clone()) {
            continue;
        }
        if let Some(list) = host.list(tool.server.clone()).await {
            out.insert(tool.server.name.clone(), list);
        }
    }
    out
}

/// What the listed servers publish of their tools' contracts.
pub fn published(listed: &BTreeMap<String, ListedTools>) -> PublishedTools {
    listed
        .iter()
        .map(|(server, l)| (server.clone(), published_of(&l.tools)))
        .collect()
}

/// Lint rules about a contract that disagrees with the tool's annotations
/// or cannot be read: a run does not refuse for them, it resolves them
/// (the strictest source wins, W0606 names the disagreement), so a server
/// whose `_meta` lies is held to the stricter word, not let off or refused.
const RESOLVED: [&str; 2] = ["hint-consistency", "invalid-contract"];

/// Lints the listed tools as `troupe contracts lint` does (together, so a
/// tool shadowing another server's is found, and against `lock` when the
/// project has one): the error-level findings of rules the project does not
/// `allow`, one line each, refuse the run.
pub fn lint_listed(
    listed: &BTreeMap<String, ListedTools>,
    lock: Option<&Lock>,
    allow: &[String],
) -> Result<(), HostError> {
    let lists: Vec<ToolList> = listed
        .iter()
        .map(|(server, l)| ToolList {
            // The lock knows a server by its declared name, else by the
            // name it gives itself (what `troupe mcp lock` records).
            server: Some(match (lock, &l.server_name) {
                (Some(lock), Some(own)) if !lock.has_server(server) && lock.has_server(own) => {
                    own.clone()
                }
                _ => server.clone(),
            }),
            tools: l
                .tools
                .iter()
                .filter_map(|t| serde_json::from_value(t.clone()).ok())
                .collect(),
            extra: serde_json::Map::new(),
        })
        .collect();
    let mut findings = Vec::new();
    for (list, report) in lists.iter().zip(lint_all(&lists, lock)) {
        for tool in &report.tools {
            for f in tool.findings.iter().filter(|f| {
                f.severity == Severity::Error
                    && !RESOLVED.contains(&f.rule)
                    && !allow.iter().any(|a| a == f.rule)
            }) {
                findings.push(format!(
                    "  error[{}] server `{}`, tool `{}` ({}): {}",
                    f.rule,
                    list.server.as_deref().unwrap_or("?"),
                    tool.tool,
                    f.pointer,
                    f.message
                ));
            }
        }
    }
    if findings.is_empty() {
        Ok(())
    } else {
        Err(HostError::UnsafeTools { findings })
    }
}

/// Verifies `compiled` again under the contracts the servers published:
/// the findings the sidecars alone did not give (errors refuse the run;
/// the rest, such as W0606 disagreements, are for the user to see).
pub fn verify_published(
    compiled: &Compiled,
    published: &Arc<PublishedTools>,
) -> Result<Vec<Diagnostic>, HostError> {
    if published.is_empty() {
        return Ok(Vec::new());
    }
    let base = base_dir(&compiled.file);
    let options = VerifyOptions::default();
    let verify = |options: &VerifyOptions| {
        troupe_contracts::verify_workflows_with(
            &compiled.program,
            Some(&compiled.source),
            &base,
            options,
        )
    };
    // What the sidecars alone say was reported when the workflow was
    // loaded (and a recorded run's sidecars may have moved since): only
    // what the servers' own statements add counts here.
    let before = verify(&options);
    let after = verify(&VerifyOptions {
        published: Some(published.clone()),
        ..options
    });
    let new: Vec<Diagnostic> = after.into_iter().filter(|d| !before.contains(d)).collect();
    let (errors, rest): (Vec<_>, Vec<_>) = new.into_iter().partition(Diagnostic::is_error);
    if !errors.is_empty() {
        return Err(HostError::Contracts {
            file: compiled.file.clone(),
            source_text: compiled.source.clone(),
            diagnostics: errors,
        });
    }
    Ok(rest)
}

impl ToolPolicy for ContractPolicy {
    fn needs_confirmation(&self, tool: ActionId) -> Option<bool> {
        self.0.needs_confirmation(tool)
    }

    fn unmet_requirement(
        &self,
        tool: ActionId,
        args: &[Value],
        earlier: &[ToolRecord],
    ) -> Option<String> {
        let calls: Vec<Call<'_>> = earlier
            .iter()
            .map(|r| Call {
                action: r.action,
                args: &r.args,
                outputs: &r.outputs,
            })
            .collect();
        self.0.unmet(tool, args, &calls)
    }
}

/// The project's lock file, when it has one (`troupe mcp lock -o troupe.lock.json`).
pub const LOCK_FILE: &str = "troupe.lock.json";

/// Reads the lock in `dir`, if there is one.
pub fn project_lock(dir: &Path) -> Result<Option<Lock>, HostError> {
    let path = dir.join(LOCK_FILE);
    if !path.exists() {
        return Ok(None);
    }
    Lock::load(&path)
        .map(Some)
        .map_err(|e| HostError::Config(format!("{}: {e}", path.display())))
}
