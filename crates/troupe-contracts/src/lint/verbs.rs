//! What a tool does, guessed from its name and description: a lookup, a write,
//! or a destructive (irreversible, arbitrary or money-moving) action.
//!
//! The name is split into words (`place_order` → `place order`, `rmDir` →
//! `rm dir`); the first word of the description that is a known verb is used
//! when the name has none. In a name, a plural or ambiguous word after a lookup
//! verb is its object, not a verb (`list_orders`, `get_transfers`). Verbs are matched in English (with `-s`/`-es`/`-ed`
//! /`-ing` endings), and in a few other languages by their usual forms
//! (Chinese, Japanese, Spanish, French, German). Destructive beats write,
//! write beats lookup.

use unicode_segmentation::UnicodeSegmentation;

use crate::lint::words;
use crate::mcp::McpTool;

/// What a tool's verbs say it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Effect {
    /// Reads, lists, searches: no change to the world.
    Lookup,
    /// Creates or changes something.
    Write,
    /// Deletes, kills, executes arbitrary commands or moves money.
    Destructive,
}

/// Verbs of destructive, irreversible or arbitrary actions.
pub const DESTRUCTIVE: &[&str] = &[
    "rm",
    "rmdir",
    "del",
    "delete",
    "remove",
    "drop",
    "kill",
    "pkill",
    "wipe",
    "erase",
    "destroy",
    "truncate",
    "purge",
    "overwrite",
    "terminate",
    "shutdown",
    "reboot",
    "execute",
    "exec",
    "eval",
    "shell",
    "sudo",
    "withdraw",
    "transfer",
    "pay",
    "purchase",
    "buy",
    "order",
    "reset",
    "uninstall",
    "revoke",
    "unlink",
    "shred",
    "format_disk",
    "mv",
    "move",
];

/// Verbs of actions that create or change something.
pub const WRITE: &[&str] = &[
    "write", "create", "add", "update", "set", "put", "post", "insert", "send", "push", "commit",
    "merge", "rename", "upload", "book", "reserve", "cancel", "schedule", "toggle", "edit",
    "modify", "apply", "deploy", "install", "restart", "stop", "start", "submit", "publish",
    "approve", "grant", "invite", "archive", "checkout", "save", "store", "mkdir", "touch", "cp",
    "copy", "deposit", "refund", "charge", "email", "notify", "register", "enable", "disable",
    "assign", "replace", "patch", "upsert", "launch", "spawn", "close", "lock", "unlock", "mark",
    "tag", "label", "change", "make", "record", "stage", "gzip", "compress",
];

/// Write verbs with other, harmless meanings (`add` two numbers, `set` of values,
/// `record` type): a contradiction they suggest is only a warning.
pub const AMBIGUOUS: &[&str] = &[
    "add", "set", "make", "mark", "tag", "label", "record", "change", "apply", "close", "lock",
    "start", "stop", "order", "stage", "compress", "gzip", "save", "store", "touch", "copy",
];

/// Verbs of lookups.
pub const LOOKUP: &[&str] = &[
    "get",
    "list",
    "search",
    "find",
    "read",
    "show",
    "describe",
    "query",
    "lookup",
    "look",
    "view",
    "fetch",
    "retrieve",
    "check",
    "count",
    "inspect",
    "browse",
    "print",
    "echo",
    "return",
    "explain",
    "preview",
    "diff",
    "log",
    "status",
    "info",
    "convert",
    "calculate",
    "compute",
    "validate",
    "verify",
    "resolve",
    "estimate",
    "quote",
    "summarize",
    "open",
    "load",
    "scan",
    "watch",
    "ls",
    "cat",
    "head",
    "tail",
    "grep",
    "stat",
    "ping",
    "test",
    "analyze",
    "compare",
    "translate",
    "parse",
    "render",
    "sum",
    "tree",
];

