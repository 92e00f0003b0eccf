//! The symbol index of one file, built from its AST (so it works on files
//! with errors): every declaration and every occurrence of a name, resolved
//! the way the checker resolves it — variables per lifeline, then enum values.
//!
//! It also records what hover and completion need: inferred types of
//! variables (replaced by the checker's types when the file checks), the
//! lifeline of every statement, and each lifeline's participation.

use std::collections::{BTreeSet, HashMap};
use troupe_check::ir;
use troupe_syntax::Span;
use troupe_syntax::ast::{
    self, ActRhs, ActionBody, Block, ExprKind, Item, Outputs, StmtKind, StrPart, TypeExpr,
};

/// Index of a [`Symbol`] in [`Index::symbols`].
pub type SymId = usize;

/// What a symbol is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SymKind {
    /// An `enum` or `record` type.
    Type,
    /// A value of the enum `enum_name`.
    EnumValue {
        enum_name: String,
    },
    /// A field of the record `record`.
    Field {
        record: String,
    },
    /// A declared action (llm, pure, effect, human, tool).
    Action,
    /// A parameter of the action `action`.
    Param {
        action: String,
    },
    /// An `mcp` server.
    Server,
    Workflow,
    /// A lifeline of the workflow `wf` (an index into [`Index::workflows`]).
    Lifeline {
        wf: usize,
    },
    /// A variable of `lifeline` in the workflow `wf`.
    Var {
        wf: usize,
        lifeline: String,
    },
}

/// One declared (or first bound) name.
#[derive(Debug, Clone)]
pub struct Symbol {
    pub kind: SymKind,
    pub name: String,
    /// The defining occurrence of the name.
    pub def: Span,
    /// The whole declaration (for hover and document symbols).
    pub decl: Span,
    /// The type, when known (variables, fields, parameters).
    pub ty: Option<String>,
    /// How a variable was first bound ("input", "received from A", …).
    pub origin: Option<String>,
}

/// One occurrence of a symbol's name.
#[derive(Debug, Clone, Copy)]
pub struct Occ {
    pub span: Span,
    pub sym: SymId,
}

/// A read of a name that resolves to nothing at its lifeline.
#[derive(Debug, Clone)]
pub struct Unresolved {
    pub span: Span,
    pub name: String,
    pub wf: usize,
    pub lifeline: String,
    /// The span of the statement that reads it.
    pub stmt: Span,
}

