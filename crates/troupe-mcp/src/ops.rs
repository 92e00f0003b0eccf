//! The operations behind `troupe mcp import` and `troupe mcp lock`, without
//! a command line: a server's listing (live, or a captured `tools/list`
//! answer) and the import options naming it, and what an import writes —
//! the declarations and the sidecar of the MCP+ contracts the server
//! publishes. `troupe mcp serve` is [`crate::serve`]; [`wait_for_runs`] is
//! its end once the process is asked to stop.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value as J};

use crate::error::McpError;
use crate::import::{
    ImportOptions, Listing, default_server_name, listing_from_json, listing_from_server,
    parse_server_spec, published_contracts, render_with_contracts, snake_identifier,
};

/// The listing of `server` and the import options naming it: `server` is a
/// command line that starts the server over stdio, an http(s):// URL, or,
/// with `from_json`, a file holding a captured tools/list answer. `name`
/// overrides the `mcp` server's name (by default from the command, URL or
/// file).
pub async fn fetch(
    server: &str,
    name: Option<String>,
    from_json: bool,
) -> Result<(Listing, ImportOptions), McpError> {
    if from_json {
        let path = PathBuf::from(server);
        let json = std::fs::read_to_string(&path).map_err(|e| McpError::Io {
            path: server.to_owned(),
            message: e.to_string(),
        })?;
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("server")
            .to_owned();
        let options = ImportOptions {
            name: name.unwrap_or_else(|| snake_identifier(&stem)),
            transport: None,
            source: format!("the captured file {}", path.display()),
        };
        let value: J = serde_json::from_str(&json).map_err(|e| McpError::Input {
            what: options.source.clone(),
            message: format!("not JSON: {e}"),
        })?;
        Ok((listing_from_json(&value)?, options))
    } else {
        let transport = parse_server_spec(server)?;
        let options = ImportOptions {
            name: name.unwrap_or_else(|| default_server_name(&transport)),
            transport: Some(transport.clone()),
            source: format!("`{server}`"),
        };
        let declared = troupe_check::ir::McpServer {
            name: options.name.clone(),
            transport,
            contracts: None,
            span: Default::default(),
        };
        let listing =
            listing_from_server(&declared, crate::connect::DEFAULT_CONNECT_TIMEOUT).await?;
        Ok((listing, options))
    }
}

/// What an import writes: the declarations, and, when they go to a file and
/// the server publishes MCP+ contracts, the sidecar holding those (named
/// after the file's stem, beside it, and named by the `mcp` declaration).
#[derive(Debug, Clone)]
pub struct Declarations {
    /// The `mcp` and `tool` declarations.
    pub text: String,
    /// Where the sidecar goes, and its contracts (tool name → contract).
    pub sidecar: Option<(PathBuf, Map<String, J>)>,
}

/// The declarations of `listing`, for the file `output` (standard output
/// when `None`: no sidecar then, and the published contracts are only
/// noted).
pub fn declarations(
    listing: &Listing,
    options: &ImportOptions,
    output: Option<&Path>,
) -> Declarations {
    let sidecar = output.and_then(|path| {
        published_contracts(listing).map(|contracts| {
            let stem = path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or("tools")
                .to_owned();
            (format!("{stem}.contracts.json"), path, contracts)
        })
    });
    let text = render_with_contracts(
        listing,
        options,
        sidecar.as_ref().map(|(file, _, _)| file.as_str()),
    );
    Declarations {
        text,
        sidecar: sidecar.map(|(file, path, contracts)| (path.with_file_name(file), contracts)),
    }
}

/// Waits, once the process was asked to stop, for the runs `mcp serve`
/// drives to reach their step boundary (an effect in flight gets its grace)
/// and give their leases back: at most the grace and a second.
pub async fn wait_for_runs() {
    let deadline = tokio::time::Instant::now()
        + troupe_host::DEFAULT_GRACE
        + std::time::Duration::from_secs(1);
    while crate::serve::runs::driving() > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn import_keeps_published_contracts_and_marks_the_others() {
        let dir = std::env::temp_dir().join(format!("troupe-mcp-import-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let capture = dir.join("booking.json");
        std::fs::write(
            &capture,
            serde_json::json!({"tools": [
                {"name": "book", "description": "Books.", "inputSchema": {"type": "object"},
                 "_meta": {"dev.troupe/contract": {"transactional": true, "requires_confirmation": true}}},
                {"name": "look", "description": "Looks.", "inputSchema": {"type": "object"}}
            ]})
            .to_string(),
        )
        .unwrap();
        let (listing, options) = fetch(&capture.display().to_string(), None, true)
            .await
            .unwrap();
        let output = dir.join("booking.troupe");
        let written = declarations(&listing, &options, Some(&output));
        let text = &written.text;
        assert!(
            text.contains(r#"contracts: "booking.contracts.json""#),
            "{text}"
        );
        assert!(text.contains("`look` publishes no MCP+ contract"), "{text}");
        assert!(
            !text.contains("`book` publishes no MCP+ contract"),
            "{text}"
        );
        let (at, sidecar) = written.sidecar.expect("a sidecar");
        assert_eq!(at, dir.join("booking.contracts.json"));
        assert_eq!(sidecar["book"]["transactional"], true);
        assert!(sidecar.get("look").is_none());
        // The declarations check clean.
        let (program, diagnostics) = troupe_check::check_text(text);
        assert!(program.is_some(), "{diagnostics:#?}");
        // On standard output: no sidecar, so no `contracts:` line, but the note.
        let printed = declarations(&listing, &options, None);
        assert!(printed.sidecar.is_none());
        assert!(!printed.text.contains("contracts:"), "{}", printed.text);
        assert!(
            printed.text.contains("import with -o FILE"),
            "{}",
            printed.text
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn lock_pins_every_tool_of_a_capture() {
        let capture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/data/mcp-tools/time.json");
        let (listing, options) = fetch(&capture.display().to_string(), None, true)
            .await
            .unwrap();
        let lock = crate::lock::lock_json(&listing, &options.name);
        assert_eq!(lock["version"], 1);
        let tools = lock["servers"]["mcp-time"].as_object().unwrap();
        assert_eq!(tools.len(), 2, "{lock}");
        assert!(
            tools["get_current_time"]
                .as_str()
                .unwrap()
                .starts_with("sha256:")
        );
    }
}
