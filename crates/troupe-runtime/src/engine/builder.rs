//! Building an engine: the program checked and projected once, with its
//! performers bound (models, externs, tools, people, contracts).

use super::*;

/// Builds an [`Engine`].
pub struct EngineBuilder {
    program: Program,
    source: Option<String>,
    workflow: Option<String>,
    externs: Externs,
    llm: Option<Arc<dyn LlmBackend>>,
    mock: Option<Arc<dyn LlmBackend>>,
    humans: Arc<dyn HumanInbox>,
    tools: Option<Arc<dyn ToolHost>>,
    policy: Arc<dyn ToolPolicy>,
    timeouts: HashMap<String, Duration>,
    default_timeout: Option<Duration>,
    plan_verifier: Option<Arc<PlanVerifier>>,
}

impl std::fmt::Debug for EngineBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineBuilder")
            .field("workflow", &self.workflow)
            .field("externs", &self.externs)
            .finish()
    }
}

impl EngineBuilder {
    /// Starts from a source text; fails with its rendered-free diagnostics
    /// when it does not check.
    pub fn from_source(text: &str) -> Result<EngineBuilder, Vec<troupe_syntax::Diagnostic>> {
        let (program, diagnostics) = troupe_check::check_text(text);
        let program = program.ok_or(diagnostics)?;
        let mut b = EngineBuilder::from_program(program);
        b.source = Some(text.to_owned());
        Ok(b)
    }

    pub fn from_program(program: Program) -> EngineBuilder {
        EngineBuilder {
            program,
            source: None,
            workflow: None,
            externs: Externs::new(),
            llm: None,
            mock: None,
            humans: Arc::new(NoHumans),
            tools: None,
            policy: Arc::new(NoContracts),
            timeouts: HashMap::new(),
            default_timeout: None,
            plan_verifier: None,
        }
    }

    /// The source text the program was checked from, so that run errors
    /// name their line.
    pub fn source(mut self, text: &str) -> Self {
        self.source = Some(text.to_owned());
        self
    }

    /// The program being built into an engine.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// Which workflow to run, when the file has several.
    pub fn workflow(mut self, name: &str) -> Self {
        self.workflow = Some(name.to_owned());
        self
    }

    pub fn externs(mut self, externs: Externs) -> Self {
        self.externs = externs;
        self
    }

    pub fn llm(mut self, backend: Arc<dyn LlmBackend>) -> Self {
        self.llm = Some(backend);
        self
    }

    /// Answer `extern` actions that have no registered body with this
    /// backend (typically the mock), instead of refusing to build.
    pub fn mock_unbound_externs(mut self, backend: Arc<dyn LlmBackend>) -> Self {
        self.mock = Some(backend);
        self
    }

    pub fn humans(mut self, inbox: Arc<dyn HumanInbox>) -> Self {
        self.humans = inbox;
        self
    }

    /// Where `tool` actions are performed (MCP servers).
    pub fn tools(mut self, host: Arc<dyn ToolHost>) -> Self {
        self.tools = Some(host);
        self
    }

    /// The tools' contracts, enforced on the calls a model chooses
    /// (default: none; each tool is then judged by what its server says).
    pub fn tool_policy(mut self, policy: Arc<dyn ToolPolicy>) -> Self {
        self.policy = policy;
        self
    }

