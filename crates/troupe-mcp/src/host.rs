//! [`McpToolHost`]: performs `tool` actions by calling MCP servers.
//!
//! One connection per server (keyed by the server's name and transport),
//! opened on first use and shared by every run that uses the host; a
//! connection found closed (the process exited) is reopened on the next call.
//! On connecting, the host reads `tools/list` and checks every declared tool
//! of that server against it (drift). Before each call it checks the
//! arguments against the tool's input schema; a missing required argument is
//! a `MissingSlots` error and nothing is sent. The call carries the run's
//! idempotency key in `_meta["dev.troupe/idempotency-key"]`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, MetaObject, RequestMetaObject, Tool};
use rmcp::service::ServiceError;
use serde_json::{Map, Value as J};
use troupe_check::ir::{ActionKind, McpServer, Program};
use troupe_check::{Type, TypeTable, Value};
use troupe_llm::BoxFuture;
use troupe_runtime::{ToolCall, ToolHost};

use crate::connect::{DEFAULT_CONNECT_TIMEOUT, Session, connect};
use crate::error::McpError;
use crate::results::{text_content, typed_outputs};
use crate::schema::{compatible, properties, required, validate};

/// The `_meta` key of the idempotency key sent with every `tools/call`.
pub const IDEMPOTENCY_META_KEY: &str = "dev.troupe/idempotency-key";

/// A `tool` declaration, as the drift check needs it.
#[derive(Debug, Clone)]
struct Declared {
    action: String,
    remote: String,
    /// Name, type, and whether the declaration gives it a default.
    params: Vec<(String, Type, bool)>,
    types: Arc<TypeTable>,
}

/// An open connection and what was learnt on opening it.
#[derive(Debug)]
struct Live {
    session: Session,
    tools: HashMap<String, Tool>,
    /// Drift errors of declared tools, by remote name.
    drift: HashMap<String, McpError>,
}

#[derive(Debug)]
struct Slot {
    server: McpServer,
    live: tokio::sync::Mutex<Option<Arc<Live>>>,
}

#[derive(Debug)]
struct Inner {
    declared: HashMap<String, Vec<Declared>>,
    slots: std::sync::Mutex<HashMap<String, Arc<Slot>>>,
    connect_timeout: Duration,
    /// How long one `tools/call` may take.
    call_timeout: Duration,
}

/// Calls tools of MCP servers for `tool` actions; clone it freely (clones
/// share the connections).
#[derive(Debug, Clone)]
pub struct McpToolHost {
    inner: Arc<Inner>,
}

impl Default for McpToolHost {
    fn default() -> Self {
        McpToolHost::new()
    }
}

impl McpToolHost {
    /// A host that knows no declarations: each call is checked against the
    /// server's tool (it exists, the arguments fit its input schema), but
    /// parameters the caller left out cannot be told from undeclared ones.
    pub fn new() -> McpToolHost {
        McpToolHost::with_declarations(HashMap::new())
    }

    /// A host for the `tool` declarations of `program`: on connecting to a
    /// server it checks each declared tool of that server against the
    /// server's `tools/list` (drift), and calls of a drifted tool fail with
    /// that error.
    pub fn for_program(program: &Program) -> McpToolHost {
        let types = Arc::new(program.types.clone());
        let mut declared: HashMap<String, Vec<Declared>> = HashMap::new();
        for action in &program.actions {
            if let ActionKind::Tool(tool) = &action.kind {
                declared
                    .entry(tool.server.name.clone())
                    .or_default()
                    .push(Declared {
                        action: action.name.clone(),
                        remote: tool.remote.clone(),
                        params: action
                            .params
                            .iter()
                            .zip(&tool.defaults)
                            .map(|(p, d)| (p.name.clone(), p.ty.clone(), d.is_some()))
                            .collect(),
                        types: types.clone(),
                    });
            }
        }
        McpToolHost::with_declarations(declared)
    }

    fn with_declarations(declared: HashMap<String, Vec<Declared>>) -> McpToolHost {
        McpToolHost {
            inner: Arc::new(Inner {
                declared,
                slots: std::sync::Mutex::new(HashMap::new()),
                connect_timeout: DEFAULT_CONNECT_TIMEOUT,
                call_timeout: troupe_host::DEFAULT_CALL_TIMEOUT,
            }),
        }
    }

