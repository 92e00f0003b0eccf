//! Tool-calling `llm` actions: the conversation loop, with the tools'
//! contracts enforced for every call the model chooses.
//!
//! One model turn is one [`LlmBackend::call`]: the model either gives the
//! declared outputs (read and re-asked exactly as a single-turn answer) or
//! asks for tool calls. Each call is checked and run here, and its result
//! or error goes back to the model, until it answers or has had
//! `max_steps` turns. What the model writes is never trusted: an unknown
//! tool, arguments that are not a JSON object of the declared parameters'
//! types, a call that breaks a `requires` relation, a call a person
//! declined — each is an error the model reads (and the turn counts), never
//! a failed run and never a call the server sees. A turn makes at most
//! [`MAX_CALLS_PER_TURN`] calls, so an action makes at most `max_steps`
//! times that many.
//!
//! Journal: every turn and every call is a sub-step of the action's step
//! (`Lifeline/action#k/turn#t`, `Lifeline/action#k/TOOL#n`,
//! `Lifeline/action#k/confirm#n`, with `n` the call's index in the
//! conversation), recorded before the conversation goes on. A resumed run
//! takes turns, results and confirmations from the journal and calls
//! neither the model nor the tools again; a call of a non-idempotent tool
//! that started and never finished waits for `troupe resolve`, like an
//! effect. The idempotency key of a call is `run/Lifeline/action#k/TOOL#n`.

use crate::actions::{HumanInbox, HumanTask, ToolCall, ToolHost, ToolPolicy, ToolRecord};
use crate::journal::{LlmCall, Recorded, RunJournal, StepKey, StepKind};
use serde_json::{Map, Value as J, json};
use std::sync::{Arc, Mutex};
use tracing::Instrument;
use troupe_check::ir::{ActionId, AnswerKind, ToolAction};
use troupe_check::{Type, TypeTable, Value};
use troupe_llm::{
    LlmAnswer, LlmBackend, LlmError, LlmRequest, OutputSlot, ToolSpec, ToolUse, Turn,
};

/// `max_steps:` when an action sets none.
pub const DEFAULT_MAX_STEPS: u32 = 8;

/// A tool result longer than this is cut before it goes to the model (the
/// whole result is still what the run records).
const MAX_RESULT_CHARS: usize = 16_000;

/// The tool calls one model turn may make; the rest of a turn's calls are
/// not made. With `max_steps` turns this also bounds an action's calls
/// (and so what a conversation can cost a server): a model asking 10,000
/// calls in one turn makes 16.
pub const MAX_CALLS_PER_TURN: usize = 16;

/// Why a conversation stopped without outputs.
#[derive(Debug)]
pub(crate) enum Stop {
    /// The model failed, or never answered within `max_steps`.
    Failed(String),
    /// A non-idempotent call started before a crash and never finished.
    NeedsResolution(String),
    /// The journal failed.
    Journal(String),
}

/// How a tool offered to the model is performed.
#[derive(Clone)]
pub(crate) enum Runner {
    Host(Arc<dyn ToolHost>),
    /// An unbound tool answered by the mock backend (mocks asked for).
    Mock(Arc<dyn LlmBackend>),
}

/// A tool the model may call.
#[derive(Clone)]
pub(crate) struct Offered {
    pub(crate) action: ActionId,
    pub(crate) name: String,
    /// Name, type and default of each parameter.
    pub(crate) params: Vec<(String, Type, Option<Value>)>,
    pub(crate) outputs: Vec<OutputSlot>,
    pub(crate) tool: ToolAction,
    pub(crate) runner: Runner,
}

