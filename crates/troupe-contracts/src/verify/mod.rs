//! Verification of workflows against the MCP+ contracts of the tools they call.
//!
//! [`verify_workflows`] takes a checked [`Program`] (so every invariant of
//! LANGUAGE.md §4 holds) and the directory of its source file, loads the
//! contracts of its tools from the `contracts:` sidecars of their `mcp`
//! servers, and checks every call of a tool that has a contract, one check
//! per module:
//!
//! * [`load`] — E0604: a sidecar that cannot be read or parsed;
//! * [`confirmation`] — E0601: a transactional tool runs only where a
//!   person's confirmation is true;
//! * [`requirement`] — E0602: every `requires` relation holds on every path,
//!   with the bound arguments equal;
//! * [`failure`] — W0603: a result that can be a documented failure is
//!   inspected by a guard before the workflow relies on it;
//! * [`load`] — W0605: a called tool that has no contract is named as
//!   unverified (an error with [`VerifyOptions::deny_unverified`]); W0606:
//!   the sidecar and what the server publishes ([`VerifyOptions::published`])
//!   disagree (merged by [`crate::resolve`], the strictest winning).
//!
//! [`enforce`] holds the same contracts at run time, for the tool calls a
//! model chooses (which no static check can see): confirmation of
//! transactional tools and the `requires` relations over the values the
//! run's calls actually had.
//!
//! The checks share one analysis of each workflow ([`flow`]): provenance by
//! value numbering (a value is its origin, carried unchanged by messages,
//! copies and field reads) and the tree of constructs. "On every path" is
//! over the structured control flow: both branches of an `if`; a `while`
//! body may run zero times, and what a body establishes does not hold after
//! the loop unless the exit block establishes it too.

mod confirmation;
mod describe;
pub mod enforce;
mod failure;
mod flow;
mod load;
mod requirement;

use std::path::Path;

use troupe_check::ir::{Action, ActionId, Program};
use troupe_syntax::{Diagnostic, LineIndex};

use describe::Describe;
use flow::Flow;
use load::Contracts;

/// Verifies every workflow of `program` against the contracts of its tools.
///
/// `base_dir` is the directory of the `.troupe` file (sidecar paths are
/// relative to it). Returns E0601, E0602 and E0604 errors and W0603 and
/// W0605 warnings, sorted by position. Messages
/// name places by construct (`if ok @ Agent`); see
/// [`verify_workflows_in_source`] for line numbers too.
pub fn verify_workflows(program: &Program, base_dir: &Path) -> Vec<Diagnostic> {
    verify(program, None, base_dir, &VerifyOptions::default())
}

/// How strict verification is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VerifyOptions {
    /// A called tool without a contract is an error (W0605 with error
    /// severity) instead of a warning: nothing about it can be verified.
    pub deny_unverified: bool,
    /// What the servers published when they were listed (a run lists
    /// them before it starts): merged with the sidecars, the strictest
    /// winning. `None`: the sidecars alone (`troupe check`, the LSP).
    pub published: Option<std::sync::Arc<crate::resolve::PublishedTools>>,
}

/// [`verify_workflows_in_source`] (with `source`) or [`verify_workflows`]
/// (without) under `options`.
pub fn verify_workflows_with(
    program: &Program,
    source: Option<&str>,
    base_dir: &Path,
    options: &VerifyOptions,
) -> Vec<Diagnostic> {
    match source {
        Some(text) => verify(program, Some(&LineIndex::new(text)), base_dir, options),
        None => verify(program, None, base_dir, options),
    }
}

/// [`verify_workflows`] for a program checked from `source`: messages also
/// give the line of every place they mention ("`if ok @ Agent` (line 12)").
pub fn verify_workflows_in_source(
    program: &Program,
    source: &str,
    base_dir: &Path,
) -> Vec<Diagnostic> {
    verify(
        program,
        Some(&LineIndex::new(source)),
        base_dir,
        &VerifyOptions::default(),
    )
}

