//! Provenance (value numbering) and the structure of one workflow, computed in
//! one walk and shared by every check.
//!
//! **Values.** Every value a workflow handles is identified by its *origin*
//! ([`Origin`]): a workflow input, an action output (call site + output
//! index), a literal, a field of another value, an `and` of two values, a
//! merge of the values a variable may hold where control flow joins, or any
//! other computation (with the values it reads). Messages (`msg A(x) -> B(y)`),
//! copies (`act A: y = x`) and field reads of the same origin carry the value
//! unchanged: `y` at `B` is the same value as `x` at `A`, and `t.id` of one
//! record origin is one value wherever it is read. Equal [`ValueId`]s mean
//! "certainly the same value" (within one run of the enclosing loop body).
//!
//! **Merges.** After an `if`, a variable bound differently in the two branches
//! holds a fresh merge of both values. At a `while`, every variable the body
//! binds holds, at the head of the loop (so in the guard, the body and the
//! exit block), a merge of its value before the loop and its value at the end
//! of the body. So nothing established inside a loop body about a value
//! survives the loop, and a value bound before the loop and never rebound in
//! it keeps its identity.
//!
//! **Structure.** For every statement, its parent construct and the branch it
//! lies in ([`Branch`]), so a check can tell which guards enclose a call, and
//! [`Flow::path_avoiding`] finds a path to a statement that avoids a set of
//! statements (the witness of an "on every path" property failing).
//!
//! Every statement is visited exactly once, so the walk is linear in the size
//! of the workflow (times the nesting depth for loops).
//!
//! The walk itself (and the control-flow graph it links) is in `walk.rs`;
//! this file holds what the walk produces and the queries the checks ask.

mod walk;

use std::collections::{BTreeSet, HashMap, HashSet};

use troupe_check::ir::{
    ActionId, Block, Expr, LifelineId, Stmt, StmtId, StmtKind, VarId, Workflow,
};
use troupe_check::value::Value;
use troupe_syntax::Span;

/// Index into [`Flow::values`].
pub(crate) type ValueId = usize;

/// The value of an unbound variable (never read in a checked workflow).
pub(crate) const UNBOUND: ValueId = 0;

/// Deeper expressions and value graphs are treated as opaque computations.
const MAX_DEPTH: usize = 64;

/// Where a value comes from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Origin {
    /// No value (a variable not bound yet).
    Unbound,
    /// A workflow input.
    Input(VarId),
    /// Output `index` of the action called by statement `stmt`.
    Output { stmt: StmtId, index: usize },
    /// A literal, by its canonical text.
    Literal(String),
    /// A field of a record value.
    Field(ValueId, u32),
    /// A field of a `Json` value.
    JsonField(ValueId, String),
    /// `a and b`.
    And(ValueId, ValueId),
    /// `not a`.
    Not(ValueId),
    /// The value of `var` where control flow joins at construct `stmt`: an
    /// `if` (operands: then, else) or a `while` (operands: before the loop,
    /// after an iteration).
    Merge {
        stmt: StmtId,
        var: VarId,
        operands: Vec<ValueId>,
    },
    /// Any other computation, with the values it reads.
    Computed { deps: Vec<ValueId> },
}

/// Which part of a construct a statement lies in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Branch {
    /// The `then` block of an `if` (the guard was true).
    Then,
    /// The `else` block of an `if` (the guard was false).
    Else,
    /// The body of a `while` (the guard was true).
    Body,
    /// The `exit` block of a `while` (the guard was false).
    Exit,
}

impl Branch {
    /// Whether the construct's guard is true in this branch.
    pub(crate) fn guard_holds(self) -> bool {
        matches!(self, Branch::Then | Branch::Body)
    }
}

/// One call of a declared action.
#[derive(Debug, Clone)]
pub(crate) struct CallSite<'w> {
    pub stmt: StmtId,
    pub span: Span,
    pub at: LifelineId,
    pub action: ActionId,
    /// The argument expressions as written (trailing optional ones may be left out).
    pub arg_exprs: &'w [Expr],
    /// One value per parameter of the action; a left-out optional argument
    /// is its default literal.
    pub args: Vec<ValueId>,
    /// The variables the outputs bind (`None` for `_`).
    pub outputs: &'w [Option<VarId>],
}

