//! Turning an answer (raw text or JSON) into one [`Value`] per declared output.
//!
//! Shared by every backend so that the mock, the scripted backend and the
//! real providers accept exactly the same shapes and report the same errors.

use crate::OutputSlot;
use troupe_check::{Type, TypeTable, Value};

/// Exactly one `Text` output: the answer is the model's raw text.
pub(crate) fn is_raw_text(outputs: &[OutputSlot]) -> bool {
    matches!(outputs, [OutputSlot { ty: Type::Text, .. }])
}

/// Checks that every enum and record the outputs mention exists in `types`,
/// so that no later lookup can fail (the table comes from the checker, but a
/// backend must not panic whatever it is handed).
pub(crate) fn check_types(outputs: &[OutputSlot], types: &TypeTable) -> Result<(), String> {
    fn walk(ty: &Type, types: &TypeTable, seen: &mut Vec<u32>) -> Result<(), String> {
        match ty {
            Type::Enum(id) if types.enums.get(id.0 as usize).is_none() => {
                Err(format!("enum #{} is not in the type table", id.0))
            }
            Type::Record(id) => {
                if seen.contains(&id.0) {
                    return Ok(());
                }
                seen.push(id.0);
                let def = types
                    .records
                    .get(id.0 as usize)
                    .ok_or_else(|| format!("record #{} is not in the type table", id.0))?;
                def.fields
                    .iter()
                    .try_for_each(|(_, t)| walk(t, types, seen))
            }
            Type::List(inner) => walk(inner, types, seen),
            _ => Ok(()),
        }
    }
    let mut seen = Vec::new();
    outputs.iter().try_for_each(|o| {
        walk(&o.ty, types, &mut seen).map_err(|e| format!("output `{}`: {e}", o.name))
    })
}

/// Reads the values of `outputs` from a JSON answer.
///
/// The canonical shape is an object with one property per output. With a
/// single output, the bare value is accepted too (a scripted file writes
/// `"approve"`; models sometimes drop the wrapper object): the wrapped form is
/// tried first, so a record that happens to have a field named like the
/// output is still read correctly when wrapped. Extra top-level properties are
/// ignored: they cost nothing and re-asking for them would.
pub(crate) fn decode_json(
    json: &serde_json::Value,
    outputs: &[OutputSlot],
    types: &TypeTable,
) -> Result<Vec<Value>, String> {
    if let [only] = outputs {
        if let Some(inner) = json.as_object().and_then(|m| m.get(&only.name))
            && let Ok(v) = Value::from_json(inner, &only.ty, types)
        {
            return Ok(vec![v]);
        }
        return match Value::from_json(json, &only.ty, types) {
            Ok(v) => Ok(vec![v]),
            Err(bare) => match json.as_object().and_then(|m| m.get(&only.name)) {
                // The wrapper was there: its error is the useful one.
                Some(inner) => Value::from_json(inner, &only.ty, types)
                    .map(|v| vec![v])
                    .map_err(|e| format!("output `{}`: {e}", only.name)),
                None => Err(format!("output `{}`: {bare}", only.name)),
            },
        };
    }
    let Some(map) = json.as_object() else {
        return Err(format!(
            "expected a JSON object with the outputs {}, found {}",
            names(outputs),
            kind(json)
        ));
    };
    let mut values = Vec::with_capacity(outputs.len());
    for slot in outputs {
        let v = map.get(&slot.name).ok_or_else(|| {
            format!(
                "output `{}` is missing (expected the outputs {})",
                slot.name,
                names(outputs)
            )
        })?;
        values.push(
            Value::from_json(v, &slot.ty, types)
                .map_err(|e| format!("output `{}`: {e}", slot.name))?,
        );
    }
    Ok(values)
}

/// Reads a model's text as JSON for `outputs`: tolerates Markdown code fences
/// and prose around one JSON object or array, as small local models add them.
pub(crate) fn decode_text(
    text: &str,
    outputs: &[OutputSlot],
    types: &TypeTable,
) -> Result<Vec<Value>, String> {
    let json = parse_json_text(text)?;
    decode_json(&json, outputs, types)
}

