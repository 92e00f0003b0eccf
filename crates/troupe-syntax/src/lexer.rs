//! The lexer: source text to tokens. Never fails; bad characters become
//! `Error` tokens with a diagnostic, and an unterminated string ends at the end
//! of its line (or of the file, for `"""`).

use crate::{Code, Diagnostic, Span};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokenKind {
    Ident,
    Keyword(Keyword),
    Int,
    Float,
    /// `"…"`; the span includes the quotes.
    Str,
    /// `"""…"""`; the span includes the quotes.
    TripleStr,
    LParen,
    RParen,
    LBrace,
    RBrace,
    LBracket,
    RBracket,
    Comma,
    Colon,
    Semi,
    Assign,
    EqEq,
    NotEq,
    Lt,
    Le,
    Gt,
    Ge,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Arrow,
    At,
    Dot,
    Error,
    Eof,
}

macro_rules! keywords {
    ($($variant:ident = $text:literal),* $(,)?) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Keyword { $($variant),* }

        impl Keyword {
            /// Every keyword, in the order LANGUAGE.md §1 lists them.
            pub const ALL: &'static [Keyword] = &[$(Keyword::$variant),*];

            pub fn from_text(text: &str) -> Option<Keyword> {
                match text { $($text => Some(Keyword::$variant),)* _ => None }
            }
            pub const fn as_str(self) -> &'static str {
                match self { $(Keyword::$variant => $text),* }
            }
        }
    };
}

keywords! {
    Workflow = "workflow", Lifelines = "lifelines", Msg = "msg", Act = "act", If = "if",
    Else = "else", While = "while", Exit = "exit", Return = "return", Enum = "enum",
    Record = "record", Llm = "llm", Pure = "pure", Effect = "effect", Human = "human",
    Tool = "tool", Mcp = "mcp", Extern = "extern", True = "true", False = "false",
    And = "and", Or = "or", Not = "not",
    // LANGUAGE.md §6: the keywords of the extensions.
    Par = "par", Coregion = "coregion", For = "for", In = "in", Call = "call",
    Import = "import", Planner = "planner",
}

/// The text of every keyword: words that are not identifiers (for tools that
/// write troupe source, such as the MCP importer).
pub const KEYWORDS: &[&str] = &{
    let mut out = [""; Keyword::ALL.len()];
    let mut i = 0;
    while i < out.len() {
        out[i] = Keyword::ALL[i].as_str();
        i += 1;
    }
    out
};

/// Whether `text` is a keyword of the language.
pub fn is_keyword(text: &str) -> bool {
    Keyword::from_text(text).is_some()
}

