//! The protocol loop: framing on the byte streams, the document store with
//! incremental sync, and one handler per LSP method.
//!
//! The reader runs on its own thread and never gives up on bad input: a
//! frame that is not JSON, not UTF-8 or not a JSON-RPC message is answered
//! with a JSON-RPC error and the next frame is read. Diagnostics are
//! published when the queue of incoming messages is empty, so a burst of
//! changes is analysed once.

use crate::LspError;
use crate::analysis::{self, Analysis, CompletionKind, ContractCache, Fix, OutlineKind};
use crate::text::apply_change;
use lsp_server::{ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types as lt;
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::mpsc;
use troupe_syntax::Span;

/// The commands of `workspace/executeCommand`.
pub const COMMAND_PROJECT: &str = "troupe.project";
pub const COMMAND_CHART: &str = "troupe.chart";

/// Largest frame accepted (64 MiB).
const MAX_FRAME: usize = 64 << 20;

/// What the reader thread hands to the loop.
#[derive(Debug)]
enum Incoming {
    Message(Message),
    /// A frame that is no JSON-RPC message: the error to answer with.
    Invalid {
        id: Value,
        code: i32,
        message: String,
    },
}

/// Serves one client: reads LSP frames from `input`, writes to `output`,
/// until `exit` or the end of the input.
pub fn serve<R, W>(input: R, output: W) -> Result<(), LspError>
where
    R: Read + Send + 'static,
    W: Write,
{
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::Builder::new()
        .name("troupe-lsp-reader".into())
        .spawn(move || read_frames(BufReader::new(input), &tx))?;
    let mut server = Server {
        out: output,
        docs: HashMap::new(),
        cache: ContractCache::default(),
        initialized: false,
        shutdown: false,
        dirty: BTreeSet::new(),
    };
    let mut queue: VecDeque<Incoming> = VecDeque::new();
    let result = loop {
        let next = match queue.pop_front() {
            Some(m) => m,
            None => match rx.recv() {
                Ok(m) => m,
                Err(_) => break Ok(()),
            },
        };
        match server.handle(next) {
            Ok(Flow::Continue) => {}
            Ok(Flow::Exit) => break Ok(()),
            Err(e) => break Err(e),
        }
        queue.extend(rx.try_iter());
        if queue.is_empty()
            && let Err(e) = server.publish_dirty()
        {
            break Err(e);
        }
    };
    drop(rx);
    // The reader ends at end of input; after `exit` it may still block on
    // stdin, so it is not joined.
    drop(reader);
    result
}

/// Reads frames until the end of the input.
fn read_frames<R: BufRead>(mut input: R, tx: &mpsc::Sender<Incoming>) {
    loop {
        let mut length: Option<usize> = None;
        let mut saw_header = false;
        let mut bad_header = None;
        loop {
            let mut line = Vec::new();
            match input.by_ref().take(8192).read_until(b'\n', &mut line) {
                Ok(0) => return,
                Ok(_) => {}
                Err(_) => return,
            }
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_end_matches(['\r', '\n']);
            if text.is_empty() {
                if saw_header {
                    break;
                }
                continue;
            }
            saw_header = true;
            if let Some((name, value)) = text.split_once(':') {
                if name.trim().eq_ignore_ascii_case("content-length") {
                    match value.trim().parse::<usize>() {
                        Ok(n) if n <= MAX_FRAME => length = Some(n),
                        _ => bad_header = Some(format!("bad Content-Length `{}`", value.trim())),
                    }
                }
            } else {
                bad_header = Some(format!("malformed header line `{text}`"));
            }
        }
        let Some(length) = length else {
            let message = bad_header.unwrap_or_else(|| "missing Content-Length header".into());
            if tx
                .send(invalid(Value::Null, ErrorCode::ParseError, message))
                .is_err()
            {
                return;
            }
            continue;
        };
        let mut body = vec![0; length];
        if input.read_exact(&mut body).is_err() {
            return;
        }
        let incoming = match serde_json::from_slice::<Value>(&body) {
            Err(e) => invalid(
                Value::Null,
                ErrorCode::ParseError,
                format!("invalid JSON: {e}"),
            ),
            Ok(value) => {
                let id = value.get("id").cloned().unwrap_or(Value::Null);
                let is_message = value.get("method").is_some_and(Value::is_string)
                    || value.get("result").is_some()
                    || value.get("error").is_some();
                if !is_message {
                    let message = "not a JSON-RPC message: no method, result or error".into();
                    if tx
                        .send(invalid(id, ErrorCode::InvalidRequest, message))
                        .is_err()
                    {
                        return;
                    }
                    continue;
                }
                match serde_json::from_value::<Message>(value) {
                    Ok(m) => Incoming::Message(m),
                    Err(e) => invalid(
                        id,
                        ErrorCode::InvalidRequest,
                        format!("not a JSON-RPC message: {e}"),
                    ),
                }
            }
        };
        if tx.send(incoming).is_err() {
            return;
        }
    }
}

fn invalid(id: Value, code: ErrorCode, message: String) -> Incoming {
    Incoming::Invalid {
        id,
        code: code as i32,
        message,
    }
}

enum Flow {
    Continue,
    Exit,
}

/// One open document.
#[derive(Debug)]
struct Doc {
    uri: lt::Uri,
    text: String,
    analysis: Option<Analysis>,
}

struct Server<W: Write> {
    out: W,
    docs: HashMap<String, Doc>,
    cache: ContractCache,
    initialized: bool,
    shutdown: bool,
    /// Documents whose diagnostics must be published.
    dirty: BTreeSet<String>,
}

/// A handler's failure, answered as a JSON-RPC error.
struct Failure {
    code: ErrorCode,
    message: String,
}

impl Failure {
    fn params(e: impl std::fmt::Display) -> Failure {
        Failure {
            code: ErrorCode::InvalidParams,
            message: format!("invalid params: {e}"),
        }
    }
    fn request(message: impl Into<String>) -> Failure {
        Failure {
            code: ErrorCode::RequestFailed,
            message: message.into(),
        }
    }
}

type Handled = Result<Value, Failure>;

fn params<P: serde::de::DeserializeOwned>(v: Value) -> Result<P, Failure> {
    serde_json::from_value(v).map_err(Failure::params)
}

impl<W: Write> Server<W> {
    fn send(&mut self, msg: Message) -> Result<(), LspError> {
        msg.write(&mut self.out)?;
        Ok(())
    }

    fn send_raw(&mut self, value: &Value) -> Result<(), LspError> {
        let body = serde_json::to_string(value)?;
        write!(self.out, "Content-Length: {}\r\n\r\n{body}", body.len())?;
        self.out.flush()?;
        Ok(())
    }

    fn handle(&mut self, incoming: Incoming) -> Result<Flow, LspError> {
        match incoming {
            Incoming::Invalid { id, code, message } => {
                self.send_raw(&json!({
                    "jsonrpc": "2.0",
                    "id": id,
                    "error": { "code": code, "message": message },
                }))?;
                Ok(Flow::Continue)
            }
            Incoming::Message(Message::Request(req)) => self.request(req),
            Incoming::Message(Message::Notification(n)) => self.notification(n),
            // Answers to requests we never send.
            Incoming::Message(Message::Response(_)) => Ok(Flow::Continue),
        }
    }

    fn request(&mut self, req: Request) -> Result<Flow, LspError> {
        let Request { id, method, params } = req;
        let reply = |id: RequestId, r: Handled| match r {
            Ok(v) => Response::new_ok(id, v),
            Err(f) => Response::new_err(id, f.code as i32, f.message),
        };
        if method == "initialize" {
            let r = if self.initialized {
                Err(Failure::request("initialize was already called"))
            } else {
                self.initialized = true;
                Ok(initialize_result())
            };
            self.send(Message::Response(reply(id, r)))?;
            return Ok(Flow::Continue);
        }
        if !self.initialized {
            let resp = Response::new_err(
                id,
                ErrorCode::ServerNotInitialized as i32,
                "the server is not initialized".into(),
            );
            self.send(Message::Response(resp))?;
            return Ok(Flow::Continue);
        }
        if self.shutdown {
            let resp = Response::new_err(
                id,
                ErrorCode::InvalidRequest as i32,
                "the server is shutting down".into(),
            );
            self.send(Message::Response(resp))?;
            return Ok(Flow::Continue);
        }
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.dispatch(&method, params)
        }))
        .unwrap_or_else(|_| {
            Err(Failure {
                code: ErrorCode::InternalError,
                message: format!("internal error while handling {method}"),
            })
        });
        self.send(Message::Response(reply(id, result)))?;
        Ok(Flow::Continue)
    }

    fn dispatch(&mut self, method: &str, p: Value) -> Handled {
        match method {
            "shutdown" => {
                self.shutdown = true;
                Ok(Value::Null)
            }
            "textDocument/hover" => self.hover(params(p)?),
            "textDocument/definition" => self.definition(params(p)?),
            "textDocument/references" => self.references(params(p)?),
            "textDocument/completion" => self.completion(params(p)?),
            "textDocument/documentSymbol" => self.document_symbols(params(p)?),
            "textDocument/prepareRename" => self.prepare_rename(params(p)?),
            "textDocument/rename" => self.rename(params(p)?),
            "textDocument/codeAction" => self.code_actions(params(p)?),
            "workspace/executeCommand" => self.execute_command(params(p)?),
            _ => Err(Failure {
                code: ErrorCode::MethodNotFound,
                message: format!("unknown method {method}"),
            }),
        }
    }

    fn notification(&mut self, n: Notification) -> Result<Flow, LspError> {
        let Notification { method, params } = n;
        match method.as_str() {
            "exit" => return Ok(Flow::Exit),
            "textDocument/didOpen" => {
                if let Ok(p) = serde_json::from_value::<lt::DidOpenTextDocumentParams>(params) {
                    let key = p.text_document.uri.as_str().to_owned();
                    self.docs.insert(
                        key.clone(),
                        Doc {
                            uri: p.text_document.uri,
                            text: p.text_document.text,
                            analysis: None,
                        },
                    );
                    self.dirty.insert(key);
                }
            }
            "textDocument/didChange" => {
                if let Ok(p) = serde_json::from_value::<lt::DidChangeTextDocumentParams>(params) {
                    let key = p.text_document.uri.as_str().to_owned();
                    if let Some(doc) = self.docs.get_mut(&key) {
                        for change in p.content_changes {
                            apply_change(&mut doc.text, change.range, &change.text);
                        }
                        doc.analysis = None;
                        self.dirty.insert(key);
                    }
                }
            }
            "textDocument/didClose" => {
                if let Ok(p) = serde_json::from_value::<lt::DidCloseTextDocumentParams>(params) {
                    let key = p.text_document.uri.as_str().to_owned();
                    if let Some(doc) = self.docs.remove(&key) {
                        self.dirty.remove(&key);
                        self.publish(&doc.uri, Vec::new())?;
                    }
                }
            }
            "textDocument/didSave" | "workspace/didChangeWatchedFiles" => {
                // A contract sidecar may have changed on disk.
                self.cache.clear();
                for (key, doc) in &mut self.docs {
                    doc.analysis = None;
                    self.dirty.insert(key.clone());
                }
            }
            _ => {}
        }
        Ok(Flow::Continue)
    }

    fn analysis(&mut self, uri: &lt::Uri) -> Result<&Analysis, Failure> {
        let doc = self
            .docs
            .get_mut(uri.as_str())
            .ok_or_else(|| Failure::request(format!("{} is not open", uri.as_str())))?;
        if doc.analysis.is_none() {
            let base = file_dir(&doc.uri);
            let name = file_name(&doc.uri);
            doc.analysis = Some(Analysis::named(
                doc.text.clone(),
                base.as_deref(),
                name.as_deref(),
                &mut self.cache,
            ));
        }
        doc.analysis
            .as_ref()
            .ok_or_else(|| Failure::request("no analysis"))
    }

    fn publish_dirty(&mut self) -> Result<(), LspError> {
        let dirty = std::mem::take(&mut self.dirty);
        for key in dirty {
            let Some(uri) = self.docs.get(&key).map(|d| d.uri.clone()) else {
                continue;
            };
            let diags = match self.analysis(&uri) {
                Ok(a) => to_lsp_diagnostics(a, &uri),
                Err(_) => continue,
            };
            self.publish(&uri, diags)?;
        }
        Ok(())
    }

    fn publish(&mut self, uri: &lt::Uri, diagnostics: Vec<lt::Diagnostic>) -> Result<(), LspError> {
        let params = lt::PublishDiagnosticsParams {
            uri: uri.clone(),
            diagnostics,
            version: None,
        };
        self.send(Message::Notification(Notification::new(
            "textDocument/publishDiagnostics".into(),
            params,
        )))
    }

    fn at(&mut self, pos: &lt::TextDocumentPositionParams) -> Result<(&Analysis, usize), Failure> {
        let a = self.analysis(&pos.text_document.uri)?;
        let offset = a.lines.offset(&a.text, pos.position);
        Ok((a, offset))
    }

    fn hover(&mut self, p: lt::HoverParams) -> Handled {
        let (a, offset) = self.at(&p.text_document_position_params)?;
        let Some((text, span)) = a.hover(offset) else {
            return Ok(Value::Null);
        };
        to_value(lt::Hover {
            contents: lt::HoverContents::Markup(lt::MarkupContent {
                kind: lt::MarkupKind::Markdown,
                value: text,
            }),
            range: Some(a.lines.range(&a.text, span)),
        })
    }

    fn definition(&mut self, p: lt::GotoDefinitionParams) -> Handled {
        let uri = p.text_document_position_params.text_document.uri.clone();
        let (a, offset) = self.at(&p.text_document_position_params)?;
        let Some(span) = a.definition(offset) else {
            return Ok(Value::Null);
        };
        to_value(lt::Location {
            uri,
            range: a.lines.range(&a.text, span),
        })
    }

    fn references(&mut self, p: lt::ReferenceParams) -> Handled {
        let uri = p.text_document_position.text_document.uri.clone();
        let (a, offset) = self.at(&p.text_document_position)?;
        let locs: Vec<lt::Location> = a
            .references(offset, p.context.include_declaration)
            .into_iter()
            .map(|s| lt::Location {
                uri: uri.clone(),
                range: a.lines.range(&a.text, s),
            })
            .collect();
        to_value(locs)
    }

    fn completion(&mut self, p: lt::CompletionParams) -> Handled {
        let (a, offset) = self.at(&p.text_document_position)?;
        let items: Vec<lt::CompletionItem> = a
            .completions(offset)
            .into_iter()
            .map(|c| lt::CompletionItem {
                label: c.label,
                kind: Some(match c.kind {
                    CompletionKind::Keyword => lt::CompletionItemKind::KEYWORD,
                    CompletionKind::Action => lt::CompletionItemKind::FUNCTION,
                    CompletionKind::Lifeline => lt::CompletionItemKind::CLASS,
                    CompletionKind::Variable => lt::CompletionItemKind::VARIABLE,
                    CompletionKind::Type => lt::CompletionItemKind::STRUCT,
                    CompletionKind::EnumValue => lt::CompletionItemKind::ENUM_MEMBER,
                }),
                detail: Some(c.detail),
                ..Default::default()
            })
            .collect();
        to_value(lt::CompletionResponse::Array(items))
    }

    fn document_symbols(&mut self, p: lt::DocumentSymbolParams) -> Handled {
        let a = self.analysis(&p.text_document.uri)?;
        #[allow(deprecated)]
        fn convert(a: &Analysis, o: &analysis::Outline) -> lt::DocumentSymbol {
            let kind = match o.kind {
                OutlineKind::Enum => lt::SymbolKind::ENUM,
                OutlineKind::EnumValue => lt::SymbolKind::ENUM_MEMBER,
                OutlineKind::Record => lt::SymbolKind::STRUCT,
                OutlineKind::Field => lt::SymbolKind::FIELD,
                OutlineKind::Action => lt::SymbolKind::FUNCTION,
                OutlineKind::Server => lt::SymbolKind::MODULE,
                OutlineKind::Workflow => lt::SymbolKind::CLASS,
                OutlineKind::Lifeline => lt::SymbolKind::OBJECT,
            };
            let span = o.span.to(o.name_span);
            lt::DocumentSymbol {
                name: o.name.clone(),
                detail: o.detail.clone(),
                kind,
                tags: None,
                deprecated: None,
                range: a.lines.range(&a.text, span),
                selection_range: a.lines.range(&a.text, o.name_span),
                children: (!o.children.is_empty())
                    .then(|| o.children.iter().map(|c| convert(a, c)).collect()),
            }
        }
        let symbols: Vec<lt::DocumentSymbol> = a.outline().iter().map(|o| convert(a, o)).collect();
        to_value(lt::DocumentSymbolResponse::Nested(symbols))
    }

    fn prepare_rename(&mut self, p: lt::TextDocumentPositionParams) -> Handled {
        let (a, offset) = self.at(&p)?;
        match a.prepare_rename(offset) {
            Some(span) => to_value(lt::PrepareRenameResponse::Range(
                a.lines.range(&a.text, span),
            )),
            None => Ok(Value::Null),
        }
    }

    fn rename(&mut self, p: lt::RenameParams) -> Handled {
        let uri = p.text_document_position.text_document.uri.clone();
        let (a, offset) = self.at(&p.text_document_position)?;
        let spans = a.rename(offset, &p.new_name).map_err(Failure::request)?;
        let edits: Vec<lt::TextEdit> = spans
            .into_iter()
            .map(|s| lt::TextEdit {
                range: a.lines.range(&a.text, s),
                new_text: p.new_name.clone(),
            })
            .collect();
        to_value(lt::WorkspaceEdit {
            changes: Some(HashMap::from([(uri, edits)])),
            ..Default::default()
        })
    }

    fn code_actions(&mut self, p: lt::CodeActionParams) -> Handled {
        let uri = p.text_document.uri.clone();
        let a = self.analysis(&uri)?;
        let span = a.lines.span(&a.text, p.range);
        let mut actions = Vec::new();
        for fix in a.fixes(span) {
            actions.push(lt::CodeActionOrCommand::CodeAction(fix_action(
                a, &uri, fix,
            )));
        }
        if a.program.is_some() {
            let args = vec![json!(uri.as_str()), json!(p.range.start)];
            let lifeline = a.lifeline_at(span.start as usize).map(|(_, l)| l);
            let title = match &lifeline {
                Some(l) => format!("Show the projection of {l}"),
                None => "Show the projection of every lifeline".into(),
            };
            for (title, command) in [
                (title, COMMAND_PROJECT),
                ("Show the chart of the workflow".into(), COMMAND_CHART),
            ] {
                actions.push(lt::CodeActionOrCommand::Command(lt::Command {
                    title,
                    command: command.into(),
                    arguments: Some(args.clone()),
                }));
            }
        }
        to_value(actions)
    }

    fn execute_command(&mut self, p: lt::ExecuteCommandParams) -> Handled {
        let mut args = p.arguments.into_iter();
        let uri = args
            .next()
            .and_then(|v| v.as_str().and_then(|s| lt::Uri::from_str(s).ok()))
            .ok_or_else(|| Failure::params("the first argument must be a document URI"))?;
        let position: lt::Position = match args.next() {
            Some(v) => serde_json::from_value(v).map_err(Failure::params)?,
            None => lt::Position::default(),
        };
        let a = self.analysis(&uri)?;
        let offset = a.lines.offset(&a.text, position);
        let (title, language, text) = match p.command.as_str() {
            COMMAND_PROJECT => {
                let text = a.projection(offset).map_err(Failure::request)?;
                let title = match a.lifeline_at(offset) {
                    Some((_, l)) => format!("projection of {l}"),
                    None => "projection".into(),
                };
                (title, "troupe-projection", text)
            }
            COMMAND_CHART => (
                "chart".into(),
                "mermaid",
                a.chart(offset, false).map_err(Failure::request)?,
            ),
            other => return Err(Failure::params(format!("unknown command {other}"))),
        };
        Ok(json!({ "title": title, "language": language, "text": text }))
    }
}

