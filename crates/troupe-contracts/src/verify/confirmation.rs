//! E0601 `unconfirmed-transaction`: a transactional tool runs only where a
//! person has confirmed.
//!
//! **What**: every call of a tool whose contract is `transactional` or
//! `requires_confirmation` must lie in the true branch of an `if` (or the
//! body of a `while`) whose guard is a person's confirmation: the `Bool`
//! answer of a `human` action, carried by messages and copies to the
//! deciding lifeline, tested as `ok`, `ok == true`, or in a conjunction
//! `ok and …` (or in the false branch, or `exit` block, of `not ok`). An
//! `or`, a negation on the true side, or any other computation does not count;
//! neither does a variable that holds the answer on some paths only (set
//! otherwise in one branch of an earlier `if`, or before a loop). The call
//! may be at another lifeline than the guard's owner. Because workflows are
//! structured, "inside that branch" means the same on every path.
//!
//! **Why**: MCP+ makes the action boundary a commitment: the tool changes the
//! world and a person must agree to each call before it runs.
//!
//! **Example**: `act User: ok = confirm_booking(summary)`,
//! `msg User(ok) -> Agent(ok)`, `if ok @ Agent { act Agent: t = book_ticket(…) }`.

use std::collections::BTreeSet;

use troupe_check::ir::{StmtId, StmtKind};
use troupe_syntax::{Code, Diagnostic};

use super::Context;
use super::describe::join_and;
use super::flow::{Branch, CallSite};

/// The E0601 findings of one workflow.
pub(crate) fn check(cx: &Context<'_>) -> Vec<Diagnostic> {
    let flow = cx.flow;
    let mut out = Vec::new();
    for call in &flow.calls {
        let Some(contract) = cx.contracts.get(call.action) else {
            continue;
        };
        if !(contract.transactional || contract.requires_confirmation) {
            continue;
        }
        let ancestors = flow.ancestors(call.stmt);
        let confirmed = ancestors.iter().any(|&(s, b)| flow.confirms(s, b));
        if !confirmed {
            out.push(finding(cx, call, contract.transactional, &ancestors));
        }
    }
    out
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
