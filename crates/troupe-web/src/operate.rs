//! Operating a run from the console: cancel, retry, pause, unpause and
//! fork, as POST forms on the run's page (with the session's CSRF token),
//! each through the host or the store exactly as the CLI's commands go,
//! answered with the run's page and a notice saying what happened.

use crate::html::{csrf_field, escape};
use crate::routes::{
    App, PageError, SessionCsrf, blocking, host, parse_run, run_page_with, token_of,
};
use axum::extract::{Form, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use troupe_store::{Pausing, Store};

/// The buttons a run's status allows: cancel while it is not over, retry
/// when it failed, pause while it may still run, unpause when paused, and
/// fork always (a fork of a finished run is time travel).
pub(crate) fn lifecycle_buttons(run: i64, status: &str, csrf: Option<&str>) -> String {
    let hidden = csrf.map(csrf_field).unwrap_or_default();
    let form = |action: &str, class: &str, id: &str, label: &str, extra: &str| {
        format!(
            "<form method=\"post\" action=\"/runs/{run}/{action}\" class=\"inline\">{hidden}{extra}<button type=\"submit\" class=\"{class}\" id=\"{id}\">{label}</button></form>"
        )
    };
    let mut out = String::new();
    let over = crate::live::is_over(status);
    if !over {
        out.push_str(&form("cancel", "no", "cancel", "Cancel run", ""));
    }
    if status == "failed" {
        out.push_str(&form(
            "retry",
            "yes",
            "retry",
            "Retry from the last durable step",
            "",
        ));
    }
    if !over && status != "paused" {
        out.push_str(&form("pause", "", "pause", "Pause", ""));
    }
    if status == "paused" {
        out.push_str(&form("unpause", "yes", "unpause", "Unpause", ""));
    }
    out.push_str(&form(
        "fork",
        "",
        "fork",
        "Fork",
        "<input name=\"at\" id=\"fork-at\" size=\"16\" placeholder=\"at step (number or key)\" aria-label=\"fork at step\">",
    ));
    out
}

/// The run's page with `notice`, answered with `status`.
async fn answer(
    app: &App,
    id: &str,
    csrf: &SessionCsrf,
    status: StatusCode,
    notice: String,
) -> Result<Response, PageError> {
    let page = run_page_with(app, id, None, &notice, token_of(csrf)).await?;
    Ok((status, page).into_response())
}

fn ok(text: &str) -> String {
    format!("<div class=\"notice ok\" id=\"notice\">{text}</div>")
}

fn refused(what: &str, e: &dyn std::fmt::Display) -> String {
    format!(
        "<div class=\"notice error\" id=\"notice\">{what}: {}</div>",
        escape(&e.to_string())
    )
}

/// `POST /runs/{id}/cancel`: cancels the run through the host (at once when
/// no live owner holds it; otherwise its owner stops it at its next lease
/// renewal).
pub(crate) async fn run_cancel(
    State(app): State<App>,
    Path(id): Path<String>,
    csrf: SessionCsrf,
) -> Result<Response, PageError> {
    let run = parse_run(&id)?;
    let host = host(&app);
    let result = blocking(move || host.cancel(run, "cancelled from the web console")).await?;
    let (status, notice) = match result {
        Ok(troupe_host::Cancel::Cancelled) => (StatusCode::OK, ok("Cancelled.")),
        Ok(troupe_host::Cancel::Requested { owner }) => (
            StatusCode::OK,
            ok(&format!(
                "Cancel requested: {} stops the run at its next lease renewal.",
                escape(&owner)
            )),
        ),
        Err(e) => (StatusCode::CONFLICT, refused("Not cancelled", &e)),
    };
    answer(&app, &id, &csrf, status, notice).await
}

/// `POST /runs/{id}/retry`: reopens a failed run through the host and
/// drives it in this server from its last durable step, with its recorded
/// models and settings.
pub(crate) async fn run_retry(
    State(app): State<App>,
    Path(id): Path<String>,
    csrf: SessionCsrf,
) -> Result<Response, PageError> {
    let run = parse_run(&id)?;
    let host = host(&app);
    let (result, host) = blocking(move || (host.retry(run), host)).await?;
    let (status, notice) = match result {
        Ok(()) => {
            crate::routes::spawn_drive(host, run);
            (StatusCode::OK, ok("Retrying from the last durable step."))
        }
        Err(e) => (StatusCode::CONFLICT, refused("Not retried", &e)),
    };
    answer(&app, &id, &csrf, status, notice).await
}

/// `POST /runs/{id}/pause`: pauses the run at once when nobody drives it,
/// else asks its owner to at its next step boundary (`troupe pause`).
pub(crate) async fn run_pause(
    State(app): State<App>,
    Path(id): Path<String>,
    csrf: SessionCsrf,
) -> Result<Response, PageError> {
    let run = parse_run(&id)?;
    let store = app.store.clone();
    let (status, notice) = match blocking(move || store.request_pause(run)).await? {
        Ok(Pausing::Paused | Pausing::Already) => (
            StatusCode::OK,
            ok("Paused: it holds no lease, and nobody takes it up until it is unpaused."),
        ),
        Ok(Pausing::Asked { owner }) => (
            StatusCode::OK,
            ok(&format!(
                "Pause requested: {} stops the run at its next step boundary (an effect in flight finishes first).",
                escape(&troupe_store::describe_owner(&owner))
            )),
        ),
        Err(e) => (StatusCode::CONFLICT, refused("Not paused", &e)),
    };
    answer(&app, &id, &csrf, status, notice).await
}

/// `POST /runs/{id}/unpause`: queues a paused run again (or withdraws a
/// pause not yet reached), for any worker or `troupe resume`.
pub(crate) async fn run_unpause(
    State(app): State<App>,
    Path(id): Path<String>,
    csrf: SessionCsrf,
) -> Result<Response, PageError> {
    let run = parse_run(&id)?;
    let store = app.store.clone();
    let (status, notice) = match blocking(move || store.unpause(run)).await? {
        Ok(true) => (
            StatusCode::OK,
            ok("Unpaused: queued again for a worker or `troupe resume`."),
        ),
        Ok(false) => (
            StatusCode::CONFLICT,
            refused("Not unpaused", &"the run is not paused"),
        ),
        Err(e) => (StatusCode::CONFLICT, refused("Not unpaused", &e)),
    };
    answer(&app, &id, &csrf, status, notice).await
}

#[derive(Debug, Deserialize)]
pub(crate) struct ForkForm {
    /// The step to run live from: its number in recorded order or its key;
    /// empty: after the last recorded step.
    #[serde(default)]
    at: String,
}

/// `POST /runs/{id}/fork`: starts a new run that takes the recorded
/// results of the steps before `at` and runs live from there, driven in
/// this server (as `troupe fork`); the notice links to it.
pub(crate) async fn run_fork(
    State(app): State<App>,
    Path(id): Path<String>,
    csrf: SessionCsrf,
    Form(form): Form<ForkForm>,
) -> Result<Response, PageError> {
    let from = parse_run(&id)?;
    let at = match form.at.trim() {
        "" => troupe_store::ForkAt::End,
        text => match text.parse::<u64>() {
            Ok(n) => troupe_store::ForkAt::Nth(n),
            Err(_) => troupe_store::ForkAt::Key(text.to_owned()),
        },
    };
    let host = host(&app);
    let (result, host) = blocking(move || (host.fork(from, &at, &[]), host)).await?;
    let (status, notice) = match result {
        Ok((started, forked)) => {
            let run = started.run;
            crate::routes::spawn_drive(host, run);
            (
                StatusCode::OK,
                ok(&format!(
                    "Forked: <a href=\"/runs/{run}\" id=\"forked\">{}</a> took {} recorded step(s) and runs live from there.",
                    escape(&Store::run_name(run)),
                    forked.steps
                )),
            )
        }
        Err(e) => (StatusCode::CONFLICT, refused("Not forked", &e)),
    };
    answer(&app, &id, &csrf, status, notice).await
}
