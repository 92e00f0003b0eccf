//! Language-model backends for troupe.
//!
//! The runtime calls an [`LlmBackend`] for every `llm` action. A request
//! carries the rendered prompt, the declared outputs (with the type table, so
//! a backend can derive a JSON Schema and validate the answer) and a
//! [`CallKey`] that names the call stably within a run, so that deterministic
//! backends (mock, scripted) answer a re-run call exactly as the first time.
//!
//! # Backends
//!
//! | spec | what answers |
//! |---|---|
//! | `mock` | [`MockBackend`]: deterministic, type-directed placeholders (the default when nothing is configured) |
//! | `scripted:FILE` | [`ScriptedBackend`]: answers read from a JSON file keyed `Lifeline.action` or `action` |
//! | `openai:MODEL` | OpenAI chat completions (`OPENAI_API_KEY`, `OPENAI_BASE_URL`) |
//! | `anthropic:MODEL` | Anthropic Messages (`ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`) |
//! | `ollama:MODEL` | a local Ollama through its OpenAI-compatible API (`OLLAMA_BASE_URL`, default `http://localhost:11434/v1`, no key) |
//! | `openrouter:MODEL` | OpenRouter through its OpenAI-compatible API (`OPENROUTER_API_KEY`) |
//! | `NAME:MODEL` | a provider declared in `troupe.toml` as `[providers.NAME] api = "openai"` (or `"anthropic"`) with a `base_url` — vLLM, llama.cpp server, LM Studio, … |
//!
//! Any action whose outputs are not exactly one `Text` asks for JSON that
//! conforms to a JSON Schema derived from the declared types (see [`schema`]),
//! validates the answer with [`Value::from_json`], and re-asks with the
//! validation error when it does not conform (up to the action's `retries:`,
//! default 2). Transport failures (429, 5xx, timeouts, connection errors) are
//! retried separately with exponential backoff and full jitter, honouring
//! `Retry-After`.
//!
//! # Running a real model
//!
//! ```text
//! OPENAI_API_KEY=… troupe run examples/reviewed_execution.troupe \
//!     --llm openai:gpt-4o-mini --input task="Plan a team offsite"
//!
//! # a local model through Ollama (ollama serve; ollama pull qwen2.5:7b)
//! troupe run examples/reviewed_execution.troupe --llm ollama:qwen2.5:7b --input task="…"
//!
//! # one lifeline on another model, one action scripted
//! ANTHROPIC_API_KEY=… troupe run examples/reviewed_execution.troupe --llm openai:gpt-4o-mini \
//!     --llm-for Reviewer=anthropic:claude-sonnet-4-5 --llm-for finalize=mock --input task="…"
//!
//! # what works?
//! troupe models check
//! ```
//!
//! Routing is most-specific-first: `Lifeline.action` > `action` > `Lifeline` >
//! the default (`--llm`, else `[llm] default` in `troupe.toml`, else `mock`).
//! A `--llm-for KEY=SPEC` replaces a `[llm.route]` entry with the same key.
//! An action's own `model:` field applies only where no explicit route does
//! and the default is a real provider: a bare model name (`gpt-4o`) is used
//! with the default's provider, a full spec (`anthropic:claude-…`) as is.
//!
//! A project file `troupe.toml` (see [`config`]):
//!
//! ```toml
//! [llm]
//! default = "openai:gpt-4o-mini"
//! timeout_secs = 60
//!
//! [llm.route]
//! "Planner" = "anthropic:claude-sonnet-4-5"
//! "review_plan" = "mock"
//! "Planner.make_plan" = "ollama:qwen2.5:7b"
//!
//! [providers.openai]
//! base_url = "https://api.openai.com/v1"
//!
//! [providers.local]          # a llama.cpp server
//! api = "openai"
//! base_url = "http://127.0.0.1:8080/v1"
//! ```
//!
//! API keys are read from the environment only (never from `troupe.toml`),
//! and never appear in errors, `Debug` output or [`LlmBackend::describe`].
//!
//! # Why no provider SDK
//!
//! Troupe talks to model providers with one HTTP client (reqwest) and two
//! small JSON APIs: OpenAI-style chat completions, which OpenAI, Ollama,
//! vLLM, llama.cpp's server, LM Studio and OpenRouter all speak, and
//! Anthropic's Messages API. Each is one POST with a JSON body and a JSON
//! answer; the parts troupe needs — messages, a JSON Schema for structured
//! output, token usage, error bodies — fit in a few hundred lines per API.
//! Provider SDKs would bring a dependency tree (and often a runtime or TLS
//! stack) per vendor, hide the retry and timeout policy that troupe must
//! control to classify failures (transient, invalid answer, permanent) and to
//! honour `Retry-After`, and lag behind OpenAI-compatible servers, which are
//! the point: any endpoint that speaks the protocol works with a base URL.
//! The cost is that new provider features (native tools, streaming, batch)
//! are added by hand when troupe needs them.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use troupe_check::{Type, TypeTable, Value};