fn to_value(v: impl serde::Serialize) -> Handled {
    serde_json::to_value(v).map_err(|e| Failure {
        code: ErrorCode::InternalError,
        message: e.to_string(),
    })
}

fn fix_action(a: &Analysis, uri: &lt::Uri, fix: Fix) -> lt::CodeAction {
    let edits = fix
        .edits
        .iter()
        .map(|(span, text)| lt::TextEdit {
            range: a.lines.range(&a.text, *span),
            new_text: text.clone(),
        })
        .collect();
    let diagnostics = a
        .diagnostics
        .iter()
        .filter(|d| d.code == fix.code)
        .filter(|d| fix.edits.iter().any(|(s, _)| d.span == *s) || fix.preferred)
        .take(1)
        .map(|d| to_lsp_diagnostic(a, uri, d))
        .collect();
    lt::CodeAction {
        title: fix.title,
        kind: Some(lt::CodeActionKind::QUICKFIX),
        diagnostics: Some(diagnostics),
        edit: Some(lt::WorkspaceEdit {
            changes: Some(HashMap::from([(uri.clone(), edits)])),
            ..Default::default()
        }),
        is_preferred: Some(fix.preferred),
        ..Default::default()
    }
}

fn initialize_result() -> Value {
    let caps = lt::ServerCapabilities {
        text_document_sync: Some(lt::TextDocumentSyncCapability::Options(
            lt::TextDocumentSyncOptions {
                open_close: Some(true),
                change: Some(lt::TextDocumentSyncKind::INCREMENTAL),
                save: Some(lt::TextDocumentSyncSaveOptions::Supported(true)),
                ..Default::default()
            },
        )),
        hover_provider: Some(lt::HoverProviderCapability::Simple(true)),
        definition_provider: Some(lt::OneOf::Left(true)),
        references_provider: Some(lt::OneOf::Left(true)),
        completion_provider: Some(lt::CompletionOptions {
            trigger_characters: Some(vec!["@".into(), "(".into(), ",".into(), ":".into()]),
            ..Default::default()
        }),
        document_symbol_provider: Some(lt::OneOf::Left(true)),
        rename_provider: Some(lt::OneOf::Right(lt::RenameOptions {
            prepare_provider: Some(true),
            work_done_progress_options: Default::default(),
        })),
        code_action_provider: Some(lt::CodeActionProviderCapability::Simple(true)),
        execute_command_provider: Some(lt::ExecuteCommandOptions {
            commands: vec![COMMAND_PROJECT.into(), COMMAND_CHART.into()],
            ..Default::default()
        }),
        ..Default::default()
    };
    json!({
        "capabilities": caps,
        "serverInfo": { "name": "troupe", "version": env!("CARGO_PKG_VERSION") },
    })
}

