//! Type checking expressions (guards, payloads, arguments, pure bodies) and
//! resolving names to variables or enum values.

use crate::Checker;
use crate::ir::{self, BinaryOp, ExprKind as IK, FormatPart, LifelineId, Param, UnaryOp, VarId};
use crate::suggest::list_some;
use crate::types::Type;
use crate::value::Value;
use crate::workflow::BindState;
use troupe_syntax::ast::{self, ExprKind as AK, StrPart};
use troupe_syntax::{Code, Diagnostic, Span};

/// Where an expression's names are looked up.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Scope<'a> {
    /// The parameters of a `pure` action with an expression body.
    Params(&'a [Param]),
    /// The variables bound at a lifeline at the current point of the workflow.
    At(LifelineId),
    /// An atom of a causal guard (LANGUAGE.md §7), where `seen(B).x` may be
    /// read. `at`: the lifeline whose variables it reads (`None` inside
    /// `once(…)`, evaluated at every lifeline's events: no variable then);
    /// `strict`: evaluated at the current event, where the binding analysis
    /// applies — elsewhere (an earlier event, another lifeline's) a variable
    /// not bound yet makes the atom false, which is no error.
    Causal {
        at: Option<LifelineId>,
        strict: bool,
    },
}

impl Scope<'_> {
    /// The lifeline whose variables are in scope, if any.
    fn lifeline(&self) -> Option<LifelineId> {
        match self {
            Scope::At(at) => Some(*at),
            Scope::Causal { at, .. } => *at,
            Scope::Params(_) => None,
        }
    }
}

