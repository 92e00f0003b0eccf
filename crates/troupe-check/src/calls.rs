//! `call w[L = A, …](args) -> (y @ A, …)`: checking a call against the
//! callee's signature and inlining the callee's checked IR (LANGUAGE.md §6:
//! the semantics of a call is the inlined body).
//!
//! Workflows are checked callees first ([`order`]): the call graph is read
//! from the syntax, a call that closes a cycle is reported (E0705, with the
//! chain) and not inlined. A call is checked against the callee's IR: every
//! callee lifeline mapped once, distinct lifelines to distinct lifelines,
//! names of the callee's lifelines only (E0704); one argument per input, of
//! the input's type, evaluated at the lifeline its input is renamed to
//! (E0402, E0403); one result per returned variable, named at the lifeline
//! the callee returns it at (E0404, E0704). The inlined statements are the
//! callee's, renumbered in pre-order after one `act` per input and followed
//! by one `act` per result, with fresh variables (`callee.name`) that no
//! source can name; the call site is recorded in [`ir::CallSite`]. Inlining
//! keeps the downstream bounds: the nesting at the call plus the callee's
//! nesting stays within [`troupe_syntax::MAX_DEPTH`], and a workflow grows to
//! at most [`MAX_INLINED`] statements (E0705 otherwise).

use crate::Checker;
use crate::expr::Scope;
use crate::ir::{self, Call, LifelineId, MsgItem, Recv, StmtId, StmtKind, VarId};
use crate::types::Type;
use std::collections::{HashMap, HashSet};
use troupe_syntax::ast;
use troupe_syntax::{Code, Diagnostic, Span};

/// The most statements a workflow may have once its calls are inlined.
pub const MAX_INLINED: u32 = 2_000_000;

/// The calls of a workflow body: (callee name, the call statement's span).
fn calls_in(block: &ast::Block) -> Vec<(&ast::Ident, Span)> {
    let mut out = Vec::new();
    let mut stack: Vec<&ast::Stmt> = block.stmts.iter().rev().collect();
    while let Some(s) = stack.pop() {
        match &s.kind {
            ast::StmtKind::Call { workflow, .. } => out.push((workflow, s.span)),
            ast::StmtKind::If {
                then, otherwise, ..
            } => {
                stack.extend(otherwise.iter().flat_map(|b| b.stmts.iter()).rev());
                stack.extend(then.stmts.iter().rev());
            }
            ast::StmtKind::While { body, exit, .. } => {
                stack.extend(exit.iter().flat_map(|b| b.stmts.iter()).rev());
                stack.extend(body.stmts.iter().rev());
            }
            ast::StmtKind::For { body, .. } | ast::StmtKind::Coregion { body } => {
                stack.extend(body.stmts.iter().rev());
            }
            ast::StmtKind::Par { branches } => {
                stack.extend(branches.iter().rev().flat_map(|b| b.stmts.iter().rev()));
            }
            _ => {}
        }
    }
    out
}

/// The order to check `decls` in (callees before callers), and the calls
/// that close a cycle, each reported once.
pub(crate) fn order(
    decls: &[&ast::WorkflowDecl],
    diagnostics: &mut Vec<Diagnostic>,
) -> (Vec<usize>, HashSet<Span>) {
    let index: HashMap<&str, usize> = decls
        .iter()
        .enumerate()
        .map(|(i, d)| (d.name.name.as_str(), i))
        .collect();
    let edges: Vec<Vec<(usize, Span)>> = decls
        .iter()
        .map(|d| {
            calls_in(&d.body)
                .into_iter()
                .filter_map(|(callee, span)| index.get(callee.name.as_str()).map(|&j| (j, span)))
                .collect()
        })
        .collect();
    let mut state = vec![0u8; decls.len()];
    let mut order = Vec::with_capacity(decls.len());
    let mut cyclic = HashSet::new();
    for root in 0..decls.len() {
        if state[root] != 0 {
            continue;
        }
        let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
        state[root] = 1;
        while let Some(top) = stack.last_mut() {
            let (node, next) = *top;
            let Some(&(callee, span)) = edges[node].get(next) else {
                state[node] = 2;
                order.push(node);
                stack.pop();
                continue;
            };
            top.1 += 1;
            match state[callee] {
                0 => {
                    state[callee] = 1;
                    stack.push((callee, 0));
                }
                1 => {
                    let from = stack.iter().position(|(n, _)| *n == callee).unwrap_or(0);
                    let mut chain: Vec<&str> = stack[from..]
                        .iter()
                        .map(|(n, _)| decls[*n].name.name.as_str())
                        .collect();
                    chain.push(decls[callee].name.name.as_str());
                    cyclic.insert(span);
                    diagnostics.push(
                        Diagnostic::error(
                            Code::CallNotInlinable,
                            span,
                            format!("recursive call: {}", chain.join(" → ")),
                        )
                        .with_label("this call closes the cycle")
                        .with_related(decls[callee].name.span, "the workflow called again")
                        .with_hint(
                            "a call is inlined, so workflows cannot call themselves; \
                             write the repetition as a `while` or `for`",
                        ),
                    );
                }
                _ => {}
            }
        }
    }
    (order, cyclic)
}

