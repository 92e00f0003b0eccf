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

#[test]
fn init_writes_a_project_whose_workflow_checks_and_runs_with_the_mock() {
    let root = tempfile::tempdir().unwrap();
    let out = troupe_in(root.path(), &["init", "my project"]);
    assert!(out.status.success(), "{out:?}");
    let report = text(&out.stdout);
    let dir = root.path().join("my project");
    for name in ["workflow.troupe", "troupe.toml", ".gitignore"] {
        assert!(dir.join(name).is_file(), "{name}");
        assert!(report.contains(name), "the report names {name}: {report}");
    }
    assert!(report.contains("cd 'my project'"), "{report}");
    let ignore = std::fs::read_to_string(dir.join(".gitignore")).unwrap();
    assert!(ignore.lines().any(|l| l == ".troupe/"), "{ignore}");

    let check = troupe_in(&dir, &["check", "workflow.troupe"]);
    assert!(check.status.success(), "{check:?}");
    // The command the report suggests, in the project (its troupe.toml is
    // read: every option commented, so the mock answers), for a few seeds.
    let mut revisions = std::collections::BTreeSet::new();
    for seed in ["0", "1", "2", "3", "4", "5"] {
        let run = troupe_in(
            &dir,
            &[
                "run",
                "workflow.troupe",
                "-i",
                "topic=Our release notes",
                "--seed",
                seed,
                "--json",
            ],
        );
        assert!(run.status.success(), "seed {seed}: {run:?}");
        assert!(text(&run.stderr).contains("mock model"), "{run:?}");
        let doc: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
        assert_eq!(doc["verified"], true, "{doc}");
        revisions.insert(doc["results"]["revisions"].as_i64().unwrap());
    }
    assert!(
        revisions.contains(&0) && revisions.iter().any(|&n| n >= 2),
        "the review loop runs for some seeds and not others: {revisions:?}"
    );
}

#[test]
fn init_refuses_to_overwrite_unless_forced_and_keeps_a_gitignore() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("troupe.toml"), "# mine\n").unwrap();
    std::fs::write(d.join(".gitignore"), "target/").unwrap();
    let out = troupe_in(d, &["init"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = text(&out.stderr);
    assert!(
        err.contains("troupe.toml") && !err.contains("workflow.troupe"),
        "{err}"
    );
    assert!(err.contains("--force"), "a hint: {err}");
    assert_eq!(
        std::fs::read_to_string(d.join("troupe.toml")).unwrap(),
        "# mine\n"
    );
    assert!(
        !d.join("workflow.troupe").exists(),
        "nothing written on refusal"
    );
    assert_eq!(
        std::fs::read_to_string(d.join(".gitignore")).unwrap(),
        "target/"
    );

    let out = troupe_in(d, &["init", "--force"]);
    assert!(out.status.success(), "{out:?}");
    let config = std::fs::read_to_string(d.join("troupe.toml")).unwrap();
    assert!(config.contains("[llm]"), "overwritten: {config}");
    // An existing .gitignore is kept and gets the entry, once.
    assert_eq!(
        std::fs::read_to_string(d.join(".gitignore")).unwrap(),
        "target/\n# The local store of durable runs (`troupe run --store`).\n.troupe/\n"
    );
    let again = troupe_in(d, &["init", "--force"]);
    assert!(again.status.success(), "{again:?}");
    assert!(text(&again.stdout).contains("already ignores"), "{again:?}");
    assert_eq!(
        std::fs::read_to_string(d.join(".gitignore"))
            .unwrap()
            .matches(".troupe/")
            .count(),
        1
    );

    // Both files there: both are named.
    let out = troupe_in(d, &["init"]);
    let err = text(&out.stderr);
    assert!(
        err.contains("workflow.troupe") && err.contains("troupe.toml"),
        "{err}"
    );
    std::fs::write(d.join("file"), "").unwrap();
    let out = troupe_in(d, &["init", "file"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(text(&out.stderr).contains("not a directory"), "{out:?}");
}

/// Every option `troupe.toml` shows, uncommented, is one its readers
/// accept: the model configuration, the extern commands, the notifications.
#[test]
fn the_commented_options_of_the_starter_config_are_real_options() {
    let dir = tempfile::tempdir().unwrap();
    let out = troupe_in(dir.path(), &["init"]);
    assert!(out.status.success(), "{out:?}");
    let commented = std::fs::read_to_string(dir.path().join("troupe.toml")).unwrap();
    fn option(l: &str) -> Option<&str> {
        l.strip_prefix("# ").filter(|rest| {
            rest.starts_with('[')
                || rest
                    .split_once(" = ")
                    .is_some_and(|(k, _)| !k.contains(' ') || k.starts_with('"'))
        })
    }
    let text: String = commented
        .lines()
        .map(|l| option(l).unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n");
    let uncommented = commented.lines().filter(|l| option(l).is_some()).count();
    assert!(uncommented > 30, "{uncommented} option lines");
    let llm = troupe_llm::config::LlmConfig::from_toml_str(&text, None).unwrap();
    assert_eq!(llm.default.as_deref(), Some("openai:gpt-4o-mini"));
    assert_eq!(llm.routes.len(), 3);
    assert!(llm.providers.contains_key("vllm"), "{llm:?}");
    std::fs::write(dir.path().join("troupe.toml"), &text).unwrap();
    let externs = troupe_host::externs::load(dir.path()).unwrap();
    assert!(externs.contains_key("publish"), "{externs:?}");
    // The bot token comes from the environment: point the file at a
    // variable every process has instead of setting one.
    let notify =
        troupe_web::NotifyConfig::from_toml(&text.replace("\"TELEGRAM_BOT_TOKEN\"", "\"PATH\""))
            .unwrap();
    assert!(notify.telegram.is_some() && notify.webhook.is_some());
    assert!(notify.public_url.is_some());
    let table: toml::Table = text.parse().unwrap();
    assert!(table["telemetry"]["otlp"].is_str(), "{table:?}");
}
