//! `troupe serve`: its arguments (clap), the access token they name, and
//! the exit status. The server is `troupe_web`'s.

use crate::ExitStatus;
use anyhow::Result;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;

/// `troupe serve`.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// The store (an SQLite file).
    #[arg(long, value_name = "DB", default_value = troupe_web::DEFAULT_STORE)]
    pub store: PathBuf,
    /// Where to listen. Loopback by default; another address exposes the
    /// page (still behind the token) to the network.
    #[arg(long, value_name = "ADDR", default_value = troupe_web::DEFAULT_BIND)]
    pub bind: SocketAddr,
    /// The access token. Prefer `TROUPE_TOKEN` or `--token-file`: a token
    /// on the command line is visible to every user of the machine (`ps`).
    /// Without any, a random one is made and the URL to open (with
    /// `?token=…`) is printed at start.
    #[arg(long, value_name = "T")]
    pub token: Option<String>,
    /// Read the access token from this file (its first line); the file must
    /// not be readable by others (mode 0600).
    #[arg(long, value_name = "FILE", conflicts_with = "token")]
    pub token_file: Option<PathBuf>,
    /// The project file with a `[notify]` section (default: `troupe.toml`
    /// in the current directory, when it exists).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Announce tasks to this webhook (overrides `[notify.webhook] url`).
    #[arg(long, value_name = "URL")]
    pub webhook: Option<String>,
    /// Announce tasks to this Telegram chat (overrides `[notify.telegram]
    /// chat_id`); the bot token is read from `TELEGRAM_BOT_TOKEN`.
    #[arg(long, value_name = "CHAT_ID", allow_hyphen_values = true)]
    pub telegram_chat: Option<i64>,
    /// A Telegram user id allowed to answer (repeatable; adds to
    /// `[notify.telegram] allowed_users`).
    #[arg(long, value_name = "USER_ID")]
    pub telegram_allow: Vec<i64>,
    /// The Bot API base URL (default `https://api.telegram.org`).
    #[arg(long, value_name = "URL")]
    pub telegram_base_url: Option<String>,
    /// The URL people and webhooks reach this server at (default
    /// `http://ADDR`), used in notifications.
    #[arg(long, value_name = "URL")]
    pub public_url: Option<String>,
    /// Do not run any notification adapter, whatever the configuration says.
    #[arg(long)]
    pub no_notify: bool,
}

/// Serves until the first SIGINT or SIGTERM: the runs the server drives
/// then stop at their step boundary and give their leases back; exit 130
/// or 143.
pub fn run(args: ServeArgs) -> Result<ExitStatus> {
    let token = resolve_token(&args)?;
    let options = troupe_web::RunOptions {
        store: args.store,
        bind: args.bind,
        token,
        config: args.config,
        notify: (!args.no_notify).then_some(troupe_web::NotifyOverrides {
            webhook: args.webhook,
            telegram_chat: args.telegram_chat,
            telegram_allow: args.telegram_allow,
            telegram_base_url: args.telegram_base_url,
            public_url: args.public_url,
        }),
    };
    let stop = crate::signals::first_signal("the runs this server drives");
    let ended =
        troupe_web::run(options, Some(crate::signals::interrupt()), stop).map_err(with_flags)?;
    match ended {
        troupe_web::Ended::Closed => Ok(ExitStatus::Success),
        troupe_web::Ended::Stopped => Ok(ExitStatus::Signalled(
            crate::signals::received().unwrap_or(15),
        )),
    }
}

/// The library's error, with the flags that would have avoided it.
fn with_flags(e: troupe_web::WebError) -> anyhow::Error {
    use troupe_web::WebError;
    match e {
        WebError::NoStore(path) => {
            anyhow::anyhow!(
                "no store at {path}; runs are recorded with `troupe run FILE --store {path}`"
            )
        }
        WebError::NoBotToken { var } => {
            anyhow::anyhow!("--telegram-chat needs the bot token in the environment variable {var}")
        }
        WebError::NoTelegramUsers => anyhow::anyhow!(
            "Telegram notifications need at least one allowed user (--telegram-allow USER_ID or [notify.telegram] allowed_users): nobody else may answer"
        ),
        e => e.into(),
    }
}

/// The access token: `--token`, `--token-file` or `TROUPE_TOKEN`.
fn resolve_token(args: &ServeArgs) -> Result<Option<String>> {
    if let Some(t) = &args.token {
        let _ = writeln!(
            std::io::stderr(),
            "warning: a --token on the command line is visible to other users (ps); prefer TROUPE_TOKEN or --token-file"
        );
        return Ok(Some(t.clone()));
    }
    if let Some(path) = &args.token_file {
        use std::os::unix::fs::PermissionsExt;
        let meta = std::fs::metadata(path)
            .map_err(|e| anyhow::anyhow!("--token-file {}: {e}", path.display()))?;
        if meta.permissions().mode() & 0o077 != 0 {
            anyhow::bail!(
                "--token-file {} is readable by others; `chmod 600 {}` first",
                path.display(),
                path.display()
            );
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("--token-file {}: {e}", path.display()))?;
        let token = text.lines().next().unwrap_or("").trim().to_owned();
        return Ok(Some(token));
    }
    Ok(std::env::var("TROUPE_TOKEN").ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        serve: ServeArgs,
    }

    #[test]
    fn a_token_file_must_be_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "s3cret\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let path = file.to_str().unwrap();
        let cli = Cli::try_parse_from(["serve", "--token-file", path]).unwrap();
        let e = resolve_token(&cli.serve).unwrap_err();
        assert!(e.to_string().contains("readable by others"), "{e}");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(
            resolve_token(&cli.serve).unwrap().as_deref(),
            Some("s3cret")
        );
        assert!(Cli::try_parse_from(["serve", "--token-file", path, "--token", "x"]).is_err());
    }

    #[test]
    fn flags_and_defaults() {
        let cli = Cli::try_parse_from(["serve"]).unwrap();
        assert_eq!(cli.serve.store, PathBuf::from(troupe_web::DEFAULT_STORE));
        assert!(cli.serve.bind.ip().is_loopback());
        assert_eq!(cli.serve.bind.port(), 7878);
        assert!(cli.serve.token.is_none());
        let cli = Cli::try_parse_from([
            "serve",
            "--telegram-chat",
            "-100",
            "--telegram-allow",
            "7",
            "--bind",
            "127.0.0.1:0",
        ])
        .unwrap();
        assert_eq!(cli.serve.telegram_chat, Some(-100));
        assert_eq!(cli.serve.telegram_allow, vec![7]);
    }
}
