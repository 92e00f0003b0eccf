//! Model configuration: the `[llm]` and `[providers.*]` tables of `troupe.toml`,
//! and the environment variables that carry keys and base URLs.
//!
//! ```toml
//! [llm]
//! default = "openai:gpt-4o-mini"   # --llm overrides it; `mock` when unset
//! timeout_secs = 120               # one whole request
//! connect_timeout_secs = 10
//! max_retries = 3                  # transport retries (429, 5xx, timeouts)
//! backoff_base_ms = 500            # full-jitter exponential backoff
//! backoff_max_ms = 30000
//! max_retry_after_secs = 120       # a longer Retry-After fails the call instead
//!
//! [llm.route]                      # --llm-for KEY=SPEC overrides an entry
//! "Planner" = "anthropic:claude-sonnet-4-5"
//! "review_plan" = "mock"
//! "Planner.make_plan" = "ollama:qwen2.5:7b"
//!
//! [providers.openai]               # any of the [llm] tuning keys, plus:
//! base_url = "https://api.openai.com/v1"
//! api_key_env = "OPENAI_API_KEY"   # the variable's NAME; keys never go in this file
//!
//! [providers.vllm]                 # a provider of your own: `vllm:MODEL`
//! api = "openai"                   # or "anthropic"
//! base_url = "http://127.0.0.1:8000/v1"
//!
//! [prices."vllm:qwen2.5"]          # see `prices.rs`; US dollars per 1M tokens
//! input_per_mtok = 0
//! output_per_mtok = 0
//! ```
//!
//! Other top-level tables of `troupe.toml` belong to other parts of troupe
//! and are ignored here; unknown keys inside `[llm]` and `[providers.*]` are
//! errors, so a typo does not silently fall back to a default.
//!
//! | provider | base URL (env, then file, then default) | key |
//! |---|---|---|
//! | `openai` | `OPENAI_BASE_URL`, `https://api.openai.com/v1` | `OPENAI_API_KEY` |
//! | `anthropic` | `ANTHROPIC_BASE_URL`, `https://api.anthropic.com` | `ANTHROPIC_API_KEY` |
//! | `ollama` | `OLLAMA_BASE_URL`, `http://localhost:11434/v1` | none (`OLLAMA_API_KEY` if set) |
//! | `openrouter` | `OPENROUTER_BASE_URL`, `https://openrouter.ai/api/v1` | `OPENROUTER_API_KEY` |
//!
//! A key is required only for a provider's official endpoint: pointing
//! `OPENAI_BASE_URL` at a local vLLM works without one.

use crate::http::{Api, ApiKey, HttpSettings};
use crate::scripted::ScriptError;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The project file's name.
pub const CONFIG_FILE: &str = "troupe.toml";

#[derive(Debug, Clone, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {message}")]
    Read { path: String, message: String },
    #[error("{path}: {message}")]
    Toml { path: String, message: String },
    #[error("bad model spec {spec:?}: {message}")]
    Spec { spec: String, message: String },
    #[error("bad route {key:?}: {message}")]
    Route { key: String, message: String },
    #[error("bad --llm-for {text:?}: {message}")]
    Override { text: String, message: String },
    #[error("provider `{name}`: {message}")]
    Provider { name: String, message: String },
    #[error("{spec} needs an API key: set {var} in the environment")]
    MissingKey { spec: String, var: String },
    #[error(transparent)]
    Script(#[from] ScriptError),
}

/// The model configuration of a project.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LlmConfig {
    /// `[llm] default`.
    pub default: Option<String>,
    /// `[llm.route]`: `Lifeline`, `action` or `Lifeline.action` → spec.
    pub routes: BTreeMap<String, String>,
    /// `[llm]` tuning, for every provider.
    pub tuning: Tuning,
    /// `[providers.NAME]`.
    pub providers: BTreeMap<String, ProviderConfig>,
    /// `[prices."MODEL"]` over the shipped prices.
    pub prices: crate::prices::Prices,
    /// The file it was read from, for messages.
    pub source: Option<PathBuf>,
}

