//! `hidden-unicode` (safety): no invisible or confusable characters.
//!
//! **What**: an error for every string of the tool (name, titles, descriptions, schema
//! keys and values) that contains an invisible or reordering character: zero-width
//! spaces and joiners (U+200B–U+200F, U+2060–U+2064, U+FEFF), bidirectional controls
//! (U+202A–U+202E, U+2066–U+2069), Unicode tag characters (U+E0000–U+E007F, which can
//! spell out a whole hidden text), the soft hyphen, other format characters, or control
//! characters other than tab and line breaks; an error for a tool name mixing Latin
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

fn check(context: &Context<'_>, index: usize) -> Vec<Finding> {
    let mut findings = Vec::new();
    for text in texts(context, index) {
        if let Some((position, c, why)) = text
            .text
            .chars()
            .enumerate()
            .find_map(|(i, c)| hidden(c).map(|why| (i, c, why)))
        {
            let count = text.text.chars().filter(|&c| hidden(c).is_some()).count();
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
}
