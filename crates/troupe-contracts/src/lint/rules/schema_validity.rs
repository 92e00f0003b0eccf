//! `schema-validity` (semantic completeness): the schemas are valid JSON Schemas of
//! the shape MCP requires, and tool names are unique.
//!
//! **What**: errors for
//! * an `inputSchema` (or `outputSchema`) that is not an object schema (`"type":
//!   "object"`), or whose `properties` is not an object;
//! * a `required` that is not a list of names, or names a property the schema does not
//!   have;
//! * a local `$ref` (`#/$defs/...`) that resolves to nothing (a remote `$ref` cannot be
//!   resolved offline: a warning);
//! * a schema its JSON Schema meta-schema rejects (checked with the `jsonschema` crate,
//!   without network or file access; schemas nested deeper than
//!   [`MAX_SCHEMA_DEPTH`](crate::lint::MAX_SCHEMA_DEPTH) are reported as a warning and not
//!   meta-validated);
//! * a tool name that an earlier tool of the same server already has.
//!
//! **Why**: a client validates arguments against the schema (or the model builds them
//! from it); a broken schema makes every call fail, or passes arguments nobody checks.
//!
//! **Example**: `"inputSchema": {"type": "object", "properties": {"path": {"type":
//! "string"}}, "required": ["file"]}` → require `path`, or add `file`.

use serde_json::Value;

use crate::lint::{Context, Finding, MAX_SCHEMA_DEPTH, Principle, Rule, Severity};

/// The rule.
pub const RULE: Rule = Rule {
    id: "schema-validity",
    principle: Principle::SemanticCompleteness,
    summary: "schemas are valid object schemas; names are unique",
    check,
};

/// The depth of a JSON value (iteratively; stops counting at `limit + 1`).
pub fn depth(value: &Value, limit: usize) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(value, 0usize)];
    while let Some((v, d)) = stack.pop() {
        deepest = deepest.max(d);
        if d > limit {
            return d;
        }
        match v {
            Value::Array(items) => stack.extend(items.iter().map(|i| (i, d + 1))),
            Value::Object(map) => stack.extend(map.values().map(|i| (i, d + 1))),
            _ => {}
        }
    }
    deepest
}

/// Every `$ref` string in a schema, with its pointer relative to the schema.
fn refs(schema: &Value) -> Vec<(String, &str)> {
    let mut out = Vec::new();
    let mut stack = vec![(schema, String::new(), 0usize)];
    while let Some((v, at, d)) = stack.pop() {
        if d > MAX_SCHEMA_DEPTH {
            continue;
        }
        match v {
            Value::Object(map) => {
                for (key, item) in map {
                    let here = format!("{at}/{}", crate::mcp::pointer_token(key));
                    if key == "$ref"
                        && let Some(target) = item.as_str()
                    {
                        out.push((here.clone(), target));
                    }
                    stack.push((item, here, d + 1));
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    stack.push((item, format!("{at}/{i}"), d + 1));
                }
            }
            _ => {}
        }
    }
    out
}

/// Resolves a local reference (`#`, `#/a/b`) in `root`.
fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    let decoded = pointer.replace("%25", "%").replace("%22", "\"");
    root.pointer(&decoded)
}

