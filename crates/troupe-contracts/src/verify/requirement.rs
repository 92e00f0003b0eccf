//! E0602 `missing-requirement`: every `requires` relation of a called tool
//! holds on every path; E0607 `missing-predecessor`: so does every
//! `precedes` relation another tool states towards it (the same check, the
//! relation turned around).
//!
//! **What**: when the contract of a called tool says it `requires` another
//! tool of the same server, that tool must have been called before it (in
//! the global order of the workflow, at any lifeline) on every path to the
//! call. With bindings (`{"this": "account", "other": "account"}`), the
//! earlier call must have had the same values: `this` names a parameter of
//! the calling tool, `other` a parameter of the required tool (or one of its
//! outputs, or a field of its single record output). "The same value" is
//! decided by provenance: the same workflow input, the same output of the
//! same call, the same literal, or a field of the same value, however many
//! messages and copies carried it. A binding that names no parameter of the
//! troupe declaration is a contract mismatch (E0604, at the declaration).
//!
//! "Every path" is over the structured workflow: both branches of an `if`;
//! a `while` body may run zero times, and a call inside a loop body counts
//! only within the same iteration (after the loop, only if the exit block or
//! the code before the loop makes it).
//!
//! **Why**: a `requires` relation is a precondition of the tool (MCP+
//! principle 4): `book_ticket` debits an account only checked by
//! `check_balance` — the same account, not another one.
//!
//! **Example**: `act Bank: ok = check_balance(account, price)` before
//! `act Agent: t = book_ticket(account, price)`, with `account` and `price`
//! sent from one lifeline to the other.

use std::collections::{HashMap, HashSet};

use troupe_check::ir::{Action, ActionId, Expr, Program, StmtId, StmtKind, ToolAction};
use troupe_check::types::Type;
use troupe_syntax::{Code, Diagnostic};

use super::Context;
use super::describe::join_and;
use super::flow::{Branch, CallSite, Flow, Origin, UNBOUND, ValueId};
use super::load::{actions_for_tool, param_index, tool_of};
use crate::contract::{Binding, Relation, RelationKind};

/// The E0602 (and binding-related E0604) findings of one workflow.
pub(crate) fn check(cx: &Context<'_>) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for call in &cx.flow.calls {
        let (Some(contract), Some(action)) =
            (cx.contracts.get(call.action), cx.action(call.action))
        else {
            continue;
        };
        let Some(tool) = tool_of(action) else {
            continue;
        };
        for relation in &contract.relations {
            if relation.kind == RelationKind::Requires {
                check_relation(cx, call, action, tool, relation, &mut out);
            }
        }
    }
    // E0607: `A precedes B` is, for every call of `B`, a requirement of an
    // earlier call of `A` with `A.this = B.other`: the same check with the
    // relation turned around, reported in its own words.
    for call in &cx.flow.calls {
        let Some(action) = cx.action(call.action) else {
            continue;
        };
        let Some(tool) = tool_of(action) else {
            continue;
        };
        for (before, relation) in preceding(cx, tool) {
            let turned = Relation {
                kind: RelationKind::Requires,
                tool: before.clone(),
                bindings: relation
                    .bindings
                    .iter()
                    .filter(|b| b.via.is_none())
                    .map(|b| Binding {
                        this: b.other.clone(),
                        other: b.this.clone(),
                        via: None,
                    })
                    .collect(),
                guard: Vec::new(),
            };
            let mut found = Vec::new();
            check_relation(cx, call, action, tool, &turned, &mut found);
            for mut d in found {
                if d.code == Code::MissingRequirement {
                    d.code = Code::MissingPredecessor;
                    d.message = format!(
                        "the contract of `{before}` says it precedes `{}`: {}",
                        tool.remote, d.message
                    );
                    d.label = Some(format!("`{before}` must come first"));
                }
                out.push(d);
            }
        }
    }
    out
}

/// The `precedes` relations towards `tool` stated by the contracts of the
/// program's other tools of its server: (the preceding tool, the relation),
/// once per remote tool.
fn preceding<'a>(cx: &'a Context<'_>, tool: &ToolAction) -> Vec<(String, &'a Relation)> {
    let mut out: Vec<(String, &Relation)> = Vec::new();
    for (i, other) in cx.program.actions.iter().enumerate() {
        let Some(theirs) = tool_of(other).filter(|t| t.server.name == tool.server.name) else {
            continue;
        };
        let Some(contract) = cx.contracts.get(ActionId(i as u32)) else {
            continue;
        };
        for r in contract
            .relations
            .iter()
            .filter(|r| r.kind == RelationKind::Precedes && r.tool == tool.remote)
        {
            if !out.iter().any(|(t, x)| *t == theirs.remote && *x == r) {
                out.push((theirs.remote.clone(), r));
            }
        }
    }
    out
}

