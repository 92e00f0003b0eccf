//! Checking workflows: lifelines, the statement walk with its definite-binding
//! analysis (LANGUAGE.md §4 rule 2), payload matching, action calls and
//! `return`, building the IR as it goes.
//!
//! Binding states live in one vector indexed by variable, with an undo log:
//! a branch is walked, its changes collected and undone, and the branches'
//! results merged. That keeps the analysis linear in the size of the workflow
//! (times the nesting depth) instead of cloning the state at every branch.
//!
//! This file holds the binding state and the statement walk; the
//! statements with most to check each have a child module (`msg.rs`,
//! `act.rs`, `for_each.rs`), as do the workflow's lifelines
//! (`lifelines.rs`). They call back into the walk and resolve lifelines
//! through `lifelines.rs`, which needs none of them.

use crate::Checker;
use crate::expr::Scope;
use crate::ir::{self, LifelineId, StmtId, StmtKind, VarId};
use crate::types::Type;
use std::collections::{BTreeMap, HashMap};
use troupe_syntax::ast;
use troupe_syntax::{Code, Diagnostic, Span};

mod act;
mod for_each;
mod lifelines;
mod msg;

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
}
