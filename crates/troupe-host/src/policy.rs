//! [`ContractPolicy`]: the MCP+ contracts of a run's tools (their
//! `contracts:` sidecars) as the runtime's [`ToolPolicy`], enforced on the
//! tool calls models choose.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use troupe_check::Value;
use troupe_check::ir::{ActionId, Program};
use troupe_contracts::verify::enforce::{Call, Enforcer};
use troupe_runtime::{ToolPolicy, ToolRecord};

#[derive(Debug)]
pub struct ContractPolicy(Enforcer);

impl ContractPolicy {
    /// The contracts of `program`'s tools, with sidecars relative to the
    /// directory of `file` (the workflow file as it was named).
    pub fn load(program: Arc<Program>, file: &str) -> ContractPolicy {
        let base = Path::new(file)
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_owned);
        ContractPolicy(Enforcer::load(program, &base))
    }
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
