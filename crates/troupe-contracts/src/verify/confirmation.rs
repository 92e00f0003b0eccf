//! E0601 `unconfirmed-transaction`: one confirmation per transaction
//! instance.
//!
//! **What**: every execution of a call of a tool whose contract is
//! `transactional` or `requires_confirmation` must be confirmed by a fresh
//! answer of a person that showed what is confirmed. Exactly, for call `C`
//! of tool `T`, some enclosing construct `G` (an `if` true branch or a
//! `while` body; or the false branch / `exit` block of `not ok`) must satisfy
//! all of:
//!
//! 1. *confirmed*: `G`'s guard is a person's confirmation: the `Bool` answer
//!    of a `human` action, carried by messages and copies to the deciding
//!    lifeline, tested as `ok`, `ok == true`, or in a conjunction `ok and …`
//!    (an `or`, a negation on the true side, or any other computation does
//!    not count; neither does a variable that holds the answer on some paths
//!    only). Let `S` be the confirmation calls whose answers flow into the
//!    guard;
//! 2. *fresh*: no execution of a call of `T` (at any call site, `C` itself
//!    included) lies between the answer the guard tests and `C`: there is
//!    no control-flow path from a call of `T` to `C` that avoids `G`'s guard
//!    (the call ran after the guard was evaluated, e.g. a second booking in
//!    the same branch or a loop inside it), and no path from a call of `T`
//!    that some `S` call can reach, to `G`'s guard, that avoids every `S`
//!    call (the answer was given before that call, e.g. `while ok` where `ok`
//!    is never asked again, or a loop around `if ok`);
//! 3. *shown*: every argument the contract lists in `confirmation_shows`
//!    (default: every argument of the call) is, by provenance, among the
//!    inputs of every question in `S`: the argument's value is one of the
//!    confirmation's arguments, or one of the values a string or other
//!    computation among them was computed from (a shown record shows its
//!    fields; a merge shows a value when all its operands do).
//!
//! **Minimal failing examples**: `if ok @ A { book(x) book(x) }`;
//! `if ok @ A { while more @ A { book(x) } }`; `while ok @ A { book(x) }`;
//! `act U: ok = ask("Do you like trains?")` then `if ok @ U { book(x) }`.
//! **Passing**: `act U: ok = ask("{x}")`, `if ok @ U { act U: _ = book(x) }`;
//! `while ok @ U { act U: _ = book(x) act U: ok = ask("{x}") }`.
//!
//! **Limits**: paths are those of the structured control flow (guards are
//! not evaluated, so a path that no run takes may be reported); "the same
//! value" is provenance, so a question recomputed from equal but other
//! values does not count; two calls of *different* transactional tools may
//! share one confirmation (each question must show each call's arguments).
//!
//! **Why**: MCP+ makes the action boundary a commitment: the tool changes the
//! world and a person must agree to each call, knowing what it does, before
//! it runs.
//!
//! **Example**: `act User: ok = confirm_booking(summary)`,
//! `msg User(ok) -> Agent(ok)`, `if ok @ Agent { act Agent: t = book_ticket(…) }`.

use std::collections::{BTreeSet, HashSet};

use troupe_check::ir::{StmtId, StmtKind};
use troupe_syntax::{Code, Diagnostic};

use super::Context;
use super::describe::join_and;
use super::flow::{Branch, CallSite, UNBOUND};
use super::load::param_index;
use crate::contract::ToolContract;

/// Why a confirming construct does not confirm this execution of the call.
enum Stale {
    /// A call of the same tool runs after the guard and before the call.
    AfterGuard { guard: StmtId, other: StmtId },
    /// A call of the same tool runs after the answer and before the guard.
    BeforeGuard { guard: StmtId, other: StmtId },
    /// The question does not show this argument.
    NotShown {
        guard: StmtId,
        asked: StmtId,
        argument: String,
    },
}

