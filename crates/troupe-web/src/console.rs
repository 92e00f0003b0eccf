//! The console's views: the runs table with its filters and search
//! (server-side query parameters, so they work without script), durations,
//! tokens and cost; and the run page's timeline per lifeline (actions with
//! their durations, waits on people and on models), model calls, tool
//! calls and task table.
//!
//! Times come from the store as `YYYY-MM-DDTHH:MM:SS.sssZ` (UTC); a step's
//! span is from its start to its finish, a task's from its creation to its
//! answer, a model call's the latency before it was recorded.

use crate::html::{clip, escape, status_badge};
use serde::Deserialize;
use std::collections::BTreeMap;
use troupe_store::{LlmCallRow, RunDetail, RunSummary, RunTotals, StepRow, TaskRow};

/// Milliseconds since the Unix epoch of a store timestamp
/// (`2026-12-01T13:44:16.123Z`; the fraction and the zone are optional).
pub(crate) fn parse_ms(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let mut frac = 0;
    if b.get(19) == Some(&b'.') {
        let digits: String = s[20..].chars().take_while(char::is_ascii_digit).collect();
        let three: String = digits.chars().chain("000".chars()).take(3).collect();
        frac = three.parse::<i64>().ok()?;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + hh) * 60 + mm) * 60_000 + ss * 1000 + frac)
}

/// Now, in milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// A duration for people: `350 ms`, `4.2 s`, `3 min 20 s`, `2 h 5 min`.
pub(crate) fn fmt_ms(ms: u64) -> String {
    match ms {
        0..1_000 => format!("{ms} ms"),
        1_000..60_000 => format!("{:.1} s", ms as f64 / 1000.0),
        60_000..3_600_000 => format!("{} min {} s", ms / 60_000, ms % 60_000 / 1000),
        _ => format!("{} h {} min", ms / 3_600_000, ms % 3_600_000 / 60_000),
    }
}

/// A cost in US dollars, or a dash when no price was known.
pub(crate) fn fmt_cost(c: Option<f64>) -> String {
    match c {
        Some(c) if c >= 1.0 => format!("${c:.2}"),
        Some(c) => format!("${c:.4}"),
        None => "—".into(),
    }
}

fn is_over(status: &str) -> bool {
    crate::live::is_over(status)
}

/// How long a run took: from its creation to its last update once over,
/// to now while it goes on.
pub(crate) fn run_duration(s: &RunSummary) -> Option<u64> {
    let start = parse_ms(&s.created_at)?;
    let end = if is_over(s.status.as_str()) {
        parse_ms(&s.updated_at)?
    } else {
        now_ms()
    };
    Some((end - start).max(0) as u64)
}

/// The runs table's filters, from the query string: `status`, `workflow`,
/// `from` and `to` (dates or times, compared with the run's creation) and
/// `q` (a run id, or text of the inputs).
#[derive(Debug, Default, Clone, Deserialize)]
pub(crate) struct RunFilter {
    pub(crate) status: Option<String>,
    pub(crate) workflow: Option<String>,
    pub(crate) from: Option<String>,
    pub(crate) to: Option<String>,
    pub(crate) q: Option<String>,
}

