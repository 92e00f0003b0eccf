//! Verifying a recorded run's `planner` calls against their recorded plans.
//!
//! A planner call records three things under its step key `K`
//! (`Lifeline/action#n`, see `troupe_runtime::plan_key`): the accepted
//! plan's source (`K/plan#0`), the steps of the plan's nested run
//! (`K/PlanLifeline/action#m`), and that run's trace as text for people
//! (`K/run#0`). The nested run's events are not among the run's own (the
//! outer monitor checks the outer workflow), so [`Host::verify`] checks
//! them here, from the records alone:
//!
//! - every planner call that ended, or left nested steps, has its plan;
//! - the plan is checked again as the run checked it: the language's rules
//!   against the planner (`check_plan`) and the tools' contracts;
//! - the recorded trace is read back line by line into events of the plan
//!   (each line names its statement by its head, its lifeline, what it did
//!   and, for a decision, the construct's control tag) and those events, in
//!   their recorded order, must be a complete run of the plan's ⟦P⟧ (the
//!   plan's own online monitor);
//! - each action line of a journaled action has its recorded step with the
//!   outputs it shows, and no recorded nested step lacks its line;
//! - the outer run's events show no more calls of a planner than there are
//!   recorded planner steps.
//!
//! A message's values are not compared with the plan (a trace keeps their
//! text only); what a message carries is the nested run's business, as an
//! outer message's values are the outer run's.
//!
//! [`Host::verify`]: crate::Host::verify

use std::collections::{BTreeMap, HashMap, HashSet};
use troupe_check::TypeTable;
use troupe_check::Value;
use troupe_check::ir::{ActionId, ActionKind, Call, LifelineId, Program, StmtKind, Workflow};
use troupe_msc::{Event, Message, Monitor};
use troupe_project::{ControlTag, Names};
use troupe_runtime::StepKey;
use troupe_store::{StepRow, StepStatus, Store, StoreError};
use troupe_syntax::{Code, Diagnostic};

/// The calls of planners the outer run's events show, per lifeline and
/// planner, counted while the run's history is streamed to its monitor.
#[derive(Debug)]
pub(crate) struct PlannerCalls {
    /// Per statement id, the planner an `act` statement calls.
    by_stmt: Vec<Option<ActionId>>,
    seen: BTreeMap<(LifelineId, ActionId), u64>,
}

impl PlannerCalls {
    /// `None` when `workflow` calls no planner (nothing to count).
    pub(crate) fn new(program: &Program, workflow: &Workflow) -> Option<PlannerCalls> {
        let by_stmt: Vec<Option<ActionId>> = workflow
            .stmts_by_id()
            .into_iter()
            .map(|s| match s.map(|s| &s.kind) {
                Some(StmtKind::Act {
                    call: Call::Action { action, .. },
                    ..
                }) if matches!(program.action(*action).kind, ActionKind::Planner(_)) => {
                    Some(*action)
                }
                _ => None,
            })
            .collect();
        by_stmt.iter().any(Option::is_some).then_some(PlannerCalls {
            by_stmt,
            seen: BTreeMap::new(),
        })
    }

    /// One event of the outer run.
    pub(crate) fn see(&mut self, lifeline: LifelineId, event: &Event) {
        if let Event::Act { stmt, .. } = event
            && let Some(Some(action)) = self.by_stmt.get(stmt.0 as usize)
        {
            *self.seen.entry((lifeline, *action)).or_default() += 1;
        }
    }
}

/// One planner call's records.
#[derive(Default)]
struct Records<'a> {
    step: Option<&'a StepRow>,
    plan: Option<&'a StepRow>,
    trace: Option<&'a StepRow>,
    /// The nested run's own steps (`K/PlanLifeline/action#m`), by key.
    nested: BTreeMap<&'a str, &'a StepRow>,
}

/// Checks the plans of `run` of `program`'s `workflow`, recorded from
/// `file`, against its recorded steps; `calls` are the planner calls its
/// retained events show. `Ok(Ok(n))`: `n` plans were checked with their
/// nested runs; `Ok(Err(why))` names the planner step and says what is
/// wrong.
pub(crate) fn verify(
    store: &Store,
    run: i64,
    program: &Program,
    workflow: &Workflow,
    file: &str,
    calls: Option<&PlannerCalls>,
) -> Result<Result<u32, String>, StoreError> {
    let planners: HashMap<&str, ActionId> = program
        .actions
        .iter()
        .enumerate()
        .filter(|(_, a)| matches!(a.kind, ActionKind::Planner(_)))
        .map(|(i, a)| (a.name.as_str(), ActionId(i as u32)))
        .collect();
    // A workflow without planners (most) costs no read of its steps.
    if planners.is_empty() {
        return Ok(Ok(0));
    }
    let steps = store.steps(run)?;
    let values = store.step_values(run)?;
    let run_steps = RunSteps {
        name: Store::run_name(run),
        steps: &steps,
        values: &values,
    };
    Ok(run_steps.check_plans(program, workflow, file, &planners, calls))
}

