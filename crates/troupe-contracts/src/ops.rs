//! The operations behind `troupe contracts …`, without a command line: each
//! reads its inputs (a file, or standard input for `-`) and returns values —
//! lint reports, tool lists, loss reports, bisimulation verdicts, a lock —
//! for the caller to render and to judge (the CLI decides the exit status).

use std::io::Read as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::contract::{apply_sidecar, load_sidecar};
use crate::error::{ContractsError, Result};
use crate::invert::{InversionReport, invert};
use crate::lint::{LintReport, Severity, lint_all};
use crate::lock::Lock;
use crate::mcp::{ToolList, parse_tool_lists};
use crate::phi::phi_schema;
use crate::semantics::{Comparison, ServiceVerdict, Side, compare_service, compare_sides};
use crate::sgd::{SgdService, parse_schema};

/// What to lint, and which findings to keep.
#[derive(Debug, Clone, Default)]
pub struct LintOptions {
    /// The MCP tools: a tools/list result, a JSON-RPC response wrapping one,
    /// a capture keyed by method name or an object keyed by server name;
    /// `-` reads standard input.
    pub tools: PathBuf,
    /// A sidecar of MCP+ contracts applied to every server of the input.
    pub contracts: Option<PathBuf>,
    /// Keep only these rules (all when empty).
    pub select: Vec<String>,
    /// Drop these rules.
    pub ignore: Vec<String>,
    /// Keep only this tool.
    pub tool: Option<String>,
    /// A lock file: a tool whose definition changed since is an error.
    pub lock: Option<PathBuf>,
}

/// The lint of one input: its reports (filtered), the counts per severity
/// and the sidecar's contracts that no server has. Serialized, it is
/// `troupe contracts lint --json`.
#[derive(Debug, Clone, Serialize)]
pub struct LintOutcome {
    /// One report per server.
    pub servers: Vec<LintReport>,
    /// Findings of severity *error*.
    pub errors: usize,
    /// Findings of severity *warning*.
    pub warnings: usize,
    /// Findings of severity *info*.
    pub infos: usize,
    /// Tools the sidecar has a contract for and no server has.
    pub unmatched_contracts: Vec<String>,
}

/// The result of Φ⁻¹ over an input: the recovered SGD services and a loss
/// report per server. Serialized, it is `troupe contracts to-sgd --json`.
#[derive(Debug, Clone, Serialize)]
pub struct Inversion {
    /// The recovered services, in the input's order.
    pub schema: Vec<SgdService>,
    /// What maps exactly, with a loss, not at all, or is missing, per server.
    pub report: Vec<InversionReport>,
}

/// Two given sides compared pairwise: the comparisons, and the sides that
/// had nothing to be compared with (named "kind name").
#[derive(Debug, Clone)]
pub struct SidesOutcome {
    /// One comparison per pair.
    pub comparisons: Vec<Comparison>,
    /// The sides without a partner.
    pub unpaired: Vec<String>,
}

impl SidesOutcome {
    /// Whether some pair differs at either level, or some side has no partner.
    pub fn differs(&self) -> bool {
        !self.unpaired.is_empty()
            || self
                .comparisons
                .iter()
                .any(|c| c.behavioural.is_some() || c.structural.is_some())
    }
}

/// Whether a service's verdict shows a bug in Φ or Φ⁺: it is not
/// structurally bisimilar to its Φ image, or not behaviourally bisimilar to
/// its Φ⁺ image. (SGD ≁ MCP behaviourally is the expected finding.)
pub fn refutes_phi(verdict: &ServiceVerdict) -> bool {
    verdict.mcp_plus.is_some() || verdict.structural.is_some()
}

/// Reads a file, or standard input for `-`; returns a name for messages and the text.
fn read_input(path: &Path) -> Result<(String, String)> {
    if path.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|source| ContractsError::Read {
                path: path.to_owned(),
                source,
            })?;
        return Ok(("<stdin>".to_owned(), text));
    }
    let text = crate::error::read_file(path)?;
    Ok((path.display().to_string(), text))
}

/// The tool lists of a file with a sidecar's contracts applied, and the
/// sidecar's tool names that no server has.
fn load_lists(path: &Path, contracts: Option<&Path>) -> Result<(Vec<ToolList>, Vec<String>)> {
    let (what, text) = read_input(path)?;
    let mut lists = parse_tool_lists(&what, &text)?;
    let mut unmatched = Vec::new();
    if let Some(sidecar) = contracts {
        let sidecar = load_sidecar(sidecar)?;
        for list in &mut lists {
            unmatched.push(apply_sidecar(list, &sidecar));
        }
    }
    // A sidecar name is unmatched if no server has that tool.
    let unmatched = match unmatched.split_first() {
        Some((first, rest)) => first
            .iter()
            .filter(|name| rest.iter().all(|other| other.contains(name)))
            .cloned()
            .collect(),
        None => vec![],
    };
    Ok((lists, unmatched))
}

fn load_services(path: &Path, only: Option<&str>) -> Result<Vec<SgdService>> {
    let (what, text) = read_input(path)?;
    let services = parse_schema(&what, &text)?;
    match only {
        None => Ok(services),
        Some(name) => {
            let selected: Vec<SgdService> = services
                .into_iter()
                .filter(|s| s.service_name == name)
                .collect();
            if selected.is_empty() {
                return Err(ContractsError::UnknownService(name.to_owned()));
            }
            Ok(selected)
        }
    }
}

