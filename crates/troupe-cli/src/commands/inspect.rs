//! Reading recorded runs: `runs`, `status`, `trace`, `verify`, `tasks`.
//! Argument parsing and rendering only; the store and the host answer.

use crate::ExitStatus;
use crate::commands::durable::{StoreArg, run_id};
use crate::out;
use crate::terminal::sanitize;
use anyhow::Result;
use clap::Args;
use troupe_host::Compiled;
use troupe_store::{RunStatus, Store};

#[derive(Debug, Args)]
pub struct RunsArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// Only runs with this status.
    #[arg(long, value_name = "S", value_parser = parse_status)]
    pub status: Option<RunStatus>,
    /// Delete the ended runs (done, failed, cancelled) beyond the newest
    /// KEEP, with their events, steps and tasks.
    #[arg(long, value_name = "KEEP")]
    pub prune: Option<usize>,
    /// Prune every run's history to its last EVENTS events at least, from
    /// a checkpoint on (steps, tasks and results stay; `troupe verify`
    /// then checks the retained window). Runs keep doing so if started
    /// with `--history-keep`.
    #[arg(long, value_name = "EVENTS", value_parser = crate::commands::durable::parse_history_keep)]
    pub history_keep: Option<u64>,
    #[arg(long)]
    pub json: bool,
}

fn parse_status(s: &str) -> Result<RunStatus, String> {
    s.parse()
}