/// A run's recorded steps: as people read them (`steps`, JSON), and the
/// outputs a resumed run replays (`values`, by key).
struct RunSteps<'a> {
    name: String,
    steps: &'a [StepRow],
    values: &'a BTreeMap<String, Vec<Value>>,
}

impl RunSteps<'_> {
    fn check_plans(
        &self,
        program: &Program,
        workflow: &Workflow,
        file: &str,
        planners: &HashMap<&str, ActionId>,
        calls: Option<&PlannerCalls>,
    ) -> Result<u32, String> {
        let (name, steps, values) = (&self.name, self.steps, self.values);
        // Every step under a planner call's key, grouped by the call.
        let mut records: BTreeMap<String, (ActionId, Records<'_>)> = BTreeMap::new();
        for row in steps {
            let mut parts = row.key.splitn(3, '/');
            let (Some(lifeline), Some(call)) = (parts.next(), parts.next()) else {
                continue;
            };
            let Some(key) = StepKey::parse(&format!("{lifeline}/{call}")) else {
                continue;
            };
            let Some(&action) = planners.get(key.action.as_str()) else {
                continue;
            };
            let (_, r) = records
                .entry(key.to_string())
                .or_insert_with(|| (action, Records::default()));
            match parts.next() {
                None => r.step = Some(row),
                Some("plan#0") => r.plan = Some(row),
                Some("run#0") => r.trace = Some(row),
                Some(rest) => {
                    // A step of the nested run itself; a sub-step of one (a
                    // model's tool call) is that step's business.
                    if rest.matches('/').count() == 1 {
                        r.nested.insert(row.key.as_str(), row);
                    }
                }
            }
        }

        let done = |r: Option<&StepRow>| r.is_some_and(|s| s.status == StepStatus::Done);
        let mut checked = 0;
        for (key, (action, r)) in &records {
            let at = |what: String| format!("{name}: planner step {key}: {what}");
            // What is checked is what a resumed run would replay; the copy
            // people read (`troupe status`, `troupe trace`) must say the same.
            let rows = r
                .step
                .iter()
                .chain(&r.plan)
                .chain(&r.trace)
                .chain(r.nested.values());
            for row in rows {
                agree(row, values.get(&row.key), &program.types).map_err(at)?;
            }
            let Some(plan) = r.plan else {
                if done(r.step) || r.trace.is_some() || !r.nested.is_empty() {
                    return Err(at(format!(
                        "its recorded plan is missing (no step {key}/plan#0), so its nested run cannot be checked"
                    )));
                }
                // Asked for a plan, none accepted yet (or the run failed so).
                continue;
            };
            let source = match recorded_text(plan, values) {
                Some(s) => s,
                None => {
                    return Err(at(format!(
                        "its recorded plan (step {key}/plan#0) is not a finished text step"
                    )));
                }
            };
            let plan_program = check_plan(program, *action, &source, file)
                .map_err(|d| at(format!("its recorded plan (step {key}/plan#0) {d}")))?;
            let Some(trace) = r.trace else {
                if done(r.step) {
                    return Err(at(format!(
                        "its nested run's recorded trace is missing (no step {key}/run#0)"
                    )));
                }
                // The plan's run has not ended: nothing of it to check yet.
                continue;
            };
            let text = recorded_text(trace, values).ok_or_else(|| {
                at(format!(
                    "its nested run's recorded trace (step {key}/run#0) is not a finished text step"
                ))
            })?;
            let acts = check_trace(&plan_program, &text).map_err(|e| {
                at(format!(
                    "its nested run's recorded trace (step {key}/run#0) is not a run of \
                     its recorded plan (step {key}/plan#0): {e}"
                ))
            })?;
            check_steps(&plan_program, key, &acts, &r.nested, values).map_err(at)?;
            checked += 1;
        }

        // The outer events' planner calls, each with its recorded step.
        if let Some(calls) = calls {
            for ((lifeline, action), n) in &calls.seen {
                let l = &workflow.lifelines[lifeline.0 as usize].name;
                let a = &program.action(*action).name;
                let recorded = records
                    .iter()
                    .filter(|(k, (id, r))| {
                        id == action && k.starts_with(&format!("{l}/")) && done(r.step)
                    })
                    .count() as u64;
                if *n > recorded {
                    return Err(format!(
                        "{name}: its events show {n} call(s) of planner `{a}` at {l}, but {recorded} finished planner step(s) {l}/{a}#… are recorded"
                    ));
                }
            }
        }
        Ok(checked)
    }
}

