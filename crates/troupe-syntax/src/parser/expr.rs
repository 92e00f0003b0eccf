//! Expressions by precedence climbing, and the bound on their depth
//! ([`MAX_EXPR_DEPTH`]): chains of one precedence are parsed by a loop but
//! become left-nested trees that later passes walk recursively, so every
//! node counts towards the bound as it is built.

use super::{MAX_EXPR_DEPTH, PResult, Parser, Reported};
use crate::ast::*;
use crate::lexer::{Keyword as K, TokenKind as T};
use crate::{Code, Diagnostic, Span, strings};

impl Parser<'_> {
    pub(super) fn expr_list(&mut self, open: T, close: T) -> PResult<Vec<Expr>> {
        self.expect(open)?;
        let mut items = Vec::new();
        while !self.at(close) {
            items.push(self.expr()?);
            if !self.eat(T::Comma) && !self.at(close) {
                return Err(self.error_expected(&format!("`,` or {}", close.describe())));
            }
        }
        self.bump();
        Ok(items)
    }

    pub(crate) fn expr(&mut self) -> PResult<Expr> {
        self.expr_depth().map(|(e, _)| e)
    }

    /// An expression and the depth of its tree (see [`MAX_EXPR_DEPTH`]).
    pub(super) fn expr_depth(&mut self) -> PResult<(Expr, u32)> {
        self.enter()?;
        let e = self.binary(0);
        self.leave();
        e
    }

    /// `depth` is the depth of a node about to be built at `span`: past the
    /// bound it is reported, and the caller gives up on the expression (the
    /// statement's recovery then skips the rest of it, by a loop).
    pub(super) fn check_expr_depth(&mut self, depth: u32, span: Span) -> PResult<()> {
        if depth <= MAX_EXPR_DEPTH {
            return Ok(());
        }
        self.diagnostics.push(
            Diagnostic::error(Code::UnexpectedToken, span, "expression is too deep")
                .with_label(format!("this is more than {MAX_EXPR_DEPTH} levels deep"))
                .with_hint(format!(
                    "an expression nests at most {MAX_EXPR_DEPTH} levels (each operator, \
                     field access or parenthesis of a chain counts one); compute parts \
                     of it in earlier `act` steps"
                )),
        );
        Err(Reported)
    }

    fn binary(&mut self, min_prec: u8) -> PResult<(Expr, u32)> {
        let (mut lhs, mut depth) = self.unary()?;
        while let Some((op, prec)) = binary_op(self.peek()) {
            if prec < min_prec {
                break;
            }
            let op_span = self.bump().span;
            // Comparisons do not chain: `a < b < c` is an error, not `(a < b) < c`.
            let (rhs, rhs_depth) = self.binary(prec + 1)?;
            if prec == CMP_PREC && binary_op(self.peek()).is_some_and(|(_, p)| p == CMP_PREC) {
                let span = self.span();
                self.diagnostics.push(
                    Diagnostic::error(Code::UnexpectedToken, span, "comparisons cannot be chained")
                        .with_related(op_span, "first comparison")
                        .with_hint("combine them with `and`: `a < b and b < c`"),
                );
                return Err(Reported);
            }
            depth = depth.max(rhs_depth) + 1;
            self.check_expr_depth(depth, op_span)?;
            let span = lhs.span.to(rhs.span);
            lhs = Expr {
                kind: ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)),
                span,
            };
        }
        Ok((lhs, depth))
    }

    pub(super) fn unary(&mut self) -> PResult<(Expr, u32)> {
        let op = match self.peek() {
            T::Keyword(K::Not) => UnaryOp::Not,
            T::Minus => UnaryOp::Neg,
            _ => return self.postfix(),
        };
        let start = self.bump().span;
        self.enter()?;
        // `not` binds looser than comparisons (`not a == b` is `not (a == b)`),
        // unary minus tighter than everything.
        let operand = if op == UnaryOp::Not {
            self.binary(CMP_PREC)
        } else {
            self.unary()
        };
        self.leave();
        let (operand, depth) = operand?;
        let span = start.to(operand.span);
        // Fold `-7` into a literal so that it counts as one (in payloads).
        let (kind, depth) = match (op, &operand.kind) {
            (UnaryOp::Neg, ExprKind::Int(n)) => (ExprKind::Int(n.wrapping_neg()), depth),
            (UnaryOp::Neg, ExprKind::Float(x)) => (ExprKind::Float(-x), depth),
            _ => {
                self.check_expr_depth(depth + 1, start)?;
                (ExprKind::Unary(op, Box::new(operand)), depth + 1)
            }
        };
        Ok((Expr { kind, span }, depth))
    }

    fn postfix(&mut self) -> PResult<(Expr, u32)> {
        let (mut e, mut depth) = self.primary()?;
        while self.at(T::Dot) {
            let dot = self.bump().span;
            let field = self.ident("a field name")?;
            depth += 1;
            self.check_expr_depth(depth, dot)?;
            let span = e.span.to(field.span);
            e = Expr {
                kind: ExprKind::Field(Box::new(e), field),
                span,
            };
        }
        if self.at(T::LParen)
            && let ExprKind::Name(name) = &e.kind
        {
            {
                let span = e.span;
                let name = name.name.clone();
                self.diagnostics.push(
                    Diagnostic::error(
                        Code::UnexpectedToken,
                        span,
                        "actions cannot be called inside an expression",
                    )
                    .with_hint(format!(
                        "call it on its own: `act A: y = {name}(…)`, then use `y`"
                    )),
                );
                return Err(Reported);
            }
        }
        Ok((e, depth))
    }

    pub(super) fn primary(&mut self) -> PResult<(Expr, u32)> {
        let tok = self.tokens[self.pos];
        let kind = match tok.kind {
            T::Keyword(K::True) => ExprKind::Bool(true),
            T::Keyword(K::False) => ExprKind::Bool(false),
            T::Int => match self.text_of(tok.span).parse::<i64>() {
                Ok(n) => ExprKind::Int(n),
                Err(_) => {
                    self.diagnostics.push(
                        Diagnostic::error(
                            Code::InvalidNumber,
                            tok.span,
                            "integer literal is too large",
                        )
                        .with_hint(format!("integers are 64-bit: at most {}", i64::MAX)),
                    );
                    ExprKind::Error
                }
            },
            T::Float => ExprKind::Float(self.text_of(tok.span).parse().unwrap_or(f64::NAN)),
            T::Str | T::TripleStr => {
                let lit = strings::decode(
                    self.text,
                    tok.span,
                    tok.kind == T::TripleStr,
                    &mut self.diagnostics,
                );
                ExprKind::Str(lit)
            }
            T::Ident
                if self.peek_at(1) == T::LParen && Cpl::NAMES.contains(&self.text_of(tok.span)) =>
            {
                return self.cpl();
            }
            T::Ident => ExprKind::Name(Ident {
                name: self.text_of(tok.span).to_owned(),
                span: tok.span,
            }),
            T::LParen => {
                self.bump();
                let (inner, depth) = self.expr_depth()?;
                let end = self.expect(T::RParen)?;
                self.check_expr_depth(depth + 1, tok.span)?;
                return Ok((
                    Expr {
                        kind: ExprKind::Paren(Box::new(inner)),
                        span: tok.span.to(end),
                    },
                    depth + 1,
                ));
            }
            T::LBracket => {
                self.expect(T::LBracket)?;
                let mut items = Vec::new();
                let mut depth = 0;
                while !self.at(T::RBracket) {
                    let (item, d) = self.expr_depth()?;
                    depth = depth.max(d);
                    items.push(item);
                    if !self.eat(T::Comma) && !self.at(T::RBracket) {
                        return Err(self.error_expected("`,` or `]`"));
                    }
                }
                self.bump();
                self.check_expr_depth(depth + 1, tok.span)?;
                return Ok((
                    Expr {
                        kind: ExprKind::List(items),
                        span: tok.span.to(self.prev_span()),
                    },
                    depth + 1,
                ));
            }
            _ => return Err(self.error_expected("an expression")),
        };
        self.bump();
        Ok((
            Expr {
                kind,
                span: tok.span,
            },
            1,
        ))
    }
}

