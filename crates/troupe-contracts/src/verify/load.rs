//! Loading the contracts of a program's tools from the `contracts:` sidecars
//! of its `mcp` servers (E0604 when a sidecar cannot be used).
//!
//! **What**: for every `mcp` server that a `tool` action uses and that names a
//! sidecar (`contracts: "booking.contracts.json"`, relative to the workflow
//! file's directory), the file is read and parsed as an MCP+ sidecar (a JSON
//! object mapping tool names to contracts). An unreadable file, invalid JSON
//! or a malformed contract is an error located at the server's name. A
//! contract for a tool the file does not declare is ignored; a called tool
//! that has no contract (no sidecar, or no entry in it) is W0605
//! `unverified-tool`: a warning naming it, an error under `deny_unverified`.
//!
//! **Why**: a contract that silently fails to load, or a tool silently left
//! out, would turn every check off for it.
//!
//! **Example**: `mcp booking { command: "train-booking-server" contracts:
//! "booking.contracts.json" }`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use troupe_check::ir::{
    Action, ActionId, ActionKind, Call, McpServer, Program, StmtKind, ToolAction,
};
use troupe_syntax::{Code, Diagnostic, Span};

use crate::contract::{Sidecar, ToolContract, parse_sidecar};
use crate::resolve::{PublishedTools, resolve};

/// The contract of every tool action of a program that has one.
#[derive(Debug, Default)]
pub(crate) struct Contracts {
    by_action: Vec<Option<ToolContract>>,
    /// Servers whose sidecar could not be used (already reported as E0604).
    failed: Vec<String>,
}

impl Contracts {
    /// Loads the sidecars of the servers `program`'s tools use and merges
    /// them with what the servers publish (`published`, when they were
    /// listed: the strictest source wins, see [`crate::resolve`]); reports
    /// problems into `diagnostics` (W0606 for sources that disagree).
    pub(crate) fn load(
        program: &Program,
        base_dir: &Path,
        published: Option<&PublishedTools>,
        diagnostics: &mut Vec<Diagnostic>,
    ) -> Contracts {
        let mut servers: BTreeMap<&str, &Arc<McpServer>> = BTreeMap::new();
        for action in &program.actions {
            if let Some(tool) = tool_of(action) {
                servers
                    .entry(tool.server.name.as_str())
                    .or_insert(&tool.server);
            }
        }
        let mut sidecars: BTreeMap<&str, Sidecar> = BTreeMap::new();
        let mut failed = Vec::new();
        for (name, server) in servers {
            let Some(file) = &server.contracts else {
                continue;
            };
            match read_sidecar(base_dir, file) {
                Ok(sidecar) => {
                    sidecars.insert(name, sidecar);
                }
                Err(reason) => {
                    failed.push(name.to_owned());
                    diagnostics.push(
                    Diagnostic::error(
                        Code::ContractUnavailable,
                        server.span,
                        format!("the contracts of `{name}` cannot be used: {reason}"),
                    )
                    .with_label("contracts declared here")
                    .with_hint(format!(
                        "`contracts: \"{file}\"` must name an MCP+ sidecar (a JSON object mapping \
                         tool names to contracts), relative to the workflow file; \
                         `troupe contracts lint --contracts {file} …` checks one"
                    )),
                    );
                }
            }
        }
        let by_action = program
            .actions
            .iter()
            .map(|action| {
                let tool = tool_of(action)?;
                let sidecar = sidecars
                    .get(tool.server.name.as_str())
                    .and_then(|s| s.get(&tool.remote));
                let listed = published
                    .and_then(|p| p.get(&tool.server.name))
                    .and_then(|tools| tools.get(&tool.remote));
                let resolved = resolve(sidecar, listed);
                if !resolved.disagreements.is_empty() {
                    diagnostics.push(
                        Diagnostic::warning(
                            Code::ContractDisagreement,
                            action.span,
                            format!(
                                "the sources of `{}`'s contract disagree: {}; the strictest \
                                 is enforced",
                                action.name,
                                resolved.disagreements.join("; ")
                            ),
                        )
                        .with_label("contract sources disagree")
                        .with_hint(format!(
                            "make the sidecar and what server `{}` publishes for `{}` agree \
                             (`troupe mcp import` shows what it publishes)",
                            tool.server.name, tool.remote
                        )),
                    );
                }
                resolved.contract
            })
            .collect();
        Contracts { by_action, failed }
    }

