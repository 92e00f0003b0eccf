//! Tidy checks over the whole repository.
//!
//! - ARCHITECTURE.md names only what exists: every file path, directory and
//!   `path.rs::test_name` it mentions in backticks resolves (relative to
//!   the crate whose section it is in, or to `crates/`), and each named
//!   test is a function of that file.
//! - Every crate has a section in its code map.
//! - Every Rust file under `crates/` opens with a `//!` module doc.
//! - Every crate is `publish = false` and inherits the workspace's
//!   `rust-version`.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn crates() -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(root().join("crates"))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().join("Cargo.toml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

fn architecture() -> String {
    std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap()
}

/// The words between backticks, with the crates of the section each is in.
fn mentions(doc: &str) -> Vec<(Vec<String>, String)> {
    let mut out = Vec::new();
    let mut section: Vec<String> = Vec::new();
    for line in doc.lines() {
        if line.starts_with('#') {
            section = line
                .split('`')
                .skip(1)
                .step_by(2)
                .filter_map(|w| w.strip_prefix("crates/"))
                .map(str::to_owned)
                .collect();
        }
    }
    // Second pass with the section known at each line; code blocks skipped.
    let mut in_code = false;
    let mut text = String::new();
    for line in doc.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        if line.starts_with('#') {
            if !text.is_empty() {
                collect(&section, &text, &mut out);
                text.clear();
            }
            section = line
                .split('`')
                .skip(1)
                .step_by(2)
                .filter_map(|w| w.strip_prefix("crates/"))
                .map(str::to_owned)
                .collect();
            continue;
        }
        text.push_str(line);
        text.push('\n');
    }
    collect(&section, &text, &mut out);
    out
}

fn collect(section: &[String], text: &str, out: &mut Vec<(Vec<String>, String)>) {
    for (i, word) in text.split('`').enumerate() {
        if i % 2 == 1 {
            out.push((section.to_vec(), word.replace('\n', " ")));
        }
    }
}

/// Whether a mention looks like a path (`x.rs`, `a/b.rs::f`, `dir/`).
fn is_path(word: &str) -> bool {
    let path = word.split("::").next().unwrap_or("");
    !word.contains(' ')
        && !path.contains('*')
        && !path.starts_with('.')
        && !path.starts_with('/')
        && (path.ends_with(".rs")
            || path.ends_with(".md") && path.contains('/')
            || (path.ends_with('/') && path.len() > 1))
}

/// `a/{b,c}/d` → `a/b/d`, `a/c/d`.
fn expand(path: &str) -> Vec<String> {
    match (path.find('{'), path.find('}')) {
        (Some(i), Some(j)) if i < j => path[i + 1..j]
            .split(',')
            .flat_map(|alt| expand(&format!("{}{alt}{}", &path[..i], &path[j + 1..])))
            .collect(),
        _ => vec![path.to_owned()],
    }
}

fn find_under(dir: &Path, name: &str, depth: usize) -> Option<PathBuf> {
    let direct = dir.join(name);
    if direct.exists() {
        return Some(direct);
    }
    if depth == 0 {
        return None;
    }
    for e in std::fs::read_dir(dir).ok()?.filter_map(Result::ok) {
        let p = e.path();
        if p.is_dir()
            && !p.ends_with("target")
            && let Some(found) = find_under(&p, name, depth - 1)
        {
            return Some(found);
        }
    }
    None
}

fn resolve(section: &[String], all: &[String], path: &str) -> Option<PathBuf> {
    let root = root();
    let crates = root.join("crates");
    let first = path.split('/').next().unwrap_or("");
    if path.starts_with("crates/") {
        return Some(root.join(path)).filter(|p| p.exists());
    }
    if all.iter().any(|c| c == first) {
        return Some(crates.join(path)).filter(|p| p.exists());
    }
    if root.join(path).exists() {
        return Some(root.join(path));
    }
    let scope: Vec<&String> = if section.is_empty() {
        all.iter().collect()
    } else {
        section.iter().collect()
    };
    scope
        .iter()
        .find_map(|c| find_under(&crates.join(c), path, 4))
}

