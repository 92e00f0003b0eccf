//! Random well-typed IR workflows, larger and more varied than
//! `troupe_project::testing`'s: up to a few hundred statements, nesting
//! several levels deep, guards with `not`, `and` and `or`, message items that
//! are expressions, literals or dropped, and asynchronous actions.
//!
//! Every lifeline `X` has an `Int` input `n`; every `while` owns a fresh
//! counter that is set to 0 before the loop and incremented at the end of
//! its body, and its guard is `k < bound (and …)`, so every run ends. The
//! actions are functions of their one `Int` argument known to the oracle
//! ([`action_result`]): `bump` (pure, `x + 1`), `think` (LLM, `x + 2`),
//! `store` (effect, `x + 3`), `ask` (human, `x + 5`), `fetch` (tool, `x + 7`).
//! A test that runs a generated workflow registers performers computing
//! exactly these.
//!
//! With [`Shape::par`], blocks also hold `par` regions and coregions. The
//! branches never share a variable that one of them writes: at a `par`
//! each lifeline that may write its `n` either keeps that right in one
//! branch (and is *silent* in the others: it sends literals, drops what it
//! receives, decides on its own fresh counters only) or only reads `n` in
//! all of them; a silent lifeline stays silent. A coregion sends to one
//! receiver from two or three distinct senders, at most one of the
//! messages binding the receiver's `n`.

use crate::seeds::Rng;
use std::sync::Arc;
use troupe_check::Value;
use troupe_check::ir::{
    Action, ActionId, ActionKind, AnswerKind, BinaryOp, Block, Call, Expr, ExprKind, HumanAction,
    Lifeline, LifelineId, LlmAction, McpServer, McpTransport, MsgItem, Param, Program, Recv, Stmt,
    StmtId, StmtKind, Template, TemplatePart, ToolAction, UnaryOp, Var, VarId, Workflow,
};
use troupe_check::types::{Type, TypeTable};
use troupe_syntax::Span;

/// Shape of a generated workflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Number of lifelines (at least 2).
    pub lifelines: usize,
    /// Maximum nesting of `if`/`while`.
    pub max_depth: usize,
    /// Maximum number of statements drawn for one block.
    pub max_block: usize,
    /// Statements to draw (loop counters add a few more).
    pub stmts: usize,
    /// Use the asynchronous actions (LLM, effect, human, tool).
    pub asynchronous: bool,
    /// Largest loop bound (`k < bound`, bound drawn in `0..=max_bound`).
    pub max_bound: usize,
    /// Generate `par` regions and coregions too.
    pub par: bool,
}

impl Shape {
    /// A random shape for small workflows (whose bounded ⟦P⟧ can be
    /// enumerated and whose schedules can all be explored).
    pub fn small(rng: &mut Rng) -> Shape {
        Shape {
            lifelines: rng.range(2, 4),
            max_depth: rng.range(0, 3),
            max_block: rng.range(1, 4),
            stmts: rng.range(2, 14),
            asynchronous: false,
            max_bound: 2,
            par: false,
        }
    }

    /// A random shape of up to `max_stmts` statements, up to 8 lifelines and
    /// 5 levels of nesting.
    pub fn large(rng: &mut Rng, max_stmts: usize) -> Shape {
        Shape {
            lifelines: rng.range(2, 8),
            max_depth: rng.range(1, 5),
            max_block: rng.range(2, 6),
            stmts: rng.range(max_stmts / 4, max_stmts),
            asynchronous: true,
            max_bound: 3,
            par: false,
        }
    }

    /// A random shape for small workflows with `par` regions and
    /// coregions, whose schedules (every interleaving of a lifeline's
    /// parts included) can all be explored: 2 to 4 lifelines, up to
    /// `max_stmts` statements, at most 2 levels of nesting (a `par` is
    /// drawn only where nesting is allowed, so at least 1), loops of at
    /// most 2 rounds.
    pub fn small_concurrent(rng: &mut Rng, max_stmts: usize) -> Shape {
        Shape {
            lifelines: rng.range(2, 4),
            max_depth: rng.range(1, 2),
            max_block: rng.range(1, 3),
            stmts: rng.range(3, max_stmts.max(3)),
            asynchronous: false,
            max_bound: 2,
            par: true,
        }
    }

