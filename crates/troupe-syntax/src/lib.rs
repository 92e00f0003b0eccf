//! The syntax layer of troupe: lexer, parser and AST.
//!
//! It never fails and knows nothing of semantics: every input yields an AST
//! (with error nodes where the text made no sense) and the list of syntax
//! diagnostics.

pub mod diagnostic;
pub mod span;

pub use diagnostic::{Code, Diagnostic, Severity};
pub use span::{LineCol, LineIndex, Span};
pub mod ast;
pub mod lexer;
pub mod parser;
pub mod sources;
pub mod strings;

pub use lexer::{KEYWORDS, is_keyword};
pub use parser::{MAX_DEPTH, MAX_EXPR_DEPTH, Parsed, parse};
pub use sources::{ParsedProgram, SourceFile, Sources, parse_program};
