//! Defences of the pages: security headers on every response, and a
//! same-origin rule for every request that changes state.
//!
//! A page on another port of the same host is *same-site* to the browser, so
//! a `SameSite=Strict` cookie still goes with its form posts: the cookie
//! alone cannot tell the inbox from a hostile page on `127.0.0.1:8000`. The
//! browser does say where a request comes from (`Origin`, and
//! `Sec-Fetch-Site` in current browsers); a state-changing request whose
//! origin is not this server's is refused. Scripts (`curl` with the bearer
//! token) send neither header and are unaffected; webhook answers, which
//! carry a per-task secret of their own, are exempt.

use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The Content-Security-Policy of every page: only this server's own
/// resources (no inline script or style: they are served from `/assets/`),
/// never framed.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'";

/// Adds the security headers to a response.
pub(crate) async fn headers(req: Request, next: Next) -> Response {
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    resp
}

/// Refuses a state-changing request that a browser sent from another origin.
pub(crate) async fn same_origin(req: Request, next: Next) -> Response {
    let changes_state = !matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    if changes_state
        && !req.uri().path().starts_with("/hooks/")
        && let Some(why) = foreign(&req)
    {
        return (
            StatusCode::FORBIDDEN,
            format!("refused: {why}; answer from this server's own pages"),
        )
            .into_response();
    }
    next.run(req).await
}

/// Why `req` comes from another origin, if it does. `Sec-Fetch-Site`, which
/// current browsers always send, decides; `Origin` is the fallback (under
/// `Referrer-Policy: no-referrer` a browser may send `Origin: null` even
/// for its own pages, so it cannot come first).
fn foreign(req: &Request) -> Option<String> {
    let headers = req.headers();
    if let Some(site) = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) {
        return (!matches!(site, "same-origin" | "none")).then(|| format!("a {site} request"));
    }
    let origin = headers.get(header::ORIGIN)?.to_str().ok().unwrap_or("null");
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    let ours = host.is_some_and(|h| {
        origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"))
            .is_some_and(|o| o.eq_ignore_ascii_case(h))
    });
    (!ours).then(|| format!("a request from the origin {origin}"))
}