fn given(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

impl RunFilter {
    /// Whether a run passes the filters other than the search.
    pub(crate) fn keeps(&self, r: &RunSummary) -> bool {
        if given(&self.status).is_some_and(|s| s != r.status.as_str()) {
            return false;
        }
        if given(&self.workflow).is_some_and(|w| w != r.workflow) {
            return false;
        }
        if given(&self.from).is_some_and(|f| r.created_at.as_str() < f) {
            return false;
        }
        // A date `to` includes its whole day.
        if let Some(t) = given(&self.to) {
            let created = &r.created_at[..t.len().min(r.created_at.len())];
            if created > t {
                return false;
            }
        }
        true
    }

    /// The search text, lower-cased.
    pub(crate) fn query(&self) -> Option<String> {
        given(&self.q).map(str::to_lowercase)
    }

    /// Whether the search matches by the run's id or name alone (`3`,
    /// `run-3`) or its workflow.
    pub(crate) fn matches_name(q: &str, r: &RunSummary) -> bool {
        r.name.to_lowercase() == q
            || r.id.to_string() == q
            || r.name.to_lowercase().contains(q)
            || r.workflow.to_lowercase().contains(q)
    }

    /// The filters as a query string (for the live refresh of the table).
    fn is_empty(&self) -> bool {
        [&self.status, &self.workflow, &self.from, &self.to, &self.q]
            .iter()
            .all(|v| given(v).is_none())
    }
}

/// The filter form: a plain GET form, so it works without script.
pub(crate) fn filter_form(f: &RunFilter, workflows: &[String]) -> String {
    // Every status there is, from the store's one list of them (a list
    // spelled here forgot `parked`).
    let statuses: Vec<&str> = troupe_store::RunStatus::ALL
        .iter()
        .map(|s| s.as_str())
        .collect();
    let option = |v: &str, label: &str, chosen: Option<&str>| {
        format!(
            "<option value=\"{0}\"{1}>{2}</option>",
            escape(v),
            if chosen == Some(v) { " selected" } else { "" },
            escape(label)
        )
    };
    let status_opts: String = std::iter::once(option("", "any status", given(&f.status)))
        .chain(statuses.iter().map(|s| option(s, s, given(&f.status))))
        .collect();
    let wf_opts: String = std::iter::once(option("", "any workflow", given(&f.workflow)))
        .chain(workflows.iter().map(|w| option(w, w, given(&f.workflow))))
        .collect();
    let value = |v: &Option<String>| escape(given(v).unwrap_or(""));
    format!(
        "<form method=\"get\" action=\"/\" class=\"filters\" id=\"filters\">\
<label>Search <input type=\"search\" name=\"q\" value=\"{q}\" placeholder=\"run id or input text\"></label>\
<label>Status <select name=\"status\">{status_opts}</select></label>\
<label>Workflow <select name=\"workflow\">{wf_opts}</select></label>\
<label>From <input type=\"date\" name=\"from\" value=\"{from}\"></label>\
<label>To <input type=\"date\" name=\"to\" value=\"{to}\"></label>\
<button type=\"submit\">Filter</button>{clear}</form>",
        q = value(&f.q),
        from = value(&f.from),
        to = value(&f.to),
        clear = if f.is_empty() {
            String::new()
        } else {
            "<a href=\"/\" class=\"meta\">clear</a>".into()
        },
    )
}

/// The rows of the runs table.
pub(crate) fn run_rows(
    runs: &[RunSummary],
    totals: &BTreeMap<i64, RunTotals>,
    any: bool,
) -> String {
    if runs.is_empty() {
        return if any {
            "<tr><td colspan=\"8\" class=\"meta\" id=\"no-match\">No run matches the filters.</td></tr>".into()
        } else {
            "<tr><td colspan=\"8\" class=\"meta\">No runs yet: record one with <code>troupe run FILE --store DB</code>.</td></tr>".into()
        };
    }
    let mut out = String::new();
    for r in runs {
        let outcome = match (&r.result, &r.error) {
            (Some(v), _) => v.to_string(),
            (None, Some(e)) => e.clone(),
            _ => String::new(),
        };
        let t = totals.get(&r.id).cloned().unwrap_or_default();
        let tokens = t.input_tokens + t.output_tokens;
        out.push_str(&format!(
            "<tr data-run=\"{name}\"><td data-label=\"Run\"><a href=\"/runs/{id}\">{name}</a></td><td data-label=\"Workflow\">{wf}</td><td data-label=\"Status\">{status}</td>\
<td class=\"meta\" data-label=\"Created\">{created}</td><td class=\"num\" data-label=\"Duration\">{duration}</td><td class=\"num tokens\" data-label=\"Tokens\">{tokens}</td>\
<td class=\"num cost\" data-label=\"Cost\">{cost}</td><td class=\"mono\" data-label=\"Result\">{outcome}</td></tr>",
            id = r.id,
            name = escape(&r.name),
            wf = escape(&r.workflow),
            status = status_badge(r.status.as_str()),
            created = escape(r.created_at.get(..19).unwrap_or(&r.created_at)).replace('T', " "),
            duration = run_duration(r).map(fmt_ms).unwrap_or_default(),
            tokens = if t.llm_calls == 0 { "—".to_owned() } else { tokens.to_string() },
            cost = fmt_cost(t.cost_usd),
            outcome = escape(&clip(&outcome, 100)),
        ));
    }
    out
}

/// The lifeline of a step key (`Lifeline/action#n`).
fn lifeline_of(key: &str) -> &str {
    key.split('/').next().unwrap_or(key)
}

/// One bar of the timeline.
struct Span {
    lifeline: String,
    kind: &'static str,
    label: String,
    start: i64,
    end: i64,
    open: bool,
}

/// The run's timeline: one row per lifeline with its actions (from each
/// step's start to its finish), its waits on people (a task's creation to
/// its answer) and on models (each call's latency), as an SVG drawn to
/// scale from the run's creation. Also a table of the same spans.
pub(crate) fn timeline(
    detail: &RunDetail,
    lifelines: &[String],
    tasks: &[TaskRow],
    calls: &[LlmCallRow],
) -> String {
    let s = &detail.summary;
    let Some(t0) = parse_ms(&s.created_at) else {
        return String::new();
    };
    let now = if is_over(s.status.as_str()) {
        parse_ms(&s.updated_at).unwrap_or_else(now_ms)
    } else {
        now_ms()
    };
    // A model step's start is recorded with its result, if at all: it
    // began when its first call did.
    let mut call_start: BTreeMap<&str, i64> = BTreeMap::new();
    for c in calls {
        if let Some(end) = parse_ms(&c.at) {
            let start = end - c.latency_ms as i64;
            let e = call_start.entry(c.step.as_str()).or_insert(start);
            *e = (*e).min(start);
        }
    }
    let mut spans = Vec::new();
    for st in &detail.steps {
        let recorded = st.started_at.as_deref().and_then(parse_ms);
        let start = match (recorded, call_start.get(st.key.as_str()).copied()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let end = st.finished_at.as_deref().and_then(parse_ms);
        let (start, end, open) = match (start, end) {
            (Some(a), Some(b)) => (a, b, false),
            (Some(a), None) => (a, now, true),
            // Steps whose start is not recorded are drawn at their finish.
            (None, Some(b)) => (b, b, false),
            (None, None) => continue,
        };
        spans.push(Span {
            lifeline: lifeline_of(&st.key).to_owned(),
            kind: step_kind(st),
            label: st.key.clone(),
            start,
            end,
            open,
        });
    }
    for t in tasks {
        let Some(start) = parse_ms(&t.created_at) else {
            continue;
        };
        let end = t.answered_at.as_deref().and_then(parse_ms);
        spans.push(Span {
            lifeline: t.lifeline.clone(),
            kind: "person",
            label: format!("{} waits on a person ({})", t.action, t.id),
            start,
            end: end.unwrap_or(now),
            open: end.is_none(),
        });
    }
    for c in calls {
        let Some(end) = parse_ms(&c.at) else { continue };
        spans.push(Span {
            lifeline: lifeline_of(&c.step).to_owned(),
            kind: "model",
            label: format!("{} waits on {}", c.step, c.model),
            start: end - c.latency_ms as i64,
            end,
            open: false,
        });
    }
    if spans.is_empty() {
        return "<p class=\"meta\" id=\"timeline\">No action has run yet.</p>".into();
    }
    let t_end = spans.iter().map(|s| s.end).max().unwrap_or(now).max(now);
    let span_ms = (t_end - t0).max(1) as f64;
    let mut rows: Vec<String> = lifelines.to_vec();
    for sp in &spans {
        if !rows.contains(&sp.lifeline) {
            rows.push(sp.lifeline.clone());
        }
    }
    let (label_w, width, row_h) = (130.0, 1000.0, 28.0);
    let x = |t: i64| label_w + (t - t0).max(0) as f64 / span_ms * (width - label_w - 10.0);
    let mut svg = format!(
        "<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {width} {h}\" role=\"img\" aria-label=\"timeline\">",
        h = rows.len() as f64 * row_h + 24.0
    );
    for (i, l) in rows.iter().enumerate() {
        let y = i as f64 * row_h;
        svg.push_str(&format!(
            "<g class=\"lane\" data-lifeline=\"{l}\"><line class=\"axis\" x1=\"{label_w}\" x2=\"{width}\" y1=\"{m}\" y2=\"{m}\"/><text class=\"lane-label\" x=\"4\" y=\"{t}\">{l}</text></g>",
            l = escape(&clip(l, 16)),
            m = y + row_h / 2.0,
            t = y + row_h / 2.0 + 4.0,
        ));
    }
    for sp in &spans {
        let i = rows.iter().position(|r| *r == sp.lifeline).unwrap_or(0);
        let (inset, h) = match sp.kind {
            "model" => (9.0, row_h - 18.0),
            "person" => (6.0, row_h - 12.0),
            _ => (4.0, row_h - 8.0),
        };
        let (a, b) = (x(sp.start), x(sp.end));
        let dur = (sp.end - sp.start).max(0) as u64;
        svg.push_str(&format!(
            "<rect class=\"bar {kind}{open}\" data-kind=\"{kind}\" data-lifeline=\"{l}\" x=\"{a:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{h}\" rx=\"2\"><title>{label}: {d}{more}</title></rect>",
            kind = sp.kind,
            open = if sp.open { " open" } else { "" },
            l = escape(&sp.lifeline),
            y = i as f64 * row_h + inset,
            w = (b - a).max(2.0),
            label = escape(&sp.label),
            d = fmt_ms(dur),
            more = if sp.open { " so far" } else { "" },
        ));
    }
    svg.push_str(&format!(
        "<text class=\"tick\" x=\"{label_w}\" y=\"{y}\">0</text><text class=\"tick end\" x=\"{e}\" y=\"{y}\" text-anchor=\"end\">{d}</text></svg>",
        y = rows.len() as f64 * row_h + 16.0,
        e = width - 10.0,
        d = fmt_ms((t_end - t0).max(0) as u64),
    ));
    let legend = "<p class=\"legend meta\"><span class=\"key action\"></span>action <span class=\"key llm\"></span>model action <span class=\"key tool\"></span>tool or effect <span class=\"key person\"></span>waiting on a person <span class=\"key model\"></span>waiting on a model</p>";
    let mut table = String::from(
        "<details class=\"spans\"><summary>Timeline as a table</summary><div class=\"scroll\"><table><thead><tr><th>Lifeline</th><th>What</th><th>Kind</th><th>Start</th><th>Duration</th></tr></thead><tbody>",
    );
    let mut sorted: Vec<&Span> = spans.iter().collect();
    sorted.sort_by_key(|s| (s.start, s.end));
    for sp in sorted {
        table.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">+{}</td><td class=\"num\">{}{}</td></tr>",
            escape(&sp.lifeline),
            escape(&sp.label),
            sp.kind,
            fmt_ms((sp.start - t0).max(0) as u64),
            fmt_ms((sp.end - sp.start).max(0) as u64),
            if sp.open { " so far" } else { "" },
        ));
    }
    table.push_str("</tbody></table></div></details>");
    format!("<div id=\"timeline\" class=\"card\">{svg}{legend}{table}</div>")
}