/// The E0601 findings of one workflow.
pub(crate) fn check(cx: &Context<'_>) -> Vec<Diagnostic> {
    let flow = cx.flow;
    let mut out = Vec::new();
    // The calls one answer may confirm at most one of: every call of a
    // tool that needs a confirmation (one answer confirms one call of one
    // tool, so a yes for a booking does not also pay for a transfer).
    let confirmed: HashSet<StmtId> = flow
        .calls
        .iter()
        .filter(|c| {
            cx.contracts
                .get(c.action)
                .is_some_and(|k| k.transactional || k.requires_confirmation)
        })
        .map(|c| c.stmt)
        .collect();
    for call in &flow.calls {
        let Some(contract) = cx.contracts.get(call.action) else {
            continue;
        };
        if !(contract.transactional || contract.requires_confirmation) {
            continue;
        }
        if let (Some(names), Some(action)) = (&contract.confirmation_shows, cx.action(call.action))
            && let Some(unknown) = names.iter().find(|n| param_index(action, n).is_none())
        {
            out.push(
                Diagnostic::error(
                    Code::ContractUnavailable,
                    action.span,
                    format!(
                        "the contract of `{}` says a confirmation must show `{unknown}`, but \
                         `{}` declares no parameter `{unknown}`",
                        action.name, action.name
                    ),
                )
                .with_label("declared here")
                .with_hint(
                    "`confirmation_shows` lists the tool's MCP argument names; declare the \
                     parameters with those names, or fix the sidecar",
                ),
            );
        }
        let same_tool = &confirmed;
        let ancestors = flow.ancestors(call.stmt);
        let confirming: Vec<(StmtId, Branch)> = ancestors
            .iter()
            .copied()
            .filter(|&(s, b)| flow.confirms(s, b))
            .collect();
        if confirming.is_empty() {
            out.push(finding(cx, call, contract.transactional, &ancestors));
            continue;
        }
        let mut problems = Vec::new();
        let fine = confirming.iter().any(|&(guard, _)| {
            match fresh_and_shown(cx, call, contract, guard, same_tool) {
                Ok(()) => true,
                Err(problem) => {
                    problems.push(problem);
                    false
                }
            }
        });
        if !fine {
            out.push(stale_finding(cx, call, &problems));
        }
    }
    out
}

/// Whether the confirmation tested by construct `guard` is fresh for `call`
/// and shows what the contract says it must.
fn fresh_and_shown(
    cx: &Context<'_>,
    call: &CallSite<'_>,
    contract: &ToolContract,
    guard: StmtId,
    same_tool: &HashSet<StmtId>,
) -> Result<(), Stale> {
    let flow = cx.flow;
    let asked: BTreeSet<StmtId> = flow
        .guard(guard)
        .map(|g| flow.sources(g))
        .unwrap_or_default()
        .intersection(flow.confirmations())
        .copied()
        .collect();
    if asked.is_empty() {
        // A confirming guard that no answer flows into is the literal
        // `false` on every path: its branch never runs.
        return Ok(());
    }
    if let Some(other) = flow.reaches_back(call.stmt, &|s| s == guard, &|s| same_tool.contains(&s))
    {
        return Err(Stale::AfterGuard { guard, other });
    }
    // A call of the tool that can run after some answer was given and
    // then reach the guard with no answer in between.
    let blocked = |s: StmtId| asked.contains(&s);
    if flow
        .reaches_back(guard, &blocked, &|s| same_tool.contains(&s))
        .is_some()
    {
        let after_answer = flow.reachable_from(&asked);
        if let Some(other) = flow.reaches_back(guard, &blocked, &|s| {
            same_tool.contains(&s) && after_answer.contains(&s)
        }) {
            return Err(Stale::BeforeGuard { guard, other });
        }
    }
    let Some(action) = cx.action(call.action) else {
        return Ok(());
    };
    let shows: Vec<String> = match &contract.confirmation_shows {
        Some(names) => names.clone(),
        None => action.params.iter().map(|p| p.name.clone()).collect(),
    };
    for argument in shows {
        // A name the declaration lacks is a sidecar mismatch (E0604,
        // reported by `check`); here it shows nothing.
        let Some(i) = param_index(action, &argument) else {
            continue;
        };
        let value = call.args.get(i).copied().unwrap_or(UNBOUND);
        if value == UNBOUND {
            continue;
        }
        for &site in &asked {
            let Some(question) = flow.call(site) else {
                continue;
            };
            if !question.args.iter().any(|&q| flow.shows(q, value)) {
                return Err(Stale::NotShown {
                    guard,
                    asked: site,
                    argument,
                });
            }
        }
    }
    Ok(())
}