    /// How long connecting (start, `initialize`, `tools/list`) may take.
    pub fn connect_timeout(self, timeout: Duration) -> McpToolHost {
        let inner = Inner {
            declared: self.inner.declared.clone(),
            slots: std::sync::Mutex::new(HashMap::new()),
            connect_timeout: timeout,
            call_timeout: self.inner.call_timeout,
        };
        McpToolHost {
            inner: Arc::new(inner),
        }
    }

    /// How long one tool call may take before it fails (default
    /// [`troupe_host::DEFAULT_CALL_TIMEOUT`]).
    pub fn call_timeout(self, timeout: Duration) -> McpToolHost {
        let inner = Inner {
            declared: self.inner.declared.clone(),
            slots: std::sync::Mutex::new(HashMap::new()),
            connect_timeout: self.inner.connect_timeout,
            call_timeout: timeout,
        };
        McpToolHost {
            inner: Arc::new(inner),
        }
    }

    /// Performs one call, with a typed error.
    pub async fn call_tool(&self, call: ToolCall) -> Result<Vec<Value>, McpError> {
        self.inner.perform(call).await
    }

    /// Connects to every server of `program` that declares tools and returns
    /// every drift found (or the connection errors); empty when all is well.
    pub async fn check(&self, program: &Program) -> Vec<McpError> {
        let mut servers: Vec<Arc<McpServer>> = Vec::new();
        for action in &program.actions {
            if let ActionKind::Tool(tool) = &action.kind
                && !servers.iter().any(|s| s.name == tool.server.name)
            {
                servers.push(tool.server.clone());
            }
        }
        let mut errors = Vec::new();
        for server in servers {
            match self.inner.live(&server).await {
                Ok(live) => {
                    let mut drift: Vec<McpError> = live.drift.values().cloned().collect();
                    drift.sort_by_key(|e| e.to_string());
                    errors.extend(drift);
                }
                Err(e) => errors.push(e),
            }
        }
        errors
    }

    /// Closes every open connection (their processes are stopped).
    pub async fn close_all(&self) {
        let slots: Vec<Arc<Slot>> = match self.inner.slots.lock() {
            Ok(map) => map.values().cloned().collect(),
            Err(_) => return,
        };
        for slot in slots {
            slot.live.lock().await.take();
        }
    }
}

impl ToolHost for McpToolHost {
    fn call(&self, call: ToolCall) -> BoxFuture<'static, Result<Vec<Value>, String>> {
        let inner = self.inner.clone();
        Box::pin(async move { inner.perform(call).await.map_err(|e| e.to_string()) })
    }

    fn describe(
        &self,
        server: Arc<McpServer>,
        tool: String,
    ) -> BoxFuture<'static, Option<troupe_runtime::ToolInfo>> {
        let inner = self.inner.clone();
        Box::pin(async move {
            let live = inner.live(&server).await.ok()?;
            Some(tool_info(live.tools.get(&tool)?))
        })
    }

    fn list(
        &self,
        server: Arc<McpServer>,
    ) -> BoxFuture<'static, Option<troupe_runtime::ListedTools>> {
        let inner = self.inner.clone();
        Box::pin(async move {
            let live = inner.live(&server).await.ok()?;
            let mut tools: Vec<&Tool> = live.tools.values().collect();
            tools.sort_by(|a, b| a.name.cmp(&b.name));
            Some(troupe_runtime::ListedTools {
                server_name: live.session.server_info().and_then(|i| {
                    i.pointer("/serverInfo/name")
                        .or_else(|| i.get("name"))
                        .and_then(J::as_str)
                        .map(str::to_owned)
                }),
                tools: tools
                    .into_iter()
                    .filter_map(|t| serde_json::to_value(t).ok())
                    .collect(),
            })
        })
    }
}

/// What a model needs of a listed tool: its description, and whether it
/// is destructive by its annotations with MCP's defaults (not read-only,
/// destructive). A contract, from the sidecar or `_meta`, is merged by
/// `troupe_contracts::resolve` and answers first (the run's policy); this
/// is the answer for a tool no source gives a contract.
fn tool_info(tool: &Tool) -> troupe_runtime::ToolInfo {
    let a = tool.annotations.as_ref();
    let read_only = a.and_then(|a| a.read_only_hint).unwrap_or(false);
    let destructive = !read_only && a.and_then(|a| a.destructive_hint).unwrap_or(true);
    troupe_runtime::ToolInfo {
        description: tool.description.as_ref().map(|d| d.to_string()),
        destructive: Some(destructive),
    }
}