/// Where the `other` side of a binding is found at a call of the required
/// tool (shared with the run-time check, [`super::enforce`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Arg(usize),
    Output(usize),
    OutputField(usize, u32),
}

pub(crate) fn resolve_other(program: &Program, action: &Action, name: &str) -> Option<Side> {
    if let Some(i) = param_index(action, name) {
        return Some(Side::Arg(i));
    }
    if let Some(i) = action.outputs.iter().position(|o| o.name == name) {
        return Some(Side::Output(i));
    }
    if let [only] = action.outputs.as_slice()
        && let Type::Record(id) = &only.ty
        && let Some(record) = program.types.records.get(id.0 as usize)
        && let Some((field, _)) = record.field(name)
    {
        return Some(Side::OutputField(0, field));
    }
    None
}

fn value_at(flow: &Flow<'_>, site: &CallSite<'_>, field: Side) -> Option<ValueId> {
    let output = |index| {
        flow.lookup(&Origin::Output {
            stmt: site.stmt,
            index,
        })
    };
    match field {
        Side::Arg(i) => site.args.get(i).copied(),
        Side::Output(i) => output(i),
        Side::OutputField(i, f) => flow.lookup(&Origin::Field(output(i)?, f)),
    }
}

/// One binding with the value the checked call gives its `this` side.
struct Wanted<'a> {
    binding: &'a Binding,
    value: ValueId,
    expr: Option<&'a Expr>,
}

fn check_relation(
    cx: &Context<'_>,
    call: &CallSite<'_>,
    action: &Action,
    tool: &ToolAction,
    relation: &Relation,
    out: &mut Vec<Diagnostic>,
) {
    let flow = cx.flow;
    let name = action.name.as_str();
    let mut wanted = Vec::new();
    for binding in relation.bindings.iter().filter(|b| b.via.is_none()) {
        match param_index(action, &binding.this) {
            Some(i) => wanted.push(Wanted {
                binding,
                value: call.args.get(i).copied().unwrap_or(UNBOUND),
                expr: call.arg_exprs.get(i),
            }),
            None => {
                out.push(mismatch(
                    action,
                    format!(
                        "the contract of `{name}` binds its `{}` in `requires {}`, but `{name}` \
                         declares no parameter `{}`",
                        binding.this, relation.tool, binding.this
                    ),
                ));
                return;
            }
        }
    }
    let required = actions_for_tool(cx.program, &tool.server.name, &relation.tool);
    let mut fields: HashMap<ActionId, Vec<Side>> = HashMap::new();
    'actions: for &id in &required {
        let Some(other) = cx.action(id) else { continue };
        let mut resolved = Vec::new();
        for w in &wanted {
            match resolve_other(cx.program, other, &w.binding.other) {
                Some(field) => resolved.push(field),
                None => {
                    out.push(mismatch(
                        other,
                        format!(
                            "the contract of `{name}` binds its `{}` to `{}` of `{}`, but `{}` \
                             declares no parameter or output `{}`",
                            w.binding.this,
                            w.binding.other,
                            relation.tool,
                            other.name,
                            w.binding.other
                        ),
                    ));
                    continue 'actions;
                }
            }
        }
        fields.insert(id, resolved);
    }
    let Some(vias) = resolve_vias(cx, call, action, tool, relation, &required, out) else {
        return;
    };
    let satisfies = |s: StmtId| -> bool {
        let Some(site) = flow.call(s) else {
            return false;
        };
        let Some(resolved) = fields.get(&site.action) else {
            return false;
        };
        wanted
            .iter()
            .zip(resolved)
            .all(|(w, &f)| w.value != UNBOUND && value_at(flow, site, f) == Some(w.value))
            && vias.iter().all(|via| via.holds(flow, site))
    };

    // Fast path: a satisfying call earlier in the same block or an enclosing
    // one (every ancestor of it encloses the call too, in the same branch)
    // runs before the call on every path.
    let enclosing: HashMap<StmtId, Branch> = flow.ancestors(call.stmt).into_iter().collect();
    let dominated = flow
        .calls_before(call.stmt)
        .filter(|c| fields.contains_key(&c.action))
        .any(|c| {
            satisfies(c.stmt)
                && flow
                    .ancestors(c.stmt)
                    .iter()
                    .all(|(a, b)| enclosing.get(a) == Some(b))
        });
    let missing = if dominated {
        None
    } else {
        flow.path_avoiding(call.stmt, &satisfies)
    };
    let Some(path) = missing else {
        // The required call happens; its result must decide too.
        if !relation.guard.is_empty() {
            check_guard(cx, call, name, relation, &required, &satisfies, out);
        }
        return;
    };
    out.push(report(
        cx, call, name, tool, relation, &required, &fields, &wanted, &path,
    ));
}

