//! The MCP+ linter: scores each tool of an MCP server on the four MCP+ principles and
//! explains every shortcoming with a finding (rule, severity, JSON pointer into the
//! `tools/list` result, message, suggested fix).
//!
//! Rules live one per file in [`rules`] (each documents what it checks, why, and an
//! example). A tool's score per principle is 3 minus the rank of its worst finding for
//! that principle (info 1, warning 2, error 3): 3/3 means nothing to report.

pub mod render;
pub mod rules;

use serde::Serialize;

use crate::contract::ToolContract;
use crate::mcp::{McpTool, ToolList, tool_pointer};

/// The four MCP+ principles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Principle {
    /// Every tool and argument described, with its value domain.
    SemanticCompleteness,
    /// What is read-only, what is transactional and needs a person's confirmation.
    ActionBoundaries,
    /// The named errors a tool can return, and whether they can be retried or compensated.
    FailureModes,
    /// requires, precedes, compensated-by, produces → consumes.
    Relations,
}

impl Principle {
    /// All four, in order.
    pub const ALL: [Principle; 4] = [
        Principle::SemanticCompleteness,
        Principle::ActionBoundaries,
        Principle::FailureModes,
        Principle::Relations,
    ];

    /// A short human name.
    pub fn title(self) -> &'static str {
        match self {
            Principle::SemanticCompleteness => "completeness",
            Principle::ActionBoundaries => "boundaries",
            Principle::FailureModes => "failures",
            Principle::Relations => "relations",
        }
    }
}

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Worth knowing; nothing is wrong as such.
    Info,
    /// A principle is not met.
    Warning,
    /// The definition is wrong or dangerous as it stands (`lint` exits with 1).
    Error,
}

impl Severity {
    /// The severity's name.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }

    fn rank(self) -> u8 {
        match self {
            Severity::Info => 1,
            Severity::Warning => 2,
            Severity::Error => 3,
        }
    }
}

/// One problem found in a tool definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The rule's id (the name of its file in `rules/`, dashed).
    pub rule: &'static str,
    /// The principle concerned.
    pub principle: Principle,
    /// How serious it is.
    pub severity: Severity,
    /// JSON pointer into the `tools/list` result, e.g. `/tools/3/inputSchema/properties/path`.
    pub pointer: String,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub fix: String,
}

/// A lint rule.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    /// Stable id, e.g. `argument-description`.
    pub id: &'static str,
    /// The principle it checks.
    pub principle: Principle,
    /// One line saying what it checks.
    pub summary: &'static str,
    /// Checks tool `index` of the context.
    pub check: fn(&Context<'_>, usize) -> Vec<Finding>,
}

impl Rule {
    /// A finding of this rule.
    pub fn finding(
        &self,
        severity: Severity,
        pointer: impl Into<String>,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) -> Finding {
        Finding {
            rule: self.id,
            principle: self.principle,
            severity,
            pointer: pointer.into(),
            message: message.into(),
            fix: fix.into(),
        }
    }
}

/// What rules see: the tool list and each tool's decoded contract.
#[derive(Debug)]
pub struct Context<'a> {
    /// The tools.
    pub list: &'a ToolList,
    /// Per tool: its contract, or why it could not be decoded.
    pub contracts: Vec<Result<Option<ToolContract>, String>>,
}

impl<'a> Context<'a> {
    /// Decodes the contracts of `list`.
    pub fn new(list: &'a ToolList) -> Self {
        let contracts = list
            .tools
            .iter()
            .map(|tool| tool.contract().map_err(|error| error.to_string()))
            .collect();
        Context { list, contracts }
    }

    /// Tool `index`.
    pub fn tool(&self, index: usize) -> Option<&'a McpTool> {
        self.list.tools.get(index)
    }

    /// The valid contract of tool `index`, if any.
    pub fn contract(&self, index: usize) -> Option<&ToolContract> {
        self.contracts
            .get(index)
            .and_then(|c| c.as_ref().ok())
            .and_then(Option::as_ref)
    }

    /// The index of the tool called `name`.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.list.tools.iter().position(|tool| tool.name == name)
    }

    /// JSON pointer of tool `index`.
    pub fn pointer(&self, index: usize) -> String {
        tool_pointer(index)
    }
}

/// Per-principle scores of a tool, each 0..=3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Scores {
    /// Principle 1.
    pub semantic_completeness: u8,
    /// Principle 2.
    pub action_boundaries: u8,
    /// Principle 3.
    pub failure_modes: u8,
    /// Principle 4.
    pub relations: u8,
}

