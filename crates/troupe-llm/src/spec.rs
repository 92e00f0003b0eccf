//! Backend specs: the strings that name a backend on the command line and in
//! `troupe.toml` (`mock`, `scripted:FILE`, `openai:gpt-4o-mini`, …).
//!
//! A spec is `PROVIDER:MODEL`, split at the first colon only, because model
//! names contain colons (`ollama:qwen2.5:7b`, `openrouter:meta-llama/…:free`).

use crate::config::{ConfigError, LlmConfig};
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// The providers known without any configuration.
pub const BUILTIN_PROVIDERS: &[&str] = &["openai", "anthropic", "ollama", "openrouter"];

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum BackendSpec {
    /// `mock`, or `mock:50ms` / `mock:2s` for a mock that sleeps before answering.
    Mock { latency: Option<Duration> },
    /// `scripted:FILE`.
    Scripted(PathBuf),
    /// `PROVIDER:MODEL`, a built-in or a `[providers.NAME]` of the config.
    Model { provider: String, model: String },
}

impl BackendSpec {
    /// Parses a spec, accepting the built-in providers and those declared in `config`.
    pub fn parse(spec: &str, config: &LlmConfig) -> Result<BackendSpec, ConfigError> {
        let err = |message: String| ConfigError::Spec {
            spec: spec.to_owned(),
            message,
        };
        let s = spec.trim();
        if s.is_empty() {
            return Err(err("the spec is empty; expected e.g. `mock`, `openai:gpt-4o-mini` or `scripted:answers.json`".into()));
        }
        let (head, rest) = match s.split_once(':') {
            Some((h, r)) => (h, Some(r)),
            None => (s, None),
        };
        match (head, rest) {
            ("mock", None) => Ok(BackendSpec::Mock { latency: None }),
            ("mock", Some(lat)) => parse_latency(lat)
                .map(|d| BackendSpec::Mock { latency: Some(d) })
                .ok_or_else(|| {
                    err(format!(
                        "`{lat}` is not a latency; write e.g. `mock:50ms` or `mock:2s`"
                    ))
                }),
            ("scripted", Some(path)) if !path.trim().is_empty() => {
                Ok(BackendSpec::Scripted(PathBuf::from(path.trim())))
            }
            ("scripted", _) => Err(err(
                "`scripted` needs a file: `scripted:answers.json`".into()
            )),
            (provider, rest) => {
                let known = BUILTIN_PROVIDERS.contains(&provider)
                    || config.providers.contains_key(provider);
                if !known {
                    let mut names: Vec<&str> = BUILTIN_PROVIDERS.to_vec();
                    names.extend(config.providers.keys().map(String::as_str));
                    return Err(err(format!(
                        "unknown provider `{provider}`; expected `mock`, `scripted:FILE` or PROVIDER:MODEL with PROVIDER one of {} \
                         (or declare [providers.{provider}] in troupe.toml)",
                        names.join(", ")
                    )));
                }
                match rest.map(str::trim) {
                    Some(model) if !model.is_empty() => Ok(BackendSpec::Model {
                        provider: provider.to_owned(),
                        model: model.to_owned(),
                    }),
                    _ => Err(err(format!(
                        "`{provider}` needs a model: `{provider}:MODEL`, e.g. {}",
                        example(provider)
                    ))),
                }
            }
        }
    }

    pub fn is_mock(&self) -> bool {
        matches!(self, BackendSpec::Mock { .. })
    }
}

/// Parses a spec against the built-in providers only; see [`BackendSpec::parse`]
/// to accept providers declared in `troupe.toml` too.
pub fn parse_spec(spec: &str) -> Result<BackendSpec, ConfigError> {
    BackendSpec::parse(spec, &LlmConfig::default())
}

impl fmt::Display for BackendSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackendSpec::Mock { latency: None } => f.write_str("mock"),
            BackendSpec::Mock { latency: Some(d) } => write!(f, "mock:{}ms", d.as_millis()),
            BackendSpec::Scripted(p) => write!(f, "scripted:{}", p.display()),
            BackendSpec::Model { provider, model } => write!(f, "{provider}:{model}"),
        }
    }
}

fn example(provider: &str) -> &'static str {
    match provider {
        "openai" => "openai:gpt-4o-mini",
        "anthropic" => "anthropic:claude-sonnet-4-5",
        "ollama" => "ollama:qwen2.5:7b",
        "openrouter" => "openrouter:openai/gpt-4o-mini",
        _ => "the model name the server expects",
    }
}

fn parse_latency(s: &str) -> Option<Duration> {
    let s = s.trim();
    let (num, unit) = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .map_or((s, "ms"), |i| s.split_at(i));
    let n: f64 = num.parse().ok()?;
    if !n.is_finite() || n < 0.0 {
        return None;
    }
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        _ => return None,
    };
    (secs <= 3600.0).then(|| Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_specs() {
        assert_eq!(
            parse_spec("mock").unwrap(),
            BackendSpec::Mock { latency: None }
        );
        assert_eq!(
            parse_spec("mock:50ms").unwrap(),
            BackendSpec::Mock {
                latency: Some(Duration::from_millis(50))
            }
        );
        assert_eq!(
            parse_spec("scripted:a/b.json").unwrap(),
            BackendSpec::Scripted("a/b.json".into())
        );
        assert_eq!(
            parse_spec("ollama:qwen2.5:7b").unwrap(),
            BackendSpec::Model {
                provider: "ollama".into(),
                model: "qwen2.5:7b".into()
            }
        );
        assert_eq!(
            parse_spec("openai:gpt-4o-mini").unwrap().to_string(),
            "openai:gpt-4o-mini"
        );
        assert_eq!(
            parse_spec(" anthropic:claude-sonnet-4-5 ")
                .unwrap()
                .to_string(),
            "anthropic:claude-sonnet-4-5"
        );
        assert_eq!(
            parse_spec("openrouter:meta-llama/llama-3-8b:free").unwrap(),
            BackendSpec::Model {
                provider: "openrouter".into(),
                model: "meta-llama/llama-3-8b:free".into()
            }
        );
    }

    #[test]
    fn clear_errors() {
        let msg = |s: &str| parse_spec(s).unwrap_err().to_string();
        assert!(msg("").contains("empty"));
        assert!(
            msg("openai").contains("needs a model") && msg("openai").contains("openai:gpt-4o-mini")
        );
        assert!(msg("openai:").contains("needs a model"));
        assert!(msg("gpt4:x").contains("unknown provider `gpt4`"));
        assert!(msg("scripted:").contains("needs a file"));
        assert!(msg("mock:soon").contains("latency"));
    }
}
