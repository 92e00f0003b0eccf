//! Parsing the causal-past forms of guards (LANGUAGE.md §7): `prev(φ)`,
//! `since(φ, ψ)`, `once(φ)`, `at(B, φ)`, `seen(B)` and `on(B)`.
//!
//! They parse wherever an expression may stand, so that a misplaced one gets
//! the checker's located error ("only in the guard of an `if` or `while`")
//! rather than a parse error about a call.

use super::{PResult, Parser};
use crate::ast::{Cpl, Expr, ExprKind, Ident};
use crate::lexer::TokenKind as T;
use crate::{Code, Diagnostic};

impl Parser<'_> {
    /// At `name (`, with `name` one of [`Cpl::NAMES`]: the form and its
    /// depth (one more than its deepest operand).
    pub(super) fn cpl(&mut self) -> PResult<(Expr, u32)> {
        let head = self.bump();
        let name = self.text_of(head.span).to_owned();
        self.expect(T::LParen)?;
        let mut depth = 0;
        let mut operand = |p: &mut Self| -> PResult<Box<Expr>> {
            let (e, d) = p.expr_depth()?;
            depth = depth.max(d);
            Ok(Box::new(e))
        };
        let form = match name.as_str() {
            "prev" => Cpl::Prev(operand(self)?),
            "once" => Cpl::Once(operand(self)?),
            "since" => {
                let a = operand(self)?;
                self.comma(&name, "`since(φ, ψ)`: φ has held since ψ did")?;
                Cpl::Since(a, operand(self)?)
            }
            "at" => {
                let b = self.ident("a lifeline")?;
                self.comma(&name, "`at(B, φ)`: φ held at B's latest event I have seen")?;
                Cpl::At(b, operand(self)?)
            }
            "seen" => Cpl::Seen(self.lifeline_operand(&name)?),
            _ => Cpl::On(self.lifeline_operand(&name)?),
        };
        if !self.at(T::RParen) {
            return Err(self.form_error(&name, "expected `)` here", usage(&name)));
        }
        let end = self.bump().span;
        let depth = depth + 1;
        self.check_expr_depth(depth, head.span)?;
        Ok((
            Expr {
                kind: ExprKind::Cpl(form),
                span: head.span.to(end),
            },
            depth,
        ))
    }

    fn comma(&mut self, name: &str, hint: &str) -> PResult<()> {
        if self.eat(T::Comma) {
            return Ok(());
        }
        Err(self.form_error(name, "expected `,` here", hint.to_owned()))
    }

    fn lifeline_operand(&mut self, name: &str) -> PResult<Ident> {
        if self.at(T::Ident) {
            return self.ident("a lifeline");
        }
        Err(self.form_error(name, "expected a lifeline's name", usage(name)))
    }

    /// E0730 at the current token: form `name` has other operands.
    fn form_error(&mut self, name: &str, label: &str, hint: String) -> super::Reported {
        let span = self.span();
        self.diagnostics.push(
            Diagnostic::error(
                Code::CausalForm,
                span,
                format!("`{name}(…)` takes {}", arity(name)),
            )
            .with_label(label.to_owned())
            .with_hint(hint),
        );
        super::Reported
    }
}

fn arity(name: &str) -> &'static str {
    match name {
        "since" => "two conditions",
        "at" => "a lifeline and a condition",
        "seen" | "on" => "one lifeline",
        _ => "one condition",
    }
}

fn usage(name: &str) -> String {
    match name {
        "prev" => "`prev(φ)`: φ held at this lifeline's previous event".into(),
        "once" => "`once(φ)`: φ held at some event in the causal past".into(),
        "since" => "`since(φ, ψ)`: φ has held since ψ did".into(),
        "at" => "`at(B, φ)`: φ held at B's latest event I have seen".into(),
        "seen" => "`seen(B).x`: B's `x` at B's latest event I have seen".into(),
        _ => "`on(B)`: the current event is B's".into(),
    }
}
