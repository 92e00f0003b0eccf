//! The seams through which a run performs actions: host-registered `extern`
//! functions (pure and effects) and the human inbox. LLM calls go through
//! [`troupe_llm::LlmBackend`].

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use troupe_check::ir::AnswerKind;
use troupe_check::{Type, Value};
use troupe_llm::BoxFuture;

/// A host function behind `pure f(…) -> T extern`: deterministic, synchronous.
pub type PureFn = dyn Fn(&[Value]) -> Result<Vec<Value>, String> + Send + Sync;

/// A host function behind `effect f(…) -> T extern`.
pub type EffectFn =
    dyn Fn(EffectCall) -> BoxFuture<'static, Result<Vec<Value>, String>> + Send + Sync;

/// What an effect receives: its arguments and a key that names this call
/// stably across restarts, for idempotent delivery.
#[derive(Debug, Clone)]
pub struct EffectCall {
    pub args: Vec<Value>,
    /// `run/lifeline/action#occurrence`: the same call after a restart has
    /// the same key.
    pub idempotency_key: String,
}

/// The host functions registered for `extern` actions, by action name.
#[derive(Clone, Default)]
pub struct Externs {
    pub(crate) pure: HashMap<String, Arc<PureFn>>,
    pub(crate) effects: HashMap<String, Arc<EffectFn>>,
}

impl std::fmt::Debug for Externs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut pure: Vec<_> = self.pure.keys().collect();
        let mut effects: Vec<_> = self.effects.keys().collect();
        pure.sort();
        effects.sort();
        f.debug_struct("Externs")
            .field("pure", &pure)
            .field("effects", &effects)
            .finish()
    }
}

impl Externs {
    pub fn new() -> Externs {
        Externs::default()
    }

    /// Registers the body of `pure name(…) extern`.
    pub fn pure(
        &mut self,
        name: &str,
        f: impl Fn(&[Value]) -> Result<Vec<Value>, String> + Send + Sync + 'static,
    ) -> &mut Self {
        self.pure.insert(name.to_owned(), Arc::new(f));
        self
    }

    /// Whether `pure name(…) extern` has a body here.
    pub fn has_pure(&self, name: &str) -> bool {
        self.pure.contains_key(name)
    }

    /// Whether `effect name(…) extern` has a body here.
    pub fn has_effect(&self, name: &str) -> bool {
        self.effects.contains_key(name)
    }

    /// Registers the body of `effect name(…) extern`.
    pub fn effect<F, Fut>(&mut self, name: &str, f: F) -> &mut Self
    where
        F: Fn(EffectCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<Value>, String>> + Send + 'static,
    {
        self.effects
            .insert(name.to_owned(), Arc::new(move |call| Box::pin(f(call))));
        self
    }
}

/// A call of a `tool` action, as a [`ToolHost`] receives it.
#[derive(Debug, Clone)]
pub struct ToolCall {
    pub server: Arc<troupe_check::ir::McpServer>,
    /// The tool's name on the server.
    pub tool: String,
    /// The arguments by parameter name; optional ones left out by the caller are absent.
    pub arguments: serde_json::Map<String, serde_json::Value>,
    /// The declared outputs, to type the tool's result.
    pub outputs: Vec<troupe_llm::OutputSlot>,
    pub types: Arc<troupe_check::TypeTable>,
    /// Stable across restarts: travels in the request's `_meta`.
    pub idempotency_key: String,
}

/// Calls tools of MCP servers (the `troupe-mcp` crate implements it).
pub trait ToolHost: Send + Sync + std::fmt::Debug {
    /// Performs the call; the values are checked against the outputs by the runtime.
    fn call(&self, call: ToolCall) -> BoxFuture<'static, Result<Vec<Value>, String>>;

    /// What the server says of a tool in its `tools/list` (description,
    /// whether it is destructive), for a model that may call it; `None`
    /// when it cannot tell (the default).
    fn describe(
        &self,
        server: Arc<troupe_check::ir::McpServer>,
        tool: String,
    ) -> BoxFuture<'static, Option<ToolInfo>> {
        let _ = (server, tool);
        Box::pin(async { None })
    }

