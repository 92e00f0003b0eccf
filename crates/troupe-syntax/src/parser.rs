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
//!
//! This file holds the token cursor, the bounds and recovery; the grammar's
//! levels are child modules, each a part of [`Parser`]'s `impl`:
//! `decls.rs` (the top level), `stmts.rs` (blocks and statements), `expr.rs`
//! (expressions) and `cpl.rs` (the causal forms of guards). Declarations
//! use statements and expressions, statements use expressions, and the
//! helpers more than one level needs stay here, so no level needs one above
//! it.

use crate::ast::*;
use crate::lexer::{Keyword as K, Token, TokenKind as T, lex};
use crate::{Code, Diagnostic, Span};

mod cpl;
mod decls;
mod expr;
mod stmts;

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

    // ---- shared by declarations and statements -------------------------

    fn ident_list(&mut self) -> PResult<Vec<Ident>> {
        let mut list = vec![self.ident("a lifeline name")?];
        while self.eat(T::Comma) {
            list.push(self.ident("a lifeline name")?);
        }
        Ok(list)
    }
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

    #[test]
    fn a_byte_order_mark_is_accepted() {
        let text = "\u{feff}workflow w(x: Int @ A) {\n  act A: y = x + 1\n  return y @ A\n}\n";
        let parsed = parse(text);
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        let Item::Workflow(w) = &parsed.file.items[0] else {
            panic!()
        };
        assert_eq!(&text[w.name.span.range()], "w");
    }
}
