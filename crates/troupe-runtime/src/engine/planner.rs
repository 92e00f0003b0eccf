//! Verified planning at run time: a `planner` action asks the model for a
//! plan (a workflow in troupe), checks it (`troupe_check::plan::check_plan`,
//! then the host's own checks such as tool contracts), re-asks with the
//! diagnostics when it does not check, journals the accepted source, and
//! runs it as a nested run whose results are the action's outputs.
//!
//! Durability: the plan's source is a step of its own, recorded before the
//! plan runs (`Lifeline/action#k/plan#0`), so a resumed run takes the plan
//! from the journal and never asks the model again. The nested run's steps
//! are recorded in the same journal under the planner step's key
//! (`Lifeline/action#k/PlanLifeline/step#n`), so a resumed nested run
//! replays them instead of redoing them, exactly like the outer run's. Its
//! events are not the outer run's (the outer monitor verifies the outer
//! workflow): the nested run is verified against the plan's own ⟦P⟧ when it
//! ends, and its rendered trace is recorded as a step
//! (`Lifeline/action#k/run#0`) for people to read.

use super::{Failure, Inner, Projected, collect_spans, projected, render};
use crate::actions::{HumanInbox, HumanTask};
use crate::checkpoint::Checkpoint;
use crate::error::RunError;
use crate::journal::{LlmCall, Recorded, RunJournal, StepKey, StepKind};
use crate::{Engine, RunOptions};
use std::sync::Arc;
use troupe_check::Value;
use troupe_check::ir::{ActionId, ActionKind, LifelineId, Program};
use troupe_llm::{BoxFuture, CallKey, LlmRequest, OutputSlot, PlanAction, PlanSpec};
use troupe_msc::Event;
use troupe_syntax::{Diagnostic, LineIndex, Span};

/// Extra checks of a plan beyond the language's (e.g. the contracts of the
/// tools it calls), given by the host: the diagnostics, located in the
/// plan's source. An error among them rejects the plan like a type error.
pub type PlanVerifier = dyn Fn(&Program, &str) -> Vec<Diagnostic> + Send + Sync;

/// The step holding a planner call's accepted plan source.
pub fn plan_key(step: &StepKey) -> StepKey {
    StepKey {
        lifeline: step.lifeline.clone(),
        action: format!("{}#{}/plan", step.action, step.occurrence),
        occurrence: 0,
    }
}

/// The step holding the rendered trace of a planner call's nested run.
pub fn plan_run_key(step: &StepKey) -> StepKey {
    StepKey {
        lifeline: step.lifeline.clone(),
        action: format!("{}#{}/run", step.action, step.occurrence),
        occurrence: 0,
    }
}

/// A step of the nested run of planner call `outer`, under `outer`'s key.
fn nested_key(outer: &StepKey, inner: &StepKey) -> StepKey {
    StepKey {
        lifeline: outer.lifeline.clone(),
        action: format!(
            "{}#{}/{}/{}",
            outer.action, outer.occurrence, inner.lifeline, inner.action
        ),
        occurrence: inner.occurrence,
    }
}

/// What a planner call needs from its run.
pub(super) struct PlannerCall {
    pub engine: Arc<Inner>,
    pub action: ActionId,
    pub step: StepKey,
    pub args: Vec<Value>,
    pub run_id: String,
    /// The outer run's identity: the plan's steps' keys are under it.
    pub uid: Arc<str>,
    pub seed: u64,
    pub journal: Option<Arc<dyn RunJournal>>,
}

/// Strips a Markdown code fence a model may wrap its answer in.
fn unfence(text: &str) -> &str {
    let t = text.trim();
    let Some(rest) = t.strip_prefix("```") else {
        return t;
    };
    let body = rest.split_once('\n').map_or("", |(_, b)| b);
    body.trim_end().strip_suffix("```").unwrap_or(body).trim()
}

/// Diagnostics as plain text for a model: `line:col: CODE message (hint)`.
pub fn render_for_model(source: &str, diagnostics: &[Diagnostic]) -> String {
    let lines = LineIndex::new(source);
    let mut out = String::new();
    for d in diagnostics.iter().filter(|d| d.is_error()).take(20) {
        let at = lines.line_col(source, d.span.start);
        let snippet = source
            .lines()
            .nth(at.line.saturating_sub(1) as usize)
            .unwrap_or_default()
            .trim();
        out.push_str(&format!(
            "line {}, column {}: {} {}",
            at.line,
            at.column,
            d.code.as_str(),
            d.message
        ));
        if let Some(h) = &d.hint {
            out.push_str(&format!(" (hint: {h})"));
        }
        if !snippet.is_empty() {
            let snippet: String = snippet.chars().take(120).collect();
            out.push_str(&format!("\n    {snippet}"));
        }
        out.push('\n');
    }
    out
}