/// The deepest nesting of constructs in a block (0 for straight-line code).
fn depth_of(block: &ir::Block) -> u32 {
    let mut max = 0;
    let mut stack: Vec<(&ir::Block, u32)> = vec![(block, 0)];
    while let Some((b, d)) = stack.pop() {
        max = max.max(d);
        for s in &b.stmts {
            match &s.kind {
                StmtKind::If {
                    then, otherwise, ..
                } => stack.extend([(then, d + 1), (otherwise, d + 1)]),
                StmtKind::While { body, exit, .. } => {
                    stack.extend([(body, d + 1), (exit, d + 1)]);
                }
                StmtKind::Par { branches } => stack.extend(branches.iter().map(|b| (b, d + 1))),
                StmtKind::Msg { .. } | StmtKind::Act { .. } => {}
            }
        }
    }
    max
}

/// How callee ids become caller ids.
struct Remap<'a> {
    stmt_base: u32,
    var_base: u32,
    lifelines: &'a [LifelineId],
}

impl Remap<'_> {
    fn stmt(&self, s: StmtId) -> StmtId {
        StmtId(s.0 + self.stmt_base)
    }
    fn var(&self, v: VarId) -> VarId {
        VarId(v.0 + self.var_base)
    }
    fn lifeline(&self, l: LifelineId) -> LifelineId {
        self.lifelines
            .get(l.0 as usize)
            .copied()
            .unwrap_or(LifelineId(0))
    }

    fn block(&self, b: &ir::Block) -> ir::Block {
        ir::Block {
            stmts: b.stmts.iter().map(|s| self.stmt_of(s)).collect(),
        }
    }

    fn stmt_of(&self, s: &ir::Stmt) -> ir::Stmt {
        let kind = match &s.kind {
            StmtKind::Msg { from, to, items } => StmtKind::Msg {
                from: self.lifeline(*from),
                to: self.lifeline(*to),
                items: items
                    .iter()
                    .map(|i| MsgItem {
                        send: self.expr(&i.send),
                        recv: match &i.recv {
                            Recv::Bind(v) => Recv::Bind(self.var(*v)),
                            other => other.clone(),
                        },
                    })
                    .collect(),
            },
            StmtKind::Act { at, outputs, call } => StmtKind::Act {
                at: self.lifeline(*at),
                outputs: outputs.iter().map(|o| o.map(|v| self.var(v))).collect(),
                call: match call {
                    Call::Action { action, args } => Call::Action {
                        action: *action,
                        args: args.iter().map(|a| self.expr(a)).collect(),
                    },
                    Call::Expr(e) => Call::Expr(self.expr(e)),
                },
            },
            StmtKind::If {
                owner,
                guard,
                then,
                otherwise,
            } => StmtKind::If {
                owner: self.lifeline(*owner),
                guard: self.expr(guard),
                then: self.block(then),
                otherwise: self.block(otherwise),
            },
            StmtKind::While {
                owner,
                guard,
                body,
                exit,
            } => StmtKind::While {
                owner: self.lifeline(*owner),
                guard: self.expr(guard),
                body: self.block(body),
                exit: self.block(exit),
            },
            StmtKind::Par { branches } => StmtKind::Par {
                branches: branches.iter().map(|b| self.block(b)).collect(),
            },
        };
        ir::Stmt {
            id: self.stmt(s.id),
            span: s.span,
            kind,
        }
    }

    /// Expressions are at most `MAX_EXPR_DEPTH` deep (the parser's bound).
    fn expr(&self, e: &ir::Expr) -> ir::Expr {
        use ir::ExprKind as K;
        let b = |x: &ir::Expr| Box::new(self.expr(x));
        let kind = match &e.kind {
            K::Lit(v) => K::Lit(v.clone()),
            K::Var(v) => K::Var(self.var(*v)),
            K::Field(x, i) => K::Field(b(x), *i),
            K::JsonField(x, n) => K::JsonField(b(x), n.clone()),
            K::Unary(op, x) => K::Unary(*op, b(x)),
            K::Binary(op, l, r) => K::Binary(*op, b(l), b(r)),
            K::List(items) => K::List(items.iter().map(|i| self.expr(i)).collect()),
            K::Format(parts) => K::Format(
                parts
                    .iter()
                    .map(|p| match p {
                        ir::FormatPart::Text(t) => ir::FormatPart::Text(t.clone()),
                        ir::FormatPart::Expr(x) => ir::FormatPart::Expr(self.expr(x)),
                    })
                    .collect(),
            ),
            K::Len(x) => K::Len(b(x)),
            K::Index(l, i) => K::Index(b(l), b(i)),
            K::Seen(l, v) => K::Seen(self.lifeline(*l), self.var(*v)),
            K::Cpl(f) => K::Cpl(Box::new(self.formula(f))),
        };
        ir::Expr {
            kind,
            ty: e.ty.clone(),
            span: e.span,
        }
    }

    /// A causal guard, with the callee's lifelines and variables renamed.
    fn formula(&self, f: &ir::Formula) -> ir::Formula {
        use ir::Formula as F;
        let b = |x: &F| Box::new(self.formula(x));
        match f {
            F::Atom(e) => F::Atom(self.expr(e)),
            F::On(l) => F::On(self.lifeline(*l)),
            F::Not(x) => F::Not(b(x)),
            F::And(x, y) => F::And(b(x), b(y)),
            F::Or(x, y) => F::Or(b(x), b(y)),
            F::Prev(x) => F::Prev(b(x)),
            F::Since(x, y) => F::Since(b(x), b(y)),
            F::Once(x) => F::Once(b(x)),
            F::At(l, x) => F::At(self.lifeline(*l), b(x)),
        }
    }
}