fn stale_finding(cx: &Context<'_>, call: &CallSite<'_>, problems: &[Stale]) -> Diagnostic {
    let flow = cx.flow;
    let describe = &cx.describe;
    let name = cx.action_name(call.action);
    let construct = |s: StmtId| {
        flow.stmt(s)
            .map_or_else(|| "a construct".to_owned(), |stmt| describe.construct(stmt))
    };
    let at = |s: StmtId| {
        flow.call(s)
            .map_or_else(String::new, |c| describe.line(c.span))
    };
    let mut reasons = Vec::new();
    let mut related = Vec::new();
    let mut not_shown = false;
    for problem in problems {
        match problem {
            Stale::AfterGuard { guard, other } => {
                let what = if *other == call.stmt {
                    format!("`{name}` can run again")
                } else {
                    format!("`{name}`{} can run", at(*other))
                };
                reasons.push(format!(
                    "after {} tests the answer, {what} before this call, so one answer confirms two transactions",
                    construct(*guard)
                ));
                if let Some(c) = flow.call(*other) {
                    related.push((c.span, "another transaction confirmed by the same answer"));
                }
            }
            Stale::BeforeGuard { guard, other } => {
                reasons.push(format!(
                    "{} can test an answer given before `{name}`{} ran, so that answer is not asked again for this call",
                    construct(*guard),
                    at(*other)
                ));
                if let Some(c) = flow.call(*other) {
                    related.push((c.span, "ran after the answer was given"));
                }
            }
            Stale::NotShown {
                guard,
                asked,
                argument,
            } => {
                not_shown = true;
                let question = flow.call(*asked).map_or("?", |c| cx.action_name(c.action));
                reasons.push(format!(
                    "the confirmation `{question}`{} tested by {} does not show `{argument}` of `{name}` (its question is not computed from that value)",
                    at(*asked),
                    construct(*guard)
                ));
                if let Some(c) = flow.call(*asked) {
                    related.push((c.span, "this question does not show the transaction"));
                }
            }
        }
    }
    let hint = if not_shown {
        format!(
            "ask with the values `{name}` will use: pass them (or a summary computed from them, e.g. \"{{origin}} to {{destination}}\") to the `human` action that confirms; the contract's `confirmation_shows` lists the arguments a confirmation must show"
        )
    } else {
        format!(
            "ask again for every `{name}`: put the confirmation and its `if` inside the loop, before each call (`act User: ok = confirm(…)` then `if ok @ … {{ … {name}(…) }}`)"
        )
    };
    let mut diagnostic = Diagnostic::error(
        Code::UnconfirmedTransaction,
        call.span,
        format!(
            "`{name}` runs without a fresh confirmation of this transaction: {}",
            join_and(&reasons)
        ),
    )
    .with_label(format!("`{name}` runs without its own confirmation"))
    .with_hint(hint);
    for (span, label) in related {
        diagnostic = diagnostic.with_related(span, label);
    }
    diagnostic
}

