//! The semantic interface of a checked workflow, as data: its lifelines,
//! inputs and results, every statement with the constructs around it, and
//! the signatures of the actions it uses. Two versions of a workflow are
//! compared through their snapshots (`diff`), so the snapshot holds what a
//! run can observe and nothing about how the text was written: no spans,
//! no comments or layout, no file paths, no fingerprints that depend on
//! where the file lives. Everything is in a fixed order and serializes to
//! byte-identical JSON on every machine.
//!
//! Placement is not part of a snapshot: the language has no placement
//! syntax; lifelines are pinned to worker labels only by `troupe.toml`'s
//! `[placement]` and `--place`, which are settings of a run, not of the
//! workflow.

mod diff;

pub use diff::{Change, Location, diff};

use crate::{Compiled, HostError};
use serde::{Deserialize, Serialize};
use troupe_check::ir::{
    Action, ActionId, ActionKind, Block, Call, LifelineId, Param as IrParam, Program, Stmt,
    StmtKind, Template, TemplatePart, Var, VarId, Workflow,
};
use troupe_project::canon::Names;

/// The version of the snapshot format; a reader refuses others.
pub const FORMAT: u32 = 1;

/// The semantic interface of one workflow. Field order is the JSON key
/// order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// [`FORMAT`].
    pub format: u32,
    pub workflow: String,
    /// In declared order (the total order ⊏ of the workflow).
    pub lifelines: Vec<String>,
    /// In declared order.
    pub inputs: Vec<Slot>,
    /// In the order `return` names them.
    pub results: Vec<Slot>,
    /// Every statement in pre-order, the bookkeeping of `for` loops left
    /// out (as the canonical printer leaves it out).
    pub statements: Vec<Statement>,
    /// The actions the workflow uses (called, or offered to a model or a
    /// planner), by name.
    pub actions: Vec<ActionSig>,
    /// The wording of those actions (prompts, system prompts, a person's
    /// question), by action and field: kept apart from the signatures so a
    /// comparison can leave it out.
    pub prompts: Vec<Prompt>,
}

/// An input or a result: its name, type and the lifeline that holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slot {
    pub name: String,
    /// The type as the source writes it (`[Text]`, `Verdict`).
    #[serde(rename = "type")]
    pub ty: String,
    pub at: String,
}

impl Slot {
    /// `name: Type @ Lifeline`.
    pub fn text(&self) -> String {
        format!("{}: {} @ {}", self.name, self.ty, self.at)
    }
}

/// One statement of the workflow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Statement {
    /// The enclosing constructs, outermost first.
    pub context: Vec<Frame>,
    /// `msg`, `act`, `if`, `while`, `for`, `par` or `coregion`.
    pub kind: String,
    /// The lifelines it names: the sender and receiver of a `msg`, the
    /// actor of an `act`, the owner of a decision; none for `par`.
    pub lifelines: Vec<String>,
    /// The one-line head, as the canonical printer writes it
    /// (`msg A(x) -> B(y)`, `act A: y = f(x)`, `if g @ Owner`, `par`).
    pub head: String,
}

/// One enclosing construct and the part of it a statement sits in.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Frame {
    /// The construct's head (`if ok @ Judge`, `par`, `call reviewed[…]`).
    pub construct: String,
    /// `then`, `else`, `body`, `exit`, `branch N`, or `inlined` (the
    /// statements a `call` was inlined into).
    pub part: String,
}

impl Frame {
    /// `if ok @ Judge → then`.
    pub fn text(&self) -> String {
        format!("{} → {}", self.construct, self.part)
    }
}

/// A name and a type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Param {
    pub name: String,
    #[serde(rename = "type")]
    pub ty: String,
}

/// An action's signature: what performs it and what it takes and gives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionSig {
    pub name: String,
    #[serde(flatten)]
    pub kind: ActionSpec,
    pub params: Vec<Param>,
    pub outputs: Vec<Param>,
}

