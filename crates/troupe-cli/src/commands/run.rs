//! `troupe run`: run a workflow and print its result (and trace).

use crate::commands::durable;
use crate::out;
use crate::terminal::{TerminalInbox, sanitize};
use crate::{ColorChoice, ExitStatus};
use anyhow::{Context, Result};
use clap::Args;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use troupe_host::{Backends, Compiled};
use troupe_runtime::{
    EventSink, HumanInbox, NoHumans, RunOptions, ScriptedHumans, TraceEntry, Watched,
};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The `.troupe` file.
    pub file: PathBuf,
    /// Which workflow to run, when the file declares several.
    #[arg(long, value_name = "NAME")]
    pub workflow: Option<String>,
    /// An input, parsed by its declared type: `--input task="Plan a trip"`,
    /// `--input limit=10`. Records and lists take JSON.
    #[arg(long = "input", short = 'i', value_name = "NAME=VALUE", value_parser = parse_pair)]
    pub inputs: Vec<(String, String)>,
    /// All inputs (or some) as one JSON object: `--input-json '{"limit": 3}'`.
    #[arg(long, value_name = "OBJECT")]
    pub input_json: Option<String>,
    /// The default model: `mock` (the default), `scripted:FILE`,
    /// `openai:MODEL`, `anthropic:MODEL`, `ollama:MODEL`, …
    #[arg(long, value_name = "SPEC")]
    pub llm: Option<String>,
    /// A model for one lifeline, action or `Lifeline.action`:
    /// `--llm-for Reviewer=anthropic:claude-sonnet-4-5`.
    #[arg(long = "llm-for", value_name = "KEY=SPEC")]
    pub llm_for: Vec<String>,
    /// Answers to human tasks, as a JSON object keyed by `Lifeline.action`
    /// or `action` (a list answers successive tasks). Without it, tasks are
    /// asked on the terminal.
    #[arg(long, value_name = "FILE")]
    pub answers: Option<PathBuf>,
    /// Print the trace: per lifeline, every send, receive, action, decision
    /// and control message, with logical timestamps.
    #[arg(long)]
    pub trace: bool,
    /// Print the result (and trace) as JSON.
    #[arg(long)]
    pub json: bool,
    /// Skip checking that the run's erased trace is in ⟦P⟧.
    #[arg(long)]
    pub no_verify: bool,
    /// Seed of the mock model's choices.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Deadline of every asynchronous action (LLM, effect, human), e.g. `30s`.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub timeout: Option<Duration>,
    /// Record the run durably in this store (default `.troupe/troupe.db`):
    /// a restarted `troupe run` or `troupe resume` continues it without
    /// redoing finished work. An unfinished run of the same file with the
    /// same workflow and inputs whose owner is gone is continued instead of
    /// starting a new one; one that waits for `troupe resolve` is refused.
    #[arg(long, value_name = "DB", num_args = 0..=1, default_missing_value = crate::commands::durable::DEFAULT_STORE)]
    pub store: Option<PathBuf>,
    /// With --store: start the run in the background and print its id. On
    /// a PostgreSQL store (or with placed lifelines) it is queued for the
    /// workers (`troupe worker`) instead.
    #[arg(long, requires = "store")]
    pub detach: bool,
    /// With --detach: pin a lifeline to a worker label. The run is then
    /// driven in parts, one per label, each by a `troupe worker --labels
    /// LABEL`; their messages travel through the store. Unpinned lifelines
    /// form a part any worker may run. Adds to (and wins over) the
    /// `[placement]` table of `troupe.toml`, e.g. `Bank = "eu"`.
    #[arg(long = "place", value_name = "LIFELINE=LABEL", requires = "detach", value_parser = parse_pair)]
    pub place: Vec<(String, String)>,
    /// With --store: start a new run even if unfinished ones could be resumed.
    #[arg(long, requires = "store")]
    pub new: bool,
    /// With --store: `full` (survives power loss) or `normal` (faster).
    #[arg(long, value_enum, default_value_t = crate::commands::durable::DurabilityArg::Full)]
    pub durability: crate::commands::durable::DurabilityArg,
    /// With --store: keep at least the last EVENTS events of the run's
    /// history and prune older ones (from a checkpoint on), so a run that
    /// goes on for days keeps a store of bounded size. Steps, tasks and
    /// results are always kept; `troupe verify` then checks the retained
    /// window from its checkpoint. Default: keep everything.
    #[arg(long, value_name = "EVENTS", requires = "store", value_parser = crate::commands::durable::parse_history_keep)]
    pub history_keep: Option<u64>,
    /// With --store: take a checkpoint every EVENTS events (a resumed run
    /// continues from the latest one). Default: every 100,000 events, or
    /// more for a large state (one byte of checkpoint per event).
    #[arg(long, value_name = "EVENTS", requires = "store", value_parser = clap::value_parser!(u64).range(1..))]
    pub checkpoint_every: Option<u64>,
    /// Answer `extern` actions that have no implementation with mock
    /// values (marked `mock` in the recorded steps). Without it such a
    /// workflow refuses to run; give an effect a command in `troupe.toml`
    /// (`[externs.NAME] command = [...]`, see `troupe run --help`).
    #[arg(long)]
    pub mock_externs: bool,
    /// A called tool without an MCP+ contract is an error (W0605), not a
    /// warning: nothing about it can be verified.
    #[arg(long)]
    pub deny_unverified: bool,
}