/// What one lifeline does in one workflow.
#[derive(Debug, Clone, Default)]
pub struct Participation {
    pub sends: usize,
    pub receives: usize,
    pub actions: usize,
    /// `if`/`while` it owns: (keyword, guard span).
    pub decides: Vec<(&'static str, Span)>,
    /// Owners whose decisions it receives, with the construct's keyword and span.
    pub informed_by: Vec<(String, &'static str, Span)>,
}

/// Per-workflow facts.
#[derive(Debug, Clone)]
pub struct WfInfo {
    pub name: String,
    pub sym: SymId,
    pub span: Span,
    pub lifelines: Vec<SymId>,
    /// (lifeline, variable) → symbol.
    pub vars: HashMap<(String, String), SymId>,
    pub participation: HashMap<String, Participation>,
    /// Top-level and nested statements with the lifeline they belong to
    /// (the acting lifeline, the owner, or the sender of a `msg`).
    pub stmts: Vec<(Span, Option<String>)>,
}

/// The index of one file.
#[derive(Debug, Clone, Default)]
pub struct Index {
    pub symbols: Vec<Symbol>,
    /// Sorted by start.
    pub occs: Vec<Occ>,
    pub unresolved: Vec<Unresolved>,
    pub workflows: Vec<WfInfo>,
    pub types: HashMap<String, SymId>,
    pub enum_values: HashMap<String, Vec<SymId>>,
    pub fields: HashMap<String, HashMap<String, SymId>>,
    pub actions: HashMap<String, SymId>,
    pub servers: HashMap<String, SymId>,
    /// Action name → its parameters.
    params: HashMap<String, HashMap<String, SymId>>,
    /// Action name → its output types.
    action_outputs: HashMap<String, Vec<Option<String>>>,
}

const BUILTIN_TYPES: &[&str] = &["Bool", "Int", "Float", "Text", "Json"];

impl Index {
    /// Indexes `file`; `program` (present when the file checks) supplies the
    /// checker's types of variables.
    pub fn build(file: &ast::File, program: Option<&ir::Program>) -> Index {
        let mut ix = Index::default();
        // Declarations first, so that uses anywhere resolve.
        for item in &file.items {
            ix.declare(item);
        }
        for item in &file.items {
            ix.item_uses(item);
        }
        if let Some(program) = program {
            ix.adopt_types(program);
        }
        ix.occs.sort_by_key(|o| (o.span.start, o.span.end));
        ix
    }

    fn add(&mut self, kind: SymKind, id: &ast::Ident, decl: Span, ty: Option<String>) -> SymId {
        let sym = self.symbols.len();
        self.symbols.push(Symbol {
            kind,
            name: id.name.clone(),
            def: id.span,
            decl,
            ty,
            origin: None,
        });
        self.occs.push(Occ { span: id.span, sym });
        sym
    }

    fn occ(&mut self, span: Span, sym: SymId) {
        self.occs.push(Occ { span, sym });
    }

    fn declare(&mut self, item: &Item) {
        match item {
            Item::Enum(e) => {
                if self.types.contains_key(&e.name.name) {
                    return;
                }
                let sym = self.add(SymKind::Type, &e.name, e.span, None);
                self.types.insert(e.name.name.clone(), sym);
                for v in &e.values {
                    let vs = self.add(
                        SymKind::EnumValue {
                            enum_name: e.name.name.clone(),
                        },
                        v,
                        v.span,
                        Some(e.name.name.clone()),
                    );
                    self.enum_values.entry(v.name.clone()).or_default().push(vs);
                }
            }
            Item::Record(r) => {
                if self.types.contains_key(&r.name.name) {
                    return;
                }
                let sym = self.add(SymKind::Type, &r.name, r.span, None);
                self.types.insert(r.name.name.clone(), sym);
                let mut fields = HashMap::new();
                for f in &r.fields {
                    let fs = self.add(
                        SymKind::Field {
                            record: r.name.name.clone(),
                        },
                        &f.name,
                        f.name.span.to(f.ty.span()),
                        Some(type_text(&f.ty)),
                    );
                    fields.insert(f.name.name.clone(), fs);
                }
                self.fields.insert(r.name.name.clone(), fields);
            }
            Item::Mcp(m) => {
                if !self.servers.contains_key(&m.name.name) {
                    let sym = self.add(SymKind::Server, &m.name, m.span, None);
                    self.servers.insert(m.name.name.clone(), sym);
                }
            }
            Item::Action(a) => {
                if self.actions.contains_key(&a.name.name) {
                    return;
                }
                let sym = self.add(SymKind::Action, &a.name, a.span, None);
                self.actions.insert(a.name.name.clone(), sym);
                let mut params = HashMap::new();
                for p in &a.params {
                    let ps = self.add(
                        SymKind::Param {
                            action: a.name.name.clone(),
                        },
                        &p.name,
                        p.name.span.to(p.ty.span()),
                        Some(type_text(&p.ty)),
                    );
                    params.insert(p.name.name.clone(), ps);
                }
                self.params.insert(a.name.name.clone(), params);
                let outs = match &a.outputs {
                    Outputs::None => Vec::new(),
                    Outputs::Single(t) => vec![Some(type_text(t))],
                    Outputs::Named(ps) => ps.iter().map(|p| Some(type_text(&p.ty))).collect(),
                };
                self.action_outputs.insert(a.name.name.clone(), outs);
            }
            Item::Import(_) => {}
            Item::Workflow(w) => {
                let sym = self.add(SymKind::Workflow, &w.name, w.span, None);
                self.workflows.push(WfInfo {
                    name: w.name.name.clone(),
                    sym,
                    span: w.span,
                    lifelines: Vec::new(),
                    vars: HashMap::new(),
                    participation: HashMap::new(),
                    stmts: Vec::new(),
                });
            }
        }
    }

    fn type_uses(&mut self, t: &TypeExpr) {
        match t {
            TypeExpr::Named(id) => {
                if let Some(&sym) = self.types.get(&id.name) {
                    self.occ(id.span, sym);
                }
            }
            TypeExpr::List(inner, _) => self.type_uses(inner),
            TypeExpr::Error(_) => {}
        }
    }

    fn item_uses(&mut self, item: &Item) {
        match item {
            Item::Record(r) => {
                for f in &r.fields {
                    self.type_uses(&f.ty);
                }
            }
            Item::Action(a) => {
                // Only the first declaration of a name owns its parameters.
                let own = self
                    .actions
                    .get(&a.name.name)
                    .is_some_and(|&s| self.symbols[s].def == a.name.span);
                for p in &a.params {
                    self.type_uses(&p.ty);
                }
                match &a.outputs {
                    Outputs::None => {}
                    Outputs::Single(t) => self.type_uses(t),
                    Outputs::Named(ps) => {
                        for p in ps {
                            self.type_uses(&p.ty);
                        }
                    }
                }
                if !own {
                    return;
                }
                let params = self.params.get(&a.name.name).cloned().unwrap_or_default();
                match &a.body {
                    ActionBody::Expr(e) => self.param_expr(e, &params),
                    ActionBody::Fields(fields, _) => {
                        for f in fields {
                            match f.name.name.as_str() {
                                "server" => {
                                    if let ExprKind::Name(id) = &f.value.kind
                                        && let Some(&s) = self.servers.get(&id.name)
                                    {
                                        self.occ(id.span, s);
                                    }
                                }
                                "tools" | "actions" => {
                                    if let ExprKind::List(items) = &f.value.kind {
                                        for it in items {
                                            if let ExprKind::Name(id) = &it.kind
                                                && let Some(&s) = self.actions.get(&id.name)
                                            {
                                                self.occ(id.span, s);
                                            }
                                        }
                                    }
                                }
                                _ => self.param_expr(&f.value, &params),
                            }
                        }
                    }
                    ActionBody::Missing(_) | ActionBody::Extern { .. } => {}
                }
            }
            Item::Import(_) => {}
            Item::Workflow(w) => {
                let Some(wf) = self.workflows.iter().position(|i| i.span == w.span) else {
                    return;
                };
                self.workflow(wf, w);
            }
            Item::Enum(_) | Item::Mcp(_) => {}
        }
    }

    /// Names in an action body: its parameters, or enum values.
    fn param_expr(&mut self, e: &ast::Expr, params: &HashMap<String, SymId>) {
        walk_expr(e, &mut |e| match &e.kind {
            ExprKind::Name(id) => {
                if let Some(&s) = params.get(&id.name) {
                    self.occ(id.span, s);
                } else if let Some(v) = self.enum_values.get(&id.name) {
                    self.occ(id.span, v[0]);
                }
            }
            ExprKind::Str(s) => {
                for h in s.holes() {
                    if let Some(&p) = params.get(&h.name) {
                        self.occ(h.span, p);
                    }
                }
            }
            ExprKind::Field(base, field) => self.field_use(base, field, None),
            _ => {}
        });
    }

    /// `base.field`: a qualified enum value, or a record field when the
    /// record is known (or only one record has such a field).
    fn field_use(&mut self, base: &ast::Expr, field: &ast::Ident, base_ty: Option<&str>) {
        if let ExprKind::Name(id) = &base.kind
            && let Some(&t) = self.types.get(&id.name)
            && self.symbols[t].decl != Span::default()
            && !self.fields.contains_key(&id.name)
        {
            self.occ(id.span, t);
            if let Some(vs) = self.enum_values.get(&field.name) {
                let pick = vs.iter().copied().find(|&v| {
                    matches!(&self.symbols[v].kind, SymKind::EnumValue { enum_name } if *enum_name == id.name)
                });
                if let Some(v) = pick {
                    self.occ(field.span, v);
                }
            }
            return;
        }
        if let Some(sym) = self.field_sym(base_ty, &field.name) {
            self.occ(field.span, sym);
        }
    }

    fn field_sym(&self, record: Option<&str>, field: &str) -> Option<SymId> {
        if let Some(r) = record {
            return self.fields.get(r)?.get(field).copied();
        }
        let mut found = self.fields.values().filter_map(|fs| fs.get(field));
        let first = found.next()?;
        found.next().is_none().then_some(*first)
    }

    fn workflow(&mut self, wf: usize, w: &ast::WorkflowDecl) {
        let mut walker = WfWalker {
            ix: self,
            wf,
            pending: Vec::new(),
        };
        if let Some(ls) = &w.lifelines {
            for l in ls {
                walker.lifeline(l);
            }
        }
        for input in &w.inputs {
            walker.ix.type_uses(&input.ty);
            walker.lifeline(&input.lifeline);
            walker.bind(
                &input.lifeline.name,
                &input.name,
                Some(type_text(&input.ty)),
                "a workflow input",
                input.name.span.to(input.lifeline.span),
            );
        }
        walker.block(&w.body);
        let pending = std::mem::take(&mut walker.pending);
        for (lifeline, id, stmt) in pending {
            walker.resolve_read(&lifeline, &id, stmt);
        }
    }

    /// Replaces inferred variable types by the checker's.
    fn adopt_types(&mut self, program: &ir::Program) {
        for (wi, info) in self.workflows.iter().enumerate() {
            let Some(w) = program.workflows.iter().find(|w| w.name == info.name) else {
                continue;
            };
            for var in &w.vars {
                let lifeline = &w.lifeline(var.lifeline).name;
                if let Some(&sym) = info.vars.get(&(lifeline.clone(), var.name.clone())) {
                    debug_assert!(
                        matches!(self.symbols[sym].kind, SymKind::Var { wf, .. } if wf == wi)
                    );
                    self.symbols[sym].ty = Some(program.types.display(&var.ty).to_string());
                }
            }
        }
    }

    /// The occurrence at byte `offset` (an identifier that contains it or
    /// ends at it).
    pub fn at(&self, offset: usize) -> Option<Occ> {
        let offset = u32::try_from(offset).ok()?;
        let i = self.occs.partition_point(|o| o.span.start <= offset);
        self.occs[..i]
            .iter()
            .rev()
            .take(4)
            .find(|o| o.span.start <= offset && offset <= o.span.end)
            .copied()
    }

    /// Every occurrence of `sym`, in order.
    pub fn occurrences(&self, sym: SymId) -> impl Iterator<Item = Span> + '_ {
        self.occs
            .iter()
            .filter(move |o| o.sym == sym)
            .map(|o| o.span)
    }

    /// The workflow whose declaration contains `offset`.
    pub fn workflow_at(&self, offset: usize) -> Option<usize> {
        let offset = u32::try_from(offset).ok()?;
        self.workflows
            .iter()
            .position(|w| w.span.start <= offset && offset <= w.span.end)
    }

    /// The variables of `lifeline` in workflow `wf` first bound before `offset`.
    pub fn vars_before(&self, wf: usize, lifeline: &str, offset: usize) -> Vec<SymId> {
        let mut out: Vec<SymId> = self.workflows[wf]
            .vars
            .iter()
            .filter(|&((l, _), &s)| l == lifeline && (self.symbols[s].def.start as usize) < offset)
            .map(|(_, &s)| s)
            .collect();
        out.sort_by_key(|&s| self.symbols[s].def.start);
        out
    }

    pub fn action_outputs(&self, action: &str) -> Option<&[Option<String>]> {
        self.action_outputs.get(action).map(Vec::as_slice)
    }
}

/// The source form of a type expression (`Text`, `[Ticket]`).
pub fn type_text(t: &TypeExpr) -> String {
    match t {
        TypeExpr::Named(id) => id.name.clone(),
        TypeExpr::List(inner, _) => format!("[{}]", type_text(inner)),
        TypeExpr::Error(_) => "?".into(),
    }
}

/// Visits `e` and its sub-expressions (pre-order) with an explicit stack, so
/// deep expressions cannot overflow the stack.
pub fn walk_expr(e: &ast::Expr, f: &mut dyn FnMut(&ast::Expr)) {
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        f(e);
        match &e.kind {
            ExprKind::Field(b, _) | ExprKind::Unary(_, b) | ExprKind::Paren(b) => stack.push(b),
            ExprKind::Binary(_, a, b) => {
                stack.push(b);
                stack.push(a);
            }
            ExprKind::List(items) => stack.extend(items.iter().rev()),
            _ => {}
        }
    }
}

