//! `troupe explain CODE`: what a diagnostic code means and how to fix it.

use crate::ExitStatus;
use anyhow::Result;
use clap::Args;
use troupe_syntax::Code;

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// A diagnostic code such as `E0301`; without one, lists every code.
    pub code: Option<String>,
    /// Print the code (or the list) as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &ExplainArgs) -> Result<ExitStatus> {
    match &args.code {
        None if args.json => {
            let list: Vec<_> = Code::ALL
                .iter()
                .map(|code| {
                    let first = code.explanation().lines().next().unwrap_or("");
                    serde_json::json!({
                        "code": code.as_str(),
                        "name": code.name(),
                        "summary": first.trim(),
                    })
                })
                .collect();
            crate::outln!("{}", serde_json::to_string_pretty(&list)?);
            Ok(ExitStatus::Success)
        }
        None => {
            for code in Code::ALL {
                let first = code.explanation().lines().next().unwrap_or("");
                crate::outln!("{}  {:<26} {}", code.as_str(), code.name(), first.trim());
            }
            Ok(ExitStatus::Success)
        }
        Some(text) => {
            let wanted = text.trim().to_ascii_uppercase();
            match Code::ALL
                .iter()
                .find(|c| c.as_str() == wanted || c.name() == text.trim())
            {
                Some(code) if args.json => {
                    let text: Vec<&str> = code.explanation().lines().map(str::trim).collect();
                    let doc = serde_json::json!({
                        "code": code.as_str(),
                        "name": code.name(),
                        "explanation": text.join("\n"),
                    });
                    crate::outln!("{}", serde_json::to_string_pretty(&doc)?);
                    Ok(ExitStatus::Success)
                }
                Some(code) => {
                    crate::outln!("{} ({})\n", code.as_str(), code.name());
                    for line in code.explanation().lines() {
                        crate::outln!("{}", line.trim());
                    }
                    Ok(ExitStatus::Success)
                }
                None => {
                    crate::note!(
                        "error: no diagnostic code `{text}`; `troupe explain` lists them all"
                    );
                    Ok(ExitStatus::Usage)
                }
            }
        }
    }
}
