//! The MCP+ contracts of a run's tools, from wherever they come: the
//! servers are listed before the run starts, what they publish (`_meta`
//! contracts, annotations) is merged with the workflow's `contracts:`
//! sidecars (the strictest wins, `troupe_contracts::resolve`), the
//! workflow is verified again under the merged contracts (a `_meta`
//! `requires` the sidecar lacks refuses a workflow that breaks it, as a
//! sidecar's would), and [`ContractPolicy`] enforces the same merged
//! contracts on the tool calls models choose.
//!
//! Why here: the static check (`troupe check`, the LSP) cannot list
//! servers, so before this a contract published only in `_meta` triggered
//! the confirmation but none of its `requires`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use troupe_check::Value;
use troupe_check::ir::{ActionId, ActionKind, Program};
use troupe_contracts::VerifyOptions;
use troupe_contracts::resolve::{PublishedTools, published_of};
use troupe_contracts::verify::enforce::{Call, Enforcer};
use troupe_runtime::{ToolHost, ToolPolicy, ToolRecord};
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

fn base_dir(file: &str) -> PathBuf {
    Path::new(file)
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_owned)
}

/// What the servers of `program`'s tools publish, listed through `host`
/// (servers it cannot list are left out: their first call says why).
pub async fn published(program: &Program, host: &dyn ToolHost) -> PublishedTools {
    let mut servers = BTreeSet::new();
    let mut out = PublishedTools::new();
    for action in &program.actions {
        let ActionKind::Tool(tool) = &action.kind else {
            continue;
        };
        if !servers.insert(tool.server.name.clone()) {
            continue;
        }
        if let Some(list) = host.list(tool.server.clone()).await {
            out.insert(tool.server.name.clone(), published_of(&list));
        }
    }
    out
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