/// One conversation: an `llm` action with `tools:` called once.
pub(crate) struct Agent {
    pub(crate) step: StepKey,
    pub(crate) run: String,
    /// The run's identity, the stem of its tool calls' idempotency keys.
    pub(crate) uid: Arc<str>,
    /// The first request (prompt, outputs); tools are filled in here.
    pub(crate) request: LlmRequest,
    pub(crate) offered: Vec<Offered>,
    pub(crate) backend: Arc<dyn LlmBackend>,
    pub(crate) journal: Option<Arc<dyn RunJournal>>,
    pub(crate) humans: Arc<dyn HumanInbox>,
    pub(crate) policy: Arc<dyn ToolPolicy>,
    /// The run's successful tool calls so far (for `requires`).
    pub(crate) log: Arc<Mutex<Vec<ToolRecord>>>,
    /// The calls that did not happen as the model asked, one line each.
    pub(crate) unmade: Arc<Mutex<Vec<String>>>,
    pub(crate) types: Arc<TypeTable>,
    pub(crate) max_steps: u32,
}

/// What one model turn gave, as journaled.
enum TurnOutcome {
    Answer(Vec<Value>),
    Calls {
        text: Option<String>,
        calls: Vec<ToolUse>,
    },
}

/// What a call gave the model.
struct Reply {
    content: String,
    is_error: bool,
}

impl Agent {
    /// The sub-step `what#n` of the action's step.
    fn sub(&self, what: &str, n: u64) -> StepKey {
        StepKey {
            lifeline: self.step.lifeline.clone(),
            action: format!("{}#{}/{what}", self.step.action, self.step.occurrence),
            occurrence: n,
        }
    }

    fn recorded(&self, key: &StepKey) -> Option<Recorded> {
        self.journal.as_ref().and_then(|j| j.recorded(key))
    }

    async fn record(
        &self,
        key: &StepKey,
        kind: StepKind,
        args: &[Value],
        out: &[Value],
    ) -> Result<(), Stop> {
        match &self.journal {
            Some(j) => j.record(key, kind, args, out).await.map_err(Stop::Journal),
            None => Ok(()),
        }
    }

    pub(crate) async fn run(mut self) -> Result<Vec<Value>, Stop> {
        self.request.tools = self.specs().await;
        let mut conversation: Vec<Turn> = Vec::new();
        let mut calls = 0u64;
        for turn in 0..self.max_steps {
            let key = self.sub("turn", u64::from(turn));
            let outcome = match self.recorded(&key) {
                Some(Recorded::Done(values)) => self.read_turn(&values).ok_or_else(|| {
                    Stop::Journal(format!("the record of {key} is not a model turn"))
                })?,
                _ => {
                    let mut request = self.request.clone();
                    request.conversation = conversation.clone();
                    let answer =
                        model_call(&*self.backend, &request, self.journal.as_deref(), &key)
                            .await
                            .map_err(|e| Stop::Failed(e.to_string()))?;
                    let outcome = if answer.tool_calls.is_empty() {
                        TurnOutcome::Answer(answer.values)
                    } else {
                        TurnOutcome::Calls {
                            text: None,
                            calls: answer.tool_calls,
                        }
                    };
                    let json = self.turn_json(&outcome);
                    self.record(&key, StepKind::Llm, &[], &[json]).await?;
                    outcome
                }
            };
            match outcome {
                TurnOutcome::Answer(values) => return Ok(values),
                TurnOutcome::Calls {
                    text,
                    calls: mut uses,
                } => {
                    // A turn's calls beyond the cap are not made, nor kept
                    // in the conversation (its next request stays small);
                    // the last result says so.
                    let asked = uses.len();
                    uses.truncate(MAX_CALLS_PER_TURN);
                    conversation.push(Turn::Calls {
                        text,
                        calls: uses.clone(),
                    });
                    let last = uses.len().saturating_sub(1);
                    for (i, call) in uses.into_iter().enumerate() {
                        let mut reply = self.tool_call(&call, calls).await?;
                        if reply.is_error
                            && let Ok(mut unmade) = self.unmade.lock()
                        {
                            unmade.push(format!(
                                "{} call #{calls}: {}",
                                self.step,
                                excerpt(&reply.content, 400)
                            ));
                        }
                        calls += 1;
                        if i == last && asked > MAX_CALLS_PER_TURN {
                            reply.content.push_str(&format!(
                                "\n(Only the first {MAX_CALLS_PER_TURN} of the {asked} tool calls \
                                 of this turn were made: a turn makes at most \
                                 {MAX_CALLS_PER_TURN}. Ask again for the rest if they are needed.)"
                            ));
                        }
                        conversation.push(Turn::Result {
                            id: call.id.clone(),
                            name: call.name.clone(),
                            content: reply.content,
                            is_error: reply.is_error,
                        });
                    }
                }
            }
        }
        Err(Stop::Failed(format!(
            "the model gave no answer within max_steps: {} model turn(s) ({calls} tool call(s) made); \
             raise `max_steps:` or narrow the task",
            self.max_steps
        )))
    }

