//! Byte ranges into one source text, and the line index that turns them into
//! `line:column` positions for people.

use serde::Serialize;

/// A half-open byte range `start..end` into one source text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord, Serialize)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        Span {
            start: clamp(start),
            end: clamp(end.max(start)),
        }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }

    pub fn len(self) -> usize {
        (self.end - self.start) as usize
    }

    pub fn is_empty(self) -> bool {
        self.start == self.end
    }
}

fn clamp(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// A 1-based line and column (columns count characters, not bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LineCol {
    pub line: u32,
    pub column: u32,
}

/// Maps byte offsets of one text to lines and columns.
#[derive(Debug, Clone)]
pub struct LineIndex {
    line_starts: Vec<u32>,
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| clamp(i + 1)));
        LineIndex { line_starts }
    }

    /// The position of `offset` in `text` (the text this index was built from).
    pub fn line_col(&self, text: &str, offset: u32) -> LineCol {
        let line = self
            .line_starts
            .partition_point(|&s| s <= offset)
            .saturating_sub(1);
        let mut start = self.line_starts[line] as usize;
        if start == 0 && text.starts_with(crate::lexer::BOM) {
            // The byte order mark is not a column people can see.
            start = crate::lexer::BOM.len_utf8();
        }
        let end = (offset as usize).min(text.len()).max(start);
        let column = text
            .get(start..end)
            .map_or(end - start, |s| s.chars().count());
        LineCol {
            line: clamp(line + 1),
            column: clamp(column + 1),
        }
    }

    /// The 1-based line of `offset`.
    pub fn line(&self, offset: u32) -> u32 {
        clamp(self.line_starts.partition_point(|&s| s <= offset))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_are_one_based_and_count_chars() {
        let text = "ab\nçd\n";
        let index = LineIndex::new(text);
        assert_eq!(index.line_col(text, 0), LineCol { line: 1, column: 1 });
        assert_eq!(index.line_col(text, 3), LineCol { line: 2, column: 1 });
        // 'ç' is two bytes: 'd' is the second character of line 2.
        assert_eq!(index.line_col(text, 5), LineCol { line: 2, column: 2 });
        assert_eq!(index.line(7), 3);
    }

    #[test]
    fn a_byte_order_mark_takes_no_column() {
        let text = "\u{feff}ab\nc";
        let index = LineIndex::new(text);
        assert_eq!(index.line_col(text, 3), LineCol { line: 1, column: 1 });
        assert_eq!(index.line_col(text, 4), LineCol { line: 1, column: 2 });
        assert_eq!(index.line_col(text, 0), LineCol { line: 1, column: 1 });
        assert_eq!(index.line_col(text, 6), LineCol { line: 2, column: 1 });
    }
}
