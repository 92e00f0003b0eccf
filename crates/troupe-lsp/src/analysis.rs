//! One analysed version of a document: parse, check, contract findings (the
//! same diagnostics as `troupe check`), the symbol index, and the editor
//! features computed from them (hover, definition, references, completion,
//! document symbols, rename, code actions, projection and chart).

use crate::index::{Index, SymId, SymKind, Symbol, is_builtin_type};
use crate::text::Lines;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;
use troupe_check::ir;
use troupe_syntax::{Code, Diagnostic, Severity, Span, ast};

/// Everything known about one version of a document.
#[derive(Debug)]
pub struct Analysis {
    pub text: String,
    pub lines: Lines,
    pub file: ast::File,
    pub program: Option<ir::Program>,
    pub diagnostics: Vec<Diagnostic>,
    pub index: Index,
}

/// Contract findings per source text, so that re-analysing an unchanged
/// text (reopen, save, a request after a change) does not read the contract
/// sidecars again. Cleared when files on disk change.
#[derive(Debug, Default)]
pub struct ContractCache {
    entries: HashMap<(u64, std::path::PathBuf), Vec<Diagnostic>>,
}

impl ContractCache {
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    fn get_or_verify(&mut self, program: &ir::Program, text: &str, base: &Path) -> Vec<Diagnostic> {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut h);
        let key = (h.finish(), base.to_path_buf());
        if let Some(found) = self.entries.get(&key) {
            return found.clone();
        }
        if self.entries.len() > 64 {
            self.entries.clear();
        }
        let found = troupe_contracts::verify_workflows_in_source(program, text, base);
        self.entries.insert(key, found.clone());
        found
    }
}

/// Whether the program calls any `tool` action (only then can contract
/// verification find anything).
fn calls_tools(program: &ir::Program) -> bool {
    program
        .actions
        .iter()
        .any(|a| matches!(a.kind, ir::ActionKind::Tool(_)))
}

/// Checks a buffer that imports other files: the buffer and the files it
/// imports (read from disk relative to `base`) as one bundle whose first
/// file is the buffer at offset 0. A finding inside an imported file is
/// shown at the buffer's `import` of that file (or its first `import`).
fn with_imports(
    text: &str,
    file: &troupe_syntax::ast::File,
    base: Option<&Path>,
    name: Option<&str>,
) -> (Option<ir::Program>, Vec<Diagnostic>, Option<String>) {
    let dir = base.unwrap_or(Path::new("."));
    let mut unreadable = Vec::new();
    let key = name.unwrap_or("");
    let bundle = troupe_syntax::sources::bundle_with(
        key,
        text.to_owned(),
        false,
        &mut |key| std::fs::read_to_string(dir.join(key)).map_err(|e| e.to_string()),
        &mut unreadable,
    );
    let (program, diagnostics) = troupe_check::check_text_rooted(&bundle, name);
    let sources = troupe_syntax::Sources::from_bundle(bundle.clone());
    let imports: Vec<(String, Span)> = troupe_syntax::sources::imports_of(file, key);
    let mut out = Vec::with_capacity(diagnostics.len());
    for mut d in diagnostics {
        if d.code == troupe_syntax::Code::ImportUnresolved
            && let Some((key, why)) = unreadable
                .iter()
                .find(|(k, _)| d.message.contains(&format!("`{k}`")))
        {
            d.message = format!("cannot read `{key}`: {why}");
        }
        let (i, _) = sources.locate(d.span);
        if i == 0 {
            d.related.retain(|(s, _)| sources.file_at(s.start) == 0);
            out.push(d);
            continue;
        }
        let key = &sources.files[i].key;
        let Some(at) = imports
            .iter()
            .find(|(k, _)| k == key)
            .or(imports.first())
            .map(|(_, s)| *s)
        else {
            continue;
        };
        d.message = format!("in `{key}`: {}", d.message);
        d.span = at;
        d.related.clear();
        out.push(d);
    }
    (program, out, Some(bundle))
}

impl Analysis {
    /// Analyses `text`; `base` is the directory of the file (contract sidecars
    /// are relative to it), `None` for an unsaved buffer.
    pub fn new(text: String, base: Option<&Path>, cache: &mut ContractCache) -> Analysis {
        Analysis::named(text, base, None, cache)
    }