    /// The contract of action `id`, if it is a tool with one.
    pub(crate) fn get(&self, id: ActionId) -> Option<&ToolContract> {
        self.by_action.get(id.0 as usize)?.as_ref()
    }

    /// Whether no tool has a contract (nothing to verify).
    pub(crate) fn is_empty(&self) -> bool {
        self.by_action.iter().all(Option::is_none)
    }
}

/// W0605 for the tool actions a workflow calls that have no contract (an
/// error with `deny`): one finding per server, at its declaration (where a
/// `contracts:` line goes), naming each such tool. One finding per server,
/// not one per tool: a server of six read-only tools is one warning, not
/// six (and `[contracts] unverified = "allow"` in `troupe.toml` silences it).
pub(crate) fn unverified(program: &Program, contracts: &Contracts, deny: bool) -> Vec<Diagnostic> {
    let mut called = vec![false; program.actions.len()];
    for workflow in &program.workflows {
        let mut stack = vec![&workflow.body];
        while let Some(block) = stack.pop() {
            for stmt in &block.stmts {
                match &stmt.kind {
                    StmtKind::Act {
                        call: Call::Action { action, .. },
                        ..
                    } => {
                        if let Some(c) = called.get_mut(action.0 as usize) {
                            *c = true;
                        }
                    }
                    StmtKind::If {
                        then, otherwise, ..
                    } => stack.extend([then, otherwise]),
                    StmtKind::While { body, exit, .. } => stack.extend([body, exit]),
                    StmtKind::Par { branches } => stack.extend(branches.iter()),
                    StmtKind::Msg { .. } | StmtKind::Act { .. } => {}
                }
            }
        }
    }
    // Per server, in declaration order: its span, its sidecar, and the
    // unverified tools (action name, remote name, declaration span).
    type Unverified<'p> = (Span, Option<&'p str>, Vec<(&'p str, &'p str)>);
    let mut by_server: Vec<(&str, Unverified<'_>)> = Vec::new();
    for (i, action) in program.actions.iter().enumerate() {
        let Some(tool) = tool_of(action) else {
            continue;
        };
        if !called.get(i).copied().unwrap_or(false)
            || contracts.get(ActionId(i as u32)).is_some()
            || contracts.failed.contains(&tool.server.name)
        {
            continue;
        }
        let name = tool.server.name.as_str();
        let entry = match by_server.iter_mut().find(|(n, _)| *n == name) {
            Some((_, e)) => e,
            None => {
                by_server.push((
                    name,
                    (
                        tool.server.span,
                        tool.server.contracts.as_deref(),
                        Vec::new(),
                    ),
                ));
                &mut by_server.last_mut().expect("just pushed").1
            }
        };
        entry.2.push((action.name.as_str(), tool.remote.as_str()));
    }
    let mut out = Vec::new();
    for (server, (span, sidecar, tools)) in by_server {
        let names: Vec<String> = tools.iter().map(|(a, ..)| format!("`{a}`")).collect();
        let remotes: Vec<String> = tools.iter().map(|(_, r)| format!("`{r}`")).collect();
        let why = match sidecar {
            None => format!("server `{server}` names no `contracts:` sidecar"),
            Some(file) => format!(
                "the sidecar \"{file}\" has no entry for {}",
                remotes.join(", ")
            ),
        };
        let (count, verb) = if tools.len() == 1 {
            ("tool".to_owned(), "is")
        } else {
            (format!("{} tools", tools.len()), "are")
        };
        let message = format!(
            "{count} {} of `{server}` {verb} unverified: no contract ({why}), so whether a \
             call needs a confirmation, what it requires and how it fails is not checked",
            names.join(", ")
        );
        let diagnostic = if deny {
            Diagnostic::error(Code::UnverifiedTool, span, message)
        } else {
            Diagnostic::warning(Code::UnverifiedTool, span, message)
        };
        let d = diagnostic
            .with_label("no contracts for tools of this server")
            .with_hint(format!(
                "add `contracts: \"….contracts.json\"` to `mcp {server}` with MCP+ contracts for \
                 {} (`troupe mcp import` writes the contracts a server publishes)",
                remotes.join(", ")
            ));
        out.push(d);
    }
    out
}

