//! `extern` effects implemented by commands, declared in `troupe.toml`:
//!
//! ```toml
//! [externs.record_decision]
//! command = ["python3", "scripts/record.py"]   # or one string, run by `sh -c`
//! timeout = "30s"                               # optional
//! ```
//!
//! The command gets the call's arguments on stdin as one JSON object keyed
//! by parameter name, and the environment variables `TROUPE_IDEMPOTENCY_KEY`
//! (the same for the same call after a restart: use it to apply the effect
//! at most once), `TROUPE_RUN` and `TROUPE_ACTION`. It answers on stdout
//! with JSON: the value of a single output, or an object keyed by output
//! name. A non-zero exit fails the action with the end of its stderr. It
//! starts with SIGINT and SIGTERM ignored, so that a Ctrl-C at the
//! terminal interrupts troupe (which gives it time to finish) and not the
//! command; it stays in troupe's process group, so a SIGKILL of the group
//! takes it too.

use crate::HostError;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use troupe_check::ir::{ActionKind, Program};
use troupe_check::{TypeTable, Value};
use troupe_runtime::{EffectCall, Externs};

/// One configured command.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandExtern {
    pub argv: Vec<String>,
    pub timeout: Option<Duration>,
}

/// The `[externs.*]` tables of `troupe.toml` in `dir`, if the file exists.
pub fn load(dir: &Path) -> Result<BTreeMap<String, CommandExtern>, HostError> {
    let path = dir.join("troupe.toml");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(BTreeMap::new());
    };
    parse(&text)
}

pub(crate) fn parse(text: &str) -> Result<BTreeMap<String, CommandExtern>, HostError> {
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| HostError::Config(e.to_string().trim_end().to_owned()))?;
    let mut out = BTreeMap::new();
    let Some(externs) = table.get("externs") else {
        return Ok(out);
    };
    let externs = externs
        .as_table()
        .ok_or_else(|| HostError::Config("`externs` must be a table of [externs.NAME]".into()))?;
    for (name, entry) in externs {
        let bad = |what: &str| HostError::Config(format!("[externs.{name}]: {what}"));
        let entry = entry.as_table().ok_or_else(|| bad("expected a table"))?;
        let argv = match entry.get("command") {
            Some(toml::Value::String(s)) => vec!["sh".into(), "-c".into(), s.clone()],
            Some(toml::Value::Array(items)) => items
                .iter()
                .map(|i| i.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .filter(|v| !v.is_empty())
                .ok_or_else(|| bad("`command` must be a non-empty list of strings"))?,
            _ => return Err(bad("`command` is missing (a string or a list of strings)")),
        };
        let timeout = match entry.get("timeout") {
            None => None,
            Some(toml::Value::String(s)) => Some(
                humantime::parse_duration(s)
                    .map_err(|e| bad(&format!("`timeout`: {e} (e.g. \"30s\")")))?,
            ),
            Some(_) => return Err(bad("`timeout` must be a duration such as \"30s\"")),
        };
        if let Some(key) = entry
            .keys()
            .find(|k| !matches!(k.as_str(), "command" | "timeout"))
        {
            return Err(bad(&format!(
                "unknown key `{key}` (known: command, timeout)"
            )));
        }
        out.insert(name.clone(), CommandExtern { argv, timeout });
    }
    Ok(out)
}

/// Registers a command for every configured effect of `program`.
pub fn register(
    program: &Program,
    commands: &BTreeMap<String, CommandExtern>,
    run: &str,
    externs: &mut Externs,
) -> Result<(), HostError> {
    for action in &program.actions {
        let Some(cmd) = commands.get(&action.name) else {
            continue;
        };
        if !matches!(action.kind, ActionKind::Effect { .. }) {
            return Err(HostError::Config(format!(
                "[externs.{}]: only `effect` actions can be commands (`{}` is not one)",
                action.name, action.name
            )));
        }
        let params: Vec<String> = action.params.iter().map(|p| p.name.clone()).collect();
        let outputs: Vec<(String, troupe_check::Type)> = action
            .outputs
            .iter()
            .map(|p| (p.name.clone(), p.ty.clone()))
            .collect();
        let types = Arc::new(program.types.clone());
        let cmd = cmd.clone();
        let name = action.name.clone();
        let run = run.to_owned();
        externs.effect(&action.name, move |call: EffectCall| {
            let cmd = cmd.clone();
            let params = params.clone();
            let outputs = outputs.clone();
            let types = types.clone();
            let name = name.clone();
            let run = run.clone();
            async move { invoke(&cmd, &name, &run, &params, &outputs, &types, call).await }
        });
    }
    Ok(())
}

