//! The backends of a run: the model router, command externs, the tools
//! (listed, linted and verified under their published contracts before the
//! run starts) and people, assembled into an engine.

use crate::{
    Compiled, HostConfig, HostError, Notice, ProjectConfig, RunSettings, externs, policy, project,
};
use std::sync::Arc;
use std::time::Duration;
use troupe_check::Value;
use troupe_check::ir::{ActionKind, Program};
use troupe_llm::{BoxFuture, LlmBackend, LlmConfig, MockBackend, Router, parse_override};
use troupe_runtime::{Engine, EngineBuilder, HumanInbox, ToolHost};

/// The tools of a run: a host, and what to do when the run ends.
pub struct ToolSession {
    pub host: Arc<dyn ToolHost>,
    /// Closes the connections the run opened (MCP servers).
    pub close: Option<Box<dyn FnOnce() -> BoxFuture<'static, ()> + Send>>,
}

impl std::fmt::Debug for ToolSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSession")
            .field("host", &self.host)
            .finish()
    }
}

/// Makes the tool host of a run (the MCP host lives in `troupe-mcp`, which
/// builds on this crate; it comes in through this trait).
pub trait ToolsFactory: Send + Sync + std::fmt::Debug {
    fn session(&self, program: &Program, options: &ToolOptions) -> ToolSession;
}

/// How a run's tool calls are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolOptions {
    /// How long one tool call may take before it fails (`[mcp]
    /// call_timeout` in `troupe.toml`): a server that never answers, or
    /// whose answer the transport drops (a result over 16 MiB), ends the
    /// call with an error instead of holding the run forever.
    pub call_timeout: Duration,
}

impl Default for ToolOptions {
    fn default() -> ToolOptions {
        ToolOptions {
            call_timeout: project::DEFAULT_CALL_TIMEOUT,
        }
    }
}

/// No tools: a run that calls one fails with a clear error.
#[derive(Debug, Default)]
pub struct NoTools;

impl ToolsFactory for NoTools {
    fn session(&self, _: &Program, _: &ToolOptions) -> ToolSession {
        #[derive(Debug)]
        struct Refuse;
        impl ToolHost for Refuse {
            fn call(
                &self,
                call: troupe_runtime::ToolCall,
            ) -> BoxFuture<'static, Result<Vec<Value>, String>> {
                Box::pin(async move {
                    Err(format!(
                        "no tool host is configured here, so `{}` cannot be called",
                        call.tool
                    ))
                })
            }
        }
        ToolSession {
            host: Arc::new(Refuse),
            close: None,
        }
    }
}

/// What a generated plan must pass besides the language's rules: the
/// contracts of the tools it calls, as a workflow of the file would
/// (sidecars relative to the workflow file).
fn plan_verifier(
    file: &str,
) -> impl Fn(&Program, &str) -> Vec<troupe_syntax::Diagnostic> + Send + Sync + 'static {
    let base = policy::base_dir(file);
    move |plan, source| {
        troupe_contracts::verify_workflows_with(
            plan,
            Some(source),
            &base,
            &troupe_contracts::VerifyOptions::default(),
        )
    }
}

/// The backends of runs: models, command externs, tools. Needs no store:
/// in-memory runs (`troupe run` without `--store`) use it directly.
#[derive(Clone)]
pub struct Backends {
    config: HostConfig,
    tools: Arc<dyn ToolsFactory>,
}

impl std::fmt::Debug for Backends {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backends")
            .field("config", &self.config)
            .finish()
    }
}

impl Backends {
    pub fn new(config: HostConfig, tools: Arc<dyn ToolsFactory>) -> Backends {
        Backends { config, tools }
    }

    pub fn config(&self) -> &HostConfig {
        &self.config
    }

    fn notify(&self, notice: Notice) {
        if let Some(o) = &self.config.observer {
            o(&notice);
        }
    }