impl PlannerCall {
    fn spec(&self) -> PlanSpec {
        let program = &self.engine.program;
        let decl = program.action(self.action);
        let ActionKind::Planner(p) = &decl.kind else {
            unreachable!("a planner call is made for a planner");
        };
        let slots = |ps: &[troupe_check::ir::Param]| {
            ps.iter()
                .map(|p| OutputSlot::new(p.name.clone(), p.ty.clone()))
                .collect::<Vec<_>>()
        };
        PlanSpec {
            inputs: slots(&decl.params),
            outputs: slots(&decl.outputs),
            actions: p
                .actions
                .iter()
                .map(|a| {
                    let a = program.action(*a);
                    PlanAction {
                        name: a.name.clone(),
                        params: slots(&a.params),
                        outputs: slots(&a.outputs),
                    }
                })
                .collect(),
            lifelines: p.lifelines.clone(),
        }
    }

    fn failed(&self, message: String) -> Failure {
        Failure::Action(message)
    }

    /// Checks a plan: the language's rules, then the host's.
    fn check(&self, source: &str) -> Result<Program, Vec<Diagnostic>> {
        let plan = troupe_check::plan::check_plan(&self.engine.program, self.action, source)?;
        if let Some(verify) = &self.engine.plan_verifier {
            let found = verify(&plan, source);
            if found.iter().any(Diagnostic::is_error) {
                return Err(found);
            }
        }
        Ok(plan)
    }

    /// The accepted plan: from the journal, or asked of the model until one
    /// checks (at most `retries + 1` times).
    async fn plan(&self) -> Result<(String, Program), Failure> {
        let key = plan_key(&self.step);
        if let Some(Recorded::Done(values)) = self.journal.as_ref().and_then(|j| j.recorded(&key)) {
            let Some(Value::Text(source)) = values.first() else {
                return Err(self.failed("the recorded plan is not a text".into()));
            };
            return match self.check(source) {
                Ok(p) => Ok((source.to_string(), p)),
                Err(d) => Err(self.failed(format!(
                    "the recorded plan no longer checks:\n{}",
                    render_for_model(source, &d)
                ))),
            };
        }
        let engine = &self.engine;
        let decl = engine.program.action(self.action);
        let ActionKind::Planner(p) = &decl.kind else {
            unreachable!("a planner call is made for a planner");
        };
        let types = &engine.program.types;
        let task = render(&p.prompt, &self.args, types);
        let instructions = troupe_check::plan::instructions(&engine.program, self.action);
        let spec = Arc::new(self.spec());
        let attempts = p.retries + 1;
        let mut feedback: Option<(String, String)> = None;
        for attempt in 0..attempts {
            let mut prompt = format!("{task}\n\n{instructions}");
            if let Some((previous, diagnostics)) = &feedback {
                prompt.push_str(&format!(
                    "\nYour previous plan did not check:\n```\n{previous}\n```\nDiagnostics:\n{diagnostics}Write a corrected plan.\n"
                ));
            }
            let request = LlmRequest {
                key: CallKey {
                    lifeline: self.step.lifeline.clone(),
                    action: self.step.action.clone(),
                    // Each attempt of each call its own occurrence, stable
                    // across restarts: a script lists the attempts in order.
                    occurrence: self.step.occurrence * u64::from(attempts) + u64::from(attempt),
                },
                seed: self.seed,
                system: p.system.as_ref().map(|t| render(t, &self.args, types)),
                prompt,
                outputs: vec![OutputSlot::new("plan", troupe_check::Type::Text)],
                types: engine.types.clone(),
                model: p.model.clone(),
                temperature: p.temperature,
                retries: Some(0),
                plan: Some(spec.clone()),
                tools: Vec::new(),
                conversation: Vec::new(),
            };
            let started = std::time::Instant::now();
            let answer = engine.llm.call(&request).await;
            let mut call = LlmCall {
                model: String::new(),
                system: request.system.clone(),
                prompt: request.prompt.clone(),
                answer: None,
                outputs: None,
                usage: None,
                latency_ms: started.elapsed().as_millis() as u64,
                attempts: 1,
                retries: Vec::new(),
                cost_usd: None,
                error: None,
            };
            let answer = match answer {
                Ok(a) => a,
                Err(e) => {
                    call.model = e.backend().to_owned();
                    call.error = Some(e.to_string());
                    if let Some(j) = &self.journal {
                        j.llm_call(&key, &call);
                    }
                    return Err(self.failed(format!("asking for a plan: {e}")));
                }
            };
            call.model = answer.model.clone();
            call.usage = answer.usage;
            call.answer = answer.detail.raw.clone();
            call.cost_usd = answer.detail.cost_usd;
            let text = match answer.values.first() {
                Some(Value::Text(t)) => t.to_string(),
                _ => String::new(),
            };
            let source = unfence(&text).to_owned();
            let checked = self.check(&source);
            call.outputs = Some(serde_json::json!([source]));
            if let Err(d) = &checked {
                call.error = Some(format!(
                    "the plan does not check: {}",
                    render_for_model(&source, d)
                ));
            }
            if let Some(j) = &self.journal {
                j.llm_call(&key, &call);
            }
            match checked {
                Ok(program) => {
                    if let Some(j) = &self.journal {
                        j.record(
                            &key,
                            StepKind::Plan,
                            &self.args,
                            &[Value::text(source.clone())],
                        )
                        .await
                        .map_err(Failure::Journal)?;
                    }
                    return Ok((source, program));
                }
                Err(d) => {
                    tracing::info!(attempt, "the plan does not check");
                    // What the model sees again is bounded, whatever it wrote.
                    let shown: String = source.chars().take(4000).collect();
                    feedback = Some((shown, render_for_model(&source, &d)));
                }
            }
        }
        let (_, diagnostics) = feedback.unwrap_or_default();
        Err(Failure::Run(Box::new(RunError::PlanRejected {
            run: self.run_id.clone(),
            action: decl.name.clone(),
            attempts,
            diagnostics,
        })))
    }