/// A path through a workflow: the branch taken at each construct it passes
/// and the plain statements it executes, in order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Path {
    pub choices: Vec<(StmtId, Branch)>,
    pub passed: Vec<StmtId>,
}

/// Provenance and structure of one workflow.
#[derive(Debug)]
pub(crate) struct Flow<'w> {
    pub workflow: &'w Workflow,
    values: Vec<Origin>,
    interned: HashMap<Origin, ValueId>,
    /// Every call of a declared action, in pre-order.
    pub calls: Vec<CallSite<'w>>,
    call_index: HashMap<StmtId, usize>,
    /// The value of the guard of every `if` and `while`.
    guards: HashMap<StmtId, ValueId>,
    parents: HashMap<StmtId, (StmtId, Branch)>,
    stmts: HashMap<StmtId, &'w Stmt>,
    /// Calls of a `human` action with a `Bool` (confirm) answer.
    confirmations: BTreeSet<StmtId>,
    /// The values the workflow returns, at the end of the body.
    pub results: Vec<(VarId, ValueId)>,
    /// The control-flow graph, backwards: the statements that can run
    /// immediately before each statement (for `if` and `while`, their guard's
    /// evaluation; a `while` is reached again from the end of its body).
    preds: HashMap<StmtId, Vec<StmtId>>,
    /// The control-flow graph, forwards.
    succs: HashMap<StmtId, Vec<StmtId>>,
}

impl<'w> Flow<'w> {
    /// Searches backwards from `from` (excluded) along the control-flow graph
    /// for a statement satisfying `goal`, not passing through statements for
    /// which `blocked` holds: a statement found is one that can run before
    /// `from` with no blocked statement in between. Linear in the workflow.
    pub(crate) fn reaches_back(
        &self,
        from: StmtId,
        blocked: &dyn Fn(StmtId) -> bool,
        goal: &dyn Fn(StmtId) -> bool,
    ) -> Option<StmtId> {
        let mut seen: HashSet<StmtId> = HashSet::new();
        let mut stack: Vec<StmtId> = self.preds.get(&from).cloned().unwrap_or_default();
        while let Some(at) = stack.pop() {
            if !seen.insert(at) {
                continue;
            }
            if goal(at) {
                return Some(at);
            }
            if blocked(at) {
                continue;
            }
            if let Some(preds) = self.preds.get(&at) {
                stack.extend(preds.iter().copied());
            }
        }
        None
    }

    /// Whether `value` having truth value `truth` implies that one of
    /// `targets` (boolean results) equals `equals`: it is a target, an `and`
    /// (when true) with such a conjunct, a `not` of such a value, a merge all
    /// of whose operands are, or a literal that never has this truth value.
    pub(crate) fn implies(
        &self,
        value: ValueId,
        truth: bool,
        targets: &HashSet<ValueId>,
        equals: bool,
    ) -> bool {
        self.implies_at(value, truth, targets, equals, &mut HashSet::new(), 0)
    }

    fn implies_at(
        &self,
        value: ValueId,
        truth: bool,
        targets: &HashSet<ValueId>,
        equals: bool,
        visiting: &mut HashSet<(ValueId, bool)>,
        depth: usize,
    ) -> bool {
        if targets.contains(&value) {
            return truth == equals;
        }
        if depth > MAX_DEPTH {
            return false;
        }
        match self.origin(value) {
            Origin::Literal(text) => (text == FALSE && truth) || (text == TRUE && !truth),
            Origin::And(a, b) if truth => {
                let (a, b) = (*a, *b);
                self.implies_at(a, true, targets, equals, visiting, depth + 1)
                    || self.implies_at(b, true, targets, equals, visiting, depth + 1)
            }
            Origin::Not(inner) => {
                self.implies_at(*inner, !truth, targets, equals, visiting, depth + 1)
            }
            Origin::Merge { operands, .. } => {
                if !visiting.insert((value, truth)) {
                    return true;
                }
                let all = operands.iter().all(|&op| {
                    matches!(self.origin(op), Origin::Unbound)
                        || self.implies_at(op, truth, targets, equals, visiting, depth + 1)
                });
                visiting.remove(&(value, truth));
                all
            }
            _ => false,
        }
    }

