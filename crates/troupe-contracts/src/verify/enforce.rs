//! The contracts at run time, for the tool calls a model chooses.
//!
//! **What**: [`Enforcer`] answers two questions for a call of a tool with
//! concrete arguments: does it need a person's confirmation first (its
//! contract is transactional or requires confirmation), and does it break a
//! `requires` relation — is there no successful earlier call of the
//! required tool, in the same run, whose bound values are equal to this
//! call's? — or a `precedes` relation another tool's contract states
//! towards it (`get_ticket precedes email_ticket` with `ticket_id` bound:
//! an `email_ticket` of a ticket no earlier `get_ticket` of this run
//! returned is refused). The contracts are those of [`crate::resolve`]:
//! the sidecar merged with what the servers published, the strictest
//! winning. The relation means what E0602 checks statically
//! ([`super::requirement`]): the bindings' names are resolved by the same
//! function (a parameter of the required tool, one of its outputs, or a
//! field of its single record output); a `via` binding asks for a call of
//! the third tool whose own bindings hold and whose `field` is the required
//! call's value; a `guard` asks the required call's outputs to have the
//! stated values. Statically "the same value" is the same provenance; at
//! run time it is the same value.
//!
//! **Why**: a model's calls are not in the workflow, so the static checks
//! cannot see them; without this a model could debit an account nobody
//! checked, or book a ticket nobody confirmed.
//!
//! **Example**: a model that calls `book_ticket(user_id: "u1", price: 45)`
//! before any `check_balance(account: <u1's account>, amount: 45)` that
//! answered `valid` and `sufficient` is told which requirement is unmet, and
//! the server sees no call.

use std::path::Path;
use std::sync::Arc;

use troupe_check::Value;
use troupe_check::ir::{Action, ActionId, Program};

use super::load::{Contracts, actions_for_tool, param_index, tool_of};
use super::requirement::{Side, resolve_other};
use crate::contract::{Binding, Relation, RelationKind, ToolContract};
use crate::resolve::PublishedTools;

/// A successful tool call of the run, as the checks see it.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    pub action: ActionId,
    pub args: &'a [Value],
    pub outputs: &'a [Value],
}

/// The contracts of a program's tools, loaded for run-time checks.
#[derive(Debug)]
pub struct Enforcer {
    program: Arc<Program>,
    contracts: Contracts,
}

impl Enforcer {
    /// Loads the contracts of `program`'s tools from their servers'
    /// `contracts:` sidecars, relative to `base_dir`. A sidecar that cannot
    /// be used leaves its tools without contracts here (static verification
    /// reports it, and refuses the run, when the run starts).
    pub fn load(program: Arc<Program>, base_dir: &Path) -> Enforcer {
        Enforcer::load_with(program, base_dir, None)
    }

    /// [`Enforcer::load`] merged with what the servers published when the
    /// run listed them (the strictest source wins).
    pub fn load_with(
        program: Arc<Program>,
        base_dir: &Path,
        published: Option<&PublishedTools>,
    ) -> Enforcer {
        let mut ignored = Vec::new();
        let contracts = Contracts::load(&program, base_dir, published, &mut ignored);
        Enforcer { program, contracts }
    }

    /// The contract of tool action `id`, if it has one.
    pub fn contract(&self, id: ActionId) -> Option<&ToolContract> {
        self.contracts.get(id)
    }

    /// Whether a call of `id` needs a person's confirmation, by its
    /// contract (`None`: it has none).
    pub fn needs_confirmation(&self, id: ActionId) -> Option<bool> {
        self.contract(id)
            .map(|c| c.transactional || c.requires_confirmation)
    }