/// Timeouts and retry policy; in `[llm]` for every provider, in
/// `[providers.NAME]` for one (which wins).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tuning {
    pub timeout: Option<Duration>,
    pub connect_timeout: Option<Duration>,
    pub max_retries: Option<u32>,
    pub backoff_base: Option<Duration>,
    pub backoff_max: Option<Duration>,
    pub max_retry_after: Option<Duration>,
    pub max_tokens: Option<u32>,
}

impl Tuning {
    /// `self` over `base`: each setting of `self` wins where present.
    fn over(&self, base: &Tuning) -> Tuning {
        Tuning {
            timeout: self.timeout.or(base.timeout),
            connect_timeout: self.connect_timeout.or(base.connect_timeout),
            max_retries: self.max_retries.or(base.max_retries),
            backoff_base: self.backoff_base.or(base.backoff_base),
            backoff_max: self.backoff_max.or(base.backoff_max),
            max_retry_after: self.max_retry_after.or(base.max_retry_after),
            max_tokens: self.max_tokens.or(base.max_tokens),
        }
    }

    /// The settings with these overrides applied to the defaults.
    pub fn settings(&self) -> HttpSettings {
        let d = HttpSettings::default();
        HttpSettings {
            connect_timeout: self.connect_timeout.unwrap_or(d.connect_timeout),
            timeout: self.timeout.unwrap_or(d.timeout),
            max_retries: self.max_retries.unwrap_or(d.max_retries),
            backoff_base: self.backoff_base.unwrap_or(d.backoff_base),
            backoff_max: self.backoff_max.unwrap_or(d.backoff_max),
            max_retry_after: self.max_retry_after.unwrap_or(d.max_retry_after),
            max_tokens: self.max_tokens.or(d.max_tokens),
        }
    }
}

/// `[providers.NAME]`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProviderConfig {
    /// Required for a provider that is not built in.
    pub api: Option<Api>,
    pub base_url: Option<String>,
    /// The name of the environment variable that holds the key.
    pub api_key_env: Option<String>,
    pub tuning: Tuning,
}

/// A provider with everything needed to build a backend for it.
#[derive(Debug, Clone)]
pub struct ResolvedProvider {
    pub name: String,
    pub api: Api,
    pub base_url: String,
    pub key: Option<ApiKey>,
    /// The variable the key is read from, if any.
    pub key_var: Option<String>,
    /// Whether calls need a key (the provider's official endpoint).
    pub key_required: bool,
    pub settings: HttpSettings,
}

struct Builtin {
    name: &'static str,
    api: Api,
    base_url: &'static str,
    base_env: &'static str,
    key_env: &'static str,
    key_required: bool,
}

const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "openai",
        api: Api::OpenAi,
        base_url: "https://api.openai.com/v1",
        base_env: "OPENAI_BASE_URL",
        key_env: "OPENAI_API_KEY",
        key_required: true,
    },
    Builtin {
        name: "anthropic",
        api: Api::Anthropic,
        base_url: "https://api.anthropic.com",
        base_env: "ANTHROPIC_BASE_URL",
        key_env: "ANTHROPIC_API_KEY",
        key_required: true,
    },
    Builtin {
        name: "ollama",
        api: Api::OpenAi,
        base_url: "http://localhost:11434/v1",
        base_env: "OLLAMA_BASE_URL",
        key_env: "OLLAMA_API_KEY",
        key_required: false,
    },
    Builtin {
        name: "openrouter",
        api: Api::OpenAi,
        base_url: "https://openrouter.ai/api/v1",
        base_env: "OPENROUTER_BASE_URL",
        key_env: "OPENROUTER_API_KEY",
        key_required: true,
    },
];

