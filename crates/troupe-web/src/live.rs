//! A run as the page shows it: a window of its recorded trace (the last
//! [`WINDOW`] events, or a page of earlier ones), the sequence chart of that
//! window (drawn with `troupe_msc::execution_chart`) and the server-sent
//! event stream that keeps both up to date while the run goes on.
//!
//! Nothing here grows with a run's history: a view holds one window, the
//! stream reads only the chunks recorded since its last read and sends the
//! new rows (an increment), and the chart — redrawn from the window — at
//! most every [`CHART_EVERY`] and when the run ends. So memory per client
//! and bytes per update are bounded, for a run of ten events or of ten
//! million.
//!
//! The stream polls the store every [`POLL`] with short reads (one query
//! each; a long-lived reader would hold back WAL checkpoints) and sends an
//! `update` event whenever new events were committed or the status changed,
//! then `end` once the run is over.

use crate::html::{clip, escape};
use crate::routes::App;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::stream::Stream;
use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::time::{Duration, Instant};
use troupe_check::ir::{LifelineId, Program};
use troupe_msc::{ChartOptions, Event, Execution, execution_chart_moves};
use troupe_runtime::{Trace, TraceEntry};
use troupe_store::{RunDetail, Store, StoreError};

/// How often the live stream reads the store.
pub(crate) const POLL: Duration = Duration::from_millis(300);

/// Events a page shows and a view keeps.
pub(crate) const WINDOW: u64 = 500;

/// The live chart is redrawn at most this often (and when the run ends).
pub(crate) const CHART_EVERY: Duration = Duration::from_secs(2);

/// Statuses after which nothing more is recorded (until a resume).
pub(crate) fn is_over(status: &str) -> bool {
    matches!(
        status,
        "done" | "failed" | "cancelled" | "stalled" | "needs_resolution" | "paused"
    )
}

/// A window of the recorded events of one run, with what is needed to name
/// them.
#[derive(Debug)]
pub(crate) struct RunView {
    run: i64,
    /// The checked recorded source and the index of the run's workflow; none
    /// when the recorded source does not check any more.
    program: Option<(Program, usize)>,
    lifelines: usize,
    /// The window: at most [`WINDOW`] events, oldest first.
    events: VecDeque<(LifelineId, Event)>,
    /// The index (in the run's whole history) of the window's first event.
    first: u64,
    /// Events in the history up to the window's end (pruned ones included).
    total: u64,
    /// The chunk after the last one read, to follow the run.
    next_chunk: i64,
    /// The accepted plans of its `planner` calls, drawn as nested boxes.
    plans: Vec<troupe_msc::chart::plan::RecordedPlan>,
    /// Where the run moved to other versions (`troupe upgrade`), marked
    /// in a chart of its whole history.
    moves: Vec<(Vec<u64>, String)>,
}

impl RunView {
    /// The last [`WINDOW`] events recorded so far or, with `before`, the
    /// window that ends there (a page of the history). Blocking.
    pub(crate) fn load(
        store: &Store,
        detail: &RunDetail,
        before: Option<u64>,
    ) -> Result<RunView, StoreError> {
        let (program, _) = troupe_check::check_text(&detail.source);
        let program = program.and_then(|p| {
            let i = p
                .workflows
                .iter()
                .position(|w| w.name == detail.summary.workflow)?;
            Some((p, i))
        });
        let lifelines = program
            .as_ref()
            .map_or(detail.lifelines, |(p, i)| p.workflows[*i].lifelines.len());
        // Indices of the store are of the retained history; the page's are
        // of the whole run.
        let pruned = detail.pruned;
        let (_, retained, _) = store.events_range(detail.summary.id, 0..0)?;
        let end = before
            .map_or(retained, |b| b.saturating_sub(pruned))
            .min(retained);
        let start = end.saturating_sub(WINDOW);
        let (events, retained, next_chunk) = store.events_range(detail.summary.id, start..end)?;
        let live = end >= retained;
        Ok(RunView {
            run: detail.summary.id,
            lifelines,
            first: pruned + start,
            total: pruned + start + events.len() as u64,
            events: events.into(),
            // A page of the past is not followed.
            next_chunk: if live { next_chunk } else { i64::MAX },
            plans: crate::console::recorded_plans(&detail.steps),
            moves: match &program {
                Some((p, i)) => {
                    troupe_host::chart_moves(store, detail.summary.id, &p.workflows[*i])?
                }
                None => Vec::new(),
            },
            program,
        })
    }