mod answer;
mod anthropic;
pub mod check;
pub mod config;
mod hash;
mod http;
pub mod mock;
mod openai;
pub mod prices;
mod redact;
pub mod router;
pub mod schema;
pub mod scripted;
pub mod spec;
pub mod tools;

pub use check::{ModelCheck, check_models};
pub use config::{ConfigError, LlmConfig};
pub use http::{Api, ApiKey, HttpBackend, HttpSettings};
pub use mock::MockBackend;
pub use prices::{PRICES_DATED, Price, Prices};
pub use redact::redact_url_credentials;
pub use router::{Router, parse_override};
pub use schema::{json_schema, output_schema};
pub use scripted::ScriptedBackend;
pub use spec::{BackendSpec, parse_spec};
pub use tools::{ToolSpec, ToolUse, Turn};

/// Names one LLM call within a run, stably across restarts.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CallKey {
    pub lifeline: String,
    pub action: String,
    /// How many times this lifeline called this action earlier in the run.
    pub occurrence: u64,
}

impl CallKey {
    pub fn new(lifeline: impl Into<String>, action: impl Into<String>, occurrence: u64) -> CallKey {
        CallKey {
            lifeline: lifeline.into(),
            action: action.into(),
            occurrence,
        }
    }
}

impl std::fmt::Display for CallKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}.{} (occurrence {})",
            self.lifeline, self.action, self.occurrence
        )
    }
}

/// One declared output of the action.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputSlot {
    pub name: String,
    pub ty: Type,
}

impl OutputSlot {
    pub fn new(name: impl Into<String>, ty: Type) -> OutputSlot {
        OutputSlot {
            name: name.into(),
            ty,
        }
    }
}

#[derive(Debug, Clone)]
pub struct LlmRequest {
    pub key: CallKey,
    /// The run's seed: deterministic backends mix it into their choices.
    pub seed: u64,
    pub system: Option<String>,
    pub prompt: String,
    /// The declared outputs: one `Text` output means a raw-text answer;
    /// anything else is structured JSON checked against these types.
    pub outputs: Vec<OutputSlot>,
    pub types: Arc<TypeTable>,
    /// `model:` of the action, if any (routing may override it).
    pub model: Option<String>,
    pub temperature: Option<f64>,
    /// `retries:` of the action: how often an invalid answer is re-asked.
    pub retries: Option<u32>,
    /// The tools the model may call (`tools:` of the action); empty: none.
    pub tools: Vec<ToolSpec>,
    /// The turns after the prompt so far: the model's earlier tool calls
    /// and their results, in order (see [`tools`]).
    pub conversation: Vec<Turn>,
    /// Set when a `planner` asks for a plan: what the plan may use and must
    /// look like. The answer is the plan's source (one `Text` output); the
    /// prompt already says all of this in words, this is for backends that
    /// write plans without reading prose (the mock).
    pub plan: Option<Arc<PlanSpec>>,
}

/// What a `planner` asks a model for (LANGUAGE.md §6): a workflow whose
/// inputs are `inputs` and whose results are of the types of `outputs`,
/// calling only `actions` and using only `lifelines`.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanSpec {
    /// The planner's parameters: the plan's inputs, by name and type.
    pub inputs: Vec<OutputSlot>,
    /// The planner's outputs: the plan's results, by type, in order.
    pub outputs: Vec<OutputSlot>,
    pub actions: Vec<PlanAction>,
    pub lifelines: Vec<String>,
}

/// An action a plan may call, with its signature.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanAction {
    pub name: String,
    pub params: Vec<OutputSlot>,
    pub outputs: Vec<OutputSlot>,
}

impl LlmRequest {
    /// A request with no system prompt, model, temperature or retries, and seed 0.
    pub fn new(
        key: CallKey,
        prompt: impl Into<String>,
        outputs: Vec<OutputSlot>,
        types: Arc<TypeTable>,
    ) -> LlmRequest {
        LlmRequest {
            key,
            seed: 0,
            system: None,
            prompt: prompt.into(),
            outputs,
            types,
            model: None,
            temperature: None,
            retries: None,
            tools: Vec::new(),
            conversation: Vec::new(),
            plan: None,
        }
    }

    /// Whether the answer is raw text (exactly one `Text` output) rather than JSON.
    pub fn wants_raw_text(&self) -> bool {
        answer::is_raw_text(&self.outputs)
    }

    /// How often an invalid answer is re-asked: the action's `retries:`, default 2.
    pub fn reasks(&self) -> u32 {
        self.retries.unwrap_or(DEFAULT_REASKS)
    }
}

