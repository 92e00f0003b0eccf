//! The one walk over a workflow that builds its [`Flow`]: value numbering
//! of every variable through messages, copies, calls, branches and loops,
//! the parent of every statement, and the control-flow graph. Apart from
//! `flow.rs` (what the walk produces and the queries the checks ask) so that
//! each reads on its own: the checks never call into the walk.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use troupe_check::ir::{
    ActionId, ActionKind, AnswerKind, BinaryOp, Block, Call, Expr, ExprKind, LifelineId, Program,
    Recv, Stmt, StmtId, StmtKind, UnaryOp, VarId, Workflow,
};
use troupe_check::value::Value;

use super::{Branch, CallSite, Flow, MAX_DEPTH, Origin, UNBOUND, ValueId, literal_key};

impl<'w> Flow<'w> {
    /// Walks `workflow` once.
    pub(crate) fn analyse(program: &'w Program, workflow: &'w Workflow) -> Flow<'w> {
        let mut walker = Walker {
            program,
            env: Vec::new(),
            log: Vec::new(),
            flow: Flow {
                workflow,
                values: Vec::new(),
                interned: HashMap::new(),
                calls: Vec::new(),
                call_index: HashMap::new(),
                guards: HashMap::new(),
                parents: HashMap::new(),
                stmts: HashMap::new(),
                confirmations: BTreeSet::new(),
                results: Vec::new(),
                preds: HashMap::new(),
                succs: HashMap::new(),
            },
        };
        let unbound = walker.flow.intern(Origin::Unbound);
        debug_assert_eq!(unbound, UNBOUND);
        for &input in &workflow.inputs {
            let v = walker.flow.intern(Origin::Input(input));
            walker.assign(input, v);
        }
        walker.block(&workflow.body, None);
        let results = workflow
            .results
            .iter()
            .map(|&var| (var, walker.get(var)))
            .collect();
        walker.flow.results = results;
        let mut succs: Vec<(StmtId, StmtId)> = Vec::new();
        link(&workflow.body, None, &mut succs, 0);
        for (from, to) in succs {
            walker.flow.preds.entry(to).or_default().push(from);
            walker.flow.succs.entry(from).or_default().push(to);
        }
        walker.flow
    }
}

struct Walker<'w> {
    program: &'w Program,
    /// The current value of every variable.
    env: Vec<ValueId>,
    /// Undo log: (variable, previous value).
    log: Vec<(VarId, ValueId)>,
    flow: Flow<'w>,
}

impl<'w> Walker<'w> {
    fn get(&self, var: VarId) -> ValueId {
        self.env.get(var.0 as usize).copied().unwrap_or(UNBOUND)
    }

    fn assign(&mut self, var: VarId, value: ValueId) {
        let i = var.0 as usize;
        if i >= self.env.len() {
            self.env.resize(i + 1, UNBOUND);
        }
        self.log.push((var, self.env[i]));
        self.env[i] = value;
    }

    fn undo(&mut self, mark: usize) {
        while self.log.len() > mark {
            if let Some((var, old)) = self.log.pop() {
                self.env[var.0 as usize] = old;
            }
        }
    }

    /// The variables assigned since `mark`, with their current values.
    fn changed_since(&self, mark: usize) -> BTreeMap<VarId, ValueId> {
        self.log
            .get(mark..)
            .unwrap_or_default()
            .iter()
            .map(|&(var, _)| (var, self.get(var)))
            .collect()
    }

    fn block(&mut self, block: &'w Block, parent: Option<(StmtId, Branch)>) {
        for stmt in &block.stmts {
            self.flow.stmts.insert(stmt.id, stmt);
            if let Some(parent) = parent {
                self.flow.parents.insert(stmt.id, parent);
            }
            self.stmt(stmt);
        }
    }

