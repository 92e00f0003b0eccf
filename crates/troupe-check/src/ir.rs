//! The checked IR: an immutable, fully resolved form of a well-typed program.
//!
//! Names are resolved to dense ids (lifelines, variables, actions, enum values,
//! record fields) and every expression carries its type and source span. The
//! order of `Workflow::lifelines` is the total order ⊏ of the workflow.
//!
//! A workflow is only built into IR when it has no errors, so consumers
//! (projection, runtime) may rely on every invariant the checker enforces:
//! payload arities match, every read variable is bound at its lifeline on every
//! path, guards are `Bool`, no message goes from a lifeline to itself.

use crate::types::{Type, TypeTable};
use crate::value::Value;
use troupe_syntax::Span;

/// Index into `Workflow::lifelines`; smaller ids come first in ⊏.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LifelineId(pub u32);

/// Index into `Workflow::vars` (or, inside a `pure` body, into the action's params).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VarId(pub u32);

/// Index into `Program::actions`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ActionId(pub u32);

/// Pre-order index of a statement in its workflow: stable for a given source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StmtId(pub u32);

/// A checked source file: its types, actions and workflows.
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    pub types: TypeTable,
    pub actions: Vec<Action>,
    pub workflows: Vec<Workflow>,
}

impl Program {
    pub fn action(&self, id: ActionId) -> &Action {
        &self.actions[id.0 as usize]
    }

    pub fn workflow(&self, name: &str) -> Option<&Workflow> {
        self.workflows.iter().find(|w| w.name == name)
    }

    /// The workflows of the loaded file itself (not of the files it imports).
    pub fn own_workflows(&self) -> impl Iterator<Item = (usize, &Workflow)> {
        self.workflows
            .iter()
            .enumerate()
            .filter(|(_, w)| !w.imported)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    pub name: String,
    pub ty: Type,
}

/// A declared action: its signature and what kind of thing performs it.
#[derive(Debug, Clone, PartialEq)]
pub struct Action {
    pub name: String,
    pub params: Vec<Param>,
    /// The outputs; one unnamed output `-> T` is named `result`.
    pub outputs: Vec<Param>,
    pub kind: ActionKind,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ActionKind {
    Llm(LlmAction),
    /// A deterministic function: an expression over the params, or host code.
    Pure {
        body: Option<Expr>,
    },
    /// A side effect performed by host code; `idempotent` when declared
    /// `extern idempotent` (safe to repeat after a crash).
    Effect {
        idempotent: bool,
    },
    Human(HumanAction),
    /// A tool of an MCP server; an effect for durability.
    Tool(ToolAction),
    /// A model writes a workflow over the listed actions and lifelines at
    /// run time, which runs as a nested run (LANGUAGE.md §6).
    Planner(PlannerAction),
    /// The built-in `sleep(duration)`: a durable timer (LANGUAGE.md §7).
    /// Its deadline is recorded when the step first runs; a resumed run
    /// waits only what is left.
    Sleep,
}

/// The name of the built-in durable timer, reserved: no declaration may
/// take it.
pub const SLEEP: &str = "sleep";

impl ActionKind {
    pub fn label(&self) -> &'static str {
        match self {
            ActionKind::Llm(_) => "llm",
            ActionKind::Pure { .. } => "pure",
            ActionKind::Effect { .. } => "effect",
            ActionKind::Human(_) => "human",
            ActionKind::Tool(_) => "tool",
            ActionKind::Planner(_) => "planner",
            ActionKind::Sleep => "sleep",
        }
    }
}

/// `tool name(…) -> T { server: s, name: "remote" }`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolAction {
    pub server: std::sync::Arc<McpServer>,
    /// The tool's name on the server (the action's name unless `name:` says otherwise).
    pub remote: String,
    /// Per parameter, the default of an optional argument; a call may leave
    /// out trailing parameters that have one (they are then not sent).
    pub defaults: Vec<Option<Value>>,
    /// Declared safe to repeat: a call found started but unfinished after a
    /// crash is retried rather than left for a person to settle.
    pub idempotent: bool,
}