    /// [`Analysis::new`] of a file named `name` in `base` (so that an import
    /// of the file itself is a cycle).
    pub fn named(
        text: String,
        base: Option<&Path>,
        name: Option<&str>,
        cache: &mut ContractCache,
    ) -> Analysis {
        let parsed = troupe_syntax::parse(&text);
        let imports = parsed
            .file
            .items
            .iter()
            .any(|i| matches!(i, troupe_syntax::ast::Item::Import(_)));
        let (program, mut diagnostics, checked) = if imports {
            with_imports(&text, &parsed.file, base, name)
        } else {
            let (program, mut diagnostics) = troupe_check::check(&parsed.file, &text);
            let syntax_errors = parsed.diagnostics.iter().any(Diagnostic::is_error);
            diagnostics.extend(parsed.diagnostics);
            diagnostics.sort_by_key(|d| (d.span.start, d.span.end, d.code));
            let program = if syntax_errors { None } else { program };
            (program, diagnostics, None)
        };
        if let Some(program) = &program
            && calls_tools(program)
        {
            let base = base.unwrap_or(Path::new("."));
            let all = cache.get_or_verify(program, checked.as_deref().unwrap_or(&text), base);
            diagnostics.extend(
                all.into_iter()
                    .filter(|d| (d.span.end as usize) <= text.len()),
            );
        }
        let index = Index::build(&parsed.file, program.as_ref());
        Analysis {
            lines: Lines::new(&text),
            text,
            file: parsed.file,
            program,
            diagnostics,
            index,
        }
    }

    pub fn slice(&self, span: Span) -> &str {
        self.text.get(span.range()).unwrap_or("")
    }

    fn line_no(&self, span: Span) -> usize {
        self.lines.line_of(span.start as usize) + 1
    }

    /// The symbol at `offset`.
    pub fn symbol_at(&self, offset: usize) -> Option<(SymId, Span)> {
        self.index.at(offset).map(|o| (o.sym, o.span))
    }

    pub fn symbol(&self, sym: SymId) -> &Symbol {
        &self.index.symbols[sym]
    }

    /// Hover text (Markdown) for the name at `offset`.
    pub fn hover(&self, offset: usize) -> Option<(String, Span)> {
        if let Some(found) = crate::causal::hover(&self.file, &self.text, offset) {
            return Some(found);
        }
        let (sym, span) = self.symbol_at(offset)?;
        let s = self.symbol(sym);
        let mut out = String::new();
        match &s.kind {
            SymKind::Var { wf, lifeline } => {
                let ty = s.ty.as_deref().unwrap_or("?");
                let _ = writeln!(out, "```troupe\n{}: {ty}\n```", s.name);
                let _ = writeln!(
                    out,
                    "variable of lifeline **{lifeline}** in workflow `{}`",
                    self.index.workflows[*wf].name
                );
                if let Some(origin) = &s.origin {
                    let _ = writeln!(
                        out,
                        "\nfirst bound at {lifeline} on line {}: {origin}",
                        self.line_no(s.def)
                    );
                }
            }
            SymKind::Action | SymKind::Type | SymKind::Server => {
                let _ = writeln!(out, "```troupe\n{}\n```", self.slice(s.decl).trim_end());
            }
            SymKind::EnumValue { enum_name } => {
                let _ = writeln!(
                    out,
                    "```troupe\n{enum_name}.{}\n```\nvalue of enum `{enum_name}`",
                    s.name
                );
            }
            SymKind::Field { record } => {
                let ty = s.ty.as_deref().unwrap_or("?");
                let _ = writeln!(
                    out,
                    "```troupe\n{}: {ty}\n```\nfield of record `{record}`",
                    s.name
                );
            }
            SymKind::Param { action } => {
                let ty = s.ty.as_deref().unwrap_or("?");
                let _ = writeln!(
                    out,
                    "```troupe\n{}: {ty}\n```\nparameter of action `{action}`",
                    s.name
                );
            }
            SymKind::Workflow => {
                let decl = self.slice(s.decl);
                let head = decl.split('{').next().unwrap_or(decl).trim_end();
                let _ = writeln!(out, "```troupe\n{head}\n```");
                if let Some(w) = self.index.workflows.iter().find(|w| w.sym == sym) {
                    let names: Vec<&str> = w
                        .lifelines
                        .iter()
                        .map(|&l| self.symbol(l).name.as_str())
                        .collect();
                    let _ = writeln!(out, "lifelines: {}", names.join(", "));
                }
            }
            SymKind::Lifeline { wf } => {
                out = self.lifeline_hover(*wf, &s.name);
            }
        }
        Some((out, span))
    }

