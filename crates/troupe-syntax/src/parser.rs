//! A recursive-descent parser with error recovery.
//!
//! Each declaration and each statement reports at most one syntax error, then
//! the parser skips to the next point where it can resume (a declaration
//! keyword at the top level, a statement keyword or a closing brace inside a
//! block), so one run reports every independent error. Every loop consumes a
//! token or stops, and nesting is bounded, so no input makes it hang or
//! overflow the stack.
//!
//! Two bounds make every later pass stack-safe without making it iterative:
//! the parser's own recursion (blocks, parentheses, lists, unary operators,
//! list types) is bounded by [`MAX_DEPTH`], and the *depth of every
//! expression tree* it builds is bounded by [`MAX_EXPR_DEPTH`]. The second
//! matters because chains of one precedence (`x + x + …`, `x.a.a…`) are
//! parsed by a loop but become left-nested trees that the checker, the
//! evaluator, the canonical printer and `Drop` all walk recursively. So a
//! 1,000,000-term chain is reported ("expression is too deep", at the
//! operator where it crosses the bound) instead of built.

use crate::ast::*;
use crate::lexer::{Keyword as K, Token, TokenKind as T, lex};
use crate::{Code, Diagnostic, Span, strings};

mod cpl;

/// Deeper nesting than this is reported instead of recursed into.
pub const MAX_DEPTH: u32 = 200;

/// The deepest expression tree the parser builds: every node counts one level
/// (an operator, a field access, a unary operator, parentheses, a list), so a
/// chain `a + b + c` is 3 deep. Deeper expressions are reported, not built,
/// which bounds the recursion of every pass over expressions downstream.
pub const MAX_EXPR_DEPTH: u32 = 256;

/// The result of parsing one source text.
#[derive(Debug, Clone)]
pub struct Parsed {
    pub file: File,
    pub diagnostics: Vec<Diagnostic>,
}

/// Parses a whole file. Never fails: errors become diagnostics.
pub fn parse(text: &str) -> Parsed {
    let mut diagnostics = Vec::new();
    let tokens = lex(text, &mut diagnostics);
    parse_tokens(text, tokens, diagnostics)
}

/// Parses tokens lexed from (a part of) `text`, whose spans are offsets
/// into `text`; `diagnostics` are the lexer's.
pub(crate) fn parse_tokens(text: &str, tokens: Vec<Token>, diagnostics: Vec<Diagnostic>) -> Parsed {
    let mut p = Parser {
        text,
        tokens,
        pos: 0,
        diagnostics,
        depth: 0,
    };
    let file = p.file();
    let mut diagnostics = p.diagnostics;
    diagnostics.sort_by_key(|d| (d.span.start, d.span.end));
    Parsed { file, diagnostics }
}

/// Marks that an error was reported and the caller should recover.
struct Reported;

type PResult<T> = Result<T, Reported>;

struct Parser<'a> {
    text: &'a str,
    tokens: Vec<Token>,
    pos: usize,
    diagnostics: Vec<Diagnostic>,
    depth: u32,
}

