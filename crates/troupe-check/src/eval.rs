//! Evaluating checked expressions over values: the one evaluator of the
//! language, used by the runtime and by the reference semantics
//! (`troupe-msc`'s simulator), so that both agree on every value.
//!
//! The checker has proven every expression well typed, so evaluation only
//! fails on what types cannot rule out, and then with an [`EvalError`]:
//!
//! - integer overflow (`+ - * / %` and unary `-` on `Int` are checked; a
//!   result outside 64 bits is an error, never a wrapped value);
//! - integer division or remainder by zero;
//! - (defensively) a variable the caller did not supply, or an expression
//!   nested deeper than [`MAX_EVAL_DEPTH`] (the parser never builds one
//!   deeper than [`troupe_syntax::MAX_EXPR_DEPTH`]; the guard is for
//!   hand-built IR, so that it yields an error rather than overflowing the
//!   stack).
//!
//! Floats are IEEE 754 binary64 and never an error: `0.0 / 0.0` is NaN,
//! `1.0 / 0.0` is infinity. Comparisons follow IEEE: NaN is unequal to
//! everything, itself included (`x == x` is false for NaN, `x != x` true),
//! and `< <= > >=` with a NaN operand are false. (That is the language's
//! `==`; whether two *recorded* values are the same value — for traces and
//! verification — is [`Value`]'s `PartialEq`, under which NaN is NaN.)
//! In text, NaN and the infinities show as `NaN`, `Infinity`, `-Infinity`.

use crate::ir::{BinaryOp, Expr, ExprKind, FormatPart, LifelineId, UnaryOp, VarId};
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

    /// The value of `var`, owned. Environments that compute values (rather
    /// than store them) override this and may return `None` from `get`.
    fn value(&self, var: VarId) -> Option<Value> {
        self.get(var).cloned()
    }

    /// `seen(B).x` (LANGUAGE.md §7): B's `x` at B's latest event causally
    /// visible here. Only a causal guard's monitor knows it; elsewhere it is
    /// unbound.
    fn seen(&self, _lifeline: LifelineId, _var: VarId) -> Option<Value> {
        None
    }
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

/// An environment that computes each variable's value with a function.
pub struct FnEnv<F>(pub F);

impl<F: Fn(VarId) -> Option<Value>> Env for FnEnv<F> {
    fn get(&self, _: VarId) -> Option<&Value> {
        None
    }

    fn value(&self, var: VarId) -> Option<Value> {
        (self.0)(var)
    }
}

impl<F> std::fmt::Debug for FnEnv<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FnEnv")
    }
}

/// The deepest expression the evaluator recurses into: the parser's bound, so
/// that every parsed expression evaluates and nothing deeper is attempted.
pub const MAX_EVAL_DEPTH: u32 = troupe_syntax::MAX_EXPR_DEPTH;

/// Evaluates `e` in `env`.
pub fn eval<E: Env + ?Sized>(e: &Expr, env: &E, types: &TypeTable) -> Result<Value, EvalError> {
    // A variable or a literal, the usual message item, without the
    // interpreter's frame.
    if let Some(v) = in_place(e, env) {
        return Ok(v.clone());
    }
    eval_at(e, env, types, 0)
}