/// `mcp name { … }`: how to reach an MCP server.
#[derive(Debug, Clone, PartialEq)]
pub struct McpServer {
    pub name: String,
    pub transport: McpTransport,
    /// `contracts: "file.json"`: an MCP+ sidecar with the tools' contracts,
    /// relative to the workflow file (read by contract verification).
    pub contracts: Option<String>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum McpTransport {
    /// A child process speaking MCP over stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
        cwd: Option<String>,
    },
    /// A Streamable HTTP endpoint.
    Http { url: String },
}

#[derive(Debug, Clone, PartialEq)]
pub struct LlmAction {
    pub system: Option<Template>,
    pub prompt: Template,
    pub model: Option<String>,
    pub temperature: Option<f64>,
    pub retries: Option<u32>,
    /// `tools: [a, b]`: the declared `tool` actions the model may call
    /// (LANGUAGE.md §6). Carried for a runtime with tool calling; a runtime
    /// without it refuses to run a workflow that calls this action.
    pub tools: Vec<ActionId>,
    /// `max_steps: N`: the most model turns of one call (1 to 100).
    pub max_steps: Option<u32>,
}

/// `planner name(…) -> (…) { prompt: …, actions: […], lifelines: […], retries: N }`.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannerAction {
    pub system: Option<Template>,
    pub prompt: Template,
    pub model: Option<String>,
    pub temperature: Option<f64>,
    /// The only actions a plan may call, in the order listed.
    pub actions: Vec<ActionId>,
    /// The only lifelines a plan may use, in the order listed.
    pub lifelines: Vec<String>,
    /// How often a plan that does not check is asked for again (so at most
    /// `retries + 1` plans are asked for).
    pub retries: u32,
}

/// `retries:` of a `planner` when it says nothing.
pub const DEFAULT_PLAN_RETRIES: u32 = 2;

/// How a person answers a human task, decided by the output type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerKind {
    /// `Bool`: yes or no.
    Confirm,
    /// An enum: pick one value.
    Select,
    /// `Text` (or any other type) typed in.
    Input,
    /// `Text` with a `prefill:` to start from.
    Edit,
    /// No outputs: the person acknowledges (the answer is the empty
    /// record `{}`; the action binds nothing).
    Acknowledge,
}

#[derive(Debug, Clone, PartialEq)]
pub struct HumanAction {
    pub ask: Template,
    pub prefill: Option<Template>,
    pub answer: AnswerKind,
    /// `timeout:` with `default:`: when nobody answers in time, the
    /// default is the answer, given by the clock.
    pub deadline: Option<Deadline>,
    /// `remind:`: the task is announced again this often while it waits.
    pub remind: Option<std::time::Duration>,
}

/// A human task's deadline (`timeout: "24h"`, `default: false`): counted
/// from when the task is first asked, kept across restarts.
#[derive(Debug, Clone, PartialEq)]
pub struct Deadline {
    pub after: std::time::Duration,
    /// The answer recorded when the deadline passes, as a person's answer
    /// is written (JSON: `false`, `3`, `"text"`, an enum value's name;
    /// `{}` for an acknowledgement).
    pub default: serde_json::Value,
}

/// A text with `{param}` placeholders.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    pub parts: Vec<TemplatePart>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum TemplatePart {
    Text(String),
    /// Index into the action's params.
    Param(u32),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Lifeline {
    pub name: String,
    pub span: Span,
}