fn step_kind(st: &StepRow) -> &'static str {
    match st.kind.as_str() {
        "llm" => "llm",
        "tool" | "effect" | "mock" => "tool",
        "human" => "action",
        _ => "action",
    }
}

/// Each model call: the step, model, tokens, cost and latency, with the
/// prompt and answer in a collapsible block.
pub(crate) fn model_calls(calls: &[LlmCallRow]) -> String {
    if calls.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "<h2>Model calls <span class=\"meta\">{}</span></h2>",
        calls.len()
    );
    for (i, c) in calls.iter().enumerate() {
        let tokens = match (c.input_tokens, c.output_tokens) {
            (None, None) => "tokens unknown".to_owned(),
            (a, b) => format!(
                "{} in{} · {} out",
                a.map_or("?".into(), |n| n.to_string()),
                c.cached_input_tokens
                    .filter(|n| *n > 0)
                    .map_or(String::new(), |n| format!(" ({n} cached)")),
                b.map_or("?".into(), |n| n.to_string())
            ),
        };
        let retries = if c.retries.is_empty() {
            String::new()
        } else {
            format!(
                "<p class=\"meta\">{} attempt(s); retried: {}</p>",
                c.attempts,
                escape(&c.retries.join("; "))
            )
        };
        let system = c
            .system
            .as_deref()
            .map(|s| format!("<h4>System</h4><pre>{}</pre>", escape(s)))
            .unwrap_or_default();
        let outputs = c
            .outputs
            .as_ref()
            .map(|o| {
                format!(
                    "<h4>Parsed outputs</h4><pre>{}</pre>",
                    escape(&serde_json::to_string_pretty(o).unwrap_or_default())
                )
            })
            .unwrap_or_default();
        let error = c
            .error
            .as_deref()
            .map(|e| format!("<div class=\"notice error\">{}</div>", escape(e)))
            .unwrap_or_default();
        out.push_str(&format!(
            "<details class=\"call card\" id=\"call-{i}\"><summary><b>{step}</b> · {model} · <span class=\"tokens\">{tokens}</span> · <span class=\"cost\">{cost}</span> · {latency}</summary>\
{retries}{error}{system}<h4>Prompt</h4><pre class=\"prompt\">{prompt}</pre><h4>Answer</h4><pre class=\"answer\">{answer}</pre>{outputs}</details>",
            step = escape(&c.step),
            model = escape(&c.model),
            tokens = escape(&tokens),
            cost = fmt_cost(c.cost_usd),
            latency = fmt_ms(c.latency_ms),
            prompt = escape(&c.prompt),
            answer = escape(c.answer.as_deref().unwrap_or("(no answer)")),
        ));
    }
    out
}