    /// [`Shape::large`] with `par` regions and coregions.
    pub fn concurrent(rng: &mut Rng, max_stmts: usize) -> Shape {
        Shape {
            par: true,
            lifelines: rng.range(3, 8),
            ..Shape::large(rng, max_stmts)
        }
    }
}

/// The action ids of the generated programs.
pub const BUMP: ActionId = ActionId(0);
pub const THINK: ActionId = ActionId(1);
pub const STORE: ActionId = ActionId(2);
pub const ASK: ActionId = ActionId(3);
pub const FETCH: ActionId = ActionId(4);

/// What action `a` returns for argument `x`.
pub fn action_result(a: ActionId, x: i64) -> i64 {
    x + match a {
        BUMP => 1,
        THINK => 2,
        STORE => 3,
        ASK => 5,
        FETCH => 7,
        _ => 0,
    }
}

/// A random well-typed program with one workflow, `workflows[0]`, named
/// `random`. Its result is `n` of the first lifeline.
pub fn program(seed: u64, shape: &Shape) -> Program {
    let mut g = Gen::new(seed, shape);
    let mut stmts = Vec::new();
    while g.left > 0 {
        g.stmt(0, &mut stmts);
    }
    g.finish(stmts)
}

/// The first of a few programs drawn from `seed` with `shape` (the shape
/// itself drawn by `shape` from the draw's generator) that has a `par` or
/// a coregion; `None` when none has. Small shapes often draw none, and a
/// test about concurrent parts wants only those that do.
pub fn program_with_par(seed: u64, shape: impl Fn(&mut Rng) -> Shape) -> Option<Program> {
    (0..4u64).find_map(|i| {
        let seed = seed ^ (i << 56);
        let program = program(seed, &shape(&mut Rng::new(seed)));
        has_par(&program.workflows[0].body).then_some(program)
    })
}

/// Whether a block holds a `par` (a coregion is one) at any depth.
pub fn has_par(block: &Block) -> bool {
    block.stmts.iter().any(|s| match &s.kind {
        StmtKind::Par { .. } => true,
        StmtKind::If {
            then: a,
            otherwise: b,
            ..
        }
        | StmtKind::While {
            body: a, exit: b, ..
        } => has_par(a) || has_par(b),
        StmtKind::Msg { .. } | StmtKind::Act { .. } => false,
    })
}

/// Inputs for a generated workflow: each lifeline's `n`, in `-3..=3`.
pub fn inputs(workflow: &Workflow, seed: u64) -> Vec<Value> {
    let mut rng = Rng::new(seed ^ 0x1f2e_3d4c);
    workflow
        .inputs
        .iter()
        .map(|_| Value::Int(rng.below(7) as i64 - 3))
        .collect()
}

/// What a lifeline may do with its `n` where the generator is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Write,
    Read,
    Silent,
}

struct Gen {
    rng: Rng,
    shape: Shape,
    next_id: u32,
    left: usize,
    vars: Vec<Var>,
    /// Per lifeline, what it may do here (changed inside `par` branches).
    modes: Vec<Mode>,
    coregions: Vec<troupe_check::ir::Coregion>,
}

fn expr(kind: ExprKind, ty: Type) -> Expr {
    Expr {
        kind,
        ty,
        span: Span::default(),
    }
}

fn int(n: i64) -> Expr {
    expr(ExprKind::Lit(Value::Int(n)), Type::Int)
}

fn var(v: VarId) -> Expr {
    expr(ExprKind::Var(v), Type::Int)
}