    /// The offered tools as the model sees them: the server's description
    /// when it has one, the input schema of the declared parameters.
    async fn specs(&self) -> Vec<ToolSpec> {
        let mut specs = Vec::with_capacity(self.offered.len());
        for t in &self.offered {
            let info = match &t.runner {
                Runner::Host(host) => {
                    host.describe(t.tool.server.clone(), t.tool.remote.clone())
                        .await
                }
                Runner::Mock(_) => None,
            };
            let mut props = Map::new();
            let mut required = Vec::new();
            for (name, ty, default) in &t.params {
                props.insert(name.clone(), troupe_llm::json_schema(ty, &self.types));
                if default.is_none() {
                    required.push(J::String(name.clone()));
                }
            }
            specs.push(ToolSpec {
                name: t.name.clone(),
                description: info.and_then(|i| i.description).unwrap_or_else(|| {
                    format!(
                        "The tool `{}` of the MCP server `{}`.",
                        t.tool.remote, t.tool.server.name
                    )
                }),
                input_schema: json!({
                    "type": "object",
                    "properties": props,
                    "required": required,
                    "additionalProperties": false,
                }),
            });
        }
        specs
    }

    fn turn_json(&self, outcome: &TurnOutcome) -> Value {
        let j = match outcome {
            TurnOutcome::Answer(values) => {
                json!({"answer": values.iter().map(|v| v.to_json(&self.types)).collect::<Vec<_>>()})
            }
            TurnOutcome::Calls { text, calls } => json!({
                "text": text,
                "calls": calls.iter().map(ToolUse::to_json).collect::<Vec<_>>(),
            }),
        };
        Value::Json(Arc::new(j))
    }

    fn read_turn(&self, values: &[Value]) -> Option<TurnOutcome> {
        let [Value::Json(j)] = values else {
            return None;
        };
        if let Some(J::Array(items)) = j.get("answer") {
            if items.len() != self.request.outputs.len() {
                return None;
            }
            let values = items
                .iter()
                .zip(&self.request.outputs)
                .map(|(v, slot)| Value::from_json(v, &slot.ty, &self.types).ok())
                .collect::<Option<Vec<_>>>()?;
            return Some(TurnOutcome::Answer(values));
        }
        let calls = j
            .get("calls")?
            .as_array()?
            .iter()
            .map(ToolUse::from_json)
            .collect::<Option<Vec<_>>>()?;
        Some(TurnOutcome::Calls {
            text: j.get("text").and_then(J::as_str).map(str::to_owned),
            calls,
        })
    }

