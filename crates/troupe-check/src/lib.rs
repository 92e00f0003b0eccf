//! Name resolution, type checking and the checked IR of troupe workflows.
//!
//! [`check_text`] parses and checks a source text; [`check`] checks a parsed
//! file. Both return every diagnostic found and, when there is no error, an
//! immutable [`ir::Program`]. The rules are those of LANGUAGE.md §4; each has
//! its own diagnostic code (see [`troupe_syntax::Code`]).

mod decls;
pub mod eval;
mod expr;
pub mod hash;
pub mod ir;
mod suggest;
pub mod types;
pub mod value;
mod workflow;

/// The language's keywords, for tools that write troupe source (from the lexer).
pub use troupe_syntax::{KEYWORDS, is_keyword};
pub use types::{Type, TypeTable};
pub use value::Value;

use std::collections::HashMap;
use troupe_syntax::{Diagnostic, LineIndex, ast};
use types::EnumId;

/// Parses and checks `text`. The program is `Some` exactly when no diagnostic
/// is an error.
pub fn check_text(text: &str) -> (Option<ir::Program>, Vec<Diagnostic>) {
    let parsed = troupe_syntax::parse(text);
    let (program, mut diagnostics) = check(&parsed.file, text);
    let syntax_errors = parsed.diagnostics.iter().any(Diagnostic::is_error);
    diagnostics.extend(parsed.diagnostics);
    diagnostics.sort_by_key(|d| (d.span.start, d.span.end, d.code));
    (if syntax_errors { None } else { program }, diagnostics)
}

/// Checks a parsed file. `text` is the source it was parsed from (for line
/// numbers in hints).
pub fn check(file: &ast::File, text: &str) -> (Option<ir::Program>, Vec<Diagnostic>) {
    let lines = LineIndex::new(text);
    let mut checker = Checker {
        source: text,
        lines: &lines,
        diagnostics: Vec::new(),
        error_count: 0,
        types: TypeTable::default(),
        type_names: HashMap::new(),
        enum_values: HashMap::new(),
        actions: Vec::new(),
        action_names: HashMap::new(),
        servers: HashMap::new(),
        wf: workflow::WfState::default(),
        suggestion_budget: std::cell::Cell::new(suggest::SUGGESTION_BUDGET),
    };
    checker.declare_types(file);
    checker.declare_servers(file);
    checker.declare_actions(file);
    let mut workflows = Vec::new();
    let mut names: HashMap<&str, troupe_syntax::Span> = HashMap::new();
    for item in &file.items {
        let ast::Item::Workflow(decl) = item else {
            continue;
        };
        if let Some(&prev) = names.get(decl.name.name.as_str()) {
            checker.duplicate(&decl.name.name, decl.name.span, prev, "workflow");
            continue;
        }
        names.insert(&decl.name.name, decl.name.span);
        if let Some(wf) = checker.workflow(decl) {
            workflows.push(wf);
        }
    }
    let program = (checker.error_count == 0).then_some(ir::Program {
        types: checker.types,
        actions: checker.actions,
        workflows,
    });
    (program, checker.diagnostics)
}

pub(crate) struct Checker<'a> {
    source: &'a str,
    lines: &'a LineIndex,
    diagnostics: Vec<Diagnostic>,
    error_count: usize,
    types: TypeTable,
    type_names: HashMap<String, Type>,
    /// Enum value name → every (enum, index) that declares it.
    enum_values: HashMap<String, Vec<(EnumId, u32)>>,
    actions: Vec<ir::Action>,
    action_names: HashMap<String, ir::ActionId>,
    servers: HashMap<String, std::sync::Arc<ir::McpServer>>,
    wf: workflow::WfState,
    /// Candidate comparisons left for "did you mean" hints (see `suggest`).
    suggestion_budget: std::cell::Cell<usize>,
}

impl Checker<'_> {
    pub(crate) fn error(&mut self, d: Diagnostic) {
        if d.is_error() {
            self.error_count += 1;
        }
        self.diagnostics.push(d);
    }
}