fn drift(server: &str, tool: &str, detail: String) -> McpError {
    McpError::Drift {
        server: server.to_owned(),
        tool: tool.to_owned(),
        detail,
    }
}

fn names(list: impl IntoIterator<Item = impl AsRef<str>>) -> String {
    let v: Vec<String> = list
        .into_iter()
        .map(|s| format!("`{}`", s.as_ref()))
        .collect();
    if v.is_empty() {
        "none".to_owned()
    } else {
        v.join(", ")
    }
}

/// The drift between a declaration and the server's tool, if any (every
/// difference found, separated by `; `).
fn check_declared(server: &str, d: &Declared, tools: &HashMap<String, Tool>) -> Option<McpError> {
    let mut problems: Vec<String> = Vec::new();
    if d.action != d.remote {
        problems.push(format!("(declared as `{}`)", d.action));
    }
    let Some(tool) = tools.get(&d.remote) else {
        let mut offered: Vec<&String> = tools.keys().collect();
        offered.sort();
        problems.push(format!(
            "the server has no tool `{}`; it offers {}",
            d.remote,
            names(offered)
        ));
        return Some(drift(server, &d.remote, problems.join(" ")));
    };
    let prefix = problems.len();
    let schema = tool.input_schema.as_ref();
    let empty = Map::new();
    let props = properties(schema).unwrap_or(&empty);
    for (name, ty, _) in &d.params {
        match props.get(name) {
            None => problems.push(format!(
                "the declared parameter `{name}` is not in the server's input schema (its parameters: {})",
                names(props.keys())
            )),
            Some(ps) => {
                if let Err(e) = compatible(ty, ps, &d.types) {
                    problems.push(format!("parameter `{name}` {e}"));
                }
            }
        }
    }
    for r in required(schema) {
        match d.params.iter().find(|(n, _, _)| *n == r) {
            None => problems.push(format!(
                "the server requires the parameter `{r}`, which the declaration lacks"
            )),
            Some((_, _, true)) => problems.push(format!(
                "the server requires the parameter `{r}`, but the declaration gives it a default (a call could leave it out)"
            )),
            Some(_) => {}
        }
    }
    if problems.len() == prefix {
        return None;
    }
    let head = problems[..prefix].join(" ");
    let body = problems[prefix..].join("; ");
    Some(drift(
        server,
        &d.remote,
        if head.is_empty() {
            body
        } else {
            format!("{head} {body}")
        },
    ))
}

fn is_transport_error(e: &ServiceError) -> bool {
    matches!(
        e,
        ServiceError::TransportClosed | ServiceError::TransportSend(_)
    )
}

impl Inner {
    fn slot(&self, server: &McpServer) -> Arc<Slot> {
        let mut slots = match self.slots.lock() {
            Ok(s) => s,
            Err(poisoned) => poisoned.into_inner(),
        };
        match slots.get(&server.name) {
            Some(slot) if slot.server.transport == server.transport => slot.clone(),
            _ => {
                let slot = Arc::new(Slot {
                    server: server.clone(),
                    live: tokio::sync::Mutex::new(None),
                });
                slots.insert(server.name.clone(), slot.clone());
                slot
            }
        }
    }

    /// The open connection to `server`, opening (or reopening) it when needed.
    async fn live(&self, server: &McpServer) -> Result<Arc<Live>, McpError> {
        let slot = self.slot(server);
        let mut guard = slot.live.lock().await;
        if let Some(live) = guard.as_ref()
            && !live.session.is_closed()
        {
            return Ok(live.clone());
        }
        *guard = None;
        let session = connect(server, self.connect_timeout).await?;
        let list = session.list_tools(self.connect_timeout).await?;
        let tools: HashMap<String, Tool> =
            list.into_iter().map(|t| (t.name.to_string(), t)).collect();
        let mut drift = HashMap::new();
        for d in self.declared.get(&server.name).into_iter().flatten() {
            if let Some(e) = check_declared(&server.name, d, &tools) {
                drift.insert(d.remote.clone(), e);
            }
        }
        let live = Arc::new(Live {
            session,
            tools,
            drift,
        });
        *guard = Some(live.clone());
        Ok(live)
    }

    /// Drops `live` from its slot (when it is still the slot's connection).
    async fn forget(&self, server: &McpServer, live: &Arc<Live>) {
        let slot = self.slot(server);
        let mut guard = slot.live.lock().await;
        if guard.as_ref().is_some_and(|l| Arc::ptr_eq(l, live)) {
            *guard = None;
        }
    }

