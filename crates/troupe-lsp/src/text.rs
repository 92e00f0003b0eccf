//! Positions: LSP `line`/`character` (UTF-16 code units) ↔ byte offsets, and
//! incremental edits of a document's text.
//!
//! Every conversion clamps: a position past the end of a line or of the text
//! maps to the nearest valid offset, never a panic.

use lsp_types::{Position, Range};
use troupe_syntax::Span;

/// Line starts of one text, for position conversions.
#[derive(Debug, Clone)]
pub struct Lines {
    starts: Vec<usize>,
}

impl Lines {
    pub fn new(text: &str) -> Lines {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Lines { starts }
    }

    /// The byte offset of `pos` in `text`, clamped to the text and to a
    /// character boundary.
    pub fn offset(&self, text: &str, pos: Position) -> usize {
        let line = pos.line as usize;
        let Some(&start) = self.starts.get(line) else {
            return text.len();
        };
        let end = self
            .starts
            .get(line + 1)
            .map_or(text.len(), |&next| next.saturating_sub(1));
        let line_text = text.get(start..end).unwrap_or("");
        let mut units = 0u32;
        for (i, c) in line_text.char_indices() {
            if units >= pos.character {
                return start + i;
            }
            units += c.len_utf16() as u32;
        }
        // Past the end of the line: the end (before a `\r` of CRLF stays
        // inside the line, which is what editors mean).
        end
    }

    /// The LSP position of byte `offset` (clamped).
    pub fn position(&self, text: &str, offset: usize) -> Position {
        let mut offset = offset.min(text.len());
        while offset > 0 && !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self
            .starts
            .partition_point(|&s| s <= offset)
            .saturating_sub(1);
        let start = self.starts.get(line).copied().unwrap_or(0).min(offset);
        let character = text
            .get(start..offset)
            .map_or(0, |s| s.chars().map(char::len_utf16).sum::<usize>());
        Position {
            line: u32::try_from(line).unwrap_or(u32::MAX),
            character: u32::try_from(character).unwrap_or(u32::MAX),
        }
    }

    pub fn range(&self, text: &str, span: Span) -> Range {
        Range {
            start: self.position(text, span.start as usize),
            end: self.position(text, span.end as usize),
        }
    }

    pub fn span(&self, text: &str, range: Range) -> Span {
        let a = self.offset(text, range.start);
        let b = self.offset(text, range.end);
        Span::new(a.min(b), a.max(b))
    }

    /// The byte offset where line `line` (0-based) starts, clamped.
    pub fn line_start(&self, line: usize) -> usize {
        self.starts
            .get(line)
            .copied()
            .unwrap_or_else(|| *self.starts.last().unwrap_or(&0))
    }

    pub fn line_of(&self, offset: usize) -> usize {
        self.starts
            .partition_point(|&s| s <= offset)
            .saturating_sub(1)
    }
}

/// Applies one `textDocument/didChange` content change to `text`: a range
/// replacement, or the whole text when `range` is `None`.
pub fn apply_change(text: &mut String, range: Option<Range>, new_text: &str) {
    match range {
        None => {
            text.clear();
            text.push_str(new_text);
        }
        Some(range) => {
            let lines = Lines::new(text);
            let span = lines.span(text, range);
            text.replace_range(span.range(), new_text);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(line: u32, character: u32) -> Position {
        Position { line, character }
    }

    #[test]
    fn utf16_columns_round_trip() {
        let text = "aé😀b\nxy";
        let lines = Lines::new(text);
        // 'a' 1 unit, 'é' 1 unit, '😀' 2 units.
        assert_eq!(lines.offset(text, pos(0, 4)), "aé😀".len());
        assert_eq!(lines.position(text, "aé😀".len()), pos(0, 4));
        assert_eq!(lines.offset(text, pos(1, 1)), text.len() - 1);
        // Inside the surrogate pair: the next character boundary.
        assert_eq!(lines.offset(text, pos(0, 3)), "aé😀".len());
    }

    #[test]
    fn out_of_range_positions_clamp() {
        let text = "ab\ncd";
        let lines = Lines::new(text);
        assert_eq!(lines.offset(text, pos(0, 99)), 2);
        assert_eq!(lines.offset(text, pos(42, 0)), text.len());
        assert_eq!(lines.position(text, 999), pos(1, 2));
    }

    #[test]
    fn incremental_changes_apply() {
        let mut text = String::from("msg A(x) -> B(x)\n");
        apply_change(
            &mut text,
            Some(Range {
                start: pos(0, 6),
                end: pos(0, 7),
            }),
            "case",
        );
        assert_eq!(text, "msg A(case) -> B(x)\n");
        apply_change(
            &mut text,
            Some(Range {
                start: pos(1, 0),
                end: pos(1, 0),
            }),
            "act B: y = x\n",
        );
        assert_eq!(text, "msg A(case) -> B(x)\nact B: y = x\n");
        apply_change(&mut text, None, "new");
        assert_eq!(text, "new");
    }
}
