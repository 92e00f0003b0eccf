//! `troupe completions SHELL`: a completion script for bash, zsh, fish,
//! elvish or PowerShell, generated from the command line's own definition
//! (clap_complete), so it always knows every subcommand and option.

use crate::ExitStatus;
use anyhow::Result;
use clap::Args;
use clap_complete::Shell;

#[derive(Debug, Args)]
#[command(after_help = "\
Install (for the current user):
  bash        troupe completions bash > ~/.local/share/bash-completion/completions/troupe
  zsh         troupe completions zsh > ~/.zfunc/_troupe   (with fpath+=(~/.zfunc) before compinit)
  fish        troupe completions fish > ~/.config/fish/completions/troupe.fish
  elvish      troupe completions elvish >> ~/.config/elvish/rc.elv
  powershell  troupe completions powershell >> $PROFILE")]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Prints the script for `command` (the whole `troupe` command line).
pub fn run(args: &CompletionsArgs, mut command: clap::Command) -> Result<ExitStatus> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "troupe", &mut script);
    crate::out::print(&String::from_utf8_lossy(&script))?;
    Ok(ExitStatus::Success)
}