/// The diagnostics of `a` as LSP diagnostics: code, message with the hint,
/// the label and the related spans as related information.
pub fn to_lsp_diagnostics(a: &Analysis, uri: &lt::Uri) -> Vec<lt::Diagnostic> {
    a.diagnostics
        .iter()
        .map(|d| to_lsp_diagnostic(a, uri, d))
        .collect()
}

fn to_lsp_diagnostic(a: &Analysis, uri: &lt::Uri, d: &troupe_syntax::Diagnostic) -> lt::Diagnostic {
    let range = |s: Span| a.lines.range(&a.text, s);
    let mut message = d.message.clone();
    if let Some(h) = &d.hint {
        message.push_str("\nhint: ");
        message.push_str(h);
    }
    let mut related = Vec::new();
    if let Some(label) = &d.label {
        related.push(lt::DiagnosticRelatedInformation {
            location: lt::Location {
                uri: uri.clone(),
                range: range(d.span),
            },
            message: label.clone(),
        });
    }
    for (span, label) in &d.related {
        related.push(lt::DiagnosticRelatedInformation {
            location: lt::Location {
                uri: uri.clone(),
                range: range(*span),
            },
            message: label.clone(),
        });
    }
    lt::Diagnostic {
        range: range(d.span),
        severity: Some(analysis::severity(d)),
        code: Some(lt::NumberOrString::String(d.code.as_str().into())),
        source: Some("troupe".into()),
        message,
        related_information: (!related.is_empty()).then_some(related),
        ..Default::default()
    }
}

/// The directory of a `file:` URI.
fn file_dir(uri: &lt::Uri) -> Option<PathBuf> {
    let path = uri.as_str().strip_prefix("file://")?;
    let decoded = percent_decode(path)?;
    PathBuf::from(decoded).parent().map(PathBuf::from)
}

/// The file name of a `file://` URI (for imports of the file itself).
fn file_name(uri: &lt::Uri) -> Option<String> {
    let path = uri.as_str().strip_prefix("file://")?;
    let decoded = percent_decode(path)?;
    Some(
        PathBuf::from(decoded)
            .file_name()?
            .to_string_lossy()
            .into_owned(),
    )
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_decode_to_their_directory() {
        let uri = lt::Uri::from_str("file:///tmp/a%20b/x.troupe").unwrap();
        assert_eq!(file_dir(&uri), Some(PathBuf::from("/tmp/a b")));
        let other = lt::Uri::from_str("untitled:Untitled-1").unwrap();
        assert_eq!(file_dir(&other), None);
    }
}