impl Checker<'_> {
    /// The names of the workflows, in order (for suggestions).
    fn workflow_names(&self) -> Vec<String> {
        self.callees.keys().cloned().collect()
    }

    /// `call w[L = A, …](args) -> (y @ A, …)`: see the module docs.
    pub(crate) fn call(&mut self, stmt: &ast::Stmt, out: &mut Vec<ir::Stmt>) {
        let ast::StmtKind::Call {
            workflow,
            map,
            args,
            results,
        } = &stmt.kind
        else {
            return;
        };
        let callers: Vec<LifelineId> = map.iter().map(|(_, a)| self.lifeline(a)).collect();
        let result_at: Vec<LifelineId> =
            results.iter().map(|r| self.lifeline(&r.lifeline)).collect();
        let callee = if self.cyclic.contains(&stmt.span) {
            None
        } else {
            match self.callees.get(&workflow.name) {
                Some(found) => found.clone(),
                None => {
                    let hint = match self.did_you_mean(&workflow.name, self.workflow_names()) {
                        Some(s) => format!("did you mean `{s}`?"),
                        None => {
                            "declare it with `workflow`, here or in an imported file".to_owned()
                        }
                    };
                    self.error(
                        Diagnostic::error(
                            Code::UnknownWorkflow,
                            workflow.span,
                            format!("no workflow named `{}`", workflow.name),
                        )
                        .with_label("unknown workflow")
                        .with_hint(hint),
                    );
                    None
                }
            }
        };
        let Some(callee) = callee else {
            // Still bind the results, so that their reads report nothing more.
            for (r, &at) in results.iter().zip(&result_at) {
                if r.var.name != "_" {
                    self.bind(at, &r.var, Type::Error);
                }
            }
            return;
        };
        let errors_before = self.error_count;
        let callee_span = callee.span;
        let name = &workflow.name;

        // The lifeline map.
        let mut to: Vec<Option<LifelineId>> = vec![None; callee.lifelines.len()];
        let mut mapped_at: Vec<Option<Span>> = vec![None; callee.lifelines.len()];
        for ((l, a), &aid) in map.iter().zip(&callers) {
            let Some(i) = callee.lifelines.iter().position(|x| x.name == l.name) else {
                let names: Vec<&str> = callee.lifelines.iter().map(|x| x.name.as_str()).collect();
                let hint = match self.did_you_mean(&l.name, names.iter()) {
                    Some(s) => format!("did you mean `{s}`?"),
                    None => format!("the lifelines of `{name}` are {}", names.join(", ")),
                };
                self.error(
                    Diagnostic::error(
                        Code::CallLifelines,
                        l.span,
                        format!("`{}` is not a lifeline of `{name}`", l.name),
                    )
                    .with_label("not a lifeline of the callee")
                    .with_related(callee_span, format!("`{name}` is declared here"))
                    .with_hint(hint),
                );
                continue;
            };
            if let Some(prev) = mapped_at[i] {
                self.error(
                    Diagnostic::error(
                        Code::CallLifelines,
                        l.span,
                        format!("`{}` of `{name}` is mapped twice", l.name),
                    )
                    .with_label("mapped again here")
                    .with_related(prev, "first mapped here"),
                );
                continue;
            }
            if let Some(j) = to.iter().position(|t| *t == Some(aid)) {
                let other = callee.lifelines[j].name.clone();
                self.error(
                    Diagnostic::error(
                        Code::CallLifelines,
                        a.span,
                        format!(
                            "`{other}` and `{}` of `{name}` are both mapped to {}",
                            l.name, a.name
                        ),
                    )
                    .with_label("a second callee lifeline mapped here")
                    .with_related(mapped_at[j].unwrap_or(a.span), "the first")
                    .with_hint("distinct lifelines of the callee run concurrently: map them to distinct lifelines"),
                );
                continue;
            }
            to[i] = Some(aid);
            mapped_at[i] = Some(l.span);
        }
        let missing: Vec<&str> = callee
            .lifelines
            .iter()
            .zip(&to)
            .filter(|(_, t)| t.is_none())
            .map(|(l, _)| l.name.as_str())
            .collect();
        if !missing.is_empty() && self.error_count == errors_before {
            let example = missing
                .iter()
                .map(|m| format!("{m} = …"))
                .collect::<Vec<_>>()
                .join(", ");
            self.error(
                Diagnostic::error(
                    Code::CallLifelines,
                    workflow.span,
                    format!(
                        "the call maps no lifeline of this workflow to {} of `{name}`",
                        missing.join(", ")
                    ),
                )
                .with_label("every lifeline of the callee must be mapped")
                .with_related(callee_span, format!("`{name}` is declared here"))
                .with_hint(format!("add `{example}` to the map")),
            );
        }

        // The arguments, each at the lifeline its input is renamed to.
        if args.len() != callee.inputs.len() {
            self.error(
                Diagnostic::error(
                    Code::ArgumentCount,
                    workflow.span,
                    format!(
                        "`{name}` takes {} input(s) but {} were given",
                        callee.inputs.len(),
                        args.len()
                    ),
                )
                .with_related(callee_span, format!("`{name}` is declared here")),
            );
        }
        let mut inputs = Vec::with_capacity(args.len());
        for (i, arg) in args.iter().enumerate() {
            let Some(&iv) = callee.inputs.get(i) else {
                continue;
            };
            let v = callee.var(iv);
            let Some(at) = to[v.lifeline.0 as usize] else {
                continue;
            };
            let e = self.expr(arg, &Scope::At(at), Some(&v.ty));
            let what = format!("input `{}` of `{name}`", v.name);
            self.expect_type(&e, &v.ty, &what);
            inputs.push((iv, at, e));
        }

        // The results, at the lifelines the callee returns them at.
        if results.len() != callee.results.len() {
            self.error(
                Diagnostic::error(
                    Code::OutputCount,
                    workflow.span,
                    format!(
                        "`{name}` returns {} result(s) but {} are bound",
                        callee.results.len(),
                        results.len()
                    ),
                )
                .with_related(callee_span, format!("`{name}` is declared here"))
                .with_hint("bind one `y @ A` per result, in the callee's `return` order (`_ @ A` drops one)"),
            );
        }
        for (i, (r, &at)) in results.iter().zip(&result_at).enumerate() {
            let Some(&rv) = callee.results.get(i) else {
                continue;
            };
            let v = callee.var(rv);
            let Some(expected) = to[v.lifeline.0 as usize] else {
                continue;
            };
            if expected != at {
                let callee_ll = &callee.lifelines[v.lifeline.0 as usize].name;
                let want = self.wf.lifeline_name(expected).to_owned();
                self.error(
                    Diagnostic::error(
                        Code::CallLifelines,
                        r.lifeline.span,
                        format!(
                            "`{name}` returns `{}` at {callee_ll}, which this call maps to {want}, not {}",
                            v.name, r.lifeline.name
                        ),
                    )
                    .with_label("named at another lifeline")
                    .with_related(callee_span, format!("`{name}` is declared here"))
                    .with_hint(format!("write `{} @ {want}`", r.var.name)),
                );
            }
        }

        // The bounds that keep every later pass stack-safe and linear.
        let depth = self.wf.depth + depth_of(&callee.body);
        if depth > troupe_syntax::MAX_DEPTH {
            self.error(
                Diagnostic::error(
                    Code::CallNotInlinable,
                    stmt.span,
                    format!(
                        "inlining `{name}` here nests {depth} levels deep, more than {}",
                        troupe_syntax::MAX_DEPTH
                    ),
                )
                .with_hint("call it at a shallower place, or flatten the callee"),
            );
        }
        let grown = u64::from(self.wf.next_stmt)
            + u64::from(callee.stmt_count)
            + args.len() as u64
            + results.len() as u64;
        if grown > u64::from(MAX_INLINED) {
            self.error(
                Diagnostic::error(
                    Code::CallNotInlinable,
                    stmt.span,
                    format!("inlining `{name}` makes the workflow larger than {MAX_INLINED} statements"),
                )
                .with_hint("calls are inlined: a chain of workflows that each call the next several times grows exponentially"),
            );
        }
        if self.error_count > errors_before {
            for (r, &at) in results.iter().zip(&result_at) {
                if r.var.name != "_" {
                    self.bind(at, &r.var, Type::Error);
                }
            }
            return;
        }

        // Inline.
        let lifelines: Vec<LifelineId> = to.iter().map(|t| t.unwrap_or(LifelineId(0))).collect();
        let first = StmtId(self.wf.next_stmt);
        let var_base = self.wf.vars.len() as u32;
        for v in &callee.vars {
            let at = lifelines[v.lifeline.0 as usize];
            self.hidden_var(at, format!("{name}.{}", v.name), v.ty.clone(), stmt.span);
        }
        let remap = Remap {
            stmt_base: 0,
            var_base,
            lifelines: &lifelines,
        };
        for (iv, at, e) in inputs {
            let id = self.next_id();
            out.push(ir::Stmt {
                id,
                span: e.span,
                kind: StmtKind::Act {
                    at,
                    outputs: vec![Some(remap.var(iv))],
                    call: Call::Expr(e),
                },
            });
        }
        let remap = Remap {
            stmt_base: self.wf.next_stmt,
            ..remap
        };
        self.wf.next_stmt += callee.stmt_count;
        out.extend(callee.body.stmts.iter().map(|s| remap.stmt_of(s)));
        for f in &callee.for_each {
            self.wf.for_each.push(ir::ForEach {
                stmt: remap.stmt(f.stmt),
                init: remap.stmt(f.init),
                steps: [remap.stmt(f.steps[0]), remap.stmt(f.steps[1])],
                owner: remap.lifeline(f.owner),
                var: remap.var(f.var),
                list: remap.var(f.list),
                index: remap.var(f.index),
                span: f.span,
            });
        }
        for c in &callee.coregions {
            self.wf.coregions.push(ir::Coregion {
                stmt: remap.stmt(c.stmt),
                receiver: remap.lifeline(c.receiver),
                span: c.span,
            });
        }
        for c in &callee.calls {
            self.wf.calls.push(ir::CallSite {
                callee: c.callee.clone(),
                first: remap.stmt(c.first),
                end: remap.stmt(c.end),
                map: c
                    .map
                    .iter()
                    .map(|(l, a)| (l.clone(), remap.lifeline(*a)))
                    .collect(),
                depth: c.depth + 1,
                span: c.span,
            });
        }
        for (i, (r, &at)) in results.iter().zip(&result_at).enumerate() {
            let rv = callee.results[i];
            if r.var.name == "_" {
                continue;
            }
            let ty = callee.var(rv).ty.clone();
            let id = self.next_id();
            let target = self.bind(at, &r.var, ty.clone());
            out.push(ir::Stmt {
                id,
                span: r.var.span.to(r.lifeline.span),
                kind: StmtKind::Act {
                    at,
                    outputs: vec![Some(target)],
                    call: Call::Expr(ir::Expr {
                        kind: ir::ExprKind::Var(remap.var(rv)),
                        ty,
                        span: r.var.span,
                    }),
                },
            });
        }
        self.wf.calls.push(ir::CallSite {
            callee: name.clone(),
            first,
            end: StmtId(self.wf.next_stmt),
            map: callee
                .lifelines
                .iter()
                .zip(&lifelines)
                .map(|(l, a)| (l.name.clone(), *a))
                .collect(),
            depth: 0,
            span: stmt.span,
        });
    }
}
