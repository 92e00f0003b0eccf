//! The types of the language and the table of declared `enum` and `record` types.

use serde::Serialize;
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct EnumId(pub u32);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct RecordId(pub u32);

/// A type of the language. `Error` stands for a type the checker could not
/// determine (after an error was reported); it is compatible with everything so
/// that one mistake yields one diagnostic.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Type {
    Bool,
    Int,
    Float,
    Text,
    Json,
    Enum(EnumId),
    Record(RecordId),
    List(Box<Type>),
    Error,
}

impl Type {
    pub fn is_numeric(&self) -> bool {
        matches!(self, Type::Int | Type::Float | Type::Error)
    }

    pub fn is_error(&self) -> bool {
        matches!(self, Type::Error)
    }

    /// Whether a value of type `self` may flow where `expected` is wanted: the
    /// same type, an `Int` where a `Float` is wanted, anything into `Json`.
    pub fn assignable_to(&self, expected: &Type) -> bool {
        match (self, expected) {
            (Type::Error, _) | (_, Type::Error) | (_, Type::Json) => true,
            (Type::Int, Type::Float) => true,
            (Type::List(a), Type::List(b)) => a.assignable_to(b),
            (a, b) => a == b,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnumDef {
    pub name: String,
    pub values: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordDef {
    pub name: String,
    pub fields: Vec<(String, Type)>,
}

impl RecordDef {
    pub fn field(&self, name: &str) -> Option<(u32, &Type)> {
        self.fields
            .iter()
            .position(|(n, _)| n == name)
            .map(|i| (i as u32, &self.fields[i].1))
    }
}

/// The declared types of one program.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TypeTable {
    pub enums: Vec<EnumDef>,
    pub records: Vec<RecordDef>,
}

impl TypeTable {
    pub fn enum_def(&self, id: EnumId) -> &EnumDef {
        &self.enums[id.0 as usize]
    }

    pub fn record_def(&self, id: RecordId) -> &RecordDef {
        &self.records[id.0 as usize]
    }

    /// A displayable form of `ty` (`[Ticket]`, `Verdict`, …).
    pub fn display<'a>(&'a self, ty: &'a Type) -> TypeDisplay<'a> {
        TypeDisplay { table: self, ty }
    }
}

#[derive(Debug)]
pub struct TypeDisplay<'a> {
    table: &'a TypeTable,
    ty: &'a Type,
}

impl fmt::Display for TypeDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.ty {
            Type::Bool => f.write_str("Bool"),
            Type::Int => f.write_str("Int"),
            Type::Float => f.write_str("Float"),
            Type::Text => f.write_str("Text"),
            Type::Json => f.write_str("Json"),
            Type::Enum(id) => f.write_str(&self.table.enum_def(*id).name),
            Type::Record(id) => f.write_str(&self.table.record_def(*id).name),
            Type::List(inner) => write!(f, "[{}]", self.table.display(inner)),
            Type::Error => f.write_str("{unknown}"),
        }
    }
}