    async fn perform(&self, call: ToolCall) -> Result<Vec<Value>, McpError> {
        let server = call.server.name.clone();
        let tool_name = call.tool.clone();
        let live = self.live(&call.server).await?;
        let Some(tool) = live.tools.get(&tool_name) else {
            let mut offered: Vec<&String> = live.tools.keys().collect();
            offered.sort();
            return Err(drift(
                &server,
                &tool_name,
                format!(
                    "the server has no tool `{tool_name}`; it offers {}",
                    names(offered)
                ),
            ));
        };
        if let Some(e) = live.drift.get(&tool_name) {
            return Err(e.clone());
        }
        check_arguments(&server, &tool_name, tool, &call.arguments)?;

        let mut meta = Map::new();
        meta.insert(
            IDEMPOTENCY_META_KEY.to_owned(),
            J::String(call.idempotency_key.clone()),
        );
        let mut params =
            CallToolRequestParams::new(tool_name.clone()).with_arguments(call.arguments.clone());
        params.meta = Some(RequestMetaObject(MetaObject(meta)));
        let answer = match tokio::time::timeout(
            self.call_timeout,
            live.session.client.peer().call_tool(params),
        )
        .await
        {
            Ok(answer) => answer,
            Err(_) => {
                return Err(McpError::NoAnswer {
                    server,
                    tool: tool_name,
                    after: self.call_timeout,
                });
            }
        };
        match answer {
            Ok(result) => {
                let json = serde_json::to_value(&result).unwrap_or(J::Null);
                if result.is_error == Some(true) {
                    let mut message = text_content(&json);
                    if message.trim().is_empty() {
                        message = result
                            .structured_content
                            .as_ref()
                            .map(J::to_string)
                            .unwrap_or_else(|| "(no message)".to_owned());
                    }
                    return Err(McpError::ToolFailed {
                        server,
                        tool: tool_name,
                        message,
                    });
                }
                typed_outputs(&json, &call.outputs, &call.types).map_err(|detail| {
                    McpError::Result {
                        server,
                        tool: tool_name,
                        detail,
                    }
                })
            }
            Err(ServiceError::McpError(e)) => Err(McpError::Protocol {
                server,
                tool: tool_name,
                code: e.code.0,
                message: e.message.to_string(),
            }),
            Err(e) if is_transport_error(&e) || live.session.is_closed() => {
                self.forget(&call.server, &live).await;
                // Let the stderr reader collect the process's last words.
                tokio::time::sleep(Duration::from_millis(100)).await;
                Err(McpError::Disconnected {
                    server,
                    tool: tool_name,
                    detail: format!(
                        "{e} (the next call reconnects){}",
                        live.session.stderr.suffix()
                    ),
                })
            }
            Err(e) => Err(McpError::ToolFailed {
                server,
                tool: tool_name,
                message: e.to_string(),
            }),
        }
    }
}

/// Checks call arguments against the tool's input schema; nothing is sent on error.
fn check_arguments(
    server: &str,
    tool_name: &str,
    tool: &Tool,
    arguments: &Map<String, J>,
) -> Result<(), McpError> {
    let schema = tool.input_schema.as_ref();
    let missing: Vec<String> = required(schema)
        .into_iter()
        .filter(|r| arguments.get(r).is_none_or(J::is_null))
        .collect();
    if !missing.is_empty() {
        return Err(McpError::MissingSlots {
            server: server.to_owned(),
            tool: tool_name.to_owned(),
            missing,
        });
    }
    let props = properties(schema);
    let closed = schema.get("additionalProperties") == Some(&J::Bool(false));
    for (name, value) in arguments {
        match props.and_then(|p| p.get(name)) {
            Some(ps) => validate(value, ps).map_err(|detail| McpError::InvalidArgument {
                server: server.to_owned(),
                tool: tool_name.to_owned(),
                argument: name.clone(),
                detail,
            })?,
            None if closed => {
                return Err(McpError::InvalidArgument {
                    server: server.to_owned(),
                    tool: tool_name.to_owned(),
                    argument: name.clone(),
                    detail: format!(
                        "is not a parameter of the tool (its parameters: {})",
                        names(
                            props
                                .map(|p| p.keys().cloned().collect::<Vec<_>>())
                                .unwrap_or_default()
                        )
                    ),
                });
            }
            None => {}
        }
    }
    Ok(())
}