fn finding(
    cx: &Context<'_>,
    call: &CallSite<'_>,
    transactional: bool,
    ancestors: &[(StmtId, Branch)],
) -> Diagnostic {
    let flow = cx.flow;
    let describe = &cx.describe;
    let name = cx.action_name(call.action);
    let outermost_first: Vec<_> = ancestors.iter().rev().copied().collect();
    let path = describe.path(flow, &outermost_first);
    let mut reasons = Vec::new();
    let mut related = Vec::new();
    for &(s, branch) in ancestors {
        let (Some(g), Some(stmt)) = (flow.guard(s), flow.stmt(s)) else {
            continue;
        };
        if flow.sources(g).is_disjoint(flow.confirmations()) {
            continue;
        }
        let construct = describe.construct(stmt);
        let negated = flow.is_negated_confirmation(g);
        let reason = if branch.guard_holds() == negated {
            format!(
                "it runs when {construct} is {}, i.e. when the person did not confirm",
                if negated { "true" } else { "false" }
            )
        } else if let Some((merge, var, operand)) = flow.unconfirmed_merge(g) {
            let var = describe.var(var);
            let when = match flow.stmt(merge).map(|m| (&m.kind, operand)) {
                Some((StmtKind::If { .. }, 0)) => describe.choice(flow, merge, Branch::Then),
                Some((StmtKind::If { .. }, _)) => describe.choice(flow, merge, Branch::Else),
                Some((StmtKind::While { .. }, 0)) => describe.choice(flow, merge, Branch::Exit),
                _ => format!(
                    "{} has run its body",
                    flow.stmt(merge)
                        .map_or_else(|| "a loop".to_owned(), |m| describe.construct(m))
                ),
            };
            format!(
                "{construct} tests `{var}`, which is not a person's answer on the path where {when}"
            )
        } else {
            format!(
                "the guard of {construct} does not require the confirmation (only the answer, \
                 `answer == true` or an `and` with it counts; not `not`, `or` or other computations)"
            )
        };
        reasons.push(reason);
        related.push((
            stmt.span,
            "this guard does not establish a confirmation".to_owned(),
        ));
    }
    if reasons.is_empty() {
        confirmation_sites(cx, call, &mut reasons, &mut related);
    }
    let what = if transactional {
        "is transactional"
    } else {
        "requires a person's confirmation"
    };
    let mut diagnostic = Diagnostic::error(
        Code::UnconfirmedTransaction,
        call.span,
        format!(
            "`{name}` {what} but runs without a person's confirmation: {path}, `{name}` runs \
             without a confirmation; {}",
            reasons.join("; ")
        ),
    )
    .with_label(format!("`{name}` runs unconfirmed here"))
    .with_hint(format!(
        "call `{name}` only in the true branch of an `if` on a person's answer: ask with a \
         `human` action returning `Bool` (e.g. `act User: ok = confirm(summary)`), send the \
         answer to the deciding lifeline (`msg User(ok) -> {at}(ok)`), then \
         `if ok @ {at} {{ … {name}(…) … }}`",
        at = cx
            .describe
            .workflow
            .lifelines
            .get(call.at.0 as usize)
            .map_or("Agent", |l| l.name.as_str()),
    ));
    for (span, label) in related {
        diagnostic = diagnostic.with_related(span, label);
    }
    diagnostic
}

