//! The MCP tool model (`tools/list` results) and a loader that accepts the shapes such
//! lists come in.
//!
//! Accepted documents:
//! * a bare `tools/list` result: `{"tools": [...]}`;
//! * a JSON-RPC response wrapping it: `{"jsonrpc": "2.0", "id": 1, "result": {"tools": [...]}}`;
//! * a capture keyed by method name, whose values are JSON-RPC responses
//!   (`{"initialize": {...}, "tools/list": {...}, "prompts/list": {...}}`); the server
//!   name is then taken from `initialize.result.serverInfo.name`;
//! * an object keyed by server name whose values are any of the above (what
//!   `troupe contracts from-sgd` prints for a schema with several services).
//!
//! Fields this crate does not interpret (`title`, `execution`, `icons`, `_meta`, ...)
//! are kept, so that a tool list can be read and written back without loss.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{ContractsError, Result, parse_json, read_file};

/// One MCP tool definition, as in a `tools/list` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpTool {
    /// Programmatic tool name, unique within its server.
    pub name: String,
    /// Human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does (for the model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments (an object schema).
    #[serde(rename = "inputSchema", default = "empty_object_schema")]
    pub input_schema: Value,
    /// JSON Schema of the structured result, if declared.
    #[serde(
        rename = "outputSchema",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub output_schema: Option<Value>,
    /// Behaviour hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Extension metadata; MCP+ contracts live here under [`crate::contract::META_KEY`].
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Every other field, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// MCP tool annotations: hints about behaviour, which clients must not rely on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolAnnotations {
    /// Human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment (default `false`).
    #[serde(
        rename = "readOnlyHint",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub read_only_hint: Option<bool>,
    /// A modifying tool may destroy data (default `true`).
    #[serde(
        rename = "destructiveHint",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub destructive_hint: Option<bool>,
    /// Calling twice with the same arguments has no further effect (default `false`).
    #[serde(
        rename = "idempotentHint",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub idempotent_hint: Option<bool>,
    /// The tool reaches outside a closed world (default `true`).
    #[serde(
        rename = "openWorldHint",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub open_world_hint: Option<bool>,
    /// Every other field, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The four hints with the MCP defaults applied for absent ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EffectiveHints {
    /// `readOnlyHint`, default `false`.
    pub read_only: bool,
    /// `destructiveHint`, default `true` (only meaningful when not read-only).
    pub destructive: bool,
    /// `idempotentHint`, default `false`.
    pub idempotent: bool,
    /// `openWorldHint`, default `true`.
    pub open_world: bool,
}

/// One server's tools: a `tools/list` result plus the server's name when known.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolList {
    /// The server's name (from `initialize` or from the key of a multi-server document).
    #[serde(skip)]
    pub server: Option<String>,
    /// The tools.
    pub tools: Vec<McpTool>,
    /// Every other field of the result (`nextCursor`, `_meta`, ...), kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object"})
}

impl McpTool {
    /// A tool with just a name and an empty object input schema.
    pub fn new(name: impl Into<String>) -> Self {
        McpTool {
            name: name.into(),
            title: None,
            description: None,
            input_schema: empty_object_schema(),
            output_schema: None,
            annotations: None,
            meta: None,
            extra: Map::new(),
        }
    }

    /// The hints with MCP's defaults for absent ones.
    pub fn hints(&self) -> EffectiveHints {
        let annotations = self.annotations.as_ref();
        let hint = |get: fn(&ToolAnnotations) -> Option<bool>, default| {
            annotations.and_then(get).unwrap_or(default)
        };
        EffectiveHints {
            read_only: hint(|a| a.read_only_hint, false),
            destructive: hint(|a| a.destructive_hint, true),
            idempotent: hint(|a| a.idempotent_hint, false),
            open_world: hint(|a| a.open_world_hint, true),
        }
    }

    /// The input properties, by name (sorted by name).
    pub fn input_properties(&self) -> Vec<(&str, &Value)> {
        schema_properties(&self.input_schema)
    }