impl Parser<'_> {
    // ---- token helpers -------------------------------------------------

    fn peek(&self) -> T {
        self.tokens[self.pos].kind
    }

    fn peek_at(&self, n: usize) -> T {
        self.tokens.get(self.pos + n).map_or(T::Eof, |t| t.kind)
    }

    fn span(&self) -> Span {
        self.tokens[self.pos].span
    }

    /// The span of the token before the current one.
    fn prev_span(&self) -> Span {
        self.tokens[self.pos.saturating_sub(1)].span
    }

    fn bump(&mut self) -> Token {
        let tok = self.tokens[self.pos];
        if tok.kind != T::Eof {
            self.pos += 1;
        }
        tok
    }

    fn at(&self, kind: T) -> bool {
        self.peek() == kind
    }

    fn at_kw(&self, kw: K) -> bool {
        self.peek() == T::Keyword(kw)
    }

    fn eat(&mut self, kind: T) -> bool {
        if self.at(kind) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn text_of(&self, span: Span) -> &str {
        &self.text[span.range()]
    }

    fn error_expected(&mut self, what: &str) -> Reported {
        let tok = self.tokens[self.pos];
        let found = match tok.kind {
            T::Ident => format!("`{}`", self.text_of(tok.span)),
            T::Keyword(k) => format!("keyword `{}`", k.as_str()),
            other => other.describe().to_owned(),
        };
        // Lexer errors were reported already, and an unterminated string
        // swallows the rest of the file: don't pile on.
        let after_unterminated = tok.kind == T::Eof
            && self
                .diagnostics
                .iter()
                .any(|d| d.code == Code::UnterminatedString);
        if tok.kind != T::Error && !after_unterminated {
            // When the offending token starts a later line, the mistake is at
            // the end of the line before (a missing `)`, say): point there.
            let prev = self.prev_span();
            let on_later_line = self.pos > 0
                && self.text[prev.end as usize..tok.span.start as usize].contains('\n');
            let (span, label) = if on_later_line {
                (
                    Span::new(prev.end as usize, prev.end as usize),
                    format!("expected {what} after this"),
                )
            } else {
                (tok.span, format!("expected {what}"))
            };
            let mut d = Diagnostic::error(
                Code::UnexpectedToken,
                span,
                format!("expected {what}, found {found}"),
            )
            .with_label(label);
            if let Some(hint) = self.hint_for(tok.kind, what) {
                d = d.with_hint(hint);
            }
            self.diagnostics.push(d);
        }
        Reported
    }

    fn hint_for(&self, found: T, what: &str) -> Option<String> {
        match found {
            T::Keyword(k) if what.contains("name") => Some(format!(
                "`{}` is a keyword and cannot be used as a name",
                k.as_str()
            )),
            T::Keyword(K::Else) => Some("`else` must follow the closing `}` of an `if`".into()),
            T::Keyword(K::Exit) => Some("`exit` must follow the closing `}` of a `while`".into()),
            _ => None,
        }
    }

    fn expect(&mut self, kind: T) -> PResult<Span> {
        if self.at(kind) {
            Ok(self.bump().span)
        } else {
            Err(self.error_expected(kind.describe()))
        }
    }

    fn ident(&mut self, what: &str) -> PResult<Ident> {
        if self.at(T::Ident) {
            let span = self.bump().span;
            Ok(Ident {
                name: self.text_of(span).to_owned(),
                span,
            })
        } else {
            Err(self.error_expected(what))
        }
    }

    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            let span = self.span();
            self.diagnostics.push(
                Diagnostic::error(Code::UnexpectedToken, span, "nesting is too deep").with_hint(
                    format!("expressions and blocks nest at most {MAX_DEPTH} levels"),
                ),
            );
            self.depth -= 1;
            return Err(Reported);
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    // ---- recovery ------------------------------------------------------

    /// Skips tokens, balancing brackets, up to the next token at depth 0 for
    /// which `stop` holds, or a `}` that closes the enclosing block. Callers
    /// make sure that a statement or item that fails consumes a token.
    fn skip_until(&mut self, stop: impl Fn(T) -> bool) {
        let mut depth = 0usize;
        loop {
            let kind = self.peek();
            if kind == T::Eof || (depth == 0 && (stop(kind) || kind == T::RBrace)) {
                return;
            }
            match kind {
                T::LBrace | T::LParen | T::LBracket => depth += 1,
                T::RBrace | T::RParen | T::RBracket => depth = depth.saturating_sub(1),
                _ => {}
            }
            self.bump();
        }
    }

    // ---- declarations --------------------------------------------------

    fn file(&mut self) -> File {
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

    fn error_unclosed(&mut self, open: Span) -> Span {
        let span = self.span();
        self.diagnostics.push(
            Diagnostic::error(
                Code::UnexpectedToken,
                span,
                format!("expected `}}`, found {}", self.peek().describe()),
            )
            .with_related(open, "this `{` is never closed"),
        );
        span
    }

    fn ident_list(&mut self) -> PResult<Vec<Ident>> {
        let mut list = vec![self.ident("a lifeline name")?];
        while self.eat(T::Comma) {
            list.push(self.ident("a lifeline name")?);
        }
        Ok(list)
    }

    // ---- statements ----------------------------------------------------

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
    fn block_contents(&mut self) -> Block {
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

    // ---- expressions ---------------------------------------------------

    fn expr_list(&mut self, open: T, close: T) -> PResult<Vec<Expr>> {
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
    fn expr_depth(&mut self) -> PResult<(Expr, u32)> {
        self.enter()?;
        let e = self.binary(0);
        self.leave();
        e
    }

    /// `depth` is the depth of a node about to be built at `span`: past the
    /// bound it is reported, and the caller gives up on the expression (the
    /// statement's recovery then skips the rest of it, by a loop).
    fn check_expr_depth(&mut self, depth: u32, span: Span) -> PResult<()> {
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

    fn unary(&mut self) -> PResult<(Expr, u32)> {
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

    fn primary(&mut self) -> PResult<(Expr, u32)> {
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

fn is_item_start(kind: T) -> bool {
    matches!(
        kind,
        T::Keyword(
            K::Enum
                | K::Record
                | K::Llm
                | K::Pure
                | K::Effect
                | K::Human
                | K::Tool
                | K::Mcp
                | K::Workflow
                | K::Import
                | K::Planner
        )
    )
}

fn is_stmt_start(kind: T) -> bool {
    matches!(
        kind,
        T::Keyword(
            K::Msg
                | K::Act
                | K::If
                | K::While
                | K::For
                | K::Call
                | K::Par
                | K::Coregion
                | K::Return
                | K::Lifelines
        )
    ) || is_item_start(kind)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn a_byte_order_mark_is_accepted() {
        let text = format!("\u{feff}{}", workflow_with("x + 1"));
        let parsed = parse(&text);
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        let Item::Workflow(w) = &parsed.file.items[0] else {
            panic!()
        };
        assert_eq!(&text[w.name.span.range()], "w");
    }
}