impl RunArgs {
    /// The workflow, checked and verified as these flags ask.
    pub fn compile(&self) -> Result<Compiled, troupe_host::HostError> {
        let project =
            troupe_host::ProjectConfig::load(&std::env::current_dir().unwrap_or_default())?;
        let unverified = unverified_policy(self.deny_unverified, &project);
        let mut compiled = Compiled::load_with(
            &self.file,
            self.workflow.as_deref(),
            &troupe_contracts::VerifyOptions {
                deny_unverified: unverified == troupe_host::Unverified::Deny,
                ..Default::default()
            },
        )?;
        if unverified == troupe_host::Unverified::Allow {
            compiled
                .warnings
                .retain(|d| d.code != troupe_syntax::Code::UnverifiedTool);
        }
        Ok(compiled)
    }
}

pub(crate) fn parse_pair(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .map(|(k, v)| (k.trim().to_owned(), v.to_owned()))
        .filter(|(k, _)| !k.is_empty())
        .ok_or_else(|| format!("expected NAME=VALUE, found {s:?}"))
}

/// A duration such as `30s`, `500ms` or `2m` (humantime), between 1 ms and
/// 30 days.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s.trim())
        .map_err(|e| format!("{e}: expected a duration such as 30s, 500ms or 2m"))?;
    if d < Duration::from_millis(1) || d > Duration::from_secs(30 * 86_400) {
        return Err(format!("{s} is out of range: give between 1ms and 30 days"));
    }
    Ok(d)
}