    fn lifeline_hover(&self, wf: usize, name: &str) -> String {
        let info = &self.index.workflows[wf];
        let mut out = format!("lifeline **{name}** of workflow `{}`\n\n", info.name);
        let Some(p) = info.participation.get(name) else {
            return out;
        };
        let mut parts = Vec::new();
        if p.sends > 0 {
            parts.push(plural(p.sends, "send"));
        }
        if p.receives > 0 {
            parts.push(plural(p.receives, "receive"));
        }
        if p.actions > 0 {
            parts.push(plural(p.actions, "action"));
        }
        for (kw, span) in &p.decides {
            parts.push(format!(
                "decides `{kw} {}` (line {})",
                self.slice(*span),
                self.line_no(*span)
            ));
        }
        let _ = writeln!(
            out,
            "takes part in: {}",
            if parts.is_empty() {
                "nothing".into()
            } else {
                parts.join(", ")
            }
        );
        if !p.informed_by.is_empty() {
            let items: Vec<String> = p
                .informed_by
                .iter()
                .map(|(owner, kw, span)| {
                    format!(
                        "{owner} (`{kw} {}`, line {})",
                        self.slice(*span),
                        self.line_no(*span)
                    )
                })
                .collect();
            let _ = writeln!(out, "\nreceives decisions of: {}", items.join(", "));
        }
        let vars = self.index.vars_before(wf, name, usize::MAX);
        if !vars.is_empty() {
            let items: Vec<String> = vars
                .iter()
                .map(|&v| {
                    let s = self.symbol(v);
                    format!("`{}: {}`", s.name, s.ty.as_deref().unwrap_or("?"))
                })
                .collect();
            let _ = writeln!(out, "\nvariables: {}", items.join(", "));
        }
        out
    }

    /// The definition of the name at `offset`.
    pub fn definition(&self, offset: usize) -> Option<Span> {
        let (sym, _) = self.symbol_at(offset)?;
        Some(self.symbol(sym).def)
    }

    /// Every occurrence of the name at `offset`.
    pub fn references(&self, offset: usize, include_declaration: bool) -> Vec<Span> {
        let Some((sym, _)) = self.symbol_at(offset) else {
            return Vec::new();
        };
        let def = self.symbol(sym).def;
        self.index
            .occurrences(sym)
            .filter(|&s| include_declaration || s != def)
            .collect()
    }

    /// The span that a rename at `offset` would change, if it can.
    pub fn prepare_rename(&self, offset: usize) -> Option<Span> {
        self.symbol_at(offset).map(|(_, span)| span)
    }

    /// The edits of renaming the name at `offset` to `new_name`.
    pub fn rename(&self, offset: usize, new_name: &str) -> Result<Vec<Span>, String> {
        if !is_identifier(new_name) {
            return Err(format!("`{new_name}` is not an identifier"));
        }
        if troupe_syntax::is_keyword(new_name) {
            return Err(format!("`{new_name}` is a keyword"));
        }
        let Some((sym, _)) = self.symbol_at(offset) else {
            return Err("no renameable name here".into());
        };
        let s = self.symbol(sym);
        if let Some(clash) = self.clash(sym, new_name) {
            return Err(format!(
                "`{new_name}` is already a {} (line {})",
                kind_word(&self.symbol(clash).kind),
                self.line_no(self.symbol(clash).def)
            ));
        }
        if is_builtin_type(new_name) && matches!(s.kind, SymKind::Type) {
            return Err(format!("`{new_name}` is a built-in type"));
        }
        Ok(self.index.occurrences(sym).collect())
    }

