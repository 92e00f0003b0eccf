//! Name resolution, type checking and the checked IR of troupe workflows.
//!
//! [`check_text`] parses and checks a source text; [`check`] checks a parsed
//! file. Both return every diagnostic found and, when there is no error, an
//! immutable [`ir::Program`]. The rules are those of LANGUAGE.md §4; each has
//! its own diagnostic code (see [`troupe_syntax::Code`]).

mod calls;
mod cpl;
mod decls;
pub mod eval;
mod expr;
pub mod hash;
pub mod ir;
mod par;
pub mod plan;
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

/// Parses and checks `text`: one file, or the bundle of a file and the files
/// it imports ([`load_file`], [`troupe_syntax::sources`]). The program is
/// `Some` exactly when no diagnostic is an error.
pub fn check_text(text: &str) -> (Option<ir::Program>, Vec<Diagnostic>) {
    check_text_rooted(text, None)
}

/// [`check_text`] of a bundle whose root file has no marker but is known by
/// `root_key` (an editor's buffer: see `troupe_syntax::sources::bundle_with`).
pub fn check_text_rooted(
    text: &str,
    root_key: Option<&str>,
) -> (Option<ir::Program>, Vec<Diagnostic>) {
    let parsed = troupe_syntax::sources::parse_program_rooted(text.to_owned(), root_key);
    let (program, mut diagnostics) = check(&parsed.file, text);
    let syntax_errors = parsed.diagnostics.iter().any(Diagnostic::is_error);
    diagnostics.extend(parsed.diagnostics);
    diagnostics.sort_by_key(|d| (d.span.start, d.span.end, d.code));
    (if syntax_errors { None } else { program }, diagnostics)
}

/// Reads the file at `path` and the files it imports (transitively, each
/// once) into one bundle text for [`check_text`]. Only the root must be
/// readable: an import that cannot be read is left out, and checking the
/// bundle reports it at the `import` (with why it could not be read in
/// `unreadable`).
pub fn load_file(path: &std::path::Path) -> std::io::Result<Loaded> {
    let root_text = std::fs::read_to_string(path)?;
    let dir = path
        .parent()
        .map_or_else(|| std::path::PathBuf::from("."), std::path::Path::to_owned);
    let root_key = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let mut unreadable = Vec::new();
    let text = troupe_syntax::sources::bundle(
        &root_key,
        root_text,
        &mut |key| std::fs::read_to_string(dir.join(key)).map_err(|e| e.to_string()),
        &mut unreadable,
    );
    Ok(Loaded { text, unreadable })
}

/// A file loaded with its imports.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The bundle text: the file itself when it imports nothing.
    pub text: String,
    /// Imported files that could not be read: (key, why).
    pub unreadable: Vec<(String, String)>,
}

impl Loaded {
    /// Parses and checks the bundle; an unresolved import's diagnostic says
    /// why its file could not be read.
    pub fn check(&self) -> (Option<ir::Program>, Vec<Diagnostic>) {
        let (program, mut diagnostics) = check_text(&self.text);
        for d in &mut diagnostics {
            if d.code != troupe_syntax::Code::ImportUnresolved {
                continue;
            }
            if let Some((key, why)) = self
                .unreadable
                .iter()
                .find(|(k, _)| d.message.contains(&format!("`{k}`")))
            {
                d.message = format!("cannot read `{key}`: {why}");
            }
        }
        (program, diagnostics)
    }
}

/// Checks a parsed file. `text` is the source it was parsed from (for line
/// numbers in hints): one file or a bundle.
pub fn check(file: &ast::File, text: &str) -> (Option<ir::Program>, Vec<Diagnostic>) {
    let lines = LineIndex::new(text);
    let file_starts: Vec<u32> = if text.contains(troupe_syntax::sources::FILE_MARKER) {
        troupe_syntax::Sources::from_bundle(text.to_owned())
            .files
            .iter()
            .map(|f| f.start)
            .collect()
    } else {
        vec![0]
    };
    let mut checker = Checker {
        source: text,
        lines: &lines,
        file_starts,
        diagnostics: Vec::new(),
        error_count: 0,
        types: TypeTable::default(),
        type_names: HashMap::new(),
        enum_values: HashMap::new(),
        actions: Vec::new(),
        action_names: HashMap::new(),
        servers: HashMap::new(),
        wf: workflow::WfState::default(),
        callees: std::collections::BTreeMap::new(),
        pending_tools: Vec::new(),
        pending_planners: Vec::new(),
        cyclic: std::collections::HashSet::new(),
        suggestion_budget: std::cell::Cell::new(suggest::SUGGESTION_BUDGET),
        causal: cpl::Deferral::default(),
    };
    checker.declare_types(file);
    checker.declare_servers(file);
    checker.declare_actions(file);
    let mut decls = Vec::new();
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
        decls.push(decl);
    }
    // Callees before callers: a call inlines the callee's checked IR.
    let mut cycle_errors = Vec::new();
    let (order, cyclic) = calls::order(&decls, &mut cycle_errors);
    for d in cycle_errors {
        checker.error(d);
    }
    checker.cyclic = cyclic;
    let mut checked: Vec<Option<std::sync::Arc<ir::Workflow>>> = vec![None; decls.len()];
    for d in &decls {
        // Every workflow is known (failed ones as `None`) before any is checked.
        checker.callees.insert(d.name.name.clone(), None);
    }
    for i in order {
        let wf = checker.workflow(decls[i]).map(std::sync::Arc::new);
        checker
            .callees
            .insert(decls[i].name.name.clone(), wf.clone());
        checked[i] = wf;
    }
    checker.callees.clear();
    let workflows: Vec<ir::Workflow> = checked
        .into_iter()
        .flatten()
        .map(|w| std::sync::Arc::try_unwrap(w).unwrap_or_else(|w| (*w).clone()))
        .collect();
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
    /// Where each file of a bundle starts (`[0]` for one file).
    file_starts: Vec<u32>,
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
    /// The workflows checked so far (`None`: it has errors, or is not
    /// checked yet), for `call`.
    callees: std::collections::BTreeMap<String, Option<std::sync::Arc<ir::Workflow>>>,
    /// `tools:` of `llm` actions, resolved once every action is declared:
    /// (action index, llm name, the names).
    pending_tools: Vec<(usize, String, Vec<troupe_syntax::ast::Ident>)>,
    /// `actions:` of `planner`s, resolved once every action is declared:
    /// (action index, planner name, the names).
    pending_planners: Vec<(usize, String, Vec<troupe_syntax::ast::Ident>)>,
    /// Calls that close a cycle of calls (reported; not inlined).
    cyclic: std::collections::HashSet<troupe_syntax::Span>,
    /// Candidate comparisons left for "did you mean" hints (see `suggest`).
    suggestion_budget: std::cell::Cell<usize>,
    /// Causal guards that read variables bound only later (see `cpl`).
    causal: cpl::Deferral,
}

impl Checker<'_> {
    pub(crate) fn error(&mut self, d: Diagnostic) {
        if d.is_error() {
            self.error_count += 1;
        }
        self.diagnostics.push(d);
    }
}
