//! Random well-typed IR workflows for property tests, and a deterministic large
//! workflow for benchmarks (feature `testing`).
//!
//! Generated workflows are well-typed by construction: every lifeline `X` has
//! an `Int` input `n` (so every read is bound), messages carry `n` or integer
//! literals, actions update `n`, `if` guards compare the owner's `n` with a
//! constant, and every `while` owns a fresh counter `kN` that is set to 0 just
//! before the loop and incremented at the end of its body, with a guard
//! `kN < bound (and …)`, so a reference interpreter that evaluates guards
//! always terminates.

use proptest::prelude::*;
use troupe_check::Value;
use troupe_check::ir::{
    Action, ActionId, ActionKind, BinaryOp, Block, Call, Expr, ExprKind, Lifeline, LifelineId,
    MsgItem, Param, Program, Recv, Stmt, StmtId, StmtKind, Var, VarId, Workflow,
};
use troupe_check::types::{Type, TypeTable};
use troupe_syntax::Span;

/// Shape limits of a generated workflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GenConfig {
    pub lifelines: usize,
    /// Maximum nesting of `if`/`while`.
    pub max_depth: usize,
    /// Maximum number of statements drawn for one block.
    pub max_block: usize,
    /// Rough cap on the number of statements (loop counters may add a few).
    pub max_stmts: usize,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig {
            lifelines: 4,
            max_depth: 3,
            max_block: 4,
            max_stmts: 30,
        }
    }
}

/// A small deterministic PRNG (splitmix64), so generated workflows depend on the
/// seed alone.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`0` when `n == 0`).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    pub fn chance(&mut self, num: usize, den: usize) -> bool {
        self.below(den) < num
    }
}

/// A random well-typed program with one workflow, `workflows[0]`.
pub fn random_program(seed: u64, cfg: &GenConfig) -> Program {
    let mut g = Gen::new(seed, cfg);
    // Between a few statements and `max_stmts`, drawn so that small and large
    // workflows both come up often.
    g.left = 2 + g.rng.below(cfg.max_stmts.max(1));
    let mut stmts = Vec::new();
    while g.left > 0 {
        g.stmt(0, &mut stmts);
    }
    g.finish("random", stmts)
}

/// A deterministic workflow of about `statements` statements over `lifelines`
/// lifelines (at least 2), nesting at most 3 deep: for benchmarking projection.
pub fn generate_large(statements: usize, lifelines: usize) -> Program {
    let cfg = GenConfig {
        lifelines: lifelines.max(2),
        max_depth: 3,
        max_block: 6,
        max_stmts: statements,
    };
    let mut g = Gen::new(0x7e57_5eed, &cfg);
    let mut stmts = Vec::new();
    while g.left > 0 {
        g.stmt(0, &mut stmts);
    }
    g.finish("large", stmts)
}

/// Proptest strategy: random programs with 2..8 lifelines.
pub fn arb_program() -> impl Strategy<Value = Program> {
    (any::<u64>(), 2usize..8, 0usize..5, 1usize..5).prop_map(
        |(seed, lifelines, max_depth, max_block)| {
            random_program(
                seed,
                &GenConfig {
                    lifelines,
                    max_depth,
                    max_block,
                    max_stmts: 30,
                },
            )
        },
    )
}

/// Values for the inputs of a generated workflow (the `n` of each lifeline).
pub fn random_inputs(workflow: &Workflow, seed: u64) -> Vec<Value> {
    let mut rng = Rng::new(seed ^ 0xa5a5_a5a5);
    workflow
        .inputs
        .iter()
        .map(|_| Value::Int(rng.below(7) as i64 - 3))
        .collect()
}

struct Gen {
    rng: Rng,
    cfg: GenConfig,
    next_id: u32,
    left: usize,
    vars: Vec<Var>,
}

const BUMP: ActionId = ActionId(0);

