//! `troupe serve` refuses to start with a message that names the flag or
//! command that would have avoided the error (the library says what is
//! wrong; the binary knows its flags).

use crate::support::{Project, said};

/// `troupe serve ARGS` in `p`, which must fail at once: its stderr.
fn refused(p: &Project, args: &[&str], token: Option<&str>) -> String {
    let mut cmd = p.cmd(&[&["serve"], args].concat());
    match token {
        Some(t) => cmd.env("TELEGRAM_BOT_TOKEN", t),
        None => cmd.env_remove("TELEGRAM_BOT_TOKEN"),
    };
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn serve_errors_name_the_flags_that_avoid_them() {
    let p = Project::new();
    let none = refused(&p, &["--store", "none.db", "--no-notify"], None);
    assert!(
        none.contains(
            "error: no store at none.db; runs are recorded with `troupe run FILE --store none.db`"
        ),
        "{none}"
    );
    let chat = refused(&p, &["--store", "none.db", "--telegram-chat", "-100"], None);
    assert!(
        chat.contains(
            "error: --telegram-chat needs the bot token in the environment variable TELEGRAM_BOT_TOKEN"
        ),
        "{chat}"
    );
    let nobody = refused(
        &p,
        &["--store", "none.db", "--telegram-chat", "-100"],
        Some("123:abc"),
    );
    assert!(
        nobody.contains(
            "error: Telegram notifications need at least one allowed user (--telegram-allow USER_ID or [notify.telegram] allowed_users)"
        ),
        "{nobody}"
    );
}