/// A binding through a third tool, resolved against the declarations: the
/// required tool's side, and the calls of the third tool that qualify.
struct ResolvedVia {
    /// Per required action: where its `other` value is.
    other: HashMap<ActionId, Side>,
    /// The values the required tool's `other` may have: `field` of every
    /// call of the third tool whose own bindings hold.
    allowed: HashSet<ValueId>,
}

impl ResolvedVia {
    fn holds(&self, flow: &Flow<'_>, site: &CallSite<'_>) -> bool {
        self.other
            .get(&site.action)
            .and_then(|&side| value_at(flow, site, side))
            .is_some_and(|v| self.allowed.contains(&v))
    }
}

/// Resolves the `via` bindings of `relation`; `None` (after reporting an
/// E0604) when a name in them matches no declaration.
fn resolve_vias(
    cx: &Context<'_>,
    call: &CallSite<'_>,
    action: &Action,
    tool: &ToolAction,
    relation: &Relation,
    required: &[ActionId],
    out: &mut Vec<Diagnostic>,
) -> Option<Vec<ResolvedVia>> {
    let flow = cx.flow;
    let name = action.name.as_str();
    let mut resolved = Vec::new();
    for binding in &relation.bindings {
        let Some(via) = &binding.via else { continue };
        let mut other = HashMap::new();
        for &id in required {
            let Some(req) = cx.action(id) else { continue };
            match resolve_other(cx.program, req, &binding.other) {
                Some(side) => {
                    other.insert(id, side);
                }
                None => {
                    out.push(mismatch(
                        req,
                        format!(
                            "the contract of `{name}` binds `{}` of `{}` through `{}`, but `{}` declares no parameter or output `{}`",
                            binding.other, relation.tool, via.tool, req.name, binding.other
                        ),
                    ));
                    return None;
                }
            }
        }
        // This call's values for the third tool's bindings.
        let mut wanted: Vec<(ValueId, &str)> = Vec::new();
        for b in &via.bindings {
            let Some(i) = param_index(action, &b.this) else {
                out.push(mismatch(
                    action,
                    format!(
                        "the contract of `{name}` binds its `{}` to `{}` of `{}`, but `{name}` declares no parameter `{}`",
                        b.this, b.other, via.tool, b.this
                    ),
                ));
                return None;
            };
            wanted.push((
                call.args.get(i).copied().unwrap_or(UNBOUND),
                b.other.as_str(),
            ));
        }
        let mut allowed = HashSet::new();
        for &id in &actions_for_tool(cx.program, &tool.server.name, &via.tool) {
            let Some(third) = cx.action(id) else { continue };
            let Some(field) = resolve_other(cx.program, third, &via.field) else {
                out.push(mismatch(
                    third,
                    format!(
                        "the contract of `{name}` reads `{}` of `{}`, but `{}` declares no parameter or output `{}`",
                        via.field, via.tool, third.name, via.field
                    ),
                ));
                return None;
            };
            let mut sides = Vec::new();
            for &(_, other_name) in &wanted {
                match resolve_other(cx.program, third, other_name) {
                    Some(side) => sides.push(side),
                    None => {
                        out.push(mismatch(
                            third,
                            format!(
                                "the contract of `{name}` binds `{other_name}` of `{}`, but `{}` declares no parameter or output `{other_name}`",
                                via.tool, third.name
                            ),
                        ));
                        return None;
                    }
                }
            }
            for site in flow.calls.iter().filter(|c| c.action == id) {
                let matches = wanted.iter().zip(&sides).all(|(&(value, _), &side)| {
                    value != UNBOUND && value_at(flow, site, side) == Some(value)
                });
                if matches && let Some(v) = value_at(flow, site, field) {
                    allowed.insert(v);
                }
            }
        }
        resolved.push(ResolvedVia { other, allowed });
    }
    Some(resolved)
}