    /// The names of the run's lifelines, in the workflow's order (none when
    /// the recorded source no longer checks).
    pub(crate) fn lifeline_names(&self) -> Vec<String> {
        self.program.as_ref().map_or(Vec::new(), |(p, i)| {
            p.workflows[*i]
                .lifelines
                .iter()
                .map(|l| l.name.clone())
                .collect()
        })
    }

    /// Events in the run up to the window's end.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// The index of the window's first event.
    pub(crate) fn first(&self) -> u64 {
        self.first
    }

    /// Reads the events committed since the last read into the window;
    /// returns how many there were.
    pub(crate) fn refresh(&mut self, store: &Store) -> Result<u64, StoreError> {
        if self.next_chunk == i64::MAX {
            return Ok(0);
        }
        let mut n = 0;
        loop {
            let (events, next) = store.events_page(self.run, self.next_chunk, 16)?;
            if events.is_empty() {
                break;
            }
            self.next_chunk = next;
            n += events.len() as u64;
            self.total += events.len() as u64;
            self.events.extend(events);
            while self.events.len() as u64 > WINDOW {
                self.events.pop_front();
                self.first += 1;
            }
        }
        Ok(n)
    }

    /// The window's events from index `from` (of the whole run) on.
    fn trace(&self, from: u64) -> Trace {
        let skip = from.saturating_sub(self.first) as usize;
        Trace {
            entries: self
                .events
                .iter()
                .enumerate()
                .skip(skip)
                .map(|(i, (lifeline, event))| TraceEntry {
                    time: self.first + i as u64,
                    lifeline: *lifeline,
                    event: event.clone(),
                })
                .collect(),
        }
    }

    /// The window as JSON records (as `troupe trace --json` prints them).
    pub(crate) fn trace_json(&self) -> serde_json::Value {
        match &self.program {
            Some((p, i)) => self.trace(0).to_json(p, &p.workflows[*i]),
            None => serde_json::Value::Array(Vec::new()),
        }
    }

    /// The sequence chart of the window, as inline SVG. Receives of
    /// messages sent before the window are left out (FIFO matching from
    /// the window's start would pair them with later sends).
    pub(crate) fn chart_svg(&self, chosen: &[troupe_host::chosen::ChosenCall]) -> String {
        let Some((program, i)) = &self.program else {
            return "<p class=\"meta\">The recorded source no longer checks: no chart.</p>"
                .to_owned();
        };
        let early = if self.first > 0 {
            receives_from_before(&self.events)
        } else {
            Default::default()
        };
        let mut exec = Execution::new(self.lifelines);
        let mut left_out = 0;
        for (k, (l, e)) in self.events.iter().enumerate() {
            if early.contains(&k) {
                left_out += 1;
                continue;
            }
            if let Some(word) = exec.words.get_mut(l.0 as usize) {
                word.push(e.clone());
            }
        }
        // The moves' marks count events from the run's start.
        let moves = if self.first == 0 {
            &self.moves[..]
        } else {
            &[]
        };
        let mut chart = execution_chart_moves(
            program,
            &program.workflows[*i],
            &exec,
            &ChartOptions::default(),
            moves,
        );
        // Occurrences count from the run's start, so only a window that
        // starts there can tell which call of an action is which.
        if self.first == 0 {
            chart = with_chosen_calls(chart, program, &program.workflows[*i], &exec, chosen);
        }
        troupe_msc::chart::plan::nest_plans(
            &mut chart,
            program,
            &program.workflows[*i],
            &self.plans,
        );
        let mut svg = String::new();
        if self.first > 0 {
            svg.push_str(&format!(
                "<p class=\"meta\">Events {}–{} of the run{}.</p>",
                self.first,
                self.total.saturating_sub(1),
                if left_out > 0 {
                    format!("; {left_out} receive(s) of messages sent before them are not drawn")
                } else {
                    String::new()
                }
            ));
        }
        svg.push_str(&troupe_msc::chart::svg::render(&chart));
        svg
    }