/// What performs an action, with the settings that change what it does
/// (prompts excepted: they are [`Snapshot::prompts`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum ActionSpec {
    Llm {
        model: Option<String>,
        temperature: Option<f64>,
        retries: Option<u32>,
        /// The tools the model may call, in the order listed.
        tools: Vec<String>,
        max_steps: Option<u32>,
    },
    /// A deterministic function: its body, or `None` when host code
    /// computes it.
    Pure {
        body: Option<String>,
    },
    Effect {
        idempotent: bool,
    },
    Human {
        /// `timeout:`, as a duration text (`24h`).
        timeout: Option<String>,
        /// `default:`, as JSON text.
        default: Option<String>,
        remind: Option<String>,
    },
    Tool {
        server: String,
        /// The tool's name on the server.
        remote: String,
        idempotent: bool,
        /// The defaults of optional arguments, by parameter (source text).
        defaults: Vec<Option<String>>,
        /// The server's contract sidecar as the source names it.
        contracts: Option<String>,
    },
    Planner {
        model: Option<String>,
        temperature: Option<f64>,
        actions: Vec<String>,
        lifelines: Vec<String>,
        retries: u32,
    },
    Sleep,
}

impl ActionSpec {
    pub fn label(&self) -> &'static str {
        match self {
            ActionSpec::Llm { .. } => "llm",
            ActionSpec::Pure { .. } => "pure",
            ActionSpec::Effect { .. } => "effect",
            ActionSpec::Human { .. } => "human",
            ActionSpec::Tool { .. } => "tool",
            ActionSpec::Planner { .. } => "planner",
            ActionSpec::Sleep => "sleep",
        }
    }
}

impl ActionSig {
    /// One line: `llm review(text: Text) -> (verdict: Verdict, notes: Text)`
    /// followed by the settings that are set.
    pub fn text(&self) -> String {
        let list = |ps: &[Param]| {
            ps.iter()
                .map(|p| format!("{}: {}", p.name, p.ty))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut out = format!(
            "{} {}({})",
            self.kind.label(),
            self.name,
            list(&self.params)
        );
        if !self.outputs.is_empty() {
            out.push_str(&format!(" -> ({})", list(&self.outputs)));
        }
        let mut settings = Vec::new();
        let opt = |settings: &mut Vec<String>, key: &str, v: Option<String>| {
            if let Some(v) = v {
                settings.push(format!("{key}: {v}"));
            }
        };
        match &self.kind {
            ActionSpec::Llm {
                model,
                temperature,
                retries,
                tools,
                max_steps,
            } => {
                opt(
                    &mut settings,
                    "model",
                    model.as_ref().map(|m| format!("{m:?}")),
                );
                opt(
                    &mut settings,
                    "temperature",
                    temperature.map(|t| t.to_string()),
                );
                opt(&mut settings, "retries", retries.map(|r| r.to_string()));
                if !tools.is_empty() {
                    settings.push(format!("tools: [{}]", tools.join(", ")));
                }
                opt(&mut settings, "max_steps", max_steps.map(|m| m.to_string()));
            }
            ActionSpec::Pure { body } => {
                settings.push(match body {
                    Some(b) => format!("= {b}"),
                    None => "extern".to_owned(),
                });
            }
            ActionSpec::Effect { idempotent } => {
                if *idempotent {
                    settings.push("idempotent".to_owned());
                }
            }
            ActionSpec::Human {
                timeout,
                default,
                remind,
            } => {
                opt(&mut settings, "timeout", timeout.clone());
                opt(&mut settings, "default", default.clone());
                opt(&mut settings, "remind", remind.clone());
            }
            ActionSpec::Tool {
                server,
                remote,
                idempotent,
                defaults,
                contracts,
            } => {
                settings.push(format!("server: {server}"));
                if remote != &self.name {
                    settings.push(format!("name: {remote:?}"));
                }
                if *idempotent {
                    settings.push("idempotent".to_owned());
                }
                for (p, d) in self.params.iter().zip(defaults) {
                    if let Some(d) = d {
                        settings.push(format!("{} = {d}", p.name));
                    }
                }
                opt(
                    &mut settings,
                    "contracts",
                    contracts.as_ref().map(|c| format!("{c:?}")),
                );
            }
            ActionSpec::Planner {
                model,
                temperature,
                actions,
                lifelines,
                retries,
            } => {
                opt(
                    &mut settings,
                    "model",
                    model.as_ref().map(|m| format!("{m:?}")),
                );
                opt(
                    &mut settings,
                    "temperature",
                    temperature.map(|t| t.to_string()),
                );
                settings.push(format!("actions: [{}]", actions.join(", ")));
                settings.push(format!("lifelines: [{}]", lifelines.join(", ")));
                settings.push(format!("retries: {retries}"));
            }
            ActionSpec::Sleep => {}
        }
        if !settings.is_empty() {
            out.push_str(&format!(" {{ {} }}", settings.join(", ")));
        }
        out
    }
}

/// One piece of an action's wording.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prompt {
    pub action: String,
    /// `prompt`, `system`, `ask` or `prefill`.
    pub field: String,
    /// The template, its placeholders written `{param}`.
    pub text: String,
}