impl Checker<'_> {
    /// Checks `e` in `scope`. `expected` only guides the resolution of bare
    /// enum values and empty lists; callers check assignability themselves.
    pub(crate) fn expr(
        &mut self,
        e: &ast::Expr,
        scope: &Scope<'_>,
        expected: Option<&Type>,
    ) -> ir::Expr {
        let (kind, ty) = match &e.kind {
            AK::Bool(b) => (IK::Lit(Value::Bool(*b)), Type::Bool),
            AK::Int(n) => (IK::Lit(Value::Int(*n)), Type::Int),
            AK::Float(x) => (IK::Lit(Value::Float(*x)), Type::Float),
            AK::Str(lit) => self.string(lit, scope),
            AK::Name(id) => self.name(id, scope, expected),
            AK::Paren(inner) => return self.expr(inner, scope, expected),
            AK::Field(base, field) => match &base.kind {
                AK::Cpl(ast::Cpl::Seen(b)) => self.seen(b, field, e.span, scope),
                _ => self.field(base, field, scope),
            },
            AK::Cpl(form) => self.misplaced_cpl(form, e.span, scope),
            AK::Unary(op, operand) => {
                let operand = self.expr(operand, scope, None);
                let (op, ok, ty) = match op {
                    ast::UnaryOp::Not => (
                        UnaryOp::Not,
                        matches!(operand.ty, Type::Bool | Type::Error),
                        Type::Bool,
                    ),
                    ast::UnaryOp::Neg => {
                        (UnaryOp::Neg, operand.ty.is_numeric(), operand.ty.clone())
                    }
                };
                if !ok {
                    let (word, wants) = if op == UnaryOp::Not {
                        ("not", "a Bool")
                    } else {
                        ("-", "a number")
                    };
                    let found = self.types.display(&operand.ty).to_string();
                    self.error(
                        Diagnostic::error(
                            Code::OperatorTypes,
                            operand.span,
                            format!("`{word}` takes {wants}, not {found}"),
                        )
                        .with_label(format!("this is {found}")),
                    );
                }
                (
                    IK::Unary(op, Box::new(operand)),
                    if ok { ty } else { Type::Error },
                )
            }
            AK::Binary(op, lhs, rhs) => self.binary(*op, lhs, rhs, scope),
            AK::List(items) => {
                let elem_expected = match expected {
                    Some(Type::List(t)) => Some((**t).clone()),
                    _ => None,
                };
                let mut elem_ty = elem_expected.clone();
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    let checked = self.expr(item, scope, elem_ty.as_ref());
                    match &elem_ty {
                        None => elem_ty = Some(checked.ty.clone()),
                        Some(t) => {
                            self.expect_type(&checked, &t.clone(), "the other items of the list");
                        }
                    }
                    out.push(checked);
                }
                (
                    IK::List(out),
                    Type::List(Box::new(elem_ty.unwrap_or(Type::Error))),
                )
            }
            AK::Error => (IK::Lit(Value::Bool(false)), Type::Error),
        };
        ir::Expr {
            kind,
            ty,
            span: e.span,
        }
    }

    /// Reports a type mismatch unless `e` may flow where `expected` is wanted.
    pub(crate) fn expect_type(&mut self, e: &ir::Expr, expected: &Type, what: &str) -> bool {
        if e.ty.assignable_to(expected) {
            return true;
        }
        let found = self.types.display(&e.ty).to_string();
        let wanted = self.types.display(expected).to_string();
        let mut d = Diagnostic::error(
            Code::TypeMismatch,
            e.span,
            format!("expected {wanted}, found {found}"),
        )
        .with_label(format!("this is {found}, but {what} is {wanted}"));
        if matches!((&e.ty, expected), (Type::Float, Type::Int)) {
            d = d.with_hint("a Float does not convert to an Int implicitly");
        }
        self.error(d);
        false
    }

    fn string(&mut self, lit: &ast::StrLit, scope: &Scope<'_>) -> (IK, Type) {
        if let Some(text) = lit.as_plain() {
            return (IK::Lit(Value::text(text)), Type::Text);
        }
        let mut parts = Vec::with_capacity(lit.parts.len());
        for part in &lit.parts {
            match part {
                StrPart::Text(t) => parts.push(FormatPart::Text(t.clone())),
                StrPart::Hole(id) => {
                    let (kind, ty) = self.name(id, scope, None);
                    parts.push(FormatPart::Expr(ir::Expr {
                        kind,
                        ty,
                        span: id.span,
                    }));
                }
            }
        }
        (IK::Format(parts), Type::Text)
    }

    /// A bare name: a variable in scope, else an enum value, else an error.
    fn name(&mut self, id: &ast::Ident, scope: &Scope<'_>, expected: Option<&Type>) -> (IK, Type) {
        match scope {
            Scope::Params(params) => {
                if let Some(i) = params.iter().position(|p| p.name == id.name) {
                    return (IK::Var(VarId(i as u32)), params[i].ty.clone());
                }
            }
            Scope::At(at)
            | Scope::Causal {
                at: Some(at),
                strict: true,
            } => {
                if let Some(var) = self.wf.lookup(*at, &id.name) {
                    let ty = self.wf.vars[var.0 as usize].ty.clone();
                    if !matches!(self.wf.state(var), BindState::Bound) {
                        self.report_unbound(id, *at, var);
                    }
                    return (IK::Var(var), ty);
                }
            }
            Scope::Causal {
                at: Some(at),
                strict: false,
            } => {
                if let Some(var) = self.wf.lookup(*at, &id.name) {
                    let ty = self.wf.vars[var.0 as usize].ty.clone();
                    return (IK::Var(var), ty);
                }
                if self.enum_value(&id.name, expected).is_none() {
                    self.causal_unknown(*at, id);
                    return (IK::Lit(Value::Bool(false)), Type::Error);
                }
            }
            Scope::Causal { at: None, .. } => {}
        }
        if let Some((kind, ty)) = self.enum_value(&id.name, expected) {
            return (kind, ty);
        }
        match scope {
            Scope::Params(params) => {
                let mut d = Diagnostic::error(
                    Code::UnboundVariable,
                    id.span,
                    format!("`{}` is not a parameter of this action", id.name),
                )
                .with_label("unknown name");
                if let Some(s) = self.did_you_mean(&id.name, params.iter().map(|p| p.name.clone()))
                {
                    d = d.with_hint(format!("did you mean `{s}`?"));
                }
                self.error(d);
            }
            Scope::Causal { at: None, .. } => self.no_variables_here(id),
            Scope::At(at) | Scope::Causal { at: Some(at), .. } => {
                if let Some(Type::Enum(eid)) = expected {
                    let def = self.types.enum_def(*eid);
                    let values = list_some(def.values.iter().map(String::as_str));
                    let hint = match self.did_you_mean(&id.name, &def.values) {
                        Some(s) => format!("did you mean `{s}`? {} has {values}", def.name),
                        None => format!("{} has {values}", def.name),
                    };
                    let msg = format!("`{}` is not a value of {}", id.name, def.name);
                    self.error(
                        Diagnostic::error(Code::UnknownEnumValue, id.span, msg)
                            .with_label("unknown value")
                            .with_hint(hint),
                    );
                } else {
                    self.report_unbound_new(id, *at);
                }
            }
        }
        (IK::Lit(Value::Bool(false)), Type::Error)
    }

    /// Resolves `name` as a value of a declared enum, preferring `expected`.
    fn enum_value(&self, name: &str, expected: Option<&Type>) -> Option<(IK, Type)> {
        let candidates = self.enum_values.get(name)?;
        let pick = match expected {
            Some(Type::Enum(want)) => candidates
                .iter()
                .find(|(e, _)| e == want)
                .or_else(|| candidates.first()),
            _ => candidates.first(),
        }?;
        Some((IK::Lit(Value::Enum(pick.0, pick.1)), Type::Enum(pick.0)))
    }

    /// `{unknown}` (a name bound nowhere at this lifeline, so far).
    fn report_unbound_new(&mut self, id: &ast::Ident, at: LifelineId) {
        if self.wf.poisoned.contains(&at) {
            return;
        }
        let lifeline = self.wf.lifeline_name(at).to_owned();
        let elsewhere: Option<String> = self
            .wf
            .lifelines_binding(&id.name)
            .find(|&l| l != at)
            .map(|l| self.wf.lifeline_name(l).to_owned());
        let mut d = Diagnostic::error(
            Code::UnboundVariable,
            id.span,
            format!("`{}` is not bound at {lifeline}", id.name),
        )
        .with_label(format!("read at {lifeline} before it is bound there"));
        d = if let Some(other) = &elsewhere {
            d.with_hint(format!(
                "`{0}` is bound at {other}, not at {lifeline}; send it first: `msg {other}({0}) -> {lifeline}({0})`",
                id.name
            ))
        } else {
            let candidates = self.wf.names_at(at);
            match self.did_you_mean(&id.name, candidates) {
                Some(s) => d.with_hint(format!("did you mean `{s}`?")),
                None => d.with_hint(format!(
                    "bind it at {lifeline} first: as a workflow input, by receiving it in a `msg`, or as an action output"
                )),
            }
        };
        self.error(d);
    }

    /// A variable known at this lifeline but not bound on every path here.
    pub(crate) fn report_unbound(&mut self, id: &ast::Ident, at: LifelineId, var: VarId) {
        if self.wf.poisoned.contains(&at) {
            return;
        }
        let lifeline = self.wf.lifeline_name(at).to_owned();
        let mut d = Diagnostic::error(
            Code::UnboundVariable,
            id.span,
            format!(
                "`{}` is not bound at {lifeline} on every path to this point",
                id.name
            ),
        )
        .with_label("possibly unbound here");
        if let BindState::Maybe(reason) = self.wf.state(var) {
            let line = self.line(reason.span);
            d = d
                .with_hint(format!(
                    "`{}` is bound at {lifeline} only {} at line {line}",
                    id.name,
                    reason.what.describe()
                ))
                .with_related(reason.span, reason.what.related());
        }
        self.error(d);
    }

    fn field(&mut self, base: &ast::Expr, field: &ast::Ident, scope: &Scope<'_>) -> (IK, Type) {
        // `Verdict.revise`: a qualified enum value, when `Verdict` is no variable.
        if let AK::Name(type_name) = &base.kind {
            let is_var = match scope {
                Scope::Params(ps) => ps.iter().any(|p| p.name == type_name.name),
                _ => scope
                    .lifeline()
                    .is_some_and(|at| self.wf.lookup(at, &type_name.name).is_some()),
            };
            if let (false, Some(Type::Enum(eid))) =
                (is_var, self.type_names.get(&type_name.name).cloned())
            {
                let def = self.types.enum_def(eid);
                return match def.values.iter().position(|v| *v == field.name) {
                    Some(i) => (IK::Lit(Value::Enum(eid, i as u32)), Type::Enum(eid)),
                    None => {
                        let values = list_some(def.values.iter().map(String::as_str));
                        let hint = format!("{} has {values}", def.name);
                        let msg = format!("`{}` is not a value of {}", field.name, def.name);
                        self.error(
                            Diagnostic::error(Code::UnknownEnumValue, field.span, msg)
                                .with_hint(hint),
                        );
                        (IK::Lit(Value::Bool(false)), Type::Error)
                    }
                };
            }
        }
        let base = self.expr(base, scope, None);
        match base.ty.clone() {
            Type::Record(rid) => {
                let def = self.types.record_def(rid);
                match def.field(&field.name) {
                    Some((i, ty)) => {
                        let ty = ty.clone();
                        (IK::Field(Box::new(base), i), ty)
                    }
                    None => {
                        let names: Vec<_> = def.fields.iter().map(|(n, _)| n.clone()).collect();
                        let hint = match self.did_you_mean(&field.name, names.iter().cloned()) {
                            Some(s) => format!("did you mean `{s}`?"),
                            None => format!(
                                "{} has the fields {}",
                                def.name,
                                list_some(names.iter().map(String::as_str))
                            ),
                        };
                        let msg = format!("the record {} has no field `{}`", def.name, field.name);
                        self.error(
                            Diagnostic::error(Code::UnknownField, field.span, msg)
                                .with_label("unknown field")
                                .with_hint(hint),
                        );
                        (IK::Lit(Value::Bool(false)), Type::Error)
                    }
                }
            }
            Type::Json => (
                IK::JsonField(Box::new(base), field.name.clone()),
                Type::Json,
            ),
            Type::Error => (IK::Lit(Value::Bool(false)), Type::Error),
            other => {
                let found = self.types.display(&other).to_string();
                self.error(
                    Diagnostic::error(
                        Code::UnknownField,
                        field.span,
                        format!("{found} has no fields"),
                    )
                    .with_related(base.span, format!("this is {found}"))
                    .with_hint("fields exist on records and on Json values"),
                );
                (IK::Lit(Value::Bool(false)), Type::Error)
            }
        }
    }

    fn binary(
        &mut self,
        op: ast::BinaryOp,
        lhs: &ast::Expr,
        rhs: &ast::Expr,
        scope: &Scope<'_>,
    ) -> (IK, Type) {
        // Check the side that is surely a variable first, so that a bare enum
        // value on the other side resolves against its type.
        let lhs_is_bare_enum = matches!(&lhs.kind, AK::Name(id) if !self.is_var(id, scope) && self.enum_values.contains_key(&id.name));
        let (l, r) = if lhs_is_bare_enum {
            let r = self.expr(rhs, scope, None);
            let l = self.expr(lhs, scope, Some(&r.ty));
            (l, r)
        } else {
            let l = self.expr(lhs, scope, None);
            let r = self.expr(rhs, scope, Some(&l.ty));
            (l, r)
        };
        let (lt, rt) = (&l.ty, &r.ty);
        let result = match op {
            BinaryOp::And | BinaryOp::Or => (matches!(lt, Type::Bool | Type::Error)
                && matches!(rt, Type::Bool | Type::Error))
            .then_some(Type::Bool),
            BinaryOp::Eq | BinaryOp::Ne => {
                (lt.assignable_to(rt) || rt.assignable_to(lt)).then_some(Type::Bool)
            }
            BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
                ((lt.is_numeric() && rt.is_numeric()) || (is_text(lt) && is_text(rt)))
                    .then_some(Type::Bool)
            }
            BinaryOp::Add if is_text(lt) && is_text(rt) && !(lt.is_error() && rt.is_error()) => {
                Some(Type::Text)
            }
            BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Rem => {
                (lt.is_numeric() && rt.is_numeric()).then_some(match (lt, rt) {
                    (Type::Error, _) | (_, Type::Error) => Type::Error,
                    (Type::Int, Type::Int) => Type::Int,
                    _ => Type::Float,
                })
            }
        };
        let ty = match result {
            Some(ty) => ty,
            None => {
                let ls = self.types.display(lt).to_string();
                let rs = self.types.display(rt).to_string();
                let takes = match op {
                    BinaryOp::And | BinaryOp::Or => "two Bools",
                    BinaryOp::Eq | BinaryOp::Ne => "two values of the same type",
                    BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
                        "two numbers or two Texts"
                    }
                    BinaryOp::Add => "two numbers or two Texts",
                    _ => "two numbers",
                };
                self.error(
                    Diagnostic::error(
                        Code::OperatorTypes,
                        l.span.to(r.span),
                        format!("`{}` takes {takes}, not {ls} and {rs}", op.symbol()),
                    )
                    .with_related(l.span, format!("this is {ls}"))
                    .with_related(r.span, format!("this is {rs}")),
                );
                Type::Error
            }
        };
        (IK::Binary(op, Box::new(l), Box::new(r)), ty)
    }

    fn is_var(&self, id: &ast::Ident, scope: &Scope<'_>) -> bool {
        match scope {
            Scope::Params(ps) => ps.iter().any(|p| p.name == id.name),
            _ => scope
                .lifeline()
                .is_some_and(|at| self.wf.lookup(at, &id.name).is_some()),
        }
    }

    /// The line of `span` in its own file (of a bundle).
    pub(crate) fn line(&self, span: Span) -> u32 {
        let i = self.file_starts.partition_point(|&s| s <= span.start);
        let start = self.file_starts[i.saturating_sub(1)];
        self.lines.line(span.start) + 1 - self.lines.line(start)
    }
}

fn is_text(t: &Type) -> bool {
    matches!(t, Type::Text | Type::Error)
}
