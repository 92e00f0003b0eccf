//! Real providers over HTTP: the shared client, retries and the re-ask loop.
//!
//! Two loops nest in a call. The outer one asks the model and checks the
//! answer against the declared outputs; an answer that does not conform is
//! re-asked with the validation error appended to the conversation, at most
//! `retries:` times. The inner one sends one HTTP request and retries
//! transport failures (429, 408, 5xx, timeouts, connection errors) with
//! exponential backoff and full jitter, or exactly the server's `Retry-After`
//! when it gives one. Everything else fails at once, classified:
//! 4xx → [`LlmError::Permanent`], a 2xx body that is not the protocol's JSON →
//! [`LlmError::InvalidAnswer`].
//!
//! The API key lives in [`ApiKey`], whose `Debug` is redacted; it is sent as a
//! sensitive header and scrubbed from every message this module produces (a
//! provider may echo part of it in a 401 body).

use crate::answer::{check_types, decode_json, decode_text, excerpt, is_raw_text};
use crate::config::ConfigError;
use crate::schema::output_schema;
use crate::{
    BoxFuture, ErrorClass, LlmAnswer, LlmBackend, LlmError, LlmRequest, Usage, anthropic, openai,
};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value as J;
use std::time::{Duration, Instant, SystemTime};
use troupe_check::Value;

/// Timeouts and retry policy of one provider.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpSettings {
    /// Time allowed to open the connection.
    pub connect_timeout: Duration,
    /// Time allowed for one whole request, body included.
    pub timeout: Duration,
    /// How often a transient failure is retried (so at most `max_retries + 1` requests per answer).
    pub max_retries: u32,
    /// The first backoff cap; it doubles with each retry, up to `backoff_max`.
    pub backoff_base: Duration,
    pub backoff_max: Duration,
    /// A `Retry-After` longer than this is not waited for: the call fails as transient.
    pub max_retry_after: Duration,
    /// `max_tokens` sent with each request (Anthropic requires one; default 4096 there).
    pub max_tokens: Option<u32>,
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            connect_timeout: Duration::from_secs(10),
            timeout: Duration::from_secs(120),
            max_retries: 3,
            backoff_base: Duration::from_millis(500),
            backoff_max: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(120),
            max_tokens: None,
        }
    }
}

/// An API key. Never printed: `Debug` shows `ApiKey(<redacted>)`, and there is no `Display`.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> ApiKey {
        ApiKey(key.into())
    }

    fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// Which wire protocol a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Api {
    /// `POST {base}/chat/completions`, bearer token.
    OpenAi,
    /// `POST {base}/v1/messages`, `x-api-key` and `anthropic-version`.
    Anthropic,
}

impl Api {
    pub fn name(self) -> &'static str {
        match self {
            Api::OpenAi => "openai",
            Api::Anthropic => "anthropic",
        }
    }
}

/// A model behind an HTTP API.
#[derive(Clone)]
pub struct HttpBackend {
    api: Api,
    /// The provider's name in specs (`openai`, `ollama`, a custom name).
    provider: String,
    model: String,
    base_url: String,
    /// `user:password@` of the base URL, if it has any: never shown.
    userinfo: Option<String>,
    key: Option<ApiKey>,
    settings: HttpSettings,
    client: reqwest::Client,
}

