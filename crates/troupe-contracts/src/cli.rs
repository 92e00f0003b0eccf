//! The `troupe contracts …` subcommands: lint MCP tools against MCP+, convert SGD
//! schemas to MCP / MCP+ and back, and compare their behaviour by bisimulation.
//!
//! Mount [`ContractsCommand`] as a clap subcommand and call [`run`]; it writes to `out`
//! and returns the process exit code:
//! * `lint` — 1 if any finding has severity *error*, else 0;
//! * `from-sgd`, `to-sgd` — 0;
//! * `bisim` — 1 if some service is not structurally bisimilar to its Φ image or not
//!   behaviourally bisimilar to its Φ⁺ image (either would be a bug in Φ or Φ⁺), else 0;
//!   SGD ≁ MCP behaviourally is the expected finding and does not fail. With two files:
//!   1 if some pair differs at either level (or has no partner);
//! * `lock` — 0.

use std::io::{Read as _, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::contract::{apply_sidecar, load_sidecar};
use crate::error::{ContractsError, Result};
use crate::invert::{InversionReport, MappingStatus, invert};
use crate::lint::render::{render_grouped, render_sarif, render_text};
use crate::lint::{Severity, lint_all};
use crate::lock::Lock;
use crate::mcp::{ToolList, parse_tool_lists};
use crate::phi::{ToolListsDocument, phi_schema};
use crate::semantics::{ServiceVerdict, Side, compare_service, compare_sides};
use crate::sgd::{SgdService, parse_schema};

/// Tool contracts: SGD services, MCP servers and MCP+ (MCP with explicit contracts).
///
/// MCP+ extends each MCP tool with a contract (in `_meta["dev.troupe/contract"]`, or a
/// sidecar file) covering four principles: semantic completeness (every argument
/// described, with its domain), explicit action boundaries (transactional tools need a
/// person's confirmation), failure modes (named errors, retryable or compensated) and
/// inter-tool relations (requires, precedes, compensated_by, produces).
#[derive(Debug, clap::Subcommand)]
pub enum ContractsCommand {
    /// Score each MCP tool on the four MCP+ principles and explain every shortcoming.
    ///
    /// Per tool: a score 0–3 per principle (3 = nothing to report; otherwise 3 minus
    /// the worst finding: info 1, warning 2, error 3) and the findings, each with its
    /// rule, a JSON pointer into the tool list (e.g.
    /// /tools/3/inputSchema/properties/path) and a suggested fix. Exits with 1 if any
    /// finding is an error, else 0.
    ///
    /// Example: troupe contracts lint filesystem.json --contracts filesystem.contracts.json
    Lint(LintArgs),
    /// Translate an SGD schema.json into MCP tool lists (Φ), or MCP+ with --plus (Φ⁺).
    ///
    /// Each intent becomes a tool (CheckBalance → check_balance): required slots become
    /// required properties, categorical slots enums, optional slots defaults, result
    /// slots the outputSchema, and the transactional flag the readOnlyHint /
    /// destructiveHint annotations. --plus adds the MCP+ contract that keeps everything
    /// else, so that `to-sgd` gives back exactly the original schema. Prints one
    /// `tools/list` result, or an object keyed by service name for several services.
    ///
    /// Example: troupe contracts from-sgd train/schema.json --plus --service Banks_1
    FromSgd(FromSgdArgs),
    /// Translate MCP tool lists back into SGD services (Φ⁻¹) and report what is lost.
    ///
    /// Exact for MCP+ tools made by `from-sgd --plus`; for plain MCP tools it reports,
    /// per tool and argument, what maps exactly, what maps with a loss (booleans, the
    /// transactional flag inferred from hints, ...), what cannot be mapped (arrays,
    /// nested objects, unbounded numbers, free-form schemas) and what is missing
    /// (descriptions, result slots without outputSchema, the service description).
    ///
    /// Example: troupe contracts from-sgd schema.json --plus | troupe contracts to-sgd -
    ToSgd(ToSgdArgs),
    /// Compare the behaviour of each SGD service with its MCP and MCP+ translations.
    ///
    /// Builds labelled transition systems over a common alphabet (select, collect(slot),
    /// invoke, error MissingSlots, confirm/decline, execute, result/error; slot values
    /// abstracted to unset/set) and checks strong bisimilarity per service and per
    /// intent. When two systems differ it prints a shortest distinguishing trace, e.g.
    /// "after select(transfer_money) · collect(amount) · invoke(transfer_money): SGD can
    /// do confirm(transfer_money) but MCP cannot". Exits with 1 if some service is not
    /// bisimilar to its MCP+ translation.
    ///
    /// Example: troupe contracts bisim dev/schema.json --service Banks_2
    Bisim(BisimArgs),
    /// Pin the tool definitions: a SHA-256 of each tool's name, description and schemas.
    ///
    /// `lint --lock FILE` then reports every tool whose definition changed since (a
    /// "rug pull": a description changed after review) as an error, and every tool not
    /// pinned as a warning.
    ///
    /// Example: troupe contracts lock filesystem.json -o troupe.lock.json
    Lock(LockArgs),
}

/// Arguments of `lint`.
#[derive(Debug, clap::Args)]
pub struct LintArgs {
    /// MCP tools to lint: a tools/list result, a JSON-RPC response wrapping one, a
    /// capture keyed by method name ("initialize", "tools/list", ...) or an object keyed
    /// by server name; `-` reads standard input.
    pub tools: PathBuf,
    /// Sidecar file of MCP+ contracts (a JSON object: tool name → contract) for servers
    /// you do not control; applied to every server in the input.
    #[arg(long, value_name = "FILE")]
    pub contracts: Option<PathBuf>,
    /// Print the report as JSON (same as --format json).
    #[arg(long)]
    pub json: bool,
    /// Output format: text (findings grouped by rule, with counts), json, or sarif
    /// (SARIF 2.1.0 for code-scanning tools).
    #[arg(long, value_enum, default_value_t = LintFormat::Text)]
    pub format: LintFormat,
    /// Report only these rules (comma-separated ids, e.g. model-instruction,hidden-unicode).
    #[arg(long, value_name = "RULES", value_delimiter = ',')]
    pub select: Vec<String>,
    /// Do not report these rules (comma-separated ids).
    #[arg(long, value_name = "RULES", value_delimiter = ',')]
    pub ignore: Vec<String>,
    /// Show only this tool, with its scores per principle (the per-tool view).
    #[arg(long, value_name = "NAME")]
    pub tool: Option<String>,
    /// A lock file (from `lock`): a tool whose definition changed since is an error
    /// (rule tool-drift).
    #[arg(long, value_name = "FILE")]
    pub lock: Option<PathBuf>,
}

/// Output formats of `lint`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LintFormat {
    /// For people: a summary per rule, then the findings grouped by rule.
    Text,
    /// The reports as JSON.
    Json,
    /// SARIF 2.1.0.
    Sarif,
}

