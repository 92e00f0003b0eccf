//! `for var in list @ owner { body }`: checked as the loop it desugars to
//! (see [`ir::ForEach`]), its index and list hidden variables at the owner,
//! so the binding analysis treats it as it treats `while`.

use super::Partial;
use crate::Checker;
use crate::expr::Scope;
use crate::ir::{self, Call, StmtKind, VarId};
use crate::types::Type;
use crate::value::Value;
use troupe_syntax::ast::{self, ExprKind as AK};
use troupe_syntax::{Code, Diagnostic, Span};

impl Checker<'_> {
    /// `for var in list @ owner { body }`: see [`ir::ForEach`].
    pub(super) fn for_each(
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
}
