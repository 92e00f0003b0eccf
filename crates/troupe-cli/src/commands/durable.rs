//! Durable runs: `run --store`, `runs`, `status`, `trace`, `tasks`, `answer`,
//! `resume`, `resolve`, `verify`.

use crate::ExitStatus;
use crate::commands::run::RunArgs;
use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use troupe_check::Value;
use troupe_llm::MockBackend;
use troupe_runtime::{Engine, EngineBuilder, RunError, RunOptions};
use troupe_store::{Durability, NewRun, Store, StoreInbox};

/// The store used when `--store` names none.
pub const DEFAULT_STORE: &str = ".troupe/troupe.db";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum DurabilityArg {
    /// `synchronous=FULL`: every durable record survives a power loss.
    #[default]
    Full,
    /// `synchronous=NORMAL`: survives a crash of troupe; a power loss may
    /// lose the last commits. Faster.
    Normal,
}

impl From<DurabilityArg> for Durability {
    fn from(d: DurabilityArg) -> Durability {
        match d {
            DurabilityArg::Full => Durability::Full,
            DurabilityArg::Normal => Durability::Normal,
        }
    }
}

/// `--store DB`, for the commands that read a store.
#[derive(Debug, Args)]
pub struct StoreArg {
    /// The store (an SQLite file).
    #[arg(long, value_name = "DB", default_value = DEFAULT_STORE)]
    pub store: PathBuf,
}

impl StoreArg {
    fn open(&self) -> Result<Store> {
        if !self.store.exists() {
            bail!(
                "no store at {}; runs are recorded with `troupe run FILE --store {}`",
                self.store.display(),
                self.store.display()
            );
        }
        Ok(Store::open(&self.store, Durability::Full)?)
    }
}

fn run_id(text: &str) -> Result<i64> {
    Store::parse_run_id(text).with_context(|| format!("`{text}` is not a run id (e.g. run-3 or 3)"))
}

/// Builds the engine of a recorded or new run, with the CLI's backends.
fn engine_for(
    source: &str,
    file: &str,
    workflow: Option<&str>,
    args: &RunArgs,
    inbox: StoreInbox,
) -> Result<Engine> {
    let builder = EngineBuilder::from_source(source).map_err(|d| {
        anyhow::anyhow!(
            "{file} does not check ({} diagnostics); run `troupe check {file}`",
            d.len()
        )
    })?;
    let builder = crate::commands::run::configure(builder, workflow, args)?.humans(Arc::new(inbox));
    Ok(builder.build()?)
}

fn inbox(store: &Store, run: i64, answers: Option<&Path>) -> Result<StoreInbox> {
    let mut inbox = StoreInbox::new(store.clone(), run).on_wait(Arc::new(
        |id: &str, task: &troupe_runtime::HumanTask| {
            let how = match task.answer {
                troupe_check::ir::AnswerKind::Confirm => "--yes or --no",
                troupe_check::ir::AnswerKind::Select => "--value CHOICE",
                _ => "--value TEXT",
            };
            eprintln!(
                "waiting for {id} ({} at {}): answer with `troupe answer {id} {how}`",
                task.action, task.lifeline
            );
        },
    ));
    if let Some(path) = answers {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        match serde_json::from_str(&text)
            .with_context(|| format!("{} is not JSON", path.display()))?
        {
            serde_json::Value::Object(map) => inbox = inbox.scripted(map),
            _ => bail!(
                "{}: expected a JSON object keyed by `Lifeline.action` or `action`",
                path.display()
            ),
        }
    }
    Ok(inbox)
}