/// Scores each tool of `options.tools` on the four MCP+ principles; an
/// unknown rule id in `select` or `ignore` is an error.
pub fn lint(options: &LintOptions) -> Result<LintOutcome> {
    let (lists, unmatched) = load_lists(&options.tools, options.contracts.as_deref())?;
    let lock = options.lock.as_deref().map(Lock::load).transpose()?;
    let known: Vec<&str> = crate::lint::rules::ALL.iter().map(|r| r.id).collect();
    if let Some(unknown) = options
        .select
        .iter()
        .chain(&options.ignore)
        .find(|id| !known.contains(&id.as_str()))
    {
        return Err(ContractsError::UnknownRule(unknown.clone()));
    }
    let mut reports = lint_all(&lists, lock.as_ref());
    for report in &mut reports {
        report.retain(
            |f| {
                (options.select.is_empty() || options.select.iter().any(|r| r == f.rule))
                    && !options.ignore.iter().any(|r| r == f.rule)
            },
            |tool| options.tool.as_deref().is_none_or(|only| only == tool),
        );
    }
    let count = |severity| reports.iter().map(|r| r.count(severity)).sum::<usize>();
    Ok(LintOutcome {
        errors: count(Severity::Error),
        warnings: count(Severity::Warning),
        infos: count(Severity::Info),
        servers: reports,
        unmatched_contracts: unmatched,
    })
}

/// Pins the tool definitions of `tools` (same formats as [`lint`]).
pub fn lock(tools: &Path) -> Result<Lock> {
    let (lists, _) = load_lists(tools, None)?;
    Ok(Lock::of(&lists))
}

/// Φ (or Φ⁺ with `plus`) of the services of an SGD schema, or of the one
/// named `service`.
pub fn from_sgd(schema: &Path, plus: bool, service: Option<&str>) -> Result<Vec<ToolList>> {
    let services = load_services(schema, service)?;
    Ok(phi_schema(&services, plus))
}

/// Φ⁻¹ of the tool lists of `tools`, after applying the sidecar `contracts`.
pub fn to_sgd(tools: &Path, contracts: Option<&Path>) -> Result<Inversion> {
    let (lists, _) = load_lists(tools, contracts)?;
    let mut schema = Vec::new();
    let mut report = Vec::new();
    for list in &lists {
        let (mut recovered, loss) = invert(list)?;
        schema.append(&mut recovered);
        report.push(loss);
    }
    Ok(Inversion { schema, report })
}

/// Compares each service of an SGD schema (or the one named `service`) with
/// its Φ and Φ⁺ images.
pub fn bisim(schema: &Path, service: Option<&str>) -> Result<Vec<ServiceVerdict>> {
    load_services(schema, service)?
        .iter()
        .map(compare_service)
        .collect()
}

/// The sides a file describes: SGD services, or tool lists (MCP+ if any tool has a
/// contract and `plain` is not set).
fn load_sides(path: &Path, plain: bool, only: Option<&str>) -> Result<Vec<Side>> {
    let (what, text) = read_input(path)?;
    let sides: Vec<Side> = match parse_schema(&what, &text) {
        Ok(services) => services.into_iter().map(Side::Sgd).collect(),
        Err(_) => parse_tool_lists(&what, &text)?
            .into_iter()
            .map(|list| {
                let plus = !plain
                    && list
                        .tools
                        .iter()
                        .any(|t| t.contract().ok().flatten().is_some());
                Side::Tools { list, plus }
            })
            .collect(),
    };
    match only {
        None => Ok(sides),
        Some(name) => {
            let selected: Vec<Side> = sides.into_iter().filter(|s| s.name() == name).collect();
            if selected.is_empty() {
                return Err(ContractsError::UnknownService(name.to_owned()));
            }
            Ok(selected)
        }
    }
}

/// Compares two given sides, each an SGD schema or MCP tools (read as MCP+
/// when they carry contracts, unless `plain` for the right one): one with
/// one, or paired by name. `service` keeps only that left side.
pub fn bisim_sides(
    left: &Path,
    right: &Path,
    plain: bool,
    service: Option<&str>,
) -> Result<SidesOutcome> {
    let left = load_sides(left, false, service)?;
    let right = load_sides(right, plain, None)?;
    let mut comparisons = Vec::new();
    let mut unpaired = Vec::new();
    if let ([l], [r]) = (&left[..], &right[..]) {
        comparisons.push(compare_sides(l, r)?);
    } else {
        for l in &left {
            match right.iter().find(|r| r.name() == l.name()) {
                Some(r) => comparisons.push(compare_sides(l, r)?),
                None => unpaired.push(format!("{} {}", l.kind(), l.name())),
            }
        }
        for r in &right {
            if !left.iter().any(|l| l.name() == r.name()) {
                unpaired.push(format!("{} {}", r.kind(), r.name()));
            }
        }
    }
    Ok(SidesOutcome {
        comparisons,
        unpaired,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_missing_files_as_errors() {
        assert!(matches!(
            bisim(Path::new("/nonexistent/schema.json"), None),
            Err(ContractsError::Read { .. })
        ));
    }
}