    /// Table rows for the window's events from index `from` on.
    pub(crate) fn rows_html(&self, from: u64) -> String {
        let Some((program, i)) = &self.program else {
            return String::new();
        };
        let json = self.trace(from).to_json(program, &program.workflows[*i]);
        let mut out = String::new();
        for e in json.as_array().into_iter().flatten() {
            let text = |k: &str| e.get(k).and_then(|v| v.as_str()).unwrap_or("");
            let kind = text("kind");
            let peer = match kind {
                "send" => format!("→ {}", text("to")),
                "recv" => format!("← {}", text("from")),
                _ => String::new(),
            };
            let stmt = e.get("stmt").map(|s| format!("s{s}")).unwrap_or_default();
            let detail = ["values", "outputs", "control"]
                .iter()
                .find_map(|k| e.get(*k).filter(|v| !v.is_null()))
                .map(|v| v.to_string())
                .or_else(|| {
                    e.get("decision")
                        .map(|d| format!("decision {d}, tag {}", text("tag")))
                })
                .unwrap_or_default();
            out.push_str(&format!(
                "<tr><td class=\"mono\">{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"mono\">{}</td><td class=\"mono\">{}</td></tr>",
                e.get("time").and_then(|t| t.as_u64()).unwrap_or(0),
                escape(text("lifeline")),
                escape(kind),
                escape(&peer),
                escape(&stmt),
                escape(&clip(&detail, 160)),
            ));
        }
        out
    }
}

/// The positions in `window` of the receives whose messages were sent
/// before it: per channel, the first `r` receives, with `r` the least shift
/// under which the receives' messages are the window's sends in FIFO order.
fn receives_from_before(
    window: &VecDeque<(LifelineId, Event)>,
) -> std::collections::HashSet<usize> {
    use troupe_msc::Message;
    let mut sends: HashMap<(u32, u32), Vec<&Message>> = HashMap::new();
    let mut recvs: HashMap<(u32, u32), Vec<(usize, &Message)>> = HashMap::new();
    for (k, (l, e)) in window.iter().enumerate() {
        match e {
            Event::Send { to, msg } => sends.entry((l.0, to.0)).or_default().push(msg),
            Event::Recv { from, msg } => recvs.entry((from.0, l.0)).or_default().push((k, msg)),
            _ => {}
        }
    }
    let mut early = std::collections::HashSet::new();
    for (channel, rs) in recvs {
        let ss = sends.get(&channel).map_or(&[][..], Vec::as_slice);
        let fits = |r: usize| rs[r..].iter().zip(ss).all(|((_, a), b)| a == b);
        let shift = (0..=rs.len()).find(|&r| fits(r)).unwrap_or(rs.len());
        early.extend(rs[..shift].iter().map(|(k, _)| *k));
    }
    early
}

/// The result or error of a run, as HTML.
pub(crate) fn outcome_html(detail: &RunDetail) -> String {
    let s = &detail.summary;
    match (&s.result, &s.error) {
        (Some(r), _) => format!(
            "<pre id=\"result\">{}</pre>",
            escape(&serde_json::to_string_pretty(r).unwrap_or_default())
        ),
        (None, Some(e)) => format!("<pre id=\"result\" class=\"error\">{}</pre>", escape(e)),
        _ => "<pre id=\"result\" class=\"meta\">(not finished)</pre>".to_owned(),
    }
}

struct Live {
    app: App,
    run: i64,
    view: Option<RunView>,
    /// The status, event count and tasks/steps/model calls last sent.
    last: Option<(String, u64, String)>,
    /// Rows were sent for the events before this index.
    sent_upto: u64,
    /// When the chart was last sent; whether it changed since.
    chart_sent: Option<Instant>,
    chart_stale: bool,
    ending: bool,
    finished: bool,
}

