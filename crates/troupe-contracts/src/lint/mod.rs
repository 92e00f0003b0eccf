//! The MCP+ linter, also a security tool: scores each tool of an MCP server on the four
//! MCP+ principles plus *safety* (no instructions aimed at the model, no hidden
//! characters, no shadowing of other servers' tools, declarations that agree with each
//! other, definitions unchanged since they were pinned) and explains every shortcoming
//! with a finding (rule, severity, JSON pointer into the `tools/list` result, message,
//! suggested fix).
//!
//! Rules live one per file in [`rules`] (each documents what it checks, why, and an
//! example). A tool's score per principle is 3 minus the rank of its worst finding for
//! that principle (info 1, warning 2, error 3): 3/3 means nothing to report.
//! [`lint_all`] lints several servers together (so that one server's tool can be found
//! shadowing another's) and against a [`crate::lock::Lock`] (so that a changed
//! definition is found).

pub mod render;
pub mod rules;
pub mod verbs;

use serde::Serialize;

use crate::contract::ToolContract;
use crate::lock::Lock;
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
    /// Nothing in the definition attacks or misleads the model or the user.
    Safety,
}

impl Principle {
    /// All four, in order.
    pub const ALL: [Principle; 5] = [
        Principle::SemanticCompleteness,
        Principle::ActionBoundaries,
        Principle::FailureModes,
        Principle::Relations,
        Principle::Safety,
    ];

    /// A short human name.
    pub fn title(self) -> &'static str {
        match self {
            Principle::SemanticCompleteness => "completeness",
            Principle::ActionBoundaries => "boundaries",
            Principle::FailureModes => "failures",
            Principle::Relations => "relations",
            Principle::Safety => "safety",
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
    /// The tools of the other servers linted together: (server, tool).
    pub others: Vec<(String, &'a McpTool)>,
    /// The pinned definitions, if linting against a lock.
    pub lock: Option<&'a Lock>,
    /// The list's tool names, indexed once (rules ask about names for
    /// every tool: a scan each time made linting quadratic).
    names: std::sync::OnceLock<Names<'a>>,
    /// Which tools return each field, indexed once.
    producers: std::sync::OnceLock<Producers>,
    /// The other servers' tools by name core, indexed once.
    others_by_core: std::sync::OnceLock<std::collections::HashMap<String, usize>>,
}

/// The result fields of a list's tools (from their output schemas and
/// contracts): field name → the tools that return it, in list order.
#[derive(Debug, Default)]
pub struct Producers {
    by_field: std::collections::HashMap<String, Vec<usize>>,
}

impl Producers {
    /// The tools that return `field`.
    pub fn of(&self, field: &str) -> &[usize] {
        self.by_field.get(field).map_or(&[], Vec::as_slice)
    }
}

/// The tool names of a list: where each first appears, and lower-cased.
#[derive(Debug)]
pub struct Names<'a> {
    first: std::collections::HashMap<&'a str, usize>,
    lower: std::collections::HashSet<String>,
}

impl Names<'_> {
    /// Whether a tool of the list is called exactly `name`.
    pub fn has(&self, name: &str) -> bool {
        self.first.contains_key(name)
    }

    /// Whether a tool of the list is called `name`, ignoring ASCII case.
    pub fn has_ignoring_case(&self, name: &str) -> bool {
        self.lower.contains(&name.to_ascii_lowercase())
    }
}

impl<'a> Context<'a> {
    /// Decodes the contracts of `list`.
    pub fn new(list: &'a ToolList) -> Self {
        let contracts = list
            .tools
            .iter()
            .map(|tool| tool.contract().map_err(|error| error.to_string()))
            .collect();
        Context {
            list,
            contracts,
            others: Vec::new(),
            lock: None,
            names: std::sync::OnceLock::new(),
            producers: std::sync::OnceLock::new(),
            others_by_core: std::sync::OnceLock::new(),
        }
    }