/// The text a finished step recorded as its one output.
fn recorded_text(row: &StepRow, values: &BTreeMap<String, Vec<Value>>) -> Option<String> {
    if row.status != StepStatus::Done {
        return None;
    }
    match values.get(&row.key)?.as_slice() {
        [Value::Text(s)] => Some(s.to_string()),
        _ => None,
    }
}

/// Whether a step's two recorded copies of its outputs say the same: the
/// one a resumed run replays (`values`) and the JSON one people read.
fn agree(row: &StepRow, values: Option<&Vec<Value>>, types: &TypeTable) -> Result<(), String> {
    if row.status != StepStatus::Done {
        return Ok(());
    }
    let replayed =
        values.map(|v| serde_json::Value::Array(v.iter().map(|x| x.to_json(types)).collect()));
    if replayed.as_ref() != row.outputs.as_ref() {
        return Err(format!(
            "step {} recorded outputs that a resumed run would replay otherwise than they are shown",
            row.key
        ));
    }
    Ok(())
}

/// A plan checked as the run checked it when it accepted it: the
/// language's rules against the planner, then the contracts of the tools
/// it calls (sidecars relative to the workflow file). A contract that
/// cannot be read here is not held against the plan: the sidecar may have
/// moved since, as for the run's own workflow, whose contracts are not
/// verified again either.
fn check_plan(
    program: &Program,
    planner: ActionId,
    source: &str,
    file: &str,
) -> Result<Program, String> {
    let shown = |d: &[Diagnostic]| troupe_runtime::render_for_model(source, d);
    let plan = troupe_check::plan::check_plan(program, planner, source)
        .map_err(|d| format!("does not check:\n{}", shown(&d).trim_end()))?;
    let contracts: Vec<Diagnostic> = troupe_contracts::verify_workflows_with(
        &plan,
        Some(source),
        &crate::policy::base_dir(file),
        &troupe_contracts::VerifyOptions::default(),
    )
    .into_iter()
    .filter(|d| d.is_error() && d.code != Code::ContractUnavailable)
    .collect();
    if !contracts.is_empty() {
        return Err(format!(
            "breaks the contracts of the tools it calls:\n{}",
            shown(&contracts).trim_end()
        ));
    }
    Ok(plan)
}

/// An action line of a nested run's trace: its line number (from 1), its
/// lifeline, its statement's action (when it calls one) and the outputs it
/// shows, as text.
#[derive(Debug)]
struct ActLine {
    line: usize,
    lifeline: LifelineId,
    action: Option<ActionId>,
    outputs: String,
}