/// One poll: the next SSE event to send, or `None` when the stream is over.
async fn next_event(mut live: Live) -> Option<(Result<SseEvent, Infallible>, Live)> {
    if live.finished {
        return None;
    }
    if live.ending {
        live.finished = true;
        return Some((Ok(SseEvent::default().event("end").data("over")), live));
    }
    loop {
        if live.last.is_some() {
            tokio::time::sleep(POLL).await;
        }
        let store = live.app.store.clone();
        let run = live.run;
        let view = live.view.take();
        let read = tokio::task::spawn_blocking(move || {
            let detail = store.run(run)?;
            let view = match view {
                Some(mut v) => {
                    v.refresh(&store)?;
                    // A plan accepted since: drawn from now on.
                    v.plans = crate::console::recorded_plans(&detail.steps);
                    v
                }
                None => RunView::load(&store, &detail, None)?,
            };
            let tasks = crate::routes::run_tasks(&store, run)?;
            let activity =
                crate::routes::run_activity(&store, &detail, &view.lifeline_names(), &tasks)?;
            Ok::<_, StoreError>((detail, view, tasks, activity))
        })
        .await;
        let (detail, view, tasks, activity) = match read {
            Ok(Ok(x)) => x,
            Ok(Err(e)) => {
                live.finished = true;
                let data = serde_json::json!({ "error": e.to_string() });
                let ev = SseEvent::default().event("failure").json_data(data).ok()?;
                return Some((Ok(ev), live));
            }
            Err(_) => return None,
        };
        let status = detail.summary.status.as_str().to_owned();
        // What the task table and the activity show, to send them when it
        // changes.
        let work = format!(
            "{}:{}:{}",
            tasks
                .iter()
                .map(|t| format!("{}={}", t.id, t.status.as_str()))
                .collect::<Vec<_>>()
                .join(","),
            detail
                .steps
                .iter()
                .filter(|s| s.finished_at.is_some())
                .count(),
            detail.steps.len()
        );
        let work_changed = live.last.as_ref().is_none_or(|l| l.2 != work);
        let now = (status.clone(), view.total(), work);
        let changed = live.last.as_ref() != Some(&now);
        let over = is_over(&status);
        let reset = live.last.is_none();
        live.chart_stale |= changed;
        let chart_due = live.chart_stale
            && (reset || over || live.chart_sent.is_none_or(|t| t.elapsed() >= CHART_EVERY));
        if !changed && !chart_due {
            live.view = Some(view);
            if over {
                live.finished = true;
                return Some((Ok(SseEvent::default().event("end").data("over")), live));
            }
            continue;
        }
        // Only the rows of new events; those that scrolled out of the
        // window in one burst are counted, not sent.
        let from = live.sent_upto.max(view.first());
        let mut data = serde_json::json!({
            "status": status,
            "badge": crate::html::status_badge(&status),
            "events": view.total(),
            "outcome": outcome_html(&detail),
            "rows": if reset { view.rows_html(view.first()) } else { view.rows_html(from) },
            "skipped": if reset { 0 } else { from - live.sent_upto },
            "window": WINDOW,
            "reset": reset,
        });
        if work_changed || changed {
            data["tasks"] = crate::console::task_rows(&tasks).into();
            data["activity"] = activity.into();
        }
        // The page came with the buttons of its status; they change with it.
        let status_changed = live.last.as_ref().is_some_and(|l| l.0 != status);
        if status_changed {
            data["lifecycle"] = crate::operate::lifecycle_buttons(run, &status, None).into();
        }
        if chart_due {
            let chosen = troupe_host::chosen::chosen_calls(&detail, &tasks);
            data["chart"] = serde_json::Value::String(view.chart_svg(&chosen));
            live.chart_sent = Some(Instant::now());
            live.chart_stale = false;
        }
        live.sent_upto = view.total();
        live.last = Some(now);
        live.view = Some(view);
        live.ending = over;
        let ev = SseEvent::default().event("update").json_data(data).ok()?;
        return Some((Ok(ev), live));
    }
}

/// `GET /runs/{id}/events`.
pub(crate) fn stream(app: App, run: i64) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let live = Live {
        app,
        run,
        view: None,
        last: None,
        sent_upto: 0,
        chart_sent: None,
        chart_stale: false,
        ending: false,
        finished: false,
    };
    Sse::new(futures_util::stream::unfold(live, next_event)).keep_alive(KeepAlive::default())
}