/// Verbs of other languages: (word, effect), matched as substrings for
/// scripts without spaces and as words otherwise.
const OTHER_LANGUAGES: &[(&str, Effect)] = &[
    ("删除", Effect::Destructive),
    ("移除", Effect::Destructive),
    ("执行", Effect::Destructive),
    ("转账", Effect::Destructive),
    ("支付", Effect::Destructive),
    ("下单", Effect::Destructive),
    ("清空", Effect::Destructive),
    ("削除", Effect::Destructive),
    ("実行", Effect::Destructive),
    ("创建", Effect::Write),
    ("新建", Effect::Write),
    ("修改", Effect::Write),
    ("更新", Effect::Write),
    ("发送", Effect::Write),
    ("上传", Effect::Write),
    ("写入", Effect::Write),
    ("作成", Effect::Write),
    ("更新する", Effect::Write),
    ("送信", Effect::Write),
    ("获取", Effect::Lookup),
    ("查询", Effect::Lookup),
    ("查看", Effect::Lookup),
    ("列出", Effect::Lookup),
    ("搜索", Effect::Lookup),
    ("读取", Effect::Lookup),
    ("检索", Effect::Lookup),
    ("取得", Effect::Lookup),
    ("検索", Effect::Lookup),
    ("一覧", Effect::Lookup),
    ("eliminar", Effect::Destructive),
    ("borrar", Effect::Destructive),
    ("supprimer", Effect::Destructive),
    ("löschen", Effect::Destructive),
    ("crear", Effect::Write),
    ("enviar", Effect::Write),
    ("créer", Effect::Write),
    ("envoyer", Effect::Write),
    ("erstellen", Effect::Write),
    ("senden", Effect::Write),
    ("obtener", Effect::Lookup),
    ("listar", Effect::Lookup),
    ("buscar", Effect::Lookup),
    ("obtenir", Effect::Lookup),
    ("rechercher", Effect::Lookup),
    ("suchen", Effect::Lookup),
    ("abrufen", Effect::Lookup),
];

/// The effect of one English word (with common endings removed).
pub fn word_effect(word: &str) -> Option<Effect> {
    let word = word.to_lowercase();
    let mut candidates = vec![word.clone()];
    for suffix in ["s", "es", "ed", "d", "ing"] {
        if let Some(stem) = word.strip_suffix(suffix)
            && stem.len() >= 2
        {
            candidates.push(stem.to_owned());
            // running → run, stopped → stop
            let bytes = stem.as_bytes();
            // (ASCII letters only: the last byte of a multi-byte character
            // is no character of its own.)
            if bytes.len() >= 3
                && bytes[bytes.len() - 1].is_ascii()
                && bytes[bytes.len() - 1] == bytes[bytes.len() - 2]
            {
                candidates.push(stem[..stem.len() - 1].to_owned());
            }
            // deleting → delete, created → create
            candidates.push(format!("{stem}e"));
        }
    }
    let has = |list: &[&str]| candidates.iter().any(|c| list.contains(&c.as_str()));
    if has(DESTRUCTIVE) {
        Some(Effect::Destructive)
    } else if has(WRITE) {
        Some(Effect::Write)
    } else if has(LOOKUP) {
        Some(Effect::Lookup)
    } else {
        None
    }
}