fn bin(op: BinaryOp, l: Expr, r: Expr) -> Expr {
    let ty = match op {
        BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Rem => Type::Int,
        _ => Type::Bool,
    };
    expr(ExprKind::Binary(op, Box::new(l), Box::new(r)), ty)
}

fn template(head: &str) -> Template {
    Template {
        parts: vec![
            TemplatePart::Text(format!("{head}: ")),
            TemplatePart::Param(0),
        ],
    }
}

const NAMES: [&str; 8] = [
    "Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Heidi",
];

impl Gen {
    fn new(seed: u64, shape: &Shape) -> Gen {
        let n = shape.lifelines.clamp(2, NAMES.len());
        let vars = (0..n)
            .map(|i| Var {
                name: "n".to_owned(),
                lifeline: LifelineId(i as u32),
                ty: Type::Int,
            })
            .collect();
        Gen {
            rng: Rng::new(seed),
            shape: Shape {
                lifelines: n,
                ..*shape
            },
            next_id: 0,
            left: shape.stmts.max(1),
            vars,
            modes: vec![Mode::Write; n],
            coregions: Vec::new(),
        }
    }

    fn fresh(&mut self) -> StmtId {
        let id = StmtId(self.next_id);
        self.next_id += 1;
        self.left = self.left.saturating_sub(1);
        id
    }

    fn n(l: usize) -> VarId {
        VarId(l as u32)
    }

    fn lifeline(&mut self) -> usize {
        self.rng.below(self.shape.lifelines)
    }

    fn stmt_of(id: StmtId, kind: StmtKind) -> Stmt {
        Stmt {
            id,
            span: Span::default(),
            kind,
        }
    }

    fn block(&mut self, depth: usize, allow_empty: bool) -> Vec<Stmt> {
        let mut stmts = Vec::new();
        let min = usize::from(!allow_empty);
        let len = self.rng.range(min, self.shape.max_block.max(1));
        for _ in 0..len {
            if self.left == 0 && stmts.len() >= min {
                break;
            }
            self.stmt(depth, &mut stmts);
        }
        stmts
    }

    fn stmt(&mut self, depth: usize, out: &mut Vec<Stmt>) {
        let nested = depth < self.shape.max_depth && self.left > 1;
        let choices = match (nested, self.shape.par) {
            (false, _) => 6,
            (true, false) => 12,
            (true, true) => 15,
        };
        match self.rng.below(choices) {
            0..=3 => self.msg(out),
            4..=5 => self.act(out),
            6..=8 => self.if_(depth, out),
            9..=11 => self.while_(depth, out),
            12 | 13 => self.par(depth, out),
            _ => self.coregion(out),
        }
    }

    /// `par` with two or three branches; see the module docs for who may
    /// touch which variable where.
    fn par(&mut self, depth: usize, out: &mut Vec<Stmt>) {
        let id = self.fresh();
        let k = self.rng.range(2, 3);
        let outer = self.modes.clone();
        // Per lifeline that may write: the branch that keeps the right
        // (`None`: it only reads, everywhere).
        let writer: Vec<Option<usize>> = outer
            .iter()
            .map(|m| (*m == Mode::Write && self.rng.chance(2, 3)).then(|| self.rng.below(k)))
            .collect();
        let mut branches = Vec::with_capacity(k);
        for b in 0..k {
            self.modes = outer
                .iter()
                .zip(&writer)
                .map(|(m, w)| match (m, w) {
                    (Mode::Write, Some(x)) if *x == b => Mode::Write,
                    (Mode::Write, Some(_)) | (Mode::Silent, _) => Mode::Silent,
                    (Mode::Write | Mode::Read, None) | (Mode::Read, Some(_)) => Mode::Read,
                })
                .collect();
            branches.push(Block {
                stmts: self.block(depth + 1, false),
            });
        }
        self.modes = outer;
        out.push(Self::stmt_of(id, StmtKind::Par { branches }));
    }

