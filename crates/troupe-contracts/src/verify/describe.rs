//! Words for findings: IR expressions and constructs printed back in the
//! surface syntax (`if valid and sufficient @ Agent`), with line numbers when
//! the source text is known.

use troupe_check::Value;
use troupe_check::ir::{
    BinaryOp, Expr, ExprKind, FormatPart, Formula, LifelineId, Program, Stmt, StmtId, StmtKind,
    UnaryOp, VarId, Workflow,
};
use troupe_check::types::Type;
use troupe_syntax::{LineIndex, Span};

use super::flow::{Branch, Flow};

/// Printing deeper expressions gives up with `…`.
const MAX_DEPTH: usize = 12;

/// Describes the parts of one workflow.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Describe<'a> {
    pub program: &'a Program,
    pub workflow: &'a Workflow,
    pub lines: Option<&'a LineIndex>,
}

impl Describe<'_> {
    /// ` (line N)` when the source is known, else nothing.
    pub(crate) fn line(&self, span: Span) -> String {
        match self.lines {
            Some(lines) => format!(" (line {})", lines.line(span.start)),
            None => String::new(),
        }
    }

    /// The name of a variable.
    pub(crate) fn var(&self, var: VarId) -> &str {
        self.workflow
            .vars
            .get(var.0 as usize)
            .map_or("?", |v| v.name.as_str())
    }

    /// The name of a lifeline.
    fn lifeline(&self, id: troupe_check::ir::LifelineId) -> &str {
        self.workflow
            .lifelines
            .get(id.0 as usize)
            .map_or("?", |l| l.name.as_str())
    }

    /// A construct with its line: "`if ok @ Agent` (line 3)".
    pub(crate) fn construct(&self, stmt: &Stmt) -> String {
        let head = match &stmt.kind {
            StmtKind::If { owner, guard, .. } => {
                format!("if {} @ {}", self.expr(guard), self.lifeline(*owner))
            }
            StmtKind::While { owner, guard, .. } => {
                format!("while {} @ {}", self.expr(guard), self.lifeline(*owner))
            }
            StmtKind::Par { .. } => "par …".to_owned(),
            StmtKind::Msg { .. } => "msg …".to_owned(),
            StmtKind::Act { .. } => "act …".to_owned(),
        };
        format!("`{head}`{}", self.line(stmt.span))
    }

    /// A branch taken at a construct: "`if ok @ Agent` (line 3) is true".
    pub(crate) fn choice(&self, flow: &Flow<'_>, stmt: StmtId, branch: Branch) -> String {
        let Some(stmt) = flow.stmt(stmt) else {
            return "a branch".to_owned();
        };
        let construct = self.construct(stmt);
        match branch {
            Branch::Then => format!("{construct} is true"),
            Branch::Else => format!("{construct} is false"),
            Branch::Body => format!("{construct} runs its body"),
            Branch::Exit => format!("{construct} runs its body zero times"),
        }
    }

    /// "on the path where A and B" or "on every path" (no choices).
    pub(crate) fn path(&self, flow: &Flow<'_>, choices: &[(StmtId, Branch)]) -> String {
        if choices.is_empty() {
            return "on every path".to_owned();
        }
        let parts: Vec<String> = choices
            .iter()
            .map(|&(s, b)| self.choice(flow, s, b))
            .collect();
        format!("on the path where {}", join_and(&parts))
    }

    /// An expression in surface syntax (abridged when deep).
    pub(crate) fn expr(&self, expr: &Expr) -> String {
        let mut out = String::new();
        self.write_expr(expr, 0, &mut out);
        out
    }

    fn write_expr(&self, expr: &Expr, depth: usize, out: &mut String) {
        if depth > MAX_DEPTH || out.len() > 200 {
            out.push('…');
            return;
        }
        match &expr.kind {
            ExprKind::Lit(value) => out.push_str(&self.value(value)),
            ExprKind::Var(var) => out.push_str(self.var(*var)),
            ExprKind::Field(base, index) => {
                self.write_operand(base, 100, depth, out);
                out.push('.');
                let name = match &base.ty {
                    Type::Record(id) => self
                        .program
                        .types
                        .records
                        .get(id.0 as usize)
                        .and_then(|r| r.fields.get(*index as usize))
                        .map(|(n, _)| n.clone()),
                    _ => None,
                };
                out.push_str(&name.unwrap_or_else(|| index.to_string()));
            }
            ExprKind::JsonField(base, name) => {
                self.write_operand(base, 100, depth, out);
                out.push('.');
                out.push_str(name);
            }
            ExprKind::Unary(op, inner) => {
                out.push_str(match op {
                    UnaryOp::Not => "not ",
                    UnaryOp::Neg => "-",
                });
                self.write_operand(inner, 90, depth, out);
            }
            ExprKind::Binary(op, a, b) => {
                let p = precedence(*op);
                self.write_operand(a, p, depth, out);
                out.push(' ');
                out.push_str(op.symbol());
                out.push(' ');
                self.write_operand(b, p + 1, depth, out);
            }
            ExprKind::List(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    self.write_expr(item, depth + 1, out);
                }
                out.push(']');
            }
            ExprKind::Format(parts) => {
                out.push('"');
                for part in parts {
                    match part {
                        FormatPart::Text(t) => out.push_str(&t.escape_default().to_string()),
                        FormatPart::Expr(e) => {
                            out.push('{');
                            self.write_expr(e, depth + 1, out);
                            out.push('}');
                        }
                    }
                }
                out.push('"');
            }
            ExprKind::Len(list) => {
                out.push_str("len(");
                self.write_expr(list, depth + 1, out);
                out.push(')');
            }
            ExprKind::Index(list, index) => {
                self.write_operand(list, 100, depth, out);
                out.push('[');
                self.write_expr(index, depth + 1, out);
                out.push(']');
            }
            ExprKind::Seen(lifeline, var) => {
                out.push_str("seen(");
                out.push_str(self.lifeline(*lifeline));
                out.push_str(").");
                out.push_str(self.var(*var));
            }
            ExprKind::Cpl(f) => self.write_formula(f, depth + 1, out),
        }
    }

    /// A causal guard, with every connective parenthesised (a finding
    /// quotes it; exact precedence matters less than being unambiguous).
    fn write_formula(&self, f: &Formula, depth: usize, out: &mut String) {
        if depth > MAX_DEPTH || out.len() > 200 {
            out.push('…');
            return;
        }
        let mut call = |name: &str, lifeline: Option<LifelineId>, args: &[&Formula]| {
            out.push_str(name);
            out.push('(');
            if let Some(l) = lifeline {
                out.push_str(self.lifeline(l));
                if !args.is_empty() {
                    out.push_str(", ");
                }
            }
            for (i, a) in args.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                self.write_formula(a, depth + 1, out);
            }
            out.push(')');
        };
        match f {
            Formula::Atom(e) => self.write_expr(e, depth + 1, out),
            Formula::On(l) => call("on", Some(*l), &[]),
            Formula::Prev(a) => call("prev", None, &[a]),
            Formula::Once(a) => call("once", None, &[a]),
            Formula::Since(a, b) => call("since", None, &[a, b]),
            Formula::At(l, a) => call("at", Some(*l), &[a]),
            Formula::Not(a) => {
                out.push_str("not (");
                self.write_formula(a, depth + 1, out);
                out.push(')');
            }
            Formula::And(a, b) | Formula::Or(a, b) => {
                let word = if matches!(f, Formula::And(..)) {
                    " and "
                } else {
                    " or "
                };
                out.push('(');
                self.write_formula(a, depth + 1, out);
                out.push_str(word);
                self.write_formula(b, depth + 1, out);
                out.push(')');
            }
        }
    }

    fn write_operand(&self, expr: &Expr, min: u8, depth: usize, out: &mut String) {
        let own = match &expr.kind {
            ExprKind::Binary(op, ..) => precedence(*op),
            ExprKind::Unary(..) => 90,
            _ => 100,
        };
        if own < min {
            out.push('(');
            self.write_expr(expr, depth + 1, out);
            out.push(')');
        } else {
            self.write_expr(expr, depth + 1, out);
        }
    }

    /// A literal value in surface syntax.
    pub(crate) fn value(&self, value: &Value) -> String {
        match value {
            Value::Bool(b) => b.to_string(),
            Value::Int(n) => n.to_string(),
            Value::Float(x) => format!("{x:?}"),
            Value::Text(s) => format!("{:?}", &**s),
            Value::Enum(id, v) => self
                .program
                .types
                .enums
                .get(id.0 as usize)
                .and_then(|e| e.values.get(*v as usize))
                .cloned()
                .unwrap_or_else(|| "?".to_owned()),
            Value::Json(j) => j.to_string(),
            Value::Record(..) | Value::List(_) => "…".to_owned(),
        }
    }
}

