//! The common shape of a guard's atoms — comparisons over variables,
//! literals and `seen` terms, combined with `and`, `or` and `not` (`k <
//! limit and (k == 0 or seen(Pong).n == k)`) — evaluated on references. The expression interpreter clones every operand and builds a
//! `Result` for every node; an atom is evaluated at many events, so this
//! shape takes the operands where they lie and applies the interpreter's
//! own operator ([`troupe_check::eval::binary`]): the same value, without
//! the copies. Any other atom goes through the interpreter.

use super::Knowledge;
use std::borrow::Cow;
use troupe_check::Value;
use troupe_check::eval::{Env, binary};
use troupe_check::ir::{BinaryOp, Expr, ExprKind, LifelineId, UnaryOp, VarId};
use troupe_check::types::TypeTable;

/// One operand of a [`Comparison`].
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Operand {
    Var(VarId),
    Lit(Value),
    /// `seen(B).x`, with its slot among the views' `seen` values.
    Seen(LifelineId, VarId, usize),
}

/// An atom built from `and`, `or`, `not` and binary operators over
/// variables, literals and `seen` terms.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Comparison {
    Op(BinaryOp, Operand, Operand),
    And(Box<Comparison>, Box<Comparison>),
    Or(Box<Comparison>, Box<Comparison>),
    Not(Box<Comparison>),
    /// A Boolean operand on its own (`done`, `seen(B).ok`).
    Is(Operand),
}

impl Comparison {
    /// `e` in this shape, or `None`. `seen_slots` must already hold `e`'s
    /// `seen` terms.
    pub(super) fn of(e: &Expr, seen_slots: &[(LifelineId, VarId)]) -> Option<Comparison> {
        let operand = |e: &Expr| match &e.kind {
            ExprKind::Var(v) => Some(Operand::Var(*v)),
            ExprKind::Lit(v) => Some(Operand::Lit(v.clone())),
            ExprKind::Seen(b, v) => seen_slots
                .iter()
                .position(|s| *s == (*b, *v))
                .map(|slot| Operand::Seen(*b, *v, slot)),
            _ => None,
        };
        let sub = |e: &Expr| Comparison::of(e, seen_slots).map(Box::new);
        Some(match &e.kind {
            ExprKind::Binary(BinaryOp::And, l, r) => Comparison::And(sub(l)?, sub(r)?),
            ExprKind::Binary(BinaryOp::Or, l, r) => Comparison::Or(sub(l)?, sub(r)?),
            ExprKind::Binary(op, l, r) => Comparison::Op(*op, operand(l)?, operand(r)?),
            ExprKind::Unary(UnaryOp::Not, x) => Comparison::Not(sub(x)?),
            _ => Comparison::Is(operand(e)?),
        })
    }

    /// Its truth at lifeline `me` whose variables are `env` and whose view
    /// knows `known`: as the interpreter's, an operand without a value (a
    /// variable not bound yet, a `seen` of no visible event) or an error
    /// (an overflow) makes it false.
    pub(super) fn holds<E: Env + ?Sized>(
        &self,
        env: &E,
        me: LifelineId,
        known: &Knowledge,
        types: &TypeTable,
    ) -> bool {
        self.value(env, me, known, types) == Some(true)
    }

    /// Its value, `None` where the interpreter fails; `and` and `or`
    /// short-circuit as the interpreter's do (an error on the side not
    /// evaluated does not count).
    fn value<E: Env + ?Sized>(
        &self,
        env: &E,
        me: LifelineId,
        known: &Knowledge,
        types: &TypeTable,
    ) -> Option<bool> {
        let bool_of = |v: &Value| match v {
            Value::Bool(b) => Some(*b),
            _ => None,
        };
        match self {
            Comparison::Op(op, l, r) => {
                let l = operand(l, env, me, known)?;
                let r = operand(r, env, me, known)?;
                bool_of(&binary(*op, &l, &r, types).ok()?)
            }
            Comparison::And(l, r) => match l.value(env, me, known, types)? {
                false => Some(false),
                true => r.value(env, me, known, types),
            },
            Comparison::Or(l, r) => match l.value(env, me, known, types)? {
                true => Some(true),
                false => r.value(env, me, known, types),
            },
            Comparison::Not(x) => x.value(env, me, known, types).map(|b| !b),
            Comparison::Is(o) => bool_of(operand(o, env, me, known)?.as_ref()),
        }
    }
}

fn operand<'a, E: Env + ?Sized>(
    o: &'a Operand,
    env: &'a E,
    me: LifelineId,
    known: &'a Knowledge,
) -> Option<Cow<'a, Value>> {
    let var = |v: VarId| match env.get(v) {
        Some(x) => Some(Cow::Borrowed(x)),
        // An environment that computes its values (see `Env::value`).
        None => env.value(v).map(Cow::Owned),
    };
    match o {
        Operand::Var(v) => var(*v),
        Operand::Lit(x) => Some(Cow::Borrowed(x)),
        // A lifeline's own latest value is its variable's.
        Operand::Seen(b, v, _) if *b == me => var(*v),
        Operand::Seen(_, _, slot) => known
            .seen
            .as_slice()
            .get(*slot)?
            .as_ref()
            .map(Cow::Borrowed),
    }
}