/// A variable of one lifeline. Variables of different lifelines are distinct
/// even when they share a name.
#[derive(Debug, Clone, PartialEq)]
pub struct Var {
    pub name: String,
    pub lifeline: LifelineId,
    pub ty: Type,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Workflow {
    pub name: String,
    pub span: Span,
    /// In ⊏ order.
    pub lifelines: Vec<Lifeline>,
    pub vars: Vec<Var>,
    /// Input variables, in declaration order; bound at their lifeline from the start.
    pub inputs: Vec<VarId>,
    pub body: Block,
    /// What `return` names (empty when the workflow returns nothing).
    pub results: Vec<VarId>,
    /// Number of statements; `StmtId`s are `0..stmt_count`.
    pub stmt_count: u32,
    /// Declared in an imported file rather than the file that was loaded:
    /// a tool choosing "the" workflow of a file picks among the others.
    pub imported: bool,
    /// The `for` loops, desugared into `while`s (in statement order).
    pub for_each: Vec<ForEach>,
    /// The inlined `call`s, outermost first (in statement order).
    pub calls: Vec<CallSite>,
    /// The `par` statements written as `coregion`s (in statement order).
    pub coregions: Vec<Coregion>,
}

/// `coregion { msg A1(…) -> B(…) … }`, checked into a [`StmtKind::Par`] of
/// one message per branch (the receiver takes them in arrival order). The
/// record lets renderings draw a coregion instead of a `par`.
#[derive(Debug, Clone, PartialEq)]
pub struct Coregion {
    pub stmt: StmtId,
    /// The one receiver.
    pub receiver: LifelineId,
    pub span: Span,
}

/// `for var in list @ owner { P }`, which the checker desugars into the owned
/// `while` machinery (LANGUAGE.md §6: the same decision broadcast):
///
/// ```text
/// act owner: #var = 0                        // `init`
/// while #var < len(list) @ owner {           // `stmt`
///   act owner: var = list[#var]              // `steps[0]`
///   act owner: #var = #var + 1               // `steps[1]`
///   P
/// }
/// ```
///
/// `#var` (`index`) is a hidden variable no source can name; `list` cannot be
/// bound again inside the loop, so the loop visits the list as it was when
/// the loop started. Renderings use this record to draw a `for` instead.
#[derive(Debug, Clone, PartialEq)]
pub struct ForEach {
    pub stmt: StmtId,
    pub init: StmtId,
    pub steps: [StmtId; 2],
    pub owner: LifelineId,
    pub var: VarId,
    pub list: VarId,
    pub index: VarId,
    pub span: Span,
}

/// `call callee[L = A, …](args) -> (y @ A, …)`, inlined: the statements
/// `first..end` (pre-order ids) are the callee's body with its lifelines
/// renamed and its variables fresh, preceded by one `act` per input (binding
/// the callee's input from the caller's expression at the renamed lifeline)
/// and followed by one `act` per result (binding the caller's variable).
/// They are consecutive statements of one block.
#[derive(Debug, Clone, PartialEq)]
pub struct CallSite {
    pub callee: String,
    pub first: StmtId,
    pub end: StmtId,
    /// `(callee lifeline name, caller lifeline)`, in the callee's ⊏ order.
    pub map: Vec<(String, LifelineId)>,
    /// How many calls enclose this one (0: written in this workflow).
    pub depth: u32,
    pub span: Span,
}

impl CallSite {
    pub fn contains(&self, stmt: StmtId) -> bool {
        self.first <= stmt && stmt < self.end
    }

    /// `call callee[L = A, …]`, for renderings.
    pub fn label(&self, workflow: &Workflow) -> String {
        let map: Vec<String> = self
            .map
            .iter()
            .map(|(l, a)| {
                let a = &workflow.lifeline(*a).name;
                if l == a {
                    l.clone()
                } else {
                    format!("{l} = {a}")
                }
            })
            .collect();
        format!("call {}[{}]", self.callee, map.join(", "))
    }
}

impl Workflow {
    pub fn var(&self, id: VarId) -> &Var {
        &self.vars[id.0 as usize]
    }

    pub fn lifeline(&self, id: LifelineId) -> &Lifeline {
        &self.lifelines[id.0 as usize]
    }

    pub fn lifeline_ids(&self) -> impl Iterator<Item = LifelineId> + '_ {
        (0..self.lifelines.len() as u32).map(LifelineId)
    }

    /// The `for` loop that statement `stmt` (a `while`) is the desugaring of.
    pub fn for_each(&self, stmt: StmtId) -> Option<&ForEach> {
        self.for_each
            .binary_search_by_key(&stmt, |f| f.stmt)
            .ok()
            .map(|i| &self.for_each[i])
    }

    /// Whether `stmt` is one of the bookkeeping `act`s of a `for` (the index's
    /// start and step, the loop variable's binding).
    pub fn is_for_step(&self, stmt: StmtId) -> bool {
        let near = |d: i64| {
            u32::try_from(i64::from(stmt.0) + d)
                .ok()
                .and_then(|s| self.for_each(StmtId(s)))
        };
        near(1).is_some_and(|f| f.init == stmt)
            || near(-1).is_some_and(|f| f.steps[0] == stmt)
            || near(-2).is_some_and(|f| f.steps[1] == stmt)
    }