    /// The statements that can run after one of `from` (a non-empty path).
    pub(crate) fn reachable_from(&self, from: &BTreeSet<StmtId>) -> HashSet<StmtId> {
        let mut seen: HashSet<StmtId> = HashSet::new();
        let mut stack: Vec<StmtId> = from
            .iter()
            .flat_map(|s| self.succs.get(s).cloned().unwrap_or_default())
            .collect();
        while let Some(at) = stack.pop() {
            if seen.insert(at)
                && let Some(next) = self.succs.get(&at)
            {
                stack.extend(next.iter().copied());
            }
        }
        seen
    }

    /// Whether a question computed from `root` shows the value `target`: it
    /// is `target`, a computation (string format, arithmetic, `and`, `not`)
    /// one of whose inputs shows it, or a merge all of whose operands do; a
    /// shown record shows its fields.
    pub(crate) fn shows(&self, root: ValueId, target: ValueId) -> bool {
        let mut at = target;
        for _ in 0..MAX_DEPTH {
            if self.shows_exactly(root, at, &mut HashSet::new(), 0) {
                return true;
            }
            match self.origin(at) {
                Origin::Field(base, _) | Origin::JsonField(base, _) => at = *base,
                _ => return false,
            }
        }
        false
    }

    fn shows_exactly(
        &self,
        root: ValueId,
        target: ValueId,
        visiting: &mut HashSet<ValueId>,
        depth: usize,
    ) -> bool {
        if root == target {
            return true;
        }
        if depth > MAX_DEPTH || !visiting.insert(root) {
            return false;
        }
        let found = match self.origin(root) {
            Origin::Computed { deps } => deps
                .iter()
                .any(|&d| self.shows_exactly(d, target, visiting, depth + 1)),
            Origin::And(a, b) => {
                let (a, b) = (*a, *b);
                self.shows_exactly(a, target, visiting, depth + 1)
                    || self.shows_exactly(b, target, visiting, depth + 1)
            }
            Origin::Not(a) => self.shows_exactly(*a, target, visiting, depth + 1),
            Origin::Merge { operands, .. } => {
                let operands: Vec<ValueId> = operands
                    .iter()
                    .copied()
                    .filter(|&op| op != root && !matches!(self.origin(op), Origin::Unbound))
                    .collect();
                !operands.is_empty()
                    && operands
                        .iter()
                        .all(|&op| self.shows_exactly(op, target, visiting, depth + 1))
            }
            _ => false,
        };
        visiting.remove(&root);
        found
    }

    fn intern(&mut self, origin: Origin) -> ValueId {
        if let Some(&id) = self.interned.get(&origin) {
            return id;
        }
        let id = self.values.len();
        self.values.push(origin.clone());
        self.interned.insert(origin, id);
        id
    }

    fn fresh(&mut self, origin: Origin) -> ValueId {
        self.values.push(origin);
        self.values.len() - 1
    }

    /// The origin of a value.
    pub(crate) fn origin(&self, value: ValueId) -> &Origin {
        self.values.get(value).unwrap_or(&Origin::Unbound)
    }

    /// The value of an already numbered origin (outputs, fields, literals).
    pub(crate) fn lookup(&self, origin: &Origin) -> Option<ValueId> {
        self.interned.get(origin).copied()
    }

