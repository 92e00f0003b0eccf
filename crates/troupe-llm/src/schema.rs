//! JSON Schemas derived from declared troupe types.
//!
//! A model is asked for structured output with the schema of its action's
//! outputs; MCP tools reuse the per-type schema. The shapes follow what
//! [`Value::from_json`](troupe_check::Value::from_json) accepts, so a value
//! that conforms to the schema is read back without error:
//!
//! | type | schema |
//! |---|---|
//! | `Bool` / `Int` / `Float` / `Text` | `boolean` / `integer` / `number` / `string` |
//! | `Json` | `{}` (anything) |
//! | enum | `{"type": "string", "enum": [values…]}` |
//! | record | an object with every field required and `additionalProperties: false` |
//! | `[T]` | `{"type": "array", "items": T}` |
//!
//! Records are written inline, which is what providers handle best. A record
//! that contains itself (through a list) cannot be inlined: its recursive
//! occurrences become `{"$ref": "#/$defs/Name"}` with the definition under the
//! root's `$defs`.

use crate::OutputSlot;
use serde_json::{Map, Value as J, json};
use std::collections::BTreeMap;
use troupe_check::types::RecordId;
use troupe_check::{Type, TypeTable};

/// The schema of one type, standalone (with `$defs` when a record recurses).
pub fn json_schema(ty: &Type, types: &TypeTable) -> J {
    let mut b = Builder::new(types);
    let schema = b.schema(ty);
    b.finish(schema)
}

/// The schema of an action's answer: an object with one required property per
/// output, and no others.
pub fn output_schema(outputs: &[OutputSlot], types: &TypeTable) -> J {
    let mut b = Builder::new(types);
    let mut props = Map::new();
    for slot in outputs {
        let s = b.schema(&slot.ty);
        props.insert(slot.name.clone(), s);
    }
    let required: Vec<J> = outputs.iter().map(|o| J::String(o.name.clone())).collect();
    let schema = json!({
        "type": "object",
        "properties": props,
        "required": required,
        "additionalProperties": false,
    });
    b.finish(schema)
}

/// Whether `schema` fits OpenAI's strict structured outputs, which demand a
/// `type` on every subschema: a `Json` output (`{}`) does not.
pub(crate) fn is_strict_compatible(schema: &J) -> bool {
    match schema {
        J::Object(m) => {
            if m.is_empty() {
                return false;
            }
            m.iter().all(|(k, v)| match k.as_str() {
                "properties" | "$defs" => v
                    .as_object()
                    .is_some_and(|p| p.values().all(is_strict_compatible)),
                "items" => is_strict_compatible(v),
                _ => true,
            })
        }
        _ => true,
    }
}

struct Builder<'a> {
    types: &'a TypeTable,
    /// Records being expanded, to detect recursion.
    stack: Vec<RecordId>,
    /// Records that must be emitted under `$defs`, with their schema once built.
    defs: BTreeMap<RecordId, Option<J>>,
}

impl<'a> Builder<'a> {
    fn new(types: &'a TypeTable) -> Self {
        Builder {
            types,
            stack: Vec::new(),
            defs: BTreeMap::new(),
        }
    }

    fn schema(&mut self, ty: &Type) -> J {
        match ty {
            Type::Bool => json!({"type": "boolean"}),
            Type::Int => json!({"type": "integer"}),
            Type::Float => json!({"type": "number"}),
            Type::Text => json!({"type": "string"}),
            Type::Json | Type::Error => json!({}),
            Type::Enum(id) => match self.types.enums.get(id.0 as usize) {
                Some(def) => json!({"type": "string", "enum": def.values}),
                None => json!({"type": "string"}),
            },
            Type::Record(id) => {
                if self.stack.contains(id) {
                    self.defs.entry(*id).or_insert(None);
                    return json!({"$ref": format!("#/$defs/{}", self.def_name(*id))});
                }
                self.record_body(*id)
            }
            Type::List(inner) => {
                let items = self.schema(inner);
                json!({"type": "array", "items": items})
            }
        }
    }