impl std::fmt::Debug for HttpBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpBackend")
            .field("api", &self.api)
            .field("provider", &self.provider)
            .field("model", &self.model)
            .field("base_url", &self.redact(self.base_url.clone()))
            .field("key", &self.key.as_ref().map(|_| "<redacted>"))
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl HttpBackend {
    /// A backend for `provider:model` speaking `api` at `base_url`.
    pub fn new(
        api: Api,
        provider: impl Into<String>,
        model: impl Into<String>,
        base_url: impl Into<String>,
        key: Option<ApiKey>,
        settings: HttpSettings,
    ) -> Result<HttpBackend, ConfigError> {
        let provider = provider.into();
        let model = model.into();
        let base_url = base_url.into().trim_end_matches('/').to_owned();
        let spec = format!("{provider}:{model}");
        let url = reqwest::Url::parse(&base_url).map_err(|e| ConfigError::Provider {
            name: provider.clone(),
            message: format!(
                "bad base URL {:?}: {e}",
                crate::redact_url_credentials(&base_url)
            ),
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ConfigError::Provider {
                name: provider,
                message: format!(
                    "base URL {:?} must start with http:// or https://",
                    crate::redact_url_credentials(&base_url)
                ),
            });
        }
        if let Some(k) = &key
            && (HeaderValue::from_str(k.expose()).is_err() || k.expose().is_empty())
        {
            return Err(ConfigError::Provider {
                name: provider,
                message:
                    "the API key is empty or contains characters not allowed in an HTTP header"
                        .into(),
            });
        }
        // Credentials in the URL (`https://user:pass@host`) are sent, never
        // shown: every message and description goes through `redact`.
        let userinfo = (!url.username().is_empty() || url.password().is_some()).then(|| match url
            .password()
        {
            Some(p) => format!("{}:{p}@", url.username()),
            None => format!("{}@", url.username()),
        });
        let mut builder = reqwest::Client::builder()
            .connect_timeout(settings.connect_timeout)
            .timeout(settings.timeout)
            .user_agent(concat!("troupe/", env!("CARGO_PKG_VERSION")));
        // A local server must not be sent through a proxy from the environment.
        if matches!(
            url.host_str(),
            Some("localhost" | "127.0.0.1" | "[::1]" | "::1")
        ) {
            builder = builder.no_proxy();
        }
        let client = builder.build().map_err(|e| ConfigError::Provider {
            name: spec,
            message: format!("cannot build the HTTP client: {e}"),
        })?;
        Ok(HttpBackend {
            api,
            provider,
            model,
            base_url,
            userinfo,
            key,
            settings,
            client,
        })
    }

    /// An OpenAI-compatible chat completions endpoint (`base_url` ends before `/chat/completions`).
    pub fn openai_compatible(
        provider: impl Into<String>,
        model: impl Into<String>,
        base_url: impl Into<String>,
        key: Option<ApiKey>,
        settings: HttpSettings,
    ) -> Result<HttpBackend, ConfigError> {
        HttpBackend::new(Api::OpenAi, provider, model, base_url, key, settings)
    }

    /// Anthropic's Messages API (`base_url` like `https://api.anthropic.com`).
    pub fn anthropic(
        model: impl Into<String>,
        base_url: impl Into<String>,
        key: Option<ApiKey>,
        settings: HttpSettings,
    ) -> Result<HttpBackend, ConfigError> {
        HttpBackend::new(Api::Anthropic, "anthropic", model, base_url, key, settings)
    }

    /// `provider:model`, as in a spec.
    pub fn spec(&self) -> String {
        format!("{}:{}", self.provider, self.model)
    }

    pub fn api(&self) -> Api {
        self.api
    }

    /// The base URL as it may be shown: without its credentials.
    pub fn base_url(&self) -> String {
        self.redact(self.base_url.clone())
    }

    pub fn settings(&self) -> &HttpSettings {
        &self.settings
    }

    /// The same provider with another model (for an action's own `model:`).
    pub fn with_model(&self, model: impl Into<String>) -> HttpBackend {
        HttpBackend {
            model: model.into(),
            ..self.clone()
        }
    }

    fn url(&self) -> String {
        match self.api {
            Api::OpenAi => openai::url(&self.base_url),
            Api::Anthropic => anthropic::url(&self.base_url),
        }
    }

    fn headers(&self) -> HeaderMap {
        let mut h = HeaderMap::new();
        let sensitive = |v: String| {
            HeaderValue::from_str(&v).ok().map(|mut v| {
                v.set_sensitive(true);
                v
            })
        };
        match self.api {
            Api::OpenAi => {
                if let Some(v) = self
                    .key
                    .as_ref()
                    .and_then(|k| sensitive(format!("Bearer {}", k.expose())))
                {
                    h.insert(reqwest::header::AUTHORIZATION, v);
                }
            }
            Api::Anthropic => {
                if let Some(v) = self
                    .key
                    .as_ref()
                    .and_then(|k| sensitive(k.expose().to_owned()))
                {
                    h.insert(HeaderName::from_static("x-api-key"), v);
                }
                h.insert(
                    HeaderName::from_static("anthropic-version"),
                    HeaderValue::from_static(anthropic::VERSION),
                );
            }
        }
        h
    }

    /// Removes the key and the URL's credentials from a message, whatever
    /// produced it.
    fn redact(&self, message: String) -> String {
        let message = match &self.userinfo {
            Some(u) if message.contains(u.as_str()) => message.replace(u.as_str(), "<redacted>@"),
            _ => message,
        };
        let message = crate::redact_url_credentials(&message).into_owned();
        match &self.key {
            Some(k) if !k.expose().is_empty() && message.contains(k.expose()) => {
                message.replace(k.expose(), "<redacted>")
            }
            _ => message,
        }
    }

    fn error(&self, class: ErrorClass, action: &str, message: String) -> LlmError {
        let backend = self.spec();
        let message = self.redact(message);
        match class {
            ErrorClass::Transient => LlmError::Transient { backend, message },
            ErrorClass::InvalidAnswer => LlmError::InvalidAnswer {
                backend,
                action: action.to_owned(),
                message,
            },
            ErrorClass::Permanent => LlmError::Permanent { backend, message },
        }
    }

    async fn run(&self, request: &LlmRequest) -> Result<LlmAnswer, LlmError> {
        let start = Instant::now();
        check_types(&request.outputs, &request.types)
            .map_err(|e| self.error(ErrorClass::Permanent, &request.key.action, e))?;
        let action = request.key.action.as_str();
        let raw_text = request.outputs.is_empty() || is_raw_text(&request.outputs);
        let schema = (!raw_text).then(|| output_schema(&request.outputs, &request.types));
        let ex = Exchange {
            request,
            model: &self.model,
            schema: schema.as_ref(),
            max_tokens: self.settings.max_tokens,
        };
        let mut messages = match self.api {
            Api::OpenAi => openai::start(&ex),
            Api::Anthropic => anthropic::start(&ex),
        };
        let mut attempts = 0u32;
        let mut retries: Vec<String> = Vec::new();
        let mut usage: Option<Usage> = None;
        let reasks = request.reasks();
        let mut last_error = String::new();
        for ask in 0..=reasks {
            let body = match self.api {
                Api::OpenAi => openai::body(&ex, &messages),
                Api::Anthropic => anthropic::body(&ex, &messages),
            };
            let response = self
                .send(&body, action, &mut attempts, &mut retries)
                .await?;
            let parsed = match self.api {
                Api::OpenAi => openai::parse(&response),
                Api::Anthropic => anthropic::parse_with(&response, request),
            };
            let reply = parsed.map_err(|e| {
                self.error(
                    ErrorClass::InvalidAnswer,
                    action,
                    format!(
                        "malformed response from {}: {e}: {}",
                        self.url(),
                        excerpt(&response.to_string(), 300)
                    ),
                )
            })?;
            if let Some(u) = reply.usage {
                usage = Some(usage.unwrap_or_default().add(u));
            }
            if let Some(refusal) = &reply.refusal {
                return Err(self.error(
                    ErrorClass::InvalidAnswer,
                    action,
                    format!("the model refused: {refusal}"),
                ));
            }
            if !reply.tool_calls.is_empty() {
                // A turn of a tool conversation: the runtime runs the calls.
                return Ok(LlmAnswer {
                    values: Vec::new(),
                    tool_calls: reply.tool_calls.clone(),
                    model: self.spec(),
                    usage,
                    latency: start.elapsed(),
                    attempts,
                    detail: crate::CallDetail {
                        raw: Some(reply.raw.to_string()),
                        retries,
                        cost_usd: None,
                    },
                });
            }
            let decoded = if request.outputs.is_empty() {
                Ok(Vec::new())
            } else if raw_text {
                match reply.text.as_deref() {
                    Some(t) if !t.trim().is_empty() => Ok(vec![Value::text(t)]),
                    _ => Err("The answer was empty.".to_owned()),
                }
            } else {
                match (&reply.json, &reply.text) {
                    (Some(j), _) => decode_json(j, &request.outputs, &request.types),
                    (None, Some(t)) => decode_text(t, &request.outputs, &request.types),
                    (None, None) => Err("the answer was empty".to_owned()),
                }
            };
            match decoded {
                Ok(values) => {
                    return Ok(LlmAnswer {
                        values,
                        tool_calls: Vec::new(),
                        model: self.spec(),
                        usage,
                        latency: start.elapsed(),
                        attempts,
                        detail: crate::CallDetail {
                            raw: reply
                                .text
                                .clone()
                                .or_else(|| reply.json.as_ref().map(J::to_string)),
                            retries,
                            cost_usd: None,
                        },
                    });
                }
                Err(e) => {
                    last_error = if reply.truncated {
                        format!("{e} (the answer was cut off at the token limit: raise max_tokens)")
                    } else {
                        e
                    };
                    if ask < reasks {
                        tracing::warn!(
                            backend = %self.spec(),
                            action,
                            error = %last_error,
                            "the answer did not fit the declared outputs; asking again"
                        );
                        retries.push(format!("re-asked: {last_error}"));
                        match (self.api, raw_text) {
                            (Api::OpenAi, false) => {
                                openai::reask(&mut messages, &reply, &last_error)
                            }
                            (Api::OpenAi, true) => {
                                openai::reask_text(&mut messages, &reply, &last_error)
                            }
                            (Api::Anthropic, false) => {
                                anthropic::reask(&mut messages, &reply, &last_error)
                            }
                            (Api::Anthropic, true) => {
                                anthropic::reask_text(&mut messages, &reply, &last_error)
                            }
                        }
                    }
                }
            }
        }
        Err(self.error(
            ErrorClass::InvalidAnswer,
            action,
            format!(
                "no conforming answer after {} ask(s) ({} re-ask(s) allowed): {last_error}",
                reasks + 1,
                reasks
            ),
        ))
    }

    /// One request, with transport retries. Returns the parsed JSON body of a 2xx response.
    async fn send(
        &self,
        body: &J,
        action: &str,
        attempts: &mut u32,
        retries: &mut Vec<String>,
    ) -> Result<J, LlmError> {
        let url = self.url();
        let mut retry = 0u32;
        loop {
            *attempts += 1;
            let failure = match self.send_once(&url, body).await {
                Ok(json) => return Ok(json),
                Err(f) => f,
            };
            let tries = format!("{} attempt(s)", retry + 1);
            if failure.class != ErrorClass::Transient || retry >= self.settings.max_retries {
                let message = if failure.class == ErrorClass::Transient {
                    format!("{} (gave up after {tries})", failure.message)
                } else {
                    failure.message
                };
                return Err(self.error(failure.class, action, message));
            }
            let delay = match failure.retry_after {
                Some(d) if d > self.settings.max_retry_after => {
                    return Err(self.error(
                        ErrorClass::Transient,
                        action,
                        format!(
                            "{} (the server asked to wait {} s, more than the configured maximum of {} s)",
                            failure.message,
                            d.as_secs(),
                            self.settings.max_retry_after.as_secs()
                        ),
                    ));
                }
                Some(d) => d,
                None => backoff_delay(
                    retry,
                    self.settings.backoff_base,
                    self.settings.backoff_max,
                    crate::hash::jitter_u64(),
                ),
            };
            let cause = self.redact(failure.message.clone());
            tracing::warn!(
                backend = %self.spec(),
                action,
                error = %cause,
                retry_in_ms = delay.as_millis() as u64,
                "transient failure; retrying"
            );
            retries.push(format!(
                "retried after {:.1} s: {cause}",
                delay.as_secs_f64()
            ));
            tokio::time::sleep(delay).await;
            retry += 1;
        }
    }

    async fn send_once(&self, url: &str, body: &J) -> Result<J, Failure> {
        let response = self
            .client
            .post(url)
            .headers(self.headers())
            .json(body)
            .send()
            .await
            .map_err(|e| self.transport_failure(&e))?;
        let status = response.status();
        // OpenAI also sends a millisecond-precise `retry-after-ms`.
        let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok());
        let retry_after = header("retry-after-ms")
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|ms| ms.is_finite() && *ms >= 0.0)
            .map(|ms| Duration::from_secs_f64(ms.min(1e12) / 1000.0))
            .or_else(|| {
                header(reqwest::header::RETRY_AFTER.as_str())
                    .and_then(|v| parse_retry_after(v, SystemTime::now()))
            });
        let bytes = response
            .bytes()
            .await
            .map_err(|e| self.transport_failure(&e))?;
        if status.is_success() {
            return serde_json::from_slice(&bytes).map_err(|e| Failure {
                class: ErrorClass::InvalidAnswer,
                message: format!(
                    "malformed response body from {url} (HTTP {status}): {e}: {}",
                    excerpt(&String::from_utf8_lossy(&bytes), 200)
                ),
                retry_after: None,
            });
        }
        let text = String::from_utf8_lossy(&bytes);
        let provider_message = serde_json::from_slice::<J>(&bytes)
            .ok()
            .and_then(|j| match self.api {
                Api::OpenAi => openai::error_message(&j),
                Api::Anthropic => anthropic::error_message(&j),
            })
            .unwrap_or_else(|| {
                if text.trim().is_empty() {
                    "(empty body)".to_owned()
                } else {
                    excerpt(text.trim(), 300)
                }
            });
        let class = match status.as_u16() {
            408 | 425 | 429 | 500..=599 => ErrorClass::Transient,
            _ => ErrorClass::Permanent,
        };
        let hint = match status.as_u16() {
            401 | 403 => " — check the API key",
            404 => " — check the model name and the base URL",
            _ => "",
        };
        Err(Failure {
            class,
            message: format!("HTTP {status} from {url}: {provider_message}{hint}"),
            retry_after,
        })
    }

    fn transport_failure(&self, e: &reqwest::Error) -> Failure {
        // The chain of sources says what actually happened (refused, reset, DNS).
        let mut cause = String::new();
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            cause = s.to_string();
            source = s.source();
        }
        let cause = if cause.is_empty() {
            e.to_string()
        } else {
            cause
        };
        if e.is_timeout() {
            Failure {
                class: ErrorClass::Transient,
                message: format!(
                    "timed out after {:.1} s waiting for {} (total timeout; connect timeout {:.1} s)",
                    self.settings.timeout.as_secs_f64(),
                    self.url(),
                    self.settings.connect_timeout.as_secs_f64()
                ),
                retry_after: None,
            }
        } else if e.is_builder() || e.is_redirect() {
            Failure {
                class: ErrorClass::Permanent,
                message: format!("cannot send to {}: {cause}", self.url()),
                retry_after: None,
            }
        } else if e.is_connect() {
            Failure {
                class: ErrorClass::Transient,
                message: format!("cannot connect to {}: {cause}", self.base_url),
                retry_after: None,
            }
        } else {
            Failure {
                class: ErrorClass::Transient,
                message: format!("request to {} failed: {cause}", self.url()),
                retry_after: None,
            }
        }
    }
}