    /// `coregion { msg S1(…) -> R(…) … }`: distinct senders, one receiver,
    /// at most one message binding the receiver's `n`.
    fn coregion(&mut self, out: &mut Vec<Stmt>) {
        let n = self.shape.lifelines;
        let id = self.fresh();
        let to = self.lifeline();
        let senders = self.rng.range(2, 3).min(n - 1);
        let first = self.rng.below(n);
        let mut from: Vec<usize> = (0..n)
            .map(|i| (first + i) % n)
            .filter(|&x| x != to)
            .take(senders)
            .collect();
        from.sort_unstable();
        let binder = (self.modes[to] == Mode::Write).then(|| self.rng.below(from.len()));
        let mut branches = Vec::with_capacity(from.len());
        for (i, &f) in from.iter().enumerate() {
            let msg_id = self.fresh();
            let send = self.send_value(f);
            let recv = if binder == Some(i) {
                Recv::Bind(Self::n(to))
            } else {
                Recv::Discard
            };
            branches.push(Block {
                stmts: vec![Self::stmt_of(
                    msg_id,
                    StmtKind::Msg {
                        from: LifelineId(f as u32),
                        to: LifelineId(to as u32),
                        items: vec![MsgItem { send, recv }],
                    },
                )],
            });
        }
        self.coregions.push(troupe_check::ir::Coregion {
            stmt: id,
            receiver: LifelineId(to as u32),
            span: Span::default(),
        });
        out.push(Self::stmt_of(id, StmtKind::Par { branches }));
    }

    /// A value `l` sends: over its `n` where it may read it, else a literal.
    fn send_value(&mut self, l: usize) -> Expr {
        if self.modes[l] == Mode::Silent {
            int(self.rng.below(5) as i64)
        } else {
            self.value(l)
        }
    }

    fn value(&mut self, l: usize) -> Expr {
        match self.rng.below(4) {
            0 => bin(
                BinaryOp::Add,
                var(Self::n(l)),
                int(self.rng.below(3) as i64),
            ),
            _ => var(Self::n(l)),
        }
    }

    fn msg(&mut self, out: &mut Vec<Stmt>) {
        let id = self.fresh();
        let from = self.lifeline();
        let to = (from + 1 + self.rng.below(self.shape.lifelines - 1)) % self.shape.lifelines;
        let arity = self.rng.range(1, 3);
        let may_bind = self.modes[to] == Mode::Write;
        let may_read = self.modes[from] != Mode::Silent;
        let items = (0..arity)
            .map(|_| {
                if may_read && self.rng.chance(2, 3) {
                    let recv = if may_bind && self.rng.chance(3, 4) {
                        Recv::Bind(Self::n(to))
                    } else {
                        Recv::Discard
                    };
                    MsgItem {
                        send: self.value(from),
                        recv,
                    }
                } else {
                    let c = self.rng.below(5) as i64;
                    let recv = match self.rng.below(3) {
                        0 => Recv::Literal(Value::Int(c)),
                        _ if !may_bind => Recv::Discard,
                        1 => Recv::Discard,
                        _ => Recv::Bind(Self::n(to)),
                    };
                    MsgItem { send: int(c), recv }
                }
            })
            .collect();
        out.push(Self::stmt_of(
            id,
            StmtKind::Msg {
                from: LifelineId(from as u32),
                to: LifelineId(to as u32),
                items,
            },
        ));
    }

    fn act(&mut self, out: &mut Vec<Stmt>) {
        let id = self.fresh();
        let at = self.lifeline();
        let n = Self::n(at);
        let action = if self.shape.asynchronous {
            ActionId(self.rng.below(5) as u32)
        } else {
            BUMP
        };
        let mode = self.modes[at];
        let (outputs, call) = match self.rng.below(4) {
            _ if mode == Mode::Silent => (
                vec![None],
                Call::Action {
                    action,
                    args: vec![int(self.rng.below(5) as i64)],
                },
            ),
            0 | 2 | 3 if mode == Mode::Read => (
                vec![None],
                Call::Action {
                    action,
                    args: vec![self.value(at)],
                },
            ),
            0 => (
                vec![Some(n)],
                Call::Expr(bin(
                    BinaryOp::Add,
                    var(n),
                    int(self.rng.below(3) as i64 + 1),
                )),
            ),
            1 => (
                vec![None],
                Call::Action {
                    action,
                    args: vec![var(n)],
                },
            ),
            _ => (
                vec![Some(n)],
                Call::Action {
                    action,
                    args: vec![self.value(at)],
                },
            ),
        };
        out.push(Self::stmt_of(
            id,
            StmtKind::Act {
                at: LifelineId(at as u32),
                outputs,
                call,
            },
        ));
    }