/// `GET /inbox/events`: the pending tasks, sent as a `tasks` event at once
/// and whenever the set of pending tasks changes (read every [`POLL`]):
/// their ids and, for each, its card with its form (carrying the session's
/// CSRF token), so the page adds new tasks and drops answered ones without
/// touching a form a person is filling in.
pub(crate) fn inbox_stream(
    app: App,
    csrf: Option<String>,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let state = (app, csrf, None::<Vec<String>>);
    let stream = futures_util::stream::unfold(state, |(app, csrf, last)| async move {
        loop {
            if last.is_some() {
                tokio::time::sleep(POLL).await;
            }
            let store = app.store.clone();
            let tasks = match tokio::task::spawn_blocking(move || store.tasks(false)).await {
                Ok(Ok(t)) => t,
                Ok(Err(e)) => {
                    let data = serde_json::json!({ "error": e.to_string() });
                    let ev = SseEvent::default().event("failure").json_data(data).ok()?;
                    return Some((Ok(ev), (app, csrf, Some(Vec::new()))));
                }
                Err(_) => return None,
            };
            let ids: Vec<String> = tasks.iter().map(|t| t.id.clone()).collect();
            if last.as_ref() == Some(&ids) {
                continue;
            }
            let cards: serde_json::Map<String, serde_json::Value> = tasks
                .iter()
                .map(|t| {
                    (
                        t.id.clone(),
                        crate::routes::task_form(t, csrf.as_deref(), None).into(),
                    )
                })
                .collect();
            let data = serde_json::json!({
                "ids": ids,
                "cards": cards,
                "empty": crate::routes::NO_TASKS,
            });
            let ev = SseEvent::default().event("tasks").json_data(data).ok()?;
            return Some((Ok(ev), (app, csrf, Some(ids))));
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

/// The inbox's script: keeps the list of task cards in step with the
/// `tasks` events (new ones appended in order, answered ones removed).
pub(crate) const INBOX_SCRIPT: &str = r#"
(function(){
  var es = new EventSource('/inbox/events');
  var $ = function(id){ return document.getElementById(id); };
  es.addEventListener('tasks', function(e){
    var d = JSON.parse(e.data);
    var list = $('tasks');
    var keep = {};
    d.ids.forEach(function(id){ keep[id] = true; });
    Array.prototype.slice.call(list.querySelectorAll('div.task')).forEach(function(card){
      if (!keep[card.id]) card.parentNode.removeChild(card);
    });
    var empty = $('empty');
    if (empty && d.ids.length) empty.parentNode.removeChild(empty);
    d.ids.forEach(function(id){
      if (document.getElementById(id)) return;
      var box = document.createElement('div');
      box.innerHTML = d.cards[id];
      list.appendChild(box.firstChild);
    });
    if (!d.ids.length && !$('empty')) list.innerHTML = d.empty;
    document.body.setAttribute('data-tasks', d.ids.length);
  });
  es.addEventListener('failure', function(e){ $('live').textContent = 'cannot follow: ' + JSON.parse(e.data).error; });
  es.onerror = function(){ $('live').textContent = 'reconnecting…'; };
  es.onopen = function(){ $('live').textContent = 'live'; };
})();
"#;

/// The page's script: applies `update` events to the chart, the trace table
/// and the status.
pub(crate) const RUN_SCRIPT: &str = r#"
(function(){
  var $ = function(id){ return document.getElementById(id); };
  var es = new EventSource($('live').getAttribute('data-events'));
  es.addEventListener('update', function(e){
    var d = JSON.parse(e.data);
    $('status').innerHTML = d.badge;
    $('events').textContent = d.events;
    $('outcome').innerHTML = d.outcome;
    if (d.chart !== undefined) { $('chart').innerHTML = d.chart; }
    if (d.tasks !== undefined) { $('tasks').innerHTML = d.tasks; }
    if (d.activity !== undefined) {
      // Keep the model calls a person opened open.
      var open = {};
      document.querySelectorAll('#activity details[open]').forEach(function(x){ open[x.id || x.className] = true; });
      $('activity').innerHTML = d.activity;
      document.querySelectorAll('#activity details').forEach(function(x){ if (open[x.id || x.className]) x.open = true; });
    }
    if (d.lifecycle !== undefined) {
      var meta = document.querySelector('meta[name=csrf-token]');
      var box = document.createElement('div');
      box.innerHTML = d.lifecycle;
      box.querySelectorAll('form').forEach(function(f){
        if (!meta) return;
        var i = document.createElement('input');
        i.type = 'hidden'; i.name = 'csrf'; i.value = meta.getAttribute('content');
        f.appendChild(i);
      });
      $('lifecycle').innerHTML = '';
      while (box.firstChild) $('lifecycle').appendChild(box.firstChild);
    }
    var body = $('trace');
    if (d.reset) { body.innerHTML = d.rows; } else { body.insertAdjacentHTML('beforeend', d.rows); }
    // The page keeps a window of the latest rows, as the server does.
    while (body.rows.length > d.window) { body.deleteRow(0); }
    document.body.setAttribute('data-status', d.status);
  });
  es.addEventListener('end', function(){ es.close(); $('live').textContent = 'finished'; });
  es.addEventListener('failure', function(e){ es.close(); $('live').textContent = 'cannot follow: ' + JSON.parse(e.data).error; });
  es.onerror = function(){ $('live').textContent = 'reconnecting…'; };
  es.onopen = function(){ $('live').textContent = 'live'; };
})();
"#;

/// Puts the tool calls models chose under the note of the action that
/// chose them, one note each (tool, arguments, result, who confirmed it).
/// The notes over a lifeline come in the order of its word's actions and
/// decisions, which is how a note is matched with its action.
fn with_chosen_calls(
    mut chart: troupe_msc::chart::Chart,
    program: &Program,
    workflow: &troupe_check::ir::Workflow,
    exec: &Execution,
    chosen: &[troupe_host::chosen::ChosenCall],
) -> troupe_msc::chart::Chart {
    use troupe_check::ir::{Call, StmtKind};
    use troupe_msc::chart::Item;
    if chosen.is_empty() {
        return chart;
    }
    let mut acts: HashMap<troupe_check::ir::StmtId, troupe_check::ir::ActionId> = HashMap::new();
    let mut stack = vec![&workflow.body];
    while let Some(block) = stack.pop() {
        for stmt in &block.stmts {
            match &stmt.kind {
                StmtKind::Act {
                    call: Call::Action { action, .. },
                    ..
                } => {
                    acts.insert(stmt.id, *action);
                }
                StmtKind::If {
                    then, otherwise, ..
                } => stack.extend([then, otherwise]),
                StmtKind::While { body, exit, .. } => stack.extend([body, exit]),
                _ => {}
            }
        }
    }
    // Per lifeline, the step of each note-making event (`None`: a
    // decision or an action without chosen calls).
    let mut notes: Vec<VecDeque<Option<String>>> = Vec::new();
    for (l, word) in exec.words.iter().enumerate() {
        let mut seen: HashMap<troupe_check::ir::ActionId, u64> = HashMap::new();
        let name = workflow.lifelines.get(l).map_or("?", |x| x.name.as_str());
        let mut q = VecDeque::new();
        for e in word {
            match e {
                Event::Act { stmt, .. } => q.push_back(acts.get(stmt).map(|a| {
                    let k = seen.entry(*a).or_insert(0);
                    *k += 1;
                    format!("{name}/{}#{}", program.action(*a).name, *k - 1)
                })),
                Event::Decide { .. } => q.push_back(None),
                _ => {}
            }
        }
        notes.push(q);
    }
    let items = std::mem::take(&mut chart.items);
    for item in items {
        let step = match &item {
            Item::Note { over, .. } => notes.get_mut(*over).and_then(VecDeque::pop_front).flatten(),
            _ => None,
        };
        let over = match &item {
            Item::Note { over, .. } => *over,
            _ => 0,
        };
        chart.items.push(item);
        for c in chosen.iter().filter(|c| Some(&c.step) == step.as_ref()) {
            let line = troupe_host::chosen::describe(c);
            let line = line.strip_prefix(&c.step).unwrap_or(&line).trim_start();
            chart.items.push(Item::Note {
                over,
                text: format!("↳ {}", clip(line, 120)),
            });
        }
    }
    chart
}

#[cfg(test)]
mod tests {
    use super::*;
    use troupe_check::Value;
    use troupe_check::ir::StmtId;
    use troupe_msc::Message;

    fn msg(k: i64) -> Message {
        Message::Data {
            stmt: StmtId(1),
            values: Some(vec![Value::Int(k)]),
        }
    }

    #[test]
    fn receives_of_messages_sent_before_the_window_are_found() {
        let (a, b) = (LifelineId(0), LifelineId(1));
        // A sent 0 and 1 before the window; in it B receives them, A sends
        // 2 and 3, and B receives 2.
        let window: VecDeque<(LifelineId, Event)> = [
            (
                b,
                Event::Recv {
                    from: a,
                    msg: msg(0),
                },
            ),
            (a, Event::Send { to: b, msg: msg(2) }),
            (
                b,
                Event::Recv {
                    from: a,
                    msg: msg(1),
                },
            ),
            (a, Event::Send { to: b, msg: msg(3) }),
            (
                b,
                Event::Recv {
                    from: a,
                    msg: msg(2),
                },
            ),
        ]
        .into();
        let early = receives_from_before(&window);
        assert_eq!(early, [0, 2].into_iter().collect());
        // A window that starts with nothing in flight leaves all in.
        let whole: VecDeque<_> = window.iter().skip(1).take(2).cloned().collect();
        assert!(
            receives_from_before(&VecDeque::from(vec![
                whole[0].clone(),
                (
                    b,
                    Event::Recv {
                        from: a,
                        msg: msg(2)
                    }
                ),
            ]))
            .is_empty()
        );
    }
}