    fn stmt(&mut self, stmt: &'w Stmt) {
        match &stmt.kind {
            StmtKind::Msg { items, .. } => {
                for item in items {
                    let v = self.value(&item.send, 0);
                    if let Recv::Bind(var) = item.recv {
                        self.assign(var, v);
                    }
                }
            }
            StmtKind::Act { at, outputs, call } => match call {
                Call::Action { action, args } => self.call(stmt, *at, outputs, *action, args),
                Call::Expr(expr) => {
                    let v = self.value(expr, 0);
                    for (i, out) in outputs.iter().enumerate() {
                        let value = if i == 0 {
                            v
                        } else {
                            self.flow.fresh(Origin::Computed { deps: vec![v] })
                        };
                        if let Some(var) = out {
                            self.assign(*var, value);
                        }
                    }
                }
            },
            StmtKind::If {
                guard,
                then,
                otherwise,
                ..
            } => {
                let g = self.value(guard, 0);
                self.flow.guards.insert(stmt.id, g);
                let mark = self.log.len();
                self.block(then, Some((stmt.id, Branch::Then)));
                let then_values = self.changed_since(mark);
                self.undo(mark);
                self.block(otherwise, Some((stmt.id, Branch::Else)));
                let else_values = self.changed_since(mark);
                self.undo(mark);
                let vars: BTreeSet<VarId> = then_values
                    .keys()
                    .chain(else_values.keys())
                    .copied()
                    .collect();
                for var in vars {
                    let before = self.get(var);
                    let t = then_values.get(&var).copied().unwrap_or(before);
                    let e = else_values.get(&var).copied().unwrap_or(before);
                    let merged = if t == e {
                        t
                    } else {
                        self.flow.fresh(Origin::Merge {
                            stmt: stmt.id,
                            var,
                            operands: vec![t, e],
                        })
                    };
                    self.assign(var, merged);
                }
            }
            StmtKind::While {
                guard, body, exit, ..
            } => {
                let mut phis = Vec::new();
                for var in assigned_vars(body) {
                    let before = self.get(var);
                    let phi = self.flow.fresh(Origin::Merge {
                        stmt: stmt.id,
                        var,
                        operands: vec![before],
                    });
                    self.assign(var, phi);
                    phis.push((var, phi));
                }
                let g = self.value(guard, 0);
                self.flow.guards.insert(stmt.id, g);
                let mark = self.log.len();
                self.block(body, Some((stmt.id, Branch::Body)));
                for &(var, phi) in &phis {
                    let end = self.get(var);
                    if let Some(Origin::Merge { operands, .. }) = self.flow.values.get_mut(phi) {
                        operands.push(end);
                    }
                }
                self.undo(mark);
                self.block(exit, Some((stmt.id, Branch::Exit)));
            }
            // The branches share no variable one of them writes, so their
            // values do not depend on the order; they are read in order.
            StmtKind::Par { branches } => {
                // Its statements are where the `par` is.
                let parent = self.flow.parents.get(&stmt.id).copied();
                for b in branches {
                    self.block(b, parent);
                }
            }
        }
    }

    fn call(
        &mut self,
        stmt: &'w Stmt,
        at: LifelineId,
        outputs: &'w [Option<VarId>],
        action_id: ActionId,
        arg_exprs: &'w [Expr],
    ) {
        let mut args: Vec<ValueId> = arg_exprs.iter().map(|e| self.value(e, 0)).collect();
        let action = self.program.actions.get(action_id.0 as usize);
        if let Some(action) = action {
            for i in args.len()..action.params.len() {
                let default = match &action.kind {
                    ActionKind::Tool(tool) => tool.defaults.get(i).cloned().flatten(),
                    _ => None,
                };
                let v = match default {
                    Some(d) => self.flow.intern(Origin::Literal(literal_key(&d))),
                    None => UNBOUND,
                };
                args.push(v);
            }
            if let ActionKind::Human(human) = &action.kind
                && human.answer == AnswerKind::Confirm
            {
                self.flow.confirmations.insert(stmt.id);
            }
        }
        for (index, out) in outputs.iter().enumerate() {
            let v = self.flow.intern(Origin::Output {
                stmt: stmt.id,
                index,
            });
            if let Some(var) = out {
                self.assign(*var, v);
            }
        }
        self.flow.call_index.insert(stmt.id, self.flow.calls.len());
        self.flow.calls.push(CallSite {
            stmt: stmt.id,
            span: stmt.span,
            at,
            action: action_id,
            arg_exprs,
            args,
            outputs,
        });
    }

