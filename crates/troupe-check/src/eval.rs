//! Evaluating checked expressions over values.
//!
//! The checker has proven every expression well typed, so evaluation only
//! fails on what types cannot rule out: integer overflow, division by zero,
//! and (defensively) a variable the caller did not supply.

use crate::ir::{BinaryOp, Expr, ExprKind, FormatPart, UnaryOp, VarId};
use crate::types::TypeTable;
use crate::value::Value;
use std::cmp::Ordering;
use std::sync::Arc;
use troupe_syntax::Span;

/// Why an expression could not be evaluated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct EvalError {
    pub message: String,
    pub span: Span,
}

/// Where an expression reads its variables from.
pub trait Env {
    fn get(&self, var: VarId) -> Option<&Value>;
}

impl Env for [Value] {
    fn get(&self, var: VarId) -> Option<&Value> {
        <[Value]>::get(self, var.0 as usize)
    }
}

impl Env for [Option<Value>] {
    fn get(&self, var: VarId) -> Option<&Value> {
        <[Option<Value>]>::get(self, var.0 as usize).and_then(Option::as_ref)
    }
}

impl Env for Vec<Option<Value>> {
    fn get(&self, var: VarId) -> Option<&Value> {
        self.as_slice().get(var.0 as usize).and_then(Option::as_ref)
    }
}

/// Evaluates `e` in `env`.
pub fn eval<E: Env + ?Sized>(e: &Expr, env: &E, types: &TypeTable) -> Result<Value, EvalError> {
    let fail = |message: String| EvalError {
        message,
        span: e.span,
    };
    match &e.kind {
        ExprKind::Lit(v) => Ok(v.clone()),
        ExprKind::Var(var) => env
            .get(*var)
            .cloned()
            .ok_or_else(|| fail(format!("variable #{} has no value", var.0))),
        ExprKind::Field(base, index) => match eval(base, env, types)? {
            Value::Record(_, fields) => fields
                .get(*index as usize)
                .cloned()
                .ok_or_else(|| fail(format!("record has no field #{index}"))),
            other => Err(fail(format!(
                "field access on a non-record value {}",
                display(&other, types)
            ))),
        },
        ExprKind::JsonField(base, name) => {
            let base = eval(base, env, types)?;
            let json = base.to_json(types);
            let field = json.get(name).cloned().unwrap_or(serde_json::Value::Null);
            Ok(Value::Json(Arc::new(field)))
        }
        ExprKind::Unary(op, operand) => {
            let v = eval(operand, env, types)?;
            match (op, v) {
                (UnaryOp::Not, Value::Bool(b)) => Ok(Value::Bool(!b)),
                (UnaryOp::Neg, Value::Int(n)) => n
                    .checked_neg()
                    .map(Value::Int)
                    .ok_or_else(|| fail("integer overflow in `-`".into())),
                (UnaryOp::Neg, Value::Float(x)) => Ok(Value::Float(-x)),
                (_, v) => Err(fail(format!("bad operand {}", display(&v, types)))),
            }
        }
        ExprKind::Binary(BinaryOp::And, l, r) => match eval(l, env, types)? {
            Value::Bool(false) => Ok(Value::Bool(false)),
            _ => eval(r, env, types),
        },
        ExprKind::Binary(BinaryOp::Or, l, r) => match eval(l, env, types)? {
            Value::Bool(true) => Ok(Value::Bool(true)),
            _ => eval(r, env, types),
        },
        ExprKind::Binary(op, l, r) => {
            let a = eval(l, env, types)?;
            let b = eval(r, env, types)?;
            binary(*op, &a, &b, types).map_err(fail)
        }
        ExprKind::List(items) => {
            let values = items
                .iter()
                .map(|i| eval(i, env, types))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Value::List(values.into()))
        }
        ExprKind::Format(parts) => {
            let mut out = String::new();
            for part in parts {
                match part {
                    FormatPart::Text(t) => out.push_str(t),
                    FormatPart::Expr(x) => out.push_str(&display(&eval(x, env, types)?, types)),
                }
            }
            Ok(Value::text(out))
        }
    }
}