    /// Every statement, indexed by its id (`StmtId`s are `0..stmt_count`);
    /// `None` for an id no statement has.
    pub fn stmts_by_id(&self) -> Vec<Option<&Stmt>> {
        fn walk<'a>(b: &'a Block, out: &mut Vec<Option<&'a Stmt>>) {
            for s in &b.stmts {
                if let Some(slot) = out.get_mut(s.id.0 as usize) {
                    *slot = Some(s);
                }
                match &s.kind {
                    StmtKind::If {
                        then: x,
                        otherwise: y,
                        ..
                    }
                    | StmtKind::While {
                        body: x, exit: y, ..
                    } => {
                        walk(x, out);
                        walk(y, out);
                    }
                    StmtKind::Par { branches } => branches.iter().for_each(|b| walk(b, out)),
                    StmtKind::Msg { .. } | StmtKind::Act { .. } => {}
                }
            }
        }
        let mut out = vec![None; self.stmt_count as usize];
        walk(&self.body, &mut out);
        out
    }

    /// The call written in this workflow (not inside an inlined callee)
    /// whose inlined statements include `stmt`.
    pub fn outer_call(&self, stmt: StmtId) -> Option<&CallSite> {
        self.calls.iter().find(|c| c.depth == 0 && c.contains(stmt))
    }

    /// The `coregion` that `par` statement `stmt` was written as.
    pub fn coregion(&self, stmt: StmtId) -> Option<&Coregion> {
        self.coregions
            .binary_search_by_key(&stmt, |c| c.stmt)
            .ok()
            .map(|i| &self.coregions[i])
    }

    /// The outermost call whose inlined statements start at `stmt`.
    pub fn call_at(&self, stmt: StmtId) -> Option<&CallSite> {
        self.calls.iter().find(|c| c.depth == 0 && c.first == stmt)
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Block {
    pub stmts: Vec<Stmt>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Stmt {
    pub id: StmtId,
    pub span: Span,
    pub kind: StmtKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum StmtKind {
    /// `msg from(items.send…) -> to(items.recv…)`; `from != to`.
    Msg {
        from: LifelineId,
        to: LifelineId,
        items: Vec<MsgItem>,
    },
    /// `act at: outputs = call`; an output `None` discards (`_`).
    Act {
        at: LifelineId,
        outputs: Vec<Option<VarId>>,
        call: Call,
    },
    /// `if guard @ owner { then } else { otherwise }`.
    If {
        owner: LifelineId,
        guard: Expr,
        then: Block,
        otherwise: Block,
    },
    /// `while guard @ owner { body } exit { exit }`.
    While {
        owner: LifelineId,
        guard: Expr,
        body: Block,
        exit: Block,
    },
    /// `par { P } and { Q } …` (two or more branches; a `coregion` is a
    /// `par` of one message per branch, see [`Workflow::coregions`]): the
    /// branches run concurrently, each with its own channels; a lifeline in
    /// several branches runs its parts concurrently and leaves the region
    /// when all of them have ended. The checker guarantees that no variable
    /// written in one branch is read or written in another.
    Par { branches: Vec<Block> },
}

#[derive(Debug, Clone, PartialEq)]
pub struct MsgItem {
    /// Evaluated at the sender; reads only the sender's variables.
    pub send: Expr,
    pub recv: Recv,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Recv {
    /// Binds a variable of the receiver.
    Bind(VarId),
    /// `_`: the item is received and dropped.
    Discard,
    /// A literal that the checker proved equal to the sender's literal.
    Literal(Value),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Call {
    /// A declared action; `args` read only the acting lifeline's variables.
    Action { action: ActionId, args: Vec<Expr> },
    /// An anonymous pure computation `y = expr`.
    Expr(Expr),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub ty: Type,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ExprKind {
    Lit(Value),
    Var(VarId),
    /// Field of a record (by index) .
    Field(Box<Expr>, u32),
    /// Field of a `Json` object (by name); `null` when absent.
    JsonField(Box<Expr>, String),
    Unary(UnaryOp, Box<Expr>),
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    List(Vec<Expr>),
    /// A string with `{x}` holes: the parts are concatenated as text.
    Format(Vec<FormatPart>),
    /// The length of a list (`Int`); only made by the desugaring of `for`.
    Len(Box<Expr>),
    /// The element of a list at an index (`list[i]`); only made by the
    /// desugaring of `for`, where the guard keeps the index in range.
    Index(Box<Expr>, Box<Expr>),
    /// `seen(B).x`: B's variable `x` at the latest event of B causally
    /// visible where the expression is evaluated (LANGUAGE.md §7). Only in
    /// the atoms of a causal guard; unbound (so the atom is false) while no
    /// such event binds `x`.
    Seen(LifelineId, VarId),
    /// A guard of the causal past logic, evaluated by the owner's monitor
    /// (`troupe_msc::cpl`); the plain evaluator cannot evaluate it.
    Cpl(Box<Formula>),
}

impl Expr {
    /// Visits `self` and every expression inside it (the atoms of a causal
    /// guard too), with an explicit stack: deep expressions cannot
    /// overflow it.
    pub fn visit(&self, f: &mut dyn FnMut(&Expr)) {
        let mut stack = vec![self];
        let mut formulas: Vec<&Formula> = Vec::new();
        loop {
            while let Some(e) = stack.pop() {
                f(e);
                match &e.kind {
                    ExprKind::Lit(_) | ExprKind::Var(_) | ExprKind::Seen(..) => {}
                    ExprKind::Field(x, _)
                    | ExprKind::JsonField(x, _)
                    | ExprKind::Unary(_, x)
                    | ExprKind::Len(x) => stack.push(x),
                    ExprKind::Binary(_, a, b) | ExprKind::Index(a, b) => {
                        stack.extend([&**a, &**b]);
                    }
                    ExprKind::List(xs) => stack.extend(xs.iter()),
                    ExprKind::Format(parts) => stack.extend(parts.iter().filter_map(|p| match p {
                        FormatPart::Expr(x) => Some(x),
                        FormatPart::Text(_) => None,
                    })),
                    ExprKind::Cpl(formula) => formulas.push(formula),
                }
            }
            let Some(formula) = formulas.pop() else {
                return;
            };
            if let Formula::Atom(e) = formula {
                stack.push(e);
            }
            formulas.extend(formula.children());
        }
    }
}

/// A formula of the causal past logic (LANGUAGE.md §7), evaluated at an
/// event of a lifeline: the guard's owner for the whole guard, B inside
/// `at(B, …)`, every lifeline inside `once(…)`.
#[derive(Debug, Clone, PartialEq)]
pub enum Formula {
    /// A Bool expression over the variables of the lifeline where it is
    /// evaluated (and `seen` terms); false when it reads an unbound one.
    Atom(Expr),
    /// The current event is this lifeline's.
    On(LifelineId),
    Not(Box<Formula>),
    And(Box<Formula>, Box<Formula>),
    Or(Box<Formula>, Box<Formula>),
    /// The lifeline's previous event satisfied it (false at its first).
    Prev(Box<Formula>),
    /// `since(φ, ψ)`: ψ holds now, or held at an earlier event of this
    /// lifeline and φ has held at every one of its events after it.
    Since(Box<Formula>, Box<Formula>),
    /// Some event in the strict causal past, on any lifeline, satisfied it.
    Once(Box<Formula>),
    /// The latest event of the lifeline causally visible (the current one
    /// when it is that lifeline's) satisfied it; false when there is none.
    At(LifelineId, Box<Formula>),
}

impl Formula {
    /// The direct subformulas, in source order.
    pub fn children(&self) -> Vec<&Formula> {
        match self {
            Formula::Atom(_) | Formula::On(_) => vec![],
            Formula::Not(a) | Formula::Prev(a) | Formula::Once(a) | Formula::At(_, a) => vec![a],
            Formula::And(a, b) | Formula::Or(a, b) | Formula::Since(a, b) => vec![a, b],
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum FormatPart {
    Text(String),
    Expr(Expr),
}

/// The operators are those of the syntax: the IR adds nothing to them.
pub use troupe_syntax::ast::{BinaryOp, UnaryOp};
