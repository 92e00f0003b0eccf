//! A run as the page shows it: the recorded trace, its sequence chart (the
//! recorded execution drawn with `troupe_msc::execution_chart`) and the
//! server-sent event stream that keeps both up to date while the run goes on.
//!
//! The stream polls the store every [`POLL`] with short reads (one query
//! each; a long-lived reader would hold back WAL checkpoints) and sends an
//! `update` event whenever new events were committed or the status changed,
//! then `end` once the run is over.

use crate::html::{clip, escape};
use crate::routes::App;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::stream::Stream;
use std::convert::Infallible;
use std::time::Duration;
use troupe_check::ir::{LifelineId, Program};
use troupe_msc::{ChartOptions, Event, Execution, execution_chart};
use troupe_runtime::{Trace, TraceEntry};
use troupe_store::{RunDetail, Store, StoreError};

/// How often the live stream reads the store.
pub(crate) const POLL: Duration = Duration::from_millis(300);

/// Statuses after which nothing more is recorded (until a resume).
pub(crate) fn is_over(status: &str) -> bool {
    matches!(
        status,
        "done" | "failed" | "cancelled" | "stalled" | "needs_resolution"
    )
}

/// The recorded events of one run, with what is needed to name them.
#[derive(Debug)]
pub(crate) struct RunView {
    run: i64,
    /// The checked recorded source and the index of the run's workflow; none
    /// when the recorded source does not check any more.
    program: Option<(Program, usize)>,
    lifelines: usize,
    pub(crate) events: Vec<(LifelineId, Event)>,
    next_chunk: i64,
}

impl RunView {
    /// Reads everything recorded so far. Blocking.
    pub(crate) fn load(store: &Store, detail: &RunDetail) -> Result<RunView, StoreError> {
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
        let mut view = RunView {
            run: detail.summary.id,
            program,
            lifelines,
            events: Vec::new(),
            next_chunk: 0,
        };
        view.refresh(store)?;
        Ok(view)
    }

    /// Reads the events committed since the last read; returns how many.
    pub(crate) fn refresh(&mut self, store: &Store) -> Result<usize, StoreError> {
        let (events, next) = store.events(self.run, self.next_chunk)?;
        self.next_chunk = next;
        let n = events.len();
        self.events.extend(events);
        Ok(n)
    }

    fn trace(&self, from: usize) -> Trace {
        Trace {
            entries: self
                .events
                .iter()
                .enumerate()
                .skip(from)
                .map(|(i, (lifeline, event))| TraceEntry {
                    time: i as u64,
                    lifeline: *lifeline,
                    event: event.clone(),
                })
                .collect(),
        }
    }

    /// The trace as JSON records (as `troupe trace --json` prints them).
    pub(crate) fn trace_json(&self) -> serde_json::Value {
        match &self.program {
            Some((p, i)) => self.trace(0).to_json(p, &p.workflows[*i]),
            None => serde_json::Value::Array(Vec::new()),
        }
    }

    /// The sequence chart of what is recorded so far, as inline SVG.
    pub(crate) fn chart_svg(&self) -> String {
        let Some((program, i)) = &self.program else {
            return "<p class=\"meta\">The recorded source no longer checks: no chart.</p>"
                .to_owned();
        };
        let mut exec = Execution::new(self.lifelines);
        for (l, e) in &self.events {
            if let Some(word) = exec.words.get_mut(l.0 as usize) {
                word.push(e.clone());
            }
        }
        let chart = execution_chart(
            program,
            &program.workflows[*i],
            &exec,
            &ChartOptions::default(),
        );
        troupe_msc::chart::svg::render(&chart)
    }

    /// Table rows for the events from index `from` on.
    pub(crate) fn rows_html(&self, from: usize) -> String {
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
    last: Option<(String, usize)>,
    sent_rows: usize,
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
                    v
                }
                None => RunView::load(&store, &detail)?,
            };
            Ok::<_, StoreError>((detail, view))
        })
        .await;
        let (detail, view) = match read {
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
        let now = (status.clone(), view.events.len());
        let changed = live.last.as_ref() != Some(&now);
        if !changed {
            live.view = Some(view);
            if is_over(&status) {
                live.finished = true;
                return Some((Ok(SseEvent::default().event("end").data("over")), live));
            }
            continue;
        }
        let reset = live.last.is_none();
        let from = if reset { 0 } else { live.sent_rows };
        let data = serde_json::json!({
            "status": status,
            "badge": crate::html::status_badge(&status),
            "events": view.events.len(),
            "outcome": outcome_html(&detail),
            "chart": view.chart_svg(),
            "rows": view.rows_html(from),
            "reset": reset,
        });
        live.sent_rows = view.events.len();
        live.last = Some(now);
        live.view = Some(view);
        live.ending = is_over(&status);
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
        sent_rows: 0,
        ending: false,
        finished: false,
    };
    Sse::new(futures_util::stream::unfold(live, next_event)).keep_alive(KeepAlive::default())
}

/// The page's script: applies `update` events to the chart, the trace table
/// and the status.
pub(crate) const RUN_SCRIPT: &str = r#"
(function(){
  var es = new EventSource(location.pathname.replace(/\/$/, '') + '/events');
  var $ = function(id){ return document.getElementById(id); };
  es.addEventListener('update', function(e){
    var d = JSON.parse(e.data);
    $('status').innerHTML = d.badge;
    $('events').textContent = d.events;
    $('outcome').innerHTML = d.outcome;
    $('chart').innerHTML = d.chart;
    var body = $('trace');
    if (d.reset) { body.innerHTML = d.rows; } else { body.insertAdjacentHTML('beforeend', d.rows); }
    document.body.setAttribute('data-status', d.status);
  });
  es.addEventListener('end', function(){ es.close(); $('live').textContent = 'finished'; });
  es.addEventListener('failure', function(e){ es.close(); $('live').textContent = 'cannot follow: ' + JSON.parse(e.data).error; });
  es.onerror = function(){ $('live').textContent = 'reconnecting…'; };
  es.onopen = function(){ $('live').textContent = 'live'; };
})();
"#;