    /// Checks, confirms and runs the `n`-th call of the conversation.
    async fn tool_call(&self, call: &ToolUse, n: u64) -> Result<Reply, Stop> {
        let refuse = |content: String| {
            Ok(Reply {
                content,
                is_error: true,
            })
        };
        let Some(tool) = self.offered.iter().find(|t| t.name == call.name) else {
            let names: Vec<&str> = self.offered.iter().map(|t| t.name.as_str()).collect();
            return refuse(format!(
                "there is no tool `{}`; the tools are {}",
                excerpt(&call.name, 80),
                names.join(", ")
            ));
        };
        let (args, arguments) = match self.read_arguments(tool, &call.arguments) {
            Ok(a) => a,
            Err(why) => return refuse(format!("`{}` was not called: {why}", tool.name)),
        };
        let key = self.sub(&tool.name, n);
        let idempotent = tool.tool.idempotent;
        match self.recorded(&key) {
            Some(Recorded::Done(values)) => return self.replay(tool, &args, &values),
            Some(Recorded::Started) if !idempotent => {
                return Err(Stop::NeedsResolution(key.to_string()));
            }
            Some(Recorded::Started) | None => {}
        }
        let earlier = self.log.lock().map(|l| l.clone()).unwrap_or_default();
        if let Some(why) = self.policy.unmet_requirement(tool.action, &args, &earlier) {
            let outcome = json!({"refused": why, "arguments": arguments});
            self.record(
                &key,
                StepKind::Tool,
                &args,
                &[Value::Json(Arc::new(outcome))],
            )
            .await?;
            return refuse(format!("`{}` was not called: {why}", tool.name));
        }
        if self.needs_confirmation(tool).await && !self.confirm(tool, &arguments, &args, n).await? {
            return refuse(format!(
                "the person declined the call of `{}` with these arguments; it was not made \
                 (ConfirmationDeclined). Do not call it again unless they ask for it.",
                tool.name
            ));
        }
        if let Some(j) = &self.journal {
            j.begin_effect(&key, StepKind::Tool, &args)
                .await
                .map_err(Stop::Journal)?;
        }
        let shown = J::Object(arguments.clone());
        let result = self.perform(tool, &key, arguments, &args).await;
        // The arguments too, for whoever reads the record (status, trace, web).
        let outcome = match &result {
            Ok(values) => json!({
                "ok": values.iter().map(|v| v.to_json(&self.types)).collect::<Vec<_>>(),
                "arguments": shown,
            }),
            Err(e) => json!({"error": e, "arguments": shown}),
        };
        self.record(
            &key,
            StepKind::Tool,
            &args,
            &[Value::Json(Arc::new(outcome))],
        )
        .await?;
        match result {
            Ok(values) => Ok(self.succeeded(tool, args, values)),
            Err(e) => refuse(format!("`{}` failed: {e}", tool.name)),
        }
    }

    /// A call's recorded outcome, as the first time.
    fn replay(&self, tool: &Offered, args: &[Value], values: &[Value]) -> Result<Reply, Stop> {
        let bad = || {
            Stop::Journal(format!(
                "the record of a `{}` call is not a tool outcome",
                tool.name
            ))
        };
        let [Value::Json(j)] = values else {
            return Err(bad());
        };
        if let Some(J::Array(items)) = j.get("ok") {
            let values = items
                .iter()
                .zip(&tool.outputs)
                .map(|(v, slot)| Value::from_json(v, &slot.ty, &self.types).ok())
                .collect::<Option<Vec<_>>>()
                .filter(|v| v.len() == tool.outputs.len())
                .ok_or_else(bad)?;
            return Ok(self.succeeded(tool, args.to_vec(), values));
        }
        let (prefix, why) = match (j.get("error"), j.get("refused")) {
            (Some(e), _) => ("failed", e),
            (None, Some(r)) => ("was not called", r),
            (None, None) => return Err(bad()),
        };
        Ok(Reply {
            content: format!("`{}` {prefix}: {}", tool.name, why.as_str().unwrap_or("")),
            is_error: true,
        })
    }

    /// Logs a successful call and gives its result to the model.
    fn succeeded(&self, tool: &Offered, args: Vec<Value>, values: Vec<Value>) -> Reply {
        let shown = match (tool.outputs.as_slice(), values.as_slice()) {
            ([_], [v]) => v.to_json(&self.types),
            _ => J::Object(
                tool.outputs
                    .iter()
                    .zip(&values)
                    .map(|(o, v)| (o.name.clone(), v.to_json(&self.types)))
                    .collect(),
            ),
        };
        if let Ok(mut log) = self.log.lock() {
            log.push(ToolRecord {
                action: tool.action,
                args,
                outputs: values,
            });
        }
        Reply {
            content: excerpt(&shown.to_string(), MAX_RESULT_CHARS),
            is_error: false,
        }
    }