/// Explains what the workflow's confirmations guard instead.
fn confirmation_sites(
    cx: &Context<'_>,
    call: &CallSite<'_>,
    reasons: &mut Vec<String>,
    related: &mut Vec<(troupe_syntax::Span, String)>,
) {
    let flow = cx.flow;
    let describe = &cx.describe;
    let sites = flow.confirmations();
    if sites.is_empty() {
        reasons.push(
            "the workflow never asks a person for a confirmation (a `human` action with a \
             `Bool` answer)"
                .to_owned(),
        );
        return;
    }
    let guards = flow.guards();
    for &site in sites.iter().take(3) {
        let Some(asked) = flow.call(site) else {
            continue;
        };
        let name = cx.action_name(asked.action);
        let line = describe.line(asked.span);
        let guarded: BTreeSet<StmtId> = guards
            .iter()
            .filter(|&&(_, g)| flow.sources(g).contains(&site))
            .map(|&(s, _)| s)
            .collect();
        let constructs: Vec<String> = guarded
            .iter()
            .take(3)
            .filter_map(|&s| flow.stmt(s).map(|stmt| describe.construct(stmt)))
            .collect();
        let reason = if constructs.is_empty() {
            format!("the confirmation `{name}`{line} guards no `if`")
        } else {
            let enclosing_loop = flow
                .ancestors(site)
                .iter()
                .find(|&&(l, _)| {
                    matches!(flow.stmt(l).map(|s| &s.kind), Some(StmtKind::While { .. }))
                        && !flow.encloses(l, call.stmt)
                })
                .and_then(|&(l, _)| flow.stmt(l));
            let place = match enclosing_loop {
                Some(l) => format!(" inside {}", describe.construct(l)),
                None => String::new(),
            };
            format!(
                "the confirmation `{name}`{line}{place} guards only {}, which {} not enclose \
                 this call",
                join_and(&constructs),
                if constructs.len() == 1 { "does" } else { "do" }
            )
        };
        reasons.push(reason);
        related.push((asked.span, format!("`{name}` asks for a confirmation here")));
    }
}

#[cfg(test)]
mod tests {
    use crate::verify::tests::run;

    const DECLS: &str = r#"
        mcp s { command: "srv" contracts: "c.json" }
        tool pay(x: Text) -> Text { server: s }
        human confirm(x: Text) -> Bool { ask: "ok {x}?" }
    "#;
    const SIDECAR: &str = r#"{"pay": {"transactional": true, "requires_confirmation": false}}"#;

    fn codes(body: &str) -> Vec<(String, u32)> {
        run(&format!("{DECLS}\n{body}"), SIDECAR)
    }

    #[test]
    fn accepts_a_confirmed_call_at_another_lifeline() {
        let found = codes(
            "workflow w(x: Text @ U, c: Bool @ A) {
               act U: ok = confirm(x)
               msg U(ok, x) -> A(yes, x)
               act A: fine = c and yes
               if fine @ A { msg A(x) -> B(x) act B: _ = pay(x) }
             }",
        );
        assert_eq!(found, vec![]);
    }

    #[test]
    fn rejects_or_negation_and_the_else_branch() {
        let found = codes(
            "workflow w(x: Text @ U, c: Bool @ U) {
               act U: ok = confirm(x)
               if ok or c @ U { act U: _ = pay(x) }
               if not ok @ U { act U: _ = pay(x) }
               if ok @ U { act U: y = x } else { act U: _ = pay(x) }
             }",
        );
        let lines: Vec<u32> = found.iter().map(|f| f.1).collect();
        assert_eq!(lines, vec![8, 9, 10]);
        assert!(found.iter().all(|f| f.0 == "E0601"));
    }

    #[test]
    fn confirmation_shows_must_name_parameters() {
        let sidecar = r#"{"pay": {"transactional": true, "requires_confirmation": true,
                                  "confirmation_shows": ["amount"]}}"#;
        let found = run(
            &format!(
                "{DECLS}\nworkflow w(x: Text @ U) {{
                   act U: ok = confirm(x)
                   if ok @ U {{ act U: _ = pay(x) }}
                 }}"
            ),
            sidecar,
        );
        assert_eq!(found, vec![("E0604".to_owned(), 3)]);
    }

    #[test]
    fn a_while_on_the_answer_guards_its_body() {
        let found = codes(
            "workflow w(x: Text @ U) {
               act U: ok = confirm(x)
               while ok @ U { act U: _ = pay(x) act U: ok = confirm(x) }
             }",
        );
        assert_eq!(found, vec![]);
    }
}