    /// Plans (or takes the recorded plan) and runs it; the plan's results
    /// are the planner's outputs.
    pub(super) async fn perform(self) -> Result<Vec<Value>, Failure> {
        let (source, program) = self.plan().await?;
        let nested = nested_engine(&self.engine, program, &source, &self.run_id, &self.step)
            .map_err(|e| self.failed(format!("the plan cannot run: {e}")))?;
        let journal: Option<Arc<dyn RunJournal>> = self.journal.clone().map(|inner| {
            Arc::new(Nested {
                inner,
                outer: self.step.clone(),
            }) as Arc<dyn RunJournal>
        });
        let run_id = format!("{}/{}", self.run_id, self.step);
        let inputs = self.args.clone();
        let outcome = nested
            .run(
                inputs,
                RunOptions {
                    run_id: run_id.clone(),
                    run_uid: Some(format!("{}/{}", self.uid, self.step)),
                    seed: self.seed,
                    trace: true,
                    schedule: crate::Schedule::RunToBlock,
                    journal,
                    remote: None,
                    park_after: None,
                    // The outer run is interrupted, and drops this one.
                    interrupt: None,
                },
            )
            .await
            .map_err(|e| match e {
                RunError::NeedsResolution { step, .. } => {
                    // Name the step as the outer run's journal knows it.
                    let inner = StepKey::parse(&step);
                    Failure::Run(Box::new(RunError::NeedsResolution {
                        run: self.run_id.clone(),
                        step: inner
                            .map(|k| nested_key(&self.step, &k).to_string())
                            .unwrap_or(step),
                    }))
                }
                RunError::Journal { message, .. } => Failure::Journal(message),
                other => self.failed(format!("the plan failed: {other}")),
            })?;
        let trace = outcome.trace.unwrap_or_default();
        nested
            .verify(&run_id, &trace)
            .map_err(|e| self.failed(format!("the plan's run is not a run of the plan: {e}")))?;
        if let Some(j) = &self.journal {
            let rendered = trace.render(nested.program(), nested.workflow());
            j.record(
                &plan_run_key(&self.step),
                StepKind::Plan,
                &self.args,
                &[Value::text(rendered)],
            )
            .await
            .map_err(Failure::Journal)?;
        }
        Ok(outcome.results.into_iter().map(|(_, v)| v).collect())
    }
}