struct WfWalker<'a> {
    ix: &'a mut Index,
    wf: usize,
    /// Reads to resolve once every binding of the workflow is known.
    pending: Vec<(String, ast::Ident, Span)>,
}

impl WfWalker<'_> {
    fn info(&mut self) -> &mut WfInfo {
        &mut self.ix.workflows[self.wf]
    }

    /// The workflow's lifeline called `name`, if it has one.
    fn lifeline_sym(&self, name: &str) -> Option<SymId> {
        self.ix.workflows[self.wf]
            .lifelines
            .iter()
            .copied()
            .find(|&s| self.ix.symbols[s].name == name)
    }

    fn lifeline(&mut self, id: &ast::Ident) {
        match self.lifeline_sym(&id.name) {
            Some(sym) => self.ix.occ(id.span, sym),
            None => {
                let sym = self
                    .ix
                    .add(SymKind::Lifeline { wf: self.wf }, id, id.span, None);
                self.info().lifelines.push(sym);
                self.info()
                    .participation
                    .entry(id.name.clone())
                    .or_default();
            }
        }
    }

    /// A lifeline named inside a causal form: an occurrence of the
    /// workflow's lifeline, never a new one (the checker reports a name
    /// that is none).
    fn lifeline_use(&mut self, id: &ast::Ident) {
        if let Some(sym) = self.lifeline_sym(&id.name) {
            self.ix.occ(id.span, sym);
        }
    }

    fn part(&mut self, lifeline: &str) -> &mut Participation {
        self.info()
            .participation
            .entry(lifeline.to_owned())
            .or_default()
    }

    fn bind(
        &mut self,
        lifeline: &str,
        id: &ast::Ident,
        ty: Option<String>,
        origin: &str,
        decl: Span,
    ) {
        if id.name == "_" {
            return;
        }
        let key = (lifeline.to_owned(), id.name.clone());
        match self.ix.workflows[self.wf].vars.get(&key) {
            Some(&sym) => {
                self.ix.occ(id.span, sym);
                if self.ix.symbols[sym].ty.is_none() {
                    self.ix.symbols[sym].ty = ty;
                }
            }
            None => {
                let sym = self.ix.add(
                    SymKind::Var {
                        wf: self.wf,
                        lifeline: lifeline.to_owned(),
                    },
                    id,
                    decl,
                    ty,
                );
                self.ix.symbols[sym].origin = Some(origin.to_owned());
                self.info().vars.insert(key, sym);
            }
        }
    }

    fn var_ty(&self, lifeline: &str, name: &str) -> Option<String> {
        let sym = self.ix.workflows[self.wf]
            .vars
            .get(&(lifeline.to_owned(), name.to_owned()))?;
        self.ix.symbols[*sym].ty.clone()
    }

    /// An approximate type of `e` at `lifeline` (the checker's types replace
    /// these when the file checks).
    fn expr_ty(&self, lifeline: &str, e: &ast::Expr) -> Option<String> {
        use ast::BinaryOp as B;
        match &e.kind {
            ExprKind::Bool(_) => Some("Bool".into()),
            ExprKind::Int(_) => Some("Int".into()),
            ExprKind::Float(_) => Some("Float".into()),
            ExprKind::Str(_) => Some("Text".into()),
            ExprKind::Name(id) => self.var_ty(lifeline, &id.name).or_else(|| {
                let v = self.ix.enum_values.get(&id.name)?;
                self.ix.symbols[v[0]].ty.clone()
            }),
            ExprKind::Field(base, field) => {
                if let ExprKind::Name(id) = &base.kind
                    && self.ix.types.contains_key(&id.name)
                    && !self.ix.fields.contains_key(&id.name)
                {
                    return Some(id.name.clone());
                }
                let bt = self.expr_ty(lifeline, base);
                let sym = self.ix.field_sym(bt.as_deref(), &field.name)?;
                self.ix.symbols[sym].ty.clone()
            }
            ExprKind::Unary(ast::UnaryOp::Not, _) => Some("Bool".into()),
            ExprKind::Unary(ast::UnaryOp::Neg, x) | ExprKind::Paren(x) => self.expr_ty(lifeline, x),
            ExprKind::Binary(op, a, b) => match op {
                B::Or | B::And | B::Eq | B::Ne | B::Lt | B::Le | B::Gt | B::Ge => {
                    Some("Bool".into())
                }
                _ => {
                    let (ta, tb) = (self.expr_ty(lifeline, a), self.expr_ty(lifeline, b));
                    if ta.as_deref() == Some("Float") || tb.as_deref() == Some("Float") {
                        Some("Float".into())
                    } else {
                        ta.or(tb)
                    }
                }
            },
            ExprKind::List(items) => {
                let inner = items.first().and_then(|i| self.expr_ty(lifeline, i))?;
                Some(format!("[{inner}]"))
            }
            ExprKind::Cpl(ast::Cpl::Seen(_)) | ExprKind::Error => None,
            ExprKind::Cpl(_) => Some("Bool".into()),
        }
    }

    /// Queues the names `e` reads at `lifeline` and records field uses.
    /// Inside a causal form names belong to the lifeline the form says:
    /// `at(B, φ)` reads φ at B, `seen(B).x` is B's `x`.
    fn reads(&mut self, lifeline: &str, e: &ast::Expr, stmt: Span) {
        let mut names = Vec::new();
        let mut fields = Vec::new();
        let mut causal: Vec<ast::Cpl> = Vec::new();
        let mut seen = Vec::new();
        walk_expr(e, &mut |e| match &e.kind {
            ExprKind::Field(base, field)
                if matches!(base.kind, ExprKind::Cpl(ast::Cpl::Seen(_))) =>
            {
                if let ExprKind::Cpl(ast::Cpl::Seen(b)) = &base.kind {
                    seen.push((b.clone(), field.clone()));
                }
            }
            ExprKind::Cpl(c) => causal.push(c.clone()),
            ExprKind::Name(id) => names.push(id.clone()),
            ExprKind::Str(s) => {
                for part in &s.parts {
                    if let StrPart::Hole(h) = part {
                        names.push(h.clone());
                    }
                }
            }
            ExprKind::Field(base, field) => fields.push(((**base).clone(), field.clone())),
            _ => {}
        });
        for (base, field) in fields {
            let bt = self.expr_ty(lifeline, &base);
            self.ix.field_use(&base, &field, bt.as_deref());
        }
        // (`B` itself is an occurrence of the lifeline: the walk visits
        // the field's base, `seen(B)`, below.)
        for (b, x) in seen {
            self.pending.push((b.name.clone(), x, stmt));
        }
        for c in &causal {
            match c {
                ast::Cpl::At(b, x) => {
                    self.lifeline_use(b);
                    self.reads(&b.name, x, stmt);
                }
                ast::Cpl::Seen(b) | ast::Cpl::On(b) => self.lifeline_use(b),
                ast::Cpl::Prev(_) | ast::Cpl::Since(..) | ast::Cpl::Once(_) => {
                    for x in c.operands() {
                        self.reads(lifeline, x, stmt);
                    }
                }
            }
        }
        for id in names {
            if id.name == "_" {
                continue;
            }
            // A qualified enum's type name is handled by `field_use`.
            if self.ix.types.contains_key(&id.name) && !self.ix.fields.contains_key(&id.name) {
                continue;
            }
            self.pending.push((lifeline.to_owned(), id, stmt));
        }
    }

    fn resolve_read(&mut self, lifeline: &str, id: &ast::Ident, stmt: Span) {
        let key = (lifeline.to_owned(), id.name.clone());
        if let Some(&sym) = self.ix.workflows[self.wf].vars.get(&key) {
            self.ix.occ(id.span, sym);
        } else if let Some(v) = self.ix.enum_values.get(&id.name) {
            let v = v[0];
            self.ix.occ(id.span, v);
        } else {
            self.ix.unresolved.push(Unresolved {
                span: id.span,
                name: id.name.clone(),
                wf: self.wf,
                lifeline: lifeline.to_owned(),
                stmt,
            });
        }
    }

    fn block(&mut self, block: &Block) {
        // Explicit stack of statements: nesting depth never costs stack.
        enum Work<'b> {
            Stmt(&'b ast::Stmt),
        }
        let mut stack: Vec<Work<'_>> = block.stmts.iter().rev().map(Work::Stmt).collect();
        while let Some(Work::Stmt(stmt)) = stack.pop() {
            let span = stmt.span;
            match &stmt.kind {
                StmtKind::Msg {
                    from,
                    send,
                    to,
                    recv,
                } => {
                    self.lifeline(from);
                    self.lifeline(to);
                    self.info().stmts.push((span, Some(from.name.clone())));
                    self.part(&from.name).sends += 1;
                    self.part(&to.name).receives += 1;
                    for (i, e) in send.iter().enumerate() {
                        self.reads(&from.name, e, span);
                        let ty = self.expr_ty(&from.name, e);
                        if let Some(r) = recv.get(i)
                            && let ExprKind::Name(id) = &r.kind
                        {
                            let origin = format!("received from {}", from.name);
                            self.bind(&to.name, id, ty, &origin, span);
                        }
                    }
                    for r in recv.iter().skip(send.len()) {
                        if let ExprKind::Name(id) = &r.kind {
                            let origin = format!("received from {}", from.name);
                            self.bind(&to.name, id, None, &origin, span);
                        }
                    }
                }
                StmtKind::Act { at, targets, rhs } => {
                    self.lifeline(at);
                    self.info().stmts.push((span, Some(at.name.clone())));
                    self.part(&at.name).actions += 1;
                    let (tys, origin): (Vec<Option<String>>, String) = match rhs {
                        ActRhs::Call { name, args } => {
                            if let Some(&s) = self.ix.actions.get(&name.name) {
                                self.ix.occ(name.span, s);
                            }
                            for a in args {
                                self.reads(&at.name, a, span);
                            }
                            (
                                self.ix
                                    .action_outputs(&name.name)
                                    .map(<[_]>::to_vec)
                                    .unwrap_or_default(),
                                format!("an output of `{}`", name.name),
                            )
                        }
                        ActRhs::Expr(e) => {
                            self.reads(&at.name, e, span);
                            (vec![self.expr_ty(&at.name, e)], "computed".into())
                        }
                    };
                    for (i, t) in targets.iter().enumerate() {
                        let ty = tys.get(i).cloned().flatten();
                        self.bind(&at.name, t, ty, &origin, span);
                    }
                }
                StmtKind::If {
                    guard,
                    owner,
                    then,
                    otherwise,
                } => {
                    self.construct(span, "if", guard, owner, &[Some(then), otherwise.as_ref()]);
                    if let Some(o) = otherwise {
                        stack.extend(o.stmts.iter().rev().map(Work::Stmt));
                    }
                    stack.extend(then.stmts.iter().rev().map(Work::Stmt));
                }
                StmtKind::While {
                    guard,
                    owner,
                    body,
                    exit,
                } => {
                    self.construct(span, "while", guard, owner, &[Some(body), exit.as_ref()]);
                    if let Some(x) = exit {
                        stack.extend(x.stmts.iter().rev().map(Work::Stmt));
                    }
                    stack.extend(body.stmts.iter().rev().map(Work::Stmt));
                }
                StmtKind::For {
                    var,
                    list,
                    owner,
                    body,
                } => {
                    let list_expr = ast::Expr {
                        kind: ExprKind::Name(list.clone()),
                        span: list.span,
                    };
                    self.construct(span, "for", &list_expr, owner, &[Some(body)]);
                    let origin = format!("an element of `{}`", list.name);
                    self.bind(&owner.name, var, None, &origin, span);
                    stack.extend(body.stmts.iter().rev().map(Work::Stmt));
                }
                StmtKind::Par { branches } => {
                    for b in branches.iter().rev() {
                        stack.extend(b.stmts.iter().rev().map(Work::Stmt));
                    }
                }
                StmtKind::Coregion { body } => {
                    stack.extend(body.stmts.iter().rev().map(Work::Stmt));
                }
                StmtKind::Call {
                    workflow,
                    map,
                    results,
                    ..
                } => {
                    self.info().stmts.push((span, None));
                    for (_, caller) in map {
                        self.lifeline(caller);
                    }
                    let origin = format!("a result of `call {}`", workflow.name);
                    for it in results {
                        self.lifeline(&it.lifeline);
                        self.bind(&it.lifeline.name, &it.var, None, &origin, span);
                    }
                }
                StmtKind::Return(items) => {
                    self.info().stmts.push((span, None));
                    for it in items {
                        self.lifeline(&it.lifeline);
                        self.pending
                            .push((it.lifeline.name.clone(), it.var.clone(), span));
                    }
                }
                StmtKind::Lifelines(ls) => {
                    for l in ls {
                        self.lifeline(l);
                    }
                }
                StmtKind::Error => {}
            }
        }
    }

    fn construct(
        &mut self,
        span: Span,
        keyword: &'static str,
        guard: &ast::Expr,
        owner: &ast::Ident,
        blocks: &[Option<&Block>],
    ) {
        self.lifeline(owner);
        self.info().stmts.push((span, Some(owner.name.clone())));
        self.reads(&owner.name, guard, span);
        self.part(&owner.name).decides.push((keyword, guard.span));
        let mut r = BTreeSet::new();
        for b in blocks.iter().flatten() {
            lifelines_of(b, &mut r);
        }
        r.remove(&owner.name);
        for l in r {
            self.part(&l)
                .informed_by
                .push((owner.name.clone(), keyword, guard.span));
        }
    }
}