fn int(n: i64) -> Expr {
    Expr {
        kind: ExprKind::Lit(Value::Int(n)),
        ty: Type::Int,
        span: Span::default(),
    }
}

fn var(v: VarId) -> Expr {
    Expr {
        kind: ExprKind::Var(v),
        ty: Type::Int,
        span: Span::default(),
    }
}

fn bin(op: BinaryOp, l: Expr, r: Expr) -> Expr {
    let ty = match op {
        BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Rem => Type::Int,
        _ => Type::Bool,
    };
    Expr {
        kind: ExprKind::Binary(op, Box::new(l), Box::new(r)),
        ty,
        span: Span::default(),
    }
}

fn lifeline_name(i: usize) -> String {
    const NAMES: [&str; 8] = [
        "Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Heidi",
    ];
    NAMES
        .get(i)
        .map_or_else(|| format!("L{i}"), |s| (*s).to_owned())
}

impl Gen {
    fn new(seed: u64, cfg: &GenConfig) -> Gen {
        let n = cfg.lifelines.max(2);
        let vars = (0..n)
            .map(|i| Var {
                name: "n".to_owned(),
                lifeline: LifelineId(i as u32),
                ty: Type::Int,
            })
            .collect();
        Gen {
            rng: Rng::new(seed),
            cfg: GenConfig {
                lifelines: n,
                ..*cfg
            },
            next_id: 0,
            left: cfg.max_stmts,
            vars,
        }
    }

    fn fresh(&mut self) -> StmtId {
        let id = StmtId(self.next_id);
        self.next_id += 1;
        self.left = self.left.saturating_sub(1);
        id
    }

    fn counter(&self, l: usize) -> VarId {
        VarId(l as u32)
    }

    fn lifeline(&mut self) -> usize {
        self.rng.below(self.cfg.lifelines)
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
        let len = min + self.rng.below(self.cfg.max_block.max(1) + 1 - min);
        for _ in 0..len {
            if self.left == 0 {
                break;
            }
            self.stmt(depth, &mut stmts);
        }
        stmts
    }

    fn stmt(&mut self, depth: usize, out: &mut Vec<Stmt>) {
        let nested = depth < self.cfg.max_depth;
        let roll = self.rng.below(if nested { 12 } else { 6 });
        match roll {
            0..=3 => self.msg(out),
            4..=5 => self.act(out),
            6..=8 => self.if_(depth, out),
            _ => self.while_(depth, out),
        }
    }