impl Scores {
    /// The score for one principle.
    pub fn get(&self, principle: Principle) -> u8 {
        match principle {
            Principle::SemanticCompleteness => self.semantic_completeness,
            Principle::ActionBoundaries => self.action_boundaries,
            Principle::FailureModes => self.failure_modes,
            Principle::Relations => self.relations,
        }
    }

    fn from_findings(findings: &[Finding]) -> Self {
        let score = |principle| {
            let worst = findings
                .iter()
                .filter(|finding| finding.principle == principle)
                .map(|finding| finding.severity.rank())
                .max()
                .unwrap_or(0);
            3 - worst
        };
        Scores {
            semantic_completeness: score(Principle::SemanticCompleteness),
            action_boundaries: score(Principle::ActionBoundaries),
            failure_modes: score(Principle::FailureModes),
            relations: score(Principle::Relations),
        }
    }

    /// Sum of the four scores (0..=12).
    pub fn total(&self) -> u8 {
        Principle::ALL
            .iter()
            .map(|&principle| self.get(principle))
            .sum()
    }
}

/// The lint result for one tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolLint {
    /// The tool's name.
    pub tool: String,
    /// Its JSON pointer.
    pub pointer: String,
    /// Whether it carries an MCP+ contract.
    pub has_contract: bool,
    /// Scores per principle.
    pub scores: Scores,
    /// Findings, in rule order.
    pub findings: Vec<Finding>,
}

/// The lint result for one server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LintReport {
    /// The server's name, if known.
    pub server: Option<String>,
    /// Per tool.
    pub tools: Vec<ToolLint>,
}

impl LintReport {
    /// Number of findings with this severity.
    pub fn count(&self, severity: Severity) -> usize {
        self.findings()
            .filter(|finding| finding.severity == severity)
            .count()
    }

    /// All findings.
    pub fn findings(&self) -> impl Iterator<Item = &Finding> {
        self.tools.iter().flat_map(|tool| &tool.findings)
    }
}

/// Lints every tool of `list` with every rule of [`rules::ALL`].
pub fn lint(list: &ToolList) -> LintReport {
    let context = Context::new(list);
    let tools = list
        .tools
        .iter()
        .enumerate()
        .map(|(index, tool)| {
            let findings: Vec<Finding> = rules::ALL
                .iter()
                .flat_map(|rule| (rule.check)(&context, index))
                .collect();
            ToolLint {
                tool: tool.name.clone(),
                pointer: context.pointer(index),
                has_contract: context.contract(index).is_some(),
                scores: Scores::from_findings(&findings),
                findings,
            }
        })
        .collect();
    LintReport {
        server: list.server.clone(),
        tools,
    }
}

/// Splits a name into lower-case words: `git_create_branch` → `git create branch`,
/// `messageType` → `message type`, `get-env` → `get env`.
pub fn words(name: &str) -> Vec<String> {
    crate::naming::snake_case(name)
        .split(['_', '-', '.', ' ', '/'])
        .filter(|word| !word.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
pub(crate) mod testing {
    use super::{Context, Finding, Rule};
    use crate::mcp::{ToolList, tool_lists_from_value};

    /// A tool list from a JSON array of tools.
    pub fn tools(tools: serde_json::Value) -> ToolList {
        tool_lists_from_value("test", serde_json::json!({"tools": tools}))
            .unwrap()
            .remove(0)
    }

    /// The findings of `rule` on tool `index`.
    pub fn run(rule: &Rule, list: &ToolList, index: usize) -> Vec<Finding> {
        (rule.check)(&Context::new(list), index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phi::phi_plus;
    use crate::sgd::parse_schema;

    #[test]
    fn scores_follow_the_worst_finding() {
        let list = testing::tools(serde_json::json!([{"name": "write_thing", "inputSchema": {}}]));
        let report = lint(&list);
        let tool = &report.tools[0];
        assert_eq!(tool.scores.action_boundaries, 0, "{:#?}", tool.findings);
        assert!(report.count(Severity::Error) >= 2);
    }

    #[test]
    fn phi_plus_output_is_clean() {
        let service = parse_schema("bank", crate::fixtures::BANK)
            .unwrap()
            .remove(0);
        let report = lint(&phi_plus(&service));
        let serious: Vec<_> = report
            .findings()
            .filter(|f| f.severity > Severity::Info)
            .collect();
        assert!(serious.is_empty(), "{serious:#?}");
        assert!(report.tools.iter().all(|tool| tool.scores.total() == 12));
    }

    #[test]
    fn splits_names_into_words() {
        assert_eq!(words("git_create_branch"), vec!["git", "create", "branch"]);
        assert_eq!(words("messageType"), vec!["message", "type"]);
        assert_eq!(words("get-env"), vec!["get", "env"]);
    }
}