    /// Why a call of `id` with `args`, after the run's successful calls
    /// `earlier`, breaks a `requires` relation of its contract; `None` when
    /// every one holds.
    pub fn unmet(&self, id: ActionId, args: &[Value], earlier: &[Call<'_>]) -> Option<String> {
        let action = self.program.actions.get(id.0 as usize)?;
        let mut unmet: Vec<String> = self
            .contract(id)
            .iter()
            .flat_map(|c| &c.relations)
            .filter(|r| r.kind == RelationKind::Requires)
            .filter(|r| !self.holds(action, r, args, earlier))
            .map(|r| self.describe(action, r, args))
            .collect();
        unmet.extend(self.unpreceded(action, args, earlier));
        (!unmet.is_empty()).then(|| unmet.join("; "))
    }

    /// The `precedes` relations other tools of the same server state
    /// towards this call's tool that no earlier call of theirs satisfies:
    /// `A precedes B` binding `A.this = B.other` asks, before a call of
    /// `B`, for a successful call of `A` whose `this` equals the call's
    /// `other`. Only tools the workflow declares can have been called.
    fn unpreceded(&self, action: &Action, args: &[Value], earlier: &[Call<'_>]) -> Vec<String> {
        let Some(tool) = tool_of(action) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut seen: Vec<(&str, &Relation)> = Vec::new();
        for (i, before) in self.program.actions.iter().enumerate() {
            let Some(theirs) = tool_of(before).filter(|t| t.server.name == tool.server.name) else {
                continue;
            };
            let Some(contract) = self.contract(ActionId(i as u32)) else {
                continue;
            };
            for r in contract
                .relations
                .iter()
                .filter(|r| r.kind == RelationKind::Precedes && r.tool == tool.remote)
            {
                if seen.contains(&(theirs.remote.as_str(), r)) {
                    continue;
                }
                seen.push((theirs.remote.as_str(), r));
                let callers = actions_for_tool(&self.program, &tool.server.name, &theirs.remote);
                let holds = earlier
                    .iter()
                    .filter(|c| callers.contains(&c.action))
                    .any(|c| {
                        let Some(other) = self.program.actions.get(c.action.0 as usize) else {
                            return false;
                        };
                        r.bindings.iter().all(|b| {
                            let at_c = resolve_other(&self.program, other, &b.this)
                                .and_then(|side| value_at(c, side));
                            let mine = param_index(action, &b.other).and_then(|i| args.get(i));
                            at_c.is_some() && at_c == mine
                        })
                    });
                if !holds {
                    let types = &self.program.types;
                    let with: Vec<String> = r
                        .bindings
                        .iter()
                        .map(|b| {
                            let v = param_index(action, &b.other)
                                .and_then(|i| args.get(i))
                                .map_or_else(|| "?".to_owned(), |v| v.to_json(types).to_string());
                            format!("`{}` = {v} (this call's `{}`)", b.this, b.other)
                        })
                        .collect();
                    let mut text = format!(
                        "the contract of `{}` says it precedes `{}`: a successful earlier call \
                         of `{}`",
                        theirs.remote, tool.remote, theirs.remote
                    );
                    if !with.is_empty() {
                        text.push_str(&format!(" with {}", with.join(" and ")));
                    }
                    text.push_str(" is needed, and no call of this run qualifies");
                    out.push(text);
                }
            }
        }
        out
    }

    fn holds(
        &self,
        action: &Action,
        relation: &Relation,
        args: &[Value],
        earlier: &[Call<'_>],
    ) -> bool {
        let Some(tool) = tool_of(action) else {
            return true;
        };
        let required = actions_for_tool(&self.program, &tool.server.name, &relation.tool);
        earlier
            .iter()
            .filter(|c| required.contains(&c.action))
            .any(|c| {
                let Some(other) = self.program.actions.get(c.action.0 as usize) else {
                    return false;
                };
                relation
                    .bindings
                    .iter()
                    .all(|b| self.binding_holds(action, other, b, args, c, earlier))
                    && relation.guard.iter().all(|g| {
                        resolve_other(&self.program, other, &g.output)
                            .and_then(|side| value_at(c, side))
                            == Some(&Value::Bool(g.equals))
                    })
            })
    }

    /// One binding at a candidate call `c` of the required tool `other`.
    fn binding_holds(
        &self,
        action: &Action,
        other: &Action,
        b: &Binding,
        args: &[Value],
        c: &Call<'_>,
        earlier: &[Call<'_>],
    ) -> bool {
        let Some(theirs) =
            resolve_other(&self.program, other, &b.other).and_then(|s| value_at(c, s))
        else {
            return false;
        };
        let Some(via) = &b.via else {
            return param_index(action, &b.this)
                .and_then(|i| args.get(i))
                .is_some_and(|mine| mine == theirs);
        };
        // Through a third tool: one of its calls whose own bindings hold
        // for this call gave the required call's value.
        let Some(tool) = tool_of(action) else {
            return false;
        };
        let third = actions_for_tool(&self.program, &tool.server.name, &via.tool);
        earlier
            .iter()
            .filter(|g| third.contains(&g.action))
            .any(|g| {
                let Some(t) = self.program.actions.get(g.action.0 as usize) else {
                    return false;
                };
                let bound = via.bindings.iter().all(|vb| {
                    let mine = param_index(action, &vb.this).and_then(|i| args.get(i));
                    let at_g =
                        resolve_other(&self.program, t, &vb.other).and_then(|s| value_at(g, s));
                    mine.is_some() && mine == at_g
                });
                bound
                    && resolve_other(&self.program, t, &via.field).and_then(|s| value_at(g, s))
                        == Some(theirs)
            })
    }

    /// The relation in words, with this call's values.
    fn describe(&self, action: &Action, relation: &Relation, args: &[Value]) -> String {
        let types = &self.program.types;
        let shown = |name: &str| {
            param_index(action, name)
                .and_then(|i| args.get(i))
                .map_or_else(|| "?".to_owned(), |v| v.to_json(types).to_string())
        };
        let mut with: Vec<String> = Vec::new();
        for b in &relation.bindings {
            match &b.via {
                None => with.push(format!(
                    "`{}` = {} (this call's `{}`)",
                    b.other,
                    shown(&b.this),
                    b.this
                )),
                Some(via) => {
                    let of: Vec<String> = via
                        .bindings
                        .iter()
                        .map(|vb| format!("`{}` = {}", vb.other, shown(&vb.this)))
                        .collect();
                    with.push(format!(
                        "`{}` = the `{}` that `{}` gave for {}",
                        b.other,
                        via.field,
                        via.tool,
                        of.join(", ")
                    ));
                }
            }
        }
        let mut text = format!(
            "the contract of `{}` requires a successful earlier call of `{}`",
            action.name, relation.tool
        );
        if !with.is_empty() {
            text.push_str(&format!(" with {}", with.join(" and ")));
        }
        if !relation.guard.is_empty() {
            let g: Vec<String> = relation
                .guard
                .iter()
                .map(|g| format!("`{}` {}", g.output, g.equals))
                .collect();
            text.push_str(&format!(" that answered {}", g.join(" and ")));
        }
        text.push_str(", and no call of this run qualifies");
        text
    }
}

fn value_at<'a>(c: &Call<'a>, side: Side) -> Option<&'a Value> {
    match side {
        Side::Arg(i) => c.args.get(i),
        Side::Output(i) => c.outputs.get(i),
        Side::OutputField(i, f) => match c.outputs.get(i)? {
            Value::Record(_, fields) => fields.get(f as usize),
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use troupe_check::types::RecordId;

    fn example() -> (Arc<Program>, Enforcer) {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
        let text = std::fs::read_to_string(dir.join("agent_booking.troupe")).unwrap();
        let program = Arc::new(troupe_check::check_text(&text).0.unwrap());
        let enforcer = Enforcer::load(program.clone(), &dir);
        (program, enforcer)
    }

    fn id(p: &Program, name: &str) -> ActionId {
        ActionId(p.actions.iter().position(|a| a.name == name).unwrap() as u32)
    }

    fn t(s: &str) -> Value {
        Value::text(s)
    }

    /// `book_ticket(u1, …, price)` against every way its two `requires`
    /// (with a `via` binding and a guard) can fail, one at a time.
    #[test]
    fn each_binding_via_and_guard_of_a_requirement_is_needed() {
        let (p, e) = example();
        let (user, balance, book) = (
            id(&p, "get_user"),
            id(&p, "check_balance"),
            id(&p, "book_ticket"),
        );
        let customer = RecordId(
            p.types
                .records
                .iter()
                .position(|r| r.name == "Customer")
                .unwrap() as u32,
        );
        let ada = |account: &str| {
            vec![Value::Record(
                customer,
                vec![t("u1"), t("Ada"), t("ada@x"), t(account)].into(),
            )]
        };
        let eco = Value::Enum(troupe_check::types::EnumId(0), 0);
        let args = vec![
            t("u1"),
            t("Paris"),
            t("Lyon"),
            t("2026-12-24"),
            eco,
            Value::Float(47.0),
        ];
        let (u1, ada_acct) = (vec![t("u1")], ada("acct-ada"));
        let checked = |account: &str, amount: f64, sufficient: bool| {
            (
                vec![t(account), Value::Float(amount)],
                vec![Value::Bool(true), Value::Bool(sufficient)],
            )
        };
        let unmet = |calls: &[(ActionId, &[Value], &[Value])]| {
            let calls: Vec<Call<'_>> = calls
                .iter()
                .map(|(action, args, outputs)| Call {
                    action: *action,
                    args,
                    outputs,
                })
                .collect();
            e.unmet(book, &args, &calls)
        };
        let ok = checked("acct-ada", 47.0, true);
        assert_eq!(
            unmet(&[(user, &u1, &ada_acct), (balance, &ok.0, &ok.1)]),
            None
        );
        assert!(
            e.needs_confirmation(book) == Some(true) && e.needs_confirmation(user) == Some(false)
        );
        // Nothing before: both relations unmet, each named.
        let why = unmet(&[]).unwrap();
        assert!(
            why.contains("`check_balance`") && why.contains("`get_user`"),
            "{why}"
        );
        // Another amount, another account, an insufficient balance, the
        // account of another user: each breaks the check_balance relation.
        for (a, b) in [
            checked("acct-ada", 46.0, true),
            checked("acct-alan", 47.0, true),
            checked("acct-ada", 47.0, false),
        ] {
            let why = unmet(&[(user, &u1, &ada_acct), (balance, &a, &b)]).unwrap();
            assert!(
                why.contains("`check_balance`") && !why.contains("`get_user` with"),
                "{why}"
            );
        }
        let other = ada("acct-other");
        assert!(unmet(&[(user, &u1, &other), (balance, &ok.0, &ok.1)]).is_some());
        // The relations bind the customer's `id` (a field of the output), so
        // a lookup that gave another user does not count for u1.
        let alan = vec![Value::Record(
            customer,
            vec![t("u2"), t("Alan"), t("a@x"), t("acct-ada")].into(),
        )];
        let u2 = vec![t("u2")];
        assert!(unmet(&[(user, &u2, &alan), (balance, &ok.0, &ok.1)]).is_some());
    }
}