impl Snapshot {
    /// The snapshot of a compiled workflow.
    pub fn of(compiled: &Compiled) -> Snapshot {
        Snapshot::build(&compiled.program, compiled.workflow())
    }

    /// The snapshot of `workflow`, one of `program`'s.
    pub fn build(program: &Program, workflow: &Workflow) -> Snapshot {
        let names = Names::new(program, workflow);
        let slot = |v: VarId| {
            let var = workflow.var(v);
            Slot {
                name: var.name.clone(),
                ty: program.types.display(&var.ty).to_string(),
                at: workflow.lifeline(var.lifeline).name.clone(),
            }
        };
        let mut walk = Walk {
            names,
            workflow,
            statements: Vec::new(),
            used: Vec::new(),
        };
        walk.block(&workflow.body, &mut Vec::new(), None);
        let mut used = walk.used;
        // What a model or a planner may call is used as well.
        let mut i = 0;
        while i < used.len() {
            let more: Vec<ActionId> = match &program.action(used[i]).kind {
                ActionKind::Llm(l) => l.tools.clone(),
                ActionKind::Planner(p) => p.actions.clone(),
                _ => Vec::new(),
            };
            for a in more {
                if !used.contains(&a) {
                    used.push(a);
                }
            }
            i += 1;
        }
        let mut actions: Vec<&Action> = used.iter().map(|a| program.action(*a)).collect();
        actions.sort_by(|a, b| a.name.cmp(&b.name));
        let mut prompts: Vec<Prompt> = actions.iter().flat_map(|a| prompts_of(a)).collect();
        prompts.sort_by(|a, b| (&a.action, &a.field).cmp(&(&b.action, &b.field)));
        Snapshot {
            format: FORMAT,
            workflow: workflow.name.clone(),
            lifelines: workflow.lifelines.iter().map(|l| l.name.clone()).collect(),
            inputs: workflow.inputs.iter().map(|v| slot(*v)).collect(),
            results: workflow.results.iter().map(|v| slot(*v)).collect(),
            statements: walk.statements,
            actions: actions.iter().map(|a| signature(program, a)).collect(),
            prompts,
        }
    }

    /// Pretty JSON, keys in the fields' order, ending in a newline.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }

    /// Whether `text` is meant as a snapshot: a JSON object with a
    /// `format` field (so a reader can tell it from a `.troupe` file).
    pub fn looks_like(text: &str) -> bool {
        serde_json::from_str::<serde_json::Value>(text)
            .is_ok_and(|v| v.get("format").is_some_and(serde_json::Value::is_u64))
    }

    /// Reads a snapshot written by [`Snapshot::to_json`]; `file` names it
    /// in errors.
    pub fn from_json(text: &str, file: &str) -> Result<Snapshot, HostError> {
        let value: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| HostError::Snapshot(format!("{file} is not JSON: {e}")))?;
        match value.get("format").and_then(serde_json::Value::as_u64) {
            Some(f) if f == u64::from(FORMAT) => {}
            Some(f) => {
                return Err(HostError::Snapshot(format!(
                    "{file} is a snapshot of format {f}; this troupe reads format {FORMAT}"
                )));
            }
            None => {
                return Err(HostError::Snapshot(format!(
                    "{file} has no `format` field: not a snapshot"
                )));
            }
        }
        serde_json::from_value(value)
            .map_err(|e| HostError::Snapshot(format!("{file} is not a valid snapshot: {e}")))
    }
}

