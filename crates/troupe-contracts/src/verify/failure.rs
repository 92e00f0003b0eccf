//! W0603 `unhandled-failure`: a result that may stand for a documented
//! failure is inspected before the workflow relies on it.
//!
//! **What**: a warning for a call of a transactional tool whose contract
//! documents failure modes when some path uses its result — as an argument of a later action
//! call, or as a result the workflow returns — before any `if` or `while`
//! guard (at any lifeline, the value carried there by messages and copies)
//! has read it or a value computed from it. Failure modes the workflow
//! discharges statically are not listed and alone raise nothing:
//! `MissingSlots` when the call passes every argument the contract requires
//! (the checker enforces arities) and `ConfirmationDeclined` (E0601 checks
//! confirmations). A result never used is never relied on.
//!
//! This is a may-analysis over the structured workflow: the results not yet
//! inspected are joined (union) where branches meet, a guard inspects every
//! result its value is computed from, and a result produced in a loop body
//! is assumed uninspected at the head of the next iteration.
//!
//! **Why**: MCP+ principle 3 names a tool's failures so that a workflow can
//! handle them; a workflow that passes a result on unchecked has no path for
//! them (today a failed tool call ends the run).
//!
//! **Example**: `act Agent: ticket = book_ticket(…)` then
//! `if ticket.id != "" @ Agent { … print_ticket(ticket) … } else { … }`.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use troupe_check::ir::{Action, Block, Call, StmtId, StmtKind, VarId};
use troupe_syntax::{Code, Diagnostic};

use super::Context;
use super::describe::ticked;
use super::flow::{CallSite, ValueId};
use super::load::param_index;
use crate::contract::{CONFIRMATION_DECLINED, FailureMode, MISSING_SLOTS, ToolContract};

/// Where a result is relied on.
#[derive(Debug, Clone, Copy)]
enum Use {
    Call(StmtId),
    Return(VarId),
}

/// The W0603 findings of one workflow.
pub(crate) fn check(cx: &Context<'_>) -> Vec<Diagnostic> {
    let mut open = BTreeMap::new();
    for call in &cx.flow.calls {
        let (Some(contract), Some(action)) =
            (cx.contracts.get(call.action), cx.action(call.action))
        else {
            continue;
        };
        // A failed call ends the run (its error is the run's error), so only
        // a transaction leaves work behind that the workflow must face.
        if !contract.transactional && !contract.requires_confirmation {
            continue;
        }
        let modes = open_modes(contract, action, call);
        if !modes.is_empty() && call.outputs.iter().any(Option::is_some) {
            open.insert(call.stmt, modes);
        }
    }
    if open.is_empty() {
        return Vec::new();
    }
    let mut walk = Walk {
        cx,
        candidates: open.keys().copied().collect(),
        found: BTreeMap::new(),
        sources: HashMap::new(),
    };
    let mut state = BTreeSet::new();
    walk.block(&cx.describe.workflow.body, &mut state);
    for &(var, value) in &cx.flow.results {
        walk.uses(value, Use::Return(var), &state);
    }
    walk.found
        .iter()
        .filter_map(|(&site, &used)| Some(finding(cx, cx.flow.call(site)?, open.get(&site)?, used)))
        .collect()
}

/// The failure modes of a call that the workflow does not discharge statically.
fn open_modes<'c>(
    contract: &'c ToolContract,
    action: &Action,
    call: &CallSite<'_>,
) -> Vec<&'c FailureMode> {
    let all_required_passed = contract
        .arguments
        .iter()
        .filter(|a| a.required)
        .all(|a| param_index(action, &a.name).is_some_and(|i| i < call.arg_exprs.len()));
    contract
        .failure_modes
        .iter()
        .filter(|m| m.name != CONFIRMATION_DECLINED)
        .filter(|m| !(m.name == MISSING_SLOTS && all_required_passed))
        .collect()
}

struct Walk<'a, 'c> {
    cx: &'a Context<'c>,
    /// Calls whose results may be failures.
    candidates: BTreeSet<StmtId>,
    /// Per candidate, its first use before an inspection.
    found: BTreeMap<StmtId, Use>,
    sources: HashMap<ValueId, BTreeSet<StmtId>>,
}

impl Walk<'_, '_> {
    fn sources(&mut self, value: ValueId) -> &BTreeSet<StmtId> {
        let flow = self.cx.flow;
        self.sources
            .entry(value)
            .or_insert_with(|| flow.sources(value))
    }

    fn uses(&mut self, value: ValueId, used: Use, state: &BTreeSet<StmtId>) {
        let hits: Vec<StmtId> = self
            .sources(value)
            .iter()
            .filter(|s| state.contains(s))
            .copied()
            .collect();
        for hit in hits {
            self.found.entry(hit).or_insert(used);
        }
    }

    /// The guard of construct `stmt` inspects every result it reads.
    fn inspect(&mut self, stmt: StmtId, state: &mut BTreeSet<StmtId>) {
        if let Some(g) = self.cx.flow.guard(stmt) {
            let read = self.sources(g).clone();
            state.retain(|s| !read.contains(s));
        }
    }