const CMP_PREC: u8 = 3;

fn binary_op(kind: T) -> Option<(BinaryOp, u8)> {
    Some(match kind {
        T::Keyword(K::Or) => (BinaryOp::Or, 1),
        T::Keyword(K::And) => (BinaryOp::And, 2),
        T::EqEq => (BinaryOp::Eq, CMP_PREC),
        T::NotEq => (BinaryOp::Ne, CMP_PREC),
        T::Lt => (BinaryOp::Lt, CMP_PREC),
        T::Le => (BinaryOp::Le, CMP_PREC),
        T::Gt => (BinaryOp::Gt, CMP_PREC),
        T::Ge => (BinaryOp::Ge, CMP_PREC),
        T::Plus => (BinaryOp::Add, 4),
        T::Minus => (BinaryOp::Sub, 4),
        T::Star => (BinaryOp::Mul, 5),
        T::Slash => (BinaryOp::Div, 5),
        T::Percent => (BinaryOp::Rem, 5),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::{Parsed, parse};

    /// The depth of an expression tree, iteratively (the point of the bound is
    /// that nothing else needs to be).
    fn tree_depth(e: &Expr) -> u32 {
        let mut max = 0;
        let mut stack = vec![(e, 1u32)];
        while let Some((e, d)) = stack.pop() {
            max = max.max(d);
            match &e.kind {
                ExprKind::Field(x, _) | ExprKind::Unary(_, x) | ExprKind::Paren(x) => {
                    stack.push((x, d + 1));
                }
                ExprKind::Binary(_, l, r) => {
                    stack.push((l, d + 1));
                    stack.push((r, d + 1));
                }
                ExprKind::List(items) => stack.extend(items.iter().map(|i| (i, d + 1))),
                _ => {}
            }
        }
        max
    }

    fn act_expr(parsed: &Parsed) -> Option<&Expr> {
        let Item::Workflow(w) = parsed.file.items.first()? else {
            return None;
        };
        match &w.body.stmts.first()?.kind {
            StmtKind::Act {
                rhs: ActRhs::Expr(e),
                ..
            } => Some(e),
            _ => None,
        }
    }

    fn workflow_with(expr: &str) -> String {
        format!("workflow w(x: Int @ A) {{\n  act A: y = {expr}\n  return y @ A\n}}\n")
    }

    fn too_deep(parsed: &Parsed) -> Vec<&Diagnostic> {
        parsed
            .diagnostics
            .iter()
            .filter(|d| d.message == "expression is too deep")
            .collect()
    }

    #[test]
    fn chains_up_to_the_bound_parse_and_longer_ones_are_reported_once() {
        let n = MAX_EXPR_DEPTH as usize;
        // n terms: n - 1 operators, depth n (the leaves count one).
        let text = workflow_with(&vec!["x"; n].join(" + "));
        let parsed = parse(&text);
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        assert_eq!(tree_depth(act_expr(&parsed).unwrap()), MAX_EXPR_DEPTH);

        let text = workflow_with(&vec!["x"; 1_000_000].join(" + "));
        let parsed = parse(&text);
        let reported = too_deep(&parsed);
        assert_eq!(reported.len(), 1, "{:?}", parsed.diagnostics);
        // Located at the operator that crosses the bound: the n-th `+`.
        let at = reported[0].span.start as usize;
        assert_eq!(&text[at..at + 1], "+");
        assert_eq!(text[..at].matches('+').count(), n - 1);
        // The statement after the chain is parsed again.
        let Item::Workflow(w) = &parsed.file.items[0] else {
            panic!()
        };
        assert!(matches!(
            w.body.stmts.last().unwrap().kind,
            StmtKind::Return(_)
        ));
    }

    #[test]
    fn field_chains_parentheses_unary_and_lists_count_towards_the_bound() {
        let deep = [
            format!("x{}", ".a".repeat(10_000)),
            format!("x{}", " * x".repeat(10_000)),
            format!("{}x", "not ".repeat(10_000)),
            format!("{}x{}", "(".repeat(10_000), ")".repeat(10_000)),
            format!("{}x{}", "[".repeat(10_000), "]".repeat(10_000)),
            // Mixed: parentheses around chains, each below the bound alone.
            format!("({}x){}", "x - ".repeat(150), " - x".repeat(150)),
        ];
        for expr in &deep {
            let parsed = parse(&workflow_with(expr));
            assert!(
                parsed
                    .diagnostics
                    .iter()
                    .any(|d| d.message.contains("too deep")),
                "{:?} on {}",
                parsed.diagnostics,
                &expr[..40.min(expr.len())]
            );
            if let Some(e) = act_expr(&parsed) {
                assert!(tree_depth(e) <= MAX_EXPR_DEPTH);
            }
        }
        let ok = format!("x{}", ".a".repeat(MAX_EXPR_DEPTH as usize - 1));
        let parsed = parse(&workflow_with(&ok));
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
    }
}
