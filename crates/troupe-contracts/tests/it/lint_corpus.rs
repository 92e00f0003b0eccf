//! The lint measured against a labelled corpus of attacks (#28):
//! `tests/corpus/lint/poisoned.json` holds poisoned tool definitions in eight
//! attack classes (shadowing, preference manipulation, parameter poisoning, command
//! injection, exfiltration, rug pull, overlap, hidden Unicode), written by hand and
//! labelled with their class; `tests/corpus/lint/benign.json` holds careful, realistic
//! definitions that must pass.
//!
//! **What counts as caught**: an entry is caught when linting it (all its servers
//! together, against the lock of its `pinned` definitions for a rug pull) raises at
//! least one *error* of a *safety* rule (`model-instruction`, `hidden-unicode`,
//! `tool-shadowing`, `hint-consistency`, `tool-drift`). Errors of the other
//! principles (a missing `readOnlyHint`, a short description) do not count: they
//! would "catch" an attack for a reason that has nothing to do with it. The same
//! severity counts for every class, overlap included: the project deliberately
//! reports a tool with the *very same* name as another server's as a warning only
//! (unrelated servers share `search` or `read_file`), so such an entry stays a miss
//! rather than being counted on a warning.
//!
//! **Bars**: overall recall ≥ 0.90, every class ≥ 0.75, and no error-level finding
//! of any rule on the benign corpus (precision first). The expectation comes from the
//! labels only; on failure the test prints the recall per class and what was missed.

use std::collections::BTreeMap;

use serde_json::Value;
use troupe_contracts::lint::{Finding, Principle, Severity, lint_all};
use troupe_contracts::lock::Lock;
use troupe_contracts::mcp::parse_tool_lists;

fn corpus(name: &str) -> Vec<Value> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus/lint/").to_owned() + name;
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let doc: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    doc["entries"].as_array().expect("entries").clone()
}

/// The `tools/list` document of an entry: its single list, or its servers keyed
/// by name.
fn document(entry: &Value, id: &str) -> Value {
    if let Some(servers) = entry.get("servers").and_then(Value::as_array) {
        let mut map = serde_json::Map::new();
        for server in servers {
            let name = server["server"].as_str().expect("server name").to_owned();
            map.insert(name, serde_json::json!({"tools": server["tools"]}));
        }
        Value::Object(map)
    } else {
        entry
            .get("tools")
            .cloned()
            .unwrap_or_else(|| panic!("{id}: neither tools nor servers"))
    }
}

/// Every finding of an entry, each with its server.
fn lint_entry(entry: &Value) -> Vec<(String, Finding)> {
    let id = entry["id"].as_str().expect("id");
    let lists = parse_tool_lists(id, &document(entry, id).to_string())
        .unwrap_or_else(|e| panic!("{id}: {e}"));
    let lock = entry.get("pinned").map(|pinned| {
        Lock::of(&parse_tool_lists(id, &pinned.to_string()).unwrap_or_else(|e| panic!("{id}: {e}")))
    });
    lint_all(&lists, lock.as_ref())
        .into_iter()
        .flat_map(|report| {
            let server = report.server.clone().unwrap_or_default();
            report
                .tools
                .into_iter()
                .flat_map(|t| t.findings)
                .map(move |f| (server.clone(), f))
        })
        .collect()
}

fn caught(findings: &[(String, Finding)]) -> bool {
    findings
        .iter()
        .any(|(_, f)| f.severity == Severity::Error && f.principle == Principle::Safety)
}

/// Per class: (caught, total, missed ids).
type Table = BTreeMap<String, (usize, usize, Vec<String>)>;

fn recall_table() -> Table {
    let mut table = Table::new();
    for entry in corpus("poisoned.json") {
        let class = entry["class"].as_str().expect("class").to_owned();
        let id = entry["id"].as_str().expect("id").to_owned();
        let row = table.entry(class).or_default();
        row.1 += 1;
        if caught(&lint_entry(&entry)) {
            row.0 += 1;
        } else {
            row.2.push(id);
        }
    }
    table
}

fn render(table: &Table) -> String {
    let mut out = String::from("class                      caught/total  recall  missed\n");
    for (class, (hit, total, missed)) in table {
        out += &format!(
            "{class:<26} {hit:>5}/{total:<6} {:>6.2}  {}\n",
            *hit as f64 / *total as f64,
            missed.join(", ")
        );
    }
    out
}

/// The corpus is as large as #28 asks: ≥ 150 entries in the eight classes, ≥ 12
/// each, ids unique; ≥ 60 benign entries.
#[test]
fn the_corpora_have_the_size_asked_for() {
    let poisoned = corpus("poisoned.json");
    assert!(poisoned.len() >= 150, "{}", poisoned.len());
    let mut per_class: BTreeMap<&str, usize> = BTreeMap::new();
    let mut ids = std::collections::HashSet::new();
    for entry in &poisoned {
        *per_class
            .entry(entry["class"].as_str().unwrap())
            .or_default() += 1;
        assert!(ids.insert(entry["id"].as_str().unwrap()), "{entry}");
        assert!(entry["note"].as_str().is_some_and(|n| !n.is_empty()));
    }
    for class in [
        "shadowing",
        "preference_manipulation",
        "parameter_poisoning",
        "command_injection",
        "exfiltration",
        "rug_pull",
        "overlap",
        "hidden_unicode",
    ] {
        assert!(
            per_class.get(class).is_some_and(|&n| n >= 12),
            "{class}: {per_class:?}"
        );
    }
    assert!(corpus("benign.json").len() >= 60);
}

/// Recall ≥ 0.90 overall and ≥ 0.75 per class on the poisoned corpus.
#[test]
fn the_lint_catches_the_labelled_attacks() {
    let table = recall_table();
    let (hit, total) = table
        .values()
        .fold((0, 0), |(h, t), (hit, total, _)| (h + hit, t + total));
    let overall = hit as f64 / total as f64;
    let report = format!("{}overall: {hit}/{total} = {overall:.3}", render(&table));
    eprintln!("{report}");
    assert!(overall >= 0.90, "recall below 0.90\n{report}");
    for (class, (hit, total, _)) in &table {
        assert!(
            *hit as f64 / *total as f64 >= 0.75,
            "class {class} below 0.75\n{report}"
        );
    }
}

/// No error-level finding, of any rule, on the benign corpus.
#[test]
fn the_benign_corpus_raises_no_error() {
    let mut errors = Vec::new();
    for entry in corpus("benign.json") {
        let id = entry["id"].as_str().expect("id").to_owned();
        for (server, f) in lint_entry(&entry) {
            if f.severity == Severity::Error {
                errors.push(format!(
                    "{id} [{server}] {} {}: {}",
                    f.rule, f.pointer, f.message
                ));
            }
        }
    }
    assert!(
        errors.is_empty(),
        "{} errors:\n{}",
        errors.len(),
        errors.join("\n")
    );
}