/// The pre-order walk over the statements.
struct Walk<'a> {
    names: Names<'a>,
    workflow: &'a Workflow,
    statements: Vec<Statement>,
    /// The actions called, in first-call order.
    used: Vec<ActionId>,
}

impl Walk<'_> {
    /// `call` is the first statement of the inlined call whose frame is
    /// already in `context`, if any.
    fn block(&mut self, block: &Block, context: &mut Vec<Frame>, call: Option<u32>) {
        for stmt in &block.stmts {
            if !self.workflow.for_each.is_empty() && self.workflow.is_for_step(stmt.id) {
                continue;
            }
            // A `call` written in this workflow is inlined as consecutive
            // statements of one block: they sit in a frame of their own,
            // so the callee's statements read as the call's.
            let site = self.workflow.outer_call(stmt.id);
            let opened = match site {
                Some(c) if call != Some(c.first.0) => {
                    context.push(Frame {
                        construct: c.label(self.workflow),
                        part: "inlined".to_owned(),
                    });
                    true
                }
                _ => false,
            };
            self.stmt(stmt, context, site.map(|c| c.first.0));
            if opened {
                context.pop();
            }
        }
    }

    fn stmt(&mut self, stmt: &Stmt, context: &mut Vec<Frame>, call: Option<u32>) {
        let head = self.names.stmt_head(stmt);
        let kind = match &stmt.kind {
            StmtKind::Msg { .. } => "msg",
            StmtKind::Act { .. } => "act",
            StmtKind::If { .. } => "if",
            StmtKind::While { .. } if self.workflow.for_each(stmt.id).is_some() => "for",
            StmtKind::While { .. } => "while",
            StmtKind::Par { .. } if self.workflow.coregion(stmt.id).is_some() => "coregion",
            StmtKind::Par { .. } => "par",
        };
        let lifelines = match &stmt.kind {
            StmtKind::Msg { from, to, .. } => vec![*from, *to],
            StmtKind::Act { at, .. } => vec![*at],
            StmtKind::If { owner, .. } | StmtKind::While { owner, .. } => vec![*owner],
            StmtKind::Par { .. } => Vec::new(),
        };
        self.statements.push(Statement {
            context: context.clone(),
            kind: kind.to_owned(),
            lifelines: lifelines
                .into_iter()
                .map(|l| self.names.lifeline(l).into_owned())
                .collect(),
            head: head.clone(),
        });
        let parts: Vec<(String, &Block)> = match &stmt.kind {
            StmtKind::Msg { .. } => Vec::new(),
            StmtKind::Act { call, .. } => {
                if let Call::Action { action, .. } = call
                    && !self.used.contains(action)
                {
                    self.used.push(*action);
                }
                Vec::new()
            }
            StmtKind::If {
                then, otherwise, ..
            } => vec![("then".into(), then), ("else".into(), otherwise)],
            StmtKind::While { body, exit, .. } => {
                vec![("body".into(), body), ("exit".into(), exit)]
            }
            StmtKind::Par { branches } => branches
                .iter()
                .enumerate()
                .map(|(i, b)| (format!("branch {}", i + 1), b))
                .collect(),
        };
        for (part, block) in parts {
            context.push(Frame {
                construct: head.clone(),
                part,
            });
            self.block(block, context, call);
            context.pop();
        }
    }
}

fn params(program: &Program, ps: &[IrParam]) -> Vec<Param> {
    ps.iter()
        .map(|p| Param {
            name: p.name.clone(),
            ty: program.types.display(&p.ty).to_string(),
        })
        .collect()
}

fn duration(d: std::time::Duration) -> String {
    humantime::format_duration(d).to_string()
}

