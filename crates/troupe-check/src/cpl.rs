//! Checking guards of the causal past logic (LANGUAGE.md §7) into
//! [`ir::Formula`]s.
//!
//! A guard that uses a causal form anywhere (`prev`, `since`, `once`,
//! `at`, `on`; `seen(B).x` alone keeps a guard ordinary only where no monitor
//! is needed, so it counts too) becomes a formula: `and`, `or`, `not` and
//! parentheses over causal forms are its connectives, and every maximal part
//! without a causal form is an atom — an ordinary Bool expression, typed at
//! the lifeline where it is evaluated:
//!
//! - the whole guard at its owner, where the binding analysis applies as for
//!   any guard (the atom is evaluated at the current event);
//! - inside `at(B, …)` at B, and inside `prev`/`since` at the same lifeline
//!   but at earlier events, where a variable not bound yet makes the atom
//!   false (no error: that is what the formula asks);
//! - inside `once(…)` at every lifeline's events: no variable is in scope
//!   there, so an atom names whose it reads with `at(B, …)` or `seen(B).x`.
//!
//! Every causal form outside a guard, and a guard's causal form not under
//! connectives (`prev(x) == true`), is E0730 with a hint.

use crate::Checker;
use crate::expr::Scope;
use crate::ir::{self, ExprKind as IK, Formula, LifelineId};
use crate::types::Type;
use crate::value::Value;
use troupe_syntax::ast::{self, BinaryOp, Cpl, ExprKind as AK, UnaryOp};
use troupe_syntax::{Code, Diagnostic, Span};

/// Causal guards that name a variable of another lifeline (or of an earlier
/// event) bound only after the guard in the text — `while not at(Reviewer,
/// approved) @ Writer { … act Reviewer: approved = … }` — are checked again
/// once the whole workflow is, when every variable is known.
#[derive(Debug, Default)]
pub(crate) struct Deferral {
    mode: Mode,
    /// Whether the guard being checked read a name not known yet.
    missed: bool,
    /// The guards to check again: (span, guard, owner).
    guards: Vec<(Span, ast::Expr, LifelineId)>,
    /// The final pass's own findings (all others were the first pass's).
    late: Vec<Diagnostic>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// At the guard's place: a name not known yet is no error.
    #[default]
    First,
    /// After the workflow: every variable is known.
    Final,
}

/// Where a subformula is evaluated (see the module docs).
#[derive(Debug, Clone, Copy)]
struct Place {
    at: Option<LifelineId>,
    /// At the current event of the guard's owner.
    strict: bool,
}

/// Whether `e` uses a causal form anywhere (bounded by the parser's depth).
pub(crate) fn is_causal(e: &ast::Expr) -> bool {
    match &e.kind {
        AK::Cpl(_) => true,
        AK::Field(x, _) | AK::Unary(_, x) | AK::Paren(x) => is_causal(x),
        AK::Binary(_, a, b) => is_causal(a) || is_causal(b),
        AK::List(xs) => xs.iter().any(is_causal),
        _ => false,
    }
}

/// Whether `e` uses a causal form other than `seen(B)`, i.e. needs a
/// formula node rather than being an atom.
fn is_temporal(e: &ast::Expr) -> bool {
    match &e.kind {
        AK::Cpl(Cpl::Seen(_)) => false,
        AK::Cpl(_) => true,
        AK::Field(x, _) | AK::Unary(_, x) | AK::Paren(x) => is_temporal(x),
        AK::Binary(_, a, b) => is_temporal(a) || is_temporal(b),
        AK::List(xs) => xs.iter().any(is_temporal),
        _ => false,
    }
}