    /// The value of an expression evaluated with the current bindings.
    fn value(&mut self, expr: &Expr, depth: usize) -> ValueId {
        if depth > MAX_DEPTH {
            return self.computed(expr);
        }
        match &expr.kind {
            ExprKind::Lit(v) => self.flow.intern(Origin::Literal(literal_key(v))),
            ExprKind::Var(var) => self.get(*var),
            ExprKind::Field(base, index) => {
                let b = self.value(base, depth + 1);
                self.flow.intern(Origin::Field(b, *index))
            }
            ExprKind::JsonField(base, name) => {
                let b = self.value(base, depth + 1);
                self.flow.intern(Origin::JsonField(b, name.clone()))
            }
            ExprKind::Binary(BinaryOp::And, a, b) => {
                let a = self.value(a, depth + 1);
                let b = self.value(b, depth + 1);
                self.flow.intern(Origin::And(a, b))
            }
            ExprKind::Unary(UnaryOp::Not, inner) => {
                let v = self.value(inner, depth + 1);
                self.flow.intern(Origin::Not(v))
            }
            ExprKind::Binary(BinaryOp::Eq, a, b) if is_true(b) => self.value(a, depth + 1),
            ExprKind::Binary(BinaryOp::Eq, a, b) if is_true(a) => self.value(b, depth + 1),
            _ => self.computed(expr),
        }
    }

    /// An opaque computation reading the variables of `expr`.
    fn computed(&mut self, expr: &Expr) -> ValueId {
        // A causal view (`seen`) reads another event's value: no variable
        // of this flow.
        let mut vars = Vec::new();
        expr.visit(&mut |e| {
            if let ExprKind::Var(var) = e.kind {
                vars.push(var);
            }
        });
        let mut deps: Vec<_> = vars.into_iter().map(|v| self.get(v)).collect();
        deps.sort_unstable();
        deps.dedup();
        self.flow.fresh(Origin::Computed { deps })
    }
}

fn is_true(expr: &Expr) -> bool {
    matches!(expr.kind, ExprKind::Lit(Value::Bool(true)))
}

/// Records the control-flow edges of `block`, whose end continues at `next`
/// (`None`: the end of the workflow); returns the block's first statement
/// (`next` for an empty block).
fn link(
    block: &Block,
    next: Option<StmtId>,
    edges: &mut Vec<(StmtId, StmtId)>,
    depth: usize,
) -> Option<StmtId> {
    let mut next = next;
    if depth > 4 * MAX_DEPTH {
        return next;
    }
    for stmt in block.stmts.iter().rev() {
        let targets: Vec<Option<StmtId>> = match &stmt.kind {
            StmtKind::Msg { .. } | StmtKind::Act { .. } => vec![next],
            StmtKind::If {
                then, otherwise, ..
            } => vec![
                link(then, next, edges, depth + 1),
                link(otherwise, next, edges, depth + 1),
            ],
            StmtKind::While { body, exit, .. } => vec![
                link(body, Some(stmt.id), edges, depth + 1),
                link(exit, next, edges, depth + 1),
            ],
            // The branches in order, the last one continuing at `next`.
            StmtKind::Par { branches } => {
                let mut after = next;
                for b in branches.iter().rev() {
                    after = link(b, after, edges, depth + 1);
                }
                vec![after]
            }
        };
        edges.extend(targets.into_iter().flatten().map(|to| (stmt.id, to)));
        next = Some(stmt.id);
    }
    next
}

/// Every variable a block binds, at any depth.
fn assigned_vars(block: &Block) -> BTreeSet<VarId> {
    let mut out = BTreeSet::new();
    let mut stack = vec![block];
    while let Some(b) = stack.pop() {
        for stmt in &b.stmts {
            match &stmt.kind {
                StmtKind::Msg { items, .. } => {
                    out.extend(items.iter().filter_map(|i| match i.recv {
                        Recv::Bind(var) => Some(var),
                        _ => None,
                    }))
                }
                StmtKind::Act { outputs, .. } => out.extend(outputs.iter().flatten().copied()),
                StmtKind::If {
                    then, otherwise, ..
                } => stack.extend([then, otherwise]),
                StmtKind::While { body, exit, .. } => stack.extend([body, exit]),
                StmtKind::Par { branches } => stack.extend(branches.iter()),
            }
        }
    }
    out
}