fn signature(program: &Program, action: &Action) -> ActionSig {
    let name_of = |a: &ActionId| program.action(*a).name.clone();
    let kind = match &action.kind {
        ActionKind::Llm(l) => ActionSpec::Llm {
            model: l.model.clone(),
            temperature: l.temperature,
            retries: l.retries,
            tools: l.tools.iter().map(name_of).collect(),
            max_steps: l.max_steps,
        },
        ActionKind::Pure { body } => ActionSpec::Pure {
            body: body.as_ref().map(|b| {
                // A body reads the action's parameters: a workflow whose
                // variables are the parameters prints it with their names.
                let scope = params_scope(action);
                Names::new(program, &scope).expr(b)
            }),
        },
        ActionKind::Effect { idempotent } => ActionSpec::Effect {
            idempotent: *idempotent,
        },
        ActionKind::Human(h) => ActionSpec::Human {
            timeout: h.deadline.as_ref().map(|d| duration(d.after)),
            default: h.deadline.as_ref().map(|d| d.default.to_string()),
            remind: h.remind.map(duration),
        },
        ActionKind::Tool(t) => {
            let scope = params_scope(action);
            let names = Names::new(program, &scope);
            ActionSpec::Tool {
                server: t.server.name.clone(),
                remote: t.remote.clone(),
                idempotent: t.idempotent,
                defaults: t
                    .defaults
                    .iter()
                    .map(|d| d.as_ref().map(|v| names.value(v)))
                    .collect(),
                contracts: t.server.contracts.clone(),
            }
        }
        ActionKind::Planner(p) => ActionSpec::Planner {
            model: p.model.clone(),
            temperature: p.temperature,
            actions: p.actions.iter().map(name_of).collect(),
            lifelines: p.lifelines.clone(),
            retries: p.retries,
        },
        ActionKind::Sleep => ActionSpec::Sleep,
    };
    ActionSig {
        name: action.name.clone(),
        kind,
        params: params(program, &action.params),
        outputs: params(program, &action.outputs),
    }
}

/// A workflow with no statements whose variables are `action`'s
/// parameters, for printing expressions over them.
fn params_scope(action: &Action) -> Workflow {
    Workflow {
        name: action.name.clone(),
        span: action.span,
        lifelines: Vec::new(),
        vars: action
            .params
            .iter()
            .map(|p| Var {
                name: p.name.clone(),
                lifeline: LifelineId(0),
                ty: p.ty.clone(),
            })
            .collect(),
        inputs: Vec::new(),
        body: Block::default(),
        results: Vec::new(),
        stmt_count: 0,
        imported: false,
        for_each: Vec::new(),
        calls: Vec::new(),
        coregions: Vec::new(),
    }
}

fn prompts_of(action: &Action) -> Vec<Prompt> {
    let text = |t: &Template| template(action, t);
    let fields: Vec<(&str, String)> = match &action.kind {
        ActionKind::Llm(l) => {
            let mut f = vec![("prompt", text(&l.prompt))];
            if let Some(s) = &l.system {
                f.push(("system", text(s)));
            }
            f
        }
        ActionKind::Planner(p) => {
            let mut f = vec![("prompt", text(&p.prompt))];
            if let Some(s) = &p.system {
                f.push(("system", text(s)));
            }
            f
        }
        ActionKind::Human(h) => {
            let mut f = vec![("ask", text(&h.ask))];
            if let Some(p) = &h.prefill {
                f.push(("prefill", text(p)));
            }
            f
        }
        _ => Vec::new(),
    };
    fields
        .into_iter()
        .map(|(field, text)| Prompt {
            action: action.name.clone(),
            field: field.to_owned(),
            text,
        })
        .collect()
}

/// A template as written: literal braces doubled, placeholders `{param}`.
fn template(action: &Action, t: &Template) -> String {
    let mut out = String::new();
    for part in &t.parts {
        match part {
            TemplatePart::Text(s) => {
                for c in s.chars() {
                    match c {
                        '{' => out.push_str("{{"),
                        '}' => out.push_str("}}"),
                        c => out.push(c),
                    }
                }
            }
            TemplatePart::Param(i) => {
                let name = action
                    .params
                    .get(*i as usize)
                    .map_or("?", |p| p.name.as_str());
                out.push('{');
                out.push_str(name);
                out.push('}');
            }
        }
    }
    out
}