#[test]
fn architecture_names_only_what_exists() {
    let all = crates();
    let mut wrong = Vec::new();
    let mut tests = 0;
    for (section, word) in mentions(&architecture()) {
        if !is_path(&word) {
            continue;
        }
        let mut parts = word.split("::");
        let path = parts.next().unwrap();
        let items: Vec<&str> = parts.collect();
        for path in expand(path) {
            let Some(file) = resolve(&section, &all, &path) else {
                wrong.push(format!("`{word}`: no file {path} (section {section:?})"));
                continue;
            };
            if let Some(name) = items.last() {
                tests += 1;
                let text = std::fs::read_to_string(&file).unwrap_or_default();
                if !text.contains(&format!("fn {name}(")) {
                    wrong.push(format!("`{word}`: {} has no fn {name}", file.display()));
                }
                for module in &items[..items.len() - 1] {
                    if !text.contains(&format!("mod {module}")) {
                        wrong.push(format!("`{word}`: {} has no mod {module}", file.display()));
                    }
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "ARCHITECTURE.md names what does not exist:\n{}",
        wrong.join("\n")
    );
    assert!(tests >= 30, "ARCHITECTURE.md names only {tests} tests");
}

#[test]
fn every_crate_is_in_the_code_map() {
    let doc = architecture();
    let headings: Vec<&str> = doc.lines().filter(|l| l.starts_with("### ")).collect();
    let missing: Vec<String> = crates()
        .into_iter()
        .filter(|c| {
            !headings
                .iter()
                .any(|h| h.contains(&format!("`crates/{c}`")))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "crates without a section in ARCHITECTURE.md's code map: {missing:?}"
    );
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.filter_map(Result::ok) {
        let p = e.path();
        let name = e.file_name();
        if p.is_dir() {
            if name != "target" && name != "snapshots" && name != "node_modules" {
                rust_files(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn every_module_opens_with_a_doc_comment() {
    let mut files = Vec::new();
    for c in crates() {
        let dir = root().join("crates").join(c);
        for sub in ["src", "tests", "examples", "benches"] {
            rust_files(&dir.join(sub), &mut files);
        }
    }
    let undocumented: Vec<String> = files
        .iter()
        .filter(|f| {
            let text = std::fs::read_to_string(f).unwrap_or_default();
            !text
                .lines()
                .find(|l| !l.trim().is_empty())
                .is_some_and(|l| l.starts_with("//!"))
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(files.len() > 100, "only {} Rust files found", files.len());
    assert!(
        undocumented.is_empty(),
        "modules that do not open with a //! doc comment:\n{}",
        undocumented.join("\n")
    );
}

#[test]
fn every_crate_is_private_and_inherits_the_msrv() {
    let mut wrong = Vec::new();
    for c in crates() {
        let text =
            std::fs::read_to_string(root().join("crates").join(&c).join("Cargo.toml")).unwrap();
        if !text.lines().any(|l| l.trim() == "publish = false") {
            wrong.push(format!("{c}: no `publish = false`"));
        }
        if !text
            .lines()
            .any(|l| l.trim() == "rust-version.workspace = true")
        {
            wrong.push(format!("{c}: no `rust-version.workspace = true`"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Whether a Rust file says at its top that a tool wrote it (`@generated`,
/// "do not edit", …): generated code is not held to the size of a room.
fn is_generated(text: &str) -> bool {
    const MARKERS: [&str; 5] = [
        "@generated",
        "do not edit",
        "automatically generated",
        "auto-generated",
        "code generated by",
    ];
    text.lines().take(5).any(|l| {
        let l = l.to_ascii_lowercase();
        l.trim_start().starts_with("//") && MARKERS.iter().any(|m| l.contains(m))
    })
}

/// Small rooms (issue #29): no Rust source file under `crates/` is over
/// 1,000 lines (aim for 800 at most); a larger one is split by concern into
/// a directory module. Generated code is exempt.
#[test]
fn no_source_file_is_over_a_thousand_lines() {
    const MAX: usize = 1_000;
    let root = root();
    let mut files = Vec::new();
    rust_files(&root.join("crates"), &mut files);
    assert!(files.len() > 100, "only {} Rust files found", files.len());
    let mut large: Vec<(usize, String)> = files
        .iter()
        .filter_map(|f| {
            let text = std::fs::read_to_string(f).unwrap_or_default();
            let lines = text.lines().count();
            (lines > MAX && !is_generated(&text)).then(|| {
                let shown = f.strip_prefix(&root).unwrap_or(f).display().to_string();
                (lines, shown)
            })
        })
        .collect();
    large.sort_by(|a, b| b.cmp(a));
    assert!(
        large.is_empty(),
        "source files over {MAX} lines (split them by concern, e.g. into a directory module):\n{}",
        large
            .iter()
            .map(|(n, f)| format!("{f}: {n} lines"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The names of the dependencies a `Cargo.toml` lists, in any dependency
/// table (`[dependencies]`, `[dev-dependencies]`, `[build-dependencies]`,
/// their `[target.….dependencies]` forms and `[dependencies.NAME]`
/// tables), with the crates they rename (`package = "…"`).
fn dependency_names(manifest: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut in_deps = false;
    for line in manifest.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.starts_with('[') {
            let table = line.trim_matches(|c| c == '[' || c == ']').trim();
            let parts: Vec<&str> = table.split('.').collect();
            let kinds = ["dependencies", "dev-dependencies", "build-dependencies"];
            in_deps = false;
            if let Some(i) = parts.iter().position(|p| kinds.contains(p)) {
                match parts.get(i + 1) {
                    // `[dependencies.clap]`: the table is the dependency.
                    Some(name) => names.push(name.trim_matches('"').to_owned()),
                    None => in_deps = true,
                }
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("package")
            && let Some(value) = rest.trim_start().strip_prefix('=')
        {
            names.push(value.trim().trim_matches('"').to_owned());
        }
        if !in_deps || line.is_empty() {
            continue;
        }
        let key = line
            .split(['=', '.'])
            .next()
            .unwrap_or("")
            .trim()
            .trim_matches('"');
        names.push(key.to_owned());
        if let Some(at) = line.find("package") {
            let value = line[at + "package".len()..].trim_start();
            if let Some(value) = value.strip_prefix('=') {
                let value = value.trim_start();
                if let Some(value) = value.strip_prefix('"') {
                    names.push(value.split('"').next().unwrap_or("").to_owned());
                }
            }
        }
    }
    names
}

/// The command line's crates (`clap`) and its error type (`anyhow`) belong
/// to `troupe-cli` alone: the libraries take plain options and return
/// typed errors and values; flags, help texts and exit statuses are the
/// binary's (issue #29).
#[test]
fn only_the_cli_knows_clap_and_anyhow() {
    const CLI_ONLY: [&str; 3] = ["clap", "clap_complete", "anyhow"];
    let mut wrong = Vec::new();
    for c in crates() {
        if c == "troupe-cli" {
            continue;
        }
        let manifest =
            std::fs::read_to_string(root().join("crates").join(&c).join("Cargo.toml")).unwrap();
        for name in dependency_names(&manifest) {
            if CLI_ONLY.contains(&name.as_str()) {
                wrong.push(format!("{c}: depends on `{name}` (crates/{c}/Cargo.toml)"));
            }
        }
        let mut files = Vec::new();
        for sub in ["src", "tests", "examples", "benches"] {
            rust_files(&root().join("crates").join(&c).join(sub), &mut files);
        }
        // Spelt in two halves, so that this file does not name them.
        let paths = [["clap", "::"].concat(), ["anyhow", "::"].concat()];
        let uses = [["use ", "clap"].concat(), ["use ", "anyhow"].concat()];
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                if paths.iter().chain(&uses).any(|p| code.contains(p.as_str())) {
                    wrong.push(format!(
                        "{c}: {}:{}: {}",
                        file.strip_prefix(root()).unwrap_or(&file).display(),
                        n + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "clap and anyhow belong to troupe-cli alone:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn dependency_tables_are_read_in_every_form() {
    let manifest = r#"
[package]
name = "x"
clap = "not a dependency"

[dependencies]
serde.workspace = true
anyhow = "1" # errors
"clap" = { version = "4" }
args = { package = "clap", version = "4" }

[dev-dependencies.clap_complete]
version = "4"

[target.'cfg(unix)'.build-dependencies]
cc = "1"
"#;
    let names = dependency_names(manifest);
    for name in ["serde", "anyhow", "clap", "args", "clap_complete", "cc"] {
        assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
    }
    assert_eq!(
        names.iter().filter(|n| *n == "clap").count(),
        2,
        "{names:?}"
    );
}
