//! `troupe explain CODE`: what a diagnostic code means and how to fix it.

use crate::ExitStatus;
use anyhow::Result;
use clap::Args;
use troupe_syntax::Code;

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// A diagnostic code such as `E0301`; without one, lists every code.
    pub code: Option<String>,
}

pub fn run(args: &ExplainArgs) -> Result<ExitStatus> {
    match &args.code {
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
                Some(code) => {
                    crate::outln!("{} ({})\n", code.as_str(), code.name());
                    for line in code.explanation().lines() {
                        crate::outln!("{}", line.trim());
                    }
                    Ok(ExitStatus::Success)
                }
                None => {
                    eprintln!(
                        "error: no diagnostic code `{text}`; `troupe explain` lists them all"
                    );
                    Ok(ExitStatus::Usage)
                }
            }
        }
    }
}