    /// Another symbol of the same scope already named `new_name`.
    fn clash(&self, sym: SymId, new_name: &str) -> Option<SymId> {
        let s = self.symbol(sym);
        let ix = &self.index;
        match &s.kind {
            SymKind::Var { wf, lifeline } => ix.workflows[*wf]
                .vars
                .get(&(lifeline.clone(), new_name.to_owned()))
                .copied(),
            SymKind::Lifeline { wf } => ix.workflows[*wf]
                .lifelines
                .iter()
                .copied()
                .find(|&l| ix.symbols[l].name == new_name),
            SymKind::Action => ix.actions.get(new_name).copied(),
            SymKind::Type => ix.types.get(new_name).copied(),
            SymKind::Server => ix.servers.get(new_name).copied(),
            SymKind::EnumValue { .. } => ix.enum_values.get(new_name).map(|v| v[0]),
            SymKind::Field { record } => ix.fields.get(record)?.get(new_name).copied(),
            SymKind::Workflow => ix
                .workflows
                .iter()
                .find(|w| w.name == new_name)
                .map(|w| w.sym),
            SymKind::Param { .. } => None,
        }
    }

    /// Completion candidates at `offset`: (label, kind, detail).
    pub fn completions(&self, offset: usize) -> Vec<Completion> {
        let offset = offset.min(self.text.len());
        let line_start = self.lines.line_start(self.lines.line_of(offset));
        let before = self.text.get(line_start..offset).unwrap_or("");
        let ctx = line_context(before);
        let mut out = Vec::new();
        let wf = self.index.workflow_at(offset);
        if matches!(ctx, LineCtx::Lifeline) {
            if let Some(wf) = wf {
                for &l in &self.index.workflows[wf].lifelines {
                    out.push(Completion::new(
                        &self.symbol(l).name,
                        CompletionKind::Lifeline,
                        "lifeline",
                    ));
                }
            }
            return out;
        }
        if matches!(ctx, LineCtx::Type) {
            for t in ["Bool", "Int", "Float", "Text", "Json"] {
                out.push(Completion::new(t, CompletionKind::Type, "built-in type"));
            }
            for name in self.index.types.keys() {
                out.push(Completion::new(name, CompletionKind::Type, "type"));
            }
            return out;
        }
        for k in troupe_syntax::KEYWORDS {
            out.push(Completion::new(k, CompletionKind::Keyword, "keyword"));
        }
        for (name, &sym) in &self.index.actions {
            let decl = self.slice(self.symbol(sym).decl);
            let sig = decl.split(['{', '=']).next().unwrap_or(decl).trim();
            out.push(Completion::new(name, CompletionKind::Action, sig));
        }
        for (name, vs) in &self.index.enum_values {
            let detail = self.symbol(vs[0]).ty.clone().unwrap_or_default();
            out.push(Completion::new(name, CompletionKind::EnumValue, &detail));
        }
        if let Some(wf) = wf {
            for &l in &self.index.workflows[wf].lifelines {
                out.push(Completion::new(
                    &self.symbol(l).name,
                    CompletionKind::Lifeline,
                    "lifeline",
                ));
            }
            let lifeline = match &ctx {
                LineCtx::At(l) => Some(l.clone()),
                _ => self.lifeline_of_stmt_at(wf, offset),
            };
            // Variables bound by the statement being written are not in scope yet.
            let scope_end = u32::try_from(offset).ok().and_then(|o| {
                self.index.workflows[wf]
                    .stmts
                    .iter()
                    .filter(|(s, _)| s.start <= o && o <= s.end)
                    .map(|(s, _)| s.start as usize)
                    .max()
            });
            if let Some(l) = lifeline {
                for v in self.index.vars_before(wf, &l, scope_end.unwrap_or(offset)) {
                    let s = self.symbol(v);
                    let detail = format!("{} @ {l}", s.ty.as_deref().unwrap_or("?"));
                    out.push(Completion::new(&s.name, CompletionKind::Variable, &detail));
                }
            }
        }
        out
    }

    fn lifeline_of_stmt_at(&self, wf: usize, offset: usize) -> Option<String> {
        let offset = u32::try_from(offset).ok()?;
        self.index.workflows[wf]
            .stmts
            .iter()
            .filter(|(s, _)| s.start <= offset && offset <= s.end)
            .min_by_key(|(s, _)| s.len())
            .and_then(|(_, l)| l.clone())
    }

    /// The lifeline "under the cursor": a lifeline name, a variable's
    /// lifeline, or the lifeline of the statement at `offset`.
    pub fn lifeline_at(&self, offset: usize) -> Option<(usize, String)> {
        if let Some((sym, _)) = self.symbol_at(offset) {
            match &self.symbol(sym).kind {
                SymKind::Lifeline { wf } => return Some((*wf, self.symbol(sym).name.clone())),
                SymKind::Var { wf, lifeline } => return Some((*wf, lifeline.clone())),
                _ => {}
            }
        }
        let wf = self.index.workflow_at(offset)?;
        Some((wf, self.lifeline_of_stmt_at(wf, offset)?))
    }