fn precedence(op: BinaryOp) -> u8 {
    match op {
        BinaryOp::Or => 10,
        BinaryOp::And => 20,
        BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
            40
        }
        BinaryOp::Add | BinaryOp::Sub => 50,
        BinaryOp::Mul | BinaryOp::Div | BinaryOp::Rem => 60,
    }
}

/// "a", "a and b", "a, b and c".
pub(crate) fn join_and(parts: &[String]) -> String {
    match parts {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// "`a`, `b`" — names in backticks.
pub(crate) fn ticked(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_guards_in_surface_syntax_with_lines() {
        let text = "record R { id: Text }\n\
            workflow w(a: Bool @ A, b: Int @ A, r: R @ A) {\n\
              if not (a or b > 1) and r.id == \"x\" @ A { act A: z = (b + 1) * 2 }\n\
            }\n";
        let (program, diagnostics) = troupe_check::check_text(text);
        let program = program.unwrap_or_else(|| panic!("{diagnostics:#?}"));
        let lines = LineIndex::new(text);
        let workflow = &program.workflows[0];
        let describe = Describe {
            program: &program,
            workflow,
            lines: Some(&lines),
        };
        let stmt = &workflow.body.stmts[0];
        assert_eq!(
            describe.construct(stmt),
            "`if not (a or b > 1) and r.id == \"x\" @ A` (line 3)"
        );
        let StmtKind::If { then, .. } = &stmt.kind else {
            panic!()
        };
        let StmtKind::Act {
            call: troupe_check::ir::Call::Expr(e),
            ..
        } = &then.stmts[0].kind
        else {
            panic!()
        };
        assert_eq!(describe.expr(e), "(b + 1) * 2");
        assert_eq!(
            join_and(&["x".into(), "y".into(), "z".into()]),
            "x, y and z"
        );
        assert_eq!(ticked(&["a", "b"]), "`a`, `b`");
    }
}