    /// A deadline for every asynchronous action without one of its own.
    pub fn default_timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = Some(timeout);
        self
    }

    /// A deadline for one action, by name.
    pub fn timeout(mut self, action: &str, timeout: Duration) -> Self {
        self.timeouts.insert(action.to_owned(), timeout);
        self
    }

    /// The names of `extern` actions with no registered body.
    pub fn unbound_externs(&self) -> Vec<String> {
        self.program
            .actions
            .iter()
            .filter(|a| match &a.kind {
                ActionKind::Pure { body: None } => !self.externs.pure.contains_key(&a.name),
                ActionKind::Effect { .. } => !self.externs.effects.contains_key(&a.name),
                ActionKind::Tool(_) => self.tools.is_none(),
                _ => false,
            })
            .map(|a| a.name.clone())
            .collect()
    }

    /// Checks a generated plan must pass besides the language's (the host
    /// verifies the contracts of the tools a plan calls).
    pub fn plan_verifier(
        mut self,
        verify: impl Fn(&Program, &str) -> Vec<troupe_syntax::Diagnostic> + Send + Sync + 'static,
    ) -> Self {
        self.plan_verifier = Some(Arc::new(verify));
        self
    }

    pub fn build(self) -> Result<Engine, RunError> {
        let workflow = match &self.workflow {
            Some(name) => self
                .program
                .workflows
                .iter()
                .position(|w| &w.name == name)
                .ok_or_else(|| {
                    let names: Vec<_> = self
                        .program
                        .workflows
                        .iter()
                        .map(|w| w.name.as_str())
                        .collect();
                    RunError::Setup(format!(
                        "no workflow named `{name}`; the file has {}",
                        names.join(", ")
                    ))
                })?,
            None if self.program.workflows.len() == 1 => 0,
            None if self.program.workflows.is_empty() => {
                return Err(RunError::Setup("the file declares no workflow".into()));
            }
            None => {
                let names: Vec<_> = self
                    .program
                    .workflows
                    .iter()
                    .map(|w| w.name.as_str())
                    .collect();
                return Err(RunError::Setup(format!(
                    "the file has several workflows ({}); choose one with --workflow",
                    names.join(", ")
                )));
            }
        };
        let mut performers = Vec::with_capacity(self.program.actions.len());
        for action in &self.program.actions {
            let performer = match &action.kind {
                ActionKind::Pure { body: Some(_) } => Performer::PureExpr,
                ActionKind::Pure { body: None } => match self.externs.pure.get(&action.name) {
                    Some(f) => Performer::PureHost(f.clone()),
                    None => self.unbound(&action.name, "pure")?,
                },
                ActionKind::Effect { .. } => match self.externs.effects.get(&action.name) {
                    Some(f) => Performer::Effect(f.clone()),
                    None => self.unbound(&action.name, "effect")?,
                },
                ActionKind::Llm(_) => Performer::Llm,
                ActionKind::Planner(_) => Performer::Planner,
                ActionKind::Human(_) => Performer::Human,
                ActionKind::Sleep => Performer::Sleep,
                ActionKind::Tool(_) => match &self.tools {
                    Some(host) => Performer::Tool(host.clone()),
                    None => self.unbound(&action.name, "tool")?,
                },
            };
            performers.push(performer);
        }
        let wf = &self.program.workflows[workflow];
        let Projected {
            monitor,
            flat,
            lanes,
            tag_lane,
            key_lane,
            forks,
            guards,
        } = projected(&self.program, wf)?;
        let mut stmt_spans = vec![Span::default(); wf.stmt_count as usize];
        collect_spans(&wf.body, &mut stmt_spans);
        let llm = match self.llm {
            Some(llm) => llm,
            None => match &self.mock {
                Some(mock) => mock.clone(),
                None if self
                    .program
                    .actions
                    .iter()
                    .any(|a| matches!(a.kind, ActionKind::Llm(_) | ActionKind::Planner(_))) =>
                {
                    return Err(RunError::Setup(
                        "the workflow calls a language model, but no LLM backend is configured"
                            .into(),
                    ));
                }
                None => Arc::new(NoModel),
            },
        };
        let types = Arc::new(self.program.types.clone());
        Ok(Engine {
            inner: Arc::new(Inner {
                types,
                lines: self.source.as_deref().map(LineIndex::new),
                program: Arc::new(self.program),
                workflow,
                flat,
                performers,
                llm,
                mock: self.mock,
                humans: self.humans,
                timeouts: self.timeouts,
                default_timeout: self.default_timeout,
                stmt_spans,
                semantics: std::sync::OnceLock::new(),
                monitor,
                lanes,
                tag_lane,
                key_lane,
                forks,
                guards,
                policy: self.policy,
                plan_verifier: self.plan_verifier,
            }),
        })
    }

    fn unbound(&self, name: &str, kind: &str) -> Result<Performer, RunError> {
        if self.mock.is_some() {
            Ok(Performer::Mock)
        } else {
            Err(RunError::Setup(format!(
                "no body is registered for `{kind} {name}(…) extern`; register one with Externs::{kind}"
            )))
        }
    }
}