    /// The checked workflow at `offset` (or the only one).
    fn checked_workflow(&self, offset: usize) -> Result<(&ir::Program, &ir::Workflow), String> {
        let program = self
            .program
            .as_ref()
            .ok_or_else(|| "the file does not check; fix its errors first".to_owned())?;
        let name = match self.index.workflow_at(offset) {
            Some(wf) => self.index.workflows[wf].name.clone(),
            None => match program.workflows.as_slice() {
                [one] => one.name.clone(),
                [] => return Err("the file declares no workflow".into()),
                _ => return Err("place the cursor inside a workflow".into()),
            },
        };
        let wf = program
            .workflow(&name)
            .ok_or_else(|| format!("no checked workflow `{name}`"))?;
        Ok((program, wf))
    }

    /// The projection of the lifeline under the cursor (or of every lifeline
    /// of the workflow when the cursor is on none), as `troupe project` shows it.
    pub fn projection(&self, offset: usize) -> Result<String, String> {
        let (program, wf) = self.checked_workflow(offset)?;
        let only = self
            .lifeline_at(offset)
            .and_then(|(_, name)| wf.lifeline_ids().find(|&l| wf.lifeline(l).name == name));
        let projection = troupe_project::project(program, wf).map_err(|e| e.to_string())?;
        Ok(troupe_project::render_text(&projection, program, wf, only))
    }

    /// The chart of the workflow at `offset`, as Mermaid text (or SVG).
    pub fn chart(&self, offset: usize, svg: bool) -> Result<String, String> {
        let (program, wf) = self.checked_workflow(offset)?;
        let chart = troupe_msc::workflow_chart(program, wf, &troupe_msc::ChartOptions::default());
        Ok(if svg {
            troupe_msc::chart::svg::render(&chart)
        } else {
            troupe_msc::chart::mermaid::render(&chart)
        })
    }

    /// Mechanical fixes for the diagnostics overlapping `range`.
    pub fn fixes(&self, range: Span) -> Vec<Fix> {
        let mut out = Vec::new();
        for d in &self.diagnostics {
            if d.span.end < range.start || d.span.start > range.end {
                continue;
            }
            if let Some(fix) = self.missing_msg_fix(d) {
                out.push(fix);
            }
            if let Some(fix) = self.other_fix(d) {
                out.push(fix);
            }
            if let Some(s) = d.hint.as_deref().and_then(did_you_mean) {
                out.push(Fix {
                    title: format!("Replace `{}` with `{s}`", self.slice(d.span)),
                    code: d.code,
                    edits: vec![(d.span, s.to_owned())],
                    preferred: false,
                });
            }
        }
        out
    }

    /// The other fixes a diagnostic spells out: add a lifeline to the
    /// `lifelines` line (E0407), bind a call's outputs (E0404 with no
    /// targets), close a string (E0002).
    fn other_fix(&self, d: &Diagnostic) -> Option<Fix> {
        let fix = |title: String, edits: Vec<(Span, String)>| Fix {
            title,
            code: d.code,
            edits,
            preferred: true,
        };
        match d.code {
            Code::UnknownLifeline => {
                let name = self.slice(d.span).to_owned();
                let wf = self.file.items.iter().find_map(|item| match item {
                    ast::Item::Workflow(w)
                        if w.span.start <= d.span.start && d.span.end <= w.span.end =>
                    {
                        Some(w)
                    }
                    _ => None,
                })?;
                let last = wf.lifelines.as_ref()?.last()?;
                Some(fix(
                    format!("Add `{name}` to the `lifelines` line"),
                    vec![(
                        Span::new(last.span.end as usize, last.span.end as usize),
                        format!(", {name}"),
                    )],
                ))
            }
            Code::OutputCount if d.hint.as_deref()?.starts_with("bind its outputs") => {
                let n = self.index.action_outputs(self.slice(d.span))?.len();
                let names = vec!["_"; n].join(", ");
                Some(fix(
                    format!("Bind the {n} output(s): `{names} = …`"),
                    vec![(
                        Span::new(d.span.start as usize, d.span.start as usize),
                        format!("{names} = "),
                    )],
                ))
            }
            Code::UnterminatedString if !self.slice(d.span).starts_with("\"\"\"") => Some(fix(
                "Close the string".into(),
                vec![(
                    Span::new(d.span.end as usize, d.span.end as usize),
                    "\"".into(),
                )],
            )),
            _ => None,
        }
    }

