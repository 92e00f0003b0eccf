//! troupe's Mermaid charts in the real renderer: every chart of every
//! example and of the ok corpus (with and without control messages) is
//! rendered by Mermaid itself (the npm package, pinned by
//! `.ci/install-mermaid.sh`) in headless Chromium, one page for all. Each
//! must render without a syntax error, and a chart with a `par` (or a
//! coregion) must draw as many `par` frames as the text opens.
//!
//! Needs `chromium` (`.ci/install-browser.sh`) and Mermaid
//! (`.ci/install-mermaid.sh`; or set `TROUPE_MERMAID_JS` to a
//! `mermaid.min.js`, `TROUPE_CHROMIUM` to a browser).

use std::path::{Path, PathBuf};
use std::process::Command;
use troupe_msc::{ChartOptions, chart_mermaid};

fn mermaid_js() -> PathBuf {
    if let Some(p) = std::env::var_os("TROUPE_MERMAID_JS") {
        return PathBuf::from(p);
    }
    let home = std::env::var_os("HOME").unwrap_or_default();
    let p = Path::new(&home)
        .join(".cache/troupe/mermaid-11.17.2/node_modules/mermaid/dist/mermaid.min.js");
    assert!(
        p.is_file(),
        "{} is missing: install Mermaid with `bash .ci/install-mermaid.sh` (or set TROUPE_MERMAID_JS)",
        p.display()
    );
    p
}

fn chromium() -> PathBuf {
    if let Some(p) = std::env::var_os("TROUPE_CHROMIUM") {
        return PathBuf::from(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for n in ["chromium", "chromium-browser"] {
            let p = dir.join(n);
            if p.is_file() {
                return p;
            }
        }
    }
    panic!(
        "chromium is missing: install it with `bash .ci/install-browser.sh` (or set TROUPE_CHROMIUM)"
    );
}

/// (name, Mermaid text) of every chart to render.
fn charts() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in ["examples", "crates/troupe-check/tests/corpus/ok"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "troupe") {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let loaded = troupe_check::load_file(&path).unwrap();
        let (program, _) = loaded.check();
        let Some(program) = program else { continue };
        for (_, w) in program.own_workflows() {
            for show_control in [false, true] {
                let text = chart_mermaid(
                    &program,
                    w,
                    &ChartOptions {
                        show_control,
                        inline: false,
                    },
                );
                let name = format!(
                    "{}:{}{}",
                    path.file_name().unwrap().to_string_lossy(),
                    w.name,
                    if show_control { " (control)" } else { "" }
                );
                out.push((name, text));
            }
        }
    }
    out
}

const PAGE: &str = r#"<!doctype html><html><body>
<pre id="out">pending</pre>
<script src="MERMAID"></script>
<script>
const charts = CHARTS;
mermaid.initialize({ startOnLoad: false });
(async () => {
  const results = [];
  for (let i = 0; i < charts.length; i++) {
    try {
      const r = await mermaid.render('chart' + i, charts[i]);
      const pars = (r.svg.match(/>par</g) || []).length;
      results.push({ ok: true, pars });
    } catch (e) {
      results.push({ ok: false, error: String(e) });
    }
  }
  document.getElementById('out').textContent = 'DONE ' + JSON.stringify(results);
})();
</script></body></html>"#;

#[test]
fn every_chart_renders_in_mermaid_and_par_frames_are_drawn() {
    let js = mermaid_js();
    let browser = chromium();
    let charts = charts();
    let texts: Vec<&str> = charts.iter().map(|(_, t)| t.as_str()).collect();
    let page = PAGE
        .replace("MERMAID", &format!("file://{}", js.display()))
        .replace("CHARTS", &serde_json::to_string(&texts).unwrap());
    let dir = std::env::temp_dir().join(format!("troupe-mermaid-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let html = dir.join("charts.html");
    std::fs::write(&html, page).unwrap();
    let out = Command::new(&browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--allow-file-access-from-files",
            "--virtual-time-budget=60000",
            &format!("--user-data-dir={}", dir.join("profile").display()),
            "--dump-dom",
            &format!("file://{}", html.display()),
        ])
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let dom = String::from_utf8_lossy(&out.stdout);
    let start = dom
        .find("DONE ")
        .unwrap_or_else(|| panic!("the page did not finish: {dom}"));
    let json = &dom[start + 5..];
    let json = &json[..json.find("</pre>").unwrap()];
    let json = json
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    let results: Vec<serde_json::Value> = serde_json::from_str(&json).unwrap();
    assert_eq!(results.len(), charts.len());
    let mut drawn = 0;
    for ((name, text), r) in charts.iter().zip(&results) {
        assert_eq!(
            r["ok"], true,
            "{name} does not render: {}\n{text}",
            r["error"]
        );
        let opened = text
            .lines()
            .filter(|l| l.trim_start().starts_with("par "))
            .count();
        assert_eq!(
            r["pars"].as_u64(),
            Some(opened as u64),
            "{name}: Mermaid drew another number of `par` frames\n{text}"
        );
        drawn += opened;
    }
    assert!(
        charts.len() > 20 && drawn >= 8,
        "{} charts, {drawn} par frames",
        charts.len()
    );
}
