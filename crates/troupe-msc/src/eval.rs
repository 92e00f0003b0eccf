//! A small reference evaluator of IR expressions, for the simulator.
//!
//! It covers the expression language (literals, variables, fields, operators,
//! lists, format strings) and `pure` actions with a body. Other actions (llm,
//! human, effect, extern pure) have no meaning here; the simulator gives their
//! outputs a placeholder value of the declared type.

use std::sync::Arc;
use troupe_check::Value;
use troupe_check::ir::{
    Action, ActionKind, BinaryOp, Call, Expr, ExprKind, FormatPart, Program, UnaryOp, VarId,
};
use troupe_check::types::{Type, TypeTable};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct EvalError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, EvalError> {
    Err(EvalError(msg.into()))
}

/// Evaluates `e`, reading variables through `env`.
pub fn eval(e: &Expr, env: &dyn Fn(VarId) -> Option<Value>) -> Result<Value, EvalError> {
    eval_depth(e, env, 0)
}

const MAX_DEPTH: usize = 512;

fn eval_depth(
    e: &Expr,
    env: &dyn Fn(VarId) -> Option<Value>,
    depth: usize,
) -> Result<Value, EvalError> {
    if depth > MAX_DEPTH {
        return err("expression nests too deeply");
    }
    let sub = |x: &Expr| eval_depth(x, env, depth + 1);
    match &e.kind {
        ExprKind::Lit(v) => Ok(v.clone()),
        ExprKind::Var(v) => {
            env(*v).ok_or_else(|| EvalError(format!("variable #{} is unbound", v.0)))
        }
        ExprKind::Field(inner, i) => match sub(inner)? {
            Value::Record(_, fields) => fields
                .get(*i as usize)
                .cloned()
                .ok_or_else(|| EvalError("no such field".into())),
            _ => err("field of a non-record"),
        },
        ExprKind::JsonField(inner, name) => match sub(inner)? {
            Value::Json(j) => Ok(Value::Json(Arc::new(
                j.get(name).cloned().unwrap_or(serde_json_null()),
            ))),
            _ => err("field of a non-object"),
        },
        ExprKind::Unary(op, inner) => match (op, sub(inner)?) {
            (UnaryOp::Not, Value::Bool(b)) => Ok(Value::Bool(!b)),
            (UnaryOp::Neg, Value::Int(n)) => Ok(Value::Int(n.wrapping_neg())),
            (UnaryOp::Neg, Value::Float(x)) => Ok(Value::Float(-x)),
            _ => err("bad operand of a unary operator"),
        },
        ExprKind::Binary(BinaryOp::And, l, r) => match sub(l)? {
            Value::Bool(false) => Ok(Value::Bool(false)),
            Value::Bool(true) => sub(r),
            _ => err("`and` of a non-Bool"),
        },
        ExprKind::Binary(BinaryOp::Or, l, r) => match sub(l)? {
            Value::Bool(true) => Ok(Value::Bool(true)),
            Value::Bool(false) => sub(r),
            _ => err("`or` of a non-Bool"),
        },
        ExprKind::Binary(op, l, r) => binary(*op, sub(l)?, sub(r)?),
        ExprKind::List(items) => Ok(Value::List(
            items.iter().map(sub).collect::<Result<Vec<_>, _>>()?.into(),
        )),
        ExprKind::Format(parts) => {
            let mut s = String::new();
            for p in parts {
                match p {
                    FormatPart::Text(t) => s.push_str(t),
                    FormatPart::Expr(x) => s.push_str(&display(&sub(x)?)),
                }
            }
            Ok(Value::text(s))
        }
    }
}

fn serde_json_null() -> serde_json::Value {
    serde_json::Value::Null
}

fn display(v: &Value) -> String {
    match v {
        Value::Text(s) => s.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Int(n) => n.to_string(),
        Value::Float(x) => x.to_string(),
        other => format!("{other:?}"),
    }
}

