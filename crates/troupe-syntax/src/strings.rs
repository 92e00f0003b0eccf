//! Decoding string literals: escapes, `{name}` holes, and the common
//! indentation of triple-quoted strings. Spans of holes point into the source.

use crate::ast::{Ident, StrLit, StrPart};
use crate::{Code, Diagnostic, Span};

/// Decodes the string token at `span` of `text` (quotes included).
pub fn decode(text: &str, span: Span, triple: bool, diagnostics: &mut Vec<Diagnostic>) -> StrLit {
    let raw = &text[span.range()];
    let quote = if triple { 3 } else { 1 };
    let body_start = span.start as usize + quote.min(raw.len());
    let closed = raw.len() >= 2 * quote && raw.ends_with(if triple { "\"\"\"" } else { "\"" });
    let body_end = if closed {
        span.end as usize - quote
    } else {
        span.end as usize
    };
    let body_end = body_end.max(body_start);

    // The body of an unterminated string is the rest of the line or file:
    // its braces and backslashes are not worth reporting on top.
    let mut discarded = Vec::new();
    let diagnostics = if closed { diagnostics } else { &mut discarded };
    let mut out = Decoder {
        text,
        parts: Vec::new(),
        current: String::new(),
        diagnostics,
    };
    if triple {
        for (start, end) in dedented_lines(text, body_start, body_end) {
            out.run(start, end);
        }
    } else {
        out.run(body_start, body_end);
    }
    out.finish()
}

/// The byte ranges of the lines of a triple-quoted body after dropping a blank
/// first and last line and the indentation common to all non-blank lines.
/// Newlines between lines are emitted as ranges of their own.
fn dedented_lines(text: &str, start: usize, end: usize) -> Vec<(usize, usize)> {
    let body = &text[start..end];
    let mut lines: Vec<(usize, usize)> = Vec::new();
    let mut offset = start;
    for line in body.split('\n') {
        lines.push((offset, offset + line.len()));
        offset += line.len() + 1;
    }
    let blank = |&(s, e): &(usize, usize)| text[s..e].trim().is_empty();
    if lines.len() > 1 && lines.first().is_some_and(blank) {
        lines.remove(0);
    }
    if lines.len() > 1 && lines.last().is_some_and(blank) {
        lines.pop();
    }
    let indent = lines
        .iter()
        .filter(|l| !blank(l))
        .map(|&(s, e)| text[s..e].len() - text[s..e].trim_start_matches([' ', '\t']).len())
        .min()
        .unwrap_or(0);
    let mut out = Vec::with_capacity(lines.len() * 2);
    for (i, &(s, e)) in lines.iter().enumerate() {
        if i > 0 {
            // The newline that ended the previous line.
            let nl = lines[i - 1].1;
            out.push((nl, nl + 1));
        }
        let e = e - usize::from(text[s..e].ends_with('\r'));
        out.push(((s + indent).min(e), e));
    }
    out
}

struct Decoder<'a, 'd> {
    text: &'a str,
    parts: Vec<StrPart>,
    current: String,
    diagnostics: &'d mut Vec<Diagnostic>,
}

impl Decoder<'_, '_> {
    fn run(&mut self, start: usize, end: usize) {
        let s = &self.text[start..end];
        let mut chars = s.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            let at = start + i;
            match c {
                '\\' => match chars.next() {
                    Some((_, 'n')) => self.current.push('\n'),
                    Some((_, 't')) => self.current.push('\t'),
                    Some((_, '"')) => self.current.push('"'),
                    Some((_, '\\')) => self.current.push('\\'),
                    Some((j, other)) => {
                        self.diagnostics.push(
                            Diagnostic::error(
                                Code::InvalidEscape,
                                Span::new(at, start + j + other.len_utf8()),
                                format!("unknown escape `\\{other}`"),
                            )
                            .with_hint("the escapes are \\n \\t \\\" \\\\ and {{ }} for braces"),
                        );
                    }
                    None => {}
                },
                '{' if chars.peek().map(|&(_, c)| c) == Some('{') => {
                    chars.next();
                    self.current.push('{');
                }
                '}' if chars.peek().map(|&(_, c)| c) == Some('}') => {
                    chars.next();
                    self.current.push('}');
                }
                '{' => {
                    let rest = &s[i + 1..];
                    let name_len = rest
                        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .unwrap_or(rest.len());
                    let name = &rest[..name_len];
                    let valid = !name.is_empty()
                        && !name.starts_with(|c: char| c.is_ascii_digit())
                        && rest[name_len..].starts_with('}');
                    if valid {
                        if !self.current.is_empty() {
                            self.parts
                                .push(StrPart::Text(std::mem::take(&mut self.current)));
                        }
                        let name_start = at + 1;
                        self.parts.push(StrPart::Hole(Ident {
                            name: name.to_owned(),
                            span: Span::new(name_start, name_start + name_len),
                        }));
                        for _ in 0..=name_len {
                            chars.next();
                        }
                    } else {
                        self.diagnostics.push(
                            Diagnostic::error(
                                Code::InvalidEscape,
                                Span::new(at, at + 1),
                                "a lone `{` in a string",
                            )
                            .with_hint(
                                "write `{name}` to insert a parameter, or `{{` for a literal brace",
                            ),
                        );
                    }
                }
                '}' => {
                    self.diagnostics.push(
                        Diagnostic::error(
                            Code::InvalidEscape,
                            Span::new(at, at + 1),
                            "a lone `}` in a string",
                        )
                        .with_hint("write `}}` for a literal brace"),
                    );
                }
                c => self.current.push(c),
            }
        }
    }

    fn finish(mut self) -> StrLit {
        if !self.current.is_empty() || self.parts.is_empty() {
            self.parts.push(StrPart::Text(self.current));
        }
        StrLit { parts: self.parts }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(src: &str) -> (StrLit, Vec<Diagnostic>) {
        let mut diags = Vec::new();
        let triple = src.starts_with("\"\"\"");
        let lit = decode(src, Span::new(0, src.len()), triple, &mut diags);
        (lit, diags)
    }

    #[test]
    fn escapes_and_holes() {
        let (lit, diags) = decode_all(r#""a\n{x} {{y}} \"q\"""#);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(lit.parts.len(), 3);
        assert_eq!(lit.parts[0], StrPart::Text("a\n".into()));
        assert!(
            matches!(&lit.parts[1], StrPart::Hole(id) if id.name == "x" && id.span == Span::new(5, 6))
        );
        assert_eq!(lit.parts[2], StrPart::Text(" {y} \"q\"".into()));
    }

    #[test]
    fn triple_quoted_strips_common_indentation() {
        let src = "\"\"\"\n    Review this plan.\n      {plan}\n  \"\"\"";
        let (lit, diags) = decode_all(src);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(lit.parts[0], StrPart::Text("Review this plan.\n  ".into()));
        assert!(matches!(&lit.parts[1], StrPart::Hole(id) if &src[id.span.range()] == "plan"));
    }

    #[test]
    fn bad_escapes_and_braces_are_reported() {
        let (_, diags) = decode_all(r#""\q { }""#);
        assert_eq!(diags.len(), 3);
        assert!(diags.iter().all(|d| d.code == Code::InvalidEscape));
    }
}