fn schema_findings(schema: &Value, at: &str, which: &str, out: &mut Vec<Finding>) {
    let error = |pointer: String, message: String, fix: &str| {
        RULE.finding(Severity::Error, pointer, message, fix)
    };
    let Some(object) = schema.as_object() else {
        out.push(error(
            at.to_owned(),
            format!(
                "the {which} is not an object schema but `{}`",
                short(schema)
            ),
            "use an object schema: {\"type\": \"object\", \"properties\": {…}}",
        ));
        return;
    };
    match object.get("type") {
        Some(Value::String(t)) if t == "object" => {}
        other => out.push(error(
            format!("{at}/type"),
            format!(
                "the {which} must have \"type\": \"object\", not {}",
                other.map_or_else(|| "no type".to_owned(), |t| format!("`{}`", short(t)))
            ),
            "MCP tool schemas are object schemas: add \"type\": \"object\"",
        )),
    }
    let properties = object.get("properties");
    if let Some(p) = properties
        && !p.is_object()
    {
        out.push(error(
            format!("{at}/properties"),
            format!("`properties` of the {which} is not an object"),
            "map each argument name to its schema",
        ));
    }
    match object.get("required") {
        None => {}
        Some(Value::Array(names)) => {
            for (i, name) in names.iter().enumerate() {
                match name.as_str() {
                    Some(n) if properties.and_then(|p| p.get(n)).is_some() => {}
                    Some(n) => out.push(error(
                        format!("{at}/required/{i}"),
                        format!("`{n}` is required but the {which} has no property `{n}`"),
                        "add the property, or remove it from `required`",
                    )),
                    None => out.push(error(
                        format!("{at}/required/{i}"),
                        format!("`required` lists `{}`, which is not a name", short(name)),
                        "list property names (strings)",
                    )),
                }
            }
        }
        Some(other) => out.push(error(
            format!("{at}/required"),
            format!("`required` is `{}`, not a list of names", short(other)),
            "make `required` a list of property names",
        )),
    }
    for (pointer, reference) in refs(schema) {
        if reference.starts_with('#') {
            if resolve(schema, reference).is_none() {
                out.push(error(
                    format!("{at}{pointer}"),
                    format!("`$ref` \"{reference}\" points to nothing in the {which}"),
                    "point it at an existing definition (e.g. under \"$defs\")",
                ));
            }
        } else {
            out.push(RULE.finding(
                Severity::Warning,
                format!("{at}{pointer}"),
                format!("`$ref` \"{reference}\" refers outside the {which}; it cannot be resolved offline"),
                "inline the definition, or put it under \"$defs\" and refer to it with \"#/$defs/…\"",
            ));
        }
    }
    if depth(schema, MAX_SCHEMA_DEPTH) > MAX_SCHEMA_DEPTH {
        out.push(RULE.finding(
            Severity::Warning,
            at.to_owned(),
            format!("the {which} is nested deeper than {MAX_SCHEMA_DEPTH} levels; it was not meta-validated"),
            "flatten the schema",
        ));
        return;
    }
    let verdict = std::panic::catch_unwind(|| {
        jsonschema::meta::validate(schema)
            .map_err(|e| (e.instance_path().to_string(), e.to_string()))
    });
    match verdict {
        Ok(Ok(())) => {}
        Ok(Err((path, message))) => out.push(error(
            format!("{at}{path}"),
            format!("the {which} is not a valid JSON Schema: {message}"),
            "fix the schema so that its meta-schema accepts it",
        )),
        Err(_) => out.push(error(
            at.to_owned(),
            format!("the {which} could not be meta-validated"),
            "use a standard JSON Schema draft",
        )),
    }
}

fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 40 {
        format!("{}…", text.chars().take(40).collect::<String>())
    } else {
        text
    }
}

fn check(context: &Context<'_>, index: usize) -> Vec<Finding> {
    let Some(tool) = context.tool(index) else {
        return vec![];
    };
    let base = context.pointer(index);
    let mut out = Vec::new();
    if let Some(first) = context.index_of(&tool.name).filter(|&first| first < index) {
        out.push(RULE.finding(
            Severity::Error,
            format!("{base}/name"),
            format!(
                "tool `{}` is defined twice (also {}): a call cannot say which one it means",
                tool.name,
                context.pointer(first)
            ),
            "give every tool of a server its own name",
        ));
    }
    schema_findings(
        &tool.input_schema,
        &format!("{base}/inputSchema"),
        "input schema",
        &mut out,
    );
    if let Some(output) = &tool.output_schema {
        schema_findings(
            output,
            &format!("{base}/outputSchema"),
            "output schema",
            &mut out,
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lint::testing::{run, tools};

    #[test]
    fn finds_broken_schemas_and_duplicates() {
        let mut deep = serde_json::json!({"type": "string"});
        for _ in 0..100 {
            deep = serde_json::json!({"type": "object", "properties": {"x": deep}});
        }
        let list = tools(serde_json::json!([
            {"name": "a", "inputSchema": {"type": "object", "properties": {"p": {"type": "string"}}, "required": ["p"]}},
            {"name": "b", "inputSchema": "not a schema"},
            {"name": "c", "inputSchema": {"type": "object", "properties": {"p": {"$ref": "#/$defs/missing"}}, "required": ["q"]}},
            {"name": "d", "inputSchema": {"type": "object", "properties": {"p": {"type": "strin"}}}},
            {"name": "a", "inputSchema": {"type": "object"}},
            {"name": "e", "inputSchema": deep},
            {"name": "f", "inputSchema": {"type": "object", "$defs": {"x": {"type": "string"}}, "properties": {"p": {"$ref": "#/$defs/x"}}}}
        ]));
        assert!(
            run(&RULE, &list, 0).is_empty(),
            "{:?}",
            run(&RULE, &list, 0)
        );
        assert_eq!(run(&RULE, &list, 1)[0].pointer, "/tools/1/inputSchema");
        let c: Vec<String> = run(&RULE, &list, 2)
            .into_iter()
            .map(|f| f.pointer)
            .collect();
        assert!(
            c.contains(&"/tools/2/inputSchema/required/0".to_owned()),
            "{c:?}"
        );
        assert!(
            c.contains(&"/tools/2/inputSchema/properties/p/$ref".to_owned()),
            "{c:?}"
        );
        let d = run(&RULE, &list, 3);
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].message.contains("not a valid JSON Schema"), "{d:?}");
        assert_eq!(run(&RULE, &list, 4)[0].pointer, "/tools/4/name");
        let e = run(&RULE, &list, 5);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].severity, Severity::Warning);
        assert!(
            run(&RULE, &list, 6).is_empty(),
            "{:?}",
            run(&RULE, &list, 6)
        );
    }
}
