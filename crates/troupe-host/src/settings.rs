//! A run's settings: what it was started with, recorded in the run so that
//! a resumed run uses the same models, seed, deadlines and durability. An
//! explicit override on resume replaces a setting and is itself recorded.

use serde::{Deserialize, Serialize};
use std::time::Duration;
use troupe_store::Durability;

/// How hard the run's durable records try to survive a power loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DurabilitySetting {
    #[default]
    Full,
    Normal,
}

impl From<DurabilitySetting> for Durability {
    fn from(d: DurabilitySetting) -> Durability {
        match d {
            DurabilitySetting::Full => Durability::Full,
            DurabilitySetting::Normal => Durability::Normal,
        }
    }
}

/// The settings of one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunSettings {
    /// The default model's spec (`mock`, `openai:gpt-4o-mini`, …); `None`
    /// takes `troupe.toml`'s default, else the mock.
    pub llm: Option<String>,
    /// Models per lifeline, action or `Lifeline.action`: `KEY=SPEC`.
    pub llm_for: Vec<String>,
    /// Seed of the mock model's choices.
    pub seed: u64,
    /// Deadline of every asynchronous action, in milliseconds.
    pub timeout_ms: Option<u64>,
    pub durability: DurabilitySetting,
    /// `extern` actions with no implementation answer with mock values
    /// (marked `mock` in the recorded steps).
    pub mock_externs: bool,
    /// Events of history the store keeps at least (`None`: all of them);
    /// older ones are pruned from a checkpoint on.
    pub history_keep: Option<u64>,
    /// Events between checkpoints (`None`: the store chooses).
    pub checkpoint_every: Option<u64>,
    /// Overrides given when the run was resumed, oldest first.
    pub overrides: Vec<String>,
    /// Lifelines pinned to worker labels (`troupe.toml`'s `[placement]`,
    /// `--place LIFELINE=LABEL`): the run is driven in parts, one per
    /// label, by workers with that label (none: the run runs whole).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub placement: std::collections::BTreeMap<String, String>,
}

impl RunSettings {
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout_ms.map(Duration::from_millis)
    }

    /// The default model as listings show it.
    pub fn llm_label(&self) -> String {
        self.llm.clone().unwrap_or_else(|| "default".into())
    }

    /// Applies explicit overrides (what a resuming command was given) and
    /// records each one.
    pub fn apply(&mut self, o: &Overrides) {
        if let Some(llm) = &o.llm
            && self.llm.as_ref() != Some(llm)
        {
            self.overrides.push(format!("llm={llm}"));
            self.llm = Some(llm.clone());
        }
        if !o.llm_for.is_empty() && o.llm_for != self.llm_for {
            self.overrides
                .push(format!("llm_for={}", o.llm_for.join(",")));
            self.llm_for = o.llm_for.clone();
        }
        if let Some(t) = o.timeout_ms
            && self.timeout_ms != Some(t)
        {
            self.overrides.push(format!("timeout_ms={t}"));
            self.timeout_ms = Some(t);
        }
        if let Some(d) = o.durability
            && self.durability != d
        {
            self.overrides
                .push(format!("durability={d:?}").to_lowercase());
            self.durability = d;
        }
        if let Some(k) = o.history_keep
            && self.history_keep != Some(k)
        {
            self.overrides.push(format!("history_keep={k}"));
            self.history_keep = Some(k);
        }
        if o.mock_externs && !self.mock_externs {
            self.overrides.push("mock_externs=true".into());
            self.mock_externs = true;
        }
    }
}

/// What a command that continues a run may change explicitly.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    pub llm: Option<String>,
    pub llm_for: Vec<String>,
    pub timeout_ms: Option<u64>,
    pub durability: Option<DurabilitySetting>,
    pub mock_externs: bool,
    pub history_keep: Option<u64>,
}

impl RunSettings {
    /// How the store keeps the run's history.
    pub fn journal(&self) -> troupe_store::JournalOptions {
        troupe_store::JournalOptions {
            history: match self.history_keep {
                Some(k) => troupe_store::History::Keep(k),
                None => troupe_store::History::All,
            },
            checkpoint_every: self.checkpoint_every,
            part: None,
            owner: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_replace_and_are_recorded() {
        let mut s = RunSettings {
            llm: Some("scripted:a.json".into()),
            seed: 3,
            ..RunSettings::default()
        };
        s.apply(&Overrides::default());
        assert_eq!(s.llm.as_deref(), Some("scripted:a.json"));
        assert!(s.overrides.is_empty());
        s.apply(&Overrides {
            llm: Some("mock".into()),
            timeout_ms: Some(500),
            ..Overrides::default()
        });
        assert_eq!(s.llm.as_deref(), Some("mock"));
        assert_eq!(s.timeout_ms, Some(500));
        assert_eq!(s.overrides, vec!["llm=mock", "timeout_ms=500"]);
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<RunSettings>(&json).unwrap(), s);
        // Settings of an older store (`{}`) read as the defaults.
        assert_eq!(
            serde_json::from_str::<RunSettings>("{}").unwrap(),
            RunSettings::default()
        );
    }
}
