//! The small part of JSON Schema that tool input schemas use: property types
//! (`type`, `enum`, `anyOf`/`oneOf`, `items`), `required`, and the checks built
//! on them — is a troupe type compatible with a schema (drift), and does a JSON
//! value fit a schema (arguments before a call).

use serde_json::{Map, Value};
use troupe_check::{Type, TypeTable};

/// The schema's `properties`, if any.
pub fn properties(schema: &Map<String, Value>) -> Option<&Map<String, Value>> {
    schema.get("properties").and_then(Value::as_object)
}

/// The schema's `required` names, in order.
pub fn required(schema: &Map<String, Value>) -> Vec<String> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// The JSON types a schema admits (`type`, a list of types, or the union of
/// `anyOf`/`oneOf` alternatives; from `enum`/`const` values otherwise). Empty
/// when the schema does not say: any value.
pub fn types_of(schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    collect_types(schema, &mut out, 0);
    out.sort();
    out.dedup();
    out
}

fn collect_types(schema: &Value, out: &mut Vec<String>, depth: usize) {
    if depth > 16 {
        return;
    }
    let Some(obj) = schema.as_object() else {
        return;
    };
    match obj.get("type") {
        Some(Value::String(t)) => out.push(t.clone()),
        Some(Value::Array(list)) => {
            out.extend(list.iter().filter_map(Value::as_str).map(str::to_owned))
        }
        _ => {
            for key in ["anyOf", "oneOf"] {
                if let Some(Value::Array(alts)) = obj.get(key) {
                    for alt in alts {
                        let before = out.len();
                        collect_types(alt, out, depth + 1);
                        if out.len() == before {
                            // An alternative that admits anything admits anything.
                            out.clear();
                            return;
                        }
                    }
                }
            }
            let values: Vec<&Value> = match (obj.get("enum"), obj.get("const")) {
                (Some(Value::Array(vs)), _) => vs.iter().collect(),
                (_, Some(v)) => vec![v],
                _ => Vec::new(),
            };
            out.extend(values.into_iter().map(|v| json_type(v).to_owned()));
        }
    }
}

/// The JSON Schema type name of a value (`integer` for integral numbers).
pub fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The string values of a schema's `enum` (also inside `anyOf`/`oneOf` of `const`s).
pub fn string_enum(schema: &Value) -> Option<Vec<String>> {
    let obj = schema.as_object()?;
    if let Some(Value::Array(values)) = obj.get("enum") {
        return values
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect();
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(alts)) = obj.get(key) {
            let consts: Option<Vec<String>> = alts
                .iter()
                .map(|a| a.get("const").and_then(Value::as_str).map(str::to_owned))
                .collect();
            if let Some(c) = consts.filter(|c| !c.is_empty()) {
                return Some(c);
            }
        }
    }
    None
}

fn admits(types: &[String], t: &str) -> bool {
    types.is_empty()
        || types.iter().any(|x| x == t)
        || (t == "integer" && types.iter().any(|x| x == "number"))
}

