//! HTML helpers: escaping (everything that comes from a store, a workflow or
//! a person goes through [`escape`]) and the page frame with its inline CSS.

use axum::response::Html;

/// Escapes text for HTML character data and quoted attribute values.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// At most `n` characters of `s`, with an ellipsis when cut.
pub(crate) fn clip(s: &str, n: usize) -> String {
    if s.chars().count() > n {
        format!(
            "{}…",
            s.chars().take(n.saturating_sub(1)).collect::<String>()
        )
    } else {
        s.to_owned()
    }
}

/// The CSS class of a status badge.
pub(crate) fn status_badge(status: &str) -> String {
    let class = match status {
        "done" | "answered" => "ok",
        "failed" | "needs_resolution" | "cancelled" => "bad",
        "waiting" | "pending" => "wait",
        "stalled" => "stalled",
        _ => "run",
    };
    format!(
        "<span class=\"badge {class}\" data-status=\"{0}\">{0}</span>",
        escape(status)
    )
}

const CSS: &str = r#"
*{box-sizing:border-box}
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d2433;background:#f6f7fb}
header{background:#1d2433;color:#fff;padding:.6rem 1.2rem;display:flex;gap:1.4rem;align-items:center}
header a{color:#cfd8ff;text-decoration:none;font-weight:600}
header .brand{color:#fff;font-size:1.1rem}
main{padding:1rem 1.2rem;max-width:1400px}
h1{font-size:1.3rem;margin:.2rem 0 .8rem}
h2{font-size:1.05rem;margin:1.2rem 0 .5rem}
table{border-collapse:collapse;width:100%;background:#fff;box-shadow:0 1px 2px #0001}
th,td{text-align:left;padding:.35rem .6rem;border-bottom:1px solid #e6e8ef;vertical-align:top}
th{background:#eef0f6;font-weight:600}
td.mono,pre,code{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:13px}
pre{white-space:pre-wrap;margin:.3rem 0}
.badge{display:inline-block;padding:.05rem .5rem;border-radius:1rem;font-size:12px;font-weight:600;background:#dde3f5}
.badge.ok{background:#d4f4dd;color:#145c2c}.badge.bad{background:#fbd9d9;color:#7d1515}
.badge.wait{background:#fff0c2;color:#6b4e00}.badge.stalled{background:#e5e5e5;color:#555}.badge.run{background:#d9e8ff;color:#12407a}
.card{background:#fff;border-radius:6px;box-shadow:0 1px 3px #0002;padding:.8rem 1rem;margin:.8rem 0}
.meta{color:#5a6275;font-size:13px}
.notice{padding:.6rem .9rem;border-radius:6px;margin:.6rem 0}
.notice.ok{background:#d4f4dd}.notice.conflict{background:#fff0c2}.notice.error{background:#fbd9d9}
button{font:inherit;padding:.35rem .9rem;border-radius:5px;border:1px solid #8a93a8;background:#fff;cursor:pointer;margin:.2rem .3rem .2rem 0}
button.yes{background:#1f8a4c;color:#fff;border-color:#1f8a4c}button.no{background:#b3261e;color:#fff;border-color:#b3261e}
input[type=text],textarea{font:inherit;width:100%;padding:.35rem;border:1px solid #8a93a8;border-radius:4px}
textarea{min-height:7rem;font-family:ui-monospace,monospace;font-size:13px}
#chart{background:#fff;overflow:auto;padding:.5rem;box-shadow:0 1px 2px #0001}
#chart svg{max-width:100%;height:auto}
.grid{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem}
header .signout{margin-left:auto}header .signout button{margin:0;padding:.15rem .7rem;font-size:13px}
"#;

/// The stylesheet, served as `/assets/troupe.css` (the CSP allows no
/// inline style).
pub(crate) const STYLESHEET: &str = CSS;

/// A whole page. `script` names a script of `/assets/` (the CSP allows no
/// inline script); `csrf` is the session's CSRF token, given to the page's
/// scripts in a `<meta>` and used by the sign-out form.
pub(crate) fn page(title: &str, body: &str, script: &str, csrf: Option<&str>) -> Html<String> {
    let script = if script.is_empty() {
        String::new()
    } else {
        format!("<script src=\"/assets/{}\"></script>", escape(script))
    };
    let (meta, sign_out) = match csrf {
        Some(t) => (
            format!("<meta name=\"csrf-token\" content=\"{}\">", escape(t)),
            format!(
                "<form method=\"post\" action=\"/logout\" class=\"signout\">{}<button type=\"submit\">Sign out</button></form>",
                csrf_field(t)
            ),
        ),
        None => (String::new(), String::new()),
    };
    Html(format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">{meta}\
<title>{} · troupe</title><link rel=\"stylesheet\" href=\"/assets/troupe.css\"></head><body>\
<header><a class=\"brand\" href=\"/\">troupe</a><a href=\"/\">Runs</a><a href=\"/inbox\">Inbox</a>{sign_out}</header>\
<main>{body}</main>{script}</body></html>",
        escape(title)
    ))
}

/// The hidden form field that carries the session's CSRF token.
pub(crate) fn csrf_field(token: &str) -> String {
    format!(
        "<input type=\"hidden\" name=\"{}\" value=\"{}\">",
        crate::auth::CSRF_FIELD,
        escape(token)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape("<script>alert('x')</script>&\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;"
        );
        assert_eq!(clip("abcdef", 4), "abc…");
        assert_eq!(clip("abc", 4), "abc");
    }
}