pub fn run(args: &RunArgs, color: ColorChoice) -> Result<ExitStatus> {
    if let Some(store) = &args.store {
        return crate::commands::durable::run(args, store, color);
    }
    // With --json, every failure is one JSON object on stdout, besides
    // what stderr says.
    let host_error = |e: &troupe_host::HostError| -> Result<ExitStatus> {
        let status = durable::report_error(e, color);
        if args.json {
            out::println(&host_error_json(e, &args.file).to_string())?;
        }
        Ok(status)
    };
    let compiled = match args.compile() {
        Ok(c) => c,
        Err(e) => return host_error(&e),
    };
    durable::print_warnings(&compiled, color);
    let json = match args
        .input_json
        .as_deref()
        .map(serde_json::from_str::<serde_json::Value>)
        .transpose()
    {
        Ok(j) => j,
        Err(e) if args.json => {
            let message = format!("--input-json is not valid JSON: {e}");
            crate::note!("error: {message}");
            let hint = "give one JSON object, e.g. --input-json '{\"limit\": 3}'";
            out::println(&error_json("usage", &message, Some(hint)).to_string())?;
            return Ok(ExitStatus::Usage);
        }
        Err(e) => return Err(e).context("--input-json is not valid JSON"),
    };
    let inputs = match compiled.parse_inputs(&args.inputs, json.as_ref()) {
        Ok(i) => i,
        Err(e) => return host_error(&e),
    };
    let settings = durable::settings_of(args);
    let humans = human_inbox(args.answers.as_deref(), &compiled)?;
    let printer = Arc::new(Printer::new(compiled.clone(), args.trace, args.json));
    let sink = args.trace.then(|| printer.clone() as Arc<dyn EventSink>);
    let (engine, outcome, watched) =
        match execute(&compiled, inputs, &settings, humans, sink, !args.no_verify)? {
            Ok(x) => x,
            Err(e) => return host_error(&e),
        };
    printer.flush()?;
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            let message = e.to_string();
            crate::note!("error: {}", sanitize(&message));
            if args.json {
                let hint = "record the run with --store: `troupe retry` then continues a failed run from its last durable step";
                out::println(&error_json("run_failed", &message, Some(hint)).to_string())?;
            }
            return Ok(ExitStatus::Failure);
        }
    };
    let verified = if args.no_verify {
        None
    } else {
        match watched.verdict(false) {
            Ok(n) => Some(n),
            Err(e) => {
                let message = format!("run run-1: the execution is not in ⟦P⟧: {e}");
                crate::note!("error: {}", sanitize(&message));
                if args.json {
                    let hint =
                        "this is a bug in troupe's runtime: please report it with the workflow";
                    out::println(&error_json("not_verified", &message, Some(hint)).to_string())?;
                }
                return Ok(ExitStatus::Failure);
            }
        }
    };
    let types = engine.types();
    if args.json {
        let results: serde_json::Map<String, serde_json::Value> = outcome
            .results
            .iter()
            .map(|(k, v)| (k.clone(), v.to_json(types)))
            .collect();
        let mut doc = serde_json::json!({
            "workflow": engine.workflow().name,
            "results": results,
            "steps": outcome.steps,
            "verified": verified.is_some().then_some(true),
            "unmade_calls": outcome.unmade_calls,
        });
        if args.trace {
            doc["trace"] = printer.json(engine.program(), engine.workflow());
        }
        out::println(&serde_json::to_string_pretty(&doc)?)?;
    } else {
        print_results(&outcome.results, types)?;
        print_unmade(&outcome.unmade_calls);
        if let Some(n) = verified {
            crate::note!(
                "verified: the run ({n} events) is a run of `{}`",
                engine.workflow().name
            );
        }
    }
    Ok(ExitStatus::Success)
}

/// `{"error": {"kind": …, "message": …, "hint": …}}`: a failure, for
/// scripts that read `--json` output.
pub fn error_json(kind: &str, message: &str, hint: Option<&str>) -> serde_json::Value {
    serde_json::json!({ "error": { "kind": kind, "message": message, "hint": hint } })
}

/// A host error as [`error_json`], with the diagnostics of a file that
/// does not check.
pub fn host_error_json(e: &troupe_host::HostError, file: &std::path::Path) -> serde_json::Value {
    use troupe_host::HostError as H;
    let file = file.display();
    let (kind, hint) = match e {
        H::Read { .. } => ("read", None),
        H::DoesNotCheck { .. } => ("does_not_check", Some(format!("`troupe check {file}` shows each error with its hint"))),
        H::Contracts { .. } => ("contracts", Some(format!("`troupe check {file}` shows each finding"))),
        H::NoSuchWorkflow { .. } | H::NoWorkflow { .. } | H::WhichWorkflow { .. } => {
            ("workflow", Some("choose one with --workflow NAME".to_owned()))
        }
        H::Input(_) => ("input", Some("give each input as --input NAME=VALUE or --input-json OBJECT".to_owned())),
        H::UnboundExterns { .. } => ("unbound_externs", Some("give each a command in troupe.toml ([externs.NAME] command = [...]), or run with --mock-externs".to_owned())),
        H::Config(_) | H::Llm(_) => ("config", Some("see the options in troupe.toml (`troupe init` writes a commented one)".to_owned())),
        H::Run(_) => ("run_failed", None),
        _ => ("host", None),
    };
    let mut doc = error_json(kind, &e.to_string(), hint.as_deref());
    if let H::DoesNotCheck {
        file,
        source_text,
        diagnostics,
    }
    | H::Contracts {
        file,
        source_text,
        diagnostics,
    } = e
    {
        let report = crate::render::FileReport {
            path: file,
            text: source_text,
            diagnostics,
        };
        doc["error"]["diagnostics"] =
            serde_json::to_value(crate::render::to_json(&report)).unwrap_or_default();
    }
    doc
}