/// The lifelines that take part in `block` (lifelines(P) of LANGUAGE.md §5).
fn lifelines_of(block: &Block, out: &mut BTreeSet<String>) {
    let mut stack: Vec<&Block> = vec![block];
    while let Some(b) = stack.pop() {
        for s in &b.stmts {
            match &s.kind {
                StmtKind::Msg { from, to, .. } => {
                    out.insert(from.name.clone());
                    out.insert(to.name.clone());
                }
                StmtKind::Act { at, .. } => {
                    out.insert(at.name.clone());
                }
                StmtKind::If {
                    owner,
                    then,
                    otherwise,
                    ..
                } => {
                    out.insert(owner.name.clone());
                    stack.push(then);
                    stack.extend(otherwise.iter());
                }
                StmtKind::While {
                    owner, body, exit, ..
                } => {
                    out.insert(owner.name.clone());
                    stack.push(body);
                    stack.extend(exit.iter());
                }
                StmtKind::For { owner, body, .. } => {
                    out.insert(owner.name.clone());
                    stack.push(body);
                }
                StmtKind::Par { branches } => stack.extend(branches.iter()),
                StmtKind::Coregion { body } => stack.push(body),
                StmtKind::Call { map, .. } => {
                    out.extend(map.iter().map(|(_, caller)| caller.name.clone()));
                }
                StmtKind::Return(_) | StmtKind::Lifelines(_) | StmtKind::Error => {}
            }
        }
    }
}

/// Whether `name` is a built-in type.
pub fn is_builtin_type(name: &str) -> bool {
    BUILTIN_TYPES.contains(&name)
}