/// Runs (or resumes) `run` to its end in this process, recording it.
fn drive(
    store: &Store,
    run: i64,
    engine: &Engine,
    inputs: Vec<Value>,
    seed: u64,
) -> Result<Result<Vec<(String, Value)>, RunError>> {
    store.claim(run)?;
    let journal = store.journal(run, Arc::new(engine.types().clone()))?;
    let replayed = journal.recorded_steps();
    if replayed > 0 {
        eprintln!(
            "resuming {}: {replayed} recorded step(s) will not be redone",
            Store::run_name(run)
        );
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let options = RunOptions {
        run_id: Store::run_name(run),
        seed,
        trace: false,
        journal: Some(journal),
        ..RunOptions::default()
    };
    let outcome = rt.block_on(engine.run(inputs, options));
    Ok(match outcome {
        Ok(o) => Ok(o.results),
        Err(e) => {
            if let RunError::NeedsResolution { .. } = &e {
                store.needs_resolution(run, &e.to_string())?;
            }
            Err(e)
        }
    })
}

fn report(
    store: &Store,
    run: i64,
    engine: &Engine,
    outcome: Result<Vec<(String, Value)>, RunError>,
    json: bool,
) -> Result<ExitStatus> {
    let name = Store::run_name(run);
    match outcome {
        Ok(results) => {
            let verified = verify_recorded(store, run, engine).map(|()| true);
            if json {
                let results: serde_json::Map<_, _> = results
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_json(engine.types())))
                    .collect();
                let doc = serde_json::json!({ "run": name, "status": "done", "results": results, "verified": verified.is_ok() });
                println!("{}", serde_json::to_string_pretty(&doc)?);
            } else {
                crate::commands::run::print_results(&results, engine.types());
            }
            match verified {
                Ok(_) => {
                    eprintln!(
                        "{name} done; verified: the recorded run is a run of `{}`",
                        engine.workflow().name
                    );
                    Ok(ExitStatus::Success)
                }
                Err(e) => {
                    eprintln!("error: {e:#}");
                    Ok(ExitStatus::Failure)
                }
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            Ok(ExitStatus::Failure)
        }
    }
}

/// Checks a recorded run against ⟦P⟧.
fn verify_recorded(store: &Store, run: i64, engine: &Engine) -> Result<()> {
    let (events, _) = store.events(run, 0)?;
    let trace = troupe_runtime::Trace::from_events(0, events);
    engine.verify(&Store::run_name(run), &trace)?;
    Ok(())
}

