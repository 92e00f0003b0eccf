//! The Schema-Guided Dialogue (SGD, DSTC8) service model, as found in an SGD
//! `schema.json`: a JSON array of services, each with slots and intents.
//!
//! Everything is kept exactly as in the file, including the order of the optional
//! slots (a JSON object in the file, kept here as an ordered list of pairs), so that
//! models can be compared structurally after a round trip through MCP+.

use serde::{Deserialize, Serialize};

use crate::error::{Result, parse_json, read_file};

/// The SGD value meaning "any value is fine": the usual default of an optional slot.
pub const DONTCARE: &str = "dontcare";

/// One SGD service: a set of intents over a shared set of slots.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SgdService {
    /// Unique service name, e.g. `Banks_1`.
    pub service_name: String,
    /// What the service does.
    pub description: String,
    /// The slots of the service, in schema order.
    pub slots: Vec<SgdSlot>,
    /// The intents of the service, in schema order.
    pub intents: Vec<SgdIntent>,
}

/// One slot (a named parameter or result value) of a service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SgdSlot {
    /// Slot name, e.g. `account_type`.
    pub name: String,
    /// What the slot means.
    pub description: String,
    /// Whether the slot takes its values from the finite list `possible_values`.
    pub is_categorical: bool,
    /// The value domain of a categorical slot (usually empty otherwise).
    pub possible_values: Vec<String>,
}

/// One intent (an operation) of a service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SgdIntent {
    /// Intent name, e.g. `TransferMoney`.
    pub name: String,
    /// What the intent does.
    pub description: String,
    /// Whether the intent changes the world and so needs the user's confirmation.
    pub is_transactional: bool,
    /// Slots that must be known before the intent can be executed.
    pub required_slots: Vec<String>,
    /// Slots that may be given, each with its default value (a string; `dontcare` means
    /// any value), in schema order.
    #[serde(with = "ordered_map")]
    pub optional_slots: Vec<(String, String)>,
    /// Slots returned by the intent.
    pub result_slots: Vec<String>,
}

impl SgdService {
    /// The slot called `name`, if the service declares it.
    pub fn slot(&self, name: &str) -> Option<&SgdSlot> {
        self.slots.iter().find(|slot| slot.name == name)
    }

    /// The intent called `name`, if the service declares it.
    pub fn intent(&self, name: &str) -> Option<&SgdIntent> {
        self.intents.iter().find(|intent| intent.name == name)
    }
}

impl SgdIntent {
    /// The default of optional slot `name`, if it is optional.
    pub fn default_of(&self, name: &str) -> Option<&str> {
        self.optional_slots
            .iter()
            .find(|(slot, _)| slot == name)
            .map(|(_, default)| default.as_str())
    }
}

/// Parses the text of an SGD `schema.json` (a JSON array of services).
pub fn parse_schema(what: &str, text: &str) -> Result<Vec<SgdService>> {
    parse_json(what, text)
}

/// Loads an SGD `schema.json` file.
pub fn load_schema(path: &std::path::Path) -> Result<Vec<SgdService>> {
    let text = read_file(path)?;
    parse_schema(&path.display().to_string(), &text)
}

/// (De)serializes a JSON object of strings as an ordered list of pairs, keeping the
/// order of the file.
mod ordered_map {
    use std::fmt;

    use serde::de::{MapAccess, Visitor};
    use serde::ser::SerializeMap;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(
        pairs: &[(String, String)],
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(pairs.len()))?;
        for (key, value) in pairs {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<(String, String)>, D::Error> {
        struct PairsVisitor;
        impl<'de> Visitor<'de> for PairsVisitor {
            type Value = Vec<(String, String)>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object mapping slot names to default strings")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
                let mut pairs = Vec::new();
                while let Some((key, value)) = access.next_entry::<String, String>()? {
                    pairs.push((key, value));
                }
                Ok(pairs)
            }
        }
        deserializer.deserialize_map(PairsVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BANK: &str = r#"[{
        "service_name": "Banks_1",
        "description": "Manage bank accounts",
        "slots": [
            {"name": "account_type", "description": "Account type", "is_categorical": true,
             "possible_values": ["checking", "savings"]},
            {"name": "zeta", "description": "z", "is_categorical": false, "possible_values": []},
            {"name": "alpha", "description": "a", "is_categorical": false, "possible_values": []}
        ],
        "intents": [{
            "name": "CheckBalance", "description": "Check", "is_transactional": false,
            "required_slots": ["account_type"],
            "optional_slots": {"zeta": "dontcare", "alpha": "1"},
            "result_slots": ["account_type"]
        }]
    }]"#;

    #[test]
    fn parses_and_keeps_optional_slot_order() {
        let services = parse_schema("test", BANK).unwrap();
        let intent = &services[0].intents[0];
        assert_eq!(
            intent.optional_slots,
            vec![
                ("zeta".to_owned(), DONTCARE.to_owned()),
                ("alpha".to_owned(), "1".to_owned())
            ]
        );
        assert_eq!(intent.default_of("alpha"), Some("1"));
        assert_eq!(
            services[0].slot("zeta").map(|s| s.is_categorical),
            Some(false)
        );
    }

    #[test]
    fn serializes_back_to_the_same_json() {
        let services = parse_schema("test", BANK).unwrap();
        let text = serde_json::to_string(&services).unwrap();
        assert!(text.find("\"zeta\":\"dontcare\"") < text.find("\"alpha\":\"1\""));
        assert_eq!(parse_schema("again", &text).unwrap(), services);
    }

    #[test]
    fn rejects_malformed_input_without_panicking() {
        assert!(parse_schema("bad", "{").is_err());
        assert!(parse_schema("bad", r#"[{"service_name": 3}]"#).is_err());
        assert!(parse_schema("bad", r#"{"tools": []}"#).is_err());
    }
}
