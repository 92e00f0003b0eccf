//! Logs and traces of the `troupe` process: `tracing` events on stderr,
//! filtered by `--log FILTER` (or `TROUPE_LOG`, then `RUST_LOG`; `RUST_LOG`
//! syntax, default `warn`), and with `--otlp URL` (or
//! `OTEL_EXPORTER_OTLP_ENDPOINT`, or `[telemetry] otlp` in `troupe.toml`)
//! the spans — run → lifeline → step → model call, with the GenAI
//! attributes — exported over OTLP/HTTP (JSON) to a collector.
//!
//! The exporter's HTTP client is the workspace's `reqwest`, driven by a
//! one-thread runtime of its own: the SDK's batch processor exports from
//! its own thread, outside any runtime of the command.

use anyhow::{Context, Result};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::SdkTracerProvider;
use std::io::IsTerminal;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Flushes the exporter when the command ends.
#[derive(Debug)]
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Some(p) = self.provider.take()
            && let Err(e) = p.shutdown()
        {
            crate::note!("warning: cannot send the last traces to the OTLP collector: {e}");
        }
    }
}

/// The OTLP endpoint: the flag, the standard variable, then `troupe.toml`.
fn endpoint(flag: Option<&str>) -> Result<Option<String>> {
    if let Some(url) = flag {
        return Ok(Some(url.to_owned()));
    }
    if let Ok(url) = std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT")
        && !url.trim().is_empty()
    {
        return Ok(Some(url));
    }
    let Ok(text) = std::fs::read_to_string(troupe_llm::config::CONFIG_FILE) else {
        return Ok(None);
    };
    let table: toml::Table = text
        .parse()
        .with_context(|| format!("cannot read {}", troupe_llm::config::CONFIG_FILE))?;
    match table.get("telemetry").and_then(|t| t.get("otlp")) {
        None => Ok(None),
        Some(toml::Value::String(url)) => Ok(Some(url.clone())),
        Some(_) => anyhow::bail!(
            "{}: [telemetry] otlp must be a URL such as \"http://127.0.0.1:4318\"",
            troupe_llm::config::CONFIG_FILE
        ),
    }
}

/// Installs the subscriber. `log`: a `RUST_LOG`-style filter.
pub fn init(log: Option<&str>, otlp: Option<&str>) -> Result<Telemetry> {
    let text = log
        .map(str::to_owned)
        .or_else(|| std::env::var("TROUPE_LOG").ok())
        .or_else(|| std::env::var("RUST_LOG").ok())
        .unwrap_or_else(|| "warn".to_owned());
    let filter = EnvFilter::builder().parse(&text).with_context(|| {
        format!("--log {text:?} is not a filter such as `info` or `troupe_host=debug,warn`")
    })?;
    let ansi = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .with_target(false)
        .with_filter(filter);
    let Some(url) = endpoint(otlp)? else {
        let _ = tracing_subscriber::registry().with(fmt).try_init();
        return Ok(Telemetry { provider: None });
    };
    let url = url.trim_end_matches('/').to_owned();
    let traces = if url.ends_with("/v1/traces") {
        url.clone()
    } else {
        format!("{url}/v1/traces")
    };
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpJson)
        .with_endpoint(traces)
        .with_http_client(Client::new()?)
        .build()
        .with_context(|| format!("cannot export traces to {url}"))?;
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(
            opentelemetry_sdk::Resource::builder()
                .with_service_name("troupe")
                .build(),
        )
        .build();
    // troupe's own spans only: a library's (rmcp's per request, say) would
    // sit in every run's trace as a foreign root.
    let otel = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("troupe"))
        .with_filter(EnvFilter::new(
            "off,troupe=info,troupe_cli=info,troupe_host=info,troupe_runtime=info,troupe_llm=info,troupe_mcp=info,troupe_store=info,troupe_web=info",
        ));
    let _ = tracing_subscriber::registry()
        .with(fmt)
        .with(otel)
        .try_init();
    Ok(Telemetry {
        provider: Some(provider),
    })
}

/// The exporter's HTTP client: `reqwest` on a runtime thread of its own.
#[derive(Debug)]
struct Client {
    http: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

impl Client {
    fn new() -> Result<Client> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("troupe-otlp")
            .enable_all()
            .build()?;
        let handle = runtime.handle().clone();
        // The runtime lives as long as the process; its thread is idle
        // between exports.
        std::mem::forget(runtime);
        Ok(Client {
            http: reqwest::Client::builder()
                .timeout(std::time::Duration::from_secs(10))
                .build()?,
            runtime: handle,
        })
    }
}

#[async_trait::async_trait]
impl opentelemetry_http::HttpClient for Client {
    async fn send_bytes(
        &self,
        request: http::Request<bytes::Bytes>,
    ) -> Result<http::Response<bytes::Bytes>, opentelemetry_http::HttpError> {
        let http = self.http.clone();
        let task = self.runtime.spawn(async move {
            let (parts, body) = request.into_parts();
            let response = http
                .request(parts.method, parts.uri.to_string())
                .headers(parts.headers)
                .body(body)
                .send()
                .await?;
            let status = response.status();
            let bytes = response.bytes().await?;
            Ok::<_, reqwest::Error>((status, bytes))
        });
        let (status, bytes) = task.await??;
        Ok(http::Response::builder().status(status).body(bytes)?)
    }
}
