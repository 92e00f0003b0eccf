//! The router: one [`LlmBackend`] that dispatches each call by its [`CallKey`].
//!
//! Routes come from `[llm.route]` in `troupe.toml` and `--llm-for KEY=SPEC`
//! on the command line (which replaces an entry with the same key). The most
//! specific route wins: `Lifeline.action` > `action` > `Lifeline` > the
//! default (`--llm`, else `[llm] default`, else `mock`). A single name is
//! matched both as an action and as a lifeline, action first, so no naming
//! convention is needed to tell them apart.
//!
//! An action's own `model:` applies only when no route matched and the
//! default is a real provider: a full spec (`anthropic:claude-…`) is used as
//! is, a bare name (`gpt-4o`) with the default's provider. A mock or scripted
//! default ignores it, so that a workflow always runs offline by default.
//!
//! Backends are shared: every route with the same spec uses one instance
//! (one connection pool). Keys are read once, when the router is built, and
//! are held only inside the backends, whose `Debug` redacts them.

use crate::config::{ConfigError, LlmConfig};
use crate::http::HttpBackend;
use crate::spec::BackendSpec;
use crate::{
    BoxFuture, CallKey, LlmAnswer, LlmBackend, LlmError, LlmRequest, MockBackend, ScriptedBackend,
};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

/// Splits a `--llm-for` argument `KEY=SPEC`, checking the key's form.
pub fn parse_override(text: &str) -> Result<(String, String), ConfigError> {
    let err = |message: &str| ConfigError::Override {
        text: text.to_owned(),
        message: message.to_owned(),
    };
    let (key, spec) = text.split_once('=').ok_or_else(|| {
        err("expected KEY=SPEC, e.g. Planner=openai:gpt-4o-mini or review_plan=mock")
    })?;
    let (key, spec) = (key.trim(), spec.trim());
    check_route_key(key).map_err(|m| err(&m))?;
    if spec.is_empty() {
        return Err(err("the spec after `=` is empty"));
    }
    Ok((key.to_owned(), spec.to_owned()))
}

fn check_route_key(key: &str) -> Result<(), String> {
    let ok = match key.split_once('.') {
        Some((l, a)) => is_ident(l) && is_ident(a),
        None => is_ident(key),
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "route key {key:?} must be `Lifeline`, `action` or `Lifeline.action`"
        ))
    }
}

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A backend with the spec that named it.
#[derive(Debug, Clone)]
struct Target {
    spec: String,
    backend: Arc<dyn LlmBackend>,
}

/// Where a request goes ([`Router::choice`]).
enum Choice<'r> {
    Target(&'r Target),
    /// The action's `model:`, and the spec it reads as.
    Model {
        model: &'r str,
        spec: Result<BackendSpec, ConfigError>,
    },
}

/// What building a backend needs after construction, for an action's `model:`.
struct Factory {
    config: LlmConfig,
    /// The environment as read at construction (keys included: never printed).
    env: BTreeMap<String, String>,
    built: Mutex<HashMap<String, Arc<dyn LlmBackend>>>,
}

impl Factory {
    fn get(&self, spec: &BackendSpec) -> Result<Arc<dyn LlmBackend>, ConfigError> {
        let name = spec.to_string();
        if let Some(b) = self.built.lock().ok().and_then(|m| m.get(&name).cloned()) {
            return Ok(b);
        }
        let backend = self.build(spec)?;
        if let Ok(mut m) = self.built.lock() {
            // Another task may have built it meanwhile: keep the first, so all share one.
            return Ok(m.entry(name).or_insert(backend).clone());
        }
        Ok(backend)
    }

