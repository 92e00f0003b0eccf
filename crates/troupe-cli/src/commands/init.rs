//! `troupe init [DIR]`: start a project — a starter workflow that checks
//! and runs with the mock model, a `troupe.toml` with every option
//! commented, and a `.gitignore` entry for the local store (`.troupe/`).
//!
//! Existing files are never overwritten without `--force`; an existing
//! `.gitignore` is never replaced, only given the `.troupe/` entry it lacks.

use crate::ExitStatus;
use anyhow::{Context, Result};
use clap::Args;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The starter workflow (also checked and run by the tests).
pub const WORKFLOW: &str = include_str!("../../templates/init/workflow.troupe");
/// `troupe.toml` with every option commented out.
pub const CONFIG: &str = include_str!("../../templates/init/troupe.toml");
const GITIGNORE: &str = include_str!("../../templates/init/gitignore");
const IGNORED: &str = ".troupe/";

#[derive(Debug, Args)]
#[command(after_help = "\
Writes, in DIR (created if missing):
  workflow.troupe  a starter workflow: a Writer and a Reviewer revise a text until it is ready
  troupe.toml      the project's settings, every option commented: models, routes, providers,
                   prices, extern commands, notifications
  .gitignore       ignores .troupe/, the local store of durable runs (an existing .gitignore
                   only gets the entry added)

Then:
  troupe run workflow.troupe -i topic=\"Our release notes\" --trace

Examples:
  troupe init              the current directory
  troupe init my-project
  troupe init . --force    overwrite workflow.troupe and troupe.toml")]
pub struct InitArgs {
    /// The project directory (created if it does not exist).
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// Overwrite an existing workflow.troupe and troupe.toml.
    #[arg(long)]
    pub force: bool,
}

pub fn run(args: &InitArgs) -> Result<ExitStatus> {
    let dir = &args.dir;
    if dir.exists() && !dir.is_dir() {
        crate::note!("error: {} exists and is not a directory", dir.display());
        return Ok(ExitStatus::Usage);
    }
    let files = [
        ("workflow.troupe", WORKFLOW, "a starter workflow"),
        ("troupe.toml", CONFIG, "settings, every option commented"),
    ];
    let existing: Vec<PathBuf> = files
        .iter()
        .map(|(name, _, _)| dir.join(name))
        .filter(|p| p.exists())
        .collect();
    if !existing.is_empty() && !args.force {
        let names: Vec<String> = existing.iter().map(|p| p.display().to_string()).collect();
        crate::note!(
            "error: not overwriting {} (already there)\nhint: pass --force to overwrite, or give another directory: `troupe init DIR`",
            names.join(" and ")
        );
        return Ok(ExitStatus::Usage);
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut report = String::new();
    for (name, text, what) in files {
        let path = dir.join(name);
        write(&path, text, args.force)?;
        report += &format!("created {:<32} {what}\n", path.display());
    }
    let ignore = dir.join(".gitignore");
    report += &match gitignore(&ignore)? {
        Ignore::Created => format!("created {:<32} ignores {IGNORED}\n", ignore.display()),
        Ignore::Appended => format!("added   {IGNORED} to {}\n", ignore.display()),
        Ignore::Present => format!(
            "kept    {:<32} already ignores {IGNORED}\n",
            ignore.display()
        ),
    };
    let cd = if dir == Path::new(".") {
        String::new()
    } else {
        format!("  cd {}\n", shell_word(&dir.display().to_string()))
    };
    report += &format!(
        "\nnext:\n{cd}  troupe run workflow.troupe -i topic=\"Our release notes\" --trace\n  \
         (the mock model answers until you set a model: --llm SPEC or [llm] in troupe.toml)\n"
    );
    crate::out::print(&report)?;
    Ok(ExitStatus::Success)
}

/// Writes a new file (or replaces one with `force`).
fn write(path: &Path, text: &str, force: bool) -> Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if force {
        options.create(true).truncate(true);
    } else {
        // Not `create`: a file that appeared since the check is not replaced.
        options.create_new(true);
    }
    let mut file = options
        .open(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    file.write_all(text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))
}

enum Ignore {
    Created,
    Appended,
    Present,
}

/// Makes `.gitignore` ignore `.troupe/`, keeping whatever it already says.
fn gitignore(path: &Path) -> Result<Ignore> {
    let old = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            write(path, GITIGNORE, false)?;
            return Ok(Ignore::Created);
        }
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let ignored = old.lines().any(|l| {
        let l = l.trim();
        l == IGNORED || l == ".troupe" || l == "/.troupe/" || l == "/.troupe"
    });
    if ignored {
        return Ok(Ignore::Present);
    }
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    let sep = if old.is_empty() || old.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    file.write_all(format!("{sep}{GITIGNORE}").as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(Ignore::Appended)
}

/// `s` quoted for a POSIX shell when it needs it.
fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
    {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}