    fn atom(&mut self, owner: usize) -> Expr {
        let n = var(Self::n(owner));
        let c = self.rng.below(7) as i64 - 2;
        match self.rng.below(4) {
            0 => bin(BinaryOp::Lt, n, int(c)),
            1 => bin(BinaryOp::Eq, bin(BinaryOp::Rem, n, int(2)), int(0)),
            2 => bin(BinaryOp::Ne, n, int(c)),
            _ => bin(BinaryOp::Ge, n, int(c)),
        }
    }

    fn guard(&mut self, owner: usize) -> Expr {
        if self.modes[owner] == Mode::Silent {
            // A decision that reads no variable of the owner.
            let (a, b) = (self.rng.below(3) as i64, self.rng.below(3) as i64);
            return bin(BinaryOp::Lt, int(a), int(b));
        }
        let a = self.atom(owner);
        match self.rng.below(6) {
            0 => expr(ExprKind::Unary(UnaryOp::Not, Box::new(a)), Type::Bool),
            1 => {
                let b = self.atom(owner);
                bin(BinaryOp::And, a, b)
            }
            2 => {
                let b = self.atom(owner);
                bin(BinaryOp::Or, a, b)
            }
            _ => a,
        }
    }

    fn if_(&mut self, depth: usize, out: &mut Vec<Stmt>) {
        let id = self.fresh();
        let owner = self.lifeline();
        let guard = self.guard(owner);
        let then = self.block(depth + 1, false);
        let allow_empty_else = self.rng.chance(1, 3);
        let otherwise = self.block(depth + 1, allow_empty_else);
        out.push(Self::stmt_of(
            id,
            StmtKind::If {
                owner: LifelineId(owner as u32),
                guard,
                then: Block { stmts: then },
                otherwise: Block { stmts: otherwise },
            },
        ));
    }

    fn while_(&mut self, depth: usize, out: &mut Vec<Stmt>) {
        let owner = self.lifeline();
        let k = VarId(self.vars.len() as u32);
        let reset = self.fresh();
        self.vars.push(Var {
            name: format!("k{}", reset.0),
            lifeline: LifelineId(owner as u32),
            ty: Type::Int,
        });
        out.push(Self::stmt_of(
            reset,
            StmtKind::Act {
                at: LifelineId(owner as u32),
                outputs: vec![Some(k)],
                call: Call::Expr(int(0)),
            },
        ));
        let id = self.fresh();
        let bound = self.rng.range(0, self.shape.max_bound) as i64;
        let mut guard = bin(BinaryOp::Lt, var(k), int(bound));
        if self.rng.chance(1, 2) && self.modes[owner] != Mode::Silent {
            let extra = self.guard(owner);
            guard = bin(BinaryOp::And, guard, extra);
        }
        let mut body = self.block(depth + 1, true);
        let inc = self.fresh();
        body.push(Self::stmt_of(
            inc,
            StmtKind::Act {
                at: LifelineId(owner as u32),
                outputs: vec![Some(k)],
                call: Call::Expr(bin(BinaryOp::Add, var(k), int(1))),
            },
        ));
        let exit = self.block(depth + 1, true);
        out.push(Self::stmt_of(
            id,
            StmtKind::While {
                owner: LifelineId(owner as u32),
                guard,
                body: Block { stmts: body },
                exit: Block { stmts: exit },
            },
        ));
    }