/// E0602 when no enclosing guard tests the required tool's results as the
/// relation's `guard` says.
fn check_guard(
    cx: &Context<'_>,
    call: &CallSite<'_>,
    name: &str,
    relation: &Relation,
    required: &[ActionId],
    satisfies: &dyn Fn(StmtId) -> bool,
    out: &mut Vec<Diagnostic>,
) {
    let flow = cx.flow;
    let ancestors = flow.ancestors(call.stmt);
    let mut missing = Vec::new();
    for condition in &relation.guard {
        let mut targets = HashSet::new();
        for site in flow.calls.iter().filter(|c| required.contains(&c.action)) {
            if !satisfies(site.stmt) {
                continue;
            }
            let Some(action) = cx.action(site.action) else {
                continue;
            };
            if let Some(side) = resolve_other(cx.program, action, &condition.output)
                && let Some(v) = value_at(flow, site, side)
            {
                targets.insert(v);
            }
        }
        let tested = !targets.is_empty()
            && ancestors.iter().any(|&(s, branch)| {
                flow.guard(s).is_some_and(|g| {
                    flow.implies(g, branch.guard_holds(), &targets, condition.equals)
                })
            });
        if !tested {
            missing.push(format!("`{} == {}`", condition.output, condition.equals));
        }
    }
    if missing.is_empty() {
        return;
    }
    let required_name = required
        .first()
        .map_or(relation.tool.as_str(), |&id| cx.action_name(id));
    let path = cx
        .describe
        .path(flow, &ancestors.iter().rev().copied().collect::<Vec<_>>());
    out.push(
        Diagnostic::error(
            Code::MissingRequirement,
            call.span,
            format!(
                "`{name}` requires the result of `{required_name}` to decide: {} must hold where `{name}` runs, but {path} no enclosing `if` or `while` tests {} of the `{required_name}` call that the relation binds",
                join_and(&missing),
                if missing.len() == 1 { "it" } else { "them" }
            ),
        )
        .with_label(format!("`{required_name}`'s answer is not tested here"))
        .with_hint(format!(
            "call `{name}` only inside `if {} @ … {{ … }}` on the results of that `{required_name}` call (sent with `msg` to the deciding lifeline)",
            relation
                .guard
                .iter()
                .map(|c| if c.equals {
                    c.output.clone()
                } else {
                    format!("not {}", c.output)
                })
                .collect::<Vec<_>>()
                .join(" and ")
        )),
    );
}

fn mismatch(action: &Action, message: String) -> Diagnostic {
    Diagnostic::error(Code::ContractUnavailable, action.span, message)
        .with_label("declared here")
        .with_hint(
            "the names in a contract's bindings are the tool's MCP argument names; declare the \
             parameters with those names, or fix the sidecar",
        )
}

