//! The canonical printer of IR statements and expressions, in surface syntax.
//!
//! One printer serves three purposes: the input of control-tag hashing (so it
//! must be deterministic and ignore spans), the text rendering of local programs,
//! and the labels of sequence charts. It never panics on ids that are out of
//! range; it prints `?kind#n` for them instead, so a malformed IR still renders.

use std::borrow::Cow;
use std::fmt::Write as _;
use troupe_check::Value;
use troupe_check::ir::{
    ActionId, BinaryOp, Block, Call, Expr, ExprKind, FormatPart, Formula, LifelineId, MsgItem,
    Program, Recv, Stmt, StmtKind, UnaryOp, VarId, Workflow,
};
use troupe_check::types::Type;

/// Resolves ids of one workflow to the names people wrote.
#[derive(Debug, Clone, Copy)]
pub struct Names<'a> {
    pub program: &'a Program,
    pub workflow: &'a Workflow,
}

impl<'a> Names<'a> {
    pub fn new(program: &'a Program, workflow: &'a Workflow) -> Self {
        Names { program, workflow }
    }

    pub fn lifeline(&self, id: LifelineId) -> Cow<'a, str> {
        match self.workflow.lifelines.get(id.0 as usize) {
            Some(l) => Cow::Borrowed(l.name.as_str()),
            None => Cow::Owned(format!("?lifeline#{}", id.0)),
        }
    }

    pub fn var(&self, id: VarId) -> Cow<'a, str> {
        match self.workflow.vars.get(id.0 as usize) {
            Some(v) => Cow::Borrowed(v.name.as_str()),
            None => Cow::Owned(format!("?var#{}", id.0)),
        }
    }

    pub fn action(&self, id: ActionId) -> Cow<'a, str> {
        match self.program.actions.get(id.0 as usize) {
            Some(a) => Cow::Borrowed(a.name.as_str()),
            None => Cow::Owned(format!("?action#{}", id.0)),
        }
    }

    /// `e` in surface syntax, with the fewest parentheses that keep its structure.
    pub fn expr(&self, e: &Expr) -> String {
        let mut out = String::new();
        self.write_expr(&mut out, e, 0);
        out
    }

    pub fn write_expr(&self, out: &mut String, e: &Expr, min_prec: u8) {
        match &e.kind {
            ExprKind::Lit(v) => self.write_value(out, v),
            ExprKind::Var(v) => out.push_str(&self.var(*v)),
            ExprKind::Field(inner, i) => {
                self.write_expr(out, inner, ATOM);
                out.push('.');
                match &inner.ty {
                    Type::Record(r) => {
                        let name = self
                            .program
                            .types
                            .records
                            .get(r.0 as usize)
                            .and_then(|d| d.fields.get(*i as usize))
                            .map(|(n, _)| n.as_str());
                        match name {
                            Some(n) => out.push_str(n),
                            None => {
                                let _ = write!(out, "?field#{i}");
                            }
                        }
                    }
                    _ => {
                        let _ = write!(out, "?field#{i}");
                    }
                }
            }
            ExprKind::JsonField(inner, name) => {
                self.write_expr(out, inner, ATOM);
                out.push('.');
                out.push_str(name);
            }
            ExprKind::Unary(op, inner) => {
                // Unary operands are parenthesised unless atomic: whether `not`
                // binds tighter than `==` differs between languages, and a
                // reader should not have to know.
                let wrap = min_prec > UNARY;
                if wrap {
                    out.push('(');
                }
                out.push_str(match op {
                    UnaryOp::Not => "not ",
                    UnaryOp::Neg => "-",
                });
                self.write_expr(out, inner, ATOM);
                if wrap {
                    out.push(')');
                }
            }
            ExprKind::Binary(op, l, r) => {
                let p = binary_prec(*op);
                let wrap = p < min_prec;
                if wrap {
                    out.push('(');
                }
                // Comparisons do not chain, the others associate to the left.
                let (lp, rp) = if p == CMP { (p + 1, p + 1) } else { (p, p + 1) };
                self.write_expr(out, l, lp);
                out.push(' ');
                out.push_str(op.symbol());
                out.push(' ');
                self.write_expr(out, r, rp);
                if wrap {
                    out.push(')');
                }
            }
            ExprKind::List(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    self.write_expr(out, item, 0);
                }
                out.push(']');
            }
            ExprKind::Format(parts) => {
                out.push('"');
                for part in parts {
                    match part {
                        FormatPart::Text(t) => escape_text(out, t),
                        FormatPart::Expr(e) => {
                            out.push('{');
                            self.write_expr(out, e, 0);
                            out.push('}');
                        }
                    }
                }
                out.push('"');
            }
            ExprKind::Len(list) => {
                out.push_str("len(");
                self.write_expr(out, list, 0);
                out.push(')');
            }
            ExprKind::Index(list, index) => {
                self.write_expr(out, list, ATOM);
                out.push('[');
                self.write_expr(out, index, 0);
                out.push(']');
            }
            ExprKind::Seen(lifeline, var) => {
                let _ = write!(out, "seen({}).{}", self.lifeline(*lifeline), self.var(*var));
            }
            ExprKind::Cpl(f) => self.write_formula(out, f, min_prec),
        }
    }

    /// A causal guard in surface syntax (LANGUAGE.md §7): connectives as in
    /// expressions, the causal forms as calls.
    pub fn write_formula(&self, out: &mut String, f: &Formula, min_prec: u8) {
        let call =
            |out: &mut String, name: &str, args: &[&Formula], lifeline: Option<LifelineId>| {
                out.push_str(name);
                out.push('(');
                if let Some(l) = lifeline {
                    out.push_str(&self.lifeline(l));
                    if !args.is_empty() {
                        out.push_str(", ");
                    }
                }
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    self.write_formula(out, a, 0);
                }
                out.push(')');
            };
        match f {
            Formula::Atom(e) => self.write_expr(out, e, min_prec),
            Formula::On(l) => call(out, "on", &[], Some(*l)),
            Formula::Prev(a) => call(out, "prev", &[a], None),
            Formula::Once(a) => call(out, "once", &[a], None),
            Formula::Since(a, b) => call(out, "since", &[a, b], None),
            Formula::At(l, a) => call(out, "at", &[a], Some(*l)),
            Formula::Not(a) => {
                let wrap = min_prec > UNARY;
                if wrap {
                    out.push('(');
                }
                out.push_str("not ");
                self.write_formula(out, a, ATOM);
                if wrap {
                    out.push(')');
                }
            }
            Formula::And(a, b) | Formula::Or(a, b) => {
                let (p, word) = match f {
                    Formula::And(..) => (binary_prec(BinaryOp::And), " and "),
                    _ => (binary_prec(BinaryOp::Or), " or "),
                };
                let wrap = p < min_prec;
                if wrap {
                    out.push('(');
                }
                self.write_formula(out, a, p);
                out.push_str(word);
                self.write_formula(out, b, p + 1);
                if wrap {
                    out.push(')');
                }
            }
        }
    }

    pub fn value(&self, v: &Value) -> String {
        let mut out = String::new();
        self.write_value(&mut out, v);
        out
    }

    pub fn write_value(&self, out: &mut String, v: &Value) {
        match v {
            Value::Bool(b) => {
                let _ = write!(out, "{b}");
            }
            Value::Int(n) => {
                let _ = write!(out, "{n}");
            }
            Value::Float(x) => {
                // `{:?}` keeps a decimal point (`1.0`), so a float never reads as an Int.
                let _ = write!(out, "{x:?}");
            }
            Value::Text(s) => {
                out.push('"');
                escape_text(out, s);
                out.push('"');
            }
            Value::Enum(id, i) => {
                let name = self
                    .program
                    .types
                    .enums
                    .get(id.0 as usize)
                    .and_then(|d| d.values.get(*i as usize));
                match name {
                    Some(n) => out.push_str(n),
                    None => {
                        let _ = write!(out, "?enum#{}.{i}", id.0);
                    }
                }
            }
            Value::Record(id, fields) => {
                let def = self.program.types.records.get(id.0 as usize);
                out.push_str(def.map_or("?record", |d| d.name.as_str()));
                out.push_str(" { ");
                for (i, f) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    match def.and_then(|d| d.fields.get(i)) {
                        Some((n, _)) => out.push_str(n),
                        None => {
                            let _ = write!(out, "?field#{i}");
                        }
                    }
                    out.push_str(": ");
                    self.write_value(out, f);
                }
                out.push_str(" }");
            }
            Value::List(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    self.write_value(out, item);
                }
                out.push(']');
            }
            Value::Json(j) => {
                let _ = write!(out, "{j}");
            }
        }
    }

    /// A receiver item: the bound variable, `_`, or the required literal.
    pub fn recv(&self, r: &Recv) -> String {
        match r {
            Recv::Bind(v) => self.var(*v).into_owned(),
            Recv::Discard => "_".to_owned(),
            Recv::Literal(v) => self.value(v),
        }
    }

    /// `y1, y2 = f(x)`, `f(x)` or `y = expr`.
    pub fn act(&self, outputs: &[Option<VarId>], call: &Call) -> String {
        let mut out = String::new();
        if !outputs.is_empty() {
            for (i, o) in outputs.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                match o {
                    Some(v) => out.push_str(&self.var(*v)),
                    None => out.push('_'),
                }
            }
            out.push_str(" = ");
        }
        self.write_call(&mut out, call);
        out
    }

    pub fn write_call(&self, out: &mut String, call: &Call) {
        match call {
            Call::Action { action, args } => {
                out.push_str(&self.action(*action));
                out.push('(');
                self.write_list(out, args);
                out.push(')');
            }
            Call::Expr(e) => self.write_expr(out, e, 0),
        }
    }

    pub fn exprs(&self, items: &[Expr]) -> String {
        let mut out = String::new();
        self.write_list(&mut out, items);
        out
    }

    fn write_list(&self, out: &mut String, items: &[Expr]) {
        for (i, e) in items.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            self.write_expr(out, e, 0);
        }
    }

    /// The sender items of a message, `e1, e2`.
    pub fn send_items(&self, items: &[MsgItem]) -> String {
        let mut out = String::new();
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            self.write_expr(&mut out, &item.send, 0);
        }
        out
    }

    /// The receiver items of a message, `p1, p2`.
    pub fn recv_items(&self, items: &[MsgItem]) -> String {
        items
            .iter()
            .map(|i| self.recv(&i.recv))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The one-line head of a statement: the whole of a `msg` or `act`, and
    /// `if guard @ Owner` / `while guard @ Owner` for a construct.
    pub fn stmt_head(&self, stmt: &Stmt) -> String {
        let mut out = String::new();
        self.write_stmt_head(&mut out, stmt);
        out
    }

    pub fn write_stmt_head(&self, out: &mut String, stmt: &Stmt) {
        match &stmt.kind {
            StmtKind::Msg { from, to, items } => {
                let _ = write!(
                    out,
                    "msg {}({}) -> {}({})",
                    self.lifeline(*from),
                    self.send_items(items),
                    self.lifeline(*to),
                    self.recv_items(items)
                );
            }
            StmtKind::Act { at, outputs, call } => {
                let _ = write!(
                    out,
                    "act {}: {}",
                    self.lifeline(*at),
                    self.act(outputs, call)
                );
            }
            StmtKind::If { owner, guard, .. } => {
                let _ = write!(out, "if {} @ {}", self.expr(guard), self.lifeline(*owner));
            }
            StmtKind::While { owner, guard, .. } => match self.workflow.for_each(stmt.id) {
                Some(f) => {
                    let _ = write!(
                        out,
                        "for {} in {} @ {}",
                        self.var(f.var),
                        self.var(f.list),
                        self.lifeline(*owner)
                    );
                }
                None => {
                    let _ = write!(
                        out,
                        "while {} @ {}",
                        self.expr(guard),
                        self.lifeline(*owner)
                    );
                }
            },
            StmtKind::Par { .. } => {
                out.push_str(if self.workflow.coregion(stmt.id).is_some() {
                    "coregion"
                } else {
                    "par"
                });
            }
        }
    }

    /// A block in surface syntax, one statement a line, nested blocks indented.
    pub fn block(&self, block: &Block, indent: usize) -> String {
        let mut out = String::new();
        self.write_block(&mut out, block, indent);
        out
    }

    /// The statements of `block`, without the bookkeeping of `for` loops
    /// (printed as the `for` they come from).
    pub fn write_block(&self, out: &mut String, block: &Block, indent: usize) {
        for stmt in &block.stmts {
            if !self.workflow.for_each.is_empty() && self.workflow.is_for_step(stmt.id) {
                continue;
            }
            self.write_stmt(out, stmt, indent);
        }
    }

    pub fn write_stmt(&self, out: &mut String, stmt: &Stmt, indent: usize) {
        push_indent(out, indent);
        self.write_stmt_head(out, stmt);
        match &stmt.kind {
            StmtKind::Msg { .. } | StmtKind::Act { .. } => out.push('\n'),
            StmtKind::If {
                then, otherwise, ..
            } => {
                out.push_str(" {\n");
                self.write_block(out, then, indent + 1);
                push_indent(out, indent);
                out.push_str("} else {\n");
                self.write_block(out, otherwise, indent + 1);
                push_indent(out, indent);
                out.push_str("}\n");
            }
            StmtKind::While { body, .. } if self.workflow.for_each(stmt.id).is_some() => {
                out.push_str(" {\n");
                self.write_block(out, body, indent + 1);
                push_indent(out, indent);
                out.push_str("}\n");
            }
            StmtKind::While { body, exit, .. } => {
                out.push_str(" {\n");
                self.write_block(out, body, indent + 1);
                push_indent(out, indent);
                out.push_str("} exit {\n");
                self.write_block(out, exit, indent + 1);
                push_indent(out, indent);
                out.push_str("}\n");
            }
            StmtKind::Par { branches } if self.workflow.coregion(stmt.id).is_some() => {
                out.push_str(" {\n");
                for b in branches {
                    self.write_block(out, b, indent + 1);
                }
                push_indent(out, indent);
                out.push_str("}\n");
            }
            StmtKind::Par { branches } => {
                for (i, b) in branches.iter().enumerate() {
                    out.push_str(if i == 0 { " {\n" } else { " and {\n" });
                    self.write_block(out, b, indent + 1);
                    push_indent(out, indent);
                    out.push('}');
                }
                out.push('\n');
            }
        }
    }
}

const CMP: u8 = 3;
const UNARY: u8 = 6;
const ATOM: u8 = 7;

fn binary_prec(op: troupe_check::ir::BinaryOp) -> u8 {
    use troupe_check::ir::BinaryOp::*;
    match op {
        Or => 1,
        And => 2,
        Eq | Ne | Lt | Le | Gt | Ge => CMP,
        Add | Sub => 4,
        Mul | Div | Rem => 5,
    }
}

/// Escapes text for a string literal of the language (`{` and `}` are doubled
/// because single braces open a hole).
fn escape_text(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '{' => out.push_str("{{"),
            '}' => out.push_str("}}"),
            c => out.push(c),
        }
    }
}

fn push_indent(out: &mut String, indent: usize) {
    for _ in 0..indent {
        out.push_str("  ");
    }
}