    /// The names listed in the input schema's `required` (non-strings ignored).
    pub fn required_arguments(&self) -> Vec<&str> {
        schema_required(&self.input_schema)
    }

    /// The output properties, by name (empty without an object output schema).
    pub fn output_properties(&self) -> Vec<(&str, &Value)> {
        self.output_schema
            .as_ref()
            .map(schema_properties)
            .unwrap_or_default()
    }
}

/// The `properties` of an object schema (empty if absent or malformed).
pub fn schema_properties(schema: &Value) -> Vec<(&str, &Value)> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| props.iter().map(|(k, v)| (k.as_str(), v)).collect())
        .unwrap_or_default()
}

/// The `required` names of an object schema (empty if absent or malformed).
pub fn schema_required(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Escapes one JSON Pointer reference token (RFC 6901).
pub fn pointer_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// The JSON pointer of tool `index` inside a `tools/list` result.
pub fn tool_pointer(index: usize) -> String {
    format!("/tools/{index}")
}

/// Parses an MCP document (see the module docs for the accepted shapes) into one tool
/// list per server.
pub fn parse_tool_lists(what: &str, text: &str) -> Result<Vec<ToolList>> {
    let value: Value = parse_json(what, text)?;
    let mut lists = tool_lists_from_value(what, value)?;
    if lists.len() > 1 {
        // `Value` objects are sorted by key: restore the document's order of servers.
        let OrderedKeys(keys) = parse_json(what, text)?;
        lists.sort_by_key(|list| {
            list.server
                .as_ref()
                .and_then(|server| keys.iter().position(|key| key == server))
        });
    }
    Ok(lists)
}

/// The keys of a JSON object, in document order.
struct OrderedKeys(Vec<String>);

impl<'de> Deserialize<'de> for OrderedKeys {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeysVisitor;
        impl<'de> serde::de::Visitor<'de> for KeysVisitor {
            type Value = OrderedKeys;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut access: A,
            ) -> Result<OrderedKeys, A::Error> {
                let mut keys = Vec::new();
                while let Some((key, serde::de::IgnoredAny)) = access.next_entry()? {
                    keys.push(key);
                }
                Ok(OrderedKeys(keys))
            }
        }
        deserializer.deserialize_map(KeysVisitor)
    }
}

/// Loads an MCP document from a file (see [`parse_tool_lists`]).
pub fn load_tool_lists(path: &std::path::Path) -> Result<Vec<ToolList>> {
    let text = read_file(path)?;
    parse_tool_lists(&path.display().to_string(), &text)
}

/// Interprets an already parsed JSON document (see [`parse_tool_lists`]).
pub fn tool_lists_from_value(what: &str, value: Value) -> Result<Vec<ToolList>> {
    let reject = |reason: String| ContractsError::NotAToolList {
        what: what.to_owned(),
        reason,
    };
    let Value::Object(object) = value else {
        return Err(reject("expected a JSON object".to_owned()));
    };
    if let Some(list) = single_list(what, &object)? {
        return Ok(vec![list]);
    }
    // A multi-server document: every value must itself be a single-server document.
    if object.is_empty() {
        return Err(reject("empty object".to_owned()));
    }
    let mut lists = Vec::new();
    for (server, inner) in object {
        let Value::Object(inner) = inner else {
            return Err(reject(format!(
                "key `{server}` is neither `tools`, `result`, `tools/list` nor a server"
            )));
        };
        let Some(mut list) = single_list(&format!("{what}: {server}"), &inner)? else {
            return Err(reject(format!("server `{server}` has no tool list")));
        };
        list.server = Some(server);
        lists.push(list);
    }
    Ok(lists)
}

