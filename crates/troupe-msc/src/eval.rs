//! Expression evaluation for the simulator: the language's one evaluator,
//! [`troupe_check::eval`], which the runtime uses too, so that the reference
//! semantics and real runs agree on every value (integer overflow is an error
//! in both, floats are IEEE 754 in both).
//!
//! It also performs `pure` actions with a body. Other actions (llm, human,
//! effect, extern pure) have no meaning here; the simulator gives their
//! outputs a placeholder value of the declared type.

use std::sync::Arc;
use troupe_check::Value;
use troupe_check::eval::FnEnv;
use troupe_check::ir::{Action, ActionKind, Call, Expr, Program, VarId};
use troupe_check::types::{Type, TypeTable};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct EvalError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, EvalError> {
    Err(EvalError(msg.into()))
}

/// Evaluates `e`, reading variables through `env`. Without the program's
/// type table, enum values and records inside format strings show by id; see
/// [`eval_in`].
pub fn eval(e: &Expr, env: &dyn Fn(VarId) -> Option<Value>) -> Result<Value, EvalError> {
    eval_in(e, env, &TypeTable::default())
}

/// Evaluates `e` with the types of its program.
pub fn eval_in(
    e: &Expr,
    env: &dyn Fn(VarId) -> Option<Value>,
    types: &TypeTable,
) -> Result<Value, EvalError> {
    troupe_check::eval::eval(e, &FnEnv(env), types).map_err(|e| EvalError(e.message))
}

fn serde_json_null() -> serde_json::Value {
    serde_json::Value::Null
}

/// A placeholder value of type `ty`, for outputs of actions the simulator
/// cannot perform.
pub fn placeholder(ty: &Type, types: &TypeTable) -> Value {
    placeholder_at(ty, types, 0)
}

/// Records nest at most this deep in a placeholder: a record type may contain
/// itself (`record R { a: R }`), and its placeholder must still be finite.
const MAX_PLACEHOLDER_DEPTH: usize = 16;

fn placeholder_at(ty: &Type, types: &TypeTable, depth: usize) -> Value {
    match ty {
        Type::Record(_) if depth >= MAX_PLACEHOLDER_DEPTH => {
            Value::Json(Arc::new(serde_json_null()))
        }
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
                        .map(|(_, t)| placeholder_at(t, types, depth + 1))
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
        Call::Expr(e) => Ok(vec![eval_in(e, env, &program.types)?]),
        Call::Action { action, args } => {
            let Some(a) = program.actions.get(action.0 as usize) else {
                return err("unknown action");
            };
            let args = args
                .iter()
                .map(|x| eval_in(x, env, &program.types))
                .collect::<Result<Vec<_>, _>>()?;
            match &a.kind {
                ActionKind::Pure { body: Some(body) } => {
                    let params = |v: VarId| args.get(v.0 as usize).cloned();
                    Ok(vec![eval_in(body, &params, &program.types)?])
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

#[cfg(test)]
mod tests {
    use super::*;
    use troupe_check::types::{RecordDef, RecordId};

    #[test]
    fn placeholders_of_self_containing_records_are_finite() {
        let types = TypeTable {
            enums: Vec::new(),
            records: vec![RecordDef {
                name: "R".into(),
                fields: vec![("a".into(), Type::Record(RecordId(0)))],
            }],
        };
        let mut v = placeholder(&Type::Record(RecordId(0)), &types);
        let mut depth = 0;
        while let Value::Record(_, fields) = v {
            v = fields[0].clone();
            depth += 1;
        }
        assert_eq!(depth, MAX_PLACEHOLDER_DEPTH);
    }
}
