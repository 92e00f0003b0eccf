//! The project's `troupe.toml`, read once into types: the sections the
//! host and the CLI act on (`[store]`, `[contracts]`, `[mcp]`,
//! `[[schedule]]`). A misspelt value is
//! an error naming the file, the line and the values allowed, never a
//! silent default. (`[models]` is read by `troupe_llm::config` and
//! `[externs]` by [`crate::externs`], each owning its section.)
//!
//! ```toml
//! [store]
//! path = "postgres://troupe@db/troupe"
//!
//! [contracts]
//! unverified = "warn"   # "allow" | "warn" | "deny"
//! allow = []            # lint rules that do not refuse a run
//!
//! [mcp]
//! call_timeout = "5m"   # how long one tool call may take
//! ```

use crate::HostError;
use serde::Deserialize;
use std::path::Path;

/// The project's configuration (defaults when there is no `troupe.toml`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ProjectConfig {
    #[serde(default)]
    pub store: StoreSection,
    #[serde(default)]
    pub contracts: ContractsSection,
    #[serde(default)]
    pub mcp: McpSection,
    /// `[[schedule]]`: workflows started at every tick (`crate::schedule`).
    #[serde(default)]
    pub schedule: Vec<crate::schedule::ScheduleSection>,
}

/// `[mcp]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct McpSection {
    /// How long one tool call may take (`"30s"`, `"5m"`); default
    /// [`DEFAULT_CALL_TIMEOUT`].
    pub call_timeout: Option<String>,
}

/// How long a tool call may take when `troupe.toml` does not say.
pub const DEFAULT_CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

/// `[store]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct StoreSection {
    /// A SQLite file or a `postgres://` address.
    pub path: Option<String>,
}

/// `[contracts]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct ContractsSection {
    /// What a called tool without a contract (W0605) is.
    #[serde(default)]
    pub unverified: Unverified,
    /// Lint rules whose error-level findings on the servers' tools do not
    /// refuse a run (`["model-instruction"]`): the project has reviewed
    /// what they flag.
    #[serde(default)]
    pub allow: Vec<String>,
}

/// `[contracts] unverified`: how tools without a contract are taken.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unverified {
    /// Accepted silently: the project has reviewed its tools without
    /// contracts (read-only tools of a third-party server, say).
    Allow,
    /// A warning, one per server (the default).
    #[default]
    Warn,
    /// An error: `check` fails and `run` refuses, as with
    /// `--deny-unverified`.
    Deny,
}

impl ProjectConfig {
    /// `[mcp] call_timeout`, read as a duration.
    pub fn call_timeout(&self) -> Result<std::time::Duration, HostError> {
        match &self.mcp.call_timeout {
            None => Ok(DEFAULT_CALL_TIMEOUT),
            Some(text) => humantime::parse_duration(text)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    HostError::Config(format!(
                        "[mcp] call_timeout = {text:?} is not a duration such as \"30s\" or \"5m\""
                    ))
                }),
        }
    }

    /// The `[[schedule]]`s, checked, their files resolved against `dir`
    /// (the project directory). Names are unique.
    pub fn schedules(&self, dir: &Path) -> Result<Vec<crate::schedule::Schedule>, HostError> {
        let mut seen = std::collections::BTreeSet::new();
        self.schedule
            .iter()
            .map(|s| {
                if !seen.insert(s.name.as_str()) {
                    return Err(HostError::Config(format!(
                        "two [[schedule]]s are named {:?}; a name identifies a schedule's ticks in the store",
                        s.name
                    )));
                }
                crate::schedule::Schedule::from_section(s, dir)
            })
            .collect()
    }

    /// Reads `troupe.toml` in `dir` (the defaults when there is none).
    pub fn load(dir: &Path) -> Result<ProjectConfig, HostError> {
        let file = dir.join(troupe_llm::config::CONFIG_FILE);
        let Ok(text) = std::fs::read_to_string(&file) else {
            return Ok(ProjectConfig::default());
        };
        toml::from_str(&text).map_err(|e| {
            HostError::Config(format!("{}: {}", file.display(), e.to_string().trim_end()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<ProjectConfig, HostError> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("troupe.toml"), text).unwrap();
        ProjectConfig::load(dir.path())
    }

    #[test]
    fn sections_are_read_typed_and_mistakes_are_named() {
        assert_eq!(read("").unwrap(), ProjectConfig::default());
        let c = read("[store]\npath = \"x.db\"\n[contracts]\nunverified = \"allow\"\n[models]\ndefault = \"mock\"\n").unwrap();
        assert_eq!(c.store.path.as_deref(), Some("x.db"));
        assert_eq!(c.contracts.unverified, Unverified::Allow);
        let e = read("[contracts]\nunverified = \"never\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("troupe.toml") && e.contains("line 2") && e.contains("allow"),
            "{e}"
        );
        let e = read("[store]\npath = 3\n").unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("string"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            ProjectConfig::load(dir.path()).unwrap(),
            ProjectConfig::default()
        );
    }
}