impl LlmBackend for HttpBackend {
    fn describe(&self) -> String {
        self.redact(format!("{} @ {}", self.spec(), self.base_url))
    }

    fn call<'a>(&'a self, request: &'a LlmRequest) -> BoxFuture<'a, Result<LlmAnswer, LlmError>> {
        Box::pin(self.run(request))
    }
}

/// What the protocol modules need to build a request.
pub(crate) struct Exchange<'a> {
    pub(crate) request: &'a LlmRequest,
    pub(crate) model: &'a str,
    /// The output schema when the answer is structured.
    pub(crate) schema: Option<&'a J>,
    pub(crate) max_tokens: Option<u32>,
}

/// One model turn, protocol-neutral.
#[derive(Debug)]
pub(crate) struct Reply {
    /// The text the model wrote, if any.
    pub(crate) text: Option<String>,
    /// A structured answer delivered natively (Anthropic's tool input).
    pub(crate) json: Option<J>,
    pub(crate) refusal: Option<String>,
    /// Calls of the request's tools the model asked for.
    pub(crate) tool_calls: Vec<crate::ToolUse>,
    pub(crate) usage: Option<Usage>,
    /// The turn as the protocol returned it, to replay in a re-ask.
    pub(crate) raw: J,
    /// The model stopped at the token limit, so the answer is likely cut off.
    pub(crate) truncated: bool,
}

