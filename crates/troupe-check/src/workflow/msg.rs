//! `msg`: a message between two lifelines, its payload matched item by
//! item against what the receiver binds (a name binds, any other
//! expression must equal what was sent).

use crate::Checker;
use crate::expr::Scope;
use crate::ir::{self, LifelineId, MsgItem, Recv, StmtKind};
use crate::value::Value;
use troupe_syntax::ast::{self, ExprKind as AK};
use troupe_syntax::{Code, Diagnostic, Span};

impl Checker<'_> {
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
}