    /// Reads the model's arguments as the declared parameters: a JSON
    /// object, every key a parameter, every required one present, every
    /// value of its type. Returns the typed values (defaults filled in, for
    /// the contract checks) and the object to send (without the defaults).
    fn read_arguments(
        &self,
        tool: &Offered,
        text: &str,
    ) -> Result<(Vec<Value>, Map<String, J>), String> {
        let json: J = serde_json::from_str(text).map_err(|e| {
            format!(
                "the arguments are not valid JSON ({e}): {}",
                excerpt(text, 200)
            )
        })?;
        let J::Object(object) = json else {
            return Err(format!(
                "the arguments must be a JSON object, not {}",
                excerpt(text, 200)
            ));
        };
        let names: Vec<&str> = tool.params.iter().map(|(n, ..)| n.as_str()).collect();
        if let Some(extra) = object.keys().find(|k| !names.contains(&k.as_str())) {
            return Err(format!(
                "it has no parameter `{}`; its parameters are {}",
                excerpt(extra, 80),
                names.join(", ")
            ));
        }
        let mut args = Vec::with_capacity(tool.params.len());
        let mut send = Map::new();
        for (name, ty, default) in &tool.params {
            match (object.get(name), default) {
                (Some(v), _) => {
                    let value = Value::from_json(v, ty, &self.types)
                        .map_err(|e| format!("argument `{name}`: {e}"))?;
                    send.insert(name.clone(), value.to_json(&self.types));
                    args.push(value);
                }
                (None, Some(d)) => args.push(d.clone()),
                (None, None) => {
                    return Err(format!(
                        "the required argument `{name}` ({}) is missing",
                        self.types.display(ty)
                    ));
                }
            }
        }
        Ok((args, send))
    }

    /// By the tool's contract; without one, by what its server says
    /// (MCP's `destructiveHint`, true unless the tool says otherwise).
    async fn needs_confirmation(&self, tool: &Offered) -> bool {
        if let Some(b) = self.policy.needs_confirmation(tool.action) {
            return b;
        }
        let info = match &tool.runner {
            Runner::Host(host) => {
                host.describe(tool.tool.server.clone(), tool.tool.remote.clone())
                    .await
            }
            Runner::Mock(_) => None,
        };
        info.and_then(|i| i.destructive).unwrap_or(true)
    }

    /// Asks a person (a durable task) whether the call may run.
    async fn confirm(
        &self,
        tool: &Offered,
        arguments: &Map<String, J>,
        args: &[Value],
        n: u64,
    ) -> Result<bool, Stop> {
        let key = self.sub("confirm", n);
        if let Some(Recorded::Done(values)) = self.recorded(&key) {
            return match values.as_slice() {
                [Value::Bool(b)] => Ok(*b),
                _ => Err(Stop::Journal(format!(
                    "the record of {key} is not a yes or no"
                ))),
            };
        }
        let shown = serde_json::to_string_pretty(&J::Object(arguments.clone()))
            .unwrap_or_else(|_| "{}".to_owned());
        let task = HumanTask {
            key: key.to_string(),
            run: self.run.clone(),
            lifeline: self.step.lifeline.clone(),
            action: tool.name.clone(),
            prompt: format!(
                "`{}` (the model of `{}`) asks to call `{}` on `{}` with:\n{shown}\nAllow this call?",
                self.step.action, self.step.lifeline, tool.tool.remote, tool.tool.server.name
            ),
            prefill: None,
            answer: AnswerKind::Confirm,
            options: Vec::new(),
            ty: Type::Bool,
            // A confirmation is never given by the clock.
            deadline: None,
            remind: None,
            // Part of a model's step, which never parks.
            asked: crate::Asked::default(),
        };
        if let Some(j) = &self.journal {
            j.flush().await.map_err(Stop::Journal)?;
        }
        let answer = self.humans.ask(task).await.map_err(Stop::Failed)?;
        let yes = match &answer {
            J::Bool(b) => *b,
            J::String(s) => Value::parse(s, &Type::Bool, &self.types)
                .ok()
                .is_some_and(|v| v == Value::Bool(true)),
            _ => false,
        };
        self.record(&key, StepKind::Human, args, &[Value::Bool(yes)])
            .await?;
        Ok(yes)
    }