fn binary(op: BinaryOp, l: Value, r: Value) -> Result<Value, EvalError> {
    use BinaryOp::*;
    use Value::{Bool, Float, Int, Text};
    let ord = |l: &Value, r: &Value| -> Option<std::cmp::Ordering> {
        match (l, r) {
            (Int(a), Int(b)) => Some(a.cmp(b)),
            (Float(a), Float(b)) => a.partial_cmp(b),
            (Int(a), Float(b)) => (*a as f64).partial_cmp(b),
            (Float(a), Int(b)) => a.partial_cmp(&(*b as f64)),
            (Text(a), Text(b)) => Some(a.cmp(b)),
            (Bool(a), Bool(b)) => Some(a.cmp(b)),
            (Value::Enum(x, a), Value::Enum(y, b)) if x == y => Some(a.cmp(b)),
            _ => None,
        }
    };
    match op {
        Eq => Ok(Bool(ord(&l, &r).map_or(l == r, |o| o.is_eq()))),
        Ne => Ok(Bool(!ord(&l, &r).map_or(l == r, |o| o.is_eq()))),
        Lt | Le | Gt | Ge => {
            let o = ord(&l, &r).ok_or_else(|| EvalError("values are not comparable".into()))?;
            Ok(Bool(match op {
                Lt => o.is_lt(),
                Le => o.is_le(),
                Gt => o.is_gt(),
                _ => o.is_ge(),
            }))
        }
        Add | Sub | Mul | Div | Rem => match (l, r) {
            (Int(a), Int(b)) => match op {
                Add => Ok(Int(a.wrapping_add(b))),
                Sub => Ok(Int(a.wrapping_sub(b))),
                Mul => Ok(Int(a.wrapping_mul(b))),
                Div => a
                    .checked_div(b)
                    .map(Int)
                    .ok_or_else(|| EvalError("division by zero".into())),
                _ => a
                    .checked_rem(b)
                    .map(Int)
                    .ok_or_else(|| EvalError("division by zero".into())),
            },
            (Text(a), Text(b)) if op == Add => Ok(Value::text(format!("{a}{b}"))),
            (a, b) => {
                let (Some(x), Some(y)) = (num(&a), num(&b)) else {
                    return err("arithmetic on non-numbers");
                };
                Ok(Float(match op {
                    Add => x + y,
                    Sub => x - y,
                    Mul => x * y,
                    Div => x / y,
                    _ => x % y,
                }))
            }
        },
        And | Or => err("unreachable: and/or are short-circuited"),
    }
}

fn num(v: &Value) -> Option<f64> {
    match v {
        Value::Int(n) => Some(*n as f64),
        Value::Float(x) => Some(*x),
        _ => None,
    }
}

/// A placeholder value of type `ty`, for outputs of actions the simulator
/// cannot perform.
pub fn placeholder(ty: &Type, types: &TypeTable) -> Value {
    match ty {
        Type::Bool => Value::Bool(false),
        Type::Int => Value::Int(0),
        Type::Float => Value::Float(0.0),
        Type::Text => Value::text(""),
        Type::Json | Type::Error => Value::Json(Arc::new(serde_json_null())),
        Type::Enum(id) => Value::Enum(*id, 0),
        Type::Record(id) => {
            let fields = types
                .records
                .get(id.0 as usize)
                .map(|d| {
                    d.fields
                        .iter()
                        .map(|(_, t)| placeholder(t, types))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default();
            Value::Record(*id, fields.into())
        }
        Type::List(_) => Value::List(Vec::new().into()),
    }
}

/// Performs `call`: a pure body or expression is evaluated; any other action
/// yields placeholders for its outputs.
pub fn perform(
    call: &Call,
    outputs: usize,
    program: &Program,
    env: &dyn Fn(VarId) -> Option<Value>,
) -> Result<Vec<Value>, EvalError> {
    match call {
        Call::Expr(e) => Ok(vec![eval(e, env)?]),
        Call::Action { action, args } => {
            let Some(a) = program.actions.get(action.0 as usize) else {
                return err("unknown action");
            };
            let args = args
                .iter()
                .map(|x| eval(x, env))
                .collect::<Result<Vec<_>, _>>()?;
            match &a.kind {
                ActionKind::Pure { body: Some(body) } => {
                    let params = |v: VarId| args.get(v.0 as usize).cloned();
                    Ok(vec![eval(body, &params)?])
                }
                _ => Ok(placeholders(a, outputs, &program.types)),
            }
        }
    }
}

fn placeholders(a: &Action, outputs: usize, types: &TypeTable) -> Vec<Value> {
    (0..outputs)
        .map(|i| {
            a.outputs
                .get(i)
                .map_or(Value::Bool(false), |p| placeholder(&p.ty, types))
        })
        .collect()
}
