//! Runtime values of the language, shared by literals in the IR and by the runtime.
//!
//! Floats are IEEE 754 binary64 values, NaN and the infinities included (see
//! `docs/language.md`, "Floats"). Two consequences here:
//!
//! - `PartialEq` is *sameness of values* (is this the value that was sent, the
//!   value that was recorded?), used by traces, journals and verification:
//!   floats are the same when they are `==` or both NaN, so a NaN that was
//!   sent is the NaN that was received. The language's `==` is IEEE
//!   ([`crate::eval::values_equal`]): there NaN equals nothing.
//! - JSON has no NaN or infinities, so [`Value::to_json`] writes them as the
//!   strings `"NaN"`, `"Infinity"` and `"-Infinity"`, and
//!   [`Value::from_json`] reads those strings back where a `Float` is
//!   expected: a value survives the round trip.

use crate::types::{EnumId, RecordId, Type, TypeTable};
use std::sync::Arc;

/// A value. Cheap to clone: aggregates are reference counted.
#[derive(Debug, Clone)]
pub enum Value {
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(Arc<str>),
    Enum(EnumId, u32),
    Record(RecordId, Arc<[Value]>),
    List(Arc<[Value]>),
    Json(Arc<serde_json::Value>),
}

impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Float(a), Value::Float(b)) => same_float(*a, *b),
            (Value::Text(a), Value::Text(b)) => a == b,
            (Value::Enum(a, i), Value::Enum(b, j)) => a == b && i == j,
            (Value::Record(a, x), Value::Record(b, y)) => a == b && x == y,
            (Value::List(x), Value::List(y)) => x == y,
            (Value::Json(a), Value::Json(b)) => a == b,
            _ => false,
        }
    }
}

/// Sameness of floats: IEEE equality, except that NaN is the same as NaN.
fn same_float(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

/// The JSON string that stands for a non-finite float.
pub fn non_finite_name(x: f64) -> Option<&'static str> {
    if x.is_nan() {
        Some("NaN")
    } else if x == f64::INFINITY {
        Some("Infinity")
    } else if x == f64::NEG_INFINITY {
        Some("-Infinity")
    } else {
        None
    }
}

/// The float a JSON string stands for, when it is one of the non-finite names.
pub fn non_finite_from_name(s: &str) -> Option<f64> {
    match s {
        "NaN" => Some(f64::NAN),
        "Infinity" => Some(f64::INFINITY),
        "-Infinity" => Some(f64::NEG_INFINITY),
        _ => None,
    }
}

impl Value {
    pub fn text(s: impl Into<Arc<str>>) -> Value {
        Value::Text(s.into())
    }

    /// Whether the value is of type `ty` (an `Int` also counts as a `Float`,
    /// anything as `Json`).
    pub fn conforms(&self, ty: &Type, types: &TypeTable) -> bool {
        match (self, ty) {
            (_, Type::Json | Type::Error) => true,
            (Value::Bool(_), Type::Bool)
            | (Value::Int(_), Type::Int | Type::Float)
            | (Value::Float(_), Type::Float) => true,
            (Value::Text(_), Type::Text) => true,
            (Value::Enum(a, i), Type::Enum(b)) => {
                a == b && (*i as usize) < types.enum_def(*b).values.len()
            }
            (Value::Record(a, fields), Type::Record(b)) => {
                let def = types.record_def(*b);
                a == b
                    && fields.len() == def.fields.len()
                    && fields
                        .iter()
                        .zip(&def.fields)
                        .all(|(v, (_, t))| v.conforms(t, types))
            }
            (Value::List(items), Type::List(inner)) => {
                items.iter().all(|v| v.conforms(inner, types))
            }
            _ => false,
        }
    }

    /// The JSON form of the value: enums as their value name, records as objects.
    pub fn to_json(&self, types: &TypeTable) -> serde_json::Value {
        use serde_json::Value as J;
        match self {
            Value::Bool(b) => J::Bool(*b),
            Value::Int(n) => J::from(*n),
            Value::Float(x) => match serde_json::Number::from_f64(*x) {
                Some(n) => J::Number(n),
                // JSON has no NaN or infinities: their names, read back by
                // `from_json` (and by JavaScript's `Number(…)`).
                None => J::String(non_finite_name(*x).unwrap_or("NaN").to_owned()),
            },
            Value::Text(s) => J::String(s.to_string()),
            Value::Enum(id, v) => J::String(types.enum_def(*id).values[*v as usize].clone()),
            Value::Record(id, fields) => {
                let def = types.record_def(*id);
                J::Object(
                    def.fields
                        .iter()
                        .zip(fields.iter())
                        .map(|((name, _), v)| (name.clone(), v.to_json(types)))
                        .collect(),
                )
            }
            Value::List(items) => J::Array(items.iter().map(|v| v.to_json(types)).collect()),
            Value::Json(j) => (**j).clone(),
        }
    }