/// `troupe run FILE --store DB`.
pub fn run(args: &RunArgs, store_path: &Path) -> Result<ExitStatus> {
    let store = Store::open(store_path, args.durability.into())?;
    let file = args.file.display().to_string();
    let source =
        std::fs::read_to_string(&args.file).with_context(|| format!("cannot read {file}"))?;
    let (program, diagnostics) = troupe_check::check_text(&source);
    let Some(program) = program else {
        eprintln!(
            "error: {file} does not check ({} problem(s)); see `troupe check {file}`",
            diagnostics.len()
        );
        return Ok(ExitStatus::Failure);
    };
    let wf = match &args.workflow {
        Some(name) => program
            .workflow(name)
            .with_context(|| format!("{file} has no workflow `{name}`"))?,
        None => program
            .workflows
            .first()
            .context("the file declares no workflow")?,
    };
    let (fingerprint, canonical) = troupe_store::fingerprint(&program, wf);
    if !crate::commands::run::contracts_allow(&args.file, &source, crate::ColorChoice::Auto) {
        return Ok(ExitStatus::Failure);
    }

    // Unfinished runs of this workflow whose process is gone are resumed first.
    if !args.new {
        let stalled: Vec<_> = store
            .runs(Some("stalled"))?
            .into_iter()
            .filter(|r| r.workflow == wf.name && r.file.as_deref() == Some(file.as_str()))
            .collect();
        if !stalled.is_empty() {
            let mut status = ExitStatus::Success;
            let details = stalled
                .iter()
                .map(|r| store.run(r.id))
                .collect::<Result<Vec<_>, _>>()?;
            // Say first which runs cannot be resumed, then resume the others.
            let (same, changed): (Vec<_>, Vec<_>) = details
                .into_iter()
                .partition(|d| d.fingerprint == fingerprint);
            for detail in changed {
                let name = &detail.summary.name;
                eprintln!(
                    "error: {name} was started from another version of {file}; {}.\n  hint: `troupe resume {name}` continues it with the recorded source, \
                     or `troupe run {file} --store {} --new` starts a new run",
                    troupe_store::explain_change(&detail.canonical, &canonical),
                    store_path.display()
                );
                status = ExitStatus::Failure;
            }
            for detail in same {
                let run = detail.summary.id;
                eprintln!(
                    "resuming {} (its process is gone); pass --new to start another run",
                    detail.summary.name
                );
                let engine = engine_for(
                    &detail.source,
                    &file,
                    Some(&wf.name),
                    args,
                    inbox(&store, run, args.answers.as_deref())?,
                )?;
                let outcome = drive(
                    &store,
                    run,
                    &engine,
                    detail.input_values.clone(),
                    detail.seed,
                )?;
                if report(&store, run, &engine, outcome, args.json)? != ExitStatus::Success {
                    status = ExitStatus::Failure;
                }
            }
            return Ok(status);
        }
    }

    let json_inputs = args
        .input_json
        .as_deref()
        .map(serde_json::from_str::<serde_json::Value>)
        .transpose()
        .context("--input-json is not valid JSON")?;
    // Parse the inputs with a throwaway engine before recording anything.
    let probe = EngineBuilder::from_program(program.clone())
        .workflow(&wf.name)
        .mock_unbound_externs(Arc::new(MockBackend::new()))
        .build()?;
    let inputs = probe.parse_inputs(&args.inputs, json_inputs.as_ref())?;
    let inputs_json: serde_json::Map<_, _> = wf
        .inputs
        .iter()
        .zip(&inputs)
        .map(|(v, value)| (wf.var(*v).name.clone(), value.to_json(&program.types)))
        .collect();
    let run = store.create_run(&NewRun {
        workflow: wf.name.clone(),
        file: Some(file.clone()),
        source: source.clone(),
        fingerprint,
        canonical,
        inputs_json: serde_json::Value::Object(inputs_json).to_string(),
        inputs: inputs.clone(),
        seed: args.seed,
        lifelines: wf.lifelines.len(),
        llm: args.llm.clone().unwrap_or_else(|| "default".into()),
    })?;
    let name = Store::run_name(run);
    if args.detach {
        let log = store_path.with_file_name(format!("{name}.log"));
        let out = std::fs::File::create(&log)
            .with_context(|| format!("cannot create {}", log.display()))?;
        let mut cmd = std::process::Command::new(std::env::current_exe()?);
        cmd.arg("resume").arg(&name).arg("--store").arg(store_path);
        if let Some(llm) = &args.llm {
            cmd.arg("--llm").arg(llm);
        }
        for o in &args.llm_for {
            cmd.arg("--llm-for").arg(o);
        }
        if let Some(a) = &args.answers {
            cmd.arg("--answers").arg(a);
        }
        use std::os::unix::process::CommandExt;
        cmd.stdin(std::process::Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .process_group(0);
        let child = cmd.spawn().context("cannot start the background run")?;
        println!("{name}");
        eprintln!(
            "started {name} in the background (pid {}); follow it with `troupe status {name}`, its log is {}",
            child.id(),
            log.display()
        );
        return Ok(ExitStatus::Success);
    }
    eprintln!("recording {name} in {}", store_path.display());
    let engine = engine_for(
        &source,
        &file,
        Some(&wf.name),
        args,
        inbox(&store, run, args.answers.as_deref())?,
    )?;
    let outcome = drive(&store, run, &engine, inputs, args.seed)?;
    report(&store, run, &engine, outcome, args.json)
}

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The run, e.g. `run-3`.
    pub run: String,
    #[command(flatten)]
    pub store: StoreArg,
    /// Model options, as for `troupe run`.
    #[arg(long, value_name = "SPEC")]
    pub llm: Option<String>,
    #[arg(long = "llm-for", value_name = "KEY=SPEC")]
    pub llm_for: Vec<String>,
    /// Answers to human tasks (JSON keyed by `Lifeline.action` or `action`).
    #[arg(long, value_name = "FILE")]
    pub answers: Option<PathBuf>,
    #[arg(long)]
    pub json: bool,
}

