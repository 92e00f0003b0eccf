//! From JSON Schemas to troupe types, for `troupe mcp import`: a
//! parameter's type (with a generated `enum` for a string enum of
//! identifiers), its default or zero literal, and an output schema's
//! generated `record`. Apart from `import.rs` and `render.rs` because the
//! mapping has rules of its own (see the module doc of `import.rs`).

use std::collections::{BTreeSet, HashSet};

use serde_json::Value as J;

use super::{is_identifier, string_literal, upper_camel};
use crate::schema::{required, string_enum, types_of};

/// The troupe type of a parameter: its text, and an enum to generate if any.
pub(super) struct ParamType {
    pub(super) text: String,
    pub(super) kind: Kind,
    pub(super) new_enum: Option<(String, Vec<String>)>,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Kind {
    Text,
    Int,
    Float,
    Bool,
    Enum(Vec<String>),
    List,
    Json,
}

fn resolve<'a>(schema: &'a J, root: &'a J) -> &'a J {
    let mut s = schema;
    for _ in 0..8 {
        let Some(r) = s.get("$ref").and_then(J::as_str) else {
            return s;
        };
        let path = r.strip_prefix("#/").unwrap_or("");
        let mut target = root;
        for part in path.split('/') {
            match target.get(part) {
                Some(t) => target = t,
                None => return s,
            }
        }
        s = target;
    }
    s
}

fn scalar_kind(schema: &J, root: &J) -> Kind {
    let schema = resolve(schema, root);
    let types: Vec<String> = types_of(schema)
        .into_iter()
        .filter(|t| t != "null")
        .collect();
    match types.as_slice() {
        [t] => match t.as_str() {
            "string" => Kind::Text,
            "integer" => Kind::Int,
            "number" => Kind::Float,
            "boolean" => Kind::Bool,
            "array" => Kind::List,
            _ => Kind::Json,
        },
        _ => Kind::Json,
    }
}

fn scalar_name(kind: &Kind) -> &'static str {
    match kind {
        Kind::Text => "Text",
        Kind::Int => "Int",
        Kind::Float => "Float",
        Kind::Bool => "Bool",
        _ => "Json",
    }
}

pub(super) fn param_type(
    tool: &str,
    param: &str,
    schema: &J,
    root: &J,
    taken: &mut HashSet<String>,
) -> ParamType {
    let resolved = resolve(schema, root);
    let kind = scalar_kind(resolved, root);
    match kind {
        Kind::Text => {
            if let Some(values) = string_enum(resolved) {
                let unique: BTreeSet<&String> = values.iter().collect();
                if !values.is_empty()
                    && unique.len() == values.len()
                    && values.iter().all(|v| is_identifier(v))
                {
                    let name = unique_name(upper_camel(&[tool, param]), taken);
                    return ParamType {
                        text: name.clone(),
                        kind: Kind::Enum(values.clone()),
                        new_enum: Some((name, values)),
                    };
                }
            }
            ParamType {
                text: "Text".into(),
                kind,
                new_enum: None,
            }
        }
        Kind::List => {
            let item = resolved
                .get("items")
                .map(|i| scalar_kind(i, root))
                .unwrap_or(Kind::Json);
            let inner = match item {
                Kind::List => "Json",
                other => scalar_name(&other),
            };
            ParamType {
                text: format!("[{inner}]"),
                kind,
                new_enum: None,
            }
        }
        other => ParamType {
            text: scalar_name(&other).into(),
            kind: other,
            new_enum: None,
        },
    }
}

pub(super) fn unique_name(base: String, taken: &mut HashSet<String>) -> String {
    let mut name = base.clone();
    let mut n = 2;
    while taken.contains(&name) {
        name = format!("{base}{n}");
        n += 1;
    }
    taken.insert(name.clone());
    name
}

/// The literal for a JSON default of a parameter of this kind, if it has one.
pub(super) fn default_literal(default: &J, kind: &Kind) -> Option<String> {
    match (kind, default) {
        (Kind::Text, J::String(s)) => Some(string_literal(s)),
        (Kind::Enum(values), J::String(s)) if values.contains(s) => Some(s.clone()),
        (Kind::Int, J::Number(n)) => n.as_i64().map(|i| i.to_string()),
        (Kind::Float, J::Number(n)) => n
            .as_f64()
            .filter(|x| x.is_finite())
            .map(|x| format!("{x:?}")),
        (Kind::Bool, J::Bool(b)) => Some(b.to_string()),
        _ => None,
    }
}

pub(super) fn zero_literal(kind: &Kind) -> Option<String> {
    match kind {
        Kind::Text => Some("\"\"".into()),
        Kind::Int => Some("0".into()),
        Kind::Float => Some("0.0".into()),
        Kind::Bool => Some("false".into()),
        Kind::Enum(values) => values.first().cloned(),
        Kind::List | Kind::Json => None,
    }
}

/// A record to generate: its name and its fields' names and types.
pub(super) type RecordDecl = (String, Vec<(String, String)>);

/// The output type of a tool, and a record to generate if any.
pub(super) fn output_type(
    tool: &str,
    schema: Option<&J>,
    taken: &mut HashSet<String>,
    notes: &mut Vec<String>,
) -> (String, Option<RecordDecl>) {
    let Some(schema) = schema else {
        return ("Text".into(), None);
    };
    let Some(props) = schema.get("properties").and_then(J::as_object) else {
        return ("Json".into(), None);
    };
    let obj = schema.as_object().cloned().unwrap_or_default();
    let req = required(&obj);
    let mut fields = Vec::new();
    let mut left_out = Vec::new();
    // Required fields in the schema's `required` order.
    let ordered = req
        .iter()
        .filter_map(|r| props.get(r).map(|ps| (r, ps)))
        .collect::<Vec<_>>();
    left_out.extend(props.keys().filter(|k| !req.contains(k)).cloned());
    for (name, ps) in ordered {
        if !is_identifier(name) {
            return ("Json".into(), None);
        }
        let ps = resolve(ps, schema);
        let nullable = types_of(ps).iter().any(|t| t == "null");
        let ty = match scalar_kind(ps, schema) {
            _ if nullable => "Json".to_owned(),
            Kind::List => {
                let item = ps
                    .get("items")
                    .map(|i| scalar_kind(i, schema))
                    .unwrap_or(Kind::Json);
                format!(
                    "[{}]",
                    if item == Kind::List {
                        "Json"
                    } else {
                        scalar_name(&item)
                    }
                )
            }
            k => scalar_name(&k).to_owned(),
        };
        fields.push((name.clone(), ty));
    }
    if fields.is_empty() {
        return ("Json".into(), None);
    }
    if !left_out.is_empty() {
        notes.push(format!(
            "the result's optional field(s) {} are not in the record",
            left_out
                .iter()
                .map(|f| format!("`{f}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let name = unique_name(upper_camel(&[tool, "result"]), taken);
    (name.clone(), Some((name, fields)))
}