    fn finish(mut self, stmts: Vec<Stmt>) -> Program {
        self.coregions.sort_by_key(|c| c.stmt);
        let n = self.shape.lifelines;
        let lifelines = (0..n)
            .map(|i| Lifeline {
                name: NAMES[i].to_owned(),
                span: Span::default(),
            })
            .collect();
        let workflow = Workflow {
            name: "random".to_owned(),
            span: Span::default(),
            lifelines,
            vars: self.vars,
            inputs: (0..n as u32).map(VarId).collect(),
            body: Block { stmts },
            results: vec![VarId(0)],
            stmt_count: self.next_id,
            imported: false,
            for_each: Vec::new(),
            calls: Vec::new(),
            coregions: self.coregions,
        };
        Program {
            types: TypeTable::default(),
            actions: actions(),
            workflows: vec![workflow],
        }
    }
}

fn int_action(name: &str, kind: ActionKind) -> Action {
    Action {
        name: name.to_owned(),
        params: vec![Param {
            name: "x".to_owned(),
            ty: Type::Int,
        }],
        outputs: vec![Param {
            name: "result".to_owned(),
            ty: Type::Int,
        }],
        kind,
        span: Span::default(),
    }
}

/// The five actions, indexed by [`BUMP`] … [`FETCH`].
fn actions() -> Vec<Action> {
    let server = Arc::new(McpServer {
        name: "oracle".to_owned(),
        transport: McpTransport::Stdio {
            command: "oracle-tools-are-in-process".to_owned(),
            args: Vec::new(),
            env: Vec::new(),
            cwd: None,
        },
        contracts: None,
        span: Span::default(),
    });
    vec![
        int_action(
            "bump",
            ActionKind::Pure {
                body: Some(bin(BinaryOp::Add, var(VarId(0)), int(1))),
            },
        ),
        int_action(
            "think",
            ActionKind::Llm(LlmAction {
                system: None,
                prompt: template("think"),
                model: None,
                temperature: None,
                retries: None,
                tools: Vec::new(),
                max_steps: None,
            }),
        ),
        int_action("store", ActionKind::Effect { idempotent: false }),
        int_action(
            "ask",
            ActionKind::Human(HumanAction {
                ask: template("ask"),
                prefill: None,
                answer: AnswerKind::Input,
                deadline: None,
                remind: None,
            }),
        ),
        int_action(
            "fetch",
            ActionKind::Tool(ToolAction {
                server,
                remote: "fetch".to_owned(),
                defaults: vec![None],
                idempotent: false,
            }),
        ),
    ]
}

/// Number of statements of a block, recursively.
pub fn count_stmts(block: &Block) -> usize {
    block
        .stmts
        .iter()
        .map(|s| {
            1 + match &s.kind {
                StmtKind::Msg { .. } | StmtKind::Act { .. } => 0,
                StmtKind::If {
                    then: a,
                    otherwise: b,
                    ..
                }
                | StmtKind::While {
                    body: a, exit: b, ..
                } => count_stmts(a) + count_stmts(b),
                StmtKind::Par { branches } => branches.iter().map(count_stmts).sum(),
            }
        })
        .sum()
}