    /// The server's `tools/list` entries as it sent them (JSON), for the
    /// contracts it publishes in `_meta`, its annotations and the lint;
    /// `None` when it cannot tell (the default, or the server cannot be
    /// reached: the first call will say why).
    fn list(
        &self,
        server: Arc<troupe_check::ir::McpServer>,
    ) -> BoxFuture<'static, Option<ListedTools>> {
        let _ = server;
        Box::pin(async { None })
    }
}

/// A server's tool list, as [`ToolHost::list`] gives it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListedTools {
    /// The name the server gives itself in `initialize` (a lock made with
    /// `troupe mcp lock` is keyed by it).
    pub server_name: Option<String>,
    /// The `tools/list` entries, as sent.
    pub tools: Vec<serde_json::Value>,
}

/// What a server says of one of its tools.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolInfo {
    pub description: Option<String>,
    /// Whether a call changes the world irreversibly, by its annotations
    /// (`readOnlyHint` false and `destructiveHint`, which MCP defaults to
    /// true): asked only for a tool no source gives a contract (a contract,
    /// from the sidecar or `_meta`, answers through the [`ToolPolicy`]).
    /// `None`: unknown.
    pub destructive: Option<bool>,
}

/// A tool call a run made (by a `tool` action or by a model), kept for the
/// run's contract checks: the values it was called with and gave.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolRecord {
    pub action: troupe_check::ir::ActionId,
    pub args: Vec<Value>,
    pub outputs: Vec<Value>,
}

/// The run-time side of the tools' contracts, for calls a model chooses
/// (`troupe-host` implements it over `troupe-contracts`).
pub trait ToolPolicy: Send + Sync + std::fmt::Debug {
    /// Whether a call of `tool` needs a person's confirmation first, by
    /// its contract; `None` when it has no contract (the runtime then asks
    /// the [`ToolHost`] whether the tool is destructive).
    fn needs_confirmation(&self, tool: troupe_check::ir::ActionId) -> Option<bool>;

    /// Why calling `tool` with `args` after the run's successful calls
    /// `earlier` breaks a `requires` relation of its contract (`None`: it
    /// does not).
    fn unmet_requirement(
        &self,
        tool: troupe_check::ir::ActionId,
        args: &[Value],
        earlier: &[ToolRecord],
    ) -> Option<String>;
}

/// No contracts: every tool is judged by what its server says of it.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoContracts;

impl ToolPolicy for NoContracts {
    fn needs_confirmation(&self, _: troupe_check::ir::ActionId) -> Option<bool> {
        None
    }

    fn unmet_requirement(
        &self,
        _: troupe_check::ir::ActionId,
        _: &[Value],
        _: &[ToolRecord],
    ) -> Option<String> {
        None
    }
}

/// A task for a person, as the inbox receives it.
#[derive(Debug, Clone)]
pub struct HumanTask {
    /// Stable within a run: `lifeline/action#occurrence`.
    pub key: String,
    pub run: String,
    pub lifeline: String,
    pub action: String,
    pub prompt: String,
    pub prefill: Option<String>,
    pub answer: AnswerKind,
    /// The values to choose from, for a `select`.
    pub options: Vec<String>,
    /// The declared answer type.
    pub ty: Type,
    /// When nobody answers in time, the clock answers with the default
    /// (first answer wins).
    pub deadline: Option<troupe_check::ir::Deadline>,
    /// Announce the task again this often while it waits (`remind:`).
    pub remind: Option<std::time::Duration>,
    /// Told by the inbox once the task is recorded and waits for an answer.
    pub asked: Asked,
}

