//! Checking the concurrent forms of LANGUAGE.md §6: `par` (no variable
//! written in one branch is read or written in another at the same
//! lifeline, E0720) and `coregion` (messages to one receiver from distinct
//! senders with disjoint bindings, E0721), which becomes a `par` of one
//! message per branch.
//!
//! The binding analysis walks the branches of a `par` one after the other
//! on one state, so after the region everything a branch binds is bound
//! (every branch runs to its end before a lifeline leaves the region). A
//! read in a later branch of a variable bound only in an earlier one thus
//! passes the binding analysis and is reported here, as the conflict it is.

use crate::Checker;
use crate::ir::{self, Call, ExprKind, FormatPart, Recv, StmtId, StmtKind, VarId};
use std::collections::BTreeMap;
use troupe_syntax::ast;
use troupe_syntax::{Code, Diagnostic, Span};

/// What one branch reads and writes: each variable with its first place.
#[derive(Default)]
struct Access {
    reads: BTreeMap<VarId, Span>,
    writes: BTreeMap<VarId, Span>,
}

impl Access {
    fn read(&mut self, e: &ir::Expr) {
        // Expressions are bounded in depth by the parser (MAX_EXPR_DEPTH).
        match &e.kind {
            ExprKind::Var(v) => {
                self.reads.entry(*v).or_insert(e.span);
            }
            // A causal view reads another event's value, not this branch's
            // variable: no conflict.
            ExprKind::Lit(_) | ExprKind::Seen(..) => {}
            ExprKind::Cpl(f) => self.read_formula(f),
            ExprKind::Field(x, _)
            | ExprKind::JsonField(x, _)
            | ExprKind::Unary(_, x)
            | ExprKind::Len(x) => self.read(x),
            ExprKind::Binary(_, a, b) | ExprKind::Index(a, b) => {
                self.read(a);
                self.read(b);
            }
            ExprKind::List(xs) => xs.iter().for_each(|x| self.read(x)),
            ExprKind::Format(parts) => {
                for p in parts {
                    if let FormatPart::Expr(x) = p {
                        self.read(x);
                    }
                }
            }
        }
    }

    /// A causal guard's atoms, conservatively: every variable they read.
    fn read_formula(&mut self, f: &ir::Formula) {
        if let ir::Formula::Atom(e) = f {
            self.read(e);
        }
        f.children().into_iter().for_each(|c| self.read_formula(c));
    }

    fn write(&mut self, v: VarId, span: Span) {
        self.writes.entry(v).or_insert(span);
    }

    /// Blocks nest at most as deep as the parser allows.
    fn block(&mut self, block: &ir::Block) {
        for s in &block.stmts {
            match &s.kind {
                StmtKind::Msg { items, .. } => {
                    for item in items {
                        self.read(&item.send);
                        if let Recv::Bind(v) = item.recv {
                            self.write(v, s.span);
                        }
                    }
                }
                StmtKind::Act { outputs, call, .. } => {
                    match call {
                        Call::Action { args, .. } => args.iter().for_each(|a| self.read(a)),
                        Call::Expr(e) => self.read(e),
                    }
                    for v in outputs.iter().flatten() {
                        self.write(*v, s.span);
                    }
                }
                StmtKind::If {
                    guard,
                    then,
                    otherwise,
                    ..
                } => {
                    self.read(guard);
                    self.block(then);
                    self.block(otherwise);
                }
                StmtKind::While {
                    guard, body, exit, ..
                } => {
                    self.read(guard);
                    self.block(body);
                    self.block(exit);
                }
                StmtKind::Par { branches } => branches.iter().for_each(|b| self.block(b)),
            }
        }
    }
}