/// The accepted plans of a run's `planner` calls (steps of kind `plan`:
/// `…/plan#0` holds the source, `…/run#0` the nested run's trace).
pub(crate) fn recorded_plans(steps: &[StepRow]) -> Vec<troupe_msc::chart::plan::RecordedPlan> {
    steps
        .iter()
        .filter(|s| s.kind == "plan")
        .filter_map(|s| {
            Some(troupe_msc::chart::plan::RecordedPlan {
                step: s.key.strip_suffix("/plan#0")?.to_owned(),
                source: s.outputs.as_ref()?.get(0)?.as_str()?.to_owned(),
            })
        })
        .collect()
}

/// The plans section of a run page: each plan's source and, once it ended,
/// its nested run.
pub(crate) fn plans(steps: &[StepRow]) -> String {
    let mut out = String::new();
    for p in recorded_plans(steps) {
        let run = steps
            .iter()
            .find(|s| s.kind == "plan" && s.key == format!("{}/run#0", p.step))
            .and_then(|s| s.outputs.as_ref()?.get(0)?.as_str().map(str::to_owned));
        out.push_str(&format!(
            "<div class=\"card plan\"><p class=\"meta\">plan of {}</p><pre class=\"mono\">{}</pre>{}</div>",
            escape(&p.step),
            escape(&clip(&p.source, 20_000)),
            match run {
                Some(r) => format!(
                    "<p class=\"meta\">its run</p><pre class=\"mono\">{}</pre>",
                    escape(&clip(&r, 20_000))
                ),
                None => "<p class=\"meta\">its run has not ended</p>".to_owned(),
            }
        ));
    }
    if out.is_empty() {
        return out;
    }
    format!("<h2>Plans</h2><div id=\"plans\">{out}</div>")
}

