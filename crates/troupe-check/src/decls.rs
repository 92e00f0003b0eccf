//! Checking declarations: types, actions and their bodies, into the IR's
//! `TypeTable` and `Action`s.

use crate::Checker;
use crate::ir::Deadline;
use crate::ir::{
    self, ActionKind, AnswerKind, HumanAction, LlmAction, Param, Template, TemplatePart,
};
use crate::types::{EnumDef, EnumId, RecordDef, RecordId, Type};
use std::collections::HashMap;
use troupe_syntax::ast::{self, ExprKind, StrPart};
use troupe_syntax::{Code, Diagnostic, Span};

const BUILTIN_TYPES: [&str; 5] = ["Bool", "Int", "Float", "Text", "Json"];

impl Checker<'_> {
    /// Registers every enum and record name, then resolves record fields.
    pub(crate) fn declare_types(&mut self, file: &ast::File) {
        let mut first: HashMap<&str, Span> = HashMap::new();
        for item in &file.items {
            let (name, kind) = match item {
                ast::Item::Enum(e) => (&e.name, "enum"),
                ast::Item::Record(r) => (&r.name, "record"),
                _ => continue,
            };
            if BUILTIN_TYPES.contains(&name.name.as_str()) {
                self.error(
                    Diagnostic::error(
                        Code::DuplicateDefinition,
                        name.span,
                        format!("`{}` is a built-in type", name.name),
                    )
                    .with_hint("choose another name for this type"),
                );
                continue;
            }
            if let Some(&prev) = first.get(name.name.as_str()) {
                self.duplicate(&name.name, name.span, prev, "type");
                continue;
            }
            first.insert(&name.name, name.span);
            match item {
                ast::Item::Enum(e) => {
                    let id = EnumId(self.types.enums.len() as u32);
                    let mut values: Vec<String> = Vec::new();
                    let mut seen: HashMap<&str, Span> = HashMap::new();
                    for v in &e.values {
                        if let Some(&prev) = seen.get(v.name.as_str()) {
                            self.duplicate(&v.name, v.span, prev, "enum value");
                            continue;
                        }
                        seen.insert(&v.name, v.span);
                        values.push(v.name.clone());
                        self.enum_values
                            .entry(v.name.clone())
                            .or_default()
                            .push((id, values.len() as u32 - 1));
                    }
                    self.types.enums.push(EnumDef {
                        name: e.name.name.clone(),
                        values,
                    });
                    self.type_names.insert(name.name.clone(), Type::Enum(id));
                }
                ast::Item::Record(_) => {
                    let id = RecordId(self.types.records.len() as u32);
                    self.types.records.push(RecordDef {
                        name: name.name.clone(),
                        fields: Vec::new(),
                    });
                    self.type_names.insert(name.name.clone(), Type::Record(id));
                }
                _ => unreachable!("filtered above"),
            }
            let _ = kind;
        }
        for item in &file.items {
            if let ast::Item::Record(r) = item {
                let Some(Type::Record(id)) = self.type_names.get(&r.name.name).cloned() else {
                    continue;
                };
                if self.types.records[id.0 as usize].name != r.name.name
                    || !self.types.records[id.0 as usize].fields.is_empty()
                {
                    continue;
                }
                let fields = self.params(&r.fields, "field");
                self.types.records[id.0 as usize].fields =
                    fields.into_iter().map(|p| (p.name, p.ty)).collect();
            }
        }
    }

    /// Resolves a type expression, reporting unknown names.
    pub(crate) fn resolve_type(&mut self, ty: &ast::TypeExpr) -> Type {
        match ty {
            ast::TypeExpr::Named(id) => match id.name.as_str() {
                "Bool" => Type::Bool,
                "Int" => Type::Int,
                "Float" => Type::Float,
                "Text" => Type::Text,
                "Json" => Type::Json,
                other => match self.type_names.get(other) {
                    Some(t) => t.clone(),
                    None => {
                        let candidates = BUILTIN_TYPES
                            .iter()
                            .map(|s| s.to_string())
                            .chain(crate::suggest::sorted_keys(&self.type_names));
                        let mut d = Diagnostic::error(
                            Code::UnknownType,
                            id.span,
                            format!("unknown type `{other}`"),
                        )
                        .with_label("not a type");
                        d = d.with_hint(match self.did_you_mean(other, candidates) {
                            Some(s) => format!("did you mean `{s}`?"),
                            None => "types are Bool, Int, Float, Text, Json, [T], or a declared `enum` or `record`".to_owned(),
                        });
                        self.error(d);
                        Type::Error
                    }
                },
            },
            ast::TypeExpr::List(inner, _) => Type::List(Box::new(self.resolve_type(inner))),
            ast::TypeExpr::Error(_) => Type::Error,
        }
    }

    fn params(&mut self, params: &[ast::Param], what: &str) -> Vec<Param> {
        for p in params {
            if let Some(d) = &p.default {
                self.error(
                    Diagnostic::error(
                        Code::InvalidActionField,
                        d.span,
                        format!("a default value is not allowed for this {what}"),
                    )
                    .with_hint(
                        "only `tool` parameters take defaults (optional arguments of the MCP tool)",
                    ),
                );
            }
        }
        self.params_with_defaults(params, what)
    }

    fn params_with_defaults(&mut self, params: &[ast::Param], what: &str) -> Vec<Param> {
        let mut seen: HashMap<&str, Span> = HashMap::new();
        let mut out = Vec::with_capacity(params.len());
        for p in params {
            if let Some(&prev) = seen.get(p.name.name.as_str()) {
                self.duplicate(&p.name.name, p.name.span, prev, what);
            }
            seen.insert(&p.name.name, p.name.span);
            let ty = self.resolve_type(&p.ty);
            out.push(Param {
                name: p.name.name.clone(),
                ty,
            });
        }
        out
    }

    pub(crate) fn duplicate(&mut self, name: &str, span: Span, previous: Span, what: &str) {
        self.error(
            Diagnostic::error(
                Code::DuplicateDefinition,
                span,
                format!("the {what} `{name}` is defined twice"),
            )
            .with_label("defined again here")
            .with_related(previous, "first defined here")
            .with_hint("rename one of them"),
        );
    }

    /// Registers every action with its signature (bodies are checked later,
    /// once all types are known).
    pub(crate) fn declare_actions(&mut self, file: &ast::File) {
        for item in &file.items {
            let ast::Item::Action(decl) = item else {
                continue;
            };
            if let Some(&prev) = self.action_names.get(&decl.name.name) {
                let prev_span = self.actions[prev.0 as usize].span;
                self.duplicate(&decl.name.name, decl.name.span, prev_span, "action");
                continue;
            }
            if decl.name.name == crate::ir::SLEEP {
                self.error(
                    Diagnostic::error(
                        Code::DuplicateDefinition,
                        decl.name.span,
                        "`sleep` is the built-in durable timer; an action cannot take its name",
                    )
                    .with_label("reserved name")
                    .with_hint("rename the action; `act A: sleep(\"10m\")` waits durably"),
                );
                continue;
            }
            let params = if decl.kind == ast::ActionKind::Tool {
                self.params_with_defaults(&decl.params, "parameter")
            } else {
                self.params(&decl.params, "parameter")
            };
            let outputs = match &decl.outputs {
                ast::Outputs::None => Vec::new(),
                ast::Outputs::Single(ty) => vec![Param {
                    name: "result".into(),
                    ty: self.resolve_type(ty),
                }],
                ast::Outputs::Named(list) => self.params(list, "output"),
            };
            let kind = self.action_kind(decl, &params, &outputs);
            let id = ir::ActionId(self.actions.len() as u32);
            self.action_names.insert(decl.name.name.clone(), id);
            self.actions.push(ir::Action {
                name: decl.name.name.clone(),
                params,
                outputs,
                kind,
                span: decl.name.span,
            });
        }
        self.resolve_tools();
        self.resolve_planner_actions();
    }

    /// The `tools:` of `llm` actions name declared `tool` actions (E0106),
    /// each once.
    fn resolve_tools(&mut self) {
        for (index, llm, names) in std::mem::take(&mut self.pending_tools) {
            let mut ids: Vec<ir::ActionId> = Vec::with_capacity(names.len());
            for id in &names {
                match self.action_names.get(&id.name).copied() {
                    Some(a) if matches!(self.actions[a.0 as usize].kind, ActionKind::Tool(_)) => {
                        if ids.contains(&a) {
                            self.error(
                                Diagnostic::error(
                                    Code::UnknownTool,
                                    id.span,
                                    format!(
                                        "`{}` is listed twice in the tools of `{llm}`",
                                        id.name
                                    ),
                                )
                                .with_label("listed again"),
                            );
                        } else {
                            ids.push(a);
                        }
                    }
                    Some(a) => {
                        let kind = self.actions[a.0 as usize].kind.label();
                        let declared = self.actions[a.0 as usize].span;
                        self.error(
                            Diagnostic::error(
                                Code::UnknownTool,
                                id.span,
                                format!("`{}` is a `{kind}` action, not a `tool`", id.name),
                            )
                            .with_label("not a tool")
                            .with_related(declared, "declared here")
                            .with_hint("a model may call only `tool` actions (operations of an `mcp` server)"),
                        );
                    }
                    None => {
                        let tools: Vec<String> = {
                            let mut t: Vec<String> = self
                                .actions
                                .iter()
                                .filter(|a| matches!(a.kind, ActionKind::Tool(_)))
                                .map(|a| a.name.clone())
                                .collect();
                            t.sort();
                            t
                        };
                        let hint = self.unknown_name_hint(
                            &id.name,
                            &tools,
                            "tools",
                            "declare it with `tool NAME(…) -> T { server: S }`",
                        );
                        self.error(
                            Diagnostic::error(
                                Code::UnknownTool,
                                id.span,
                                format!("no `tool` named `{}`", id.name),
                            )
                            .with_label("unknown tool")
                            .with_hint(hint),
                        );
                    }
                }
            }
            if let Some(ir::Action {
                kind: ActionKind::Llm(l),
                ..
            }) = self.actions.get_mut(index)
            {
                l.tools = ids;
            }
        }
    }

    fn action_kind(
        &mut self,
        decl: &ast::ActionDecl,
        params: &[Param],
        outputs: &[Param],
    ) -> ActionKind {
        let kw = decl.kind.keyword();
        match (decl.kind, &decl.body) {
            (ast::ActionKind::Tool, ast::ActionBody::Fields(fields, _)) => {
                self.tool_body(decl, fields, params)
            }
            (ast::ActionKind::Pure, ast::ActionBody::Extern { .. }) => {
                ActionKind::Pure { body: None }
            }
            (ast::ActionKind::Pure, ast::ActionBody::Expr(e)) => {
                if outputs.len() != 1 {
                    self.error(
                        Diagnostic::error(
                            Code::InvalidActionBody,
                            e.span,
                            "an expression body computes exactly one output",
                        )
                        .with_hint("declare one output `-> T`, or make the action `extern`"),
                    );
                    return ActionKind::Pure { body: None };
                }
                let body = self.pure_body(e, params, &outputs[0].ty);
                ActionKind::Pure { body: Some(body) }
            }
            (ast::ActionKind::Effect, ast::ActionBody::Extern { idempotent, .. }) => {
                ActionKind::Effect {
                    idempotent: *idempotent,
                }
            }
            (ast::ActionKind::Llm, ast::ActionBody::Fields(fields, _)) => {
                self.llm_body(decl, fields, params, outputs)
            }
            (ast::ActionKind::Human, ast::ActionBody::Fields(fields, _)) => {
                self.human_body(decl, fields, params, outputs)
            }
            (ast::ActionKind::Planner, ast::ActionBody::Fields(fields, _)) => {
                self.planner_body(decl, fields, params, outputs)
            }
            (_, body) => {
                let span = match body {
                    ast::ActionBody::Missing(s)
                    | ast::ActionBody::Extern { span: s, .. }
                    | ast::ActionBody::Fields(_, s) => *s,
                    ast::ActionBody::Expr(e) => e.span,
                };
                let expected = match decl.kind {
                    ast::ActionKind::Llm => "a `{ prompt: \"…\" }` body",
                    ast::ActionKind::Human => "an `{ ask: \"…\" }` body",
                    ast::ActionKind::Pure => "`= expression` or `extern`",
                    ast::ActionKind::Effect => {
                        "`extern` (its code is registered by the host program)"
                    }
                    ast::ActionKind::Tool => "a `{ server: name }` body naming an `mcp` server",
                    ast::ActionKind::Planner => {
                        "a `{ prompt: \"…\", actions: […], lifelines: […] }` body"
                    }
                };
                self.error(
                    Diagnostic::error(
                        Code::InvalidActionBody,
                        span.to(decl.name.span),
                        format!("a `{kw}` action needs {expected}"),
                    )
                    .with_related(
                        decl.name.span,
                        format!("`{}` is declared here", decl.name.name),
                    ),
                );
                match decl.kind {
                    ast::ActionKind::Pure => ActionKind::Pure { body: None },
                    _ => ActionKind::Effect { idempotent: false },
                }
            }
        }
    }

    /// Registers every `mcp` server declaration.
    pub(crate) fn declare_servers(&mut self, file: &ast::File) {
        for item in &file.items {
            let ast::Item::Mcp(decl) = item else { continue };
            if let Some(prev) = self.servers.get(&decl.name.name) {
                let prev = prev.span;
                self.duplicate(&decl.name.name, decl.name.span, prev, "server");
                continue;
            }
            let mut command = None;
            let mut url = None;
            let mut args = Vec::new();
            let mut env = Vec::new();
            let mut cwd = None;
            let mut contracts = None;
            for f in self.unique_fields(
                &decl.fields,
                &["command", "args", "env", "cwd", "url", "contracts"],
                "mcp",
            ) {
                match f.name.name.as_str() {
                    "command" => command = self.plain_text(f),
                    "url" => url = self.plain_text(f),
                    "cwd" => cwd = self.plain_text(f),
                    "contracts" => contracts = self.plain_text(f),
                    "args" => args = self.text_list(f).unwrap_or_default(),
                    "env" => {
                        for item in self.text_list(f).unwrap_or_default() {
                            match item.split_once('=') {
                                Some((k, v)) if !k.is_empty() => {
                                    env.push((k.to_owned(), v.to_owned()))
                                }
                                _ => self.bad_field(f, "a list of \"NAME=value\" strings"),
                            }
                        }
                    }
                    _ => {}
                }
            }
            let transport = match (command, url) {
                (Some(command), None) => ir::McpTransport::Stdio {
                    command,
                    args,
                    env,
                    cwd,
                },
                (None, Some(url)) => ir::McpTransport::Http { url },
                (c, u) => {
                    let msg = if c.is_some() && u.is_some() {
                        "an `mcp` server has either a `command` or a `url`, not both"
                    } else {
                        "an `mcp` server needs a `command` (stdio) or a `url` (Streamable HTTP)"
                    };
                    self.error(Diagnostic::error(Code::InvalidActionField, decl.name.span, msg).with_hint(
                        "e.g. `mcp files { command: \"npx\" args: [\"-y\", \"@modelcontextprotocol/server-filesystem\", \".\"] }`",
                    ));
                    continue;
                }
            };
            let server = ir::McpServer {
                name: decl.name.name.clone(),
                transport,
                contracts,
                span: decl.name.span,
            };
            self.servers
                .insert(decl.name.name.clone(), std::sync::Arc::new(server));
        }
    }

    fn text_list(&mut self, f: &ast::ActionField) -> Option<Vec<String>> {
        let items = match &f.value.kind {
            ExprKind::List(items) => items,
            _ => {
                self.bad_field(f, "a list of strings");
                return None;
            }
        };
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            match &item.kind {
                ExprKind::Str(s) if s.as_plain().is_some() => {
                    out.push(s.as_plain().unwrap_or_default())
                }
                _ => {
                    self.bad_field(f, "a list of strings");
                    return None;
                }
            }
        }
        Some(out)
    }

    fn tool_body(
        &mut self,
        decl: &ast::ActionDecl,
        fields: &[ast::ActionField],
        params: &[Param],
    ) -> ActionKind {
        let mut server = None;
        let mut remote = decl.name.name.clone();
        let mut idempotent = false;
        for f in self.unique_fields(fields, &["server", "name", "idempotent"], "tool") {
            match f.name.name.as_str() {
                "server" => match &f.value.kind {
                    ExprKind::Name(id) => match self.servers.get(&id.name) {
                        Some(s) => server = Some(s.clone()),
                        None => {
                            let hint = match self
                                .did_you_mean(&id.name, crate::suggest::sorted_keys(&self.servers))
                            {
                                Some(s) => format!("did you mean `{s}`?"),
                                None => "declare it: `mcp NAME { command: \"…\" }`".to_owned(),
                            };
                            self.error(
                                Diagnostic::error(
                                    Code::InvalidActionField,
                                    id.span,
                                    format!("no `mcp` server named `{}`", id.name),
                                )
                                .with_hint(hint),
                            );
                        }
                    },
                    _ => self.bad_field(f, "the name of an `mcp` server"),
                },
                "name" => {
                    if let Some(n) = self.plain_text(f) {
                        remote = n;
                    }
                }
                "idempotent" => match f.value.kind {
                    ExprKind::Bool(b) => idempotent = b,
                    _ => self.bad_field(f, "true or false"),
                },
                _ => {}
            }
        }
        let mut defaults = Vec::with_capacity(params.len());
        let mut seen_default = false;
        for (p, ast_p) in params.iter().zip(&decl.params) {
            let default = ast_p.default.as_ref().and_then(|d| {
                let scope = crate::expr::Scope::Params(&[]);
                let e = self.expr(d, &scope, Some(&p.ty));
                match e.kind {
                    ir::ExprKind::Lit(v) if e.ty.assignable_to(&p.ty) => Some(v),
                    _ => {
                        self.error(
                            Diagnostic::error(
                                Code::InvalidActionField,
                                d.span,
                                format!(
                                    "the default of `{}` must be a literal {}",
                                    p.name,
                                    self.types.display(&p.ty)
                                ),
                            )
                            .with_label("not a literal of the parameter's type"),
                        );
                        None
                    }
                }
            });
            if default.is_none() && seen_default && ast_p.default.is_none() {
                self.error(
                    Diagnostic::error(
                        Code::InvalidActionField,
                        ast_p.name.span,
                        "a required parameter cannot follow an optional one",
                    )
                    .with_hint("put the parameters with defaults last"),
                );
            }
            seen_default |= ast_p.default.is_some();
            defaults.push(default);
        }
        match server {
            Some(server) => ActionKind::Tool(ir::ToolAction {
                server,
                remote,
                defaults,
                idempotent,
            }),
            None => {
                if !fields.iter().any(|f| f.name.name == "server") {
                    self.error(
                        Diagnostic::error(
                            Code::InvalidActionField,
                            decl.name.span,
                            format!("the `tool` `{}` names no server", decl.name.name),
                        )
                        .with_hint("add `server: NAME` naming an `mcp` declaration"),
                    );
                }
                ActionKind::Effect { idempotent: false }
            }
        }
    }

    fn pure_body(&mut self, e: &ast::Expr, params: &[Param], output: &Type) -> ir::Expr {
        let scope = crate::expr::Scope::Params(params);
        let body = self.expr(e, &scope, Some(output));
        self.expect_type(&body, output, "the declared output");
        body
    }

    fn llm_body(
        &mut self,
        decl: &ast::ActionDecl,
        fields: &[ast::ActionField],
        params: &[Param],
        outputs: &[Param],
    ) -> ActionKind {
        let mut system = None;
        let mut prompt = None;
        let mut model = None;
        let mut temperature = None;
        let mut retries = None;
        let mut max_steps = None;
        let mut tools = Vec::new();
        for f in self.unique_fields(
            fields,
            &[
                "system",
                "prompt",
                "model",
                "temperature",
                "retries",
                "tools",
                "max_steps",
            ],
            "llm",
        ) {
            match f.name.name.as_str() {
                "system" => system = self.template(f, params),
                "prompt" => prompt = self.template(f, params),
                "model" => model = self.plain_text(f),
                "temperature" => match f.value.kind {
                    ExprKind::Float(x) if (0.0..=2.0).contains(&x) => temperature = Some(x),
                    ExprKind::Int(n) if (0..=2).contains(&n) => temperature = Some(n as f64),
                    _ => self.bad_field(f, "a number from 0 to 2"),
                },
                "retries" => match f.value.kind {
                    ExprKind::Int(n) if (0..=100).contains(&n) => retries = Some(n as u32),
                    _ => self.bad_field(f, "a whole number from 0 to 100"),
                },
                "max_steps" => match f.value.kind {
                    ExprKind::Int(n) if (1..=100).contains(&n) => max_steps = Some(n as u32),
                    _ => self.bad_field(f, "a whole number from 1 to 100"),
                },
                "tools" => match &f.value.kind {
                    ExprKind::List(items) => {
                        for item in items {
                            match &item.kind {
                                ExprKind::Name(id) => tools.push(id.clone()),
                                _ => self.bad_field(f, "a list of `tool` action names"),
                            }
                        }
                    }
                    _ => self.bad_field(f, "a list of `tool` action names, `[a, b]`"),
                },
                _ => {}
            }
        }
        if outputs.is_empty() {
            self.error(
                Diagnostic::error(
                    Code::InvalidActionBody,
                    decl.name.span,
                    "an `llm` action must declare its output",
                )
                .with_hint("add `-> Text` (raw text) or another type for a structured answer"),
            );
        }
        let prompt = prompt.unwrap_or_else(|| {
            self.error(
                Diagnostic::error(
                    Code::InvalidActionField,
                    decl.name.span,
                    format!("the `llm` action `{}` has no `prompt`", decl.name.name),
                )
                .with_hint("add `prompt: \"…\"` to its body"),
            );
            Template { parts: Vec::new() }
        });
        if !tools.is_empty() {
            self.pending_tools
                .push((self.actions.len(), decl.name.name.clone(), tools));
        }
        ActionKind::Llm(LlmAction {
            system,
            prompt,
            model,
            temperature,
            retries,
            // Resolved once every action is declared (see `resolve_tools`).
            tools: Vec::new(),
            max_steps,
        })
    }

    fn human_body(
        &mut self,
        decl: &ast::ActionDecl,
        fields: &[ast::ActionField],
        params: &[Param],
        outputs: &[Param],
    ) -> ActionKind {
        let mut ask = None;
        let mut prefill = None;
        let mut prefill_span = None;
        let (mut timeout, mut default, mut remind) = (None, None, None);
        let allowed = ["ask", "prefill", "timeout", "default", "remind"];
        for f in self.unique_fields(fields, &allowed, "human") {
            match f.name.name.as_str() {
                "ask" => ask = self.template(f, params),
                "prefill" => {
                    prefill = self.template(f, params);
                    prefill_span = Some(f.name.span);
                }
                "timeout" => timeout = self.duration_field(f).map(|d| (d, f.name.span)),
                "remind" => remind = self.duration_field(f),
                "default" => default = Some(f),
                _ => {}
            }
        }
        let answer = match outputs {
            [] => AnswerKind::Acknowledge,
            [one] => match &one.ty {
                Type::Bool => AnswerKind::Confirm,
                Type::Enum(_) => AnswerKind::Select,
                Type::Text if prefill.is_some() => AnswerKind::Edit,
                _ => AnswerKind::Input,
            },
            _ => {
                self.error(
                    Diagnostic::error(
                        Code::InvalidActionBody,
                        decl.name.span,
                        "a `human` action has at most one output",
                    )
                    .with_hint(
                        "`-> Bool` to confirm, `-> SomeEnum` to select, `-> Text` for free input, no output to acknowledge",
                    ),
                );
                AnswerKind::Input
            }
        };
        if let (Some(span), false) = (prefill_span, answer == AnswerKind::Edit) {
            self.error(
                Diagnostic::error(
                    Code::InvalidActionField,
                    span,
                    "`prefill` only applies to a `Text` answer",
                )
                .with_hint("remove `prefill`, or make the output `-> Text`"),
            );
        }
        let ask = ask.unwrap_or_else(|| {
            self.error(
                Diagnostic::error(
                    Code::InvalidActionField,
                    decl.name.span,
                    format!("the `human` action `{}` has no `ask`", decl.name.name),
                )
                .with_hint("add `ask: \"…\"` to its body: it is what the person sees"),
            );
            Template { parts: Vec::new() }
        });
        let deadline = self.deadline(decl, outputs, answer, timeout, default);
        ActionKind::Human(HumanAction {
            ask,
            prefill,
            answer,
            deadline,
            remind,
        })
    }

    /// A `timeout:`, `remind:` value: a duration in humantime form.
    fn duration_field(&mut self, f: &ast::ActionField) -> Option<std::time::Duration> {
        let text = self.plain_text(f)?;
        match humantime::parse_duration(text.trim()) {
            Ok(d) if !d.is_zero() => Some(d),
            _ => {
                self.bad_field(f, "a duration such as \"30s\", \"4h\" or \"2days\"");
                None
            }
        }
    }

    /// The deadline of a `human` action from its `timeout:` and `default:`
    /// fields: `default` is a literal of the answer's type, and required
    /// with `timeout` unless the person only acknowledges.
    fn deadline(
        &mut self,
        decl: &ast::ActionDecl,
        outputs: &[Param],
        answer: AnswerKind,
        timeout: Option<(std::time::Duration, Span)>,
        default: Option<&ast::ActionField>,
    ) -> Option<Deadline> {
        let default = match (default, outputs.first()) {
            (Some(f), Some(out)) => Some((f, self.default_answer(f, &out.ty)?)),
            (Some(f), None) => {
                self.error(
                    Diagnostic::error(
                        Code::InvalidActionField,
                        f.name.span,
                        "an acknowledgement has no answer to default to",
                    )
                    .with_hint("remove `default`: a timed-out acknowledgement is acknowledged"),
                );
                None
            }
            (None, _) => None,
        };
        match (timeout, default) {
            (Some((after, _)), Some((_, value))) => Some(Deadline {
                after,
                default: value,
            }),
            (Some((after, _)), None) if answer == AnswerKind::Acknowledge => Some(Deadline {
                after,
                default: serde_json::json!({}),
            }),
            (Some((_, span)), None) => {
                self.error(
                    Diagnostic::error(
                        Code::InvalidActionField,
                        span,
                        format!(
                            "`{}` has a `timeout` but no `default`: nothing to answer when it passes",
                            decl.name.name
                        ),
                    )
                    .with_hint("add `default: …`, the answer recorded when nobody answers in time"),
                );
                None
            }
            (None, Some((f, _))) => {
                self.error(
                    Diagnostic::error(
                        Code::InvalidActionField,
                        f.name.span,
                        "`default` without `timeout` is never used",
                    )
                    .with_hint("add `timeout: \"…\"`, or remove `default`"),
                );
                None
            }
            (None, None) => None,
        }
    }

    /// A `default:` answer: a literal of the answer's type, as JSON.
    fn default_answer(&mut self, f: &ast::ActionField, ty: &Type) -> Option<serde_json::Value> {
        use ast::ExprKind as E;
        let value = match (&f.value.kind, ty) {
            (E::Bool(b), Type::Bool) => Some(serde_json::json!(b)),
            (E::Int(n), Type::Int) => Some(serde_json::json!(n)),
            (E::Int(n), Type::Float) => Some(serde_json::json!(*n as f64)),
            (E::Float(x), Type::Float) => Some(serde_json::json!(x)),
            (E::Unary(ast::UnaryOp::Neg, inner), Type::Int) => match inner.kind {
                E::Int(n) => Some(serde_json::json!(-n)),
                _ => None,
            },
            (E::Unary(ast::UnaryOp::Neg, inner), Type::Float) => match inner.kind {
                E::Int(n) => Some(serde_json::json!(-(n as f64))),
                E::Float(x) => Some(serde_json::json!(-x)),
                _ => None,
            },
            (E::Str(_), Type::Text) if f.value.is_literal() => {
                self.plain_text(f).map(serde_json::Value::from)
            }
            (E::Name(id), Type::Enum(e)) => self
                .types
                .enum_def(*e)
                .values
                .contains(&id.name)
                .then(|| serde_json::json!(id.name)),
            (E::Field(base, id), Type::Enum(e)) => match &base.kind {
                E::Name(en)
                    if en.name == self.types.enum_def(*e).name
                        && self.types.enum_def(*e).values.contains(&id.name) =>
                {
                    Some(serde_json::json!(id.name))
                }
                _ => None,
            },
            _ => None,
        };
        if value.is_none() {
            let shown = self.types.display(ty).to_string();
            self.bad_field(f, &format!("a literal {shown}, the answer's type"));
        }
        value
    }

    /// The fields of an action body that `allowed` lists, reporting unknown
    /// and repeated ones.
    pub(crate) fn unique_fields<'f>(
        &mut self,
        fields: &'f [ast::ActionField],
        allowed: &[&str],
        kind: &str,
    ) -> Vec<&'f ast::ActionField> {
        let mut seen: HashMap<&str, Span> = HashMap::new();
        let mut out = Vec::new();
        for f in fields {
            let name = f.name.name.as_str();
            if !allowed.contains(&name) {
                let hint = match self.did_you_mean(name, allowed.iter().map(|s| s.to_string())) {
                    Some(s) => format!("did you mean `{s}`?"),
                    None => format!("an `{kind}` action takes {}", allowed.join(", ")),
                };
                self.error(
                    Diagnostic::error(
                        Code::InvalidActionField,
                        f.name.span,
                        format!("an `{kind}` action has no field `{name}`"),
                    )
                    .with_hint(hint),
                );
                continue;
            }
            if let Some(&prev) = seen.get(name) {
                self.duplicate(name, f.name.span, prev, "field");
                continue;
            }
            seen.insert(name, f.name.span);
            out.push(f);
        }
        out
    }

    pub(crate) fn bad_field(&mut self, f: &ast::ActionField, expected: &str) {
        self.error(
            Diagnostic::error(
                Code::InvalidActionField,
                f.value.span,
                format!("`{}` must be {expected}", f.name.name),
            )
            .with_label(format!("expected {expected}")),
        );
    }

    pub(crate) fn plain_text(&mut self, f: &ast::ActionField) -> Option<String> {
        match &f.value.kind {
            ExprKind::Str(s) if s.as_plain().is_some() => s.as_plain(),
            _ => {
                self.bad_field(f, "a string without placeholders");
                None
            }
        }
    }

    /// A prompt-like string whose `{name}` holes must be parameters.
    pub(crate) fn template(&mut self, f: &ast::ActionField, params: &[Param]) -> Option<Template> {
        let ExprKind::Str(lit) = &f.value.kind else {
            self.bad_field(f, "a string");
            return None;
        };
        let mut parts = Vec::with_capacity(lit.parts.len());
        for part in &lit.parts {
            match part {
                StrPart::Text(t) => parts.push(TemplatePart::Text(t.clone())),
                StrPart::Hole(id) => match params.iter().position(|p| p.name == id.name) {
                    Some(i) => parts.push(TemplatePart::Param(i as u32)),
                    None => {
                        let hint = if params.is_empty() {
                            "this action has no parameters; write `{{` for a literal brace"
                                .to_owned()
                        } else {
                            let names: Vec<_> =
                                params.iter().map(|p| format!("`{}`", p.name)).collect();
                            let names = crate::suggest::list_some(names.iter().map(String::as_str));
                            match self.did_you_mean(&id.name, params.iter().map(|p| p.name.clone()))
                            {
                                Some(s) => {
                                    format!("did you mean `{s}`? the parameters are {names}")
                                }
                                None => format!("the parameters are {names}"),
                            }
                        };
                        self.error(
                            Diagnostic::error(
                                Code::UnknownPlaceholder,
                                id.span,
                                format!("`{{{}}}` names no parameter of the action", id.name),
                            )
                            .with_label("not a parameter")
                            .with_hint(hint),
                        );
                    }
                },
            }
        }
        Some(Template { parts })
    }
}
