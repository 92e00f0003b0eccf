//! `troupe run`: run a workflow and print its result (and trace).

use crate::render::{self, FileReport};
use crate::terminal::TerminalInbox;
use crate::{ColorChoice, ExitStatus};
use anyhow::{Context, Result};
use clap::Args;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use troupe_llm::{LlmBackend, LlmConfig, MockBackend, Router, parse_override};
use troupe_runtime::{EngineBuilder, HumanInbox, NoHumans, RunOptions, ScriptedHumans};

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
    /// redoing finished work. Unfinished runs of the same file whose process
    /// is gone are resumed first.
    #[arg(long, value_name = "DB", num_args = 0..=1, default_missing_value = crate::commands::durable::DEFAULT_STORE)]
    pub store: Option<PathBuf>,
    /// With --store: start the run in the background and print its id.
    #[arg(long, requires = "store")]
    pub detach: bool,
    /// With --store: start a new run even if unfinished ones could be resumed.
    #[arg(long, requires = "store")]
    pub new: bool,
    /// With --store: `full` (survives power loss) or `normal` (faster).
    #[arg(long, value_enum, default_value_t = crate::commands::durable::DurabilityArg::Full)]
    pub durability: crate::commands::durable::DurabilityArg,
}

impl RunArgs {
    /// The options of `troupe resume`, which continues a recorded run.
    pub fn for_resume(
        llm: Option<String>,
        llm_for: Vec<String>,
        answers: Option<PathBuf>,
        json: bool,
    ) -> RunArgs {
        RunArgs {
            file: PathBuf::new(),
            workflow: None,
            inputs: Vec::new(),
            input_json: None,
            llm,
            llm_for,
            answers,
            trace: false,
            json,
            no_verify: false,
            seed: 0,
            timeout: None,
            store: None,
            detach: false,
            new: false,
            durability: crate::commands::durable::DurabilityArg::Full,
        }
    }
}

fn parse_pair(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .map(|(k, v)| (k.trim().to_owned(), v.to_owned()))
        .filter(|(k, _)| !k.is_empty())
        .ok_or_else(|| format!("expected NAME=VALUE, found {s:?}"))
}

pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = s.split_at(
        s.find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(s.len()),
    );
    let n: f64 = num
        .parse()
        .map_err(|_| format!("expected a duration such as 30s or 500ms, found {s:?}"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "" | "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(format!("unknown unit {unit:?}: use ms, s, m or h")),
    };
    Ok(Duration::from_secs_f64(secs))
}

pub fn run(args: &RunArgs, color: ColorChoice) -> Result<ExitStatus> {
    if let Some(store) = &args.store {
        return crate::commands::durable::run(args, store);
    }
    let shown = args.file.display().to_string();
    let text = match std::fs::read_to_string(&args.file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot read {shown}: {e}");
            return Ok(ExitStatus::Usage);
        }
    };
    let builder = match EngineBuilder::from_source(&text) {
        Ok(b) => b,
        Err(diagnostics) => {
            let mut buf = Vec::new();
            let report = FileReport {
                path: &shown,
                text: &text,
                diagnostics: &diagnostics,
            };
            render::render_text(&report, color.enabled_for_stderr(), &mut buf);
            eprint!("{}", String::from_utf8_lossy(&buf));
            eprintln!("error: {shown} does not check; nothing was run");
            return Ok(ExitStatus::Failure);
        }
    };
    if !contracts_allow(&args.file, &text, color) {
        return Ok(ExitStatus::Failure);
    }
    let mut builder = configure(builder, args.workflow.as_deref(), args)?;
    builder = builder.humans(human_inbox(args.answers.as_deref())?);
    let engine = builder.build()?;
    let json = args
        .input_json
        .as_deref()
        .map(serde_json::from_str::<serde_json::Value>)
        .transpose()
        .context("--input-json is not valid JSON")?;
    let inputs = engine.parse_inputs(&args.inputs, json.as_ref())?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let options = RunOptions {
        run_id: "run-1".into(),
        seed: args.seed,
        trace: true,
        ..RunOptions::default()
    };
    let outcome = match rt.block_on(engine.run(inputs, options)) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitStatus::Failure);
        }
    };
    let trace = outcome.trace.as_ref().context("the run kept no trace")?;
    let verified = if args.no_verify {
        None
    } else {
        match engine.verify("run-1", trace) {
            Ok(()) => Some(true),
            Err(e) => {
                eprintln!("error: {e}");
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
            "verified": verified,
        });
        if args.trace {
            doc["trace"] = trace.to_json(engine.program(), engine.workflow());
        }
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        if args.trace {
            print!("{}", trace.render(engine.program(), engine.workflow()));
        }
        print_results(&outcome.results, types);
        if verified == Some(true) {
            eprintln!(
                "verified: the run ({} events) is a run of `{}`",
                trace.entries.len(),
                engine.workflow().name
            );
        }
    }
    Ok(ExitStatus::Success)
}