/// The effect a text's verbs suggest, with the verb. For a name: a destructive
/// verb anywhere, else its first verb (`git_diff_staged` is a diff). For a
/// description: a verb among its first three words ("Deletes the graph",
/// "This tool returns…").
fn text_effect(text: &str, description: bool) -> Option<(Effect, String)> {
    let mut found: Vec<(Effect, String)> = Vec::new();
    for (needle, effect) in OTHER_LANGUAGES {
        if text.contains(needle) {
            found.push((*effect, (*needle).to_owned()));
        }
    }
    let limit = if description { 3 } else { 64 };
    let mut seen = 0;
    // In a name, a plural or ambiguous word after a lookup verb is its object:
    // `list_orders`, `get_transfers` list orders and transfers.
    let mut after_lookup = false;
    for word in text.unicode_words() {
        for part in words(word) {
            if description && matches!(part.as_str(), "this" | "tool" | "a" | "the" | "to") {
                continue;
            }
            seen += 1;
            if seen > limit {
                break;
            }
            if !description
                && after_lookup
                && (part.ends_with('s') || AMBIGUOUS.contains(&part.as_str()))
            {
                continue;
            }
            if let Some(effect) = word_effect(&part) {
                after_lookup |= effect == Effect::Lookup;
                found.push((effect, part));
            }
        }
        if seen > limit {
            break;
        }
    }
    if let Some(destructive) = found.iter().find(|(e, _)| *e == Effect::Destructive) {
        return Some(destructive.clone());
    }
    found.into_iter().next()
}

/// What the tool's name (or, without a verb in it, its description) says it
/// does, with the verb that says so. `run` counts as destructive only with
/// what it runs (`run_command`, `run_script`, `run_shell`, `run_code`).
pub fn classify(tool: &McpTool) -> Option<(Effect, String)> {
    let name_words = words(&tool.name);
    if name_words.iter().any(|w| w == "run")
        && name_words.iter().any(|w| {
            matches!(
                w.as_str(),
                "command" | "cmd" | "script" | "shell" | "code" | "sql"
            )
        })
    {
        return Some((Effect::Destructive, "run".to_owned()));
    }
    text_effect(&tool.name, false).or_else(|| {
        tool.description
            .as_deref()
            .and_then(|d| text_effect(d, true))
    })
}

/// The number of words of a text, by Unicode word boundaries (each Chinese
/// or Japanese ideograph counts as a word).
pub fn word_count(text: &str) -> usize {
    text.unicode_words().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(name: &str, description: &str) -> Option<Effect> {
        let mut tool = McpTool::new(name);
        tool.description = Some(description.to_owned());
        classify(&tool).map(|(e, _)| e)
    }

    #[test]
    fn finds_effectful_verbs_in_names() {
        for name in [
            "rm",
            "mv",
            "place_order",
            "withdraw_funds",
            "kill_process",
            "execute_command",
            "deleteFile",
            "git_reset",
            "run_command",
        ] {
            assert_eq!(named(name, ""), Some(Effect::Destructive), "{name}");
        }
        for name in [
            "send_email",
            "create_entities",
            "git_commit",
            "toggle-logging",
        ] {
            assert_eq!(named(name, ""), Some(Effect::Write), "{name}");
        }
        for name in [
            "get_user",
            "list_files",
            "search_nodes",
            "read_graph",
            "get-env",
        ] {
            assert_eq!(named(name, ""), Some(Effect::Lookup), "{name}");
        }
        // `running` is not `run` a command; a later `staged` does not make a diff a write.
        assert_eq!(
            named(
                "trigger-long-running-operation",
                "Demonstrates a long running operation with progress updates."
            ),
            None
        );
        assert_eq!(named("git_diff_staged", ""), Some(Effect::Lookup));
        assert_eq!(named("list_and_remove", ""), Some(Effect::Destructive));
    }

    #[test]
    fn falls_back_to_the_description_in_any_language() {
        assert_eq!(
            named("graph", "Deletes the graph."),
            Some(Effect::Destructive)
        );
        assert_eq!(
            named("weather", "Returns the forecast."),
            Some(Effect::Lookup)
        );
        assert_eq!(named("shuju", "获取用户的订单列表"), Some(Effect::Lookup));
        assert_eq!(
            named("shanchu", "删除指定的文件"),
            Some(Effect::Destructive)
        );
        assert_eq!(named("thing", "A thing."), None);
    }

    #[test]
    fn counts_words_of_any_script() {
        assert_eq!(word_count("Reads a file."), 3);
        assert!(word_count("获取指定城市的天气预报信息") >= 10);
        assert_eq!(word_count("  "), 0);
    }
}