    fn build(&self, spec: &BackendSpec) -> Result<Arc<dyn LlmBackend>, ConfigError> {
        Ok(match spec {
            BackendSpec::Mock { latency: None } => Arc::new(MockBackend::new()),
            BackendSpec::Mock { latency: Some(d) } => Arc::new(MockBackend::with_latency(*d)),
            BackendSpec::Scripted(path) => {
                // A relative script path is relative to the config file's directory, if any.
                let path = match self.config.source.as_deref().and_then(|s| s.parent()) {
                    Some(dir)
                        if path.is_relative() && !path.exists() && dir.join(path).exists() =>
                    {
                        dir.join(path)
                    }
                    _ => path.clone(),
                };
                Arc::new(ScriptedBackend::from_file(path)?)
            }
            BackendSpec::Model { provider, model } => {
                let env = |v: &str| self.env.get(v).cloned();
                let p = self.config.resolve_provider(provider, &env)?;
                if p.key_required && p.key.is_none() {
                    return Err(ConfigError::MissingKey {
                        spec: spec.to_string(),
                        var: p.key_var.unwrap_or_else(|| "the API key variable".into()),
                    });
                }
                Arc::new(HttpBackend::new(
                    p.api,
                    provider.clone(),
                    model.clone(),
                    p.base_url,
                    p.key,
                    p.settings,
                )?)
            }
        })
    }
}

/// Dispatches each call to the backend routed for its lifeline and action.
pub struct Router {
    default: Target,
    /// `Lifeline`, `action` or `Lifeline.action` → backend.
    routes: BTreeMap<String, Target>,
    /// The default is `mock` because nothing chose another.
    implicit_mock: bool,
    /// Whether an action's `model:` may pick the backend (not in a hand-built router).
    action_models: bool,
    factory: Factory,
}

impl std::fmt::Debug for Router {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Router")
            .field("default", &self.default.spec)
            .field(
                "routes",
                &self
                    .routes
                    .iter()
                    .map(|(k, t)| (k, &t.spec))
                    .collect::<BTreeMap<_, _>>(),
            )
            .field("implicit_mock", &self.implicit_mock)
            .finish_non_exhaustive()
    }
}