/// Whether values of the troupe type `ty` may be sent where `schema` is
/// expected; the error says what differs.
pub fn compatible(ty: &Type, schema: &Value, types: &TypeTable) -> Result<(), String> {
    let admitted = types_of(schema);
    let want = |t: &str, what: &str| -> Result<(), String> {
        if admits(&admitted, t) {
            Ok(())
        } else {
            Err(format!(
                "is declared {what} but the server expects {}",
                describe(&admitted)
            ))
        }
    };
    match ty {
        Type::Json | Type::Error => Ok(()),
        Type::Bool => want("boolean", "Bool"),
        Type::Int => want("integer", "Int"),
        Type::Float => want("number", "Float"),
        Type::Text => want("string", "Text"),
        Type::Enum(id) => {
            let def = types.enum_def(*id);
            want("string", &def.name)?;
            if let Some(allowed) = string_enum(schema) {
                let extra: Vec<&String> =
                    def.values.iter().filter(|v| !allowed.contains(v)).collect();
                if !extra.is_empty() {
                    return Err(format!(
                        "is declared {} whose value(s) {} the server does not accept (it accepts {})",
                        def.name,
                        extra
                            .iter()
                            .map(|v| format!("`{v}`"))
                            .collect::<Vec<_>>()
                            .join(", "),
                        allowed
                            .iter()
                            .map(|v| format!("`{v}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
            }
            Ok(())
        }
        Type::Record(id) => {
            let def = types.record_def(*id);
            want("object", &def.name)?;
            if let Some(obj) = schema.as_object() {
                let fields: Vec<&str> = def.fields.iter().map(|(n, _)| n.as_str()).collect();
                let missing: Vec<String> = required(obj)
                    .into_iter()
                    .filter(|r| !fields.contains(&r.as_str()))
                    .collect();
                if !missing.is_empty() {
                    return Err(format!(
                        "is declared {} but the server also requires the field(s) {}",
                        def.name,
                        missing
                            .iter()
                            .map(|m| format!("`{m}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                if let Some(props) = properties(obj) {
                    for (name, fty) in &def.fields {
                        if let Some(fs) = props.get(name) {
                            compatible(fty, fs, types)
                                .map_err(|e| format!("field `{name}` {e}"))?;
                        }
                    }
                }
            }
            Ok(())
        }
        Type::List(inner) => {
            want("array", &format!("{}", types.display(ty)))?;
            match schema.get("items") {
                Some(items) => compatible(inner, items, types).map_err(|e| format!("(items) {e}")),
                None => Ok(()),
            }
        }
    }
}

fn describe(types: &[String]) -> String {
    match types {
        [] => "any value".to_owned(),
        [one] => one.clone(),
        many => many.join(" or "),
    }
}

/// Whether a JSON value fits `schema` (types, string enums, required object
/// fields, array items); the error says what differs.
pub fn validate(value: &Value, schema: &Value) -> Result<(), String> {
    validate_at(value, schema, 0)
}

fn validate_at(value: &Value, schema: &Value, depth: usize) -> Result<(), String> {
    if depth > 32 {
        return Ok(());
    }
    let admitted = types_of(schema);
    let t = json_type(value);
    if !admits(&admitted, t) {
        return Err(format!(
            "is {t} but the schema expects {}",
            describe(&admitted)
        ));
    }
    if let (Value::String(s), Some(allowed)) = (value, string_enum(schema))
        && !allowed.contains(s)
    {
        return Err(format!(
            "is `{s}`, not one of {}",
            allowed
                .iter()
                .map(|v| format!("`{v}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    match value {
        Value::Object(fields) => {
            if let Some(obj) = schema.as_object() {
                for r in required(obj) {
                    if !fields.contains_key(&r) {
                        return Err(format!("lacks the required field `{r}`"));
                    }
                }
                if let Some(props) = properties(obj) {
                    for (name, v) in fields {
                        if let Some(s) = props.get(name) {
                            validate_at(v, s, depth + 1)
                                .map_err(|e| format!("field `{name}` {e}"))?;
                        }
                    }
                }
            }
            Ok(())
        }
        Value::Array(items) => {
            if let Some(s) = schema.get("items") {
                for (i, v) in items.iter().enumerate() {
                    validate_at(v, s, depth + 1).map_err(|e| format!("item {i} {e}"))?;
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn types_from_unions_and_enums() {
        assert_eq!(
            types_of(&json!({"type": ["string", "null"]})),
            ["null", "string"]
        );
        assert_eq!(
            types_of(&json!({"anyOf": [{"type": "integer"}, {"type": "string"}]})),
            ["integer", "string"]
        );
        assert_eq!(types_of(&json!({"enum": ["a", "b"]})), ["string"]);
        assert!(types_of(&json!({"anyOf": [{"type": "integer"}, {}]})).is_empty());
        assert!(types_of(&json!(true)).is_empty());
    }

    #[test]
    fn compatibility() {
        let t = TypeTable::default();
        assert!(compatible(&Type::Int, &json!({"type": "number"}), &t).is_ok());
        assert!(compatible(&Type::Float, &json!({"type": "integer"}), &t).is_err());
        assert!(compatible(&Type::Text, &json!({}), &t).is_ok());
        assert!(
            compatible(
                &Type::List(Box::new(Type::Text)),
                &json!({"type": "array", "items": {"type": "string"}}),
                &t
            )
            .is_ok()
        );
        assert!(
            compatible(
                &Type::List(Box::new(Type::Int)),
                &json!({"type": "array", "items": {"type": "string"}}),
                &t
            )
            .is_err()
        );
    }

    #[test]
    fn validation() {
        let s =
            json!({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]});
        assert!(validate(&json!({"a": 1}), &s).is_ok());
        assert!(validate(&json!({"a": 1.5}), &s).is_err());
        assert!(validate(&json!({}), &s).is_err());
        assert!(validate(&json!("x"), &json!({"enum": ["y"]})).is_err());
    }
}