    async fn perform(
        &self,
        tool: &Offered,
        key: &StepKey,
        arguments: Map<String, J>,
        args: &[Value],
    ) -> Result<Vec<Value>, String> {
        let values = match &tool.runner {
            Runner::Host(host) => {
                crate::genai::traced_tool_call(
                    host.clone(),
                    ToolCall {
                        server: tool.tool.server.clone(),
                        tool: tool.tool.remote.clone(),
                        arguments,
                        outputs: tool.outputs.clone(),
                        types: self.types.clone(),
                        idempotency_key: format!("{}/{key}", self.uid),
                    },
                )
                .await?
            }
            Runner::Mock(mock) => {
                let _ = args;
                let request = LlmRequest::new(
                    troupe_llm::CallKey::new(
                        key.lifeline.clone(),
                        key.action.clone(),
                        key.occurrence,
                    ),
                    String::new(),
                    tool.outputs.clone(),
                    self.types.clone(),
                );
                mock.call(&request).await.map_err(|e| e.to_string())?.values
            }
        };
        let fits = values.len() == tool.outputs.len()
            && values
                .iter()
                .zip(&tool.outputs)
                .all(|(v, o)| v.conforms(&o.ty, &self.types));
        if fits {
            Ok(values)
        } else {
            Err("the tool's result does not fit its declared outputs".to_owned())
        }
    }
}

/// One model call, recorded (what was asked, what came back, what it cost)
/// under `key`, with its span.
pub(crate) async fn model_call(
    backend: &dyn LlmBackend,
    request: &LlmRequest,
    journal: Option<&dyn RunJournal>,
    key: &StepKey,
) -> Result<LlmAnswer, LlmError> {
    let span = crate::genai::chat_span(key, backend.model(request).as_deref());
    let started = std::time::Instant::now();
    let result = backend.call(request).instrument(span.clone()).await;
    crate::genai::record_answer(&span, &result);
    let types = &request.types;
    let record = match &result {
        Ok(a) => {
            let outputs = if a.tool_calls.is_empty() {
                J::Array(a.values.iter().map(|v| v.to_json(types)).collect())
            } else {
                json!({"tool_calls": a.tool_calls.iter().map(ToolUse::to_json).collect::<Vec<_>>()})
            };
            LlmCall {
                model: a.model.clone(),
                system: request.system.clone(),
                prompt: request.prompt.clone(),
                answer: a.detail.raw.clone(),
                outputs: Some(outputs),
                usage: a.usage,
                latency_ms: a.latency.as_millis() as u64,
                attempts: a.attempts,
                retries: a.detail.retries.clone(),
                cost_usd: a.detail.cost_usd,
                error: None,
            }
        }
        Err(e) => LlmCall {
            model: e.backend().to_owned(),
            system: request.system.clone(),
            prompt: request.prompt.clone(),
            answer: None,
            outputs: None,
            usage: None,
            latency_ms: started.elapsed().as_millis() as u64,
            attempts: 0,
            retries: Vec::new(),
            cost_usd: None,
            error: Some(e.to_string()),
        },
    };
    if let Some(j) = journal {
        j.llm_call(key, &record);
    }
    result
}

/// At most `max` characters of `s`, marked when cut.
fn excerpt(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}… (cut)", &s[..i]),
        None => s.to_owned(),
    }
}