    /// The engine of a run of `compiled` with `settings`: the model router,
    /// command externs (mocks only when the settings ask for them), tools
    /// and `humans`. Refuses a workflow whose `extern`s have no
    /// implementation unless mocks are asked for. The servers of its tools
    /// are listed first: the contracts they publish are merged with the
    /// sidecars, the workflow is verified again under them (refused on an
    /// error) and enforced on the calls models choose (see [`policy`]).
    pub async fn engine(
        &self,
        compiled: &Compiled,
        settings: &RunSettings,
        run_name: &str,
        humans: Arc<dyn HumanInbox>,
    ) -> Result<(Engine, ToolSession), HostError> {
        let router = self.router(settings)?;
        if router.uses_mock_by_default() {
            self.notify(Notice::MockModel);
        }
        let commands = externs::load(&self.config.config_dir)?;
        let mut ext = self.config.externs.clone();
        externs::register(&compiled.program, &commands, run_name, &mut ext)?;
        let project = ProjectConfig::load(&self.config.config_dir)?;
        let tools = self.tools.session(
            &compiled.program,
            &ToolOptions {
                call_timeout: project.call_timeout()?,
            },
        );
        let listed = policy::listed(&compiled.program, tools.host.as_ref()).await;
        if !listed.is_empty() {
            let lock = policy::project_lock(&self.config.config_dir)?;
            policy::lint_listed(&listed, lock.as_ref(), &project.contracts.allow)?;
        }
        let published = Arc::new(policy::published(&listed));
        let findings = policy::verify_published(compiled, &published)?;
        if !findings.is_empty() {
            self.notify(Notice::ContractFindings {
                file: compiled.file.clone(),
                source: compiled.source.clone(),
                diagnostics: findings,
            });
        }
        let llm: Arc<dyn LlmBackend> = match &self.config.llm {
            Some(backend) => backend.clone(),
            None => Arc::new(router),
        };
        let mut builder = EngineBuilder::from_program((*compiled.program).clone())
            .source(&compiled.source)
            .workflow(&compiled.workflow().name)
            .llm(llm)
            .externs(ext)
            .humans(humans)
            .tools(tools.host.clone())
            .tool_policy(Arc::new(policy::ContractPolicy::load(
                compiled.program.clone(),
                &compiled.file,
                Some(&published),
            )))
            .plan_verifier(plan_verifier(&compiled.file));
        if let Some(t) = settings.timeout() {
            builder = builder.default_timeout(t);
        }
        let unbound = builder.unbound_externs();
        if !unbound.is_empty() {
            if !settings.mock_externs {
                return Err(HostError::UnboundExterns { names: unbound });
            }
            self.notify(Notice::MockedExterns(unbound));
            builder = builder.mock_unbound_externs(Arc::new(MockBackend::new()));
        }
        Ok((builder.build()?, tools))
    }

    /// Whether the models `settings` name can be reached as configured (an
    /// API key in the environment, a known provider): checked before a new
    /// run is recorded, so that a run that cannot start is refused rather
    /// than left behind with no events.
    pub fn check_models(&self, settings: &RunSettings) -> Result<(), HostError> {
        if self.config.llm.is_some() {
            return Ok(());
        }
        self.router(settings).map(drop)
    }

    /// The model router `settings` ask for: the project's model
    /// configuration, the run's `--llm` and its `--llm-for` overrides.
    fn router(&self, settings: &RunSettings) -> Result<Router, HostError> {
        let config = LlmConfig::discover(&self.config.config_dir)?;
        let overrides = settings
            .llm_for
            .iter()
            .map(|s| parse_override(s))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Router::from_config(
            &config,
            &overrides,
            settings.llm.as_deref(),
        )?)
    }

    /// The `extern` actions of `compiled` that would have no
    /// implementation (no command in `troupe.toml`).
    pub fn unbound_externs(&self, compiled: &Compiled) -> Result<Vec<String>, HostError> {
        let commands = externs::load(&self.config.config_dir)?;
        Ok(compiled
            .program
            .actions
            .iter()
            .filter(|a| match &a.kind {
                ActionKind::Pure { body: None } => !self.config.externs.has_pure(&a.name),
                ActionKind::Effect { .. } => {
                    !commands.contains_key(&a.name) && !self.config.externs.has_effect(&a.name)
                }
                _ => false,
            })
            .map(|a| a.name.clone())
            .collect())
    }
}