    fn record_body(&mut self, id: RecordId) -> J {
        let Some(def) = self.types.records.get(id.0 as usize) else {
            return json!({"type": "object"});
        };
        self.stack.push(id);
        let mut props = Map::new();
        for (name, fty) in &def.fields {
            let s = self.schema(fty);
            props.insert(name.clone(), s);
        }
        self.stack.pop();
        let required: Vec<J> = def
            .fields
            .iter()
            .map(|(n, _)| J::String(n.clone()))
            .collect();
        json!({
            "type": "object",
            "title": def.name,
            "properties": props,
            "required": required,
            "additionalProperties": false,
        })
    }

    fn def_name(&self, id: RecordId) -> String {
        self.types
            .records
            .get(id.0 as usize)
            .map_or_else(|| format!("record{}", id.0), |d| d.name.clone())
    }

    fn finish(mut self, mut root: J) -> J {
        // Building a definition may discover further recursive records.
        while let Some(id) = self
            .defs
            .iter()
            .find(|(_, s)| s.is_none())
            .map(|(id, _)| *id)
        {
            self.stack.clear();
            let body = self.record_body(id);
            self.defs.insert(id, Some(body));
        }
        if !self.defs.is_empty() {
            let defs: Map<String, J> = self
                .defs
                .iter()
                .map(|(id, s)| (self.def_name(*id), s.clone().unwrap_or_default()))
                .collect();
            if let J::Object(m) = &mut root {
                m.insert("$defs".into(), J::Object(defs));
            }
        }
        root
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use troupe_check::types::{EnumDef, EnumId, RecordDef};

    fn table() -> TypeTable {
        TypeTable {
            enums: vec![EnumDef {
                name: "Verdict".into(),
                values: vec!["approve".into(), "revise".into()],
            }],
            records: vec![
                RecordDef {
                    name: "Ticket".into(),
                    fields: vec![("id".into(), Type::Text), ("price".into(), Type::Float)],
                },
                RecordDef {
                    name: "Tree".into(),
                    fields: vec![
                        ("label".into(), Type::Text),
                        (
                            "kids".into(),
                            Type::List(Box::new(Type::Record(RecordId(1)))),
                        ),
                    ],
                },
            ],
        }
    }

    #[test]
    fn output_schema_shape() {
        let t = table();
        let outs = [
            OutputSlot::new("verdict", Type::Enum(EnumId(0))),
            OutputSlot::new("notes", Type::Text),
            OutputSlot::new("tickets", Type::List(Box::new(Type::Record(RecordId(0))))),
        ];
        let s = output_schema(&outs, &t);
        assert_eq!(
            s,
            json!({
                "type": "object",
                "properties": {
                    "verdict": {"type": "string", "enum": ["approve", "revise"]},
                    "notes": {"type": "string"},
                    "tickets": {"type": "array", "items": {
                        "type": "object", "title": "Ticket",
                        "properties": {"id": {"type": "string"}, "price": {"type": "number"}},
                        "required": ["id", "price"], "additionalProperties": false
                    }}
                },
                "required": ["verdict", "notes", "tickets"],
                "additionalProperties": false
            })
        );
        assert!(is_strict_compatible(&s));
        assert!(!is_strict_compatible(&output_schema(
            &[OutputSlot::new("j", Type::Json)],
            &t
        )));
    }

    #[test]
    fn recursive_records_use_defs() {
        let t = table();
        let s = json_schema(&Type::Record(RecordId(1)), &t);
        assert_eq!(
            s["properties"]["kids"]["items"],
            json!({"$ref": "#/$defs/Tree"})
        );
        assert_eq!(
            s["$defs"]["Tree"]["properties"]["kids"]["items"],
            json!({"$ref": "#/$defs/Tree"})
        );
    }
}
