//! The arguments of `troupe contracts …` (clap): the subcommands, their
//! flags and help texts. [`super`] runs them over `troupe_contracts::ops`.

use std::path::PathBuf;

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

impl From<&LintArgs> for troupe_contracts::ops::LintOptions {
    fn from(args: &LintArgs) -> Self {
        troupe_contracts::ops::LintOptions {
            tools: args.tools.clone(),
            contracts: args.contracts.clone(),
            select: args.select.clone(),
            ignore: args.ignore.clone(),
            tool: args.tool.clone(),
            lock: args.lock.clone(),
        }
    }
}