impl TokenKind {
    /// How the token is named in "expected …, found …" messages.
    pub fn describe(self) -> &'static str {
        match self {
            TokenKind::Ident => "a name",
            TokenKind::Keyword(k) => k.as_str(),
            TokenKind::Int => "an integer",
            TokenKind::Float => "a number",
            TokenKind::Str | TokenKind::TripleStr => "a string",
            TokenKind::LParen => "`(`",
            TokenKind::RParen => "`)`",
            TokenKind::LBrace => "`{`",
            TokenKind::RBrace => "`}`",
            TokenKind::LBracket => "`[`",
            TokenKind::RBracket => "`]`",
            TokenKind::Comma => "`,`",
            TokenKind::Colon => "`:`",
            TokenKind::Semi => "`;`",
            TokenKind::Assign => "`=`",
            TokenKind::EqEq => "`==`",
            TokenKind::NotEq => "`!=`",
            TokenKind::Lt => "`<`",
            TokenKind::Le => "`<=`",
            TokenKind::Gt => "`>`",
            TokenKind::Ge => "`>=`",
            TokenKind::Plus => "`+`",
            TokenKind::Minus => "`-`",
            TokenKind::Star => "`*`",
            TokenKind::Slash => "`/`",
            TokenKind::Percent => "`%`",
            TokenKind::Arrow => "`->`",
            TokenKind::At => "`@`",
            TokenKind::Dot => "`.`",
            TokenKind::Error => "an invalid character",
            TokenKind::Eof => "the end of the file",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    pub kind: TokenKind,
    pub span: Span,
}

/// The UTF-8 byte order mark, allowed (and ignored) at the start of a file.
pub const BOM: char = '\u{feff}';

/// Splits `text` into tokens, ending with one `Eof` token.
pub fn lex(text: &str, diagnostics: &mut Vec<Diagnostic>) -> Vec<Token> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::with_capacity(text.len() / 4);
    // A UTF-8 byte order mark (editors on Windows write one) is skipped, not
    // stripped, so that spans stay offsets into the text as given.
    let mut i = if text.starts_with(BOM) {
        BOM.len_utf8()
    } else {
        0
    };
    while i < bytes.len() {
        let start = i;
        let b = bytes[i];
        let kind = match b {
            b' ' | b'\t' | b'\r' | b'\n' => {
                i += 1;
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                match Keyword::from_text(&text[start..i]) {
                    Some(k) => TokenKind::Keyword(k),
                    None => TokenKind::Ident,
                }
            }
            b'0'..=b'9' => {
                while i < bytes.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
                if bytes.get(i) == Some(&b'.') && bytes.get(i + 1).is_some_and(u8::is_ascii_digit) {
                    i += 1;
                    while i < bytes.len() && bytes[i].is_ascii_digit() {
                        i += 1;
                    }
                    TokenKind::Float
                } else {
                    TokenKind::Int
                }
            }
            b'"' if text[i..].starts_with("\"\"\"") => {
                match text[i + 3..].find("\"\"\"") {
                    Some(rel) => i += 3 + rel + 3,
                    None => {
                        i = bytes.len();
                        diagnostics.push(
                            Diagnostic::error(
                                Code::UnterminatedString,
                                Span::new(start, start + 3),
                                "unterminated `\"\"\"` string",
                            )
                            .with_label("this string is never closed")
                            .with_hint("close it with `\"\"\"`"),
                        );
                    }
                }
                TokenKind::TripleStr
            }
            b'"' => {
                i += 1;
                loop {
                    match bytes.get(i) {
                        None | Some(b'\n') => {
                            diagnostics.push(
                                Diagnostic::error(Code::UnterminatedString, Span::new(start, i), "unterminated string")
                                    .with_label("this string is never closed")
                                    .with_hint("close it with `\"` on the same line, or use `\"\"\"…\"\"\"` for text over several lines"),
                            );
                            break;
                        }
                        Some(b'\\') => i += 2.min(bytes.len() - i),
                        Some(b'"') => {
                            i += 1;
                            break;
                        }
                        Some(_) => i += 1,
                    }
                }
                TokenKind::Str
            }
            b'\'' => {
                // A single-quoted string: one diagnostic for the whole thing.
                i += 1;
                while i < bytes.len() && bytes[i] != b'\'' && bytes[i] != b'\n' {
                    i += 1;
                }
                if bytes.get(i) == Some(&b'\'') {
                    i += 1;
                }
                diagnostics.push(
                    Diagnostic::error(
                        Code::InvalidCharacter,
                        Span::new(start, i),
                        "strings use double quotes",
                    )
                    .with_hint(format!(
                        "write \"{}\"",
                        text[start + 1..i].trim_end_matches('\'')
                    )),
                );
                TokenKind::Error
            }
            _ => {
                let (kind, len) = punct(&bytes[i..]);
                match kind {
                    Some(kind) => {
                        i += len;
                        kind
                    }
                    None => {
                        let ch = text[i..].chars().next().unwrap_or('\u{fffd}');
                        i += ch.len_utf8();
                        let hint = match ch {
                            '!' => Some("write `not` for negation, or `!=` for inequality"),
                            '&' => Some("write `and`"),
                            '|' => Some("write `or`"),
                            '#' => Some("comments start with `//`"),
                            _ => None,
                        };
                        let mut d = Diagnostic::error(
                            Code::InvalidCharacter,
                            Span::new(start, i),
                            format!("unexpected character {ch:?}"),
                        );
                        if let Some(hint) = hint {
                            d = d.with_hint(hint);
                        }
                        diagnostics.push(d);
                        TokenKind::Error
                    }
                }
            }
        };
        tokens.push(Token {
            kind,
            span: Span::new(start, i),
        });
    }
    tokens.push(Token {
        kind: TokenKind::Eof,
        span: Span::new(bytes.len(), bytes.len()),
    });
    tokens
}