/// `troupe resume RUN`: continue a run with its recorded source.
pub fn resume(args: &ResumeArgs) -> Result<ExitStatus> {
    let store = args.store.open()?;
    let run = run_id(&args.run)?;
    let detail = store.run(run)?;
    match detail.summary.status.as_str() {
        "done" | "failed" => {
            eprintln!(
                "{} is {} already; nothing to resume",
                detail.summary.name, detail.summary.status
            );
            return Ok(ExitStatus::Success);
        }
        "running" | "waiting" => bail!(
            "{} is being run by another process; wait for it, or stop that process first",
            detail.summary.name
        ),
        _ => {}
    }
    let run_args = RunArgs::for_resume(
        args.llm.clone(),
        args.llm_for.clone(),
        args.answers.clone(),
        args.json,
    );
    let file = detail
        .summary
        .file
        .clone()
        .unwrap_or_else(|| "(recorded source)".into());
    let engine = engine_for(
        &detail.source,
        &file,
        Some(&detail.summary.workflow),
        &run_args,
        inbox(&store, run, args.answers.as_deref())?,
    )?;
    let outcome = drive(
        &store,
        run,
        &engine,
        detail.input_values.clone(),
        detail.seed,
    )?;
    report(&store, run, &engine, outcome, args.json)
}

#[derive(Debug, Args)]
pub struct RunsArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// Only runs with this status: running, waiting, stalled, needs_resolution, done, failed.
    #[arg(long, value_name = "S")]
    pub status: Option<String>,
    #[arg(long)]
    pub json: bool,
}

pub fn runs(args: &RunsArgs) -> Result<ExitStatus> {
    let store = args.store.open()?;
    let runs = store.runs(args.status.as_deref())?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&runs)?);
    } else if runs.is_empty() {
        eprintln!("no runs");
    } else {
        println!(
            "{:<10} {:<18} {:<17} {:<24} result",
            "RUN", "WORKFLOW", "STATUS", "UPDATED"
        );
        for r in runs {
            let result = match (&r.result, &r.error) {
                (Some(v), _) => v.to_string(),
                (None, Some(e)) => e.clone(),
                _ => String::new(),
            };
            let result: String = result.chars().take(60).collect();
            println!(
                "{:<10} {:<18} {:<17} {:<24} {result}",
                r.name, r.workflow, r.status, r.updated_at
            );
        }
    }
    Ok(ExitStatus::Success)
}

#[derive(Debug, Args)]
pub struct RunRefArgs {
    /// The run, e.g. `run-3`.
    pub run: String,
    #[command(flatten)]
    pub store: StoreArg,
    #[arg(long)]
    pub json: bool,
}

pub fn status(args: &RunRefArgs) -> Result<ExitStatus> {
    let store = args.store.open()?;
    let detail = store.run(run_id(&args.run)?)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&detail)?);
        return Ok(ExitStatus::Success);
    }
    let s = &detail.summary;
    println!("{}  {}  {}", s.name, s.workflow, s.status);
    println!("  file      {}", s.file.as_deref().unwrap_or("-"));
    println!("  inputs    {}", detail.inputs);
    println!("  model     {}", detail.llm.as_deref().unwrap_or("-"));
    println!("  created   {}   updated {}", s.created_at, s.updated_at);
    println!(
        "  events    {}   steps {}",
        detail.events,
        detail.steps.len()
    );
    for step in &detail.steps {
        let out = step
            .outputs
            .as_ref()
            .map(|o| o.to_string())
            .unwrap_or_default();
        println!(
            "    {:<8} {:<7} {} {}",
            step.kind,
            step.status,
            step.key,
            out.chars().take(60).collect::<String>()
        );
    }
    if let Some(r) = &s.result {
        println!("  result    {r}");
    }
    if let Some(e) = &s.error {
        println!("  error     {e}");
    }
    Ok(ExitStatus::Success)
}

#[derive(Debug, Args)]
pub struct TraceArgs {
    /// The run, e.g. `run-3`.
    pub run: String,
    #[command(flatten)]
    pub store: StoreArg,
    /// Keep printing events as the run records them, until it ends.
    #[arg(long)]
    pub follow: bool,
    #[arg(long)]
    pub json: bool,
}