fn read_sidecar(base_dir: &Path, file: &str) -> Result<Sidecar, String> {
    let path = base_dir.join(file);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse_sidecar(&path.display().to_string(), &text).map_err(|e| e.to_string())
}

/// The tool description of an action, if it is a `tool`.
pub(crate) fn tool_of(action: &Action) -> Option<&ToolAction> {
    match &action.kind {
        ActionKind::Tool(tool) => Some(tool),
        _ => None,
    }
}

/// The actions of `program` that call tool `remote` of server `server`.
pub(crate) fn actions_for_tool(program: &Program, server: &str, remote: &str) -> Vec<ActionId> {
    program
        .actions
        .iter()
        .enumerate()
        .filter(|(_, action)| {
            tool_of(action).is_some_and(|t| t.server.name == server && t.remote == remote)
        })
        .map(|(i, _)| ActionId(i as u32))
        .collect()
}

/// The index of parameter `name` of `action`.
pub(crate) fn param_index(action: &Action, name: &str) -> Option<usize> {
    action.params.iter().position(|p| p.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program(text: &str) -> Program {
        let (program, diagnostics) = troupe_check::check_text(text);
        program.unwrap_or_else(|| panic!("{diagnostics:#?}"))
    }

    const SOURCE: &str = r#"
        mcp s { command: "srv" contracts: "c.json" }
        mcp plain { command: "srv" }
        tool a(x: Text) -> Text { server: s }
        tool b(x: Text) -> Text { server: s, name: "remote_b" }
        tool c(x: Text) -> Text { server: plain }
    "#;

    #[test]
    fn loads_contracts_by_remote_name() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("c.json"),
            r#"{"remote_b": {"transactional": true, "requires_confirmation": false},
                "unused": {"transactional": false, "requires_confirmation": false}}"#,
        )
        .unwrap();
        let p = program(SOURCE);
        let mut diagnostics = Vec::new();
        let contracts = Contracts::load(&p, dir.path(), None, &mut diagnostics);
        assert!(diagnostics.is_empty(), "{diagnostics:#?}");
        assert!(contracts.get(ActionId(0)).is_none(), "not in the sidecar");
        assert!(contracts.get(ActionId(1)).unwrap().transactional);
        assert!(contracts.get(ActionId(2)).is_none(), "no sidecar");
        assert!(contracts.get(ActionId(9)).is_none());
        assert_eq!(actions_for_tool(&p, "s", "remote_b"), vec![ActionId(1)]);
    }

    #[test]
    fn reports_unusable_sidecars_at_the_server() {
        let dir = tempfile::tempdir().unwrap();
        let p = program(SOURCE);
        for content in [
            None,
            Some("not json"),
            Some(r#"{"a": {"transactional": 1}}"#),
        ] {
            if let Some(content) = content {
                std::fs::write(dir.path().join("c.json"), content).unwrap();
            }
            let mut diagnostics = Vec::new();
            let contracts = Contracts::load(&p, dir.path(), None, &mut diagnostics);
            assert_eq!(diagnostics.len(), 1, "{content:?}");
            assert_eq!(diagnostics[0].code, Code::ContractUnavailable);
            assert_eq!(
                diagnostics[0].span,
                tool_of(&p.actions[0]).unwrap().server.span
            );
            assert!(contracts.is_empty());
        }
    }
}