#[derive(Debug)]
struct Failure {
    class: ErrorClass,
    message: String,
    retry_after: Option<Duration>,
}

/// Full jitter: a uniform delay in `[0, min(max, base · 2^retry)]`.
pub(crate) fn backoff_delay(retry: u32, base: Duration, max: Duration, random: u64) -> Duration {
    let cap = base
        .saturating_mul(1u32.checked_shl(retry.min(31)).unwrap_or(u32::MAX))
        .min(max);
    let cap_ms = u64::try_from(cap.as_millis()).unwrap_or(u64::MAX);
    Duration::from_millis(random % cap_ms.saturating_add(1))
}

/// `Retry-After` as delay-seconds or an HTTP date (a date in the past means now).
pub(crate) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    // Some servers send fractional seconds.
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(1e9)));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_forms() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(parse_retry_after("3", now), Some(Duration::from_secs(3)));
        assert_eq!(
            parse_retry_after(" 0.5 ", now),
            Some(Duration::from_millis(500))
        );
        let later = httpdate::fmt_http_date(now + Duration::from_secs(7));
        assert_eq!(parse_retry_after(&later, now), Some(Duration::from_secs(7)));
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(7));
        assert_eq!(parse_retry_after(&earlier, now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-1", now), None);
    }

    #[test]
    fn backoff_is_bounded_and_grows() {
        let base = Duration::from_millis(100);
        let max = Duration::from_secs(1);
        assert_eq!(
            backoff_delay(0, base, max, u64::MAX - 1),
            Duration::from_millis((u64::MAX - 1) % 101)
        );
        for r in [0, 1, 2, 3, 10, 40, 1000] {
            for random in [0u64, 7, 12345, u64::MAX] {
                assert!(backoff_delay(r, base, max, random) <= max);
            }
        }
        assert!(backoff_delay(3, base, max, 800) == Duration::from_millis(800));
        assert!(backoff_delay(0, base, max, 800) <= base);
    }

    fn arb_json() -> impl proptest::strategy::Strategy<Value = J> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(J::Null),
            any::<bool>().prop_map(J::Bool),
            any::<i64>().prop_map(J::from),
            any::<f64>().prop_map(|f| serde_json::Number::from_f64(f).map_or(J::Null, J::Number)),
            "[a-z{}\\[\\]\":, ]{0,12}".prop_map(J::String),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            let keys = prop_oneof![
                Just("choices".to_owned()),
                Just("message".to_owned()),
                Just("content".to_owned()),
                Just("type".to_owned()),
                Just("text".to_owned()),
                Just("tool_use".to_owned()),
                Just("input".to_owned()),
                Just("usage".to_owned()),
                Just("verdict".to_owned()),
                Just("notes".to_owned()),
                Just("error".to_owned()),
                "[a-z]{1,5}",
            ];
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(J::Array),
                proptest::collection::btree_map(keys, inner, 0..4)
                    .prop_map(|m| J::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        /// Whatever a server sends, reading it yields a value or an error, never a panic.
        #[test]
        fn any_body_is_read_without_panicking(body in arb_json(), text in "\\PC{0,40}") {
            use troupe_check::types::{EnumDef, EnumId};
            let types = troupe_check::TypeTable {
                enums: vec![EnumDef { name: "Verdict".into(), values: vec!["approve".into(), "revise".into()] }],
                records: vec![],
            };
            let outs = [
                crate::OutputSlot::new("verdict", troupe_check::Type::Enum(EnumId(0))),
                crate::OutputSlot::new("notes", troupe_check::Type::Text),
            ];
            for reply in [openai::parse(&body), anthropic::parse(&body)].into_iter().flatten() {
                let mut messages = Vec::new();
                openai::reask(&mut messages, &reply, "e");
                anthropic::reask(&mut messages, &reply, "e");
                if let Some(j) = &reply.json {
                    let _ = decode_json(j, &outs, &types);
                }
            }
            let _ = openai::error_message(&body);
            let _ = anthropic::error_message(&body);
            let _ = decode_json(&body, &outs, &types);
            let _ = decode_json(&body, &outs[..1], &types);
            let _ = decode_text(&text, &outs, &types);
            let _ = parse_retry_after(&text, SystemTime::now());
        }
    }

    #[test]
    fn debug_redacts_the_key() {
        let b = HttpBackend::openai_compatible(
            "openai",
            "m",
            "http://127.0.0.1:9/v1",
            Some(ApiKey::new("sk-secret-123")),
            HttpSettings::default(),
        )
        .unwrap();
        let shown = format!("{b:?} {}", b.describe());
        assert!(!shown.contains("sk-secret-123"), "{shown}");
        assert!(shown.contains("<redacted>"));
        assert_eq!(
            b.redact("Incorrect API key provided: sk-secret-123".into()),
            "Incorrect API key provided: <redacted>"
        );
    }
}

#[cfg(test)]
mod redaction_tests {
    use super::*;

    #[test]
    fn credentials_in_the_base_url_are_never_shown() {
        let b = HttpBackend::openai_compatible(
            "openai",
            "m",
            "http://ada:s3cr3t@127.0.0.1:9/v1",
            Some(ApiKey::new("sk-key")),
            HttpSettings::default(),
        )
        .unwrap();
        let d = b.describe();
        assert!(!d.contains("s3cr3t") && !d.contains("ada:"), "{d}");
        assert!(d.contains("<redacted>@127.0.0.1:9"), "{d}");
        assert!(!b.base_url().contains("s3cr3t"));
        assert!(!format!("{b:?}").contains("s3cr3t"));
        let m = b.redact("cannot connect to http://ada:s3cr3t@127.0.0.1:9/v1 with sk-key".into());
        assert!(!m.contains("s3cr3t") && !m.contains("sk-key"), "{m}");
    }
}