    /// The other servers' tools by the core of their names (see
    /// [`rules::tool_shadowing::core`]): core → index into [`Context::others`], the
    /// first of each core.
    pub fn others_by_core(&self) -> &std::collections::HashMap<String, usize> {
        self.others_by_core.get_or_init(|| {
            let mut index = std::collections::HashMap::new();
            for (i, (_, tool)) in self.others.iter().enumerate() {
                let core = rules::tool_shadowing::core(&tool.name);
                if !core.is_empty() {
                    index.entry(core).or_insert(i);
                }
            }
            index
        })
    }

    /// The names of the fields tool `index` returns: its output schema's
    /// properties and its contract's results.
    pub fn output_names(&self, index: usize) -> Vec<String> {
        let Some(tool) = self.tool(index) else {
            return Vec::new();
        };
        let mut names: Vec<String> = tool
            .output_properties()
            .into_iter()
            .map(|(n, _)| n.to_owned())
            .collect();
        if let Some(contract) = self.contract(index) {
            names.extend(contract.results.iter().map(|result| result.name.clone()));
        }
        names
    }

    /// Which tools return each field.
    pub fn producers(&self) -> &Producers {
        self.producers.get_or_init(|| {
            let mut by_field: std::collections::HashMap<String, Vec<usize>> =
                std::collections::HashMap::new();
            for i in 0..self.list.tools.len() {
                let mut names = self.output_names(i);
                names.sort();
                names.dedup();
                for name in names {
                    by_field.entry(name).or_default().push(i);
                }
            }
            Producers { by_field }
        })
    }

    /// The list's tool names, indexed.
    pub fn names(&self) -> &Names<'a> {
        self.names.get_or_init(|| {
            let mut first = std::collections::HashMap::new();
            for (i, tool) in self.list.tools.iter().enumerate() {
                first.entry(tool.name.as_str()).or_insert(i);
            }
            let lower = self
                .list
                .tools
                .iter()
                .map(|t| t.name.to_ascii_lowercase())
                .collect();
            Names { first, lower }
        })
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
        self.names().first.get(name).copied()
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
    /// Safety.
    pub safety: u8,
}

impl Scores {
    /// The score for one principle.
    pub fn get(&self, principle: Principle) -> u8 {
        match principle {
            Principle::SemanticCompleteness => self.semantic_completeness,
            Principle::ActionBoundaries => self.action_boundaries,
            Principle::FailureModes => self.failure_modes,
            Principle::Relations => self.relations,
            Principle::Safety => self.safety,
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
            safety: score(Principle::Safety),
        }
    }

    /// Sum of the five scores (0..=15).
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

    /// Keeps the findings for which `keep` holds (and the tools `tool` keeps), and
    /// scores again.
    pub fn retain(&mut self, keep: impl Fn(&Finding) -> bool, tool: impl Fn(&str) -> bool) {
        self.tools.retain(|t| tool(&t.tool));
        for t in &mut self.tools {
            t.findings.retain(&keep);
            t.scores = Scores::from_findings(&t.findings);
        }
    }
}

/// Lints every tool of `list` with every rule of [`rules::ALL`].
pub fn lint(list: &ToolList) -> LintReport {
    lint_in(Context::new(list))
}

/// Lints several servers together, optionally against a lock: a tool that shadows
/// another server's tool, and a definition that changed since it was locked, are
/// found too.
pub fn lint_all(lists: &[ToolList], lock: Option<&Lock>) -> Vec<LintReport> {
    lists
        .iter()
        .enumerate()
        .map(|(i, list)| {
            let mut context = Context::new(list);
            context.lock = lock;
            context.others = lists
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != i)
                .flat_map(|(j, other)| {
                    let name = other
                        .server
                        .clone()
                        .unwrap_or_else(|| format!("server #{}", j + 1));
                    other.tools.iter().map(move |t| (name.clone(), t))
                })
                .collect();
            lint_in(context)
        })
        .collect()
}