async fn invoke(
    cmd: &CommandExtern,
    action: &str,
    run: &str,
    params: &[String],
    outputs: &[(String, troupe_check::Type)],
    types: &TypeTable,
    call: EffectCall,
) -> Result<Vec<Value>, String> {
    let input: serde_json::Map<String, serde_json::Value> = params
        .iter()
        .zip(&call.args)
        .map(|(p, v)| (p.clone(), v.to_json(types)))
        .collect();
    // Through a shell that ignores SIGINT and SIGTERM, then becomes the
    // command (`exec` keeps ignored signals ignored): a Ctrl-C at the
    // terminal, or a SIGTERM to troupe's process group, interrupts troupe,
    // which lets the effect in flight finish (its grace), and not the
    // command, which would die half done. A SIGKILL of the group still
    // takes the command with its owner.
    let mut child = tokio::process::Command::new("/bin/sh")
        .arg("-c")
        .arg("trap '' INT TERM; exec \"$@\"")
        .arg("troupe-effect")
        .args(&cmd.argv)
        .env("TROUPE_IDEMPOTENCY_KEY", &call.idempotency_key)
        .env("TROUPE_RUN", run)
        .env("TROUPE_ACTION", action)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start `{}`: {e}", cmd.argv[0]))?;
    if let Some(mut stdin) = child.stdin.take() {
        let bytes = serde_json::Value::Object(input).to_string();
        // A command that does not read its input is not an error.
        let _ = stdin.write_all(bytes.as_bytes()).await;
    }
    let wait = child.wait_with_output();
    let out = match cmd.timeout {
        Some(t) => tokio::time::timeout(t, wait)
            .await
            .map_err(|_| format!("`{}` timed out after {t:?}", cmd.argv[0]))?,
        None => wait.await,
    }
    .map_err(|e| format!("`{}` failed: {e}", cmd.argv[0]))?;
    // The shell's own word that it could not run the command (127: not
    // found, 126: not executable), said as a spawn error would be.
    if matches!(out.status.code(), Some(126 | 127)) && out.stderr.starts_with(b"troupe-effect: ") {
        let why = if out.status.code() == Some(127) {
            "no such command"
        } else {
            "it is not executable"
        };
        return Err(format!("cannot start `{}`: {why}", cmd.argv[0]));
    }
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: String = err
            .trim_end()
            .chars()
            .rev()
            .take(2000)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        return Err(format!(
            "`{}` exited with {}: {tail}",
            cmd.argv[0], out.status
        ));
    }
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| {
        format!(
            "`{}` did not print JSON on stdout ({e}); it must print the outputs of `{action}`",
            cmd.argv[0]
        )
    })?;
    decode_outputs(&json, outputs, types)
}

/// The outputs from a command's JSON: a single output's value, or an object
/// keyed by output name.
fn decode_outputs(
    json: &serde_json::Value,
    outputs: &[(String, troupe_check::Type)],
    types: &TypeTable,
) -> Result<Vec<Value>, String> {
    if let [(name, ty)] = outputs {
        let single = match json {
            serde_json::Value::Object(map) if map.len() == 1 && map.contains_key(name) => {
                &map[name]
            }
            j => j,
        };
        return Value::from_json(single, ty, types)
            .map(|v| vec![v])
            .map_err(|e| format!("output `{name}`: {e}"));
    }
    let map = json
        .as_object()
        .ok_or_else(|| "expected a JSON object keyed by output name".to_owned())?;
    outputs
        .iter()
        .map(|(name, ty)| {
            let v = map
                .get(name)
                .ok_or_else(|| format!("output `{name}` is missing"))?;
            Value::from_json(v, ty, types).map_err(|e| format!("output `{name}`: {e}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_commands_and_refuses_mistakes() {
        let c = parse(
            "[llm]\ndefault = \"mock\"\n[externs.a]\ncommand = \"echo 1\"\n[externs.b]\ncommand = [\"prog\", \"x\"]\ntimeout = \"2s\"\n",
        )
        .unwrap();
        assert_eq!(c["a"].argv, vec!["sh", "-c", "echo 1"]);
        assert_eq!(c["b"].argv, vec!["prog", "x"]);
        assert_eq!(c["b"].timeout, Some(Duration::from_secs(2)));
        for bad in [
            "[externs.a]\n",
            "[externs.a]\ncommand = []\n",
            "[externs.a]\ncommand = \"x\"\ntimeout = \"soon\"\n",
            "[externs.a]\ncommand = \"x\"\nshell = true\n",
            "externs = 3\n",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn outputs_single_or_by_name() {
        let types = TypeTable::default();
        let one = vec![("ok".to_owned(), troupe_check::Type::Bool)];
        assert_eq!(
            decode_outputs(&serde_json::json!(true), &one, &types).unwrap(),
            vec![Value::Bool(true)]
        );
        assert_eq!(
            decode_outputs(&serde_json::json!({"ok": false}), &one, &types).unwrap(),
            vec![Value::Bool(false)]
        );
        let two = vec![
            ("a".to_owned(), troupe_check::Type::Int),
            ("b".to_owned(), troupe_check::Type::Text),
        ];
        assert!(decode_outputs(&serde_json::json!({"a": 1}), &two, &types).is_err());
        assert!(decode_outputs(&serde_json::json!({"a": "x", "b": "y"}), &two, &types).is_err());
        assert_eq!(
            decode_outputs(&serde_json::json!({"a": 1, "b": "y"}), &two, &types)
                .unwrap()
                .len(),
            2
        );
    }
}
