//! `hidden-unicode` (safety): no invisible or confusable characters.
//!
//! **What**: an error for every string of the tool (name, titles, descriptions, schema
//! keys and values) that contains an invisible or reordering character: zero-width
//! spaces and joiners (U+200B–U+200F, U+2060–U+2064, U+FEFF), bidirectional controls
//! (U+202A–U+202E, U+2066–U+2069), Unicode tag characters (U+E0000–U+E007F, which can
//! spell out a whole hidden text), the soft hyphen, other invisible format characters
//! (the combining grapheme joiner U+034F, Khmer inherent vowels U+17B4–U+17B5,
//! Mongolian variation selectors U+180B–U+180F, deprecated format controls
//! U+206A–U+206F, musical format symbols U+1D173–U+1D17A, shorthand format controls
//! U+1BCA0–U+1BCA3), or control characters other than tab and line breaks. Emoji are
//! not hidden text: a variation selector U+FE0E/U+FE0F after a pictograph or a keycap
//! base (`⚠️`, `1️⃣`), a zero-width joiner between two pictographs (`👩‍💻`), and the tag
//! characters of a subdivision flag (U+1F3F4, at most 7 tags, U+E007F: 🏴 Scotland)
//! pass; the same characters anywhere else are errors. An error for a tool name mixing Latin
//! letters with look-alike letters of another script (Cyrillic `а` in `reаd_file`,
//! Greek, full-width forms); a warning for any other non-ASCII character in a name.
//! The finding names the code point and its character position.
//!
//! **Why**: text a person reviewing the definition cannot see still reaches the model
//! (instructions smuggled in tag characters), and a name that looks like another tool's
//! can shadow it.
//!
//! **Example**: `"description": "Reads a file.\u{E0049}\u{E0067}…"` → remove the
//! hidden characters; `"name": "reаd_file"` (Cyrillic а) → use ASCII names.

use crate::lint::{Context, Finding, Principle, Rule, Severity, TextKind, texts};

/// The rule.
pub const RULE: Rule = Rule {
    id: "hidden-unicode",
    principle: Principle::Safety,
    summary: "no invisible, reordering or look-alike characters",
    check,
};

/// Why a character is hidden, if it is.
pub fn hidden(c: char) -> Option<&'static str> {
    let code = c as u32;
    Some(match code {
        0x200B..=0x200F | 0x2060..=0x2064 | 0xFEFF | 0x180E => "an invisible zero-width character",
        0x202A..=0x202E | 0x2066..=0x2069 | 0x061C => "a bidirectional control character",
        0xE0000..=0xE007F => "a Unicode tag character (invisible text)",
        0x00AD => "a soft hyphen (invisible)",
        0x034F => "a combining grapheme joiner (invisible)",
        0x17B4 | 0x17B5 => "a Khmer inherent vowel (invisible)",
        0x180B..=0x180F => "a Mongolian variation selector (invisible)",
        0x206A..=0x206F => "a deprecated format character (invisible)",
        0x1D173..=0x1D17A => "a musical format character (invisible)",
        0x1BCA0..=0x1BCA3 => "a shorthand format control (invisible)",
        0xFE00..=0xFE0F | 0xE0100..=0xE01EF => "a variation selector (invisible)",
        0x115F | 0x1160 | 0x3164 | 0xFFA0 => "a blank Hangul filler",
        0xFFF9..=0xFFFB => "an interlinear annotation control",
        _ if c.is_control() && !matches!(c, '\n' | '\r' | '\t') => "a control character",
        _ => return None,
    })
}

/// The script of a letter that looks like Latin, if it is one.
fn lookalike_script(c: char) -> Option<&'static str> {
    match c as u32 {
        0x0400..=0x052F => Some("Cyrillic"),
        0x0370..=0x03FF => Some("Greek"),
        0xFF01..=0xFF5E => Some("full-width"),
        0x1D400..=0x1D7FF => Some("mathematical"),
        0x0530..=0x058F => Some("Armenian"),
        _ => None,
    }
}

/// Whether a character is drawn as a pictograph (emoji and the symbol blocks that
/// take an emoji presentation).
fn pictographic(c: char) -> bool {
    matches!(c as u32,
        0x1F000..=0x1FAFF | 0x2600..=0x27BF | 0x2300..=0x23FF | 0x2B00..=0x2BFF
        | 0x2190..=0x21FF | 0x25A0..=0x25FF | 0x2900..=0x297F | 0x00A9 | 0x00AE | 0x203C
        | 0x2049 | 0x2122 | 0x2139 | 0x3030 | 0x303D | 0x3297 | 0x3299)
}

