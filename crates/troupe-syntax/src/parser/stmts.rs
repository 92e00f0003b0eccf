//! Statements and blocks: `msg`, `act`, `if`, `while`, `for`, `call`,
//! `par`, `coregion`, `return` and `lifelines`. A statement that fails
//! becomes an error node and the block goes on at the next statement
//! keyword or closing brace, so one block reports every independent error.

use super::{PResult, Parser, Reported, is_item_start, is_stmt_start};
use crate::Span;
use crate::ast::*;
use crate::lexer::{Keyword as K, TokenKind as T};

impl Parser<'_> {
    /// `{ stmt* }`
    fn block(&mut self) -> PResult<Block> {
        let open = self.expect(T::LBrace)?;
        self.enter()?;
        let mut block = self.block_contents();
        self.leave();
        let close = if self.at(T::RBrace) {
            self.bump().span
        } else {
            self.error_unclosed(open)
        };
        block.span = open.to(close);
        Ok(block)
    }

    /// Statements up to (not including) the closing `}` or the end.
    pub(super) fn block_contents(&mut self) -> Block {
        let mut stmts = Vec::new();
        loop {
            while self.eat(T::Semi) {}
            if self.at(T::RBrace) || self.at(T::Eof) {
                break;
            }
            if is_item_start(self.peek()) && !self.at_kw(K::Lifelines) {
                // A declaration keyword: the block was most likely left unclosed.
                break;
            }
            let start = self.span();
            let before = self.pos;
            match self.stmt() {
                Ok(kind) => stmts.push(Stmt {
                    kind,
                    span: start.to(self.prev_span()),
                }),
                Err(Reported) => {
                    self.skip_until(is_stmt_start);
                    stmts.push(Stmt {
                        kind: StmtKind::Error,
                        span: start.to(self.prev_span()),
                    });
                }
            }
            if self.pos == before {
                self.bump();
            }
        }
        Block {
            stmts,
            span: Span::default(),
        }
    }

    fn stmt(&mut self) -> PResult<StmtKind> {
        match self.peek() {
            T::Keyword(K::Msg) => self.msg_stmt(),
            T::Keyword(K::Act) => self.act_stmt(),
            T::Keyword(K::If) => self.if_stmt(),
            T::Keyword(K::While) => {
                self.bump();
                let guard = self.expr()?;
                let owner = self.owner()?;
                let body = self.block()?;
                let exit = if self.eat(T::Keyword(K::Exit)) {
                    Some(self.block()?)
                } else {
                    None
                };
                Ok(StmtKind::While {
                    guard,
                    owner,
                    body,
                    exit,
                })
            }
            T::Keyword(K::For) => {
                self.bump();
                let var = self.ident("the loop variable")?;
                if !self.eat(T::Keyword(K::In)) {
                    let err = self.error_expected("`in`");
                    if let Some(last) = self.diagnostics.last_mut() {
                        last.hint =
                            Some(format!("write `for {} in list @ Owner {{ … }}`", var.name));
                    }
                    return Err(err);
                }
                let list = self.ident("the list variable")?;
                let owner = self.owner()?;
                let body = self.block()?;
                Ok(StmtKind::For {
                    var,
                    list,
                    owner,
                    body,
                })
            }
            T::Keyword(K::Call) => self.call_stmt(),
            T::Keyword(K::Par) => {
                self.bump();
                let mut branches = vec![self.block()?];
                while self.eat(T::Keyword(K::And)) {
                    branches.push(self.block()?);
                }
                Ok(StmtKind::Par { branches })
            }
            T::Keyword(K::Coregion) => {
                self.bump();
                Ok(StmtKind::Coregion {
                    body: self.block()?,
                })
            }
            T::Keyword(K::Return) => {
                self.bump();
                let mut items = Vec::new();
                if self.eat(T::LParen) {
                    loop {
                        items.push(self.return_item()?);
                        if !self.eat(T::Comma) {
                            break;
                        }
                    }
                    self.expect(T::RParen)?;
                } else {
                    items.push(self.return_item()?);
                }
                Ok(StmtKind::Return(items))
            }
            T::Keyword(K::Lifelines) => {
                self.bump();
                Ok(StmtKind::Lifelines(self.ident_list()?))
            }
            T::Ident if matches!(self.peek_at(1), T::LParen) && self.peek_at(2) == T::Ident => {
                let err = self.error_expected(
                    "a statement (`msg`, `act`, `if`, `while`, `for`, `call` or `return`)",
                );
                if let Some(last) = self.diagnostics.last_mut() {
                    last.hint = Some("a message is written `msg A(x) -> B(y)`".into());
                }
                Err(err)
            }
            _ => Err(self.error_expected(
                "a statement (`msg`, `act`, `if`, `while`, `for`, `call` or `return`)",
            )),
        }
    }

    fn owner(&mut self) -> PResult<Ident> {
        if !self.at(T::At) {
            let err = self.error_expected("`@` and the lifeline that decides");
            if let Some(last) = self.diagnostics.last_mut() {
                last.hint = Some("a condition is owned by one lifeline: `if c @ B { … }`".into());
            }
            return Err(err);
        }
        self.bump();
        self.ident("a lifeline name")
    }

    fn if_stmt(&mut self) -> PResult<StmtKind> {
        self.bump();
        let guard = self.expr()?;
        let owner = self.owner()?;
        let then = self.block()?;
        let otherwise = if self.eat(T::Keyword(K::Else)) {
            if self.at_kw(K::If) {
                // `else if` is sugar for `else { if … }`.
                let start = self.span();
                self.enter()?;
                let nested = self.if_stmt();
                self.leave();
                let nested = nested?;
                let span = start.to(self.prev_span());
                Some(Block {
                    stmts: vec![Stmt { kind: nested, span }],
                    span,
                })
            } else {
                Some(self.block()?)
            }
        } else {
            None
        };
        Ok(StmtKind::If {
            guard,
            owner,
            then,
            otherwise,
        })
    }

    /// `call w[L = A, …](args…) -> (y @ A, …)`; the result list may be
    /// left out (no results) or be one `y @ A` without parentheses.
    fn call_stmt(&mut self) -> PResult<StmtKind> {
        self.bump();
        let workflow = self.ident("the name of the workflow to call")?;
        if !self.at(T::LBracket) {
            let err = self.error_expected("`[` and the map of the callee's lifelines");
            if let Some(last) = self.diagnostics.last_mut() {
                last.hint = Some(format!(
                    "map every lifeline of `{}` to one of this workflow: `call {}[L = A](…)`",
                    workflow.name, workflow.name
                ));
            }
            return Err(err);
        }
        self.bump();
        let mut map = Vec::new();
        while !self.at(T::RBracket) {
            let callee = self.ident("a lifeline of the called workflow")?;
            self.expect(T::Assign)?;
            let caller = self.ident("a lifeline of this workflow")?;
            map.push((callee, caller));
            if !self.eat(T::Comma) && !self.at(T::RBracket) {
                return Err(self.error_expected("`,` or `]`"));
            }
        }
        self.bump();
        let args = self.expr_list(T::LParen, T::RParen)?;
        let mut results = Vec::new();
        if self.eat(T::Arrow) {
            if self.eat(T::LParen) {
                while !self.at(T::RParen) {
                    results.push(self.return_item()?);
                    if !self.eat(T::Comma) && !self.at(T::RParen) {
                        return Err(self.error_expected("`,` or `)`"));
                    }
                }
                self.bump();
            } else {
                results.push(self.return_item()?);
            }
        }
        Ok(StmtKind::Call {
            workflow,
            map,
            args,
            results,
        })
    }

    fn return_item(&mut self) -> PResult<ReturnItem> {
        let var = self.ident("a variable name")?;
        if !self.at(T::At) {
            let err = self.error_expected("`@` and the lifeline that holds the result");
            if let Some(last) = self.diagnostics.last_mut() {
                last.hint = Some(format!("write `return {} @ Lifeline`", var.name));
            }
            return Err(err);
        }
        self.bump();
        let lifeline = self.ident("a lifeline name")?;
        Ok(ReturnItem { var, lifeline })
    }

    fn msg_stmt(&mut self) -> PResult<StmtKind> {
        self.bump();
        let from = self.ident("the sending lifeline")?;
        let send = self.expr_list(T::LParen, T::RParen)?;
        if !self.at(T::Arrow) {
            return Err(self.error_expected("`->`"));
        }
        self.bump();
        let to = self.ident("the receiving lifeline")?;
        self.expect(T::LParen)?;
        let mut recv = Vec::new();
        while !self.at(T::RParen) {
            recv.push(self.recv_item()?);
            if !self.eat(T::Comma) && !self.at(T::RParen) {
                return Err(self.error_expected("`,` or `)`"));
            }
        }
        self.bump();
        Ok(StmtKind::Msg {
            from,
            send,
            to,
            recv,
        })
    }

    /// A receiver item: a name to bind or a literal to match.
    fn recv_item(&mut self) -> PResult<Expr> {
        match self.peek() {
            T::Ident
            | T::Int
            | T::Float
            | T::Str
            | T::TripleStr
            | T::Keyword(K::True | K::False) => self.primary().map(|(e, _)| e),
            T::Minus if matches!(self.peek_at(1), T::Int | T::Float) => {
                self.unary().map(|(e, _)| e)
            }
            _ => {
                let err = self.error_expected("a variable to bind or a literal to match");
                if let Some(last) = self.diagnostics.last_mut() {
                    last.hint = Some("the receiver side of a message binds names; compute values with `act` first".into());
                }
                Err(err)
            }
        }
    }

    fn act_stmt(&mut self) -> PResult<StmtKind> {
        self.bump();
        let at = self.ident("a lifeline name")?;
        if !self.at(T::Colon) {
            let err = self.error_expected("`:`");
            if let Some(last) = self.diagnostics.last_mut() {
                last.hint = Some(format!("write `act {}: y = f(x)`", at.name));
            }
            return Err(err);
        }
        self.bump();
        // `act A: f(x)` — a call with no outputs.
        if self.at(T::Ident) && self.peek_at(1) == T::LParen {
            let name = self.ident("an action name")?;
            let args = self.expr_list(T::LParen, T::RParen)?;
            return Ok(StmtKind::Act {
                at,
                targets: Vec::new(),
                rhs: ActRhs::Call { name, args },
            });
        }
        let mut targets = vec![self.ident("a variable name")?];
        while self.eat(T::Comma) {
            targets.push(self.ident("a variable name")?);
        }
        self.expect(T::Assign)?;
        let rhs = if self.at(T::Ident) && self.peek_at(1) == T::LParen {
            let name = self.ident("an action name")?;
            let args = self.expr_list(T::LParen, T::RParen)?;
            ActRhs::Call { name, args }
        } else {
            ActRhs::Expr(self.expr()?)
        };
        Ok(StmtKind::Act { at, targets, rhs })
    }
}