/// The recorded run's program, rebuilt from its recorded source.
fn recorded_engine(detail: &troupe_store::RunDetail) -> Result<Engine> {
    let builder = EngineBuilder::from_source(&detail.source)
        .map_err(|_| anyhow::anyhow!("the recorded source no longer checks"))?;
    Ok(builder
        .workflow(&detail.summary.workflow)
        .mock_unbound_externs(Arc::new(MockBackend::new()))
        .build()?)
}

pub fn trace(args: &TraceArgs) -> Result<ExitStatus> {
    let store = args.store.open()?;
    let run = run_id(&args.run)?;
    let detail = store.run(run)?;
    let engine = recorded_engine(&detail)?;
    let mut next = 0;
    let mut time = 0u64;
    loop {
        let (events, after) = store.events(run, next)?;
        next = after;
        let trace = troupe_runtime::Trace::from_events(time, events);
        time += trace.entries.len() as u64;
        if args.json {
            for e in trace
                .to_json(engine.program(), engine.workflow())
                .as_array()
                .into_iter()
                .flatten()
            {
                println!("{e}");
            }
        } else {
            print!("{}", trace.render(engine.program(), engine.workflow()));
        }
        if !args.follow {
            break;
        }
        let status = store.run(run)?.summary.status;
        if matches!(
            status.as_str(),
            "done" | "failed" | "stalled" | "needs_resolution"
        ) && store.events(run, next)?.0.is_empty()
        {
            break;
        }
        // Short-lived reads: a long-lived reader would hold back WAL checkpoints.
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    Ok(ExitStatus::Success)
}

pub fn verify(args: &RunRefArgs) -> Result<ExitStatus> {
    let store = args.store.open()?;
    let run = run_id(&args.run)?;
    let detail = store.run(run)?;
    let engine = recorded_engine(&detail)?;
    match verify_recorded(&store, run, &engine) {
        Ok(()) => {
            let done = detail.summary.status == "done";
            println!(
                "{}: the recorded execution ({} events) is {} of `{}`",
                detail.summary.name,
                detail.events,
                if done {
                    "a complete run"
                } else {
                    "a prefix of a run"
                },
                detail.summary.workflow
            );
            Ok(ExitStatus::Success)
        }
        Err(e) if detail.summary.status != "done" => {
            // An unfinished run is checked as a prefix.
            let _ = e;
            println!(
                "{}: unfinished ({}); recorded {} events so far",
                detail.summary.name, detail.summary.status, detail.events
            );
            Ok(ExitStatus::Success)
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            Ok(ExitStatus::Failure)
        }
    }
}

#[derive(Debug, Args)]
pub struct TasksArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// Include answered tasks.
    #[arg(long)]
    pub all: bool,
    #[arg(long)]
    pub json: bool,
}

pub fn tasks(args: &TasksArgs) -> Result<ExitStatus> {
    let store = args.store.open()?;
    let tasks = store.tasks(args.all)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&tasks)?);
    } else if tasks.is_empty() {
        eprintln!("no pending tasks");
    } else {
        for t in tasks {
            let answer = t
                .answer
                .as_deref()
                .map(|a| format!(" = {a} (by {})", t.answered_by.as_deref().unwrap_or("?")))
                .unwrap_or_default();
            println!(
                "{:<8} {:<8} {:<8} {}/{}  {}{answer}",
                t.id, t.run, t.kind, t.lifeline, t.action, t.status
            );
            for line in t.prompt.lines() {
                println!("    {line}");
            }
            if !t.options.is_empty() {
                println!("    choices: {}", t.options.join(", "));
            }
        }
    }
    Ok(ExitStatus::Success)
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("answer").required(true).args(["yes", "no", "value", "json"])))]
pub struct AnswerArgs {
    /// The task, e.g. `task-4` (see `troupe tasks`).
    pub task: String,
    #[command(flatten)]
    pub store: StoreArg,
    /// Confirm.
    #[arg(long)]
    pub yes: bool,
    /// Decline.
    #[arg(long)]
    pub no: bool,
    /// The answer as text: a choice of a select, or the text of an input or edit.
    #[arg(long, value_name = "V")]
    pub value: Option<String>,
    /// The answer as JSON (records, lists, numbers).
    #[arg(long, value_name = "J")]
    pub json: Option<String>,
    /// Who answers (recorded with the answer).
    #[arg(long, default_value = "cli")]
    pub by: String,
}

