//! `troupe models check`: try each configured model with a tiny request.

use crate::ExitStatus;
use anyhow::Result;
use clap::{Args, Subcommand};
use troupe_llm::{LlmConfig, Router, check_models, parse_override};

#[derive(Debug, Subcommand)]
pub enum ModelsCommand {
    /// Send a tiny structured request to every configured model (the
    /// default, each route of troupe.toml, and the command line's) and
    /// report what works, with latency or the classified error.
    Check(ModelsCheckArgs),
}

#[derive(Debug, Args)]
pub struct ModelsCheckArgs {
    /// The default model, as for `troupe run --llm`.
    #[arg(long, value_name = "SPEC")]
    pub llm: Option<String>,
    /// Routes, as for `troupe run --llm-for`.
    #[arg(long = "llm-for", value_name = "KEY=SPEC")]
    pub llm_for: Vec<String>,
    #[arg(long)]
    pub json: bool,
}

pub fn run(cmd: &ModelsCommand) -> Result<ExitStatus> {
    let ModelsCommand::Check(args) = cmd;
    let config = LlmConfig::discover(std::env::current_dir()?)?;
    let overrides = args
        .llm_for
        .iter()
        .map(|s| parse_override(s))
        .collect::<Result<Vec<_>, _>>()?;
    let router = Router::from_config(&config, &overrides, args.llm.as_deref())?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let checks = rt.block_on(check_models(&router));
    let ok = checks.iter().all(|c| c.result.is_ok());
    if args.json {
        let doc: Vec<_> = checks
            .iter()
            .map(|c| {
                serde_json::json!({
                    "spec": c.spec,
                    "backend": c.describe,
                    "used_by": c.used_by,
                    "ok": c.result.is_ok(),
                    "latency_ms": c.result.as_ref().ok().map(|d| d.as_secs_f64() * 1000.0),
                    "error": c.result.as_ref().err().map(ToString::to_string),
                })
            })
            .collect();
        crate::outln!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        for c in &checks {
            crate::outln!("{c}");
        }
    }
    Ok(if ok {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}