/// Prints a run's trace as it happens, a batch of events at a time (or
/// keeps it for `--json`).
struct Printer {
    compiled: Compiled,
    text: bool,
    state: std::sync::Mutex<PrinterState>,
}

#[derive(Default)]
struct PrinterState {
    pending: Vec<TraceEntry>,
    clock: u64,
    /// The first write error: printing stops, `flush` reports it.
    failed: Option<std::io::Error>,
}

/// Events rendered per batch: bounds what the printer holds.
const PRINT_BATCH: usize = 4096;

impl Printer {
    fn new(compiled: Compiled, trace: bool, json: bool) -> Printer {
        Printer {
            compiled,
            text: trace && !json,
            state: std::sync::Mutex::default(),
        }
    }

    fn print(&self, state: &mut PrinterState) {
        if state.failed.is_some() || state.pending.is_empty() {
            state.pending.clear();
            return;
        }
        let trace = troupe_runtime::Trace {
            entries: std::mem::take(&mut state.pending),
        };
        let text = trace.render(&self.compiled.program, self.compiled.workflow());
        if let Err(e) = out::print(&sanitize(&text)) {
            state.failed = Some(e);
        }
        state.pending = trace.entries;
        state.pending.clear();
    }

    /// Prints what is pending; the first write error, if any.
    fn flush(&self) -> std::io::Result<()> {
        let Ok(mut state) = self.state.lock() else {
            return Ok(());
        };
        if self.text {
            self.print(&mut state);
        }
        match state.failed.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The kept trace as JSON (`--json --trace`).
    fn json(
        &self,
        program: &troupe_check::ir::Program,
        workflow: &troupe_check::ir::Workflow,
    ) -> serde_json::Value {
        let Ok(state) = self.state.lock() else {
            return serde_json::Value::Null;
        };
        troupe_runtime::Trace {
            entries: state.pending.clone(),
        }
        .to_json(program, workflow)
    }
}

impl EventSink for Printer {
    fn event(&self, lifeline: troupe_check::ir::LifelineId, event: &troupe_msc::Event) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let time = state.clock;
        state.clock += 1;
        state.pending.push(TraceEntry {
            time,
            lifeline,
            event: event.clone(),
        });
        if self.text && state.pending.len() >= PRINT_BATCH {
            self.print(&mut state);
        }
    }
}

/// What an in-memory run left: its engine, its outcome, and the journal
/// that verified it online.
pub type Executed = (
    troupe_runtime::Engine,
    Result<troupe_runtime::RunOutcome, troupe_runtime::RunError>,
    Arc<Watched>,
);