impl Checker<'_> {
    /// The guard `e` of a construct owned by `owner`, with causal forms.
    pub(crate) fn causal_guard(&mut self, e: &ast::Expr, owner: LifelineId) -> ir::Expr {
        let place = Place {
            at: Some(owner),
            strict: true,
        };
        self.causal.missed = false;
        let formula = self.formula(e, place);
        if self.causal.missed && self.causal.mode == Mode::First {
            self.causal.guards.push((e.span, e.clone(), owner));
        }
        ir::Expr {
            kind: IK::Cpl(Box::new(formula)),
            ty: Type::Bool,
            span: e.span,
        }
    }

    fn formula(&mut self, e: &ast::Expr, place: Place) -> Formula {
        if !is_temporal(e) {
            return Formula::Atom(self.atom(e, place));
        }
        let past = Place {
            at: place.at,
            strict: false,
        };
        match &e.kind {
            AK::Paren(x) => self.formula(x, place),
            AK::Unary(UnaryOp::Not, x) => Formula::Not(Box::new(self.formula(x, place))),
            AK::Binary(BinaryOp::And, a, b) => Formula::And(
                Box::new(self.formula(a, place)),
                Box::new(self.formula(b, place)),
            ),
            AK::Binary(BinaryOp::Or, a, b) => Formula::Or(
                Box::new(self.formula(a, place)),
                Box::new(self.formula(b, place)),
            ),
            AK::Cpl(Cpl::Prev(x)) => Formula::Prev(Box::new(self.formula(x, past))),
            AK::Cpl(Cpl::Since(a, b)) => Formula::Since(
                Box::new(self.formula(a, past)),
                Box::new(self.formula(b, past)),
            ),
            AK::Cpl(Cpl::Once(x)) => Formula::Once(Box::new(self.formula(
                x,
                Place {
                    at: None,
                    strict: false,
                },
            ))),
            AK::Cpl(Cpl::At(b, x)) => {
                let Some(b) = self.known_lifeline(b) else {
                    return Formula::Atom(false_expr(e.span));
                };
                let inner = Place {
                    at: Some(b),
                    strict: false,
                };
                Formula::At(b, Box::new(self.formula(x, inner)))
            }
            AK::Cpl(Cpl::On(b)) => match self.known_lifeline(b) {
                Some(b) => Formula::On(b),
                None => Formula::Atom(false_expr(e.span)),
            },
            _ => {
                self.error(
                    Diagnostic::error(
                        Code::CausalForm,
                        e.span,
                        "a causal form is a condition, not a value",
                    )
                    .with_label("a causal form inside an operator")
                    .with_hint(
                        "combine causal forms with `and`, `or`, `not`; compare values inside \
                         them: `at(B, x > 3)`, or read a value with `seen(B).x`",
                    ),
                );
                Formula::Atom(false_expr(e.span))
            }
        }
    }

    /// An atom: a Bool expression at `place`.
    fn atom(&mut self, e: &ast::Expr, place: Place) -> ir::Expr {
        let scope = Scope::Causal {
            at: place.at,
            strict: place.strict,
        };
        let atom = self.expr(e, &scope, Some(&Type::Bool));
        if !matches!(atom.ty, Type::Bool | Type::Error) {
            let found = self.types.display(&atom.ty).to_string();
            self.error(
                Diagnostic::error(
                    Code::GuardNotBool,
                    atom.span,
                    format!("a condition must be a Bool, not {found}"),
                )
                .with_label(format!("this is {found}"))
                .with_hint("compare it: e.g. `x > 0`, `v == approve`"),
            );
        }
        atom
    }

    /// A name read at `at` by a causal guard's atom that no variable of
    /// `at` has (yet): checked again after the workflow.
    pub(crate) fn causal_unknown(&mut self, at: LifelineId, id: &ast::Ident) {
        if self.causal.mode == Mode::First {
            self.causal.missed = true;
            return;
        }
        let lifeline = self.wf.lifeline_name(at).to_owned();
        let candidates: Vec<String> = self.wf.names_at(at).map(str::to_owned).collect();
        let mut d = Diagnostic::error(
            Code::UnboundVariable,
            id.span,
            format!("`{}` is not a variable of {lifeline}", id.name),
        )
        .with_label(format!(
            "read at {lifeline}'s events, where nothing binds it"
        ));
        d = match self.did_you_mean(&id.name, candidates.iter().map(String::as_str)) {
            Some(s) => d.with_hint(format!("did you mean `{s}`?")),
            None => d.with_hint(format!(
                "a causal form reads the variables {lifeline} binds somewhere in the workflow"
            )),
        };
        self.causal.late.push(d);
    }

    /// Checks again the causal guards that named variables bound later, now
    /// that every variable is known, and puts their formulas in `body`.
    /// Only this pass's own findings (names no lifeline binds) are
    /// reported: the first pass reported the rest.
    pub(crate) fn finish_causal_guards(&mut self, body: &mut ir::Block) {
        let guards = std::mem::take(&mut self.causal.guards);
        if guards.is_empty() {
            return;
        }
        self.causal.mode = Mode::Final;
        let (count, diagnostics) = (self.error_count, std::mem::take(&mut self.diagnostics));
        let mut checked = Vec::with_capacity(guards.len());
        for (span, guard, owner) in &guards {
            checked.push((*span, self.causal_guard(guard, *owner)));
        }
        self.diagnostics = diagnostics;
        self.error_count = count;
        self.causal.mode = Mode::First;
        for d in std::mem::take(&mut self.causal.late) {
            self.error(d);
        }
        replace_guards(body, &mut checked);
    }

    /// A lifeline a causal form names: one of the workflow's so far.
    fn known_lifeline(&mut self, id: &ast::Ident) -> Option<LifelineId> {
        if let Some(&l) = self.wf.lifeline_index.get(&id.name) {
            return Some(l);
        }
        self.unknown_lifeline(id, "a causal form names one of the workflow's lifelines");
        None
    }

    /// `seen(B).x`, valid in a causal guard's atoms.
    pub(crate) fn seen(
        &mut self,
        b: &ast::Ident,
        field: &ast::Ident,
        span: Span,
        scope: &Scope<'_>,
    ) -> (IK, Type) {
        if !matches!(scope, Scope::Causal { .. }) {
            self.outside_guard("seen", span);
            return (IK::Lit(Value::Bool(false)), Type::Error);
        }
        let Some(b) = self.known_lifeline(b) else {
            return (IK::Lit(Value::Bool(false)), Type::Error);
        };
        let Some(var) = self.wf.lookup(b, &field.name) else {
            self.causal_unknown(b, field);
            return (IK::Lit(Value::Bool(false)), Type::Error);
        };
        let ty = self.wf.vars[var.0 as usize].ty.clone();
        (IK::Seen(b, var), ty)
    }

    /// A causal form where an expression is checked as a value: outside a
    /// guard, or `seen(B)` without its field.
    pub(crate) fn misplaced_cpl(
        &mut self,
        form: &Cpl,
        span: Span,
        scope: &Scope<'_>,
    ) -> (IK, Type) {
        match form {
            Cpl::Seen(b) if matches!(scope, Scope::Causal { .. }) => {
                self.error(
                    Diagnostic::error(
                        Code::CausalForm,
                        span,
                        format!("`seen({})` needs a variable", b.name),
                    )
                    .with_label("a lifeline's view, not a value")
                    .with_hint(format!(
                        "read one of {0}'s variables: `seen({0}).x`",
                        b.name
                    )),
                );
            }
            _ => {
                let name = match form {
                    Cpl::Prev(_) => "prev",
                    Cpl::Since(..) => "since",
                    Cpl::Once(_) => "once",
                    Cpl::At(..) => "at",
                    Cpl::Seen(_) => "seen",
                    Cpl::On(_) => "on",
                };
                self.outside_guard(name, span);
            }
        }
        (IK::Lit(Value::Bool(false)), Type::Error)
    }

    pub(crate) fn outside_guard(&mut self, name: &str, span: Span) {
        self.error(
            Diagnostic::error(
                Code::CausalForm,
                span,
                format!("`{name}(…)` is a causal form: only a guard may use it"),
            )
            .with_label("outside the guard of an `if` or a `while`")
            .with_hint(
                "decide on it in a guard, `if at(B, x) @ A { … }`; to use a value \
                 elsewhere, send it in a `msg`",
            ),
        );
    }

    /// A variable read inside `once(…)`, where no lifeline's are in scope.
    pub(crate) fn no_variables_here(&mut self, id: &ast::Ident) {
        let whose: Vec<String> = self
            .wf
            .lifelines_binding(&id.name)
            .map(|l| self.wf.lifeline_name(l).to_owned())
            .collect();
        let example = whose.first().map_or("B", String::as_str);
        self.error(
            Diagnostic::error(
                Code::CausalForm,
                id.span,
                format!("`{}` names no lifeline's variable here", id.name),
            )
            .with_label("inside `once(…)`, evaluated at every lifeline's events")
            .with_hint(format!(
                "say whose it is: `once(at({example}, {0}))` or `seen({example}).{0}`",
                id.name
            )),
        );
    }
}

/// Puts each checked guard in place of the `if` or `while` guard with its
/// span.
fn replace_guards(block: &mut ir::Block, checked: &mut Vec<(Span, ir::Expr)>) {
    for s in &mut block.stmts {
        match &mut s.kind {
            ir::StmtKind::If {
                guard,
                then: a,
                otherwise: b,
                ..
            }
            | ir::StmtKind::While {
                guard,
                body: a,
                exit: b,
                ..
            } => {
                if let Some(i) = checked.iter().position(|(span, _)| *span == guard.span) {
                    *guard = checked.swap_remove(i).1;
                }
                replace_guards(a, checked);
                replace_guards(b, checked);
            }
            ir::StmtKind::Par { branches } => {
                for b in branches {
                    replace_guards(b, checked);
                }
            }
            _ => {}
        }
    }
}

fn false_expr(span: Span) -> ir::Expr {
    ir::Expr {
        kind: IK::Lit(Value::Bool(false)),
        ty: Type::Error,
        span,
    }
}