    fn block(&mut self, block: &Block, state: &mut BTreeSet<StmtId>) {
        for stmt in &block.stmts {
            match &stmt.kind {
                StmtKind::Msg { .. }
                | StmtKind::Act {
                    call: Call::Expr(_),
                    ..
                } => {}
                StmtKind::Act { .. } => {
                    let args = match self.cx.flow.call(stmt.id) {
                        Some(site) => site.args.clone(),
                        None => continue,
                    };
                    for arg in args {
                        self.uses(arg, Use::Call(stmt.id), state);
                    }
                    if self.candidates.contains(&stmt.id) {
                        state.insert(stmt.id);
                    }
                }
                StmtKind::If {
                    then, otherwise, ..
                } => {
                    self.inspect(stmt.id, state);
                    let mut taken = state.clone();
                    self.block(then, &mut taken);
                    self.block(otherwise, state);
                    state.extend(taken);
                }
                StmtKind::While { body, exit, .. } => {
                    // Results produced by the body may reach the head uninspected.
                    let produced: Vec<StmtId> = self
                        .candidates
                        .iter()
                        .filter(|&&c| self.cx.flow.encloses(stmt.id, c))
                        .copied()
                        .collect();
                    state.extend(produced);
                    self.inspect(stmt.id, state);
                    let mut iteration = state.clone();
                    self.block(body, &mut iteration);
                    self.block(exit, state);
                }
                // The branches all run; read in order (see `flow`).
                StmtKind::Par { branches } => {
                    for b in branches {
                        self.block(b, state);
                    }
                }
            }
        }
    }
}

fn finding(cx: &Context<'_>, call: &CallSite<'_>, modes: &[&FailureMode], used: Use) -> Diagnostic {
    let describe = &cx.describe;
    let name = cx.action_name(call.action);
    let names: Vec<&str> = modes.iter().map(|m| m.name.as_str()).collect();
    let (how, related) = match used {
        Use::Call(s) => {
            let site = cx.flow.call(s);
            let user = site.map_or("?", |c| cx.action_name(c.action));
            let span = site.map_or(call.span, |c| c.span);
            (
                format!("used by `{user}`{}", describe.line(span)),
                Some((span, "relied on here without a check".to_owned())),
            )
        }
        Use::Return(var) => (
            format!("returned by the workflow (`{}`)", describe.var(var)),
            None,
        ),
    };
    let explained: Vec<String> = modes
        .iter()
        .map(|m| {
            let retry = if m.retryable { ", retryable" } else { "" };
            format!(
                "`{}`{retry}: {}",
                m.name,
                m.description.trim_end_matches('.')
            )
        })
        .collect();
    let mut diagnostic = Diagnostic::warning(
        Code::UnhandledFailure,
        call.span,
        format!(
            "`{name}` can fail ({}), but its result is {how} before any `if` or `while` \
             inspects it",
            ticked(&names)
        ),
    )
    .with_label(format!("`{name}` may fail here"))
    .with_hint(format!(
        "inspect the result in an `if` or `while` guard (at any lifeline) before relying on \
         it, so that the workflow has a path for each failure; failure modes: {}",
        explained.join("; ")
    ));
    if let Some((span, label)) = related {
        diagnostic = diagnostic.with_related(span, label);
    }
    diagnostic
}

#[cfg(test)]
mod tests {
    use crate::verify::tests::run;

    const DECLS: &str = r#"
        record T { id: Text, ok: Bool }
        mcp s { command: "srv" contracts: "c.json" }
        tool make(x: Text) -> T { server: s }
        tool safe(x: Text) -> T { server: s }
        effect show(t: T) extern
    "#;
    const SIDECAR: &str = r#"{
        "make": {"transactional": true, "requires_confirmation": false,
                 "arguments": [{"name": "x", "description": "x", "domain": {"kind": "free_text"},
                                "required": true}],
                 "failure_modes": [{"name": "MissingSlots", "description": "-", "retryable": true},
                                   {"name": "sold_out", "description": "None left.", "retryable": false}]},
        "safe": {"transactional": false, "requires_confirmation": false,
                 "failure_modes": [{"name": "MissingSlots", "description": "-", "retryable": true}]}}"#;

    fn lines(body: &str) -> Vec<u32> {
        // `make` is transactional, so E0601 also fires: only W0603 matters here.
        run(&format!("{DECLS}{body}"), SIDECAR)
            .into_iter()
            .filter(|(code, _)| code == "W0603")
            .map(|(_, line)| line)
            .collect()
    }

    #[test]
    fn warns_when_a_result_is_relied_on_unchecked() {
        assert_eq!(
            lines(
                "workflow w(x: Text @ A) {
                   act A: t = make(x)
                   msg A(t) -> B(t)
                   act B: show(t)
                   act A: u = safe(x)
                   act A: show(u)
                 }"
            ),
            vec![8]
        );
    }

    #[test]
    fn a_guard_at_any_lifeline_inspects_the_result() {
        assert_eq!(
            lines(
                "workflow w(x: Text @ A) {
                   act A: t = make(x)
                   msg A(t) -> B(t)
                   act B: fine = t.ok
                   if fine @ B { act B: show(t) }
                   act A: show(t)
                   act A: v = make(x)
                   if x == \"a\" @ A { act A: w = v.id }
                   return v @ A
                 }"
            ),
            vec![13]
        );
    }
}