/// The steps of kind tool (and effects, mocked ones too): what each
/// returned and how long it took.
pub(crate) fn tool_calls(steps: &[StepRow]) -> String {
    let tools: Vec<&StepRow> = steps
        .iter()
        .filter(|s| matches!(s.kind.as_str(), "tool" | "effect" | "mock"))
        .collect();
    if tools.is_empty() {
        return String::new();
    }
    let mut rows = String::new();
    for s in tools {
        let dur = match (
            s.started_at.as_deref().and_then(parse_ms),
            s.finished_at.as_deref().and_then(parse_ms),
        ) {
            (Some(a), Some(b)) => fmt_ms((b - a).max(0) as u64),
            _ => "—".into(),
        };
        let outputs = s
            .outputs
            .as_ref()
            .map(|o| o.to_string())
            .unwrap_or_default();
        rows.push_str(&format!(
            "<tr class=\"tool-call\"><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"mono\">{}</td></tr>",
            escape(&s.key),
            escape(&s.kind),
            status_badge(s.status.as_str()),
            dur,
            escape(&clip(&outputs, 200)),
        ));
    }
    format!(
        "<h2>Tool calls</h2><div class=\"scroll\"><table id=\"tools\"><thead><tr><th>Step</th><th>Kind</th><th>Status</th><th>Duration</th><th>Outputs</th></tr></thead><tbody>{rows}</tbody></table></div>"
    )
}