/// The environment variables a router may read: every provider's base URL and
/// key variables. Reading them once keeps a run consistent.
fn snapshot_env(
    config: &LlmConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> BTreeMap<String, String> {
    let mut names: Vec<String> = [
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "OLLAMA_API_KEY",
        "OLLAMA_BASE_URL",
        "OPENROUTER_API_KEY",
        "OPENROUTER_BASE_URL",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    names.extend(
        config
            .providers
            .values()
            .filter_map(|p| p.api_key_env.clone()),
    );
    names
        .into_iter()
        .filter_map(|n| env(&n).map(|v| (n, v)))
        .collect()
}

impl Router {
    /// Builds the router from the project's config, the `--llm-for KEY=SPEC`
    /// overrides (in order; a later one replaces an earlier one with the same
    /// key) and `--llm SPEC`. Reads keys and base URLs from the process's
    /// environment. Fails on a bad spec or key, or a missing API key.
    pub fn from_config(
        config: &LlmConfig,
        overrides: &[(String, String)],
        default_spec: Option<&str>,
    ) -> Result<Router, ConfigError> {
        Router::from_config_with_env(config, overrides, default_spec, &|v| std::env::var(v).ok())
    }

    /// [`Router::from_config`] with the environment given as a function.
    pub fn from_config_with_env(
        config: &LlmConfig,
        overrides: &[(String, String)],
        default_spec: Option<&str>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Router, ConfigError> {
        let factory = Factory {
            config: config.clone(),
            env: snapshot_env(config, env),
            built: Mutex::new(HashMap::new()),
        };
        let target = |spec_text: &str| -> Result<Target, ConfigError> {
            let spec = BackendSpec::parse(spec_text, config)?;
            Ok(Target {
                spec: spec.to_string(),
                backend: factory.get(&spec)?,
            })
        };
        let chosen = default_spec.or(config.default.as_deref());
        let implicit_mock = chosen.is_none();
        let default = target(chosen.unwrap_or("mock"))?;
        let mut specs: BTreeMap<String, String> = BTreeMap::new();
        for (key, spec) in &config.routes {
            check_route_key(key).map_err(|message| ConfigError::Route {
                key: key.clone(),
                message,
            })?;
            specs.insert(key.clone(), spec.clone());
        }
        for (key, spec) in overrides {
            check_route_key(key).map_err(|message| ConfigError::Override {
                text: format!("{key}={spec}"),
                message,
            })?;
            specs.insert(key.clone(), spec.clone());
        }
        let mut routes = BTreeMap::new();
        for (key, spec) in specs {
            routes.insert(key, target(&spec)?);
        }
        Ok(Router {
            default,
            routes,
            implicit_mock,
            action_models: true,
            factory,
        })
    }

    /// A router with one backend for everything (for tests and embedding).
    pub fn with_backend(spec: impl Into<String>, backend: Arc<dyn LlmBackend>) -> Router {
        Router {
            default: Target {
                spec: spec.into(),
                backend,
            },
            routes: BTreeMap::new(),
            implicit_mock: false,
            action_models: false,
            factory: Factory {
                config: LlmConfig::default(),
                env: BTreeMap::new(),
                built: Mutex::new(HashMap::new()),
            },
        }
    }

    /// Adds or replaces a route to an already built backend.
    pub fn route(
        mut self,
        key: impl Into<String>,
        spec: impl Into<String>,
        backend: Arc<dyn LlmBackend>,
    ) -> Router {
        self.routes.insert(
            key.into(),
            Target {
                spec: spec.into(),
                backend,
            },
        );
        self
    }

    /// True when nothing configured a default and the mock answers: the CLI
    /// says so on stderr.
    pub fn uses_mock_by_default(&self) -> bool {
        self.implicit_mock
    }

    /// The default's spec, e.g. `mock` or `openai:gpt-4o-mini`.
    pub fn default_spec(&self) -> &str {
        &self.default.spec
    }

    /// The routes, as (key, spec), sorted by key.
    pub fn routes(&self) -> Vec<(String, String)> {
        self.routes
            .iter()
            .map(|(k, t)| (k.clone(), t.spec.clone()))
            .collect()
    }

    /// The spec that answers calls of `action` at `lifeline`, ignoring any `model:` of the action.
    pub fn spec_for(&self, key: &CallKey) -> &str {
        &self.explicit(key).unwrap_or(&self.default).spec
    }

    fn explicit(&self, key: &CallKey) -> Option<&Target> {
        self.routes
            .get(&format!("{}.{}", key.lifeline, key.action))
            .or_else(|| self.routes.get(&key.action))
            .or_else(|| self.routes.get(&key.lifeline))
    }

    /// Where a request goes, after routes and the action's `model:`: a
    /// configured backend, or the spec of the action's model.
    fn choice<'r>(&'r self, request: &'r LlmRequest) -> Choice<'r> {
        if let Some(t) = self.explicit(&request.key) {
            return Choice::Target(t);
        }
        let Some(model) = request
            .model
            .as_deref()
            .map(str::trim)
            .filter(|m| self.action_models && !m.is_empty())
        else {
            return Choice::Target(&self.default);
        };
        let config = &self.factory.config;
        let Ok(BackendSpec::Model { provider, .. }) =
            BackendSpec::parse(&self.default.spec, config)
        else {
            // A mock or scripted default (or a hand-built router) ignores `model:`.
            return Choice::Target(&self.default);
        };
        let spec = match model.split_once(':') {
            Some((p, _)) if config.knows_provider(p) || p == "mock" || p == "scripted" => {
                BackendSpec::parse(model, config)
            }
            _ if model == "mock" => Ok(BackendSpec::Mock { latency: None }),
            _ => Ok(BackendSpec::Model {
                provider,
                model: model.to_owned(),
            }),
        };
        Choice::Model { model, spec }
    }

    /// The backend for a request, after routes and the action's `model:`.
    pub fn backend_for(&self, request: &LlmRequest) -> Result<Arc<dyn LlmBackend>, LlmError> {
        match self.choice(request) {
            Choice::Target(t) => Ok(t.backend.clone()),
            Choice::Model { model, spec } => {
                spec.and_then(|s| self.factory.get(&s))
                    .map_err(|e| LlmError::Permanent {
                        backend: format!("model {model:?} of {}", request.key.action),
                        message: e.to_string(),
                    })
            }
        }
    }

    /// Every distinct configured backend with the keys routed to it
    /// (`default` for the default), for `troupe models check`.
    pub fn configured(&self) -> Vec<(String, Arc<dyn LlmBackend>, Vec<String>)> {
        let mut out: Vec<(String, Arc<dyn LlmBackend>, Vec<String>)> = vec![(
            self.default.spec.clone(),
            self.default.backend.clone(),
            vec!["default".into()],
        )];
        for (key, t) in &self.routes {
            match out.iter_mut().find(|(s, _, _)| *s == t.spec) {
                Some((_, _, keys)) => keys.push(key.clone()),
                None => out.push((t.spec.clone(), t.backend.clone(), vec![key.clone()])),
            }
        }
        out
    }
}

impl LlmBackend for Router {
    fn describe(&self) -> String {
        let mut s = format!("router: default {}", self.default.spec);
        if self.implicit_mock {
            s.push_str(" (nothing configured)");
        }
        for (k, t) in &self.routes {
            s.push_str(&format!("; {k} → {}", t.spec));
        }
        s
    }

    fn model(&self, request: &LlmRequest) -> Option<String> {
        Some(match self.choice(request) {
            Choice::Target(t) => t.spec.clone(),
            Choice::Model { spec: Ok(s), .. } => s.to_string(),
            Choice::Model { model, .. } => model.to_owned(),
        })
    }

    fn call<'a>(&'a self, request: &'a LlmRequest) -> BoxFuture<'a, Result<LlmAnswer, LlmError>> {
        Box::pin(async move {
            let backend = self.backend_for(request)?;
            let mut answer = backend.call(request).await?;
            answer.detail.cost_usd = self
                .factory
                .config
                .prices
                .cost(&answer.model, answer.usage.as_ref());
            Ok(answer)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::OutputSlot;
    use troupe_check::{Type, TypeTable};

    fn env(v: &str) -> Option<String> {
        match v {
            "OPENAI_API_KEY" => Some("sk-test-SECRET-openai".into()),
            "ANTHROPIC_API_KEY" => Some("sk-ant-SECRET".into()),
            _ => None,
        }
    }

    fn router(
        config: &str,
        overrides: &[&str],
        default: Option<&str>,
    ) -> Result<Router, ConfigError> {
        let c = LlmConfig::from_toml_str(config, None)?;
        let o: Vec<(String, String)> = overrides
            .iter()
            .map(|s| parse_override(s).unwrap())
            .collect();
        Router::from_config_with_env(&c, &o, default, &env)
    }

    fn key(l: &str, a: &str) -> CallKey {
        CallKey::new(l, a, 0)
    }

    #[test]
    fn nothing_configured_means_mock() {
        let r = router("", &[], None).unwrap();
        assert!(r.uses_mock_by_default());
        assert_eq!(r.default_spec(), "mock");
        assert!(
            !router("", &[], Some("mock"))
                .unwrap()
                .uses_mock_by_default()
        );
        assert!(
            !router("[llm]\ndefault = \"mock\"", &[], None)
                .unwrap()
                .uses_mock_by_default()
        );
    }

    #[test]
    fn most_specific_route_wins() {
        let config = r#"
            [llm]
            default = "openai:gpt-4o-mini"
            [llm.route]
            "Planner" = "anthropic:claude-sonnet-4-5"
            "review_plan" = "mock"
            "Planner.make_plan" = "ollama:qwen2.5:7b"
        "#;
        let r = router(config, &[], None).unwrap();
        assert_eq!(
            r.spec_for(&key("Planner", "make_plan")),
            "ollama:qwen2.5:7b"
        );
        assert_eq!(
            r.spec_for(&key("Planner", "review_plan")),
            "mock",
            "action beats lifeline"
        );
        assert_eq!(
            r.spec_for(&key("Planner", "other")),
            "anthropic:claude-sonnet-4-5"
        );
        assert_eq!(r.spec_for(&key("Reviewer", "review_plan")), "mock");
        assert_eq!(r.spec_for(&key("Reviewer", "other")), "openai:gpt-4o-mini");

        // The command line replaces entries with the same key and the default; specificity still rules.
        let r = router(
            config,
            &["Planner=mock:1ms", "Reviewer.review_plan=openai:gpt-4o"],
            Some("ollama:llama3"),
        )
        .unwrap();
        assert_eq!(r.spec_for(&key("Planner", "other")), "mock:1ms");
        assert_eq!(
            r.spec_for(&key("Planner", "make_plan")),
            "ollama:qwen2.5:7b"
        );
        assert_eq!(r.spec_for(&key("Reviewer", "review_plan")), "openai:gpt-4o");
        assert_eq!(r.spec_for(&key("Executor", "execute")), "ollama:llama3");
        // One instance per distinct spec.
        let configured = r.configured();
        assert_eq!(configured.len(), 5);
        assert_eq!(configured[0].0, "ollama:llama3");
    }

    #[test]
    fn action_model_applies_only_under_a_provider_default() {
        let types = Arc::new(TypeTable::default());
        let mut req = LlmRequest::new(
            key("A", "f"),
            "p",
            vec![OutputSlot::new("t", Type::Text)],
            types,
        );
        req.model = Some("gpt-4o".into());
        let mock = router("", &[], None).unwrap();
        assert_eq!(mock.backend_for(&req).unwrap().describe(), "mock");
        let r = router("", &["g=mock"], Some("openai:gpt-4o-mini")).unwrap();
        assert!(
            r.backend_for(&req)
                .unwrap()
                .describe()
                .starts_with("openai:gpt-4o @")
        );
        req.model = Some("anthropic:claude-haiku-4-5".into());
        assert!(
            r.backend_for(&req)
                .unwrap()
                .describe()
                .starts_with("anthropic:claude-haiku-4-5 @")
        );
        req.model = Some("ollama:qwen2.5:7b".into());
        assert!(
            r.backend_for(&req)
                .unwrap()
                .describe()
                .starts_with("ollama:qwen2.5:7b @")
        );
        req.model = Some("openrouter:x".into());
        let err = r.backend_for(&req).unwrap_err().to_string();
        assert!(err.contains("OPENROUTER_API_KEY"), "{err}");
        let hand = Router::with_backend("openai:x", Arc::new(MockBackend::new()));
        assert_eq!(
            hand.backend_for(&req).unwrap().describe(),
            "mock",
            "a hand-built router ignores `model:`"
        );
        req.key.action = "g".into();
        assert_eq!(
            r.backend_for(&req).unwrap().describe(),
            "mock",
            "an explicit route beats `model:`"
        );
    }

    #[test]
    fn errors_are_clear_and_keys_never_shown() {
        let e = router("", &[], Some("openrouter:x"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "openrouter:x needs an API key: set OPENROUTER_API_KEY in the environment"
        );
        let e = router("[llm.route]\n\"a.b.c\" = \"mock\"", &[], None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("Lifeline.action"), "{e}");
        assert!(
            parse_override("Planner")
                .unwrap_err()
                .to_string()
                .contains("KEY=SPEC")
        );
        assert!(parse_override("Pla nner=mock").is_err());
        assert!(
            router("", &[], Some("nope:x"))
                .unwrap_err()
                .to_string()
                .contains("unknown provider")
        );

        let r = router(
            "[llm.route]\nPlanner = \"anthropic:claude-sonnet-4-5\"",
            &[],
            Some("openai:gpt-4o-mini"),
        )
        .unwrap();
        let shown = format!("{r:?}\n{}\n{:?}", r.describe(), r.configured());
        assert!(!shown.contains("SECRET"), "{shown}");
    }
}