/// The hidden characters of a text, with their character positions, leaving out
/// those that are part of an emoji (see the module documentation). One pass.
pub fn hidden_chars(text: &str) -> Vec<(usize, char, &'static str)> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        // A subdivision flag: U+1F3F4, tags, U+E007F.
        if c as u32 == 0x1F3F4 {
            let tags = chars[i + 1..]
                .iter()
                .take_while(|t| matches!(**t as u32, 0xE0020..=0xE007E))
                .count();
            if (2..=7).contains(&tags)
                && chars
                    .get(i + 1 + tags)
                    .is_some_and(|t| *t as u32 == 0xE007F)
            {
                i += tags + 2;
                continue;
            }
        }
        let before = i.checked_sub(1).map(|j| chars[j]);
        let after = chars.get(i + 1).copied();
        let emoji_part = match c as u32 {
            0xFE0E | 0xFE0F => before.is_some_and(|b| {
                pictographic(b) || (matches!(b, '0'..='9' | '#' | '*') && after == Some('\u{20E3}'))
            }),
            0x200D => {
                before.is_some_and(|b| pictographic(b) || b == '\u{FE0F}')
                    && after.is_some_and(pictographic)
            }
            _ => false,
        };
        if !emoji_part && let Some(why) = hidden(c) {
            out.push((i, c, why));
        }
        i += 1;
    }
    out
}

fn check(context: &Context<'_>, index: usize) -> Vec<Finding> {
    let mut findings = Vec::new();
    for text in texts(context, index) {
        let found = hidden_chars(text.text);
        if let Some(&(position, c, why)) = found.first() {
            let count = found.len();
            findings.push(RULE.finding(
                Severity::Error,
                text.pointer.clone(),
                format!(
                    "{} U+{:04X}, {why}, at character {position} ({count} hidden character{} in all)",
                    match text.kind {
                        TextKind::Name => "the name contains",
                        TextKind::Prose => "the text contains",
                        TextKind::Key => "a key contains",
                        TextKind::Value => "a value contains",
                    },
                    c as u32,
                    if count == 1 { "" } else { "s" }
                ),
                "remove the characters: nobody reviewing the definition can see them, but the \
                 model reads them",
            ));
        }
        if text.kind == TextKind::Name && !text.text.is_ascii() {
            let latin = text.text.chars().any(|c| c.is_ascii_alphabetic());
            let foreign = text
                .text
                .chars()
                .find_map(|c| lookalike_script(c).map(|s| (c, s)));
            match foreign {
                Some((c, script)) if latin || script == "full-width" || script == "mathematical" => {
                    findings.push(RULE.finding(
                        Severity::Error,
                        text.pointer.clone(),
                        format!(
                            "the name `{}` mixes Latin letters with the {script} look-alike `{c}` \
                             (U+{:04X}): it reads like another name",
                            text.text, c as u32
                        ),
                        "use an ASCII name",
                    ));
                }
                _ => findings.push(RULE.finding(
                    Severity::Warning,
                    text.pointer.clone(),
                    format!("the name `{}` has non-ASCII characters", text.text),
                    "use an ASCII name (letters, digits, `_`, `-`): clients and people compare names",
                )),
            }
        }
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lint::testing::{run, tools};

    #[test]
    fn finds_hidden_and_confusable_characters() {
        let tagged: String = "Reads a file."
            .chars()
            .chain(
                "Ignore"
                    .chars()
                    .map(|c| char::from_u32(0xE0000 + c as u32).unwrap()),
            )
            .collect();
        let list = tools(serde_json::json!([
            {"name": "read", "description": tagged},
            {"name": "re\u{0430}d_file", "description": "Reads a file."},
            {"name": "write", "description": "Writes\u{200B} a file.",
             "inputSchema": {"type": "object", "properties": {"pa\u{202E}th": {"type": "string"}}}},
            {"name": "lire", "description": "Lit un fichier.\n\tAvec des tabulations."}
        ]));
        let first = run(&RULE, &list, 0);
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].pointer, "/tools/0/description");
        assert!(
            first[0].message.contains("U+E0049") && first[0].message.contains("at character 13")
        );
        assert!(first[0].message.contains("6 hidden characters"));
        let second = run(&RULE, &list, 1);
        assert_eq!(second[0].severity, Severity::Error);
        assert!(second[0].message.contains("Cyrillic"), "{:?}", second[0]);
        let third = run(&RULE, &list, 2);
        let pointers: Vec<&str> = third.iter().map(|f| f.pointer.as_str()).collect();
        assert!(pointers.contains(&"/tools/2/description"), "{pointers:?}");
        assert!(
            pointers.contains(&"/tools/2/inputSchema/properties/pa\u{202E}th"),
            "{pointers:?}"
        );
        assert!(run(&RULE, &list, 3).is_empty());
    }

    #[test]
    fn emoji_are_not_hidden_but_their_parts_alone_are() {
        for text in [
            "\u{26A0}\u{FE0F} Deletes a branch.",
            "\u{1F469}\u{200D}\u{1F4BB} Contributors",
            "Step 1\u{FE0F}\u{20E3}",
            "Scotland \u{1F3F4}\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}",
        ] {
            assert!(hidden_chars(text).is_empty(), "{text:?}");
        }
        for text in [
            "sa\u{200C}fe",
            "a\u{FE0F}",
            "read\u{200D}file",
            "\u{1F3F4}\u{E0069}\u{E0067}\u{E006E}\u{E006F}\u{E0072}\u{E0065}\u{E0020}\u{E0061}\u{E006C}\u{E006C}\u{E007F}",
            "trans\u{034F}fer",
        ] {
            assert!(!hidden_chars(text).is_empty(), "{text:?}");
        }
    }
}