    fn msg(&mut self, out: &mut Vec<Stmt>) {
        let id = self.fresh();
        let from = self.lifeline();
        let to = (from + 1 + self.rng.below(self.cfg.lifelines - 1)) % self.cfg.lifelines;
        let arity = 1 + self.rng.below(2);
        let items = (0..arity)
            .map(|_| {
                if self.rng.chance(2, 3) {
                    let recv = if self.rng.chance(3, 4) {
                        Recv::Bind(self.counter(to))
                    } else {
                        Recv::Discard
                    };
                    MsgItem {
                        send: var(self.counter(from)),
                        recv,
                    }
                } else {
                    let c = self.rng.below(5) as i64;
                    let recv = match self.rng.below(3) {
                        0 => Recv::Literal(Value::Int(c)),
                        1 => Recv::Discard,
                        _ => Recv::Bind(self.counter(to)),
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
        let n = self.counter(at);
        let (outputs, call) = match self.rng.below(3) {
            0 => (
                vec![Some(n)],
                Call::Expr(bin(
                    BinaryOp::Add,
                    var(n),
                    int(self.rng.below(3) as i64 + 1),
                )),
            ),
            1 => (
                vec![Some(n)],
                Call::Action {
                    action: BUMP,
                    args: vec![var(n)],
                },
            ),
            _ => (
                vec![None],
                Call::Action {
                    action: BUMP,
                    args: vec![var(n)],
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

    fn guard(&mut self, owner: usize) -> Expr {
        let n = var(self.counter(owner));
        let c = self.rng.below(5) as i64 - 1;
        match self.rng.below(3) {
            0 => bin(BinaryOp::Lt, n, int(c)),
            1 => bin(BinaryOp::Eq, bin(BinaryOp::Rem, n, int(2)), int(0)),
            _ => bin(BinaryOp::Ge, n, int(c)),
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
        let bound = self.rng.below(4) as i64;
        let mut guard = bin(BinaryOp::Lt, var(k), int(bound));
        if self.rng.chance(1, 2) {
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

    fn finish(self, name: &str, stmts: Vec<Stmt>) -> Program {
        let n = self.cfg.lifelines;
        let lifelines = (0..n)
            .map(|i| Lifeline {
                name: lifeline_name(i),
                span: Span::default(),
            })
            .collect();
        let bump = Action {
            name: "bump".to_owned(),
            params: vec![Param {
                name: "x".to_owned(),
                ty: Type::Int,
            }],
            outputs: vec![Param {
                name: "result".to_owned(),
                ty: Type::Int,
            }],
            kind: ActionKind::Pure {
                body: Some(bin(BinaryOp::Add, var(VarId(0)), int(1))),
            },
            span: Span::default(),
        };
        let workflow = Workflow {
            name: name.to_owned(),
            span: Span::default(),
            lifelines,
            vars: self.vars,
            inputs: (0..n as u32).map(VarId).collect(),
            body: Block { stmts },
            results: Vec::new(),
            stmt_count: self.next_id,
            imported: false,
            for_each: Vec::new(),
            calls: Vec::new(),
            coregions: Vec::new(),
        };
        Program {
            types: TypeTable::default(),
            actions: vec![bump],
            workflows: vec![workflow],
        }
    }
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

/// Builds IR workflows by hand, for tests of this crate and the ones built on
/// it. Statement ids are handed out in call order, which is pre-order as long
/// as a construct's blocks are built inside its closures.
#[derive(Debug, Default)]
pub struct Builder {
    name: String,
    types: TypeTable,
    actions: Vec<Action>,
    lifelines: Vec<Lifeline>,
    vars: Vec<Var>,
    inputs: Vec<VarId>,
    results: Vec<VarId>,
    next_id: u32,
}

impl Builder {
    pub fn new(name: &str) -> Self {
        Builder {
            name: name.to_owned(),
            ..Default::default()
        }
    }

    pub fn lifeline(&mut self, name: &str) -> LifelineId {
        self.lifelines.push(Lifeline {
            name: name.to_owned(),
            span: Span::default(),
        });
        LifelineId(self.lifelines.len() as u32 - 1)
    }

    pub fn var(&mut self, name: &str, at: LifelineId, ty: Type) -> VarId {
        self.vars.push(Var {
            name: name.to_owned(),
            lifeline: at,
            ty,
        });
        VarId(self.vars.len() as u32 - 1)
    }

    pub fn input(&mut self, name: &str, at: LifelineId, ty: Type) -> VarId {
        let v = self.var(name, at, ty);
        self.inputs.push(v);
        v
    }

    pub fn result(&mut self, v: VarId) {
        self.results.push(v);
    }

    /// Declares an enum type and returns it.
    pub fn enum_type(&mut self, name: &str, values: &[&str]) -> Type {
        self.types.enums.push(troupe_check::types::EnumDef {
            name: name.to_owned(),
            values: values.iter().map(|v| (*v).to_owned()).collect(),
        });
        Type::Enum(troupe_check::types::EnumId(
            self.types.enums.len() as u32 - 1,
        ))
    }

    /// Declares an `llm` action with a one-line prompt.
    pub fn llm(
        &mut self,
        name: &str,
        params: &[(&str, Type)],
        outputs: &[(&str, Type)],
    ) -> ActionId {
        let params: Vec<Param> = params
            .iter()
            .map(|(n, t)| Param {
                name: (*n).to_owned(),
                ty: t.clone(),
            })
            .collect();
        let mut parts = vec![troupe_check::ir::TemplatePart::Text(format!("{name}: "))];
        parts.extend((0..params.len() as u32).map(troupe_check::ir::TemplatePart::Param));
        self.actions.push(Action {
            name: name.to_owned(),
            params,
            outputs: outputs
                .iter()
                .map(|(n, t)| Param {
                    name: (*n).to_owned(),
                    ty: t.clone(),
                })
                .collect(),
            kind: ActionKind::Llm(troupe_check::ir::LlmAction {
                system: None,
                prompt: troupe_check::ir::Template { parts },
                model: None,
                temperature: None,
                retries: None,
                tools: Vec::new(),
                max_steps: None,
            }),
            span: Span::default(),
        });
        ActionId(self.actions.len() as u32 - 1)
    }

    /// An expression reading variable `v` (typed as declared).
    pub fn v(&self, v: VarId) -> Expr {
        let ty = self
            .vars
            .get(v.0 as usize)
            .map_or(Type::Error, |x| x.ty.clone());
        Expr {
            kind: ExprKind::Var(v),
            ty,
            span: Span::default(),
        }
    }

    pub fn lit(value: Value, ty: Type) -> Expr {
        Expr {
            kind: ExprKind::Lit(value),
            ty,
            span: Span::default(),
        }
    }

    pub fn int(n: i64) -> Expr {
        int(n)
    }

    pub fn text(s: &str) -> Expr {
        Self::lit(Value::text(s), Type::Text)
    }

    /// The `i`-th value of enum type `ty`.
    pub fn enum_value(ty: &Type, i: u32) -> Expr {
        let value = match ty {
            Type::Enum(id) => Value::Enum(*id, i),
            _ => Value::Int(i64::from(i)),
        };
        Self::lit(value, ty.clone())
    }

    pub fn binary(op: BinaryOp, l: Expr, r: Expr) -> Expr {
        bin(op, l, r)
    }

    fn fresh(&mut self) -> StmtId {
        self.next_id += 1;
        StmtId(self.next_id - 1)
    }

    /// `msg from(sends…) -> to(binds…)`: each item sends variable `s` and binds `r`.
    pub fn msg(&mut self, from: LifelineId, to: LifelineId, items: &[(VarId, VarId)]) -> Stmt {
        let items = items
            .iter()
            .map(|(s, r)| MsgItem {
                send: self.v(*s),
                recv: Recv::Bind(*r),
            })
            .collect();
        self.msg_items(from, to, items)
    }

    pub fn msg_items(&mut self, from: LifelineId, to: LifelineId, items: Vec<MsgItem>) -> Stmt {
        let id = self.fresh();
        Stmt {
            id,
            span: Span::default(),
            kind: StmtKind::Msg { from, to, items },
        }
    }

    /// `act at: outputs = action(args…)`.
    pub fn call(
        &mut self,
        at: LifelineId,
        outputs: &[VarId],
        action: ActionId,
        args: &[VarId],
    ) -> Stmt {
        let args = args.iter().map(|a| self.v(*a)).collect();
        self.act(
            at,
            outputs.iter().map(|o| Some(*o)).collect(),
            Call::Action { action, args },
        )
    }

    pub fn act(&mut self, at: LifelineId, outputs: Vec<Option<VarId>>, call: Call) -> Stmt {
        let id = self.fresh();
        Stmt {
            id,
            span: Span::default(),
            kind: StmtKind::Act { at, outputs, call },
        }
    }

    pub fn if_(
        &mut self,
        owner: LifelineId,
        guard: Expr,
        then: impl FnOnce(&mut Self) -> Vec<Stmt>,
        otherwise: impl FnOnce(&mut Self) -> Vec<Stmt>,
    ) -> Stmt {
        let id = self.fresh();
        let then = Block { stmts: then(self) };
        let otherwise = Block {
            stmts: otherwise(self),
        };
        Stmt {
            id,
            span: Span::default(),
            kind: StmtKind::If {
                owner,
                guard,
                then,
                otherwise,
            },
        }
    }

    pub fn while_(
        &mut self,
        owner: LifelineId,
        guard: Expr,
        body: impl FnOnce(&mut Self) -> Vec<Stmt>,
        exit: impl FnOnce(&mut Self) -> Vec<Stmt>,
    ) -> Stmt {
        let id = self.fresh();
        let body = Block { stmts: body(self) };
        let exit = Block { stmts: exit(self) };
        Stmt {
            id,
            span: Span::default(),
            kind: StmtKind::While {
                owner,
                guard,
                body,
                exit,
            },
        }
    }

    /// The program with this one workflow.
    pub fn finish(self, body: Vec<Stmt>) -> Program {
        let workflow = Workflow {
            name: self.name,
            span: Span::default(),
            lifelines: self.lifelines,
            vars: self.vars,
            inputs: self.inputs,
            body: Block { stmts: body },
            results: self.results,
            stmt_count: self.next_id,
            imported: false,
            for_each: Vec::new(),
            calls: Vec::new(),
            coregions: Vec::new(),
        };
        Program {
            types: self.types,
            actions: self.actions,
            workflows: vec![workflow],
        }
    }
}

/// The `reviewed_plan` workflow of LANGUAGE.md §3, built by hand, plus a
/// `Bystander` lifeline that takes part only before the loop.
pub fn reviewed_plan() -> Program {
    let mut b = Builder::new("reviewed_plan");
    let user = b.lifeline("User");
    let planner = b.lifeline("Planner");
    let reviewer = b.lifeline("Reviewer");
    let bystander = b.lifeline("Bystander");
    let verdict_ty = b.enum_type("Verdict", &["approve", "revise"]);
    let task_u = b.input("task", user, Type::Text);
    let task_p = b.var("task", planner, Type::Text);
    let plan_p = b.var("plan", planner, Type::Text);
    let plan_r = b.var("plan", reviewer, Type::Text);
    let verdict = b.var("verdict", reviewer, verdict_ty.clone());
    let notes_r = b.var("notes", reviewer, Type::Text);
    let notes_p = b.var("notes", planner, Type::Text);
    let final_plan = b.var("final_plan", user, Type::Text);
    let seen = b.var("seen", bystander, Type::Text);
    b.result(final_plan);
    let make_plan = b.llm(
        "make_plan",
        &[("task", Type::Text)],
        &[("result", Type::Text)],
    );
    let review = b.llm(
        "review_plan",
        &[("plan", Type::Text)],
        &[("verdict", verdict_ty.clone()), ("notes", Type::Text)],
    );
    let body = vec![
        b.msg(user, planner, &[(task_u, task_p)]),
        b.msg(user, bystander, &[(task_u, seen)]),
        b.call(planner, &[plan_p], make_plan, &[task_p]),
        b.msg(planner, reviewer, &[(plan_p, plan_r)]),
        b.call(reviewer, &[verdict, notes_r], review, &[plan_r]),
        b.while_(
            reviewer,
            Builder::binary(
                BinaryOp::Eq,
                b.v(verdict),
                Builder::enum_value(&verdict_ty, 1),
            ),
            |b| {
                vec![
                    b.msg(reviewer, planner, &[(notes_r, notes_p)]),
                    b.call(planner, &[plan_p], make_plan, &[notes_p]),
                    b.msg(planner, reviewer, &[(plan_p, plan_r)]),
                    b.call(reviewer, &[verdict, notes_r], review, &[plan_r]),
                ]
            },
            |b| vec![b.msg(reviewer, user, &[(plan_r, final_plan)])],
        ),
    ];
    b.finish(body)
}