/// An in-memory run as `troupe run` does it — backends from `troupe.toml`
/// and `settings`, events verified online (with `verify`) and handed to
/// `sink`, no trace kept — on a runtime of its own. `troupe bench counter`
/// measures this same function.
pub fn execute(
    compiled: &Compiled,
    inputs: Vec<troupe_check::Value>,
    settings: &troupe_host::RunSettings,
    humans: Arc<dyn HumanInbox>,
    sink: Option<Arc<dyn EventSink>>,
    verify: bool,
) -> Result<Result<Executed, troupe_host::HostError>> {
    let backends = Backends::new(durable::host_config()?, Arc::new(troupe_mcp::McpTools));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let (engine, tools) = match rt.block_on(backends.engine(compiled, settings, "run-1", humans)) {
        Ok(e) => e,
        Err(e) => return Ok(Err(e)),
    };
    let monitor = if verify { Some(engine.monitor()) } else { None };
    // A workflow with causal guards: each decision is recomputed from the
    // chart as the events stream by (memory bounded by the messages in
    // flight, not the history).
    let recheck = if verify {
        match engine.causal_recheck("run-1", &inputs) {
            Some(Ok(r)) => Some(Arc::new(Recheck {
                state: std::sync::Mutex::new((r, None)),
                then: sink.clone(),
            })),
            Some(Err(e)) => return Ok(Err(e.into())),
            None => None,
        }
    } else {
        None
    };
    let sink = match &recheck {
        Some(k) => Some(k.clone() as Arc<dyn EventSink>),
        None => sink,
    };
    let watched = Arc::new(Watched::new(monitor, sink, None));
    let options = RunOptions {
        run_id: "run-1".into(),
        seed: settings.seed,
        trace: false,
        journal: Some(watched.clone()),
        ..RunOptions::default()
    };
    let outcome = rt.block_on(async {
        let outcome = engine.run(inputs, options).await;
        if let Some(close) = tools.close {
            close().await;
        }
        outcome
    });
    if let Some(recheck) = &recheck
        && let Ok(mut state) = recheck.state.lock()
        && let Some(m) = state.1.take()
    {
        watched.reject(engine.causal_error("run-1", m).to_string());
    }
    Ok(Ok((engine, outcome, watched)))
}

/// Recomputes a run's causal decisions as its events stream by (and hands
/// them on); keeps the first that differs.
struct Recheck {
    state: std::sync::Mutex<(troupe_msc::cpl::Recheck, Option<troupe_msc::cpl::Mismatch>)>,
    then: Option<Arc<dyn EventSink>>,
}

impl EventSink for Recheck {
    fn event(&self, lifeline: troupe_check::ir::LifelineId, event: &troupe_msc::Event) {
        if let Ok(mut state) = self.state.lock()
            && state.1.is_none()
            && let Err(m) = state.0.event(lifeline, event)
        {
            state.1 = Some(m);
        }
        if let Some(s) = &self.then {
            s.event(lifeline, event);
        }
    }
}

/// Says which tool calls the models chose did not happen (refused,
/// declined, failed), so a reply that claims otherwise is not the only
/// word: on stderr, after the results.
pub fn print_unmade(unmade: &[String]) {
    if unmade.is_empty() {
        return;
    }
    let mut text = format!(
        "warning: {} tool call(s) a model chose did not happen:",
        unmade.len()
    );
    for line in unmade {
        text.push_str(&format!("\n  {}", sanitize(line)));
    }
    crate::note!("{text}");
}

/// Prints results as `name = value`: text as it is, other values as JSON.
pub fn print_results(
    results: &[(String, troupe_check::Value)],
    types: &troupe_check::TypeTable,
) -> std::io::Result<()> {
    let mut text = String::new();
    for (name, value) in results {
        let shown = match value {
            troupe_check::Value::Text(s) => s.to_string(),
            other => other.to_json(types).to_string(),
        };
        text += &format!("{name} = {}\n", sanitize(&shown));
    }
    out::print(&text)
}

fn human_inbox(
    answers: Option<&std::path::Path>,
    compiled: &Compiled,
) -> Result<Arc<dyn HumanInbox>> {
    Ok(match answers {
        Some(path) => Arc::new(ScriptedHumans::from_file(path).map_err(anyhow::Error::msg)?),
        None if std::io::stdin().is_terminal() => {
            Arc::new(TerminalInbox::new(Arc::new(compiled.types().clone())))
        }
        None => Arc::new(NoHumans),
    })
}

/// How tools without a contract are taken: `--deny-unverified` wins, else
/// `[contracts] unverified` in `troupe.toml`.
pub fn unverified_policy(
    deny_flag: bool,
    project: &troupe_host::ProjectConfig,
) -> troupe_host::Unverified {
    if deny_flag {
        troupe_host::Unverified::Deny
    } else {
        project.contracts.unverified
    }
}
