//! Typing a `tools/call` result by the declared outputs.
//!
//! - With `structuredContent` and one output: the whole structured content if
//!   it fits the output's type; else its field named like the output; else, if
//!   it has exactly one field, that field (`{"fare": 42.5}` for `-> Float`).
//! - With `structuredContent` and several outputs: the fields by name.
//! - Without it, one output: a `Text` output gets the text content (text blocks
//!   joined by newlines); a `Json` output the text parsed as JSON, or the text
//!   as a JSON string when it is not JSON; another type the text parsed as JSON
//!   (or as the type's text form: `true`, `42`, an enum value).
//! - Without it, several outputs: the text parsed as a JSON object, fields by name.
//!
//! Record outputs ignore fields the server adds beyond the declaration.

use serde_json::Value as J;
use troupe_check::{Type, TypeTable, Value};
use troupe_llm::OutputSlot;

/// The concatenated text blocks of a result's `content`.
pub fn text_content(result: &J) -> String {
    result
        .get("content")
        .and_then(J::as_array)
        .map(|blocks| {
            blocks
                .iter()
                .filter(|b| b.get("type").and_then(J::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(J::as_str))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// Drops object fields that a record type does not declare, at every depth.
fn trim(json: &J, ty: &Type, types: &TypeTable) -> J {
    match (ty, json) {
        (Type::Record(id), J::Object(map)) => {
            let def = types.record_def(*id);
            J::Object(
                map.iter()
                    .filter_map(|(k, v)| {
                        def.field(k)
                            .map(|(_, fty)| (k.clone(), trim(v, fty, types)))
                    })
                    .collect(),
            )
        }
        (Type::List(inner), J::Array(items)) => {
            J::Array(items.iter().map(|v| trim(v, inner, types)).collect())
        }
        _ => json.clone(),
    }
}

fn typed(json: &J, slot: &OutputSlot, types: &TypeTable) -> Result<Value, String> {
    Value::from_json(&trim(json, &slot.ty, types), &slot.ty, types)
}

/// The declared outputs' values from a successful result (a `CallToolResult` as JSON).
pub fn typed_outputs(
    result: &J,
    outputs: &[OutputSlot],
    types: &TypeTable,
) -> Result<Vec<Value>, String> {
    if outputs.is_empty() {
        return Ok(Vec::new());
    }
    match result.get("structuredContent") {
        Some(structured) if !structured.is_null() => from_structured(structured, outputs, types),
        _ => from_text(&text_content(result), outputs, types),
    }
}

fn field_names(map: &serde_json::Map<String, J>) -> String {
    if map.is_empty() {
        "no fields".to_owned()
    } else {
        map.keys()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn from_structured(s: &J, outputs: &[OutputSlot], types: &TypeTable) -> Result<Vec<Value>, String> {
    if let [slot] = outputs {
        let whole = typed(s, slot, types);
        if whole.is_ok() {
            return whole.map(|v| vec![v]);
        }
        if let J::Object(map) = s {
            if let Some(field) = map.get(&slot.name) {
                return typed(field, slot, types)
                    .map(|v| vec![v])
                    .map_err(|e| format!("field `{}` of the structured content: {e}", slot.name));
            }
            if map.len() == 1
                && let Some((name, field)) = map.iter().next()
            {
                return typed(field, slot, types)
                    .map(|v| vec![v])
                    .map_err(|e| format!("field `{name}` of the structured content: {e}"));
            }
        }
        return whole
            .map(|v| vec![v])
            .map_err(|e| format!("structured content: {e}"));
    }
    let J::Object(map) = s else {
        return Err(format!(
            "{} outputs need an object of fields, but the structured content is {}",
            outputs.len(),
            crate::schema::json_type(s)
        ));
    };
    outputs
        .iter()
        .map(|slot| match map.get(&slot.name) {
            Some(field) => {
                typed(field, slot, types).map_err(|e| format!("field `{}`: {e}", slot.name))
            }
            None => Err(format!(
                "no field `{}` in the structured content (it has {})",
                slot.name,
                field_names(map)
            )),
        })
        .collect()
}

fn from_text(text: &str, outputs: &[OutputSlot], types: &TypeTable) -> Result<Vec<Value>, String> {
    let parsed = serde_json::from_str::<J>(text).ok();
    if let [slot] = outputs {
        let v = match (&slot.ty, &parsed) {
            (Type::Text, _) => Ok(Value::text(text)),
            (Type::Json, Some(j)) => Ok(Value::Json(std::sync::Arc::new(j.clone()))),
            (Type::Json, None) => Ok(Value::Json(std::sync::Arc::new(J::String(text.to_owned())))),
            (_, Some(j)) => typed(j, slot, types)
                .or_else(|e| Value::parse(text.trim(), &slot.ty, types).map_err(|_| e)),
            (_, None) => Value::parse(text.trim(), &slot.ty, types),
        };
        return v
            .map(|v| vec![v])
            .map_err(|e| format!("text content (no structured content): {e}"));
    }
    match parsed {
        Some(s @ J::Object(_)) => from_structured(&s, outputs, types),
        _ => Err(format!(
            "{} outputs need structured content or a JSON object as text, but the server returned {}",
            outputs.len(),
            if text.is_empty() {
                "no text".to_owned()
            } else {
                format!("the text {:?}", text.chars().take(200).collect::<String>())
            }
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn slot(name: &str, ty: Type) -> OutputSlot {
        OutputSlot::new(name, ty)
    }

    #[test]
    fn single_scalar_from_a_one_field_object() {
        let t = TypeTable::default();
        let r = json!({"content": [], "structuredContent": {"fare": 42.5}});
        assert_eq!(
            typed_outputs(&r, &[slot("result", Type::Float)], &t),
            Ok(vec![Value::Float(42.5)])
        );
    }

    #[test]
    fn several_outputs_by_name() {
        let t = TypeTable::default();
        let r = json!({"structuredContent": {"valid": true, "sufficient": false}});
        let v = typed_outputs(
            &r,
            &[slot("valid", Type::Bool), slot("sufficient", Type::Bool)],
            &t,
        );
        assert_eq!(v, Ok(vec![Value::Bool(true), Value::Bool(false)]));
        let missing = typed_outputs(
            &r,
            &[slot("valid", Type::Bool), slot("other", Type::Bool)],
            &t,
        );
        assert!(missing.unwrap_err().contains("no field `other`"));
    }

    #[test]
    fn text_and_json_without_structured_content() {
        let t = TypeTable::default();
        let r = json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]});
        assert_eq!(
            typed_outputs(&r, &[slot("result", Type::Text)], &t),
            Ok(vec![Value::text("a\nb")])
        );
        let j = typed_outputs(&r, &[slot("result", Type::Json)], &t).unwrap();
        assert_eq!(j[0].to_json(&t), json!("a\nb"));
        let r = json!({"content": [{"type": "text", "text": "{\"x\": 1}"}]});
        let j = typed_outputs(&r, &[slot("result", Type::Json)], &t).unwrap();
        assert_eq!(j[0].to_json(&t), json!({"x": 1}));
        let r = json!({"content": [{"type": "text", "text": "7"}]});
        assert_eq!(
            typed_outputs(&r, &[slot("result", Type::Int)], &t),
            Ok(vec![Value::Int(7)])
        );
    }
}
