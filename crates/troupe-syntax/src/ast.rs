//! The abstract syntax tree. It mirrors the surface syntax closely, keeps a
//! span on every node, and has `Error` nodes where the parser recovered.

use crate::Span;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct File {
    pub items: Vec<Item>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Mcp(McpDecl),
    Enum(EnumDecl),
    Record(RecordDecl),
    Action(ActionDecl),
    Workflow(WorkflowDecl),
    Import(ImportDecl),
}

/// `import "path.troupe"`: the declarations and workflows of another file,
/// relative to the importing one.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportDecl {
    /// The path as written (after escapes); `None` when the string had holes.
    pub path: Option<String>,
    /// The string literal.
    pub path_span: Span,
    pub span: Span,
}

/// `mcp name { command: "…" args: […] }` or `mcp name { url: "…" }`: an MCP
/// server that `tool` actions are bound to.
#[derive(Debug, Clone, PartialEq)]
pub struct McpDecl {
    pub name: Ident,
    pub fields: Vec<ActionField>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct EnumDecl {
    pub name: Ident,
    pub values: Vec<Ident>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RecordDecl {
    pub name: Ident,
    pub fields: Vec<Param>,
    pub span: Span,
}

/// `name: Type`, in parameter lists, outputs and record fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    pub name: Ident,
    pub ty: TypeExpr,
    /// `name: T = literal`: an optional argument (tool parameters only).
    pub default: Option<Expr>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum TypeExpr {
    Named(Ident),
    List(Box<TypeExpr>, Span),
    Error(Span),
}

impl TypeExpr {
    pub fn span(&self) -> Span {
        match self {
            TypeExpr::Named(id) => id.span,
            TypeExpr::List(_, span) | TypeExpr::Error(span) => *span,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ActionKind {
    Llm,
    Pure,
    Effect,
    Human,
    Tool,
    /// `planner`: a model writes a workflow at run time (LANGUAGE.md §6).
    Planner,
}

impl ActionKind {
    pub fn keyword(self) -> &'static str {
        match self {
            ActionKind::Llm => "llm",
            ActionKind::Pure => "pure",
            ActionKind::Effect => "effect",
            ActionKind::Human => "human",
            ActionKind::Tool => "tool",
            ActionKind::Planner => "planner",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ActionDecl {
    pub kind: ActionKind,
    pub name: Ident,
    pub params: Vec<Param>,
    pub outputs: Outputs,
    pub body: ActionBody,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Outputs {
    /// No `->`: the action has no outputs.
    None,
    /// `-> T`
    Single(TypeExpr),
    /// `-> (a: T, b: U)`
    Named(Vec<Param>),
}

#[derive(Debug, Clone, PartialEq)]
pub enum ActionBody {
    /// Nothing after the signature.
    Missing(Span),
    /// `extern`, optionally followed by `idempotent` (effects: safe to repeat).
    Extern { span: Span, idempotent: bool },
    /// `= expr`
    Expr(Expr),
    /// `{ name: value … }`
    Fields(Vec<ActionField>, Span),
}

#[derive(Debug, Clone, PartialEq)]
pub struct ActionField {
    pub name: Ident,
    pub value: Expr,
}

#[derive(Debug, Clone, PartialEq)]
pub struct WorkflowDecl {
    pub name: Ident,
    pub inputs: Vec<WorkflowInput>,
    pub lifelines: Option<Vec<Ident>>,
    pub body: Block,
    pub span: Span,
}

/// `name: Type @ Lifeline`
#[derive(Debug, Clone, PartialEq)]
pub struct WorkflowInput {
    pub name: Ident,
    pub ty: TypeExpr,
    pub lifeline: Ident,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Block {
    pub stmts: Vec<Stmt>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum StmtKind {
    /// `msg from(send…) -> to(recv…)`
    Msg {
        from: Ident,
        send: Vec<Expr>,
        to: Ident,
        recv: Vec<Expr>,
    },
    /// `act at: targets = rhs` (no targets: `act at: f(x)`)
    Act {
        at: Ident,
        targets: Vec<Ident>,
        rhs: ActRhs,
    },
    If {
        guard: Expr,
        owner: Ident,
        then: Block,
        otherwise: Option<Block>,
    },
    While {
        guard: Expr,
        owner: Ident,
        body: Block,
        exit: Option<Block>,
    },
    /// `for var in list @ owner { body }`
    For {
        var: Ident,
        list: Ident,
        owner: Ident,
        body: Block,
    },
    /// `par { P } and { Q } …`: two or more branches run concurrently.
    Par {
        branches: Vec<Block>,
    },
    /// `coregion { msg A1(…) -> B(…) … }`: messages to one receiver, received
    /// in any order.
    Coregion {
        body: Block,
    },
    /// `call workflow[L = A, …](args…) -> (y @ A, …)`
    Call {
        workflow: Ident,
        /// `(callee lifeline, caller lifeline)` pairs, as written.
        map: Vec<(Ident, Ident)>,
        args: Vec<Expr>,
        results: Vec<ReturnItem>,
    },
    Return(Vec<ReturnItem>),
    /// A `lifelines` line anywhere but first in a workflow.
    Lifelines(Vec<Ident>),
    Error,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ActRhs {
    Call { name: Ident, args: Vec<Expr> },
    Expr(Expr),
}

/// `x @ A`
#[derive(Debug, Clone, PartialEq)]
pub struct ReturnItem {
    pub var: Ident,
    pub lifeline: Ident,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ExprKind {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(StrLit),
    /// A variable or an enum value; the checker decides which.
    Name(Ident),
    Field(Box<Expr>, Ident),
    Unary(UnaryOp, Box<Expr>),
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    List(Vec<Expr>),
    Paren(Box<Expr>),
    /// A form of the causal past logic (LANGUAGE.md §7); the checker
    /// accepts it only in the guard of an `if` or a `while`.
    Cpl(Cpl),
    Error,
}

/// The causal-past forms: `prev(φ)`, `since(φ, ψ)`, `once(φ)`, `at(B, φ)`,
/// `seen(B)` (only as the base of a field, `seen(B).x`) and `on(B)`.
#[derive(Debug, Clone, PartialEq)]
pub enum Cpl {
    Prev(Box<Expr>),
    Since(Box<Expr>, Box<Expr>),
    Once(Box<Expr>),
    At(Ident, Box<Expr>),
    Seen(Ident),
    On(Ident),
}

impl Cpl {
    /// The names that make a call of these forms (`prev(…)` …). They are
    /// reserved only as calls: a variable may still be named `since`.
    pub const NAMES: [&'static str; 6] = ["prev", "since", "once", "at", "seen", "on"];

    /// The sub-expressions, in source order.
    pub fn operands(&self) -> Vec<&Expr> {
        match self {
            Cpl::Prev(x) | Cpl::Once(x) | Cpl::At(_, x) => vec![x],
            Cpl::Since(a, b) => vec![a, b],
            Cpl::Seen(_) | Cpl::On(_) => vec![],
        }
    }
}

impl Expr {
    /// Whether this is a literal (`true`, `-7`, `0.5`, `"text"` without holes).
    pub fn is_literal(&self) -> bool {
        match &self.kind {
            ExprKind::Bool(_) | ExprKind::Int(_) | ExprKind::Float(_) => true,
            ExprKind::Str(s) => s.holes().next().is_none(),
            _ => false,
        }
    }
}

/// A string literal after escapes and indentation were processed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StrLit {
    pub parts: Vec<StrPart>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum StrPart {
    Text(String),
    /// `{name}`
    Hole(Ident),
}

impl StrLit {
    pub fn holes(&self) -> impl Iterator<Item = &Ident> {
        self.parts.iter().filter_map(|p| match p {
            StrPart::Hole(id) => Some(id),
            StrPart::Text(_) => None,
        })
    }

    /// The text when the string has no holes.
    pub fn as_plain(&self) -> Option<String> {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                StrPart::Text(t) => out.push_str(t),
                StrPart::Hole(_) => return None,
            }
        }
        Some(out)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    Not,
    Neg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Or,
    And,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

impl BinaryOp {
    /// The operator as written in source.
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Or => "or",
            BinaryOp::And => "and",
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::Ge => ">=",
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Rem => "%",
        }
    }
}
