//! Declarations: the top level of a file (`import`, `mcp`, `enum`,
//! `record`, the action kinds, `planner`) and a `workflow`'s header. Each
//! declaration reports at most one error; the file loop then skips to the
//! next declaration keyword.

use super::{PResult, Parser, Reported, is_item_start, is_stmt_start};
use crate::ast::*;
use crate::lexer::{Keyword as K, TokenKind as T};
use crate::{Code, Diagnostic, strings};

impl Parser<'_> {
    pub(super) fn file(&mut self) -> File {
        let mut items = Vec::new();
        while !self.at(T::Eof) {
            let before = self.pos;
            match self.item() {
                Ok(Some(item)) => items.push(item),
                Ok(None) => {}
                Err(Reported) => self.skip_until(is_item_start),
            }
            if self.at(T::RBrace) && self.pos == before {
                let span = self.bump().span;
                self.diagnostics.push(
                    Diagnostic::error(Code::UnexpectedToken, span, "unmatched `}`")
                        .with_label("nothing to close here"),
                );
            } else if self.pos == before {
                self.bump();
            }
        }
        File { items }
    }

    fn item(&mut self) -> PResult<Option<Item>> {
        Ok(Some(match self.peek() {
            T::Keyword(K::Enum) => Item::Enum(self.enum_decl()?),
            T::Keyword(K::Record) => Item::Record(self.record_decl()?),
            T::Keyword(K::Llm) => Item::Action(self.action_decl(ActionKind::Llm)?),
            T::Keyword(K::Pure) => Item::Action(self.action_decl(ActionKind::Pure)?),
            T::Keyword(K::Effect) => Item::Action(self.action_decl(ActionKind::Effect)?),
            T::Keyword(K::Human) => Item::Action(self.action_decl(ActionKind::Human)?),
            T::Keyword(K::Tool) => Item::Action(self.action_decl(ActionKind::Tool)?),
            T::Keyword(K::Workflow) => Item::Workflow(self.workflow()?),
            T::Keyword(K::Mcp) => Item::Mcp(self.mcp_decl()?),
            T::Keyword(K::Import) => Item::Import(self.import_decl()?),
            T::Keyword(K::Planner) => Item::Action(self.action_decl(ActionKind::Planner)?),
            T::Semi => {
                self.bump();
                return Ok(None);
            }
            _ => {
                let d = self.error_expected("a declaration (`enum`, `record`, `llm`, `pure`, `effect`, `human`, `tool`, `workflow` or `import`)");
                if matches!(
                    self.peek(),
                    T::Keyword(K::Msg | K::Act | K::If | K::While | K::For | K::Call | K::Return)
                ) && let Some(last) = self.diagnostics.last_mut()
                {
                    last.hint =
                        Some("statements belong inside a `workflow name(…) { … }` body".into());
                }
                return Err(d);
            }
        }))
    }

    /// `import "path.troupe"`
    fn import_decl(&mut self) -> PResult<ImportDecl> {
        let start = self.bump().span;
        if !matches!(self.peek(), T::Str | T::TripleStr) {
            let err = self.error_expected("the path of a file, as a string");
            if let Some(last) = self.diagnostics.last_mut() {
                last.hint = Some("write `import \"lib/review.troupe\"`".into());
            }
            return Err(err);
        }
        let tok = self.bump();
        let lit = strings::decode(
            self.text,
            tok.span,
            tok.kind == T::TripleStr,
            &mut self.diagnostics,
        );
        let path = lit.as_plain();
        if path.is_none() {
            self.diagnostics.push(
                Diagnostic::error(
                    Code::UnexpectedToken,
                    tok.span,
                    "the path of an `import` cannot have `{…}` holes",
                )
                .with_hint("write the path literally; escape braces as `{{` and `}}`"),
            );
        }
        Ok(ImportDecl {
            path,
            path_span: tok.span,
            span: start.to(tok.span),
        })
    }

    fn mcp_decl(&mut self) -> PResult<McpDecl> {
        let start = self.bump().span;
        let name = self.ident("a server name")?;
        self.expect(T::LBrace)?;
        let fields = self.field_list()?;
        let end = self.prev_span();
        Ok(McpDecl {
            name,
            fields,
            span: start.to(end),
        })
    }

    /// `name: value …` up to and including the closing `}` (the `{` is eaten).
    fn field_list(&mut self) -> PResult<Vec<ActionField>> {
        let mut fields = Vec::new();
        while !self.at(T::RBrace) {
            // `lifelines:` of a `planner` (LANGUAGE.md §6) is a keyword
            // used as a field name: only before a `:`, where no statement
            // can start.
            let field_name = if self.at(T::Keyword(K::Lifelines)) {
                let span = self.bump().span;
                Ident {
                    name: "lifelines".into(),
                    span,
                }
            } else {
                self.ident("a field name such as `prompt`")?
            };
            self.expect(T::Colon)?;
            let value = self.expr()?;
            fields.push(ActionField {
                name: field_name,
                value,
            });
            self.eat(T::Comma);
            self.eat(T::Semi);
            if self.at(T::Eof) {
                return Err(self.error_expected("`}`"));
            }
        }
        self.bump();
        Ok(fields)
    }

    fn enum_decl(&mut self) -> PResult<EnumDecl> {
        let start = self.bump().span;
        let name = self.ident("an enum name")?;
        self.expect(T::LBrace)?;
        let mut values = Vec::new();
        while !self.at(T::RBrace) {
            values.push(self.ident("an enum value")?);
            if !self.eat(T::Comma) && !self.at(T::RBrace) {
                return Err(self.error_expected("`,` or `}`"));
            }
        }
        let end = self.bump().span;
        Ok(EnumDecl {
            name,
            values,
            span: start.to(end),
        })
    }

    fn record_decl(&mut self) -> PResult<RecordDecl> {
        let start = self.bump().span;
        let name = self.ident("a record name")?;
        self.expect(T::LBrace)?;
        let mut fields = Vec::new();
        while !self.at(T::RBrace) {
            fields.push(self.param()?);
            if !self.eat(T::Comma) && !self.at(T::RBrace) {
                return Err(self.error_expected("`,` or `}`"));
            }
        }
        let end = self.bump().span;
        Ok(RecordDecl {
            name,
            fields,
            span: start.to(end),
        })
    }

    fn param(&mut self) -> PResult<Param> {
        let name = self.ident("a name")?;
        self.expect(T::Colon)?;
        let ty = self.type_expr()?;
        let default = if self.eat(T::Assign) {
            Some(self.expr()?)
        } else {
            None
        };
        Ok(Param { name, ty, default })
    }

    fn type_expr(&mut self) -> PResult<TypeExpr> {
        if self.at(T::LBracket) {
            let start = self.bump().span;
            self.enter()?;
            let inner = self.type_expr();
            self.leave();
            let inner = inner?;
            let end = self.expect(T::RBracket)?;
            Ok(TypeExpr::List(Box::new(inner), start.to(end)))
        } else {
            Ok(TypeExpr::Named(self.ident("a type")?))
        }
    }

    /// `(a: T, …)` with an optional trailing comma.
    fn param_list(&mut self) -> PResult<Vec<Param>> {
        self.expect(T::LParen)?;
        let mut params = Vec::new();
        while !self.at(T::RParen) {
            params.push(self.param()?);
            if !self.eat(T::Comma) && !self.at(T::RParen) {
                return Err(self.error_expected("`,` or `)`"));
            }
        }
        self.bump();
        Ok(params)
    }

    fn action_decl(&mut self, kind: ActionKind) -> PResult<ActionDecl> {
        let start = self.bump().span;
        let name = self.ident("an action name")?;
        let params = self.param_list()?;
        let outputs = if self.eat(T::Arrow) {
            if self.at(T::LParen) {
                Outputs::Named(self.param_list()?)
            } else {
                Outputs::Single(self.type_expr()?)
            }
        } else {
            Outputs::None
        };
        let body = match self.peek() {
            T::Keyword(K::Extern) => {
                let span = self.bump().span;
                let idempotent = self.at(T::Ident) && self.text_of(self.span()) == "idempotent";
                if idempotent {
                    self.bump();
                }
                ActionBody::Extern { span, idempotent }
            }
            T::Assign => {
                self.bump();
                ActionBody::Expr(self.expr()?)
            }
            T::LBrace => {
                let open = self.bump().span;
                let fields = self.field_list()?;
                ActionBody::Fields(fields, open.to(self.prev_span()))
            }
            _ => ActionBody::Missing(self.prev_span()),
        };
        let end = self.prev_span();
        Ok(ActionDecl {
            kind,
            name,
            params,
            outputs,
            body,
            span: start.to(end),
        })
    }

    fn workflow(&mut self) -> PResult<WorkflowDecl> {
        let start = self.bump().span;
        let name = self.ident("a workflow name")?;
        self.expect(T::LParen)?;
        let mut inputs = Vec::new();
        while !self.at(T::RParen) {
            let input_name = self.ident("an input name")?;
            self.expect(T::Colon)?;
            let ty = self.type_expr()?;
            if !self.at(T::At) {
                let err = self.error_expected("`@` and the lifeline that owns the input");
                if let Some(last) = self.diagnostics.last_mut() {
                    last.hint = Some(format!("write `{}: … @ Lifeline`", input_name.name));
                }
                return Err(err);
            }
            self.bump();
            let lifeline = self.ident("a lifeline name")?;
            inputs.push(WorkflowInput {
                name: input_name,
                ty,
                lifeline,
            });
            if !self.eat(T::Comma) && !self.at(T::RParen) {
                return Err(self.error_expected("`,` or `)`"));
            }
        }
        self.bump();
        self.expect(T::LBrace)?;
        let open = self.prev_span();
        let mut lifelines = None;
        while self.eat(T::Semi) {}
        if self.at_kw(K::Lifelines) {
            self.bump();
            match self.ident_list() {
                Ok(list) => lifelines = Some(list),
                Err(Reported) => self.skip_until(is_stmt_start),
            }
        }
        let mut body = self.block_contents();
        let close = if self.at(T::RBrace) {
            self.bump().span
        } else {
            self.error_unclosed(open)
        };
        body.span = open.to(close);
        Ok(WorkflowDecl {
            name,
            inputs,
            lifelines,
            body,
            span: start.to(close),
        })
    }
}