impl LlmConfig {
    /// Reads `troupe.toml` text; `source` names the file in messages.
    pub fn from_toml_str(text: &str, source: Option<&Path>) -> Result<LlmConfig, ConfigError> {
        let path = source.map_or_else(|| CONFIG_FILE.to_owned(), |p| p.display().to_string());
        let err = |message: String| ConfigError::Toml {
            path: path.clone(),
            message,
        };
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| err(e.to_string().trim_end().to_owned()))?;
        let mut config = LlmConfig {
            source: source.map(Path::to_path_buf),
            ..LlmConfig::default()
        };
        if let Some(llm) = table.get("llm") {
            let llm = llm
                .as_table()
                .ok_or_else(|| err("`llm` must be a table: [llm]".into()))?;
            for (k, v) in llm {
                match k.as_str() {
                    "default" => config.default = Some(string(v, "[llm] default").map_err(&err)?),
                    "route" => {
                        let routes = v
                            .as_table()
                            .ok_or_else(|| err("`route` must be a table: [llm.route]".into()))?;
                        for (key, spec) in routes {
                            config.routes.insert(
                                key.clone(),
                                string(spec, &format!("[llm.route] {key:?}")).map_err(&err)?,
                            );
                        }
                    }
                    _ => tuning_key(&mut config.tuning, k, v, "[llm]").map_err(&err)?,
                }
            }
        }
        if let Some(prices) = table.get("prices") {
            config.prices = crate::prices::Prices::parse(prices).map_err(&err)?;
        }
        if let Some(providers) = table.get("providers") {
            let providers = providers
                .as_table()
                .ok_or_else(|| err("`providers` must be a table: [providers.NAME]".into()))?;
            for (name, p) in providers {
                let ctx = format!("[providers.{name}]");
                let p = p
                    .as_table()
                    .ok_or_else(|| err(format!("{ctx} must be a table")))?;
                let mut pc = ProviderConfig::default();
                for (k, v) in p {
                    match k.as_str() {
                        "api" => {
                            pc.api = Some(
                                match string(v, &format!("{ctx} api")).map_err(&err)?.as_str() {
                                    "openai" => Api::OpenAi,
                                    "anthropic" => Api::Anthropic,
                                    other => {
                                        return Err(err(format!(
                                            "{ctx} api = {other:?}: expected \"openai\" or \"anthropic\""
                                        )));
                                    }
                                },
                            )
                        }
                        "base_url" => {
                            pc.base_url = Some(string(v, &format!("{ctx} base_url")).map_err(&err)?)
                        }
                        "api_key_env" => {
                            pc.api_key_env =
                                Some(string(v, &format!("{ctx} api_key_env")).map_err(&err)?)
                        }
                        "api_key" => {
                            return Err(err(format!(
                                "{ctx}: API keys do not belong in {CONFIG_FILE}; set the key in the environment and name \
                                 its variable with api_key_env = \"VAR\""
                            )));
                        }
                        _ => tuning_key(&mut pc.tuning, k, v, &ctx).map_err(&err)?,
                    }
                }
                let builtin = BUILTINS.iter().any(|b| b.name == name);
                if !builtin && (pc.api.is_none() || pc.base_url.is_none()) {
                    return Err(err(format!(
                        "{ctx} is not a built-in provider ({}): it needs api = \"openai\" or \"anthropic\" and a base_url",
                        builtin_names()
                    )));
                }
                if matches!(name.as_str(), "mock" | "scripted") {
                    return Err(err(format!("{ctx}: `{name}` is reserved")));
                }
                config.providers.insert(name.clone(), pc);
            }
        }
        Ok(config)
    }

    /// Reads a config file.
    pub fn load(path: impl AsRef<Path>) -> Result<LlmConfig, ConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Read {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        LlmConfig::from_toml_str(&text, Some(path))
    }

    /// Reads `troupe.toml` in `dir` if there is one; the empty config otherwise.
    pub fn discover(dir: impl AsRef<Path>) -> Result<LlmConfig, ConfigError> {
        let path = dir.as_ref().join(CONFIG_FILE);
        if path.is_file() {
            LlmConfig::load(path)
        } else {
            Ok(LlmConfig::default())
        }
    }

    /// Whether a provider of this name is built in or declared.
    pub fn knows_provider(&self, name: &str) -> bool {
        BUILTINS.iter().any(|b| b.name == name) || self.providers.contains_key(name)
    }

    /// Resolves a provider's API, base URL, key and settings, reading the
    /// environment through `env` (so tests need not touch the process's).
    pub fn resolve_provider(
        &self,
        name: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ResolvedProvider, ConfigError> {
        let declared = self.providers.get(name);
        let builtin = BUILTINS.iter().find(|b| b.name == name);
        if declared.is_none() && builtin.is_none() {
            return Err(ConfigError::Provider {
                name: name.to_owned(),
                message: format!(
                    "unknown provider; the built-in ones are {}",
                    builtin_names()
                ),
            });
        }
        let nonempty = |v: Option<String>| v.filter(|s| !s.trim().is_empty());
        let api = declared
            .and_then(|p| p.api)
            .or(builtin.map(|b| b.api))
            .unwrap_or(Api::OpenAi);
        let env_base = builtin.and_then(|b| nonempty(env(b.base_env)));
        let file_base = declared.and_then(|p| p.base_url.clone());
        let default_base = builtin.map(|b| b.base_url.to_owned());
        let base_url = env_base
            .or(file_base)
            .or(default_base.clone())
            .ok_or_else(|| ConfigError::Provider {
                name: name.to_owned(),
                message: "no base_url".into(),
            })?;
        let official = default_base
            .as_deref()
            .is_some_and(|d| d.trim_end_matches('/') == base_url.trim_end_matches('/'));
        let explicit_var = declared.and_then(|p| p.api_key_env.clone());
        let key_var = explicit_var
            .clone()
            .or(builtin.map(|b| b.key_env.to_owned()));
        let key = key_var
            .as_deref()
            .and_then(|v| nonempty(env(v)))
            .map(ApiKey::new);
        // An explicitly named variable is a promise that a key is needed.
        let key_required =
            explicit_var.is_some() || (official && builtin.is_some_and(|b| b.key_required));
        let tuning = declared.map_or_else(|| self.tuning.clone(), |p| p.tuning.over(&self.tuning));
        Ok(ResolvedProvider {
            name: name.to_owned(),
            api,
            base_url,
            key,
            key_var,
            key_required,
            settings: tuning.settings(),
        })
    }
}

