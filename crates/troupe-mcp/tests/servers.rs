//! The host against real MCP servers over stdio: `mcp-server-time` (PyPI) and
//! `@modelcontextprotocol/server-everything` (npm).

mod support;

use std::sync::Arc;

use serde_json::json;
use support::*;
use troupe_mcp::{McpError, McpToolHost};
use troupe_runtime::{EngineBuilder, RunOptions};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scratch() {
    let time = stdio("time", &time_server(), &[]);
    let host = McpToolHost::new();
    let r = host.call_tool(call(&time, "get_current_time", json!({"timezone": "Not/AZone"}))).await;
    println!("{r:?}");
    let r = host.call_tool(call(&time, "get_current_time", json!({"timezone": "UTC"}))).await;
    println!("{r:?}");
    let ev = stdio("everything", &everything_server(), &[]);
    let r = host.call_tool(call(&ev, "echo", json!({"message": "hi"}))).await;
    println!("{r:?}");
    let r = host.call_tool(call(&ev, "get-structured-content", json!({"location": "Nowhere"}))).await;
    println!("{r:?}");
    let r = host.call_tool(call(&ev, "get-sum", json!({"a": 1, "b": 2}))).await;
    println!("{r:?}");
}