    /// E0301: `x` read at B but bound at A — insert `msg A(x) -> B(x)` before
    /// the statement that reads it.
    fn missing_msg_fix(&self, d: &Diagnostic) -> Option<Fix> {
        if d.code != Code::UnboundVariable {
            return None;
        }
        let u = self.index.unresolved.iter().find(|u| u.span == d.span)?;
        let info = &self.index.workflows[u.wf];
        // The lifeline that binds it first, in source order.
        let (from, _) = info
            .vars
            .iter()
            .filter(|&((l, n), &s)| {
                n == &u.name && l != &u.lifeline && self.symbol(s).def.start < u.stmt.start
            })
            .min_by_key(|&(_, &s)| self.symbol(s).def.start)
            .map(|((l, _), &s)| (l.clone(), s))?;
        let stmt_line = self.lines.line_of(u.stmt.start as usize);
        let line_start = self.lines.line_start(stmt_line);
        let indent: String = self.text[line_start..]
            .chars()
            .take_while(|c| *c == ' ' || *c == '\t')
            .collect();
        let insert = format!("{indent}msg {from}({0}) -> {1}({0})\n", u.name, u.lifeline);
        Some(Fix {
            title: format!(
                "Send `{}` from {from} to {} first: `msg {from}({0}) -> {1}({0})`",
                u.name, u.lifeline
            ),
            code: d.code,
            edits: vec![(Span::new(line_start, line_start), insert)],
            preferred: true,
        })
    }