fn punct(rest: &[u8]) -> (Option<TokenKind>, usize) {
    use TokenKind as T;
    let two = |k| (Some(k), 2);
    let one = |k| (Some(k), 1);
    match rest {
        [b'=', b'=', ..] => two(T::EqEq),
        [b'!', b'=', ..] => two(T::NotEq),
        [b'<', b'=', ..] => two(T::Le),
        [b'>', b'=', ..] => two(T::Ge),
        [b'-', b'>', ..] => two(T::Arrow),
        [b'(', ..] => one(T::LParen),
        [b')', ..] => one(T::RParen),
        [b'{', ..] => one(T::LBrace),
        [b'}', ..] => one(T::RBrace),
        [b'[', ..] => one(T::LBracket),
        [b']', ..] => one(T::RBracket),
        [b',', ..] => one(T::Comma),
        [b':', ..] => one(T::Colon),
        [b';', ..] => one(T::Semi),
        [b'=', ..] => one(T::Assign),
        [b'<', ..] => one(T::Lt),
        [b'>', ..] => one(T::Gt),
        [b'+', ..] => one(T::Plus),
        [b'-', ..] => one(T::Minus),
        [b'*', ..] => one(T::Star),
        [b'/', ..] => one(T::Slash),
        [b'%', ..] => one(T::Percent),
        [b'@', ..] => one(T::At),
        [b'.', ..] => one(T::Dot),
        _ => (None, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<TokenKind> {
        lex(text, &mut Vec::new())
            .into_iter()
            .map(|t| t.kind)
            .collect()
    }

    #[test]
    fn lexes_numbers_operators_and_keywords() {
        use TokenKind as T;
        assert_eq!(
            kinds("while k<=0.5 @ B -> t.id // note"),
            vec![
                T::Keyword(Keyword::While),
                T::Ident,
                T::Le,
                T::Float,
                T::At,
                T::Ident,
                T::Arrow,
                T::Ident,
                T::Dot,
                T::Ident,
                T::Eof
            ]
        );
    }

    #[test]
    fn the_keyword_list_is_the_lexers() {
        assert_eq!(KEYWORDS.len(), Keyword::ALL.len());
        for k in KEYWORDS {
            assert!(is_keyword(k), "{k}");
            assert_eq!(
                kinds(k)[0],
                TokenKind::Keyword(Keyword::from_text(k).unwrap())
            );
        }
        assert!(KEYWORDS.contains(&"workflow") && !is_keyword("workflows"));
    }

    #[test]
    fn a_byte_order_mark_is_skipped_and_spans_stay_offsets_of_the_text() {
        let text = "\u{feff}msg A";
        let mut diags = Vec::new();
        let tokens = lex(text, &mut diags);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(tokens[0].kind, TokenKind::Keyword(Keyword::Msg));
        assert_eq!(&text[tokens[0].span.range()], "msg");
        assert_eq!(tokens[0].span.start, 3);
        // Only at the start: elsewhere it is an invalid character.
        lex("msg \u{feff}", &mut diags);
        assert_eq!(diags.len(), 1);
    }

    #[test]
    fn unterminated_string_stops_at_line_end() {
        let mut diags = Vec::new();
        let tokens = lex("\"abc\nmsg", &mut diags);
        assert_eq!(diags.len(), 1);
        assert_eq!(diags[0].code, Code::UnterminatedString);
        assert_eq!(tokens[1].kind, TokenKind::Keyword(Keyword::Msg));
    }
}