#[allow(clippy::too_many_arguments)]
fn report(
    cx: &Context<'_>,
    call: &CallSite<'_>,
    name: &str,
    tool: &ToolAction,
    relation: &Relation,
    required: &[ActionId],
    fields: &HashMap<ActionId, Vec<Side>>,
    wanted: &[Wanted<'_>],
    path: &super::flow::Path,
) -> Diagnostic {
    let flow = cx.flow;
    let describe = &cx.describe;
    let required_name = required
        .first()
        .map_or(relation.tool.as_str(), |&id| cx.action_name(id));
    let same = if wanted.is_empty() {
        String::new()
    } else {
        let parts: Vec<String> = wanted
            .iter()
            .map(|w| {
                if w.binding.this == w.binding.other {
                    format!("`{}`", w.binding.this)
                } else {
                    format!("`{}` (as its `{}`)", w.binding.this, w.binding.other)
                }
            })
            .collect();
        format!(" with the same {}", join_and(&parts))
    };
    let sites: Vec<StmtId> = flow
        .calls
        .iter()
        .filter(|c| required.contains(&c.action))
        .map(|c| c.stmt)
        .collect();
    let around_sites: HashSet<StmtId> = sites
        .iter()
        .flat_map(|&s| flow.ancestors(s))
        .map(|(a, _)| a)
        .collect();
    let choices: Vec<(StmtId, Branch)> = path
        .choices
        .iter()
        .filter(|(c, _)| around_sites.contains(c))
        .copied()
        .collect();
    let path_text = if choices.is_empty() {
        String::new()
    } else {
        format!("{}, ", describe.path(flow, &choices))
    };
    let mut related = Vec::new();
    let detail = if required.is_empty() {
        format!(
            "no action of this file calls tool `{}` of server `{}`",
            relation.tool, tool.server.name
        )
    } else if let Some(site) = path
        .passed
        .iter()
        .find(|s| sites.contains(s))
        .and_then(|&s| flow.call(s))
    {
        let differs = fields.get(&site.action).and_then(|resolved| {
            wanted
                .iter()
                .zip(resolved)
                .find(|&(w, &f)| value_at(flow, site, f) != Some(w.value))
        });
        let line = describe.line(site.span);
        match differs {
            Some((w, &f)) => {
                let theirs = match f {
                    Side::Arg(i) => site
                        .arg_exprs
                        .get(i)
                        .map_or_else(|| "its default".to_owned(), |e| describe.expr(e)),
                    Side::Output(_) | Side::OutputField(..) => "its result".to_owned(),
                };
                let ours = w
                    .expr
                    .map_or_else(|| "its default".to_owned(), |e| describe.expr(e));
                related.push((
                    site.span,
                    format!(
                        "`{required_name}` is called with another `{}` here",
                        w.binding.other
                    ),
                ));
                format!(
                    "{path_text}`{required_name}`{line} is called with `{}` = `{theirs}` while \
                     `{name}` gets `{}` = `{ours}`, which is not the same value",
                    w.binding.other, w.binding.this
                )
            }
            None => format!(
                "{path_text}`{required_name}`{line} is not called with the same values before \
                 `{name}`"
            ),
        }
    } else {
        format!("{path_text}`{required_name}` is not called before `{name}`")
    };
    for &(c, branch) in &choices {
        let Some(stmt) = flow.stmt(c) else { continue };
        let what = match (&stmt.kind, branch) {
            (StmtKind::If { .. }, Branch::Then) => "true",
            (StmtKind::If { .. }, _) => "false",
            (_, Branch::Exit) => "run zero times",
            _ => "in its first iteration",
        };
        related.push((stmt.span, format!("on that path this is {what}")));
    }
    let mut diagnostic = Diagnostic::error(
        Code::MissingRequirement,
        call.span,
        format!("`{name}` requires a call of `{required_name}`{same} before it, but {detail}"),
    )
    .with_label(format!("requires `{required_name}` first"))
    .with_hint(format!(
        "call `{required_name}`{same} before `{name}` on every path (e.g. before the `if` that \
         splits the paths, or in each branch), passing the same values: a value sent by `msg`, \
         copied with `act X: y = x` or read as `r.field` stays the same value, a recomputed \
         one does not"
    ));
    for (span, label) in related {
        diagnostic = diagnostic.with_related(span, label);
    }
    diagnostic
}

#[cfg(test)]
mod tests {
    use crate::verify::tests::run;

    const DECLS: &str = r#"
        record User { id: Text, account: Text }
        mcp s { command: "srv" contracts: "c.json" }
        tool who(id: Text) -> User { server: s }
        tool check(acct: Text, limit: Int = 10) -> Bool { server: s }
        tool pay(account: Text, limit: Int = 10) -> Text { server: s }
    "#;
    const SIDECAR: &str = r#"{"pay": {"transactional": false, "requires_confirmation": false,
        "relations": [{"kind": "requires", "tool": "check",
                       "bindings": [{"this": "account", "other": "acct"},
                                    {"this": "limit", "other": "limit"}]}]}}"#;

    fn lines(body: &str) -> Vec<u32> {
        run(&format!("{DECLS}{body}"), SIDECAR)
            .into_iter()
            .map(|(code, line)| {
                assert_eq!(code, "E0602");
                line
            })
            .collect()
    }

    #[test]
    fn same_value_through_fields_messages_and_defaults() {
        assert_eq!(
            lines(
                "workflow w(id: Text @ A) {
                   act A: u = who(id)
                   msg A(u) -> B(v)
                   act B: ok = check(v.account)
                   act A: a = u.account
                   act A: _ = pay(a, 10)
                 }"
            ),
            Vec::<u32>::new()
        );
    }

    #[test]
    fn another_value_or_a_missing_branch_fails() {
        assert_eq!(
            lines(
                "workflow w(id: Text @ A, c: Bool @ A, other: Text @ A) {
                   act A: u = who(id)
                   act A: ok = check(other)
                   act A: _ = pay(u.account)
                   if c @ A { act A: ok = check(u.account) }
                   act A: _ = pay(u.account)
                   act A: ok = check(u.account, 11)
                   act A: _ = pay(u.account, 11)
                   act A: _ = pay(u.account + \"\")
                 }"
            ),
            vec![10, 12, 15]
        );
    }
}