/// The tool calls models chose, inside their actions: tool, arguments,
/// result, who confirmed it.
pub(crate) fn chosen_calls(calls: &[troupe_host::chosen::ChosenCall]) -> String {
    use troupe_host::chosen::Outcome;
    if calls.is_empty() {
        return String::new();
    }
    let mut rows = String::new();
    for c in calls {
        let (status, result) = match &c.outcome {
            Outcome::Done(v) => ("done", v.to_string()),
            Outcome::Failed(e) => ("failed", e.clone()),
            Outcome::Refused(e) => ("refused", e.clone()),
            Outcome::Declined => ("declined", "not called".to_owned()),
            Outcome::Started => ("started", String::new()),
            Outcome::AwaitingConfirmation => ("waiting", "waits for a confirmation".to_owned()),
        };
        rows.push_str(&format!(
            "<tr class=\"chosen-call\"><td>{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"mono\">{}</td><td>{}</td><td class=\"mono\">{}</td><td>{}</td></tr>",
            escape(&c.step),
            c.index,
            escape(&c.tool),
            escape(&clip(&c.arguments.to_string(), 300)),
            status_badge(status),
            escape(&clip(&result, 300)),
            escape(c.confirmed_by.as_deref().unwrap_or("—")),
        ));
    }
    format!(
        "<h2>Tool calls chosen by models</h2><div class=\"scroll\"><table id=\"chosen\"><thead><tr><th>Action</th><th>#</th><th>Tool</th><th>Arguments</th><th>Status</th><th>Result</th><th>Confirmed by</th></tr></thead><tbody>{rows}</tbody></table></div>"
    )
}

/// The rows of a run's task table.
pub(crate) fn task_rows(tasks: &[TaskRow]) -> String {
    let mut out = String::new();
    for t in tasks {
        let answer = t
            .answer
            .as_deref()
            .map(|a| {
                format!(
                    "{} (by {})",
                    clip(a, 80),
                    t.answered_by.as_deref().unwrap_or("?")
                )
            })
            .unwrap_or_else(|| "—".into());
        out.push_str(&format!(
            "<tr data-task=\"{id}\"><td>{id}</td><td>{}/{}</td><td>{}</td><td>{}</td><td class=\"mono\">{}</td></tr>",
            escape(&t.lifeline),
            escape(&t.action),
            escape(t.kind.as_str()),
            status_badge(t.status.as_str()),
            escape(&answer),
            id = escape(&t.id),
        ));
    }
    if out.is_empty() {
        out.push_str("<tr><td colspan=\"5\" class=\"meta\">No task for a person yet.</td></tr>");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_times_parse() {
        assert_eq!(parse_ms("1970-01-01T00:00:00.000Z"), Some(0));
        assert_eq!(parse_ms("1970-01-02T00:00:01.5Z"), Some(86_401_500));
        assert_eq!(parse_ms("2000-03-01T00:00:00Z"), Some(951_868_800_000));
        assert_eq!(parse_ms("2026-12-01"), None);
        assert_eq!(parse_ms("not a time at all!!"), None);
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(fmt_ms(350), "350 ms");
        assert_eq!(fmt_ms(4_200), "4.2 s");
        assert_eq!(fmt_ms(200_000), "3 min 20 s");
        assert_eq!(fmt_ms(7_500_000), "2 h 5 min");
        assert_eq!(fmt_cost(None), "—");
        assert_eq!(fmt_cost(Some(1.5)), "$1.50");
        assert_eq!(fmt_cost(Some(0.0012)), "$0.0012");
    }
}