impl Checker<'_> {
    /// E0720 for every variable one branch writes and another reads or
    /// writes (variables belong to one lifeline, so "at the same lifeline"
    /// is the variable's identity). Reported once per variable and pair of
    /// branches, at the later branch, with the earlier place related.
    pub(crate) fn par_conflicts(&mut self, branches: &[ir::Block]) {
        let access: Vec<Access> = branches
            .iter()
            .map(|b| {
                let mut a = Access::default();
                a.block(b);
                a
            })
            .collect();
        for j in 1..access.len() {
            for i in 0..j {
                let (a, b) = (&access[i], &access[j]);
                let mut found: BTreeMap<VarId, (Span, &str, Span, &str)> = BTreeMap::new();
                for (v, &w) in &a.writes {
                    if let Some(&s) = b.writes.get(v) {
                        found.entry(*v).or_insert((s, "written", w, "written"));
                    } else if let Some(&s) = b.reads.get(v) {
                        found.entry(*v).or_insert((s, "read", w, "written"));
                    }
                }
                for (v, &w) in &b.writes {
                    if let Some(&r) = a.reads.get(v) {
                        found.entry(*v).or_insert((w, "written", r, "read"));
                    }
                }
                for (v, (here, how, there, how_there)) in found {
                    let var = &self.wf.vars[v.0 as usize];
                    let lifeline = self.wf.lifeline_name(var.lifeline).to_owned();
                    let name = var.name.clone();
                    self.error(
                        Diagnostic::error(
                            Code::ParConflict,
                            here,
                            format!(
                                "`{name}` at {lifeline} is {how_there} in branch {} of this `par` and {how} in branch {}",
                                i + 1,
                                j + 1
                            ),
                        )
                        .with_label(format!("{how} here, in branch {}", j + 1))
                        .with_related(there, format!("{how_there} here, in branch {}", i + 1))
                        .with_hint("the branches run concurrently: give each branch its own variables and combine them after the `par`"),
                    );
                }
            }
        }
    }

    /// `coregion { msg A1(…) -> B(…) … }`: checked message by message, each
    /// becoming one branch of a `par`.
    pub(crate) fn coregion(
        &mut self,
        id: StmtId,
        span: Span,
        body: &ast::Block,
    ) -> Option<StmtKind> {
        if body.stmts.is_empty() {
            self.error(
                Diagnostic::error(
                    Code::CoregionForm,
                    span,
                    "a `coregion` needs at least one message",
                )
                .with_label("empty")
                .with_hint("write `coregion { msg A(x) -> C(x)  msg B(y) -> C(y) }`"),
            );
            return None;
        }
        let mut receiver: Option<&ast::Ident> = None;
        let mut senders: Vec<&ast::Ident> = Vec::new();
        let mut bound: BTreeMap<VarId, Span> = BTreeMap::new();
        let mut branches = Vec::with_capacity(body.stmts.len());
        self.wf.depth += 1;
        for stmt in &body.stmts {
            let ast::StmtKind::Msg {
                from,
                send,
                to,
                recv,
            } = &stmt.kind
            else {
                if !matches!(stmt.kind, ast::StmtKind::Error) {
                    self.error(
                        Diagnostic::error(
                            Code::CoregionForm,
                            stmt.span,
                            "a `coregion` holds only messages",
                        )
                        .with_label("not a `msg`")
                        .with_hint("move it before or after the `coregion`, or use `par { … } and { … }` for concurrent blocks"),
                    );
                }
                continue;
            };
            match receiver {
                Some(first) if first.name != to.name => {
                    self.error(
                        Diagnostic::error(
                            Code::CoregionForm,
                            to.span,
                            format!(
                                "the messages of a `coregion` go to one receiver: `{}` here, `{}` before",
                                to.name, first.name
                            ),
                        )
                        .with_label("another receiver")
                        .with_related(first.span, "the coregion's receiver")
                        .with_hint("split it into one `coregion` per receiver, or use `par`"),
                    );
                }
                Some(_) => {}
                None => receiver = Some(to),
            }
            if let Some(prev) = senders.iter().find(|s| s.name == from.name) {
                self.error(
                    Diagnostic::error(
                        Code::CoregionForm,
                        from.span,
                        format!(
                            "`{}` sends twice in this `coregion`; its senders must be distinct",
                            from.name
                        ),
                    )
                    .with_label("second message from it")
                    .with_related(prev.span, "its first message")
                    .with_hint("one lifeline's messages are ordered: put the second one after the `coregion`, or send both items in one message"),
                );
            } else {
                senders.push(from);
            }
            let msg_id = self.next_id();
            let kind = self.msg(stmt.span, from, send, to, recv);
            if let StmtKind::Msg { items, .. } = &kind {
                for item in items {
                    if let Recv::Bind(v) = item.recv {
                        if let Some(&first) = bound.get(&v) {
                            let var = &self.wf.vars[v.0 as usize];
                            let (name, at) = (
                                var.name.clone(),
                                self.wf.lifeline_name(var.lifeline).to_owned(),
                            );
                            self.error(
                                Diagnostic::error(
                                    Code::CoregionForm,
                                    stmt.span,
                                    format!(
                                        "`{name}` at {at} is bound by two messages of this `coregion`; its bindings must be disjoint"
                                    ),
                                )
                                .with_label("bound again here")
                                .with_related(first, "bound here first")
                                .with_hint("the messages arrive in any order: receive each into its own variable"),
                            );
                        } else {
                            bound.insert(v, stmt.span);
                        }
                    }
                }
            }
            branches.push(ir::Block {
                stmts: vec![ir::Stmt {
                    id: msg_id,
                    span: stmt.span,
                    kind,
                }],
            });
        }
        self.wf.depth -= 1;
        let receiver = receiver?;
        let receiver = self.lifeline(receiver);
        self.wf.coregions.push(ir::Coregion {
            stmt: id,
            receiver,
            span,
        });
        Some(StmtKind::Par { branches })
    }
}
