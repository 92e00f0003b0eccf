//! Name resolution, type checking and the checked IR of troupe workflows.
//!
//! `check(&ast)` turns a parsed file into diagnostics and, when it has no
//! errors, an immutable [`ir::Program`].

pub mod ir;
pub mod types;
pub mod value;

pub use types::{Type, TypeTable};
pub use value::Value;