/// Recognises the single-server shapes; `Ok(None)` if the object is none of them.
fn single_list(what: &str, object: &Map<String, Value>) -> Result<Option<ToolList>> {
    if object.contains_key("tools") {
        return decode_list(what, Value::Object(object.clone())).map(Some);
    }
    if object.contains_key("jsonrpc")
        || object.contains_key("result")
        || object.contains_key("error")
    {
        return unwrap_response(what, object).map(Some);
    }
    if let Some(Value::Object(response)) = object.get("tools/list") {
        let mut list = unwrap_response(&format!("{what}: tools/list"), response)?;
        list.server = object
            .get("initialize")
            .and_then(|init| init.pointer("/result/serverInfo/name"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        return Ok(Some(list));
    }
    Ok(None)
}

fn unwrap_response(what: &str, response: &Map<String, Value>) -> Result<ToolList> {
    if let Some(error) = response.get("error") {
        return Err(ContractsError::NotAToolList {
            what: what.to_owned(),
            reason: format!("the response is a JSON-RPC error: {error}"),
        });
    }
    match response.get("result") {
        Some(result @ Value::Object(_)) => decode_list(what, result.clone()),
        _ => Err(ContractsError::NotAToolList {
            what: what.to_owned(),
            reason: "JSON-RPC response without an object `result`".to_owned(),
        }),
    }
}

fn decode_list(what: &str, value: Value) -> Result<ToolList> {
    serde_json::from_value(value).map_err(|source| ContractsError::Json {
        what: what.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOL: &str = r#"{"name": "read", "description": "Reads",
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}},
                        "required": ["path"]},
        "execution": {"taskSupport": "forbidden"},
        "_meta": {"x/y": 1}}"#;

    #[test]
    fn accepts_a_bare_result() {
        let lists = parse_tool_lists("t", &format!(r#"{{"tools": [{TOOL}]}}"#)).unwrap();
        assert_eq!(lists.len(), 1);
        let tool = &lists[0].tools[0];
        assert_eq!(tool.required_arguments(), vec!["path"]);
        assert!(tool.extra.contains_key("execution"));
        assert!(tool.meta.as_ref().unwrap().contains_key("x/y"));
    }

    #[test]
    fn accepts_a_json_rpc_response_and_a_method_keyed_capture() {
        let response = format!(r#"{{"jsonrpc": "2.0", "id": 2, "result": {{"tools": [{TOOL}]}}}}"#);
        assert_eq!(parse_tool_lists("t", &response).unwrap()[0].tools.len(), 1);
        let capture = format!(
            r#"{{"initialize": {{"jsonrpc": "2.0", "id": 1,
                  "result": {{"serverInfo": {{"name": "srv", "version": "1"}}}}}},
                 "tools/list": {response},
                 "prompts/list": {{"jsonrpc": "2.0", "id": 3, "result": {{"prompts": []}}}}}}"#
        );
        let lists = parse_tool_lists("t", &capture).unwrap();
        assert_eq!(lists[0].server.as_deref(), Some("srv"));
    }

    #[test]
    fn accepts_a_server_keyed_document() {
        let text = format!(r#"{{"b": {{"tools": [{TOOL}]}}, "a": {{"tools": []}}}}"#);
        let lists = parse_tool_lists("t", &text).unwrap();
        let servers: Vec<_> = lists.iter().map(|l| l.server.as_deref()).collect();
        assert_eq!(servers, vec![Some("b"), Some("a")], "document order");
    }

    #[test]
    fn rejects_other_documents() {
        for text in [
            "[]",
            "{}",
            r#"{"a": 1}"#,
            r#"{"error": {"code": 1}}"#,
            r#"{"tools": 3}"#,
        ] {
            assert!(parse_tool_lists("t", text).is_err(), "{text}");
        }
    }

    #[test]
    fn applies_the_mcp_hint_defaults() {
        let tool = McpTool::new("x");
        let hints = tool.hints();
        assert!(!hints.read_only && hints.destructive && !hints.idempotent && hints.open_world);
    }

    #[test]
    fn round_trips_unknown_fields() {
        let tool: McpTool = serde_json::from_str(TOOL).unwrap();
        let again: McpTool = serde_json::from_value(serde_json::to_value(&tool).unwrap()).unwrap();
        assert_eq!(tool, again);
    }

    #[test]
    fn escapes_pointer_tokens() {
        assert_eq!(pointer_token("a/b~c"), "a~1b~0c");
    }
}