/// The engine of a checked plan: the plan's projection, with the outer
/// engine's performers (the plan's program has the same actions, so the
/// same ids), models and people.
fn nested_engine(
    outer: &Arc<Inner>,
    program: Program,
    source: &str,
    run: &str,
    step: &StepKey,
) -> Result<Engine, RunError> {
    let wf = &program.workflows[0];
    let Projected {
        monitor,
        flat,
        lanes,
        tag_lane,
        key_lane,
        forks,
        guards,
    } = projected(&program, wf)?;
    let mut stmt_spans = vec![Span::default(); wf.stmt_count as usize];
    collect_spans(&wf.body, &mut stmt_spans);
    let humans: Arc<dyn HumanInbox> = Arc::new(NestedInbox {
        inner: outer.humans.clone(),
        run: run.to_owned(),
        outer: step.clone(),
    });
    Ok(Engine {
        inner: Arc::new(Inner {
            types: Arc::new(program.types.clone()),
            lines: Some(LineIndex::new(source)),
            program: Arc::new(program),
            workflow: 0,
            flat,
            // The same actions, the same ids. A plan calls no planner
            // (E0801), so a nested run never plans.
            performers: outer.performers.clone(),
            llm: outer.llm.clone(),
            mock: outer.mock.clone(),
            humans,
            timeouts: outer.timeouts.clone(),
            default_timeout: outer.default_timeout,
            stmt_spans,
            semantics: std::sync::OnceLock::new(),
            monitor,
            lanes,
            tag_lane,
            key_lane,
            forks,
            guards,
            policy: outer.policy.clone(),
            plan_verifier: None,
        }),
    })
}

/// The outer run's journal, as the nested run of one planner call sees it:
/// its steps are recorded under the planner step's key; its events, its
/// checkpoints and its end are not the outer run's.
struct Nested {
    inner: Arc<dyn RunJournal>,
    outer: StepKey,
}

impl RunJournal for Nested {
    fn event(&self, _lifeline: LifelineId, _event: &Event) {}

    fn recorded(&self, key: &StepKey) -> Option<Recorded> {
        self.inner.recorded(&nested_key(&self.outer, key))
    }

    fn begin_effect(
        &self,
        key: &StepKey,
        kind: StepKind,
        args: &[Value],
    ) -> BoxFuture<'static, Result<(), String>> {
        self.inner
            .begin_effect(&nested_key(&self.outer, key), kind, args)
    }

    fn record(
        &self,
        key: &StepKey,
        kind: StepKind,
        args: &[Value],
        outputs: &[Value],
    ) -> BoxFuture<'static, Result<(), String>> {
        self.inner
            .record(&nested_key(&self.outer, key), kind, args, outputs)
    }

    fn forget_effect(&self, key: &StepKey) -> BoxFuture<'static, Result<(), String>> {
        self.inner.forget_effect(&nested_key(&self.outer, key))
    }

    fn timer(
        &self,
        key: &StepKey,
        after: std::time::Duration,
    ) -> BoxFuture<'static, Result<std::time::Duration, String>> {
        self.inner.timer(&nested_key(&self.outer, key), after)
    }

    fn flush(&self) -> BoxFuture<'static, Result<(), String>> {
        self.inner.flush()
    }

    fn checkpoint(&self, _checkpoint: Checkpoint) -> Option<u64> {
        None
    }

    fn llm_call(&self, key: &StepKey, call: &LlmCall) {
        self.inner.llm_call(&nested_key(&self.outer, key), call);
    }

    fn finish(
        &self,
        _outcome: Result<&[(String, Value)], &RunError>,
    ) -> BoxFuture<'static, Result<(), String>> {
        Box::pin(async { Ok(()) })
    }
}

/// The outer run's inbox, as a nested run sees it: a task belongs to the
/// outer run, under the nested step's key.
#[derive(Debug)]
struct NestedInbox {
    inner: Arc<dyn HumanInbox>,
    run: String,
    outer: StepKey,
}

impl HumanInbox for NestedInbox {
    fn ask(&self, mut task: HumanTask) -> BoxFuture<'static, Result<serde_json::Value, String>> {
        if let Some(inner) = StepKey::parse(&task.key) {
            task.key = nested_key(&self.outer, &inner).to_string();
        }
        task.run = self.run.clone();
        self.inner.ask(task)
    }
}