/// Arguments of `lock`.
#[derive(Debug, clap::Args)]
pub struct LockArgs {
    /// MCP tools to pin (same formats as `lint`); `-` reads standard input.
    pub tools: PathBuf,
    /// Write the lock here instead of standard output.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Arguments of `from-sgd`.
#[derive(Debug, clap::Args)]
pub struct FromSgdArgs {
    /// The SGD schema.json (a JSON array of services); `-` reads standard input.
    pub schema: PathBuf,
    /// Produce MCP+ (Φ⁺): add to each tool the contract that makes the translation
    /// lossless and explicit about confirmation, failure modes and relations.
    #[arg(long)]
    pub plus: bool,
    /// Translate only this service (prints a single tools/list result).
    #[arg(long, value_name = "NAME")]
    pub service: Option<String>,
    /// Print compact JSON on one line (the output is JSON either way).
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `to-sgd`.
#[derive(Debug, clap::Args)]
pub struct ToSgdArgs {
    /// MCP tools (same formats as `lint`); `-` reads standard input.
    pub tools: PathBuf,
    /// Sidecar file of MCP+ contracts applied before translating.
    #[arg(long, value_name = "FILE")]
    pub contracts: Option<PathBuf>,
    /// Print {"schema": [...], "report": [...]} as JSON instead of the readable report
    /// followed by the schema.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `bisim`.
#[derive(Debug, clap::Args)]
pub struct BisimArgs {
    /// The SGD schema.json; `-` reads standard input. With a second file, either side
    /// may be an SGD schema or MCP tools (read as MCP+ when they carry contracts).
    pub schema: PathBuf,
    /// Compare with these instead of Φ and Φ⁺ of the schema: an SGD schema or MCP
    /// tools (same formats as `lint`); services and servers are paired by name (or
    /// one with one).
    pub other: Option<PathBuf>,
    /// Read the second side's tools as plain MCP even if they carry contracts.
    #[arg(long)]
    pub mcp: bool,
    /// Check only this service.
    #[arg(long, value_name = "NAME")]
    pub service: Option<String>,
    /// Print the verdicts (with counterexample traces) as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs one subcommand, writing to `out`; returns the exit code (see the module docs).
pub fn run(cmd: ContractsCommand, out: &mut dyn Write) -> Result<i32> {
    match cmd {
        ContractsCommand::Lint(args) => run_lint(args, out),
        ContractsCommand::FromSgd(args) => run_from_sgd(args, out),
        ContractsCommand::ToSgd(args) => run_to_sgd(args, out),
        ContractsCommand::Bisim(args) => run_bisim(args, out),
        ContractsCommand::Lock(args) => run_lock(args, out),
    }
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

/// Writes `value` as JSON, serialized directly (a `serde_json::Value` would sort object
/// keys and lose the order of SGD's optional slots).
fn write_json<T: Serialize + ?Sized>(out: &mut dyn Write, value: &T, compact: bool) -> Result<()> {
    let text = if compact {
        serde_json::to_string(value)
    } else {
        serde_json::to_string_pretty(value)
    };
    let text = text.map_err(|source| ContractsError::Json {
        what: "output".into(),
        source,
    })?;
    writeln!(out, "{text}")?;
    Ok(())
}

/// `lint --json` output.
#[derive(Serialize)]
struct LintOutput<'a> {
    servers: &'a [crate::lint::LintReport],
    errors: usize,
    warnings: usize,
    infos: usize,
    unmatched_contracts: &'a [String],
}

/// `to-sgd --json` output.
#[derive(Serialize)]
struct ToSgdOutput<'a> {
    schema: &'a [SgdService],
    report: &'a [InversionReport],
}

fn run_lint(args: LintArgs, out: &mut dyn Write) -> Result<i32> {
    let (lists, unmatched) = load_lists(&args.tools, args.contracts.as_deref())?;
    let lock = args.lock.as_deref().map(Lock::load).transpose()?;
    let known: Vec<&str> = crate::lint::rules::ALL.iter().map(|r| r.id).collect();
    if let Some(unknown) = args
        .select
        .iter()
        .chain(&args.ignore)
        .find(|id| !known.contains(&id.as_str()))
    {
        return Err(ContractsError::UnknownRule(unknown.clone()));
    }
    let mut reports = lint_all(&lists, lock.as_ref());
    for report in &mut reports {
        report.retain(
            |f| {
                (args.select.is_empty() || args.select.iter().any(|r| r == f.rule))
                    && !args.ignore.iter().any(|r| r == f.rule)
            },
            |tool| args.tool.as_deref().is_none_or(|only| only == tool),
        );
    }
    let count = |severity| reports.iter().map(|r| r.count(severity)).sum::<usize>();
    let errors = count(Severity::Error);
    let format = if args.json {
        LintFormat::Json
    } else {
        args.format
    };
    match format {
        LintFormat::Json => {
            let output = LintOutput {
                servers: &reports,
                errors,
                warnings: count(Severity::Warning),
                infos: count(Severity::Info),
                unmatched_contracts: &unmatched,
            };
            write_json(out, &output, false)?;
        }
        LintFormat::Sarif => {
            let uri = args.tools.display().to_string();
            write_json(out, &render_sarif(&reports, &uri), false)?;
        }
        LintFormat::Text => {
            if args.tool.is_some() {
                out.write_all(render_text(&reports).as_bytes())?;
            } else {
                out.write_all(render_grouped(&reports).as_bytes())?;
            }
            for name in &unmatched {
                writeln!(
                    out,
                    "\nnote: the sidecar has a contract for `{name}`, which no server has"
                )?;
            }
        }
    }
    Ok(i32::from(errors > 0))
}

fn run_lock(args: LockArgs, out: &mut dyn Write) -> Result<i32> {
    let (lists, _) = load_lists(&args.tools, None)?;
    let lock = Lock::of(&lists);
    match &args.output {
        Some(path) => std::fs::write(path, lock.to_json() + "\n").map_err(|source| {
            ContractsError::WriteFile {
                path: path.clone(),
                source,
            }
        })?,
        None => writeln!(out, "{}", lock.to_json())?,
    }
    Ok(0)
}

fn run_from_sgd(args: FromSgdArgs, out: &mut dyn Write) -> Result<i32> {
    let services = load_services(&args.schema, args.service.as_deref())?;
    let lists = phi_schema(&services, args.plus);
    write_json(out, &ToolListsDocument(&lists), args.json)?;
    Ok(0)
}

fn run_to_sgd(args: ToSgdArgs, out: &mut dyn Write) -> Result<i32> {
    let (lists, _) = load_lists(&args.tools, args.contracts.as_deref())?;
    let mut services = Vec::new();
    let mut reports = Vec::new();
    for list in &lists {
        let (mut recovered, report) = invert(list)?;
        services.append(&mut recovered);
        reports.push(report);
    }
    if args.json {
        let output = ToSgdOutput {
            schema: &services,
            report: &reports,
        };
        write_json(out, &output, false)?;
    } else {
        for report in &reports {
            out.write_all(render_inversion(report).as_bytes())?;
        }
        writeln!(out, "\nSGD schema:")?;
        write_json(out, &services, false)?;
    }
    Ok(0)
}

fn status_name(status: MappingStatus) -> &'static str {
    match status {
        MappingStatus::Exact => "exact",
        MappingStatus::Lossy => "lossy",
        MappingStatus::Unmappable => "unmappable",
        MappingStatus::Missing => "missing",
    }
}

/// Renders a loss report for people.
pub fn render_inversion(report: &InversionReport) -> String {
    use std::fmt::Write as _;
    let mut text = String::new();
    let server = report.server.as_deref().unwrap_or("(unnamed server)");
    let counts: Vec<String> = [
        MappingStatus::Exact,
        MappingStatus::Lossy,
        MappingStatus::Unmappable,
        MappingStatus::Missing,
    ]
    .into_iter()
    .map(|status| format!("{} {}", report.count(status), status_name(status)))
    .collect();
    let verdict = if report.is_lossless() {
        "lossless"
    } else {
        "partial"
    };
    let _ = writeln!(
        text,
        "{server}: {} tools, {verdict} ({})",
        report.tools.len(),
        counts.join(", ")
    );
    for note in &report.notes {
        let _ = writeln!(
            text,
            "  {:<10} {}: {}",
            status_name(note.status),
            note.subject,
            note.detail
        );
    }
    for tool in &report.tools {
        let origin = if tool.from_contract {
            " (from its MCP+ contract)"
        } else {
            ""
        };
        let _ = writeln!(
            text,
            "  {} → {}.{}{origin}",
            tool.tool, tool.service, tool.intent
        );
        for note in tool
            .notes
            .iter()
            .filter(|note| note.status != MappingStatus::Exact)
        {
            let _ = writeln!(
                text,
                "    {:<10} {}: {} ({})",
                status_name(note.status),
                note.subject,
                note.detail,
                note.pointer
            );
        }
    }
    text
}

fn run_bisim(args: BisimArgs, out: &mut dyn Write) -> Result<i32> {
    if let Some(other) = &args.other {
        return run_bisim_sides(&args, other, out);
    }
    let services = load_services(&args.schema, args.service.as_deref())?;
    let verdicts = services
        .iter()
        .map(compare_service)
        .collect::<Result<Vec<ServiceVerdict>>>()?;
    let failures = verdicts
        .iter()
        .filter(|v| v.mcp_plus.is_some() || v.structural.is_some())
        .count();
    if args.json {
        write_json(
            out,
            &serde_json::to_value(&verdicts).unwrap_or_default(),
            false,
        )?;
    } else {
        out.write_all(render_bisim(&verdicts).as_bytes())?;
    }
    Ok(i32::from(failures > 0))
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

fn run_bisim_sides(args: &BisimArgs, other: &Path, out: &mut dyn Write) -> Result<i32> {
    let left = load_sides(&args.schema, false, args.service.as_deref())?;
    let right = load_sides(other, args.mcp, None)?;
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
    let differ = comparisons
        .iter()
        .filter(|c| c.behavioural.is_some() || c.structural.is_some())
        .count();
    if args.json {
        write_json(
            out,
            &serde_json::json!({"comparisons": comparisons, "unpaired": unpaired}),
            false,
        )?;
    } else {
        let relation = |c: &Option<_>| if c.is_some() { "≁" } else { "~" };
        for c in &comparisons {
            writeln!(
                out,
                "{} vs {}: structural {}, behavioural {}",
                c.left,
                c.right,
                relation(&c.structural),
                relation(&c.behavioural)
            )?;
            if let Some(ce) = &c.structural {
                writeln!(out, "  structural: {}", ce.render("left", "right"))?;
            }
            if let Some(ce) = &c.behavioural {
                writeln!(out, "  behavioural: {}", ce.render("left", "right"))?;
            }
            if !c.skipped.is_empty() {
                writeln!(
                    out,
                    "  skipped (too many required arguments): {}",
                    c.skipped.join(", ")
                )?;
            }
        }
        for name in &unpaired {
            writeln!(out, "{name}: nothing to compare it with")?;
        }
    }
    Ok(i32::from(differ > 0 || !unpaired.is_empty()))
}

/// Renders bisimulation verdicts for people: per service the structural verdict (the
/// paper's level, SGD vs Φ) and the behavioural ones (SGD vs Φ and Φ⁺), then per intent
/// with a shortest counterexample where they differ.
pub fn render_bisim(verdicts: &[ServiceVerdict]) -> String {
    use std::fmt::Write as _;
    let relation = |differs: bool| if differs { "≁" } else { "~" };
    let mut text = String::new();
    for verdict in verdicts {
        let _ = writeln!(
            text,
            "{}: structural SGD {} MCP; behavioural SGD {} MCP, SGD {} MCP+ (states {}/{}/{})",
            verdict.service,
            relation(verdict.structural.is_some()),
            relation(verdict.mcp.is_some()),
            relation(verdict.mcp_plus.is_some()),
            verdict.states[0],
            verdict.states[1],
            verdict.states[2]
        );
        for intent in &verdict.intents {
            let kind = if intent.transactional {
                " [transactional]"
            } else {
                ""
            };
            if let Some(why) = &intent.skipped {
                let _ = writeln!(
                    text,
                    "  {} ({}){kind}: skipped: {why}",
                    intent.intent, intent.tool
                );
                continue;
            }
            let _ = writeln!(
                text,
                "  {} ({}){kind}: structural {}; behavioural SGD {} MCP, SGD {} MCP+",
                intent.intent,
                intent.tool,
                relation(intent.structural.is_some()),
                relation(intent.mcp.is_some()),
                relation(intent.mcp_plus.is_some())
            );
            for (what, counterexample) in [
                ("structural", &intent.structural),
                ("MCP", &intent.mcp),
                ("MCP+", &intent.mcp_plus),
            ] {
                if let Some(counterexample) = counterexample {
                    let right = if what == "structural" { "MCP" } else { what };
                    let _ = writeln!(text, "    {what}: {}", counterexample.render("SGD", right));
                }
            }
        }
    }
    let all = || verdicts.iter().flat_map(|v| &v.intents);
    let count =
        |f: &dyn Fn(&crate::semantics::IntentVerdict) -> bool| all().filter(|i| f(i)).count();
    let _ = writeln!(
        text,
        "\n{} services, {} intents: structurally SGD ~ MCP for {} intents (≁ for {}); \
         behaviourally SGD ≁ MCP for {} intents in {} services, SGD ≁ MCP+ for {} intents; \
         {} skipped",
        verdicts.len(),
        all().count(),
        count(&|i| i.skipped.is_none() && i.structural.is_none()),
        count(&|i| i.structural.is_some()),
        count(&|i| i.mcp.is_some()),
        verdicts.iter().filter(|v| v.mcp.is_some()).count(),
        count(&|i| i.mcp_plus.is_some()),
        count(&|i| i.skipped.is_some()),
    );
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(subcommand)]
        command: ContractsCommand,
    }

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn parses_the_subcommands() {
        let cli =
            Cli::try_parse_from(["x", "from-sgd", "s.json", "--plus", "--service", "B"]).unwrap();
        assert!(matches!(
            cli.command,
            ContractsCommand::FromSgd(FromSgdArgs { plus: true, .. })
        ));
        let cli = Cli::try_parse_from(["x", "lint", "t.json", "--json"]).unwrap();
        assert!(matches!(
            cli.command,
            ContractsCommand::Lint(LintArgs { json: true, .. })
        ));
    }

    #[test]
    fn reports_missing_files_as_errors() {
        let cmd = ContractsCommand::Bisim(BisimArgs {
            schema: "/nonexistent/schema.json".into(),
            other: None,
            mcp: false,
            service: None,
            json: false,
        });
        assert!(matches!(
            run(cmd, &mut Vec::new()),
            Err(ContractsError::Read { .. })
        ));
    }
}