/// Reads a trace rendered by `troupe_runtime::Trace::render` back into
/// events of `plan` and checks them, in their order, with the plan's
/// monitor: they must be a complete run of the plan. Returns its action
/// lines.
fn check_trace(plan: &Program, text: &str) -> Result<Vec<ActLine>, String> {
    let w = &plan.workflows[0];
    let names = Names::new(plan, w);
    let projection = troupe_project::project(plan, w).map_err(|e| e.to_string())?;
    let tag_of =
        |s: troupe_check::ir::StmtId| projection.construct(s).map_or(ControlTag(0), |c| c.tag);
    // Each statement's head, as the trace writes it after `// `.
    let heads: Vec<(&troupe_check::ir::Stmt, String)> = w
        .stmts_by_id()
        .into_iter()
        .flatten()
        .filter(|s| !matches!(s.kind, StmtKind::Par { .. }))
        .map(|s| (s, format!(" // {}", names.stmt_head(s))))
        .collect();
    let lifeline = |n: &str| {
        w.lifelines
            .iter()
            .position(|l| l.name == n)
            .map(|i| LifelineId(i as u32))
    };
    let mut monitor = Monitor::with_projection(w, &projection);
    let mut acts = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let n = i + 1;
        let bad = |why: String| format!("line {n} (`{}`): {why}", line.trim());
        // `{time:>6}  {lifeline:<12} {event:<44} // {head}`
        let rest = line
            .trim_start()
            .trim_start_matches(|c: char| c.is_ascii_digit());
        let rest = rest.trim_start();
        let (who, rest) = rest.split_once(' ').unwrap_or((rest, ""));
        let rest = rest.trim_start();
        let l = lifeline(who).ok_or_else(|| bad(format!("`{who}` is no lifeline of the plan")))?;
        let mut reasons = Vec::new();
        let mut events = Vec::new();
        for (stmt, head) in &heads {
            let Some(what) = rest.strip_suffix(head.as_str()) else {
                continue;
            };
            match event(&names, stmt, l, what.trim_end(), tag_of(stmt.id)) {
                Ok(e) => events.push((stmt, e, what.trim_end())),
                Err(why) => reasons.push(why),
            }
        }
        if events.is_empty() {
            return Err(bad(reasons.into_iter().next().unwrap_or_else(|| {
                format!(
                    "no statement of the plan that {} takes part in is written so",
                    w.lifelines[l.0 as usize].name
                )
            })));
        }
        // Statements written alike (the same message in both branches of
        // an `if`): the one the run can take here is the one it took.
        let mut taken = None;
        let mut first_error = None;
        for (stmt, e, what) in &events {
            let mut next = monitor.clone();
            match next.event(l, e) {
                Ok(()) => {
                    taken = Some((next, *stmt, *what));
                    break;
                }
                Err(err) => {
                    first_error.get_or_insert(err.to_string());
                }
            }
        }
        let Some((next, stmt, what)) = taken else {
            return Err(bad(first_error.unwrap_or_default()));
        };
        monitor = next;
        if let StmtKind::Act { call, .. } = &stmt.kind {
            acts.push(ActLine {
                line: n,
                lifeline: l,
                action: match call {
                    Call::Action { action, .. } => Some(*action),
                    Call::Expr(_) => None,
                },
                outputs: what
                    .strip_prefix("act →")
                    .unwrap_or_default()
                    .trim_start()
                    .to_owned(),
            });
        }
    }
    monitor
        .finish(false)
        .map_err(|e| format!("it ends before a run of the plan does: {e}"))?;
    Ok(acts)
}

/// The event that `what` (a trace line's middle column) at lifeline `l`
/// says statement `stmt` made, or why it cannot be one of its events.
fn event(
    names: &Names<'_>,
    stmt: &troupe_check::ir::Stmt,
    l: LifelineId,
    what: &str,
    tag: ControlTag,
) -> Result<Event, String> {
    let name = |x: LifelineId| names.lifeline(x).into_owned();
    let decision = |text: &str| -> Result<bool, String> {
        let (d, shown) = text
            .split_once(' ')
            .ok_or_else(|| format!("`{text}` is no decision and tag"))?;
        let decision = match d {
            "⊤" => true,
            "⊥" => false,
            _ => return Err(format!("`{d}` is no decision")),
        };
        if shown != tag.to_string() {
            return Err(format!(
                "its control tag {shown} is not the plan's {tag} for `{}`",
                names.stmt_head(stmt)
            ));
        }
        Ok(decision)
    };
    let unlike = || {
        format!(
            "`{what}` is not what {} does in `{}`",
            name(l),
            names.stmt_head(stmt)
        )
    };
    match &stmt.kind {
        StmtKind::Msg { from, to, .. } => {
            let data = Message::Data {
                stmt: stmt.id,
                values: None,
            };
            if *from == l
                && what.starts_with("send (")
                && what.ends_with(&format!(") to {}", name(*to)))
            {
                Ok(Event::Send { to: *to, msg: data })
            } else if *to == l
                && what.starts_with("recv (")
                && what.ends_with(&format!(") from {}", name(*from)))
            {
                Ok(Event::Recv {
                    from: *from,
                    msg: data,
                })
            } else {
                Err(unlike())
            }
        }
        StmtKind::Act { at, .. } if *at == l && what.starts_with("act →") => Ok(Event::Act {
            stmt: stmt.id,
            outputs: None,
        }),
        StmtKind::If { owner, .. } | StmtKind::While { owner, .. } => {
            let control = |decision| Message::Control {
                stmt: stmt.id,
                tag,
                decision,
            };
            if *owner == l {
                if let Some(rest) = what.strip_prefix("decide ") {
                    return Ok(Event::Decide {
                        stmt: stmt.id,
                        tag,
                        decision: decision(rest)?,
                    });
                }
                let rest = what.strip_prefix("send decision ").ok_or_else(unlike)?;
                let (d, to) = rest.rsplit_once(" to ").ok_or_else(unlike)?;
                let to = (0..names.workflow.lifelines.len() as u32)
                    .map(LifelineId)
                    .find(|x| name(*x) == to)
                    .ok_or_else(|| format!("`{to}` is no lifeline of the plan"))?;
                Ok(Event::Send {
                    to,
                    msg: control(decision(d)?),
                })
            } else {
                let rest = what.strip_prefix("recv decision ").ok_or_else(unlike)?;
                let (d, from) = rest.rsplit_once(" from ").ok_or_else(unlike)?;
                if from != name(*owner) {
                    return Err(unlike());
                }
                Ok(Event::Recv {
                    from: *owner,
                    msg: control(decision(d)?),
                })
            }
        }
        _ => Err(unlike()),
    }
}