/// Parses JSON out of model text, with the error a model can act on.
pub(crate) fn parse_json_text(text: &str) -> Result<serde_json::Value, String> {
    let trimmed = strip_fences(text.trim());
    match serde_json::from_str(trimmed) {
        Ok(v) => Ok(v),
        Err(first) => {
            // Prose around the JSON: take the outermost braces or brackets.
            for (open, close) in [('{', '}'), ('[', ']')] {
                if let (Some(a), Some(b)) = (trimmed.find(open), trimmed.rfind(close))
                    && a < b
                    && let Ok(v) = serde_json::from_str(&trimmed[a..=b])
                {
                    return Ok(v);
                }
            }
            Err(format!(
                "the answer is not valid JSON ({first}): {}",
                excerpt(text, 200)
            ))
        }
    }
}

fn strip_fences(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    // Skip the info string (`json`) up to the end of the first line.
    let rest = rest.find('\n').map_or("", |i| &rest[i + 1..]);
    rest.trim_end().strip_suffix("```").unwrap_or(rest).trim()
}

fn names(outputs: &[OutputSlot]) -> String {
    outputs
        .iter()
        .map(|o| format!("`{}`", o.name))
        .collect::<Vec<_>>()
        .join(", ")
}

fn kind(json: &serde_json::Value) -> &'static str {
    match json {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// At most `max` characters of `text`, with an ellipsis when cut.
pub(crate) fn excerpt(text: &str, max: usize) -> String {
    if text.chars().count() > max {
        format!("{}…", text.chars().take(max).collect::<String>())
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use troupe_check::types::{EnumDef, EnumId};

    fn table() -> TypeTable {
        TypeTable {
            enums: vec![EnumDef {
                name: "Verdict".into(),
                values: vec!["approve".into(), "revise".into()],
            }],
            records: vec![],
        }
    }

    #[test]
    fn single_output_bare_or_wrapped() {
        let t = table();
        let out = [OutputSlot::new("verdict", Type::Enum(EnumId(0)))];
        assert_eq!(
            decode_json(&serde_json::json!("revise"), &out, &t).unwrap(),
            vec![Value::Enum(EnumId(0), 1)]
        );
        assert_eq!(
            decode_json(&serde_json::json!({"verdict": "approve"}), &out, &t).unwrap(),
            vec![Value::Enum(EnumId(0), 0)]
        );
        let err = decode_json(&serde_json::json!({"verdict": "maybe"}), &out, &t).unwrap_err();
        assert!(err.contains("maybe") && err.contains("verdict"), "{err}");
    }

    #[test]
    fn several_outputs_need_an_object() {
        let t = table();
        let out = [
            OutputSlot::new("verdict", Type::Enum(EnumId(0))),
            OutputSlot::new("notes", Type::Text),
        ];
        let v = decode_json(
            &serde_json::json!({"verdict": "approve", "notes": "ok", "extra": 1}),
            &out,
            &t,
        )
        .unwrap();
        assert_eq!(v.len(), 2);
        assert!(
            decode_json(&serde_json::json!({"verdict": "approve"}), &out, &t)
                .unwrap_err()
                .contains("`notes` is missing")
        );
        assert!(
            decode_json(&serde_json::json!([1]), &out, &t)
                .unwrap_err()
                .contains("an array")
        );
    }

    #[test]
    fn text_with_fences_and_prose() {
        assert_eq!(
            parse_json_text("```json\n{\"a\": 1}\n```").unwrap(),
            serde_json::json!({"a": 1})
        );
        assert_eq!(
            parse_json_text("Sure! {\"a\": [1]} Hope it helps").unwrap(),
            serde_json::json!({"a": [1]})
        );
        assert!(
            parse_json_text("not json at all")
                .unwrap_err()
                .contains("not valid JSON")
        );
        assert!(parse_json_text("```").is_err());
        assert!(parse_json_text("").is_err());
    }
}