/// How often an invalid answer is re-asked when the action sets no `retries:`.
pub const DEFAULT_REASKS: u32 = 2;

/// Token counts as reported by the provider.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Every input token, cached ones included.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Input tokens read from the provider's prompt cache (billed lower).
    pub cached_input_tokens: u64,
}

impl Usage {
    fn add(self, other: Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens.saturating_add(other.input_tokens),
            output_tokens: self.output_tokens.saturating_add(other.output_tokens),
            cached_input_tokens: self
                .cached_input_tokens
                .saturating_add(other.cached_input_tokens),
        }
    }
}

/// What a call record keeps beyond the values: the raw answer, why
/// requests were repeated, and the cost.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallDetail {
    /// The model's last answer as it came (text, or JSON as text).
    pub raw: Option<String>,
    /// Why each repeated request was made (a 429, a timeout, an answer
    /// that did not fit the declared types …), in order.
    pub retries: Vec<String>,
    /// In US dollars, from the price table (`None`: no price known).
    pub cost_usd: Option<f64>,
}

#[derive(Debug, Clone)]
pub struct LlmAnswer {
    /// One value per declared output, each checked against its type
    /// (empty when the model asked for tool calls instead).
    pub values: Vec<Value>,
    /// The tool calls the model asked for this turn (only when the request
    /// offered tools); the runtime answers them and asks again.
    pub tool_calls: Vec<ToolUse>,
    /// Which backend and model answered, e.g. `mock` or `openai:gpt-4o-mini`.
    pub model: String,
    pub usage: Option<Usage>,
    pub latency: Duration,
    /// How many requests were made (retries and re-asks included).
    pub attempts: u32,
    pub detail: CallDetail,
}

/// Why a call failed, classified so that callers know whether to try again.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LlmError {
    /// Worth retrying later (rate limits, 5xx, timeouts, connection resets).
    #[error("transient failure from {backend}: {message}")]
    Transient { backend: String, message: String },
    /// The model answered, but not in the declared shape, after all re-asks.
    #[error("invalid answer from {backend} for {action}: {message}")]
    InvalidAnswer {
        backend: String,
        action: String,
        message: String,
    },
    /// Will not succeed by retrying (bad key, unknown model, 4xx, script exhausted).
    #[error("{backend}: {message}")]
    Permanent { backend: String, message: String },
}

/// The class of an [`LlmError`], for callers that only need to branch on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    Transient,
    InvalidAnswer,
    Permanent,
}

impl LlmError {
    pub fn class(&self) -> ErrorClass {
        match self {
            LlmError::Transient { .. } => ErrorClass::Transient,
            LlmError::InvalidAnswer { .. } => ErrorClass::InvalidAnswer,
            LlmError::Permanent { .. } => ErrorClass::Permanent,
        }
    }

    /// Whether trying the same call again later may succeed.
    pub fn is_transient(&self) -> bool {
        matches!(self, LlmError::Transient { .. })
    }

    /// The backend that failed, e.g. `openai:gpt-4o-mini`.
    pub fn backend(&self) -> &str {
        match self {
            LlmError::Transient { backend, .. }
            | LlmError::InvalidAnswer { backend, .. }
            | LlmError::Permanent { backend, .. } => backend,
        }
    }

    /// The message without the backend prefix.
    pub fn message(&self) -> &str {
        match self {
            LlmError::Transient { message, .. }
            | LlmError::InvalidAnswer { message, .. }
            | LlmError::Permanent { message, .. } => message,
        }
    }
}

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A language-model backend. Implementations must be cheap to share across
/// runs (`Arc<dyn LlmBackend>`), and must never panic on any answer.
pub trait LlmBackend: Send + Sync + std::fmt::Debug {
    /// A short description, e.g. `mock` or `openai:gpt-4o-mini @ http://…`.
    fn describe(&self) -> String;

    /// The model spec that will answer `request` (`openai:gpt-4o-mini`,
    /// `mock`), when the backend can tell before the call: it names the
    /// call's span.
    fn model(&self, request: &LlmRequest) -> Option<String> {
        let _ = request;
        None
    }

    fn call<'a>(&'a self, request: &'a LlmRequest) -> BoxFuture<'a, Result<LlmAnswer, LlmError>>;
}

impl<B: LlmBackend + ?Sized> LlmBackend for Arc<B> {
    fn describe(&self) -> String {
        (**self).describe()
    }

    fn model(&self, request: &LlmRequest) -> Option<String> {
        (**self).model(request)
    }

    fn call<'a>(&'a self, request: &'a LlmRequest) -> BoxFuture<'a, Result<LlmAnswer, LlmError>> {
        (**self).call(request)
    }
}