/// The nested run's recorded steps against the trace's action lines: each
/// line of a journaled action (a model, a person, an effect, a tool, a
/// timer) has its step, `K/Lifeline/action#m` with `m` the lifeline's
/// earlier calls of the action, showing the outputs the step recorded; and
/// each recorded step has its line. A plan with `par` regions numbers its
/// calls per branch, which a trace does not show: there only the number of
/// steps per lifeline and action is compared.
fn check_steps(
    plan: &Program,
    key: &str,
    acts: &[ActLine],
    nested: &BTreeMap<&str, &StepRow>,
    values: &BTreeMap<String, Vec<Value>>,
) -> Result<(), String> {
    let w = &plan.workflows[0];
    let names = Names::new(plan, w);
    let par = w
        .stmts_by_id()
        .into_iter()
        .flatten()
        .any(|s| matches!(s.kind, StmtKind::Par { .. }));
    let mut used: HashSet<&str> = HashSet::new();
    let mut count: HashMap<(LifelineId, ActionId), u64> = HashMap::new();
    for act in acts {
        let Some(action) = act.action else { continue };
        let decl = plan.action(action);
        // A pure action with a body is computed, never recorded; one
        // without (an `extern`) is recorded when mocked, and computed when
        // the host registered it: either may be.
        let journaled = match &decl.kind {
            ActionKind::Pure { body: Some(_) } => continue,
            ActionKind::Pure { body: None } => false,
            _ => true,
        };
        let n = count.entry((act.lifeline, action)).or_default();
        let m = *n;
        *n += 1;
        if par {
            continue;
        }
        let lifeline = &w.lifelines[act.lifeline.0 as usize].name;
        let step = format!("{key}/{lifeline}/{}#{m}", decl.name);
        let Some(row) = nested.get(step.as_str()) else {
            if journaled {
                return Err(format!(
                    "line {} of its nested run's trace calls `{}` at {lifeline}, but no step {step} is recorded",
                    act.line, decl.name
                ));
            }
            continue;
        };
        used.insert(row.key.as_str());
        let shown = shown_outputs(plan, &names, action, values.get(&row.key)).ok_or_else(|| {
            format!(
                "the recorded step {step} is not finished with outputs of `{}`",
                decl.name
            )
        })?;
        if shown != act.outputs {
            return Err(format!(
                "line {} of its nested run's trace shows `{}` → {}, but step {step} recorded {shown}",
                act.line, decl.name, act.outputs
            ));
        }
    }
    if par {
        // Per lifeline and action, as many steps as lines (mocked externs
        // aside, which may or may not be recorded).
        for ((l, a), n) in &count {
            let lifeline = &w.lifelines[l.0 as usize].name;
            let decl = plan.action(*a);
            let prefix = format!("{key}/{lifeline}/{}#", decl.name);
            let recorded = nested.keys().filter(|k| k.starts_with(&prefix)).count() as u64;
            let mocked = matches!(decl.kind, ActionKind::Pure { body: None });
            if recorded > *n || (recorded < *n && !mocked) {
                return Err(format!(
                    "its nested run's trace calls `{}` at {lifeline} {n} time(s), but {recorded} step(s) {prefix}… are recorded",
                    decl.name
                ));
            }
            used.extend(nested.keys().filter(|k| k.starts_with(&prefix)).copied());
        }
    }
    if let Some(extra) = nested.keys().find(|k| !used.contains(*k)) {
        return Err(format!(
            "step {extra} is recorded, but no line of its nested run's trace is its action"
        ));
    }
    Ok(())
}

