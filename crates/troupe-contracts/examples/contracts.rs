//! A stand-alone front end for the `troupe contracts` subcommands, for trying them
//! without the `troupe` binary: `cargo run -p troupe-contracts --example contracts -- bisim schema.json`.

use clap::Parser;
use troupe_contracts::cli::{ContractsCommand, run};

/// Tool contracts: SGD, MCP and MCP+.
#[derive(Debug, Parser)]
struct Cli {
    #[command(subcommand)]
    command: ContractsCommand,
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let mut stdout = std::io::stdout().lock();
    match run(cli.command, &mut stdout) {
        Ok(code) => std::process::ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(error) => {
            eprintln!("error: {error}");
            std::process::ExitCode::from(2)
        }
    }
}