/// Prints results as `name = value`: text as it is, other values as JSON.
pub fn print_results(results: &[(String, troupe_check::Value)], types: &troupe_check::TypeTable) {
    for (name, value) in results {
        let shown = match value {
            troupe_check::Value::Text(s) => s.to_string(),
            other => other.to_json(types).to_string(),
        };
        println!("{name} = {shown}");
    }
}

/// The CLI's backends for a run: the LLM router, MCP tools, mock values for
/// `extern`s without host code (said on stderr), the workflow and deadline.
pub fn configure(
    builder: EngineBuilder,
    workflow: Option<&str>,
    args: &RunArgs,
) -> Result<EngineBuilder> {
    let router = llm_router(args.llm.as_deref(), &args.llm_for)?;
    let tools = troupe_mcp::McpToolHost::for_program(builder.program());
    let mut builder = builder
        .llm(router)
        .tools(Arc::new(tools))
        .mock_unbound_externs(Arc::new(MockBackend::new()));
    if let Some(name) = workflow {
        builder = builder.workflow(name);
    }
    if let Some(t) = args.timeout {
        builder = builder.default_timeout(t);
    }
    let mocked = builder.unbound_externs();
    if !mocked.is_empty() {
        eprintln!(
            "note: no host code is registered for {}; using mock values",
            mocked.join(", ")
        );
    }
    Ok(builder)
}

/// Verifies a well-typed file against the contracts of the tools it calls;
/// renders the findings, and refuses to run on an error (a transaction
/// without a person's confirmation, a requirement that does not hold).
pub fn contracts_allow(file: &std::path::Path, text: &str, color: ColorChoice) -> bool {
    let Some(program) = troupe_check::check_text(text).0 else {
        return true;
    };
    let base = file.parent().unwrap_or(std::path::Path::new("."));
    let findings = troupe_contracts::verify_workflows_in_source(&program, text, base);
    let errors: Vec<_> = findings.into_iter().filter(|d| d.is_error()).collect();
    if errors.is_empty() {
        return true;
    }
    let shown = file.display().to_string();
    let mut buf = Vec::new();
    render::render_text(
        &FileReport {
            path: &shown,
            text,
            diagnostics: &errors,
        },
        color.enabled_for_stderr(),
        &mut buf,
    );
    eprint!("{}", String::from_utf8_lossy(&buf));
    eprintln!("error: {shown} breaks the contracts of the tools it calls; nothing was run");
    false
}

/// The LLM router from `troupe.toml` (if any) and the command line.
pub fn llm_router(default: Option<&str>, overrides: &[String]) -> Result<Arc<dyn LlmBackend>> {
    let config = LlmConfig::discover(std::env::current_dir()?)?;
    let overrides = overrides
        .iter()
        .map(|s| parse_override(s))
        .collect::<Result<Vec<_>, _>>()?;
    let router = Router::from_config(&config, &overrides, default)?;
    if router.uses_mock_by_default() {
        eprintln!("note: no model configured; using the mock model (choose one with --llm SPEC)");
    }
    Ok(Arc::new(router))
}

fn human_inbox(answers: Option<&std::path::Path>) -> Result<Arc<dyn HumanInbox>> {
    Ok(match answers {
        Some(path) => Arc::new(ScriptedHumans::from_file(path).map_err(anyhow::Error::msg)?),
        None if std::io::stdin().is_terminal() => Arc::new(TerminalInbox::default()),
        None => Arc::new(NoHumans),
    })
}