fn builtin_names() -> String {
    BUILTINS
        .iter()
        .map(|b| b.name)
        .collect::<Vec<_>>()
        .join(", ")
}

fn string(v: &toml::Value, what: &str) -> Result<String, String> {
    v.as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("{what} must be a string"))
}

fn tuning_key(t: &mut Tuning, key: &str, v: &toml::Value, ctx: &str) -> Result<(), String> {
    let number = || -> Result<f64, String> {
        let n = v.as_float().or_else(|| v.as_integer().map(|i| i as f64));
        match n {
            Some(n) if (0.0..=86_400.0 * 1000.0).contains(&n) => Ok(n),
            _ => Err(format!("{ctx} {key} must be a non-negative number")),
        }
    };
    let secs = |n: f64| Duration::from_secs_f64(n.min(86_400.0));
    let count = |n: f64| -> Result<u32, String> {
        if n.fract() == 0.0 && n <= f64::from(u32::MAX) {
            Ok(n as u32)
        } else {
            Err(format!("{ctx} {key} must be a whole number"))
        }
    };
    match key {
        "timeout_secs" => t.timeout = Some(secs(positive(number()?, ctx, key)?)),
        "connect_timeout_secs" => t.connect_timeout = Some(secs(positive(number()?, ctx, key)?)),
        "max_retries" => t.max_retries = Some(count(number()?)?),
        "backoff_base_ms" => t.backoff_base = Some(secs(number()? / 1000.0)),
        "backoff_max_ms" => t.backoff_max = Some(secs(number()? / 1000.0)),
        "max_retry_after_secs" => t.max_retry_after = Some(secs(number()?)),
        "max_tokens" => t.max_tokens = Some(count(positive(number()?, ctx, key)?)?),
        _ => {
            return Err(format!(
                "{ctx} has no key `{key}`; expected {}timeout_secs, connect_timeout_secs, max_retries, backoff_base_ms, \
                 backoff_max_ms, max_retry_after_secs or max_tokens",
                if ctx == "[llm]" {
                    "default, route, "
                } else {
                    "api, base_url, api_key_env, "
                }
            ));
        }
    }
    Ok(())
}