pub fn runs(args: &RunsArgs) -> Result<ExitStatus> {
    if let Some(keep) = args.history_keep {
        let store = args.store.open()?;
        let mut pruned = Vec::new();
        for r in store.runs(None)? {
            let n = store.prune_history(r.id, keep)?;
            if n > 0 {
                pruned.push((r.name, n));
            }
        }
        let total: u64 = pruned.iter().map(|(_, n)| n).sum();
        crate::note!(
            "pruned {total} event(s) of {} run(s), keeping at least the last {keep} of each",
            pruned.len()
        );
        if args.json {
            let doc: serde_json::Map<String, serde_json::Value> = pruned
                .into_iter()
                .map(|(name, n)| (name, serde_json::json!(n)))
                .collect();
            out::println(&serde_json::json!({ "pruned_events": doc }).to_string())?;
        }
        if args.prune.is_none() {
            return Ok(ExitStatus::Success);
        }
    }
    if let Some(keep) = args.prune {
        let host = args.store.host()?;
        let ids = host.prune(keep)?;
        crate::note!("deleted {} ended run(s), kept the newest {keep}", ids.len());
        if args.json {
            let names: Vec<String> = ids.into_iter().map(Store::run_name).collect();
            out::println(&serde_json::json!({ "deleted": names }).to_string())?;
        }
        return Ok(ExitStatus::Success);
    }
    let store = args.store.open()?;
    let runs = store.runs(args.status)?;
    let totals = store.run_totals()?;
    if args.json {
        let docs: Vec<serde_json::Value> = runs
            .iter()
            .map(|r| {
                let mut doc = serde_json::to_value(r).unwrap_or_default();
                doc["totals"] =
                    serde_json::to_value(totals.get(&r.id).cloned().unwrap_or_default())
                        .unwrap_or_default();
                doc
            })
            .collect();
        out::println(&serde_json::to_string_pretty(&docs)?)?;
    } else if runs.is_empty() {
        crate::note!("no runs");
    } else {
        out::println(&format!(
            "{:<10} {:<18} {:<17} {:<24} {:>9} {:>9} {:>8} {:>8} result",
            "RUN", "WORKFLOW", "STATUS", "UPDATED", "TOKENS", "COST", "MODEL", "PEOPLE"
        ))?;
        for r in runs {
            let t = totals.get(&r.id).cloned().unwrap_or_default();
            let result = match (&r.result, &r.error) {
                (Some(v), _) => v.to_string(),
                (None, Some(e)) => e.clone(),
                _ => String::new(),
            };
            let result: String = result.chars().take(60).collect();
            // A run moved to another version (`troupe upgrade`) says which.
            let workflow = match r.version {
                1 => sanitize(&r.workflow).into_owned(),
                v => format!("{}@v{v}", sanitize(&r.workflow)),
            };
            out::println(&format!(
                "{:<10} {:<18} {:<17} {:<24} {:>9} {:>9} {:>8} {:>8} {}",
                r.name,
                workflow,
                r.status.as_str(),
                r.updated_at,
                t.input_tokens + t.output_tokens,
                t.cost_usd
                    .map_or_else(|| "-".to_owned(), |c| format!("${c:.4}")),
                short_duration(t.model_ms),
                short_duration(t.human_wait_ms),
                sanitize(&result)
            ))?;
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

/// "fired", or when a timer falls due: in how long, or that it is due.
fn timer_state(t: &troupe_store::TimerRow) -> String {
    if t.fired {
        return "fired".to_owned();
    }
    match t.due_in_ms {
        ms if ms <= 0 => "due (wakes at the next step or sweep)".to_owned(),
        ms => format!(
            "due in {}",
            humantime::format_duration(std::time::Duration::from_millis(ms as u64 / 1000 * 1000))
        ),
    }
}

/// `1.2s`, `3m04s`, `-` for nothing.
fn short_duration(ms: u64) -> String {
    match ms {
        0 => "-".to_owned(),
        ms if ms < 60_000 => format!("{:.1}s", ms as f64 / 1000.0),
        ms => format!("{}m{:02}s", ms / 60_000, (ms % 60_000) / 1000),
    }
}

pub fn status(args: &RunRefArgs) -> Result<ExitStatus> {
    let store = args.store.open()?;
    let run = run_id(&args.run)?;
    let detail = store.run(run)?;
    let calls = store.llm_calls(run)?;
    let totals = store.run_totals()?.remove(&run).unwrap_or_default();
    let chosen = troupe_host::chosen::chosen_calls(&detail, &store.run_tasks(run, false)?);
    let parts = store.parts(run)?;
    let timers = store.timers(run)?;
    if args.json {
        let mut doc = serde_json::to_value(&detail)?;
        if !timers.is_empty() {
            doc["timers"] = serde_json::to_value(&timers)?;
        }
        if !parts.is_empty() {
            doc["parts"] = serde_json::to_value(&parts)?;
            doc["messages_between_parts"] = store.crossed(run)?.into();
        }
        if detail.summary.version > 1 {
            doc["versions"] = serde_json::to_value(store.versions(run)?)?;
        }
        doc["llm_calls"] = serde_json::to_value(&calls)?;
        doc["tool_calls"] = serde_json::to_value(&chosen)?;
        doc["totals"] = serde_json::to_value(&totals)?;
        out::println(&serde_json::to_string_pretty(&doc)?)?;
        return Ok(ExitStatus::Success);
    }
    let s = &detail.summary;
    let mut text = format!("{}  {}  {}\n", s.name, sanitize(&s.workflow), s.status);
    text += &format!(
        "  file      {}\n",
        sanitize(s.file.as_deref().unwrap_or("-"))
    );
    text += &format!("  inputs    {}\n", sanitize(&detail.inputs.to_string()));
    text += &format!("  settings  {}\n", sanitize(&detail.settings.to_string()));
    text += &format!("  created   {}   updated {}\n", s.created_at, s.updated_at);
    if let Some(l) = &detail.lineage {
        text += &format!(
            "  forked    from {}{}\n",
            l.forked_from,
            l.at.as_deref()
                .map_or_else(String::new, |k| format!(", live from step {}", sanitize(k)))
        );
    }
    if s.version > 1 {
        for v in store.versions(run)? {
            text += &format!(
                "  version   {} {} ({}){}\n",
                v.version,
                sanitize(v.file.as_deref().unwrap_or("-")),
                &v.fingerprint[..v.fingerprint.len().min(12)],
                v.moved_at.map_or_else(
                    || ", current".to_owned(),
                    |at| format!(
                        ", moved on at {at} after {} event(s)",
                        v.cut.iter().map(|(_, n)| n).sum::<u64>()
                    )
                )
            );
        }
    }
    if let Some(owner) = &s.owner {
        text += &format!(
            "  owner     {owner} (lease for {} more)\n",
            humantime::format_duration(std::time::Duration::from_millis(
                s.lease_expires_in_ms.max(0) as u64 / 1000 * 1000
            ))
        );
    }
    // A placed run: where each part runs, and who drives it now.
    for p in &parts {
        let label = if p.label.is_empty() {
            "any worker".to_owned()
        } else {
            format!("label {}", sanitize(&p.label))
        };
        text += &format!(
            "  part {:<4} {:<18} {:<5} {}{}\n",
            p.part,
            label,
            p.status.as_str(),
            sanitize(&p.lifelines.join(", ")),
            p.owner
                .as_deref()
                .map(|o| format!("   (run by {})", sanitize(o)))
                .unwrap_or_default()
        );
    }
    if !parts.is_empty() {
        text += &format!(
            "  messages  {} between parts, through the store\n",
            store.crossed(run)?
        );
    }
    text += &format!(
        "  events    {}   steps {}\n",
        detail.events,
        detail.steps.len()
    );
    if detail.pruned > 0 {
        text += &format!(
            "  history   the first {} events pruned (--history-keep); {} kept from a checkpoint on\n",
            detail.pruned, detail.events
        );
    }
    for step in &detail.steps {
        let out = step
            .outputs
            .as_ref()
            .map(|o| o.to_string())
            .unwrap_or_default();
        text += &format!(
            "    {:<8} {:<7} {} {}\n",
            step.kind,
            step.status.as_str(),
            sanitize(&step.key),
            sanitize(&out.chars().take(60).collect::<String>())
        );
    }
    for t in &timers {
        text += &format!("  timer     {} {}\n", sanitize(&t.key), timer_state(t));
    }
    if !chosen.is_empty() {
        text += &format!("  tools     {} call(s) chosen by models\n", chosen.len());
        for c in &chosen {
            let line = troupe_host::chosen::describe(c);
            text += &format!(
                "    {}\n",
                sanitize(&line.chars().take(200).collect::<String>())
            );
        }
    }
    if !calls.is_empty() {
        text += &format!(
            "  models    {} call(s), {} tokens in ({} cached), {} out, {}, {} with models\n",
            totals.llm_calls,
            totals.input_tokens,
            totals.cached_input_tokens,
            totals.output_tokens,
            totals
                .cost_usd
                .map_or_else(|| "cost unknown".to_owned(), |c| format!("${c:.6}")),
            short_duration(totals.model_ms)
        );
        for c in &calls {
            let tokens = match (c.input_tokens, c.output_tokens) {
                (Some(i), Some(o)) => format!("{i}+{o} tokens"),
                _ => "no token counts".to_owned(),
            };
            text += &format!(
                "    {:<22} {:<24} {:>7}ms {:<18} {}{}\n",
                sanitize(&c.step),
                sanitize(&c.model),
                c.latency_ms,
                tokens,
                c.cost_usd.map_or_else(String::new, |c| format!("${c:.6}")),
                match (&c.error, c.retries.len()) {
                    (Some(e), _) => format!(
                        " failed: {}",
                        sanitize(&e.chars().take(80).collect::<String>())
                    ),
                    (None, 0) => String::new(),
                    (None, n) => format!(
                        " ({n} retried: {})",
                        sanitize(&c.retries.join("; ").chars().take(100).collect::<String>())
                    ),
                }
            );
        }
    }
    for t in &detail.pending_tasks {
        text += &format!(
            "  waits on  {} ({} at {}, a {} since {}): `troupe answer {} …`\n",
            t.id,
            sanitize(&t.action),
            sanitize(&t.lifeline),
            sanitize(&t.ty),
            t.created_at,
            t.id
        );
    }
    if s.status == RunStatus::NeedsResolution {
        for step in detail
            .steps
            .iter()
            .filter(|st| st.status == troupe_store::StepStatus::Started)
        {
            text += &format!(
                "  settle    `troupe resolve {} {} --done JSON` (it happened) or `--retry` (it did not)\n",
                s.name, step.key
            );
        }
    }
    text += &plans_text(&detail.steps, "  ");
    if let Some(r) = &s.result {
        text += &format!("  result    {}\n", sanitize(&r.to_string()));
    }
    if let Some(e) = &s.error {
        text += &format!("  error     {}\n", sanitize(e));
    }
    out::print(&text)?;
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

pub fn trace(args: &TraceArgs) -> Result<ExitStatus> {
    let store = args.store.open()?;
    let run = run_id(&args.run)?;
    let detail = store.run(run)?;
    let compiled = Compiled::recorded(&detail)?;
    let (program, workflow) = (&compiled.program, compiled.workflow());
    let mut next = 0;
    // Logical time counts the pruned events too.
    let mut time = detail.pruned;
    if detail.pruned > 0 {
        crate::note!(
            "note: the first {} events of {} were pruned (--history-keep); showing the retained {}",
            detail.pruned,
            detail.summary.name,
            detail.events
        );
    }
    loop {
        // A page at a time: a long run is never in memory at once.
        let (events, after) = store.events_page(run, next, 16)?;
        let more = after > next && !events.is_empty();
        next = after;
        let trace = troupe_runtime::Trace::from_events(time, events);
        time += trace.entries.len() as u64;
        if args.json {
            for e in trace
                .to_json(program, workflow)
                .as_array()
                .into_iter()
                .flatten()
            {
                out::println(&e.to_string())?;
            }
        } else {
            out::print(&sanitize_lines(&trace.render(program, workflow)))?;
        }
        if more {
            continue;
        }
        if !args.follow {
            break;
        }
        let status = store.run(run)?.summary.status;
        if (status.is_final() || matches!(status, RunStatus::Stalled | RunStatus::NeedsResolution))
            && store.events_page(run, next, 1)?.0.is_empty()
        {
            break;
        }
        // Short-lived reads: a long-lived reader would hold back WAL checkpoints.
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    // The tool calls models chose, inside their actions (tool, arguments,
    // result, who confirmed it).
    let chosen = troupe_host::chosen::chosen_calls(&detail, &store.run_tasks(run, false)?);
    if args.json {
        for c in &chosen {
            let mut doc = serde_json::to_value(c)?;
            doc["kind"] = "tool_call".into();
            out::println(&doc.to_string())?;
        }
    } else if !chosen.is_empty() {
        let mut text = format!("tool calls chosen by models ({}):\n", chosen.len());
        for c in &chosen {
            text += &format!("  {}\n", troupe_host::chosen::describe(c));
        }
        out::print(&sanitize_lines(&text))?;
    }
    // The plans of `planner` calls and their nested runs, after the events.
    let steps = store.run(run)?.steps;
    if args.json {
        for p in plans(&steps) {
            let doc = serde_json::json!({
                "kind": "plan",
                "step": p.step,
                "source": p.source,
                "run": p.run,
            });
            out::println(&doc.to_string())?;
        }
    } else {
        out::print(&sanitize_lines(&plans_text(&steps, "")))?;
    }
    // The model calls, after the events: what was asked, answered, spent.
    let calls = store.llm_calls(run)?;
    if args.json {
        for c in &calls {
            let mut doc = serde_json::to_value(c)?;
            doc["kind"] = "llm_call".into();
            out::println(&doc.to_string())?;
        }
    } else if !calls.is_empty() {
        let mut text = format!("model calls ({}):\n", calls.len());
        for c in &calls {
            text += &format!(
                "  {} {} {}ms in {} / out {} tokens{}{}\n    prompt: {}\n    answer: {}\n",
                c.step,
                c.model,
                c.latency_ms,
                c.input_tokens.map_or_else(|| "?".into(), |n| n.to_string()),
                c.output_tokens
                    .map_or_else(|| "?".into(), |n| n.to_string()),
                c.cost_usd.map_or_else(String::new, |x| format!(" ${x:.6}")),
                c.error
                    .as_ref()
                    .map_or_else(String::new, |e| format!(" failed: {e}")),
                c.prompt
                    .chars()
                    .take(200)
                    .collect::<String>()
                    .replace('\n', " "),
                c.answer
                    .as_deref()
                    .unwrap_or("-")
                    .chars()
                    .take(200)
                    .collect::<String>()
                    .replace('\n', " "),
            );
        }
        out::print(&sanitize_lines(&text))?;
    }
    Ok(ExitStatus::Success)
}

/// The accepted plan of one `planner` call, and its nested run's trace
/// once it ended.
struct Plan {
    /// The planner call, e.g. `Desk/solve#0`.
    step: String,
    source: String,
    run: Option<String>,
}

/// The plans recorded among a run's steps (`…/plan#0` and `…/run#0` under
/// the planner step's key, kind `plan`).
fn plans(steps: &[troupe_store::StepRow]) -> Vec<Plan> {
    let text_of = |s: &troupe_store::StepRow| {
        s.outputs
            .as_ref()
            .and_then(|o| o.get(0))
            .and_then(|v| v.as_str())
            .map(str::to_owned)
    };
    let mut out: Vec<Plan> = Vec::new();
    for s in steps.iter().filter(|s| s.kind == "plan") {
        if let Some(call) = s.key.strip_suffix("/plan#0")
            && let Some(source) = text_of(s)
        {
            out.push(Plan {
                step: call.to_owned(),
                source,
                run: None,
            });
        }
    }
    for s in steps.iter().filter(|s| s.kind == "plan") {
        if let Some(call) = s.key.strip_suffix("/run#0")
            && let Some(p) = out.iter_mut().find(|p| p.step == call)
        {
            p.run = text_of(s);
        }
    }
    out
}

fn plans_text(steps: &[troupe_store::StepRow], indent: &str) -> String {
    let mut text = String::new();
    for p in plans(steps) {
        text += &format!("{indent}plan of {}:\n", p.step);
        for line in p.source.lines() {
            text += &format!("{indent}  | {}\n", sanitize(line));
        }
        match &p.run {
            Some(run) => {
                text += &format!("{indent}  its run:\n");
                for line in run.lines() {
                    text += &format!("{indent}  {}\n", sanitize(line));
                }
            }
            None => text += &format!("{indent}  (its run has not ended)\n"),
        }
    }
    text
}

/// Sanitizes each line of a rendered text, keeping its line breaks.
fn sanitize_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        out.push_str(&sanitize(body));
        out.push_str(nl);
    }
    out
}

pub fn verify(args: &RunRefArgs) -> Result<ExitStatus> {
    let host = args.store.host()?;
    let run = run_id(&args.run)?;
    let detail = host.store().run(run)?;
    let s = &detail.summary;
    let done = s.status == RunStatus::Done;
    let verdict = host.verify(run)?;
    if args.json {
        let doc = serde_json::json!({
            "run": s.name,
            "status": s.status,
            "events": detail.events,
            "pruned": detail.pruned,
            "complete": done,
            "verified": verdict.is_ok(),
            "window_from": verdict.as_ref().ok().map(|v| v.from),
            "versions": verdict.as_ref().ok().map(|v| v.versions),
            "plans": verdict.as_ref().ok().map(|v| v.plans),
            "error": verdict.as_ref().err(),
        });
        out::println(&serde_json::to_string_pretty(&doc)?)?;
        return Ok(if verdict.is_ok() {
            ExitStatus::Success
        } else {
            ExitStatus::Failure
        });
    }
    match verdict {
        Ok(v) => {
            let what = if done {
                "a complete run".to_owned()
            } else {
                format!("a prefix of a run ({} so far)", s.status)
            };
            let workflow = sanitize(&s.workflow);
            let versions = match v.versions {
                0 | 1 => String::new(),
                2 => " (its version 2; what it recorded under version 1 is a prefix of a run of version 1)".to_owned(),
                n => format!(
                    " (its version {n}; what it recorded under each of versions 1 to {} is a prefix of a run of that version)",
                    n - 1
                ),
            };
            // The nested runs of `planner` calls, each checked against its
            // recorded plan.
            let plans = match v.plans {
                0 => String::new(),
                1 => "; its 1 plan checks and its nested run is a run of it".to_owned(),
                n => format!("; its {n} plans check and each nested run is a run of its plan"),
            };
            if v.from == 0 {
                out::println(&format!(
                    "{}: the recorded execution ({} events) is {what} of `{workflow}`{versions}{plans}",
                    s.name, v.events
                ))?;
            } else {
                out::println(&format!(
                    "{}: the retained history (events {}..{}, from the checkpoint it starts at) continues {what} of `{workflow}`; the {} events before it were pruned (--history-keep) after being verified online{plans}",
                    s.name, v.from, v.events, v.from
                ))?;
            }
            Ok(ExitStatus::Success)
        }
        Err(e) => {
            crate::note!("error: {}", sanitize(&e));
            Ok(ExitStatus::Failure)
        }
    }
}

#[derive(Debug, Args)]
pub struct TasksArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// Include answered and cancelled tasks.
    #[arg(long)]
    pub all: bool,
    #[arg(long)]
    pub json: bool,
}

pub fn tasks(args: &TasksArgs) -> Result<ExitStatus> {
    let store = args.store.open()?;
    let tasks = store.tasks(args.all)?;
    if args.json {
        out::println(&serde_json::to_string_pretty(&tasks)?)?;
        return Ok(ExitStatus::Success);
    }
    if tasks.is_empty() {
        crate::note!("no pending tasks");
        return Ok(ExitStatus::Success);
    }
    let mut text = String::new();
    for t in tasks {
        let answer = t
            .answer
            .as_deref()
            .map(|a| {
                format!(
                    " = {} (by {})",
                    sanitize(a),
                    sanitize(t.answered_by.as_deref().unwrap_or("?"))
                )
            })
            .unwrap_or_default();
        text += &format!(
            "{:<8} {:<8} {:<8} {}/{}  {}  expects {}{answer}\n",
            t.id,
            t.run,
            t.kind.as_str(),
            sanitize(&t.lifeline),
            sanitize(&t.action),
            t.status.as_str(),
            sanitize(&t.ty)
        );
        for line in t.prompt.lines() {
            text += &format!("    {}\n", sanitize(line));
        }
        if !t.options.is_empty() {
            let options: Vec<String> = t.options.iter().map(|o| sanitize(o).into_owned()).collect();
            text += &format!("    choices: {}\n", options.join(", "));
        }
    }
    out::print(&text)?;
    Ok(ExitStatus::Success)
}