/// Deepest nesting of `if`/`while` in a block.
pub fn depth(block: &Block) -> usize {
    block
        .stmts
        .iter()
        .map(|s| match &s.kind {
            StmtKind::Msg { .. } | StmtKind::Act { .. } => 0,
            StmtKind::If {
                then: a,
                otherwise: b,
                ..
            }
            | StmtKind::While {
                body: a, exit: b, ..
            } => 1 + depth(a).max(depth(b)),
            StmtKind::Par { branches } => 1 + branches.iter().map(depth).max().unwrap_or(0),
        })
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    //! The generator against the real front end: generated workflows with
    //! `par` regions and coregions, written out as source, are accepted by
    //! `troupe_check` — whose rules for them (E0720: no variable written
    //! in one branch is read or written in another; E0721: a coregion's
    //! messages go to one receiver from distinct senders with disjoint
    //! bindings) the generator's modes only claim to follow — and check
    //! into as many branches and coregions as were generated.

    use super::*;
    use crate::seeds::Seeds;
    use std::fmt::Write as _;
    use troupe_check::ir::Expr;

    struct Source<'w> {
        w: &'w Workflow,
        coregions: std::collections::HashSet<StmtId>,
        out: String,
    }

    impl Source<'_> {
        fn lifeline(&self, l: LifelineId) -> &str {
            &self.w.lifelines[l.0 as usize].name
        }

        /// Every lifeline's `n` is an input, and inputs need distinct
        /// names: `n_Alice`. Loop counters are named apart already.
        fn var(&self, v: VarId) -> String {
            let var = &self.w.vars[v.0 as usize];
            if var.name == "n" {
                format!("n_{}", self.lifeline(var.lifeline))
            } else {
                var.name.clone()
            }
        }

        fn expr(&self, e: &Expr) -> String {
            match &e.kind {
                ExprKind::Lit(Value::Int(n)) if *n < 0 => format!("(0 - {})", -n),
                ExprKind::Lit(Value::Int(n)) => n.to_string(),
                ExprKind::Lit(Value::Bool(b)) => b.to_string(),
                ExprKind::Var(v) => self.var(*v),
                ExprKind::Unary(UnaryOp::Not, x) => format!("(not {})", self.expr(x)),
                ExprKind::Binary(op, l, r) => {
                    format!("({} {} {})", self.expr(l), op.symbol(), self.expr(r))
                }
                other => panic!("not generated: {other:?}"),
            }
        }

        fn block(&mut self, b: &Block, pad: usize) {
            for s in &b.stmts {
                self.stmt(s, pad);
            }
        }

        fn line(&mut self, pad: usize, text: &str) {
            let _ = writeln!(self.out, "{}{text}", "  ".repeat(pad));
        }

        fn stmt(&mut self, s: &Stmt, pad: usize) {
            match &s.kind {
                StmtKind::Msg { from, to, items } => {
                    let send: Vec<String> = items.iter().map(|i| self.expr(&i.send)).collect();
                    let recv: Vec<String> = items
                        .iter()
                        .map(|i| match &i.recv {
                            Recv::Bind(v) => self.var(*v),
                            Recv::Discard => "_".to_owned(),
                            Recv::Literal(Value::Int(n)) => n.to_string(),
                            Recv::Literal(other) => panic!("not generated: {other:?}"),
                        })
                        .collect();
                    let text = format!(
                        "msg {}({}) -> {}({})",
                        self.lifeline(*from),
                        send.join(", "),
                        self.lifeline(*to),
                        recv.join(", ")
                    );
                    self.line(pad, &text);
                }
                StmtKind::Act { at, outputs, call } => {
                    let out = match outputs.first() {
                        Some(Some(v)) => self.var(*v),
                        _ => "_".to_owned(),
                    };
                    let rhs = match call {
                        Call::Expr(e) => self.expr(e),
                        Call::Action { action, args } => {
                            assert_eq!(*action, BUMP, "only `bump` is declared here");
                            format!("bump({})", self.expr(&args[0]))
                        }
                    };
                    let text = format!("act {}: {out} = {rhs}", self.lifeline(*at));
                    self.line(pad, &text);
                }
                StmtKind::If {
                    owner,
                    guard,
                    then,
                    otherwise,
                }
                | StmtKind::While {
                    owner,
                    guard,
                    body: then,
                    exit: otherwise,
                } => {
                    let (kw, other) = match s.kind {
                        StmtKind::If { .. } => ("if", "else"),
                        _ => ("while", "exit"),
                    };
                    let head = format!("{kw} {} @ {} {{", self.expr(guard), self.lifeline(*owner));
                    self.line(pad, &head);
                    self.block(then, pad + 1);
                    self.line(pad, &format!("}} {other} {{"));
                    self.block(otherwise, pad + 1);
                    self.line(pad, "}");
                }
                StmtKind::Par { branches } if self.coregions.contains(&s.id) => {
                    self.line(pad, "coregion {");
                    for b in branches {
                        self.block(b, pad + 1);
                    }
                    self.line(pad, "}");
                }
                StmtKind::Par { branches } => {
                    for (i, b) in branches.iter().enumerate() {
                        self.line(pad, if i == 0 { "par {" } else { "} and {" });
                        self.block(b, pad + 1);
                    }
                    self.line(pad, "}");
                }
            }
        }
    }

    /// `program` (without asynchronous actions) as troupe source.
    fn source(program: &Program) -> String {
        let w = &program.workflows[0];
        let mut s = Source {
            w,
            coregions: w.coregions.iter().map(|c| c.stmt).collect(),
            out: String::from("pure bump(x: Int) -> Int = x + 1\n\n"),
        };
        let inputs: Vec<String> = w
            .inputs
            .iter()
            .map(|v| {
                format!(
                    "{}: Int @ {}",
                    s.var(*v),
                    s.lifeline(w.vars[v.0 as usize].lifeline)
                )
            })
            .collect();
        let names: Vec<&str> = w.lifelines.iter().map(|l| l.name.as_str()).collect();
        let _ = writeln!(s.out, "workflow random({}) {{", inputs.join(", "));
        let _ = writeln!(s.out, "  lifelines {}", names.join(", "));
        s.block(&w.body, 1);
        let result = s.var(w.results[0]);
        let _ = writeln!(s.out, "  return {result} @ {}\n}}", names[0]);
        s.out
    }

    fn branches(b: &Block) -> usize {
        b.stmts
            .iter()
            .map(|s| match &s.kind {
                StmtKind::Par { branches: bs } => bs.len() + bs.iter().map(branches).sum::<usize>(),
                StmtKind::If {
                    then: a,
                    otherwise: c,
                    ..
                }
                | StmtKind::While {
                    body: a, exit: c, ..
                } => branches(a) + branches(c),
                StmtKind::Msg { .. } | StmtKind::Act { .. } => 0,
            })
            .sum()
    }

    #[test]
    fn generated_concurrent_workflows_are_accepted_by_the_checker() {
        let seeds = Seeds::new(
            "generated_concurrent_workflows_are_accepted_by_the_checker",
            300,
        );
        let (mut checked, mut pars, mut coregions) = (0usize, 0usize, 0usize);
        for seed in seeds.iter() {
            let mut rng = Rng::new(seed);
            let shape = match seed % 2 {
                0 => Shape::small_concurrent(&mut rng, 12),
                _ => Shape {
                    asynchronous: false,
                    ..Shape::concurrent(&mut rng, 80)
                },
            };
            let program = program(seed, &shape);
            let text = source(&program);
            let (checked_program, diagnostics) = troupe_check::check_text(&text);
            let errors: Vec<_> = diagnostics.iter().filter(|d| d.is_error()).collect();
            assert!(
                errors.is_empty(),
                "seed {seed}: the checker refuses a generated workflow:\n{text}\n{errors:#?}\n{}",
                crate::seeds::repeat_hint(seed)
            );
            let got = &checked_program.expect("no errors, a program").workflows[0];
            let w = &program.workflows[0];
            assert_eq!(
                (branches(&got.body), got.coregions.len()),
                (branches(&w.body), w.coregions.len()),
                "seed {seed}: another number of branches or coregions\n{text}"
            );
            checked += 1;
            pars += branches(&w.body);
            coregions += w.coregions.len();
        }
        eprintln!("{checked} workflows checked: {pars} branches, {coregions} coregions");
        if seeds.cases >= 100 {
            assert!(
                pars >= 300 && coregions >= 50,
                "{pars} branches, {coregions} coregions"
            );
        }
    }
}