    /// The statement with this id.
    pub(crate) fn stmt(&self, id: StmtId) -> Option<&'w Stmt> {
        self.stmts.get(&id).copied()
    }

    /// The call made by statement `id`, if it calls a declared action.
    pub(crate) fn call(&self, id: StmtId) -> Option<&CallSite<'w>> {
        self.call_index.get(&id).map(|&i| &self.calls[i])
    }

    /// The calls made before call `id` in pre-order, nearest first.
    pub(crate) fn calls_before(&self, id: StmtId) -> impl Iterator<Item = &CallSite<'w>> {
        let end = self.call_index.get(&id).copied().unwrap_or(0);
        self.calls[..end].iter().rev()
    }

    /// The value of the guard of the `if` or `while` `id`.
    pub(crate) fn guard(&self, id: StmtId) -> Option<ValueId> {
        self.guards.get(&id).copied()
    }

    /// Every `if` and `while`, with its guard value, in pre-order.
    pub(crate) fn guards(&self) -> Vec<(StmtId, ValueId)> {
        let mut all: Vec<_> = self.guards.iter().map(|(&s, &v)| (s, v)).collect();
        all.sort();
        all
    }

    /// Calls of a person's confirmation (a `human` action answered yes/no).
    pub(crate) fn confirmations(&self) -> &BTreeSet<StmtId> {
        &self.confirmations
    }

    /// The constructs enclosing `id`, innermost first, with the branch `id` lies in.
    pub(crate) fn ancestors(&self, id: StmtId) -> Vec<(StmtId, Branch)> {
        let mut out = Vec::new();
        let mut at = id;
        while let Some(&(parent, branch)) = self.parents.get(&at) {
            out.push((parent, branch));
            at = parent;
            if out.len() > self.stmts.len() {
                break; // cannot happen in a tree; guards against a malformed IR
            }
        }
        out
    }

    /// Whether `inner` lies inside construct `outer`.
    pub(crate) fn encloses(&self, outer: StmtId, inner: StmtId) -> bool {
        self.ancestors(inner).iter().any(|&(s, _)| s == outer)
    }

    /// The action-output statements `value` is computed from (through
    /// messages, copies, fields, merges and computations, not through the
    /// calls themselves).
    pub(crate) fn sources(&self, value: ValueId) -> BTreeSet<StmtId> {
        let mut out = BTreeSet::new();
        let mut seen = HashSet::new();
        let mut stack = vec![value];
        while let Some(v) = stack.pop() {
            if !seen.insert(v) {
                continue;
            }
            match self.origin(v) {
                Origin::Output { stmt, .. } => {
                    out.insert(*stmt);
                }
                Origin::Unbound | Origin::Input(_) | Origin::Literal(_) => {}
                Origin::Field(base, _) | Origin::JsonField(base, _) | Origin::Not(base) => {
                    stack.push(*base)
                }
                Origin::And(a, b) => stack.extend([*a, *b]),
                Origin::Merge { operands, .. } => stack.extend(operands.iter().copied()),
                Origin::Computed { deps } => stack.extend(deps.iter().copied()),
            }
        }
        out
    }

    /// Whether a true `value` implies that a person confirmed: it is the
    /// answer of a confirmation (or `answer == true`), an `and` with such a
    /// conjunct, the literal `false` (never true), or a merge all of whose
    /// operands are.
    pub(crate) fn is_confirmation(&self, value: ValueId) -> bool {
        self.confirmed(value, &mut HashSet::new(), 0)
    }

    fn confirmed(&self, value: ValueId, visiting: &mut HashSet<ValueId>, depth: usize) -> bool {
        if depth > MAX_DEPTH {
            return false;
        }
        match self.origin(value) {
            Origin::Output { stmt, index } => *index == 0 && self.confirmations.contains(stmt),
            // Never true: a branch it guards never runs.
            Origin::Literal(text) => text == FALSE,
            Origin::And(a, b) => {
                let (a, b) = (*a, *b);
                self.confirmed(a, visiting, depth + 1) || self.confirmed(b, visiting, depth + 1)
            }
            Origin::Merge { operands, .. } => {
                if !visiting.insert(value) {
                    return true; // a loop back to itself adds no other origin
                }
                let all = operands.iter().all(|&op| {
                    matches!(self.origin(op), Origin::Unbound)
                        || self.confirmed(op, visiting, depth + 1)
                });
                visiting.remove(&value);
                all
            }
            _ => false,
        }
    }

    /// Whether a false `value` implies that a person confirmed: it is
    /// `not c` for a confirmation `c`.
    pub(crate) fn is_negated_confirmation(&self, value: ValueId) -> bool {
        matches!(self.origin(value), Origin::Not(inner) if self.is_confirmation(*inner))
    }

    /// Whether the branch `branch` of construct `stmt` runs only after a
    /// person confirmed (its guard is a confirmation and true there, or a
    /// negated confirmation and false there).
    pub(crate) fn confirms(&self, stmt: StmtId, branch: Branch) -> bool {
        self.guard(stmt).is_some_and(|g| {
            if branch.guard_holds() {
                self.is_confirmation(g)
            } else {
                self.is_negated_confirmation(g)
            }
        })
    }

    /// Why a true `value` does not imply a confirmation although a
    /// confirmation flows into it: the merge (construct, variable, operand
    /// index) through which another value gets in, if there is one.
    pub(crate) fn unconfirmed_merge(&self, value: ValueId) -> Option<(StmtId, VarId, usize)> {
        let mut seen = HashSet::new();
        let mut stack = vec![(value, 0usize)];
        while let Some((v, depth)) = stack.pop() {
            if depth > MAX_DEPTH || !seen.insert(v) {
                continue;
            }
            match self.origin(v) {
                Origin::Merge {
                    stmt,
                    var,
                    operands,
                } => {
                    let bad = operands.iter().position(|&op| {
                        !matches!(self.origin(op), Origin::Unbound)
                            && !matches!(self.origin(op), Origin::Literal(t) if t == FALSE)
                            && !self.is_confirmation(op)
                    });
                    let confirmed_elsewhere = operands.iter().any(|&op| self.is_confirmation(op));
                    if let (Some(i), true) = (bad, confirmed_elsewhere) {
                        return Some((*stmt, *var, i));
                    }
                    stack.extend(operands.iter().map(|&op| (op, depth + 1)));
                }
                Origin::And(a, b) => stack.extend([(*a, depth + 1), (*b, depth + 1)]),
                Origin::Not(a) => stack.push((*a, depth + 1)),
                _ => {}
            }
        }
        None
    }

    /// A path from the start of the workflow to `target` (excluded) that
    /// executes no statement for which `blocked` holds, or `None` when every
    /// path does. Constructs count as executed when their guard is evaluated
    /// (every construct on the path, including those enclosing `target`).
    /// A loop not enclosing `target` is passed with zero iterations; one
    /// enclosing it, in its first iteration. This is exactly the set of paths
    /// a must-analysis intersects over (facts established by a loop body do
    /// not survive the loop).
    pub(crate) fn path_avoiding(
        &self,
        target: StmtId,
        blocked: &dyn Fn(StmtId) -> bool,
    ) -> Option<Path> {
        let branches: HashMap<StmtId, Branch> = self.ancestors(target).into_iter().collect();
        let mut path = Path::default();
        match self.reach(
            &self.workflow.body,
            target,
            &branches,
            blocked,
            &mut path,
            0,
        ) {
            Reach::Target => Some(path),
            Reach::End | Reach::Blocked => None,
        }
    }

    fn reach(
        &self,
        block: &Block,
        target: StmtId,
        branches: &HashMap<StmtId, Branch>,
        blocked: &dyn Fn(StmtId) -> bool,
        path: &mut Path,
        depth: usize,
    ) -> Reach {
        for stmt in &block.stmts {
            if stmt.id == target {
                return Reach::Target;
            }
            if let Some(&branch) = branches.get(&stmt.id) {
                if blocked(stmt.id) {
                    return Reach::Blocked;
                }
                let inner = match (&stmt.kind, branch) {
                    (StmtKind::If { then, .. }, Branch::Then) => then,
                    (StmtKind::If { otherwise, .. }, Branch::Else) => otherwise,
                    (StmtKind::While { body, .. }, Branch::Body) => body,
                    (StmtKind::While { exit, .. }, Branch::Exit) => exit,
                    _ => return Reach::Blocked,
                };
                path.choices.push((stmt.id, branch));
                return self.reach(inner, target, branches, blocked, path, depth + 1);
            }
            if !self.pass(stmt, blocked, path, depth) {
                return Reach::Blocked;
            }
        }
        Reach::End
    }

    /// Extends `path` through `stmt` (which does not enclose the target)
    /// without executing a blocked statement; false if impossible.
    fn pass(
        &self,
        stmt: &Stmt,
        blocked: &dyn Fn(StmtId) -> bool,
        path: &mut Path,
        depth: usize,
    ) -> bool {
        if blocked(stmt.id) || depth > 4 * MAX_DEPTH {
            return false;
        }
        let through = |block: &Block, path: &mut Path| {
            block
                .stmts
                .iter()
                .all(|s| self.pass(s, blocked, path, depth + 1))
        };
        match &stmt.kind {
            StmtKind::Msg { .. } | StmtKind::Act { .. } => {
                path.passed.push(stmt.id);
                true
            }
            StmtKind::If {
                then, otherwise, ..
            } => {
                let mark = (path.choices.len(), path.passed.len());
                path.choices.push((stmt.id, Branch::Then));
                if through(then, path) {
                    return true;
                }
                path.choices.truncate(mark.0);
                path.passed.truncate(mark.1);
                path.choices.push((stmt.id, Branch::Else));
                through(otherwise, path)
            }
            StmtKind::While { exit, .. } => {
                path.choices.push((stmt.id, Branch::Exit));
                through(exit, path)
            }
            // Every branch runs: the path passes them all.
            StmtKind::Par { branches } => branches.iter().all(|b| through(b, path)),
        }
    }
}

