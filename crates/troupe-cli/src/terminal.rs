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
}

impl HumanInbox for TerminalInbox {
    fn ask(&self, task: HumanTask) -> BoxFuture<'static, Result<serde_json::Value, String>> {
        let turn = self.turn.clone();
        Box::pin(async move {
            let _guard = turn.lock().await;
            tokio::task::spawn_blocking(move || ask_blocking(&task))
                .await
                .map_err(|e| format!("the terminal prompt failed: {e}"))?
        })
    }
}

fn ask_blocking(task: &HumanTask) -> Result<serde_json::Value, String> {
    let stdin = std::io::stdin();
    let mut stderr = std::io::stderr();
    let _ = writeln!(
        stderr,
        "\n── task for {} ({}) ──\n{}",
        task.lifeline, task.action, task.prompt
    );
    loop {
        let hint = match task.answer {
            AnswerKind::Confirm => "[y/n]".to_owned(),
            AnswerKind::Select => {
                for (i, o) in task.options.iter().enumerate() {
                    let _ = writeln!(stderr, "  {}) {o}", i + 1);
                }
                "[number or name]".to_owned()
            }
            AnswerKind::Edit => {
                let _ = writeln!(
                    stderr,
                    "current text (an empty line keeps it):\n{}",
                    task.prefill.as_deref().unwrap_or("")
                );
                "[new text]".to_owned()
            }
            AnswerKind::Input => "[answer]".to_owned(),
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
            AnswerKind::Edit | AnswerKind::Input => Some(text_answer(line, &task.ty)),
        };
        match answer {
            Some(a) => return Ok(a),
            None => {
                let _ = writeln!(stderr, "not understood; try again");
            }
        }
    }
}

/// Text answers are taken as text for a `Text` task and as JSON otherwise.
fn text_answer(line: &str, ty: &troupe_check::Type) -> serde_json::Value {
    match ty {
        troupe_check::Type::Text => serde_json::Value::String(line.to_owned()),
        _ => serde_json::from_str(line)
            .unwrap_or_else(|_| serde_json::Value::String(line.to_owned())),
    }
}
