//! Language-model backends for troupe.
//!
//! The runtime calls an [`LlmBackend`] for every `llm` action. A request
//! carries the rendered prompt, the declared outputs (with the type table, so
//! a backend can derive a JSON Schema and validate the answer) and a
//! [`CallKey`] that names the call stably within a run, so that deterministic
//! backends (mock, scripted) answer a re-run call exactly as the first time.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use troupe_check::{Type, TypeTable, Value};

/// Names one LLM call within a run, stably across restarts.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CallKey {
    pub lifeline: String,
    pub action: String,
    /// How many times this lifeline called this action earlier in the run.
    pub occurrence: u64,
}

/// One declared output of the action.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputSlot {
    pub name: String,
    pub ty: Type,
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
}

/// Token counts as reported by the provider.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

#[derive(Debug, Clone)]
pub struct LlmAnswer {
    /// One value per declared output, each checked against its type.
    pub values: Vec<Value>,
    /// Which backend and model answered, e.g. `mock` or `openai:gpt-4o-mini`.
    pub model: String,
    pub usage: Option<Usage>,
    pub latency: Duration,
    /// How many requests were made (retries and re-asks included).
    pub attempts: u32,
}

/// Why a call failed, classified so that callers know whether to try again.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LlmError {
    /// Worth retrying later (rate limits, 5xx, timeouts, connection resets).
    #[error("transient failure from {backend}: {message}")]
    Transient { backend: String, message: String },
    /// The model answered, but not in the declared shape, after all re-asks.
    #[error("invalid answer from {backend} for {action}: {message}")]
    InvalidAnswer { backend: String, action: String, message: String },
    /// Will not succeed by retrying (bad key, unknown model, 4xx, script exhausted).
    #[error("{backend}: {message}")]
    Permanent { backend: String, message: String },
}

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A language-model backend. Implementations must be cheap to share across
/// runs (`Arc<dyn LlmBackend>`), and must never panic on any answer.
pub trait LlmBackend: Send + Sync + std::fmt::Debug {
    /// A short description, e.g. `mock` or `openai:gpt-4o-mini @ http://…`.
    fn describe(&self) -> String;

    fn call<'a>(&'a self, request: &'a LlmRequest) -> BoxFuture<'a, Result<LlmAnswer, LlmError>>;
}