    /// Reads a value of type `ty` from JSON, checking it against the type.
    pub fn from_json(
        json: &serde_json::Value,
        ty: &Type,
        types: &TypeTable,
    ) -> Result<Value, String> {
        use serde_json::Value as J;
        let expected = || format!("expected {}, found {}", types.display(ty), short_json(json));
        match (ty, json) {
            (Type::Bool, J::Bool(b)) => Ok(Value::Bool(*b)),
            (Type::Int, J::Number(n)) => n.as_i64().map(Value::Int).ok_or_else(expected),
            (Type::Float, J::Number(n)) => n.as_f64().map(Value::Float).ok_or_else(expected),
            (Type::Float, J::String(s)) => non_finite_from_name(s)
                .map(Value::Float)
                .ok_or_else(expected),
            (Type::Text, J::String(s)) => Ok(Value::text(s.as_str())),
            (Type::Json | Type::Error, j) => Ok(Value::Json(Arc::new(j.clone()))),
            (Type::Enum(id), J::String(s)) => {
                let def = types.enum_def(*id);
                def.values
                    .iter()
                    .position(|v| v == s)
                    .map(|i| Value::Enum(*id, i as u32))
                    .ok_or_else(|| {
                        format!(
                            "expected one of {} ({}), found {s:?}",
                            def.values.join(", "),
                            def.name
                        )
                    })
            }
            (Type::Record(id), J::Object(map)) => {
                let def = types.record_def(*id);
                let mut fields = Vec::with_capacity(def.fields.len());
                for (name, fty) in &def.fields {
                    let v = map
                        .get(name)
                        .ok_or_else(|| format!("field `{name}` of {} is missing", def.name))?;
                    fields.push(
                        Value::from_json(v, fty, types)
                            .map_err(|e| format!("field `{name}`: {e}"))?,
                    );
                }
                if let Some(extra) = map.keys().find(|k| def.field(k).is_none()) {
                    return Err(format!("{} has no field `{extra}`", def.name));
                }
                Ok(Value::Record(*id, fields.into()))
            }
            (Type::List(inner), J::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    Value::from_json(v, inner, types).map_err(|e| format!("item {i}: {e}"))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(|v| Value::List(v.into())),
            _ => Err(expected()),
        }
    }

    /// Parses the text form of a value of type `ty`, as typed on a command line:
    /// `true`, `42`, `0.5`, raw text, an enum value name, or JSON for the rest.
    pub fn parse(text: &str, ty: &Type, types: &TypeTable) -> Result<Value, String> {
        match ty {
            Type::Text => Ok(Value::text(text)),
            Type::Bool => match text {
                "true" | "yes" => Ok(Value::Bool(true)),
                "false" | "no" => Ok(Value::Bool(false)),
                _ => Err(format!("expected true or false, found {text:?}")),
            },
            Type::Int => text
                .trim()
                .parse()
                .map(Value::Int)
                .map_err(|_| format!("expected an integer, found {text:?}")),
            // Rust's float syntax: also `NaN`, `inf`, `Infinity` (any case).
            Type::Float => text
                .trim()
                .parse()
                .map(Value::Float)
                .map_err(|_| format!("expected a number, found {text:?}")),
            Type::Enum(_) => {
                Value::from_json(&serde_json::Value::String(text.to_owned()), ty, types)
            }
            _ => {
                let json: serde_json::Value = serde_json::from_str(text)
                    .map_err(|e| format!("expected JSON for {}: {e}", types.display(ty)))?;
                Value::from_json(&json, ty, types)
            }
        }
    }
}

fn short_json(json: &serde_json::Value) -> String {
    let s = json.to_string();
    if s.chars().count() > 40 {
        format!("{}…", s.chars().take(40).collect::<String>())
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_is_the_same_value_as_nan_and_only_floats_compare_so() {
        assert_eq!(Value::Float(f64::NAN), Value::Float(f64::NAN));
        assert_eq!(Value::Float(0.0), Value::Float(-0.0));
        assert_ne!(Value::Float(f64::NAN), Value::Float(1.0));
        assert_ne!(Value::Int(1), Value::Float(1.0));
        let list = |x| Value::List(vec![Value::Float(x)].into());
        assert_eq!(list(f64::NAN), list(f64::NAN));
        assert_ne!(list(f64::INFINITY), list(f64::NEG_INFINITY));
    }

    #[test]
    fn non_finite_floats_round_trip_through_json_as_strings() {
        let types = TypeTable::default();
        for (x, name) in [
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
        ] {
            let json = Value::Float(x).to_json(&types);
            assert_eq!(json, serde_json::Value::String(name.to_owned()));
            let back = Value::from_json(&json, &Type::Float, &types).unwrap();
            assert_eq!(back, Value::Float(x));
            assert_eq!(
                Value::parse(name, &Type::Float, &types).unwrap(),
                Value::Float(x)
            );
        }
        let list = Type::List(Box::new(Type::Float));
        let v = Value::parse("[1.5, \"NaN\"]", &list, &types).unwrap();
        assert_eq!(
            v,
            Value::List(vec![Value::Float(1.5), Value::Float(f64::NAN)].into())
        );
        // Other strings are still no Float, and NaN is no Int.
        assert!(Value::from_json(&"nan".into(), &Type::Float, &types).is_err());
        assert!(Value::from_json(&"NaN".into(), &Type::Int, &types).is_err());
    }
}
