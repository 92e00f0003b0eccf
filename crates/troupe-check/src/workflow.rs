//! Checking workflows: lifelines, the statement walk with its definite-binding
//! analysis (LANGUAGE.md §4 rule 2), payload matching, action calls and
//! `return`, building the IR as it goes.
//!
//! Binding states live in one vector indexed by variable, with an undo log:
//! a branch is walked, its changes collected and undone, and the branches'
//! results merged. That keeps the analysis linear in the size of the workflow
//! (times the nesting depth) instead of cloning the state at every branch.

use crate::Checker;
use crate::expr::Scope;
use crate::ir::{self, Call, LifelineId, MsgItem, Recv, StmtId, StmtKind, VarId};
use crate::types::Type;
use crate::value::Value;
use std::collections::{BTreeMap, HashMap};
use troupe_syntax::ast::{self, ActRhs, ExprKind as AK};
use troupe_syntax::{Code, Diagnostic, Span};

/// Whether a variable is bound at the current point, on every path.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum BindState {
    Unbound,
    /// Bound on some paths only; the reason explains which.
    Maybe(MaybeReason),
    Bound,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct MaybeReason {
    pub what: Partial,
    /// The guard of the construct that made the binding partial.
    pub span: Span,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Partial {
    IfThen,
    IfElse,
    WhileBody,
    ForBody,
}

impl Partial {
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Partial::IfThen => "on the `if` branch",
            Partial::IfElse => "on the `else` branch",
            Partial::WhileBody => "inside the body of the `while`",
            Partial::ForBody => "inside the body of the `for`",
        }
    }

    pub(crate) fn related(self) -> &'static str {
        match self {
            Partial::IfThen | Partial::IfElse => "the `if` that binds it on one branch only",
            Partial::WhileBody => "the `while` whose body may run zero times",
            Partial::ForBody => "the `for` whose body may run zero times",
        }
    }
}

/// The per-workflow state of the checker.
#[derive(Debug, Default)]
pub(crate) struct WfState {
    pub lifelines: Vec<ir::Lifeline>,
    pub(crate) lifeline_index: HashMap<String, LifelineId>,
    /// Whether a `lifelines` line fixed the set of lifelines.
    declared: bool,
    pub vars: Vec<ir::Var>,
    /// Variable name → (lifeline, variable) for each lifeline that binds it.
    by_name: HashMap<String, Vec<(LifelineId, VarId)>>,
    first_binding: Vec<Span>,
    states: Vec<BindState>,
    log: Vec<(VarId, BindState)>,
    pub next_stmt: u32,
    /// How deep the statement being checked is nested in constructs.
    pub depth: u32,
    /// Lifelines that were reported unknown: reads there report nothing more.
    pub poisoned: Vec<LifelineId>,
    /// The lists of the enclosing `for` loops (and the loops' headers): they
    /// cannot be bound again inside.
    frozen: Vec<(VarId, Span)>,
    pub for_each: Vec<ir::ForEach>,
    pub calls: Vec<ir::CallSite>,
    pub coregions: Vec<ir::Coregion>,
}

impl WfState {
    pub(crate) fn lookup(&self, at: LifelineId, name: &str) -> Option<VarId> {
        self.by_name
            .get(name)?
            .iter()
            .find(|(l, _)| *l == at)
            .map(|(_, v)| *v)
    }

    pub(crate) fn state(&self, var: VarId) -> &BindState {
        &self.states[var.0 as usize]
    }

    pub(crate) fn lifeline_name(&self, id: LifelineId) -> &str {
        &self.lifelines[id.0 as usize].name
    }

    /// The lifelines at which `name` is bound on every path here.
    pub(crate) fn lifelines_binding<'s>(
        &'s self,
        name: &str,
    ) -> impl Iterator<Item = LifelineId> + 's {
        self.by_name
            .get(name)
            .into_iter()
            .flatten()
            .filter(|(_, v)| *self.state(*v) == BindState::Bound)
            .map(|(l, _)| *l)
    }

    /// The names of the variables of lifeline `at`, as one item per variable
    /// of the workflow (`""`, which matches nothing, for the variables of other
    /// lifelines), so that the suggestion budget counts the whole scan.
    pub(crate) fn names_at(&self, at: LifelineId) -> impl Iterator<Item = &str> {
        self.vars.iter().map(move |v| {
            if v.lifeline == at {
                v.name.as_str()
            } else {
                ""
            }
        })
    }

    fn set(&mut self, var: VarId, state: BindState) {
        let old = std::mem::replace(&mut self.states[var.0 as usize], state);
        self.log.push((var, old));
    }

    /// Undoes the changes since `mark`, returning the final state of each
    /// variable they touched.
    fn rollback(&mut self, mark: usize) -> BTreeMap<VarId, BindState> {
        let mut finals = BTreeMap::new();
        while self.log.len() > mark {
            let Some((var, old)) = self.log.pop() else {
                break;
            };
            let current = std::mem::replace(&mut self.states[var.0 as usize], old);
            finals.entry(var).or_insert(current);
        }
        finals
    }
}