fn eval_at<E: Env + ?Sized>(
    e: &Expr,
    env: &E,
    types: &TypeTable,
    depth: u32,
) -> Result<Value, EvalError> {
    let fail = |message: String| EvalError {
        message,
        span: e.span,
    };
    if depth > MAX_EVAL_DEPTH {
        return Err(fail(format!(
            "expression nests more than {MAX_EVAL_DEPTH} levels deep"
        )));
    }
    let sub = |x: &Expr| eval_at(x, env, types, depth + 1);
    match &e.kind {
        ExprKind::Lit(v) => Ok(v.clone()),
        ExprKind::Var(var) => env
            .value(*var)
            .ok_or_else(|| fail(format!("variable #{} has no value", var.0))),
        ExprKind::Field(base, index) => match sub(base)? {
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
            let base = sub(base)?;
            let json = base.to_json(types);
            let field = json.get(name).cloned().unwrap_or(serde_json::Value::Null);
            Ok(Value::Json(Arc::new(field)))
        }
        ExprKind::Unary(op, operand) => {
            let v = sub(operand)?;
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
        ExprKind::Binary(BinaryOp::And, l, r) => match sub(l)? {
            Value::Bool(false) => Ok(Value::Bool(false)),
            Value::Bool(true) => sub(r),
            other => Err(fail(format!("`and` of {}", display(&other, types)))),
        },
        ExprKind::Binary(BinaryOp::Or, l, r) => match sub(l)? {
            Value::Bool(true) => Ok(Value::Bool(true)),
            Value::Bool(false) => sub(r),
            other => Err(fail(format!("`or` of {}", display(&other, types)))),
        },
        ExprKind::Binary(op, l, r) => {
            // Variables and literals, the usual operands, are read where
            // they lie rather than copied out by a recursive call.
            let (a_owned, b_owned);
            let a = match in_place(l, env) {
                Some(v) => v,
                None => {
                    a_owned = sub(l)?;
                    &a_owned
                }
            };
            let b = match in_place(r, env) {
                Some(v) => v,
                None => {
                    b_owned = sub(r)?;
                    &b_owned
                }
            };
            binary(*op, a, b, types).map_err(fail)
        }
        ExprKind::List(items) => {
            let values = items.iter().map(sub).collect::<Result<Vec<_>, _>>()?;
            Ok(Value::List(values.into()))
        }
        ExprKind::Format(parts) => {
            let mut out = String::new();
            for part in parts {
                match part {
                    FormatPart::Text(t) => out.push_str(t),
                    FormatPart::Expr(x) => out.push_str(&display(&sub(x)?, types)),
                }
            }
            Ok(Value::text(out))
        }
        ExprKind::Len(list) => match sub(list)? {
            Value::List(items) => Ok(Value::Int(i64::try_from(items.len()).unwrap_or(i64::MAX))),
            other => Err(fail(format!(
                "the length of a non-list value {}",
                display(&other, types)
            ))),
        },
        ExprKind::Seen(lifeline, var) => env.seen(*lifeline, *var).ok_or_else(|| {
            fail(format!(
                "no event of lifeline #{} binds #{}",
                lifeline.0, var.0
            ))
        }),
        ExprKind::Cpl(_) => Err(fail(
            "a causal guard is evaluated by its owner's monitor, not as an expression".into(),
        )),
        ExprKind::Index(list, index) => match (sub(list)?, sub(index)?) {
            (Value::List(items), Value::Int(i)) => usize::try_from(i)
                .ok()
                .and_then(|i| items.get(i).cloned())
                .ok_or_else(|| fail(format!("index {i} is outside a list of {}", items.len()))),
            (l, i) => Err(fail(format!(
                "indexing {} with {}",
                display(&l, types),
                display(&i, types)
            ))),
        },
    }
}

/// A literal's or a stored variable's value, borrowed (`None`: evaluate it).
fn in_place<'a, E: Env + ?Sized>(e: &'a Expr, env: &'a E) -> Option<&'a Value> {
    match &e.kind {
        ExprKind::Lit(v) => Some(v),
        ExprKind::Var(var) => env.get(*var),
        _ => None,
    }
}

/// A binary operator other than the short-circuiting `and` and `or` applied
/// to two values, as [`eval`] applies it (an error message for an overflow
/// or operands it cannot combine): for evaluators that hold the operands by
/// reference, such as the causal monitor's atoms.
pub fn binary(op: BinaryOp, a: &Value, b: &Value, types: &TypeTable) -> Result<Value, String> {
    use Value::{Float, Int, Text};
    let overflow = || format!("integer overflow in `{}`", op.symbol());
    Ok(match op {
        BinaryOp::Eq => Value::Bool(values_equal_in(a, b, types)),
        BinaryOp::Ne => Value::Bool(!values_equal_in(a, b, types)),
        BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
            if !comparable(a) || !comparable(b) || (matches!(a, Text(_)) != matches!(b, Text(_))) {
                return Err(format!(
                    "cannot compare {} and {}",
                    display(a, types),
                    display(b, types)
                ));
            }
            // `None` only for a NaN operand: every ordering is then false.
            let ord = compare(a, b);
            Value::Bool(match op {
                BinaryOp::Lt => ord == Some(Ordering::Less),
                BinaryOp::Le => matches!(ord, Some(Ordering::Less | Ordering::Equal)),
                BinaryOp::Gt => ord == Some(Ordering::Greater),
                _ => matches!(ord, Some(Ordering::Greater | Ordering::Equal)),
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
        // `eval` short-circuits these; with both operands at hand they are
        // the plain Boolean operators.
        BinaryOp::And | BinaryOp::Or => match (a, b) {
            (Value::Bool(x), Value::Bool(y)) => Value::Bool(if op == BinaryOp::And {
                *x && *y
            } else {
                *x || *y
            }),
            _ => {
                return Err(format!(
                    "`{}` of {} and {}",
                    op.symbol(),
                    display(a, types),
                    display(b, types)
                ));
            }
        },
    })
}

fn num(v: &Value) -> Result<f64, String> {
    match v {
        Value::Int(n) => Ok(*n as f64),
        Value::Float(x) => Ok(*x),
        _ => Err("expected a number".into()),
    }
}

fn comparable(v: &Value) -> bool {
    matches!(v, Value::Int(_) | Value::Float(_) | Value::Text(_))
}

/// Equality as `==` sees it: structural, with `1 == 1.0`, floats compared by
/// IEEE 754 (NaN equals nothing, not even NaN), and a `Json` value equal to a
/// typed value with the same JSON form. Enum values and records compare
/// without their type table (by id), so this is also right when none is at
/// hand; see [`values_equal_in`] for `Json` against typed values.
pub fn values_equal(a: &Value, b: &Value) -> bool {
    values_equal_in(a, b, &TypeTable::default())
}

/// [`values_equal`], with the type table that gives typed values their JSON
/// form when one side is `Json`.
pub fn values_equal_in(a: &Value, b: &Value, types: &TypeTable) -> bool {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Float(x), Value::Float(y)) => x == y,
        (Value::Int(x), Value::Float(y)) | (Value::Float(y), Value::Int(x)) => (*x as f64) == *y,
        (Value::List(x), Value::List(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y.iter())
                    .all(|(a, b)| values_equal_in(a, b, types))
        }
        (Value::Record(r, x), Value::Record(s, y)) => {
            r == s
                && x.len() == y.len()
                && x.iter()
                    .zip(y.iter())
                    .all(|(a, b)| values_equal_in(a, b, types))
        }
        (Value::Json(x), Value::Json(y)) => x == y,
        (Value::Json(j), other) | (other, Value::Json(j)) => {
            // Without the table an enum or record has no JSON form: unequal.
            let known = match other {
                Value::Enum(id, _) => (id.0 as usize) < types.enums.len(),
                Value::Record(id, _) => (id.0 as usize) < types.records.len(),
                _ => true,
            };
            known && **j == other.to_json(types)
        }
        _ => a == b,
    }
}

/// The order of two numbers or two texts; `None` when a NaN is involved (or
/// the values are not ordered at all).
fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (Value::Text(x), Value::Text(y)) => Some(x.cmp(y)),
        _ => num(a).ok()?.partial_cmp(&num(b).ok()?),
    }
}