/// The outputs a finished step recorded for `action`, written as a trace
/// writes them (`None` when it has none, or they are not the action's).
fn shown_outputs(
    plan: &Program,
    names: &Names<'_>,
    action: ActionId,
    values: Option<&Vec<Value>>,
) -> Option<String> {
    let values = values?;
    let decl = plan.action(action);
    let fit = values.len() == decl.outputs.len()
        && values
            .iter()
            .zip(&decl.outputs)
            .all(|(v, p)| v.conforms(&p.ty, &plan.types));
    fit.then(|| {
        values
            .iter()
            .map(|v| names.value(v))
            .collect::<Vec<_>>()
            .join(", ")
    })
}

#[cfg(test)]
mod tests {
    //! The trace reader against the runtime's own trace writer: a nested
    //! run of a plan, rendered as the runtime records it, reads back as a
    //! complete run of the plan; with any one line left out, or a tag
    //! changed, it does not. The plan has what makes a line hard to read:
    //! a lifeline name longer than its column, ` // ` inside a value and a
    //! statement, and the same message in both branches of an `if`.

    use super::*;
    use std::sync::Arc;
    use troupe_llm::MockBackend;
    use troupe_runtime::{EngineBuilder, RunOptions};

    const OUTER: &str = r#"
llm search(query: Text) -> (notes: Text) { prompt: "Find: {query}" }
planner solve(task: Text) -> (answer: Text) {
  prompt: "Plan: {task}"
  actions: [search]
  lifelines: [ResearcherWithALongName, W]
}
workflow ask(q: Text @ U) {
  act U: a = solve(q)
  return a @ U
}
"#;

    const PLAN: &str = r#"workflow plan(task: Text @ ResearcherWithALongName) {
  act ResearcherWithALongName: notes = search("a // b")
  if notes == "x" @ ResearcherWithALongName {
    msg ResearcherWithALongName("p // q") -> W(n)
  } else {
    msg ResearcherWithALongName("p // q") -> W(n)
  }
  act W: k = 0
  while k < 2 @ W {
    act W: k = k + 1
  }
  return n @ W
}"#;

    /// The plan, checked against its planner, and its nested run's trace
    /// as the runtime writes it.
    fn recorded() -> (Program, String) {
        let (outer, d) = troupe_check::check_text(OUTER);
        let outer = outer.unwrap_or_else(|| panic!("{d:?}"));
        let solve = ActionId(
            outer
                .actions
                .iter()
                .position(|a| a.name == "solve")
                .unwrap() as u32,
        );
        let plan = troupe_check::plan::check_plan(&outer, solve, PLAN).unwrap();
        let engine = EngineBuilder::from_program(plan.clone())
            .llm(Arc::new(MockBackend::new()))
            .build()
            .unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let outcome = rt
            .block_on(engine.run(vec![Value::text("t")], RunOptions::default()))
            .unwrap();
        let text = outcome.trace.unwrap().render(&plan, &plan.workflows[0]);
        (plan, text)
    }

    #[test]
    fn a_rendered_nested_run_reads_back_as_a_run_of_its_plan() {
        let (plan, text) = recorded();
        assert!(text.contains("ResearcherWithALongName"), "{text}");
        assert!(text.contains("\"p // q\""), "{text}");
        let acts = check_trace(&plan, &text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        // search, k = 0, and k = k + 1 twice.
        assert_eq!(acts.len(), 4, "{text}");
        assert_eq!(
            acts.iter().filter(|a| a.action.is_some()).count(),
            1,
            "{text}"
        );
    }

    #[test]
    fn a_trace_without_any_one_of_its_lines_is_not_a_run_of_its_plan() {
        let (plan, text) = recorded();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.len() > 8, "{text}");
        for i in 0..lines.len() {
            let mut shorter = lines.clone();
            shorter.remove(i);
            let shorter = shorter.join("\n");
            assert!(
                check_trace(&plan, &shorter).is_err(),
                "without line {} (`{}`) it still reads as a run",
                i + 1,
                lines[i]
            );
        }
    }

    #[test]
    fn a_decision_with_another_tag_is_not_the_plans() {
        let (plan, text) = recorded();
        let line = text.lines().find(|l| l.contains("decide ")).unwrap();
        let at = line.find('κ').unwrap() + 'κ'.len_utf8();
        let mut forged = line.to_owned();
        let digit = if &line[at..at + 1] == "0" { "1" } else { "0" };
        forged.replace_range(at..at + 1, digit);
        let err = check_trace(&plan, &text.replacen(line, &forged, 1)).unwrap_err();
        assert!(err.contains("is not the plan's"), "{err}");
    }
}