enum Reach {
    Target,
    End,
    Blocked,
}

/// The canonical text of the literal `false`.
const FALSE: &str = "Bool(false)";
/// The canonical text of the literal `true`.
const TRUE: &str = "Bool(true)";

fn literal_key(value: &Value) -> String {
    format!("{value:?}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use troupe_check::ir::Program;

    fn program(text: &str) -> Program {
        let (program, diagnostics) = troupe_check::check_text(text);
        program.unwrap_or_else(|| panic!("{diagnostics:#?}"))
    }

    const DECLS: &str = r#"
        record R { id: Text, n: Int }
        effect get(x: Text) -> R extern
        effect use2(a: Text, b: Text) extern
        human ok(x: Text) -> Bool { ask: "ok {x}?" }
    "#;

    fn flow_of(program: &Program) -> Flow<'_> {
        Flow::analyse(program, &program.workflows[0])
    }

    #[test]
    fn messages_copies_and_fields_keep_the_value() {
        let p = program(&format!(
            "{DECLS}
            workflow w(x: Text @ A) {{
              act A: r = get(x)
              msg A(r) -> B(r2)
              act B: i = r2.id
              msg B(i) -> A(j)
              act A: use2(r.id, j)
              act A: k = x + \"\"
              act A: use2(x, k)
            }}"
        ));
        let flow = flow_of(&p);
        let first = &flow.calls[1].args;
        assert_eq!(first[0], first[1], "r.id at A is r2.id at B");
        let second = &flow.calls[2].args;
        assert_ne!(second[0], second[1], "a computation is another value");
        assert!(flow.sources(second[1]).is_empty());
    }

    #[test]
    fn branches_merge_and_loops_rename() {
        let p = program(&format!(
            "{DECLS}
            workflow w(x: Text @ A, y: Text @ A, c: Bool @ A) {{
              act A: v = x
              if c @ A {{ act A: v = y }}
              act A: use2(v, x)
              act A: u = x
              while c @ A {{ act A: use2(u, x) act A: u = y }}
              act A: use2(u, x)
            }}"
        ));
        let flow = flow_of(&p);
        let merged = flow.calls[0].args[0];
        assert!(
            matches!(flow.origin(merged), Origin::Merge { operands, .. } if operands.len() == 2)
        );
        let in_loop = flow.calls[1].args[0];
        let after = flow.calls[2].args[0];
        assert_eq!(
            in_loop, after,
            "the loop's merge holds in the body and after"
        );
        assert_ne!(in_loop, flow.calls[1].args[1]);
    }

    #[test]
    fn recognises_confirmations() {
        let p = program(&format!(
            "{DECLS}
            workflow w(x: Text @ A, c: Bool @ A) {{
              msg A(x) -> B(x)
              act B: yes = ok(x)
              msg B(yes) -> A(yes)
              if yes and c @ A {{ act A: use2(x, x) }}
              if c or yes @ A {{ act A: use2(x, x) }}
              if yes == true @ A {{ act A: use2(x, x) }}
              if not yes @ A {{ act A: use2(x, x) }}
            }}"
        ));
        let flow = flow_of(&p);
        let verdicts: Vec<bool> = flow
            .guards()
            .iter()
            .map(|&(_, g)| flow.is_confirmation(g))
            .collect();
        assert_eq!(verdicts, vec![true, false, true, false]);
    }

    #[test]
    fn finds_a_path_around_blocked_statements() {
        let p = program(&format!(
            "{DECLS}
            workflow w(x: Text @ A, c: Bool @ A) {{
              if c @ A {{ act A: use2(x, x) }} else {{ act A: use2(x, \"b\") }}
              act A: use2(\"t\", x)
            }}"
        ));
        let flow = flow_of(&p);
        let target = flow.calls[2].stmt;
        let first = flow.calls[0].stmt;
        let second = flow.calls[1].stmt;
        let path = flow.path_avoiding(target, &|s| s == first).unwrap();
        assert_eq!(path.choices[0].1, Branch::Else);
        assert!(
            flow.path_avoiding(target, &|s| s == first || s == second)
                .is_none()
        );
    }
}
