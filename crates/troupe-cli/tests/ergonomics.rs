//! Ergonomics of the binary: shell completions (`troupe completions`) and
//! project setup (`troupe init`).

use std::path::Path;
use std::process::{Command, Output, Stdio};

fn troupe_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_troupe"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("HOME", dir)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(Stdio::null())
        .output()
        .expect("run troupe")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// What marks each shell's script as one, beside the subcommands.
const SHELLS: [(&str, &str); 5] = [
    ("bash", "complete -F _troupe"),
    ("zsh", "#compdef troupe"),
    ("fish", "complete -c troupe"),
    ("elvish", "set edit:completion:arg-completer[troupe]"),
    ("powershell", "Register-ArgumentCompleter"),
];

#[test]
fn completions_for_each_shell_are_scripts_that_name_the_subcommands() {
    let dir = tempfile::tempdir().unwrap();
    for (shell, marker) in SHELLS {
        let out = troupe_in(dir.path(), &["completions", shell]);
        assert!(out.status.success(), "{shell}: {out:?}");
        let script = text(&out.stdout);
        assert!(script.contains(marker), "{shell}: no {marker:?}");
        for sub in ["run", "check", "resume", "contracts", "init", "completions"] {
            assert!(script.contains(sub), "{shell}: no subcommand {sub}");
        }
        // Options of subcommands, not only their names.
        assert!(script.contains("deny-unverified"), "{shell}: no run option");
    }
    let bad = troupe_in(dir.path(), &["completions", "tcsh"]);
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
    assert!(text(&bad.stderr).contains("bash"), "{}", text(&bad.stderr));
}

/// The bash script, sourced in bash, completes `troupe ` with the
/// subcommands and `troupe run --de` with the option.
#[test]
fn the_bash_script_completes_in_bash() {
    let dir = tempfile::tempdir().unwrap();
    let out = troupe_in(dir.path(), &["completions", "bash"]);
    let script = dir.path().join("troupe.bash");
    std::fs::write(&script, &out.stdout).unwrap();
    let complete = |words: &str| {
        let program = format!(
            "source {}; COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
             COMP_LINE=\"${{COMP_WORDS[*]}}\"; COMP_POINT=${{#COMP_LINE}}; \
             _troupe troupe \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display()
        );
        let out = Command::new("bash")
            .args(["--norc", "--noprofile", "-c", &program])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        text(&out.stdout)
    };
    let subs = complete("troupe ''");
    for sub in ["run", "check", "init", "completions", "serve"] {
        assert!(subs.lines().any(|l| l == sub), "{sub} not in {subs}");
    }
    let opts = complete("troupe run --deny");
    assert_eq!(opts.trim(), "--deny-unverified");
}