/// The text form of a float: Rust's shortest round-trip form for finite
/// values (`0.5`, `3`), and `NaN`, `Infinity`, `-Infinity` (as in JSON
/// output, see [`Value::to_json`]).
pub fn display_float(x: f64) -> String {
    if x.is_nan() {
        "NaN".to_owned()
    } else if x.is_infinite() {
        if x > 0.0 { "Infinity" } else { "-Infinity" }.to_owned()
    } else {
        x.to_string()
    }
}

/// The text a value shows as inside a string: text raw, enum values by name,
/// records and lists as JSON. Ids outside `types` show as `#id.value` rather
/// than panicking.
pub fn display(v: &Value, types: &TypeTable) -> String {
    match v {
        Value::Text(s) => s.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Int(n) => n.to_string(),
        Value::Float(x) => display_float(*x),
        Value::Enum(id, i) => types
            .enums
            .get(id.0 as usize)
            .and_then(|d| d.values.get(*i as usize))
            .cloned()
            .unwrap_or_else(|| format!("#{}.{i}", id.0)),
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
    fn integer_overflow_is_an_error_in_every_operator() {
        for e in [
            "9223372036854775807 + n",
            "-9223372036854775807 - n",
            "9223372036854775807 * n",
            "(-9223372036854775807 - 1) / (n - 8)",
            "(-9223372036854775807 - 1) % (n - 8)",
            "-(-9223372036854775807 - 1 + n - n)",
        ] {
            let err = run(e).unwrap_err();
            assert!(err.message.contains("overflow"), "{e}: {err}");
        }
    }

    #[test]
    fn floats_follow_ieee_and_never_fail() {
        let Value::Float(nan) = run("(n - 7) / (n - 7.0)").unwrap() else {
            panic!()
        };
        assert!(nan.is_nan());
        assert_eq!(run("n / 0.0").unwrap(), Value::Float(f64::INFINITY));
        assert_eq!(run("-n / 0.0").unwrap(), Value::Float(f64::NEG_INFINITY));
        // The language's `==` is IEEE: NaN equals nothing, itself included.
        let nan = "((n - 7) / (n - 7.0))";
        assert_eq!(run(&format!("{nan} == {nan}")).unwrap(), Value::Bool(false));
        assert_eq!(run(&format!("{nan} != {nan}")).unwrap(), Value::Bool(true));
        assert_eq!(
            run(&format!("[{nan}] == [{nan}]")).unwrap(),
            Value::Bool(false)
        );
        for op in ["<", "<=", ">", ">="] {
            assert_eq!(run(&format!("{nan} {op} 1")).unwrap(), Value::Bool(false));
            assert_eq!(run(&format!("1 {op} {nan}")).unwrap(), Value::Bool(false));
        }
        assert_eq!(run("n / 0.0 > 1.5").unwrap(), Value::Bool(true));
    }

    #[test]
    fn nan_and_infinities_show_as_their_json_names() {
        let types = TypeTable::default();
        assert_eq!(display(&Value::Float(f64::NAN), &types), "NaN");
        assert_eq!(display(&Value::Float(f64::INFINITY), &types), "Infinity");
        assert_eq!(
            display(&Value::Float(f64::NEG_INFINITY), &types),
            "-Infinity"
        );
        assert_eq!(display(&Value::Float(0.5), &types), "0.5");
    }

    #[test]
    fn a_closure_environment_reads_through_value() {
        let e = Expr {
            kind: ExprKind::Var(VarId(3)),
            ty: crate::Type::Int,
            span: Span::default(),
        };
        let env = FnEnv(|v: VarId| Some(Value::Int(i64::from(v.0))));
        assert_eq!(
            eval(&e, &env, &TypeTable::default()).unwrap(),
            Value::Int(3)
        );
    }

    #[test]
    fn hand_built_expressions_deeper_than_the_bound_are_an_error_not_a_crash() {
        let mut e = Expr {
            kind: ExprKind::Lit(Value::Bool(true)),
            ty: crate::Type::Bool,
            span: Span::default(),
        };
        for _ in 0..MAX_EVAL_DEPTH + 10 {
            e = Expr {
                kind: ExprKind::Unary(UnaryOp::Not, Box::new(e)),
                ty: crate::Type::Bool,
                span: Span::default(),
            };
        }
        // On a thread of a known size: the guard, not the platform's stack,
        // must be what stops it (a debug build uses a few KiB per level).
        let err = std::thread::Builder::new()
            .stack_size(16 << 20)
            .spawn(move || eval(&e, &[] as &[Value], &TypeTable::default()).unwrap_err())
            .unwrap()
            .join()
            .unwrap();
        assert!(err.message.contains("nests"), "{err}");
    }

    #[test]
    fn or_short_circuits() {
        assert_eq!(run("n > 0 or n / 0 > 1").unwrap(), Value::Bool(true));
    }
}