fn lint_in(context: Context<'_>) -> LintReport {
    let list = context.list;
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

/// What a piece of text in a tool definition is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKind {
    /// The tool's name.
    Name,
    /// A description or title (prose for the model or the user).
    Prose,
    /// A property name or another key of a schema.
    Key,
    /// Another string value of a schema (enum values, defaults, patterns...).
    Value,
}

/// One string of a tool definition, with its JSON pointer.
#[derive(Debug, Clone)]
pub struct Text<'a> {
    /// JSON pointer into the `tools/list` result.
    pub pointer: String,
    /// The string.
    pub text: &'a str,
    /// What it is.
    pub kind: TextKind,
}

/// Schemas deeper than this are not searched further (nor meta-validated).
pub const MAX_SCHEMA_DEPTH: usize = 64;

/// At most this many strings of one tool are searched.
const MAX_TEXTS: usize = 20_000;

/// Every string of tool `index`'s definition: name, titles, description, and every key
/// and string value of its schemas (depth-bounded), each with its pointer.
pub fn texts<'a>(context: &Context<'a>, index: usize) -> Vec<Text<'a>> {
    let Some(tool) = context.tool(index) else {
        return vec![];
    };
    let base = context.pointer(index);
    let mut out = vec![Text {
        pointer: format!("{base}/name"),
        text: &tool.name,
        kind: TextKind::Name,
    }];
    for (field, text) in [("title", &tool.title), ("description", &tool.description)] {
        if let Some(text) = text {
            out.push(Text {
                pointer: format!("{base}/{field}"),
                text,
                kind: TextKind::Prose,
            });
        }
    }
    if let Some(title) = tool.annotations.as_ref().and_then(|a| a.title.as_ref()) {
        out.push(Text {
            pointer: format!("{base}/annotations/title"),
            text: title,
            kind: TextKind::Prose,
        });
    }
    let mut stack: Vec<(&'a serde_json::Value, String, usize, bool)> =
        vec![(&tool.input_schema, format!("{base}/inputSchema"), 0, false)];
    if let Some(output) = &tool.output_schema {
        stack.push((output, format!("{base}/outputSchema"), 0, false));
    }
    while let Some((value, pointer, depth, prose)) = stack.pop() {
        if depth > MAX_SCHEMA_DEPTH || out.len() > MAX_TEXTS {
            continue;
        }
        match value {
            serde_json::Value::String(text) => out.push(Text {
                pointer,
                text,
                kind: if prose {
                    TextKind::Prose
                } else {
                    TextKind::Value
                },
            }),
            serde_json::Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    stack.push((item, format!("{pointer}/{i}"), depth + 1, false));
                }
            }
            serde_json::Value::Object(map) => {
                for (key, item) in map {
                    let at = format!("{pointer}/{}", crate::mcp::pointer_token(key));
                    out.push(Text {
                        pointer: at.clone(),
                        text: key,
                        kind: TextKind::Key,
                    });
                    let prose = matches!(key.as_str(), "description" | "title");
                    stack.push((item, at, depth + 1, prose));
                }
            }
            _ => {}
        }
    }
    out
}

/// Whether a text of a tool definition is read by the model as prose: a
/// description or title, or a schema value (an enum value, a default, an example,
/// a `const`) of three words or more — the model copies such values into its
/// arguments and reads them as it reads descriptions, so an instruction hidden in
/// a default is as much an instruction as one in the description.
pub fn reads_as_prose(text: &Text<'_>) -> bool {
    match text.kind {
        TextKind::Prose => true,
        TextKind::Value => text.text.split_whitespace().nth(2).is_some(),
        TextKind::Name | TextKind::Key => false,
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
        assert!(report.tools.iter().all(|tool| tool.scores.total() == 15));
    }

    #[test]
    fn splits_names_into_words() {
        assert_eq!(words("git_create_branch"), vec!["git", "create", "branch"]);
        assert_eq!(words("messageType"), vec!["message", "type"]);
        assert_eq!(words("get-env"), vec!["get", "env"]);
    }
}
