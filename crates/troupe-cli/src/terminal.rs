//! A human inbox on the terminal: each task is asked on stderr and answered
//! on stdin, one at a time.

use std::io::{BufRead, Write};
use std::sync::Arc;
use tokio::sync::Mutex;
use troupe_check::ir::AnswerKind;
use troupe_llm::BoxFuture;
use troupe_runtime::{HumanInbox, HumanTask};

#[derive(Debug, Default, Clone)]
pub struct TerminalInbox {
    /// One question at a time, even when several lifelines ask at once.
    turn: Arc<Mutex<()>>,
    /// To read answers by their type (re-asked until one fits).
    types: Arc<troupe_check::TypeTable>,
}

impl TerminalInbox {
    pub fn new(types: Arc<troupe_check::TypeTable>) -> TerminalInbox {
        TerminalInbox {
            turn: Arc::default(),
            types,
        }
    }
}

impl HumanInbox for TerminalInbox {
    fn ask(&self, task: HumanTask) -> BoxFuture<'static, Result<serde_json::Value, String>> {
        let turn = self.turn.clone();
        let types = self.types.clone();
        Box::pin(async move {
            let _guard = turn.lock().await;
            tokio::task::spawn_blocking(move || ask_blocking(&task, &types))
                .await
                .map_err(|e| format!("the terminal prompt failed: {e}"))?
        })
    }
}

fn ask_blocking(
    task: &HumanTask,
    types: &troupe_check::TypeTable,
) -> Result<serde_json::Value, String> {
    let stdin = std::io::stdin();
    let mut stderr = std::io::stderr();
    let _ = writeln!(
        stderr,
        "\n── task for {} ({}) ──\n{}",
        sanitize(&task.lifeline),
        sanitize(&task.action),
        sanitize(&task.prompt)
    );
    loop {
        let hint = match task.answer {
            AnswerKind::Confirm => "[y/n]".to_owned(),
            AnswerKind::Select => {
                for (i, o) in task.options.iter().enumerate() {
                    let _ = writeln!(stderr, "  {}) {}", i + 1, sanitize(o));
                }
                "[number or name]".to_owned()
            }
            AnswerKind::Edit => {
                let _ = writeln!(
                    stderr,
                    "current text (an empty line keeps it):\n{}",
                    sanitize(task.prefill.as_deref().unwrap_or(""))
                );
                "[new text]".to_owned()
            }
            AnswerKind::Input => "[answer]".to_owned(),
            AnswerKind::Acknowledge => "[press Enter to acknowledge]".to_owned(),
        };
        let _ = write!(stderr, "{hint} > ");
        let _ = stderr.flush();
        let mut line = String::new();
        match stdin.lock().read_line(&mut line) {
            Ok(0) => {
                return Err(format!(
                    "stdin closed before `{}` was answered",
                    task.action
                ));
            }
            Ok(_) => {}
            Err(e) => return Err(format!("cannot read the answer: {e}")),
        }
        let line = line.trim_end_matches(['\n', '\r']);
        let answer = match task.answer {
            AnswerKind::Acknowledge => Some(serde_json::Value::Object(serde_json::Map::new())),
            AnswerKind::Confirm => match line.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" => Some(serde_json::Value::Bool(true)),
                "n" | "no" | "false" => Some(serde_json::Value::Bool(false)),
                _ => None,
            },
            AnswerKind::Select => {
                let t = line.trim();
                let by_number = t
                    .parse::<usize>()
                    .ok()
                    .and_then(|i| task.options.get(i.wrapping_sub(1)));
                by_number
                    .or_else(|| task.options.iter().find(|o| o.as_str() == t))
                    .map(|o| serde_json::Value::String(o.clone()))
            }
            AnswerKind::Edit if line.is_empty() => {
                task.prefill.clone().map(serde_json::Value::String)
            }
            // Read by the task's type, as `troupe answer --value` reads it.
            AnswerKind::Edit | AnswerKind::Input => {
                match troupe_check::Value::parse(line, &task.ty, types) {
                    Ok(v) => Some(v.to_json(types)),
                    Err(e) => {
                        let _ = writeln!(
                            stderr,
                            "{}: this task expects an answer of type {}",
                            sanitize(&e),
                            types.display(&task.ty)
                        );
                        continue;
                    }
                }
            }
        };
        match answer {
            Some(a) => return Ok(a),
            None => {
                let _ = writeln!(stderr, "not understood; try again");
            }
        }
    }
}

/// Text from users, models, tools and stores, made safe for a terminal:
/// control characters (escape sequences among them) are shown escaped
/// (`\x1b`), so no text can move the cursor, recolour or retitle it.
pub fn sanitize(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_unsafe(c) {
            use std::fmt::Write as _;
            let _ = match c as u32 {
                n @ 0..=0xff => write!(out, "\\x{n:02x}"),
                n => write!(out, "\\u{{{n:x}}}"),
            };
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// C0 and C1 controls (but tab and newline), DEL, and the bidirectional
/// overrides that reorder what a terminal shows.
fn is_unsafe(c: char) -> bool {
    (c.is_control() && c != '\t' && c != '\n')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::sanitize;

    #[test]
    fn escapes_control_sequences() {
        assert_eq!(sanitize("plain text\tok"), "plain text\tok");
        assert_eq!(sanitize("\x1b[31mred\x1b[0m"), "\\x1b[31mred\\x1b[0m");
        assert_eq!(sanitize("a\rb\x07"), "a\\x0db\\x07");
        assert_eq!(sanitize("\u{9b}2J"), "\\x9b2J");
        assert_eq!(sanitize("x\u{202e}y"), "x\\u{202e}y");
    }
}
