//! The importer: every captured `tools/list` of ../shared/data/mcp-tools
//! becomes declarations that check clean, and so does a live server's.

use crate::support;

use support::*;
use troupe_mcp::import::{ImportOptions, import_from_json, listing_from_json};

fn check_clean(text: &str, what: &str) -> troupe_check::ir::Program {
    let (program, diags) = troupe_check::check_text(text);
    program.unwrap_or_else(|| panic!("{what} does not check:\n{text}\n{diags:#?}"))
}

#[test]
fn every_captured_tool_list_imports_and_checks_clean() {
    let dir = shared_data().join("mcp-tools");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 7);
    let mut total = 0;
    for path in files {
        let json = std::fs::read_to_string(&path).unwrap();
        let stem = path.file_stem().unwrap().to_str().unwrap().to_owned();
        let options = ImportOptions {
            name: stem.clone(),
            transport: None,
            source: path.display().to_string(),
        };
        let text = import_from_json(&json, &options).unwrap();
        let program = check_clean(&text, &stem);
        let listed = listing_from_json(&serde_json::from_str(&json).unwrap())
            .unwrap()
            .tools
            .len();
        let tools = program
            .actions
            .iter()
            .filter(|a| matches!(a.kind, troupe_check::ir::ActionKind::Tool(_)))
            .count();
        assert_eq!(tools, listed, "{stem}: every tool is declared\n{text}");
        total += tools;
        // Renamed tools keep their remote name.
        for a in &program.actions {
            if let troupe_check::ir::ActionKind::Tool(t) = &a.kind {
                assert!(
                    t.remote.contains('-')
                        || t.remote == a.name
                        || t.remote.chars().any(|c| c.is_ascii_uppercase()),
                    "{}",
                    a.name
                );
            }
        }
    }
    assert_eq!(total, 52);
}

#[test]
fn the_time_servers_capture_gives_records_and_the_everything_capture_enums() {
    let json = std::fs::read_to_string(shared_data().join("mcp-tools/time.json")).unwrap();
    let text = import_from_json(
        &json,
        &ImportOptions {
            name: "time".into(),
            transport: None,
            source: "time.json".into(),
        },
    )
    .unwrap();
    assert!(text.contains("record GetCurrentTimeResult { timezone: Text, datetime: Text, day_of_week: Text, is_dst: Bool }"), "{text}");
    assert!(text.contains("tool get_current_time(timezone: Text) -> GetCurrentTimeResult { server: time, idempotent: true }"), "{text}");
    assert!(
        text.contains(
            "tool convert_time(source_timezone: Text, time: Text, target_timezone: Text)"
        ),
        "{text}"
    );

    let json = std::fs::read_to_string(shared_data().join("mcp-tools/everything.json")).unwrap();
    let text = import_from_json(
        &json,
        &ImportOptions {
            name: "everything".into(),
            transport: None,
            source: "everything.json".into(),
        },
    )
    .unwrap();
    assert!(text.contains("name: \"get-sum\""), "{text}");
    assert!(
        text.contains("enum GetResourceReferenceResourceType {"),
        "{text}"
    );
    assert!(text.contains("// Prompts the server offers:"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_from_a_live_time_server_checks_clean_and_calls_work() {
    let out = std::env::temp_dir().join(format!("troupe-mcp-import-{}.troupe", std::process::id()));
    let command = format!("{} --local-timezone UTC", time_server().display());
    let (listing, options) = troupe_mcp::ops::fetch(&command, None, false).await.unwrap();
    // What `import -o FILE` writes to FILE.
    let written = troupe_mcp::ops::declarations(&listing, &options, Some(&out));
    assert!(
        written.sidecar.is_none(),
        "the time server publishes no contract"
    );
    let text = written.text;
    assert!(text.contains("mcp time { command: "), "{text}");
    assert!(
        text.contains("args: [\"--local-timezone\", \"UTC\"]"),
        "{text}"
    );
    assert!(
        text.contains("tool get_current_time(timezone: Text) -> GetCurrentTimeResult"),
        "{text}"
    );
    let program = check_clean(&text, "the live import");
    // The imported declarations match the server: no drift.
    let host = troupe_mcp::McpToolHost::for_program(&program);
    let drift = host.check(&program).await;
    assert!(drift.is_empty(), "{drift:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_from_live_everything_lists_resources_and_prompts() {
    let (listing, options) = troupe_mcp::ops::fetch(
        &everything_server().display().to_string(),
        Some("ev".into()),
        false,
    )
    .await
    .unwrap();
    // What `import` prints on standard output.
    let text = troupe_mcp::ops::declarations(&listing, &options, None).text;
    let program = check_clean(&text, "everything");
    assert!(text.contains("mcp ev { command: "), "{text}");
    assert!(text.contains("// Resources the server offers"), "{text}");
    let host = troupe_mcp::McpToolHost::for_program(&program);
    let drift = host.check(&program).await;
    assert!(drift.is_empty(), "{drift:#?}");
}

#[test]
fn malformed_documents_are_errors_not_panics() {
    let o = ImportOptions {
        name: "x".into(),
        transport: None,
        source: "input".into(),
    };
    for bad in [
        "",
        "[",
        "3",
        "{}",
        "{\"tools/list\": {\"error\": {\"code\": 1}}}",
        "{\"tools\": 3}",
    ] {
        assert!(import_from_json(bad, &o).is_err(), "{bad}");
    }
    // Odd but valid tool lists still check clean.
    for odd in [
        r#"[{"name": "if"}, {"name": "9lives", "inputSchema": {"properties": {"a b": {"type": "string"}}, "required": ["a b"]}}]"#,
        r#"[{"name": "x", "inputSchema": {"type": "object", "properties": {"n": {"type": "number", "default": -3}, "s": {"type": "string", "default": "{a}\"\\"}}}}]"#,
        r#"[{"name": "x", "outputSchema": {"type": "object", "properties": {"a-b": {"type": "string"}}, "required": ["a-b"]}}, {"name": "x"}]"#,
    ] {
        let text = import_from_json(odd, &o).unwrap();
        check_clean(&text, odd);
    }
}