    /// Document outline: (name, kind, full span, name span, children).
    pub fn outline(&self) -> Vec<Outline> {
        let mut out = Vec::new();
        let ix = &self.index;
        for (i, s) in ix.symbols.iter().enumerate() {
            let kind = match &s.kind {
                SymKind::Type => {
                    let children = ix
                        .symbols
                        .iter()
                        .filter(|c| match &c.kind {
                            SymKind::EnumValue { enum_name } => {
                                *enum_name == s.name
                                    && s.decl.start <= c.def.start
                                    && c.def.end <= s.decl.end
                            }
                            SymKind::Field { record } => {
                                *record == s.name
                                    && s.decl.start <= c.def.start
                                    && c.def.end <= s.decl.end
                            }
                            _ => false,
                        })
                        .map(|c| Outline {
                            name: c.name.clone(),
                            kind: if matches!(c.kind, SymKind::Field { .. }) {
                                OutlineKind::Field
                            } else {
                                OutlineKind::EnumValue
                            },
                            detail: c.ty.clone(),
                            span: c.decl,
                            name_span: c.def,
                            children: Vec::new(),
                        })
                        .collect();
                    let is_enum = !ix.fields.contains_key(&s.name);
                    out.push(Outline {
                        name: s.name.clone(),
                        kind: if is_enum {
                            OutlineKind::Enum
                        } else {
                            OutlineKind::Record
                        },
                        detail: None,
                        span: s.decl,
                        name_span: s.def,
                        children,
                    });
                    continue;
                }
                SymKind::Action => OutlineKind::Action,
                SymKind::Server => OutlineKind::Server,
                SymKind::Workflow => {
                    let info = ix.workflows.iter().find(|w| w.sym == i);
                    let children = info
                        .map(|w| {
                            w.lifelines
                                .iter()
                                .map(|&l| Outline {
                                    name: ix.symbols[l].name.clone(),
                                    kind: OutlineKind::Lifeline,
                                    detail: None,
                                    span: ix.symbols[l].def,
                                    name_span: ix.symbols[l].def,
                                    children: Vec::new(),
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                    out.push(Outline {
                        name: s.name.clone(),
                        kind: OutlineKind::Workflow,
                        detail: None,
                        span: s.decl,
                        name_span: s.def,
                        children,
                    });
                    continue;
                }
                _ => continue,
            };
            let decl = self.slice(s.decl);
            let detail = decl.split(['{', '=']).next().map(|d| d.trim().to_owned());
            out.push(Outline {
                name: s.name.clone(),
                kind,
                detail,
                span: s.decl,
                name_span: s.def,
                children: Vec::new(),
            });
        }
        out.sort_by_key(|o| o.span.start);
        out
    }
}

/// A completion candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    pub label: String,
    pub kind: CompletionKind,
    pub detail: String,
}

impl Completion {
    fn new(label: &str, kind: CompletionKind, detail: &str) -> Completion {
        Completion {
            label: label.to_owned(),
            kind,
            detail: detail.to_owned(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompletionKind {
    Keyword,
    Action,
    Lifeline,
    Variable,
    Type,
    EnumValue,
}

/// A mechanical fix: a title and text edits.
#[derive(Debug, Clone)]
pub struct Fix {
    pub title: String,
    pub code: Code,
    pub edits: Vec<(Span, String)>,
    pub preferred: bool,
}

#[derive(Debug, Clone)]
pub struct Outline {
    pub name: String,
    pub kind: OutlineKind,
    pub detail: Option<String>,
    pub span: Span,
    pub name_span: Span,
    pub children: Vec<Outline>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutlineKind {
    Enum,
    EnumValue,
    Record,
    Field,
    Action,
    Server,
    Workflow,
    Lifeline,
}

/// What the text before the cursor on its line says about what comes next.
#[derive(Debug, PartialEq, Eq)]
enum LineCtx {
    /// After `@`: a lifeline.
    Lifeline,
    /// After `name:` in a declaration's parameter list, or `->`: a type.
    Type,
    /// Inside a statement of this lifeline.
    At(String),
    Other,
}

fn line_context(before: &str) -> LineCtx {
    let trimmed = before.trim_end_matches(|c: char| c.is_alphanumeric() || c == '_');
    if trimmed.trim_end().ends_with('@') {
        return LineCtx::Lifeline;
    }
    let t = before.trim_start();
    let word_after = |s: &str| -> Option<String> {
        let w: String = s
            .trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        (!w.is_empty()).then_some(w)
    };
    if let Some(rest) = t.strip_prefix("act ") {
        if let Some(l) = word_after(rest)
            && rest.contains(':')
        {
            return LineCtx::At(l);
        }
        return LineCtx::Lifeline;
    }
    if let Some(rest) = t.strip_prefix("msg ") {
        if let Some((_, after)) = rest.split_once("->") {
            return match word_after(after) {
                Some(l) if after.contains('(') => LineCtx::At(l),
                _ => LineCtx::Lifeline,
            };
        }
        return match word_after(rest) {
            Some(l) if rest.contains('(') => LineCtx::At(l),
            _ => LineCtx::Lifeline,
        };
    }
    let decl = [
        "llm ",
        "pure ",
        "effect ",
        "human ",
        "tool ",
        "record ",
        "workflow ",
    ]
    .iter()
    .any(|k| t.starts_with(k));
    if (decl || t.starts_with(|c: char| c.is_alphanumeric()) && !t.contains('='))
        && trimmed.trim_end().ends_with([':', '>'])
        && !t.starts_with("if ")
        && !t.starts_with("while ")
    {
        return LineCtx::Type;
    }
    LineCtx::Other
}

/// The suggestion of a "did you mean `x`?" hint.
fn did_you_mean(hint: &str) -> Option<&str> {
    let rest = hint.strip_prefix("did you mean `")?;
    let end = rest.find('`')?;
    let s = &rest[..end];
    is_identifier(s).then_some(s)
}

pub fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn plural(n: usize, w: &str) -> String {
    if n == 1 {
        format!("1 {w}")
    } else {
        format!("{n} {w}s")
    }
}

fn kind_word(k: &SymKind) -> &'static str {
    match k {
        SymKind::Type => "type",
        SymKind::EnumValue { .. } => "enum value",
        SymKind::Field { .. } => "field",
        SymKind::Action => "action",
        SymKind::Param { .. } => "parameter",
        SymKind::Server => "server",
        SymKind::Workflow => "workflow",
        SymKind::Lifeline { .. } => "lifeline",
        SymKind::Var { .. } => "variable",
    }
}

/// The LSP severity of a diagnostic.
pub fn severity(d: &Diagnostic) -> lsp_types::DiagnosticSeverity {
    match d.severity {
        Severity::Error => lsp_types::DiagnosticSeverity::ERROR,
        Severity::Warning => lsp_types::DiagnosticSeverity::WARNING,
    }
}