fn positive(n: f64, ctx: &str, key: &str) -> Result<f64, String> {
    if n > 0.0 {
        Ok(n)
    } else {
        Err(format!("{ctx} {key} must be greater than 0"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"
        [project]
        name = "ignored here"

        [llm]
        default = "openai:gpt-4o-mini"
        timeout_secs = 30
        backoff_base_ms = 10

        [llm.route]
        "Planner" = "anthropic:claude-sonnet-4-5"
        "review_plan" = "mock"
        "Planner.make_plan" = "ollama:qwen2.5:7b"

        [providers.openai]
        base_url = "https://proxy.example/v1"
        timeout_secs = 5.5

        [providers.local]
        api = "openai"
        base_url = "http://127.0.0.1:8080/v1"
    "#;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn reads_the_sample() {
        let c = LlmConfig::from_toml_str(SAMPLE, None).unwrap();
        assert_eq!(c.default.as_deref(), Some("openai:gpt-4o-mini"));
        assert_eq!(c.routes.len(), 3);
        assert_eq!(c.routes["Planner.make_plan"], "ollama:qwen2.5:7b");
        let openai = c.resolve_provider("openai", &no_env).unwrap();
        assert_eq!(openai.base_url, "https://proxy.example/v1");
        assert_eq!(openai.settings.timeout, Duration::from_millis(5500));
        assert_eq!(
            openai.settings.backoff_base,
            Duration::from_millis(10),
            "[llm] tuning applies under the provider's"
        );
        assert!(
            !openai.key_required,
            "a key is optional off the official endpoint"
        );
        let local = c.resolve_provider("local", &no_env).unwrap();
        assert_eq!(local.api, Api::OpenAi);
        assert!(local.key.is_none() && !local.key_required);
    }

    #[test]
    fn environment_wins_for_base_and_gives_keys() {
        let env = |v: &str| match v {
            "ANTHROPIC_API_KEY" => Some("sk-ant-secret".to_owned()),
            "ANTHROPIC_BASE_URL" => Some("http://127.0.0.1:1/".to_owned()),
            _ => None,
        };
        let c = LlmConfig::default();
        let p = c.resolve_provider("anthropic", &env).unwrap();
        assert_eq!(p.base_url, "http://127.0.0.1:1/");
        assert!(p.key.is_some());
        assert!(!format!("{p:?}").contains("sk-ant-secret"));
        let official = c.resolve_provider("openai", &no_env).unwrap();
        assert!(official.key_required && official.key.is_none());
        assert_eq!(official.key_var.as_deref(), Some("OPENAI_API_KEY"));
        assert!(!c.resolve_provider("ollama", &no_env).unwrap().key_required);
    }

    #[test]
    fn clear_errors() {
        let msg = |t: &str| {
            LlmConfig::from_toml_str(t, Some(Path::new("p/troupe.toml")))
                .unwrap_err()
                .to_string()
        };
        assert!(msg("[llm]\ndefualt = \"mock\"").contains("no key `defualt`"));
        assert!(msg("[llm]\ntimeout_secs = -1").contains("non-negative"));
        assert!(msg("[llm]\ntimeout_secs = 0").contains("greater than 0"));
        assert!(msg("[providers.openai]\napi_key = \"sk-x\"").contains("do not belong"));
        assert!(!msg("[providers.openai]\napi_key = \"sk-x\"").contains("sk-x"));
        assert!(msg("[providers.mine]\nbase_url = \"http://x\"").contains("needs api"));
        assert!(
            msg("[providers.mine]\napi = \"grpc\"\nbase_url = \"http://x\"")
                .contains("expected \"openai\"")
        );
        assert!(msg("[llm\n").starts_with("p/troupe.toml"));
        assert!(LlmConfig::discover("/nonexistent-dir").unwrap() == LlmConfig::default());
    }
}