impl Checker<'_> {
    pub(crate) fn workflow(&mut self, decl: &ast::WorkflowDecl) -> Option<ir::Workflow> {
        let errors_before = self.error_count;
        self.wf = WfState::default();
        self.declare_lifelines(decl);

        let mut inputs = Vec::with_capacity(decl.inputs.len());
        let mut seen: HashMap<&str, Span> = HashMap::new();
        for input in &decl.inputs {
            if let Some(&prev) = seen.get(input.name.name.as_str()) {
                self.duplicate(&input.name.name, input.name.span, prev, "input");
                continue;
            }
            seen.insert(&input.name.name, input.name.span);
            let ty = self.resolve_type(&input.ty);
            let at = self.lifeline(&input.lifeline);
            inputs.push(self.bind(at, &input.name, ty));
        }

        let mut results = Vec::new();
        self.causal = crate::cpl::Deferral::default();
        let mut body = self.top_block(&decl.body, &mut results);
        self.finish_causal_guards(&mut body);
        if self.error_count > errors_before {
            return None;
        }
        let mut wf = std::mem::take(&mut self.wf);
        wf.for_each.sort_by_key(|f| f.stmt);
        wf.calls.sort_by_key(|c| (c.first, c.depth));
        wf.coregions.sort_by_key(|c| c.stmt);
        Some(ir::Workflow {
            name: decl.name.name.clone(),
            span: decl.name.span,
            lifelines: wf.lifelines,
            vars: wf.vars,
            inputs,
            body,
            results,
            stmt_count: wf.next_stmt,
            imported: self
                .file_starts
                .get(1)
                .is_some_and(|&s| decl.span.start >= s),
            for_each: wf.for_each,
            calls: wf.calls,
            coregions: wf.coregions,
        })
    }

    /// Fixes ⊏: the `lifelines` line, else the order of first appearance.
    fn declare_lifelines(&mut self, decl: &ast::WorkflowDecl) {
        if let Some(list) = &decl.lifelines {
            self.wf.declared = true;
            for id in list {
                if let Some(&prev) = self.wf.lifeline_index.get(&id.name) {
                    let prev_span = self.wf.lifelines[prev.0 as usize].span;
                    self.duplicate(&id.name, id.span, prev_span, "lifeline");
                    continue;
                }
                self.add_lifeline(id);
            }
            return;
        }
        for input in &decl.inputs {
            self.add_lifeline(&input.lifeline);
        }
        let mut stack: Vec<&ast::Stmt> = decl.body.stmts.iter().rev().collect();
        while let Some(stmt) = stack.pop() {
            match &stmt.kind {
                ast::StmtKind::Msg { from, to, .. } => {
                    self.add_lifeline(from);
                    self.add_lifeline(to);
                }
                ast::StmtKind::Act { at, .. } => {
                    self.add_lifeline(at);
                }
                ast::StmtKind::If {
                    owner,
                    then,
                    otherwise,
                    ..
                } => {
                    self.add_lifeline(owner);
                    let rest = otherwise.iter().flat_map(|b| b.stmts.iter());
                    let children: Vec<_> = then.stmts.iter().chain(rest).collect();
                    stack.extend(children.into_iter().rev());
                }
                ast::StmtKind::While {
                    owner, body, exit, ..
                } => {
                    self.add_lifeline(owner);
                    let rest = exit.iter().flat_map(|b| b.stmts.iter());
                    let children: Vec<_> = body.stmts.iter().chain(rest).collect();
                    stack.extend(children.into_iter().rev());
                }
                ast::StmtKind::For { owner, body, .. } => {
                    self.add_lifeline(owner);
                    stack.extend(body.stmts.iter().rev());
                }
                ast::StmtKind::Par { branches } => {
                    stack.extend(branches.iter().rev().flat_map(|b| b.stmts.iter().rev()));
                }
                ast::StmtKind::Coregion { body } => stack.extend(body.stmts.iter().rev()),
                ast::StmtKind::Call { map, results, .. } => {
                    for (_, caller) in map {
                        self.add_lifeline(caller);
                    }
                    for item in results {
                        self.add_lifeline(&item.lifeline);
                    }
                }
                ast::StmtKind::Return(items) => {
                    for item in items {
                        self.add_lifeline(&item.lifeline);
                    }
                }
                ast::StmtKind::Lifelines(_) | ast::StmtKind::Error => {}
            }
        }
    }

    fn add_lifeline(&mut self, id: &ast::Ident) -> LifelineId {
        if let Some(&l) = self.wf.lifeline_index.get(&id.name) {
            return l;
        }
        let l = LifelineId(self.wf.lifelines.len() as u32);
        self.wf.lifelines.push(ir::Lifeline {
            name: id.name.clone(),
            span: id.span,
        });
        self.wf.lifeline_index.insert(id.name.clone(), l);
        l
    }

    pub(crate) fn lifeline(&mut self, id: &ast::Ident) -> LifelineId {
        if let Some(&l) = self.wf.lifeline_index.get(&id.name) {
            return l;
        }
        // Only reachable when a `lifelines` line fixed the set.
        let otherwise = format!("add `{}` to the `lifelines` line", id.name);
        self.unknown_lifeline(id, &otherwise);
        // Add it so that the rest of the workflow checks without repeats.
        let l = self.add_lifeline(id);
        self.wf.poisoned.push(l);
        l
    }

    /// E0407 for `id`, with a "did you mean" hint, else `otherwise` and the
    /// workflow's lifelines.
    pub(crate) fn unknown_lifeline(&mut self, id: &ast::Ident, otherwise: &str) {
        let names: Vec<String> = self.wf.lifelines.iter().map(|l| l.name.clone()).collect();
        let hint = match self.did_you_mean(&id.name, names.iter().map(String::as_str)) {
            Some(s) => format!("did you mean `{s}`?"),
            None => format!(
                "{otherwise} ({})",
                crate::suggest::list_some(names.iter().map(String::as_str))
            ),
        };
        self.error(
            Diagnostic::error(
                Code::UnknownLifeline,
                id.span,
                format!("`{}` is not a lifeline of this workflow", id.name),
            )
            .with_label("unknown lifeline")
            .with_hint(hint),
        );
    }

    /// Binds `name` at `at` with `ty`, checking it agrees with earlier bindings.
    pub(crate) fn bind(&mut self, at: LifelineId, name: &ast::Ident, ty: Type) -> VarId {
        if let Some(var) = self.wf.lookup(at, &name.name) {
            if let Some(&(_, header)) = self.wf.frozen.iter().find(|(v, _)| *v == var) {
                let lifeline = self.wf.lifeline_name(at).to_owned();
                self.error(
                    Diagnostic::error(
                        Code::ForList,
                        name.span,
                        format!(
                            "`{}` at {lifeline} is the list a `for` iterates; it cannot be bound inside the loop",
                            name.name
                        ),
                    )
                    .with_label("bound again here")
                    .with_related(header, "the `for` over it")
                    .with_hint("bind the new list to another name; the loop visits the list as it was when it started"),
                );
            }
            let known = self.wf.vars[var.0 as usize].ty.clone();
            if known != ty && !known.is_error() && !ty.is_error() {
                let first = self.wf.first_binding[var.0 as usize];
                let (k, t) = (
                    self.types.display(&known).to_string(),
                    self.types.display(&ty).to_string(),
                );
                let lifeline = self.wf.lifeline_name(at).to_owned();
                self.error(
                    Diagnostic::error(
                        Code::BindingTypeMismatch,
                        name.span,
                        format!(
                            "`{}` at {lifeline} is bound to {t} here, but to {k} before",
                            name.name
                        ),
                    )
                    .with_label(format!("bound to {t} here"))
                    .with_related(first, format!("first bound here, to {k}"))
                    .with_hint("a variable keeps one type; use another name for the new value"),
                );
            }
            self.wf.set(var, BindState::Bound);
            return var;
        }
        let var = VarId(self.wf.vars.len() as u32);
        self.wf.vars.push(ir::Var {
            name: name.name.clone(),
            lifeline: at,
            ty,
        });
        self.wf.first_binding.push(name.span);
        self.wf.states.push(BindState::Unbound);
        self.wf
            .by_name
            .entry(name.name.clone())
            .or_default()
            .push((at, var));
        self.wf.set(var, BindState::Bound);
        var
    }

    fn top_block(&mut self, block: &ast::Block, results: &mut Vec<VarId>) -> ir::Block {
        let mut stmts = Vec::with_capacity(block.stmts.len());
        let last = block.stmts.len().saturating_sub(1);
        for (i, stmt) in block.stmts.iter().enumerate() {
            if let ast::StmtKind::Return(items) = &stmt.kind {
                if i == last {
                    *results = self.return_items(items);
                } else {
                    self.misplaced_return(stmt.span);
                }
                continue;
            }
            self.stmt(stmt, &mut stmts);
        }
        ir::Block { stmts }
    }

    fn block(&mut self, block: &ast::Block) -> ir::Block {
        self.wf.depth += 1;
        let b = self.block_inner(block);
        self.wf.depth -= 1;
        b
    }

    fn block_inner(&mut self, block: &ast::Block) -> ir::Block {
        let mut stmts = Vec::with_capacity(block.stmts.len());
        for stmt in &block.stmts {
            if let ast::StmtKind::Return(_) = &stmt.kind {
                self.misplaced_return(stmt.span);
                continue;
            }
            self.stmt(stmt, &mut stmts);
        }
        ir::Block { stmts }
    }

    fn misplaced_return(&mut self, span: Span) {
        self.error(
            Diagnostic::error(Code::MisplacedReturn, span, "`return` must be the last statement of the workflow")
                .with_label("not at the end")
                .with_hint("move it to the end of the workflow body; return several results with `return (x @ A, y @ B)`"),
        );
    }

    fn return_items(&mut self, items: &[ast::ReturnItem]) -> Vec<VarId> {
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            let at = self.lifeline(&item.lifeline);
            let lifeline = self.wf.lifeline_name(at).to_owned();
            match self.wf.lookup(at, &item.var.name) {
                Some(var) if *self.wf.state(var) == BindState::Bound => out.push(var),
                found => {
                    let mut d = Diagnostic::error(
                        Code::ReturnUnbound,
                        item.var.span,
                        format!(
                            "`{}` is not bound at {lifeline} on every path to the end",
                            item.var.name
                        ),
                    )
                    .with_label("returned here");
                    let elsewhere: Vec<_> = self
                        .wf
                        .lifelines_binding(&item.var.name)
                        .filter(|&l| l != at)
                        .collect();
                    if let Some(BindState::Maybe(reason)) = found.map(|v| self.wf.state(v).clone())
                    {
                        let line = self.line(reason.span);
                        d = d
                            .with_hint(format!(
                                "`{}` is bound at {lifeline} only {} at line {line}",
                                item.var.name,
                                reason.what.describe()
                            ))
                            .with_related(reason.span, reason.what.related());
                    } else if let Some(&other) = elsewhere.first() {
                        let other = self.wf.lifeline_name(other);
                        d = d.with_hint(format!("`{0}` is bound at {other}; return `{0} @ {other}`, or send it to {lifeline} first", item.var.name));
                    }
                    self.error(d);
                }
            }
        }
        out
    }

    pub(crate) fn next_id(&mut self) -> StmtId {
        let id = StmtId(self.wf.next_stmt);
        self.wf.next_stmt += 1;
        id
    }

    /// Checks one statement and appends its IR to `out` (a `for` becomes two
    /// statements, a `call` the inlined body).
    fn stmt(&mut self, stmt: &ast::Stmt, out: &mut Vec<ir::Stmt>) {
        let kind = match &stmt.kind {
            ast::StmtKind::Msg {
                from,
                send,
                to,
                recv,
            } => {
                let id = self.next_id();
                (id, self.msg(stmt.span, from, send, to, recv))
            }
            ast::StmtKind::Act { at, targets, rhs } => {
                let id = self.next_id();
                (id, self.act(at, targets, rhs))
            }
            ast::StmtKind::If {
                guard,
                owner,
                then,
                otherwise,
            } => {
                let id = self.next_id();
                let owner = self.lifeline(owner);
                let guard = self.guard(guard, owner);
                let mark = self.wf.log.len();
                let then = self.block(then);
                let then_finals = self.wf.rollback(mark);
                let otherwise = otherwise
                    .as_ref()
                    .map(|b| self.block(b))
                    .unwrap_or_default();
                let else_finals = self.wf.rollback(mark);
                self.merge_branches(then_finals, else_finals, guard.span);
                (
                    id,
                    StmtKind::If {
                        owner,
                        guard,
                        then,
                        otherwise,
                    },
                )
            }
            ast::StmtKind::While {
                guard,
                owner,
                body,
                exit,
            } => {
                let id = self.next_id();
                let owner = self.lifeline(owner);
                let guard = self.guard(guard, owner);
                let mark = self.wf.log.len();
                let body = self.block(body);
                self.after_loop(mark, Partial::WhileBody, guard.span);
                let exit = exit.as_ref().map(|b| self.block(b)).unwrap_or_default();
                (
                    id,
                    StmtKind::While {
                        owner,
                        guard,
                        body,
                        exit,
                    },
                )
            }
            ast::StmtKind::For {
                var,
                list,
                owner,
                body,
            } => {
                self.for_each(stmt.span, var, list, owner, body, out);
                return;
            }
            ast::StmtKind::Call { .. } => {
                self.call(stmt, out);
                return;
            }
            ast::StmtKind::Par { branches } => {
                let id = self.next_id();
                let branches: Vec<ir::Block> = branches.iter().map(|b| self.block(b)).collect();
                self.par_conflicts(&branches);
                (id, StmtKind::Par { branches })
            }
            ast::StmtKind::Coregion { body } => {
                let id = self.next_id();
                match self.coregion(id, stmt.span, body) {
                    Some(kind) => (id, kind),
                    None => return,
                }
            }
            ast::StmtKind::Lifelines(_) => {
                self.error(
                    Diagnostic::error(
                        Code::UnexpectedToken,
                        stmt.span,
                        "the `lifelines` line must come first in a workflow body",
                    )
                    .with_hint("move it to the top of the workflow body"),
                );
                return;
            }
            ast::StmtKind::Return(_) | ast::StmtKind::Error => return,
        };
        out.push(ir::Stmt {
            id: kind.0,
            span: stmt.span,
            kind: kind.1,
        });
    }

    /// After a loop body checked from `mark`: what it bound is bound only
    /// maybe (the body may run zero times).
    fn after_loop(&mut self, mark: usize, what: Partial, span: Span) {
        let finals = self.wf.rollback(mark);
        let mut changed: Vec<_> = finals.into_iter().collect();
        changed.sort_by_key(|(v, _)| *v);
        for (var, state) in changed {
            if *self.wf.state(var) != BindState::Bound {
                let state = match state {
                    BindState::Bound => BindState::Maybe(MaybeReason { what, span }),
                    other => other,
                };
                self.wf.set(var, state);
            }
        }
    }

    /// A variable no source can name (the index of a `for`, the variables of
    /// an inlined callee), bound from the start as far as the analysis goes:
    /// the desugaring binds it before every read.
    pub(crate) fn hidden_var(
        &mut self,
        at: LifelineId,
        name: String,
        ty: Type,
        span: Span,
    ) -> VarId {
        let var = VarId(self.wf.vars.len() as u32);
        self.wf.vars.push(ir::Var {
            name,
            lifeline: at,
            ty,
        });
        self.wf.first_binding.push(span);
        self.wf.states.push(BindState::Bound);
        var
    }

    /// `for var in list @ owner { body }`: see [`ir::ForEach`].
    fn for_each(
        &mut self,
        span: Span,
        var: &ast::Ident,
        list: &ast::Ident,
        owner: &ast::Ident,
        body: &ast::Block,
        out: &mut Vec<ir::Stmt>,
    ) {
        let owner_id = self.lifeline(owner);
        let header = var.span.to(owner.span);
        let list_expr = self.expr(
            &ast::Expr {
                kind: AK::Name(list.clone()),
                span: list.span,
            },
            &Scope::At(owner_id),
            None,
        );
        let elem = match (&list_expr.kind, &list_expr.ty) {
            (_, Type::Error) => None,
            (ir::ExprKind::Var(v), Type::List(t)) => Some((*v, (**t).clone())),
            (_, ty) => {
                let found = self.types.display(ty).to_string();
                let what = if matches!(list_expr.kind, ir::ExprKind::Var(_)) {
                    format!("`{}` is {found}, not a list", list.name)
                } else {
                    format!("`{}` is not a variable of {}", list.name, owner.name)
                };
                self.error(
                    Diagnostic::error(
                        Code::ForList,
                        list.span,
                        format!("a `for` iterates a list: {what}"),
                    )
                    .with_label("not a list variable")
                    .with_hint(format!(
                        "`for x in xs @ {}` iterates a variable `xs: [T]` bound at {}",
                        owner.name, owner.name
                    )),
                );
                None
            }
        };
        let frozen = elem.is_some();
        let (list_var, elem_ty) = elem.unwrap_or((VarId(u32::MAX), Type::Error));
        let init = self.next_id();
        let index = self.hidden_var(owner_id, format!("#{}", var.name), Type::Int, var.span);
        let id = self.next_id();
        let steps = [self.next_id(), self.next_id()];
        let int = |kind: ir::ExprKind| ir::Expr {
            kind,
            ty: Type::Int,
            span: header,
        };
        let index_expr = || int(ir::ExprKind::Var(index));
        let list_ir = ir::Expr {
            kind: ir::ExprKind::Var(list_var),
            ty: Type::List(Box::new(elem_ty.clone())),
            span: list.span,
        };
        let guard = ir::Expr {
            kind: ir::ExprKind::Binary(
                ir::BinaryOp::Lt,
                Box::new(index_expr()),
                Box::new(int(ir::ExprKind::Len(Box::new(list_ir.clone())))),
            ),
            ty: Type::Bool,
            span: header,
        };
        let mark = self.wf.log.len();
        if frozen {
            self.wf.frozen.push((list_var, header));
        }
        let var_id = self.bind(owner_id, var, elem_ty.clone());
        let step_var = ir::Stmt {
            id: steps[0],
            span: header,
            kind: StmtKind::Act {
                at: owner_id,
                outputs: vec![Some(var_id)],
                call: Call::Expr(ir::Expr {
                    kind: ir::ExprKind::Index(Box::new(list_ir), Box::new(index_expr())),
                    ty: elem_ty,
                    span: header,
                }),
            },
        };
        let step_index = ir::Stmt {
            id: steps[1],
            span: header,
            kind: StmtKind::Act {
                at: owner_id,
                outputs: vec![Some(index)],
                call: Call::Expr(int(ir::ExprKind::Binary(
                    ir::BinaryOp::Add,
                    Box::new(index_expr()),
                    Box::new(int(ir::ExprKind::Lit(Value::Int(1)))),
                ))),
            },
        };
        let checked = self.block(body);
        if frozen {
            self.wf.frozen.pop();
        }
        self.after_loop(mark, Partial::ForBody, header);
        let mut stmts = Vec::with_capacity(checked.stmts.len() + 2);
        stmts.push(step_var);
        stmts.push(step_index);
        stmts.extend(checked.stmts);
        out.push(ir::Stmt {
            id: init,
            span: header,
            kind: StmtKind::Act {
                at: owner_id,
                outputs: vec![Some(index)],
                call: Call::Expr(int(ir::ExprKind::Lit(Value::Int(0)))),
            },
        });
        out.push(ir::Stmt {
            id,
            span,
            kind: StmtKind::While {
                owner: owner_id,
                guard,
                body: ir::Block { stmts },
                exit: ir::Block::default(),
            },
        });
        self.wf.for_each.push(ir::ForEach {
            stmt: id,
            init,
            steps,
            owner: owner_id,
            var: var_id,
            list: list_var,
            index,
            span: header,
        });
    }

    fn merge_branches(
        &mut self,
        then: BTreeMap<VarId, BindState>,
        otherwise: BTreeMap<VarId, BindState>,
        guard: Span,
    ) {
        let mut vars: Vec<VarId> = then.keys().chain(otherwise.keys()).copied().collect();
        vars.sort();
        vars.dedup();
        for var in vars {
            let current = self.wf.state(var).clone();
            let t = then.get(&var).unwrap_or(&current);
            let e = otherwise.get(&var).unwrap_or(&current);
            let merged = match (t, e) {
                (BindState::Bound, BindState::Bound) => BindState::Bound,
                (BindState::Maybe(r), _) | (_, BindState::Maybe(r)) => BindState::Maybe(*r),
                (BindState::Bound, _) => BindState::Maybe(MaybeReason {
                    what: Partial::IfThen,
                    span: guard,
                }),
                (_, BindState::Bound) => BindState::Maybe(MaybeReason {
                    what: Partial::IfElse,
                    span: guard,
                }),
                _ => BindState::Unbound,
            };
            if merged != current {
                self.wf.set(var, merged);
            }
        }
    }

    fn guard(&mut self, guard: &ast::Expr, owner: LifelineId) -> ir::Expr {
        if crate::cpl::is_causal(guard) {
            return self.causal_guard(guard, owner);
        }
        let g = self.expr(guard, &Scope::At(owner), Some(&Type::Bool));
        if !matches!(g.ty, Type::Bool | Type::Error) {
            let found = self.types.display(&g.ty).to_string();
            self.error(
                Diagnostic::error(
                    Code::GuardNotBool,
                    g.span,
                    format!("a condition must be a Bool, not {found}"),
                )
                .with_label(format!("this is {found}"))
                .with_hint("compare it: e.g. `x > 0`, `v == approve`"),
            );
        }
        g
    }

    pub(crate) fn msg(
        &mut self,
        span: Span,
        from: &ast::Ident,
        send: &[ast::Expr],
        to: &ast::Ident,
        recv: &[ast::Expr],
    ) -> StmtKind {
        let from_id = self.lifeline(from);
        let to_id = self.lifeline(to);
        if from_id == to_id {
            self.error(
                Diagnostic::error(
                    Code::SelfMessage,
                    span,
                    format!("`{}` sends a message to itself", from.name),
                )
                .with_hint(format!(
                    "compute locally instead: `act {}: y = x`",
                    from.name
                )),
            );
        }
        if send.len() != recv.len() {
            let recv_span = recv.first().map_or(to.span, |f| {
                f.span.to(recv.last().map_or(f.span, |l| l.span))
            });
            let send_span = send.first().map_or(from.span, |f| {
                f.span.to(send.last().map_or(f.span, |l| l.span))
            });
            self.error(
                Diagnostic::error(
                    Code::PayloadArity,
                    recv_span,
                    format!(
                        "{} sends {} item(s) but {} receives {}",
                        from.name,
                        send.len(),
                        to.name,
                        recv.len()
                    ),
                )
                .with_label(format!("{} item(s) here", recv.len()))
                .with_related(send_span, format!("{} item(s) sent", send.len()))
                .with_hint("sender and receiver list the same number of items"),
            );
        }
        let sent: Vec<ir::Expr> = send
            .iter()
            .map(|e| self.expr(e, &Scope::At(from_id), None))
            .collect();
        let mut items = Vec::with_capacity(sent.len());
        for (i, send_expr) in sent.into_iter().enumerate() {
            let recv = match recv.get(i) {
                Some(r) => self.recv_item(r, &send_expr, to_id),
                None => Recv::Discard,
            };
            items.push(MsgItem {
                send: send_expr,
                recv,
            });
        }
        StmtKind::Msg {
            from: from_id,
            to: to_id,
            items,
        }
    }

    fn recv_item(&mut self, r: &ast::Expr, sent: &ir::Expr, to: LifelineId) -> Recv {
        match &r.kind {
            AK::Name(id) if id.name == "_" => Recv::Discard,
            AK::Name(id) => Recv::Bind(self.bind(to, id, sent.ty.clone())),
            kind => {
                let value = match kind {
                    AK::Bool(b) => Some(Value::Bool(*b)),
                    AK::Int(n) => Some(Value::Int(*n)),
                    AK::Float(x) => Some(Value::Float(*x)),
                    AK::Str(s) => s.as_plain().map(Value::text),
                    _ => None,
                };
                let sent_value = match &sent.kind {
                    ir::ExprKind::Lit(v) => Some(v),
                    _ => None,
                };
                match (value, sent_value) {
                    (Some(v), Some(s)) if v == *s => Recv::Literal(v),
                    (value, sent_value) => {
                        let receiver_text = &self.source[r.span.range()];
                        let (msg, hint) = match (value, sent_value) {
                            (None, _) => ("a receiver item is a name to bind or a plain literal".to_owned(), "remove the placeholders".to_owned()),
                            (Some(_), None) => (
                                format!("the receiver expects the literal {receiver_text}, but the sender sends a variable"),
                                "send the same literal, or bind a variable on the receiver side".to_owned(),
                            ),
                            (Some(_), Some(_)) => (
                                format!("the receiver expects {receiver_text}, but the sender sends {}", &self.source[sent.span.range()]),
                                "a receiver literal must equal the sender's literal at the same position".to_owned(),
                            ),
                        };
                        self.error(
                            Diagnostic::error(Code::PayloadLiteralMismatch, r.span, msg)
                                .with_related(sent.span, "sent here")
                                .with_hint(hint),
                        );
                        Recv::Discard
                    }
                }
            }
        }
    }

    /// The built-in `sleep(duration: Text)`, declared on its first use.
    fn sleep_action(&mut self) -> ir::ActionId {
        let id = ir::ActionId(self.actions.len() as u32);
        self.action_names.insert(ir::SLEEP.to_owned(), id);
        self.actions.push(ir::Action {
            name: ir::SLEEP.to_owned(),
            params: vec![ir::Param {
                name: "duration".into(),
                ty: Type::Text,
            }],
            outputs: Vec::new(),
            kind: ir::ActionKind::Sleep,
            span: Span::new(0, 0),
        });
        id
    }

    /// A literal duration of `sleep` is checked here; one computed at run
    /// time is checked when the step runs.
    fn sleep_literal(&mut self, args: &[ir::Expr]) {
        let Some(ir::Expr {
            kind: ir::ExprKind::Lit(Value::Text(text)),
            span,
            ..
        }) = args.first()
        else {
            return;
        };
        if humantime::parse_duration(text.trim()).is_err() {
            self.error(
                Diagnostic::error(
                    Code::TypeMismatch,
                    *span,
                    format!("`sleep` waits for a duration, and {text:?} is not one"),
                )
                .with_label("not a duration")
                .with_hint("write it as \"30s\", \"10m\", \"4h\" or \"2days\""),
            );
        }
    }

    fn act(&mut self, at: &ast::Ident, targets: &[ast::Ident], rhs: &ActRhs) -> StmtKind {
        let at_id = self.lifeline(at);
        let scope = Scope::At(at_id);
        let (call, output_types) = match rhs {
            ActRhs::Call { name, args } => match self
                .action_names
                .get(&name.name)
                .copied()
                .or_else(|| (name.name == ir::SLEEP).then(|| self.sleep_action()))
            {
                Some(action_id) => {
                    let action = &self.actions[action_id.0 as usize];
                    let params: Vec<_> = action.params.iter().map(|p| p.ty.clone()).collect();
                    let outputs: Vec<_> = action.outputs.iter().map(|p| p.ty.clone()).collect();
                    let action_span = action.span;
                    let required = match &action.kind {
                        ir::ActionKind::Tool(t) => {
                            t.defaults.iter().take_while(|d| d.is_none()).count().max(
                                t.defaults
                                    .iter()
                                    .rposition(Option::is_none)
                                    .map_or(0, |i| i + 1),
                            )
                        }
                        _ => params.len(),
                    };
                    if args.len() < required || args.len() > params.len() {
                        let sig = self.signature(action_id);
                        let builtin = matches!(
                            self.actions[action_id.0 as usize].kind,
                            ir::ActionKind::Sleep
                        );
                        let d = Diagnostic::error(
                            Code::ArgumentCount,
                            name.span,
                            format!(
                                "`{}` takes {} argument(s) but {} were given",
                                name.name,
                                if required == params.len() {
                                    params.len().to_string()
                                } else {
                                    format!("{required} to {}", params.len())
                                },
                                args.len()
                            ),
                        );
                        self.error(if builtin {
                            d.with_hint("`sleep` takes one duration: `act A: sleep(\"10m\")`")
                        } else {
                            d.with_related(action_span, format!("declared as `{sig}`"))
                        });
                    }
                    let mut checked = Vec::with_capacity(args.len());
                    for (i, arg) in args.iter().enumerate() {
                        let expected = params.get(i);
                        let e = self.expr(arg, &scope, expected);
                        if let Some(t) = expected {
                            let pname = format!(
                                "parameter `{}`",
                                self.actions[action_id.0 as usize].params[i].name
                            );
                            self.expect_type(&e, t, &pname);
                        }
                        checked.push(e);
                    }
                    if matches!(
                        self.actions[action_id.0 as usize].kind,
                        ir::ActionKind::Sleep
                    ) {
                        self.sleep_literal(&checked);
                    }
                    (
                        Call::Action {
                            action: action_id,
                            args: checked,
                        },
                        Some(outputs),
                    )
                }
                None if ast::Cpl::NAMES.contains(&name.name.as_str()) => {
                    // `act B: z = at(A, …)`: a causal form, not an action.
                    self.outside_guard(&name.name, name.span);
                    (
                        Call::Expr(ir::Expr {
                            kind: ir::ExprKind::Lit(Value::Bool(false)),
                            ty: Type::Error,
                            span: name.span,
                        }),
                        None,
                    )
                }
                None => {
                    let hint = match self
                        .did_you_mean(&name.name, crate::suggest::sorted_keys(&self.action_names))
                    {
                        Some(s) => format!("did you mean `{s}`?"),
                        None => "declare it with `llm`, `pure`, `effect` or `human`".to_owned(),
                    };
                    self.error(
                        Diagnostic::error(
                            Code::UnknownAction,
                            name.span,
                            format!("no action named `{}`", name.name),
                        )
                        .with_label("unknown action")
                        .with_hint(hint),
                    );
                    for arg in args {
                        self.expr(arg, &scope, None);
                    }
                    (
                        Call::Expr(ir::Expr {
                            kind: ir::ExprKind::Lit(Value::Bool(false)),
                            ty: Type::Error,
                            span: name.span,
                        }),
                        None,
                    )
                }
            },
            ActRhs::Expr(e) => {
                let expected = match targets {
                    [one] => self
                        .wf
                        .lookup(at_id, &one.name)
                        .map(|v| self.wf.vars[v.0 as usize].ty.clone()),
                    _ => None,
                };
                let e = self.expr(e, &scope, expected.as_ref());
                let ty = e.ty.clone();
                if targets.len() != 1 {
                    self.error(
                        Diagnostic::error(
                            Code::OutputCount,
                            e.span,
                            format!(
                                "an expression yields one value, but {} names are bound",
                                targets.len()
                            ),
                        )
                        .with_hint("bind one name: `act A: y = expr`"),
                    );
                }
                (Call::Expr(e), Some(vec![ty]))
            }
        };
        let mut outputs = Vec::with_capacity(targets.len());
        if let Some(types) = output_types {
            if let (ActRhs::Call { name, .. }, true) = (rhs, types.len() != targets.len()) {
                let hint = if targets.is_empty() {
                    format!(
                        "bind its outputs: `act {}: {} = {}(…)` (use `_` to drop one)",
                        at.name,
                        vec!["_"; types.len()].join(", "),
                        name.name
                    )
                } else {
                    format!(
                        "`{}` has {} output(s); list one name per output (use `_` to drop one)",
                        name.name,
                        types.len()
                    )
                };
                self.error(
                    Diagnostic::error(
                        Code::OutputCount,
                        name.span,
                        format!(
                            "`{}` yields {} output(s) but {} name(s) are bound",
                            name.name,
                            types.len(),
                            targets.len()
                        ),
                    )
                    .with_hint(hint),
                );
            }
            for (i, target) in targets.iter().enumerate() {
                if target.name == "_" {
                    outputs.push(None);
                    continue;
                }
                let ty = types.get(i).cloned().unwrap_or(Type::Error);
                outputs.push(Some(self.bind(at_id, target, ty)));
            }
        }
        StmtKind::Act {
            at: at_id,
            outputs,
            call,
        }
    }

    fn signature(&self, id: ir::ActionId) -> String {
        let a = &self.actions[id.0 as usize];
        let params: Vec<_> = a
            .params
            .iter()
            .map(|p| format!("{}: {}", p.name, self.types.display(&p.ty)))
            .collect();
        let outputs: Vec<_> = a
            .outputs
            .iter()
            .map(|p| format!("{}: {}", p.name, self.types.display(&p.ty)))
            .collect();
        format!(
            "{} {}({}) -> ({})",
            a.kind.label(),
            a.name,
            params.join(", "),
            outputs.join(", ")
        )
    }
}
