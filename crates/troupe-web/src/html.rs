//! HTML helpers: escaping (everything that comes from a store, a workflow or
//! a person goes through [`escape`]) and the page frame with its stylesheet
//! (light and dark, following the system's `prefers-color-scheme`; tables
//! scroll or stack on a phone).

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
        "stalled" | "paused" | "parked" => "stalled",
        _ => "run",
    };
    format!(
        "<span class=\"badge {class}\" data-status=\"{0}\">{0}</span>",
        escape(status)
    )
}

const CSS: &str = r#"
:root{color-scheme:light dark;--fg:#1d2433;--bg:#f6f7fb;--panel:#fff;--line:#e6e8ef;--head:#eef0f6;--meta:#5a6275;--link:#1c4fd8;--bar:#1d2433;
--ok-bg:#d4f4dd;--ok-fg:#145c2c;--bad-bg:#fbd9d9;--bad-fg:#7d1515;--wait-bg:#fff0c2;--wait-fg:#6b4e00;--run-bg:#d9e8ff;--run-fg:#12407a;--st-bg:#e5e5e5;--st-fg:#555;
--action:#7b8bb2;--llm:#5b6ee1;--tool:#d08a1f;--person:#e0b400;--model:#2aa876}
@media (prefers-color-scheme: dark){:root{--fg:#e3e7f1;--bg:#12151c;--panel:#1b2029;--line:#2c3341;--head:#232a36;--meta:#9aa3b8;--link:#8fb0ff;--bar:#0b0d12;
--ok-bg:#173d25;--ok-fg:#9be3b1;--bad-bg:#4a1c1c;--bad-fg:#ffb4b4;--wait-bg:#45390f;--wait-fg:#ffe08a;--run-bg:#1c3150;--run-fg:#a9c8ff;--st-bg:#333;--st-fg:#bbb}
#chart svg{filter:invert(.88) hue-rotate(180deg)}}
*{box-sizing:border-box}
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:var(--fg);background:var(--bg)}
a{color:var(--link)}
header{background:var(--bar);color:#fff;padding:.6rem 1.2rem;display:flex;gap:1.4rem;align-items:center;flex-wrap:wrap}
header a{color:#cfd8ff;text-decoration:none;font-weight:600}
header .brand{color:#fff;font-size:1.1rem}
main{padding:1rem 1.2rem;max-width:1400px}
h1{font-size:1.3rem;margin:.2rem 0 .8rem}
h2{font-size:1.05rem;margin:1.2rem 0 .5rem}
h4{margin:.6rem 0 .2rem;font-size:13px;color:var(--meta)}
table{border-collapse:collapse;width:100%;background:var(--panel);box-shadow:0 1px 2px #0001}
th,td{text-align:left;padding:.35rem .6rem;border-bottom:1px solid var(--line);vertical-align:top}
th{background:var(--head);font-weight:600}
td.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
td.mono,pre,code{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:13px}
pre{white-space:pre-wrap;word-break:break-word;margin:.3rem 0}
.scroll{overflow-x:auto;-webkit-overflow-scrolling:touch}
.badge{display:inline-block;padding:.05rem .5rem;border-radius:1rem;font-size:12px;font-weight:600;background:var(--run-bg)}
.badge.ok{background:var(--ok-bg);color:var(--ok-fg)}.badge.bad{background:var(--bad-bg);color:var(--bad-fg)}
.badge.wait{background:var(--wait-bg);color:var(--wait-fg)}.badge.stalled{background:var(--st-bg);color:var(--st-fg)}.badge.run{background:var(--run-bg);color:var(--run-fg)}
.card{background:var(--panel);border-radius:6px;box-shadow:0 1px 3px #0002;padding:.8rem 1rem;margin:.8rem 0}
.meta{color:var(--meta);font-size:13px}
.notice{padding:.6rem .9rem;border-radius:6px;margin:.6rem 0}
.notice.ok{background:var(--ok-bg);color:var(--ok-fg)}.notice.conflict{background:var(--wait-bg);color:var(--wait-fg)}.notice.error{background:var(--bad-bg);color:var(--bad-fg)}
button{font:inherit;padding:.35rem .9rem;border-radius:5px;border:1px solid #8a93a8;background:var(--panel);color:var(--fg);cursor:pointer;margin:.2rem .3rem .2rem 0}
button.yes{background:#1f8a4c;color:#fff;border-color:#1f8a4c}button.no{background:#b3261e;color:#fff;border-color:#b3261e}
input[type=text],input[type=number],input[type=search],input[type=date],select,textarea{font:inherit;padding:.35rem;border:1px solid #8a93a8;border-radius:4px;background:var(--panel);color:var(--fg)}
.task input[type=text],.task input[type=number],textarea{width:100%}
input:invalid:not(:placeholder-shown){border-color:#b3261e}
textarea{min-height:7rem;font-family:ui-monospace,monospace;font-size:13px}
.hint{display:block;margin-top:.2rem}
form.inline{display:inline}
.filters{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:flex-end;margin:.6rem 0}
.filters label{display:flex;flex-direction:column;font-size:13px;color:var(--meta)}
#chart{background:#fff;overflow:auto;padding:.5rem;box-shadow:0 1px 2px #0001}
#chart svg{max-width:100%;height:auto}
svg.timeline{width:100%;height:auto;display:block}
svg.timeline .axis{stroke:var(--line);stroke-width:1}
svg.timeline text{fill:var(--fg);font-size:12px}svg.timeline .tick{fill:var(--meta);font-size:11px}
.bar.action{fill:var(--action)}.bar.llm{fill:var(--llm)}.bar.tool{fill:var(--tool)}.bar.person{fill:var(--person)}.bar.model{fill:var(--model)}
.bar.open{opacity:.7}
.legend .key{display:inline-block;width:.9em;height:.9em;border-radius:2px;margin:0 .25rem 0 .8rem;vertical-align:-.1em}
.key.action{background:var(--action)}.key.llm{background:var(--llm)}.key.tool{background:var(--tool)}.key.person{background:var(--person)}.key.model{background:var(--model)}
details.call summary{cursor:pointer}
.grid{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem}
header .signout{margin-left:auto}header .signout button{margin:0;padding:.15rem .7rem;font-size:13px;background:transparent;color:#fff}
@media (max-width: 640px){
main{padding:.6rem}
header{padding:.5rem .7rem;gap:.8rem}
.grid{grid-template-columns:1fr}
table.runs thead{display:none}
table.runs tr{display:block;border-bottom:1px solid var(--line);padding:.3rem 0}
table.runs td{display:flex;justify-content:space-between;gap:1rem;border:0;padding:.15rem .6rem;text-align:right}
table.runs td::before{content:attr(data-label);color:var(--meta);font-size:13px;text-align:left}
.filters label{flex:1 1 40%}
}
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