/// An inbox's word that a person's task is recorded and waits for an
/// answer. A run parks (gives its lease back, see `RunOptions::park_after`)
/// only after each person it waits on was asked so: parked before its task
/// was recorded, a run would wait on a task nobody can see or answer, not
/// even the clock of its deadline.
#[derive(Debug, Clone, Default)]
pub struct Asked {
    flag: Arc<std::sync::atomic::AtomicBool>,
    wake: Option<Arc<tokio::sync::Notify>>,
}

impl Asked {
    /// A signal that wakes `wake` when given.
    pub(crate) fn waking(wake: Arc<tokio::sync::Notify>) -> Asked {
        Asked {
            flag: Arc::default(),
            wake: Some(wake),
        }
    }

    /// The task is recorded and nobody answered it yet.
    pub fn waiting(&self) {
        if !self.flag.swap(true, std::sync::atomic::Ordering::AcqRel)
            && let Some(wake) = &self.wake
        {
            wake.notify_one();
        }
    }

    /// Whether [`Asked::waiting`] was said.
    pub fn is_waiting(&self) -> bool {
        self.flag.load(std::sync::atomic::Ordering::Acquire)
    }
}

/// Where human tasks go and their answers come from.
pub trait HumanInbox: Send + Sync + std::fmt::Debug {
    /// Asks a person. The answer is checked against `task.ty` by the runtime.
    fn ask(&self, task: HumanTask) -> BoxFuture<'static, Result<serde_json::Value, String>>;
}

/// An inbox that refuses every task, for runs that must not wait on people.
#[derive(Debug, Clone, Default)]
pub struct NoHumans;

impl HumanInbox for NoHumans {
    fn ask(&self, task: HumanTask) -> BoxFuture<'static, Result<serde_json::Value, String>> {
        // Nobody can answer: the deadline, if any, will.
        if let Some(d) = task.deadline {
            return Box::pin(async move {
                tokio::time::sleep(d.after).await;
                Ok(d.default)
            });
        }
        let msg = format!(
            "`{}` at {} needs a person's answer, but no inbox is available; pass --answers FILE or run from a terminal",
            task.action, task.lifeline
        );
        Box::pin(async move { Err(msg) })
    }
}

/// Answers from a JSON object keyed by `Lifeline.action` or `action`; a list
/// answers successive tasks of that key in order.
#[derive(Debug, Clone)]
pub struct ScriptedHumans {
    answers: serde_json::Map<String, serde_json::Value>,
}

impl ScriptedHumans {
    pub fn new(answers: serde_json::Map<String, serde_json::Value>) -> ScriptedHumans {
        ScriptedHumans { answers }
    }

    pub fn from_file(path: &std::path::Path) -> Result<ScriptedHumans, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        match serde_json::from_str(&text) {
            Ok(serde_json::Value::Object(map)) => Ok(ScriptedHumans::new(map)),
            Ok(_) => Err(format!(
                "{}: expected a JSON object keyed by `Lifeline.action` or `action`",
                path.display()
            )),
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    }
}

impl HumanInbox for ScriptedHumans {
    fn ask(&self, task: HumanTask) -> BoxFuture<'static, Result<serde_json::Value, String>> {
        let qualified = format!("{}.{}", task.lifeline, task.action);
        let occurrence: usize = task
            .key
            .rsplit('#')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        let answer = match self
            .answers
            .get(&qualified)
            .or_else(|| self.answers.get(&task.action))
        {
            // Unscripted, with a deadline: nobody answers, the clock does.
            None if task.deadline.is_some() => {
                let d = task.deadline.clone().unwrap();
                return Box::pin(async move {
                    tokio::time::sleep(d.after).await;
                    Ok(d.default)
                });
            }
            None => Err(format!(
                "no scripted answer for `{qualified}` or `{}`",
                task.action
            )),
            Some(serde_json::Value::Array(list)) => {
                list.get(occurrence).cloned().ok_or_else(|| {
                    format!(
                        "the scripted answers for `{}` ran out after {} task(s)",
                        task.action,
                        list.len()
                    )
                })
            }
            Some(v) => Ok(v.clone()),
        };
        Box::pin(async move { answer })
    }
}