pub fn answer(args: &AnswerArgs) -> Result<ExitStatus> {
    let store = args.store.open()?;
    let task = store.task(&args.task)?;
    let answer = if args.yes {
        serde_json::Value::Bool(true)
    } else if args.no {
        serde_json::Value::Bool(false)
    } else if let Some(v) = &args.value {
        if task.kind == "select" && !task.options.contains(v) {
            bail!(
                "`{v}` is not a choice of {}; the choices are {}",
                task.id,
                task.options.join(", ")
            );
        }
        serde_json::Value::String(v.clone())
    } else {
        let text = args.json.as_deref().unwrap_or("null");
        serde_json::from_str(text).context("--json is not valid JSON")?
    };
    if task.kind == "confirm" && !answer.is_boolean() {
        bail!("{} asks for a confirmation: answer --yes or --no", task.id);
    }
    match store.answer(&args.task, &answer, &args.by) {
        Ok(t) => {
            eprintln!(
                "answered {} ({}/{}) for {}",
                t.id, t.lifeline, t.action, t.run
            );
            Ok(ExitStatus::Success)
        }
        Err(troupe_store::StoreError::Conflict(msg)) => {
            eprintln!("error: {msg}");
            Ok(ExitStatus::Failure)
        }
        Err(e) => Err(e.into()),
    }
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("how").required(true).args(["done", "retry"])))]
pub struct ResolveArgs {
    /// The run, e.g. `run-3`.
    pub run: String,
    /// The step, e.g. `Ledger/record_decision#0` (see `troupe status RUN`).
    pub step: String,
    #[command(flatten)]
    pub store: StoreArg,
    /// The effect did happen: record these outputs (a JSON array, one item
    /// per output, or the value of a single output).
    #[arg(long, value_name = "JSON")]
    pub done: Option<String>,
    /// The effect did not happen: perform it again when the run resumes.
    #[arg(long)]
    pub retry: bool,
}

pub fn resolve(args: &ResolveArgs) -> Result<ExitStatus> {
    let store = args.store.open()?;
    let run = run_id(&args.run)?;
    let detail = store.run(run)?;
    match &args.done {
        None => store.resolve(run, &args.step, None)?,
        Some(text) => {
            let engine = recorded_engine(&detail)?;
            let key = troupe_runtime::StepKey::parse(&args.step)
                .context("a step looks like Lifeline/action#0")?;
            let action = engine
                .program()
                .actions
                .iter()
                .find(|a| a.name == key.action)
                .with_context(|| format!("no action `{}`", key.action))?;
            let json: serde_json::Value =
                serde_json::from_str(text).context("--done is not valid JSON")?;
            let items = match (&json, action.outputs.len()) {
                (serde_json::Value::Array(items), n) if n != 1 => items.clone(),
                (j, _) => vec![j.clone()],
            };
            if items.len() != action.outputs.len() {
                bail!(
                    "`{}` has {} output(s); --done gave {}",
                    action.name,
                    action.outputs.len(),
                    items.len()
                );
            }
            let values = items
                .iter()
                .zip(&action.outputs)
                .map(|(j, p)| {
                    Value::from_json(j, &p.ty, engine.types())
                        .map_err(|e| anyhow::anyhow!("output `{}`: {e}", p.name))
                })
                .collect::<Result<Vec<_>>>()?;
            store.resolve(
                run,
                &args.step,
                Some((&values, serde_json::Value::Array(items))),
            )?;
        }
    }
    eprintln!(
        "settled {} of {}; continue it with `troupe resume {}`",
        args.step, detail.summary.name, detail.summary.name
    );
    Ok(ExitStatus::Success)
}
