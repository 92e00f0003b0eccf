//! The Streamable HTTP client transport over the reqwest 0.12 client that the
//! rest of troupe already uses (rmcp's own adapter targets reqwest 0.13; this
//! one keeps a single HTTP stack in the build). It POSTs JSON-RPC messages,
//! reads JSON or SSE answers, opens the GET event stream, and ends sessions
//! with DELETE, as the 2025-11-25 transport specifies.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::common::http_header::{
    EVENT_STREAM_MIME_TYPE, HEADER_LAST_EVENT_ID, HEADER_SESSION_ID, JSON_MIME_TYPE,
};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use sse_stream::{Sse, SseStream};

/// A reqwest 0.12 client as an rmcp Streamable HTTP client.
#[derive(Debug, Clone)]
pub struct Reqwest12(pub reqwest::Client);

/// A reqwest failure.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct HttpError(#[from] reqwest::Error);

type Result<T> = std::result::Result<T, StreamableHttpError<HttpError>>;

fn client_err(e: reqwest::Error) -> StreamableHttpError<HttpError> {
    StreamableHttpError::Client(HttpError(e))
}

fn with_headers(
    mut builder: reqwest::RequestBuilder,
    session_id: Option<&str>,
    auth: Option<String>,
    custom: HashMap<HeaderName, HeaderValue>,
) -> reqwest::RequestBuilder {
    if let Some(id) = session_id {
        builder = builder.header(HEADER_SESSION_ID, id);
    }
    if let Some(token) = auth {
        builder = builder.bearer_auth(token);
    }
    for (name, value) in custom {
        builder = builder.header(name, value);
    }
    builder
}

fn content_type(response: &reqwest::Response) -> Option<String> {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|s| s.to_ascii_lowercase())
}

fn is_media(content_type: Option<&str>, media: &str) -> bool {
    content_type.is_some_and(|ct| ct.split(';').next().is_some_and(|m| m.trim() == media))
}

impl StreamableHttpClient for Reqwest12 {
    type Error = HttpError;

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, std::result::Result<Sse, SseError>>> {
        let mut builder = self.0.get(uri.as_ref()).header(
            reqwest::header::ACCEPT,
            format!("{EVENT_STREAM_MIME_TYPE}, {JSON_MIME_TYPE}"),
        );
        if let Some(id) = last_event_id {
            builder = builder.header(HEADER_LAST_EVENT_ID, id);
        }
        let builder = with_headers(builder, session_id.as_deref(), auth_header, custom_headers);
        let response = builder.send().await.map_err(client_err)?;
        if response.status() == reqwest::StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        let response = response.error_for_status().map_err(client_err)?;
        let ct = content_type(&response);
        if !is_media(ct.as_deref(), EVENT_STREAM_MIME_TYPE) {
            return Err(StreamableHttpError::UnexpectedContentType(ct));
        }
        Ok(SseStream::from_bytes_stream(response.bytes_stream()).boxed())
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<()> {
        let builder = with_headers(
            self.0.delete(uri.as_ref()),
            Some(&session_id),
            auth_header,
            custom_headers,
        );
        let response = builder.send().await.map_err(client_err)?;
        if response.status() == reqwest::StatusCode::METHOD_NOT_ALLOWED {
            return Ok(());
        }
        response.error_for_status().map_err(client_err)?;
        Ok(())
    }

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse> {
        let builder = self.0.post(uri.as_ref()).header(
            reqwest::header::ACCEPT,
            format!("{EVENT_STREAM_MIME_TYPE}, {JSON_MIME_TYPE}"),
        );
        let had_session = session_id.is_some();
        let builder = with_headers(builder, session_id.as_deref(), auth_header, custom_headers);
        let response = builder.json(&message).send().await.map_err(client_err)?;
        let status = response.status();
        if matches!(
            status,
            reqwest::StatusCode::ACCEPTED | reqwest::StatusCode::NO_CONTENT
        ) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == reqwest::StatusCode::NOT_FOUND && had_session {
            return Err(StreamableHttpError::SessionExpired);
        }
        let awaits_nothing = !matches!(message, ClientJsonRpcMessage::Request(_));
        let new_session = response
            .headers()
            .get(HEADER_SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let ct = content_type(&response);
        if !status.is_success() {
            let body = response.text().await.unwrap_or_default();
            // A JSON-RPC error in the body is the server's answer.
            if let Ok(msg @ ServerJsonRpcMessage::Error(_)) =
                serde_json::from_str::<ServerJsonRpcMessage>(&body)
            {
                return Ok(StreamableHttpPostResponse::Json(msg, new_session));
            }
            let body: String = body.chars().take(500).collect();
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!("HTTP {status}: {body}"),
            )));
        }
        if is_media(ct.as_deref(), EVENT_STREAM_MIME_TYPE) {
            let stream = SseStream::from_bytes_stream(response.bytes_stream()).boxed();
            return Ok(StreamableHttpPostResponse::Sse(stream, new_session));
        }
        if is_media(ct.as_deref(), JSON_MIME_TYPE) {
            let body = response.bytes().await.map_err(client_err)?;
            return match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
                Ok(msg) => Ok(StreamableHttpPostResponse::Json(msg, new_session)),
                Err(_) if awaits_nothing => Ok(StreamableHttpPostResponse::Accepted),
                Err(e) => Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                    format!("the server's JSON answer is not a JSON-RPC message: {e}"),
                ))),
            };
        }
        if awaits_nothing {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        Err(StreamableHttpError::UnexpectedContentType(ct))
    }
}