fn verify(
    program: &Program,
    lines: Option<&LineIndex>,
    base_dir: &Path,
    options: &VerifyOptions,
) -> Vec<Diagnostic> {
    let mut diagnostics = Vec::new();
    let contracts = Contracts::load(
        program,
        base_dir,
        options.published.as_deref(),
        &mut diagnostics,
    );
    diagnostics.extend(load::unverified(
        program,
        &contracts,
        options.deny_unverified,
    ));
    if !contracts.is_empty() {
        for workflow in &program.workflows {
            let flow = Flow::analyse(program, workflow);
            let cx = Context {
                program,
                flow: &flow,
                contracts: &contracts,
                describe: Describe {
                    program,
                    workflow,
                    lines,
                },
            };
            diagnostics.extend(confirmation::check(&cx));
            diagnostics.extend(requirement::check(&cx));
            diagnostics.extend(failure::check(&cx));
        }
    }
    diagnostics.sort_by(|a, b| {
        (a.span.start, a.span.end, a.code, &a.message).cmp(&(
            b.span.start,
            b.span.end,
            b.code,
            &b.message,
        ))
    });
    diagnostics.dedup();
    diagnostics
}

/// What every check sees of one workflow.
#[derive(Debug)]
pub(crate) struct Context<'a> {
    pub program: &'a Program,
    pub flow: &'a Flow<'a>,
    pub contracts: &'a Contracts,
    pub describe: Describe<'a>,
}

impl Context<'_> {
    /// The action with this id.
    pub(crate) fn action(&self, id: ActionId) -> Option<&Action> {
        self.program.actions.get(id.0 as usize)
    }

    /// The name of the action with this id.
    pub(crate) fn action_name(&self, id: ActionId) -> &str {
        self.action(id).map_or("?", |a| a.name.as_str())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use troupe_syntax::Code;

    /// Checks `text`, writes `sidecar` to `c.json` beside it and verifies:
    /// the (code, line) of every finding but W0605 (tools left unverified).
    pub(crate) fn run(text: &str, sidecar: &str) -> Vec<(String, u32)> {
        run_all(text, sidecar)
            .into_iter()
            .filter(|(code, _)| code != "W0605")
            .collect()
    }

    /// [`run`] with every finding.
    pub(crate) fn run_all(text: &str, sidecar: &str) -> Vec<(String, u32)> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("c.json"), sidecar).unwrap();
        let (program, diagnostics) = troupe_check::check_text(text);
        let program = program.unwrap_or_else(|| panic!("{diagnostics:#?}"));
        let lines = LineIndex::new(text);
        verify_workflows_in_source(&program, text, dir.path())
            .iter()
            .map(|d| (d.code.as_str().to_owned(), lines.line(d.span.start)))
            .collect()
    }

    #[test]
    fn tools_without_a_contract_are_named_unverified() {
        let text = "mcp s { command: \"x\" contracts: \"c.json\" }\n\
                    mcp bare { command: \"y\" }\n\
                    tool a(x: Text) -> Text { server: s }\n\
                    tool b(x: Text) -> Text { server: s }\n\
                    tool c(x: Text) -> Text { server: bare }\n\
                    tool unused(x: Text) -> Text { server: bare }\n\
                    workflow w(x: Text @ A) { act A: _ = a(x) act A: _ = b(x) act A: _ = c(x) }";
        let sidecar = r#"{"a": {"transactional": false, "requires_confirmation": false}}"#;
        // One finding per server, at the server, naming its tools.
        assert_eq!(
            run_all(text, sidecar),
            vec![("W0605".to_owned(), 1), ("W0605".to_owned(), 2)]
        );
        // Without any sidecar every called tool is unverified; denied, an error.
        let (program, _) = troupe_check::check_text(text);
        let program = program.unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("c.json"), "{}").unwrap();
        let options = VerifyOptions {
            deny_unverified: true,
            ..VerifyOptions::default()
        };
        let found = verify_workflows_with(&program, Some(text), dir.path(), &options);
        assert_eq!(found.len(), 2);
        assert!(
            found
                .iter()
                .all(|d| d.is_error() && d.code == Code::UnverifiedTool)
        );
        assert!(found[1].message.contains("names no `contracts:` sidecar"));
        assert!(
            found[0]
                .message
                .starts_with("2 tools `a`, `b` of `s` are unverified")
                && found[0].message.contains("has no entry for `a`, `b`"),
            "{}",
            found[0].message
        );
    }

    #[test]
    fn nothing_to_verify_without_contracts() {
        let text = "effect e(x: Text) extern\nworkflow w(x: Text @ A) { act A: e(x) }";
        let (program, _) = troupe_check::check_text(text);
        let program = program.unwrap();
        assert!(verify_workflows(&program, Path::new("/nonexistent")).is_empty());
    }
}