fn binary(op: BinaryOp, a: &Value, b: &Value, types: &TypeTable) -> Result<Value, String> {
    use Value::{Float, Int, Text};
    let overflow = || format!("integer overflow in `{}`", op.symbol());
    Ok(match op {
        BinaryOp::Eq => Value::Bool(values_equal(a, b)),
        BinaryOp::Ne => Value::Bool(!values_equal(a, b)),
        BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
            let ord = compare(a, b).ok_or_else(|| {
                format!(
                    "cannot compare {} and {}",
                    display(a, types),
                    display(b, types)
                )
            })?;
            Value::Bool(match op {
                BinaryOp::Lt => ord == Ordering::Less,
                BinaryOp::Le => ord != Ordering::Greater,
                BinaryOp::Gt => ord == Ordering::Greater,
                _ => ord != Ordering::Less,
            })
        }
        BinaryOp::Add => match (a, b) {
            (Int(x), Int(y)) => Int(x.checked_add(*y).ok_or_else(overflow)?),
            (Text(x), Text(y)) => Value::text(format!("{x}{y}")),
            _ => Float(num(a)? + num(b)?),
        },
        BinaryOp::Sub => match (a, b) {
            (Int(x), Int(y)) => Int(x.checked_sub(*y).ok_or_else(overflow)?),
            _ => Float(num(a)? - num(b)?),
        },
        BinaryOp::Mul => match (a, b) {
            (Int(x), Int(y)) => Int(x.checked_mul(*y).ok_or_else(overflow)?),
            _ => Float(num(a)? * num(b)?),
        },
        BinaryOp::Div => match (a, b) {
            (Int(_), Int(0)) => return Err("division by zero".into()),
            (Int(x), Int(y)) => Int(x.checked_div(*y).ok_or_else(overflow)?),
            _ => Float(num(a)? / num(b)?),
        },
        BinaryOp::Rem => match (a, b) {
            (Int(_), Int(0)) => return Err("remainder by zero".into()),
            (Int(x), Int(y)) => Int(x.checked_rem(*y).ok_or_else(overflow)?),
            _ => Float(num(a)? % num(b)?),
        },
        BinaryOp::And | BinaryOp::Or => unreachable!("short-circuited by the caller"),
    })
}

fn num(v: &Value) -> Result<f64, String> {
    match v {
        Value::Int(n) => Ok(*n as f64),
        Value::Float(x) => Ok(*x),
        _ => Err("expected a number".into()),
    }
}

/// Equality as `==` sees it: structural, with `1 == 1.0`.
pub fn values_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Int(x), Value::Float(y)) | (Value::Float(y), Value::Int(x)) => (*x as f64) == *y,
        (Value::List(x), Value::List(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(a, b)| values_equal(a, b))
        }
        _ => a == b,
    }
}

fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (Value::Text(x), Value::Text(y)) => Some(x.cmp(y)),
        _ => num(a).ok()?.partial_cmp(&num(b).ok()?),
    }
}

/// The text a value shows as inside a string: text raw, enum values by name,
/// records and lists as JSON.
pub fn display(v: &Value, types: &TypeTable) -> String {
    match v {
        Value::Text(s) => s.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Int(n) => n.to_string(),
        Value::Float(x) => x.to_string(),
        Value::Enum(id, i) => types
            .enum_def(*id)
            .values
            .get(*i as usize)
            .cloned()
            .unwrap_or_default(),
        other => other.to_json(types).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Call, StmtKind};

    /// Evaluates the expression of `act A: y = EXPR` in a workflow whose
    /// input `n: Int @ A` is 7 and `t: Text @ A` is "hi".
    fn run(expr: &str) -> Result<Value, EvalError> {
        let src = format!("workflow w(n: Int @ A, t: Text @ A) {{ act A: y = {expr} }}");
        let (program, diags) = crate::check_text(&src);
        let program = program.unwrap_or_else(|| panic!("{diags:?}"));
        let wf = &program.workflows[0];
        let StmtKind::Act {
            call: Call::Expr(e),
            ..
        } = &wf.body.stmts[0].kind
        else {
            panic!()
        };
        let env = vec![Value::Int(7), Value::text("hi")];
        eval(e, env.as_slice(), &program.types)
    }

    #[test]
    fn arithmetic_comparison_and_text() {
        assert_eq!(run("n * 2 + 1").unwrap(), Value::Int(15));
        assert_eq!(run("n / 2").unwrap(), Value::Int(3));
        assert_eq!(
            run("n % 4 == 3 and not (n < 0)").unwrap(),
            Value::Bool(true)
        );
        assert_eq!(run("n + 0.5").unwrap(), Value::Float(7.5));
        assert_eq!(run("t + \"!\"").unwrap(), Value::text("hi!"));
        assert_eq!(run("\"{t}: {n}\"").unwrap(), Value::text("hi: 7"));
        assert_eq!(
            run("[n, 1]").unwrap(),
            Value::List(vec![Value::Int(7), Value::Int(1)].into())
        );
    }

    #[test]
    fn runtime_errors_are_reported_with_a_span() {
        let e = run("n / (n - 7)").unwrap_err();
        assert_eq!(e.message, "division by zero");
        assert!(
            run("9223372036854775807 + n")
                .unwrap_err()
                .message
                .contains("overflow")
        );
    }

    #[test]
    fn or_short_circuits() {
        assert_eq!(run("n > 0 or n / 0 > 1").unwrap(), Value::Bool(true));
    }
}