/// What an engine keeps of a workflow's projection: the flat local
/// programs, the online monitor, and the `par` bookkeeping.
pub(super) struct Projected {
    pub(super) monitor: troupe_msc::Monitor,
    pub(super) flat: Vec<FlatProgram>,
    pub(super) lanes: Lanes,
    pub(super) tag_lane: HashMap<ControlTag, u32>,
    pub(super) key_lane: Vec<Vec<u32>>,
    pub(super) forks: Vec<bool>,
    pub(super) guards: Option<Arc<troupe_msc::cpl::Guards>>,
}

/// Projects `wf` of `program` once for an engine (the outer workflow's, or
/// a plan's).
pub(super) fn projected(program: &Program, wf: &Workflow) -> Result<Projected, RunError> {
    let projection =
        troupe_project::project(program, wf).map_err(|e| RunError::Setup(e.to_string()))?;
    // The online monitor's plans, made once per engine from the same
    // projection; each run gets a fresh cursor over them.
    let monitor = troupe_msc::Monitor::with_projection(wf, &projection);
    let flat = projection.flatten();
    let lanes = projection.lanes.clone();
    let tag_lane = projection
        .constructs
        .iter()
        .map(|c| (c.tag, lanes.of(c.stmt)))
        .collect();
    let key_lane = if lanes.is_empty() {
        Vec::new()
    } else {
        flat.iter()
            .map(|f| {
                f.ops
                    .iter()
                    .map(|op| match op {
                        Op::Act { stmt, .. } => lanes.key_lane(f.lifeline, *stmt),
                        _ => 0,
                    })
                    .collect()
            })
            .collect()
    };
    let forks = flat
        .iter()
        .map(|f| {
            f.ops
                .iter()
                .any(|op| matches!(op, Op::Fork { parts, .. } if !parts.is_empty()))
        })
        .collect();
    Ok(Projected {
        monitor,
        flat,
        lanes,
        tag_lane,
        key_lane,
        forks,
        guards: troupe_msc::cpl::Guards::new(wf),
    })
}

pub(super) fn collect_spans(block: &Block, out: &mut [Span]) {
    for stmt in &block.stmts {
        if let Some(slot) = out.get_mut(stmt.id.0 as usize) {
            *slot = stmt.span;
        }
        match &stmt.kind {
            StmtKind::If {
                then, otherwise, ..
            } => {
                collect_spans(then, out);
                collect_spans(otherwise, out);
            }
            StmtKind::While { body, exit, .. } => {
                collect_spans(body, out);
                collect_spans(exit, out);
            }
            StmtKind::Par { branches } => branches.iter().for_each(|b| collect_spans(b, out)),
            StmtKind::Msg { .. } | StmtKind::Act { .. } => {}
        }
    }
}

/// A backend for workflows without `llm` actions.
#[derive(Debug)]
pub(super) struct NoModel;

impl LlmBackend for NoModel {
    fn describe(&self) -> String {
        "none".into()
    }
    fn call<'a>(
        &'a self,
        _: &'a LlmRequest,
    ) -> troupe_llm::BoxFuture<'a, Result<troupe_llm::LlmAnswer, troupe_llm::LlmError>> {
        Box::pin(async {
            Err(troupe_llm::LlmError::Permanent {
                backend: "none".into(),
                message: "no LLM backend".into(),
            })
        })
    }
}
