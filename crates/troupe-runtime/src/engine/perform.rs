//! Actions performed: starting an asynchronous action (a model, an
//! effect, a tool, a person, a conversation), journaled, and completing it.

use super::*;

impl RunState {
    /// Starts an asynchronous action on the run's task set, or takes its
    /// result from the journal when a resumed run already has it.
    pub(super) fn start(
        &mut self,
        task: u32,
        action: ActionId,
        args: Vec<Value>,
        performer: Performer,
    ) -> Result<(), RunError> {
        let engine = self.engine.clone();
        let decl = engine.program.action(action);
        let (lane, pc) = {
            let t = &self.tasks[task as usize];
            (t.lane, t.pc)
        };
        let occurrence = {
            let key = engine.key_lane_at(lane as usize, pc);
            let l = &mut self.lanes[lane as usize];
            let occ = if key == 0 {
                &mut l.occurrences[action.0 as usize]
            } else {
                l.keyed.entry((key, action.0)).or_default()
            };
            let k = *occ;
            *occ += 1;
            occurrence_key(key, k)
        };
        let lifeline = self.workflow().lifelines[lane as usize].name.clone();
        let step = StepKey {
            lifeline,
            action: decl.name.clone(),
            occurrence,
        };
        let (kind, idempotent) = match (&performer, &decl.kind) {
            (Performer::Llm, _) => (StepKind::Llm, true),
            (Performer::Human, _) => (StepKind::Human, false),
            (Performer::Mock, _) => (StepKind::Mock, true),
            // Safe to repeat: its plan and its nested steps are journaled.
            (Performer::Planner, _) => (StepKind::Plan, true),
            // Safe to repeat: the recorded deadline stays.
            (Performer::Sleep, _) => (StepKind::Timer, true),
            (Performer::Tool(_), ActionKind::Tool(t)) => (StepKind::Tool, t.idempotent),
            (_, ActionKind::Effect { idempotent }) => (StepKind::Effect, *idempotent),
            _ => (StepKind::Effect, false),
        };
        let journal = self.journal();
        if let Some(journal) = &journal {
            match journal.recorded(&step) {
                Some(Recorded::Done(values)) => {
                    if kind == StepKind::Tool {
                        self.log_tool(action, &args, &values);
                    }
                    self.pending
                        .push(Box::pin(async move { (task, Ok(values)) }));
                    return Ok(());
                }
                // A crash between "started" and "finished": repeat only what
                // is safe to repeat (the idempotency key stays the same).
                Some(Recorded::Started) if !idempotent => {
                    return Err(RunError::NeedsResolution {
                        run: self.options.run_id.clone(),
                        step: step.to_string(),
                    });
                }
                Some(Recorded::Started) | None => {}
            }
        }
        let span = tracing::info_span!(
            parent: &self.spans[lane as usize],
            "step",
            step = %step,
            kind = kind.as_str(),
        );
        if let (Performer::Llm, ActionKind::Llm(llm)) = (&performer, &decl.kind)
            && !llm.tools.is_empty()
        {
            let agent = self.agent(&engine, action, &step, &args);
            let timeout = engine
                .timeouts
                .get(&decl.name)
                .copied()
                .or(engine.default_timeout);
            let fut = async move {
                let run = agent.run();
                let values = match timeout {
                    Some(t) => match tokio::time::timeout(t, run).await {
                        Ok(r) => r?,
                        Err(_) => return Err(Failure::Action(format!("timed out after {t:?}"))),
                    },
                    None => run.await?,
                };
                if let Some(journal) = &journal {
                    journal
                        .record(&step, kind, &args, &values)
                        .await
                        .map_err(Failure::Journal)?;
                }
                Ok(values)
            };
            self.pending
                .push(Box::pin(async move { (task, fut.instrument(span).await) }));
            return Ok(());
        }
        if let Performer::Planner = performer {
            let call = planner::PlannerCall {
                engine: engine.clone(),
                action,
                step: step.clone(),
                args: args.clone(),
                run_id: self.options.run_id.clone(),
                uid: self.uid.clone(),
                seed: self.options.seed,
                journal: journal.clone(),
            };
            let fut = async move {
                let values = call.perform().await?;
                if let Some(journal) = &journal {
                    journal
                        .record(&step, kind, &args, &values)
                        .await
                        .map_err(Failure::Journal)?;
                }
                Ok(values)
            };
            self.pending
                .push(Box::pin(async move { (task, fut.instrument(span).await) }));
            return Ok(());
        }
        let log = (kind == StepKind::Tool).then(|| (self.tool_log.clone(), action, args.clone()));
        let asked = crate::Asked::waking(self.asked.clone());
        let make = self.performance(&engine, action, &step, &args, performer, asked.clone());
        // A timer's wait is what was asked for, not work taking too long.
        let timeout = match kind {
            StepKind::Timer => None,
            _ => engine
                .timeouts
                .get(&decl.name)
                .copied()
                .or(engine.default_timeout),
        };
        let outputs: Vec<Type> = decl.outputs.iter().map(|p| p.ty.clone()).collect();
        let types = engine.types.clone();
        let fut = async move {
            if let (Some(journal), true) = (&journal, kind.is_effect()) {
                journal
                    .begin_effect(&step, kind, &args)
                    .await
                    .map_err(Failure::Journal)?;
            }
            if let (Some(journal), StepKind::Human | StepKind::Timer) = (&journal, kind) {
                journal.flush().await.map_err(Failure::Journal)?;
            }
            let perform = make();
            let (values, timed_out) = match timeout {
                Some(t) => match tokio::time::timeout(t, perform).await {
                    Ok(r) => (r, false),
                    Err(_) => (Err(format!("timed out after {t:?}")), true),
                },
                None => (perform.await, false),
            };
            let values = match values {
                Ok(v) => v,
                Err(e) => {
                    // An effect that said it failed may run again on retry. A
                    // timeout, or a tool call (whose error may be a lost
                    // connection), says nothing of what happened: the start
                    // stays, and a person settles it.
                    if let (Some(journal), StepKind::Effect, false) = (&journal, kind, timed_out) {
                        journal
                            .forget_effect(&step)
                            .await
                            .map_err(Failure::Journal)?;
                    }
                    return Err(Failure::Action(e));
                }
            };
            // Only a well-typed result is worth recording; the run reports
            // the mismatch with its location.
            let well_typed = values.len() == outputs.len()
                && values
                    .iter()
                    .zip(&outputs)
                    .all(|(v, t)| v.conforms(t, &types));
            if let (Some(journal), true) = (&journal, well_typed) {
                journal
                    .record(&step, kind, &args, &values)
                    .await
                    .map_err(Failure::Journal)?;
            }
            if let (Some((tool_log, action, args)), true) = (log, well_typed)
                && let Ok(mut l) = tool_log.lock()
            {
                l.push(ToolRecord {
                    action,
                    args,
                    outputs: values.clone(),
                });
            }
            Ok(values)
        };
        match kind {
            StepKind::Human | StepKind::Timer => {
                self.with_people.insert(task, asked);
            }
            StepKind::Effect | StepKind::Tool => {
                self.effects.insert(task);
            }
            _ => {}
        }
        self.pending
            .push(Box::pin(async move { (task, fut.instrument(span).await) }));
        Ok(())
    }

    /// What performing an action means: a function that starts it (called
    /// only once the journal allows, so that nothing runs before its start
    /// is recorded).
    pub(super) fn performance(
        &self,
        engine: &Arc<Inner>,
        action: ActionId,
        step: &StepKey,
        args: &[Value],
        performer: Performer,
        asked: crate::Asked,
    ) -> Box<dyn FnOnce() -> troupe_llm::BoxFuture<'static, Result<Vec<Value>, String>> + Send>
    {
        let decl = engine.program.action(action);
        let types = &engine.program.types;
        let outputs: Vec<OutputSlot> = decl
            .outputs
            .iter()
            .map(|p| OutputSlot {
                name: p.name.clone(),
                ty: p.ty.clone(),
            })
            .collect();
        let key = CallKey {
            lifeline: step.lifeline.clone(),
            action: step.action.clone(),
            occurrence: step.occurrence,
        };
        let seed = self.options.seed;
        let run = self.options.run_id.clone();
        let idempotency_key = || format!("{}/{step}", self.uid);
        let llm_request =
            |system: Option<String>, prompt: String, model, temperature, retries| LlmRequest {
                key: key.clone(),
                seed,
                system,
                prompt,
                outputs: outputs.clone(),
                types: engine.types.clone(),
                model,
                temperature,
                retries,
                tools: Vec::new(),
                conversation: Vec::new(),
                plan: None,
            };
        match (performer, &decl.kind) {
            (Performer::Llm, ActionKind::Llm(llm)) => {
                let request = llm_request(
                    llm.system.as_ref().map(|t| render(t, args, types)),
                    render(&llm.prompt, args, types),
                    llm.model.clone(),
                    llm.temperature,
                    llm.retries,
                );
                let backend = engine.llm.clone();
                let journal = self.options.journal.clone();
                let step = step.clone();
                Box::new(move || {
                    Box::pin(async move {
                        crate::agent::model_call(&*backend, &request, journal.as_deref(), &step)
                            .await
                            .map(|a| a.values)
                            .map_err(|e| e.to_string())
                    })
                })
            }
            (Performer::Mock, _) => {
                let request = llm_request(None, String::new(), None, None, None);
                let backend = engine.mock.clone().unwrap_or_else(|| engine.llm.clone());
                Box::new(move || {
                    Box::pin(async move {
                        backend
                            .call(&request)
                            .await
                            .map(|a| a.values)
                            .map_err(|e| e.to_string())
                    })
                })
            }
            (Performer::Tool(host), ActionKind::Tool(tool)) => {
                let arguments = decl
                    .params
                    .iter()
                    .zip(args)
                    .map(|(p, v)| (p.name.clone(), v.to_json(types)))
                    .collect();
                let call = ToolCall {
                    server: tool.server.clone(),
                    tool: tool.remote.clone(),
                    arguments,
                    outputs,
                    types: engine.types.clone(),
                    idempotency_key: idempotency_key(),
                };
                Box::new(move || crate::genai::traced_tool_call(host.clone(), call.clone()))
            }
            (Performer::Effect(f), _) => {
                let call = EffectCall {
                    args: args.to_vec(),
                    idempotency_key: idempotency_key(),
                };
                Box::new(move || f(call))
            }
            (Performer::Sleep, _) => {
                let journal = self.options.journal.clone();
                let step = step.clone();
                let duration = match args.first() {
                    Some(Value::Text(t)) => humantime::parse_duration(t.trim()).map_err(|e| {
                        format!("`sleep` waits for a duration, and {t:?} is not one: {e}")
                    }),
                    _ => Err("`sleep` takes one duration".to_owned()),
                };
                Box::new(move || {
                    Box::pin(async move {
                        let after = duration?;
                        let left = match &journal {
                            Some(j) => j.timer(&step, after).await?,
                            None => after,
                        };
                        // Recorded: the run may park on it now, and any
                        // worker wakes it once it is due.
                        asked.waiting();
                        tokio::time::sleep(left).await;
                        Ok(Vec::new())
                    })
                })
            }
            (Performer::Human, ActionKind::Human(h)) => {
                let ty = decl.outputs.first().map_or(Type::Text, |p| p.ty.clone());
                let options = match &ty {
                    Type::Enum(id) => types.enum_def(*id).values.clone(),
                    _ => Vec::new(),
                };
                let task = HumanTask {
                    key: step.to_string(),
                    run,
                    lifeline: step.lifeline.clone(),
                    action: decl.name.clone(),
                    prompt: render(&h.ask, args, types),
                    prefill: h.prefill.as_ref().map(|t| render(t, args, types)),
                    answer: h.answer,
                    options,
                    ty: ty.clone(),
                    deadline: h.deadline.clone(),
                    remind: h.remind,
                    asked,
                };
                let inbox = engine.humans.clone();
                let types = engine.types.clone();
                let answer_kind = h.answer;
                Box::new(move || {
                    Box::pin(async move {
                        let answer = inbox.ask(task).await?;
                        if answer_kind == AnswerKind::Acknowledge {
                            // The empty record: the action has no outputs.
                            return match &answer {
                                serde_json::Value::Object(o) if o.is_empty() => Ok(Vec::new()),
                                other => Err(format!(
                                    "an acknowledgement is answered with {{}}, not {other}"
                                )),
                            };
                        }
                        let answer = match (answer_kind, &answer) {
                            // A confirm may be answered with yes/no text.
                            (AnswerKind::Confirm, serde_json::Value::String(s)) => {
                                Value::parse(s, &ty, &types)?
                            }
                            _ => Value::from_json(&answer, &ty, &types)?,
                        };
                        Ok(vec![answer])
                    })
                })
            }
            _ => Box::new(|| Box::pin(async { Err("no performer for this action".to_owned()) })),
        }
    }

    /// Keeps a `tool` action's call for the contract checks of later
    /// calls that models choose.
    pub(super) fn log_tool(&self, action: ActionId, args: &[Value], outputs: &[Value]) {
        if let Ok(mut l) = self.tool_log.lock() {
            l.push(ToolRecord {
                action,
                args: args.to_vec(),
                outputs: outputs.to_vec(),
            });
        }
    }

    /// The conversation of an `llm` action with `tools:`.
    pub(super) fn agent(
        &self,
        engine: &Arc<Inner>,
        action: ActionId,
        step: &StepKey,
        args: &[Value],
    ) -> Agent {
        let decl = engine.program.action(action);
        let types = &engine.program.types;
        let ActionKind::Llm(llm) = &decl.kind else {
            unreachable!("agents are made for llm actions only")
        };
        let slots = |params: &[troupe_check::ir::Param]| -> Vec<OutputSlot> {
            params
                .iter()
                .map(|p| OutputSlot {
                    name: p.name.clone(),
                    ty: p.ty.clone(),
                })
                .collect()
        };
        let offered = llm
            .tools
            .iter()
            .filter_map(|id| {
                let t = engine.program.action(*id);
                let ActionKind::Tool(tool) = &t.kind else {
                    return None;
                };
                let runner = match engine.performers.get(id.0 as usize)? {
                    Performer::Tool(host) => Runner::Host(host.clone()),
                    _ => Runner::Mock(engine.mock.clone().unwrap_or_else(|| engine.llm.clone())),
                };
                Some(Offered {
                    action: *id,
                    name: t.name.clone(),
                    params: t
                        .params
                        .iter()
                        .zip(tool.defaults.iter().chain(std::iter::repeat(&None)))
                        .map(|(p, d)| (p.name.clone(), p.ty.clone(), d.clone()))
                        .collect(),
                    outputs: slots(&t.outputs),
                    tool: tool.clone(),
                    runner,
                })
            })
            .collect();
        let request = LlmRequest {
            key: CallKey {
                lifeline: step.lifeline.clone(),
                action: step.action.clone(),
                occurrence: step.occurrence,
            },
            seed: self.options.seed,
            system: llm.system.as_ref().map(|t| render(t, args, types)),
            prompt: render(&llm.prompt, args, types),
            outputs: slots(&decl.outputs),
            types: engine.types.clone(),
            model: llm.model.clone(),
            temperature: llm.temperature,
            retries: llm.retries,
            tools: Vec::new(),
            conversation: Vec::new(),
            plan: None,
        };
        Agent {
            step: step.clone(),
            run: self.options.run_id.clone(),
            uid: self.uid.clone(),
            request,
            offered,
            backend: engine.llm.clone(),
            journal: self.options.journal.clone(),
            humans: engine.humans.clone(),
            policy: engine.policy.clone(),
            log: self.tool_log.clone(),
            unmade: self.unmade.clone(),
            types: engine.types.clone(),
            max_steps: llm.max_steps.unwrap_or(crate::agent::DEFAULT_MAX_STEPS),
        }
    }

    /// An asynchronous action of `task` finished.
    pub(super) fn complete(
        &mut self,
        task: u32,
        result: Result<Vec<Value>, Failure>,
    ) -> Result<(), RunError> {
        self.with_people.remove(&task);
        self.effects.remove(&task);
        let engine = self.engine.clone();
        let (lane, pc) = {
            let t = &self.tasks[task as usize];
            (t.lane, t.pc)
        };
        let Some(Op::Act {
            stmt,
            outputs,
            call: Call::Action { action, .. },
        }) = engine.flat[lane as usize].ops.get(pc as usize)
        else {
            return Err(self.protocol(
                lane,
                "an action finished, but the lifeline is not at an action".into(),
            ));
        };
        // While a resumed run replays, another part's recorded event may
        // have to come first: the result waits for its turn.
        if !self.my_turn(lane, *stmt) {
            let t = &mut self.tasks[task as usize];
            t.deferred = Some(result);
            t.wait = Wait::Turn;
            return Ok(());
        }
        let values = result.map_err(|f| match f {
            Failure::Action(m) => self.action_error(lane, *stmt, *action, m),
            Failure::Journal(message) => RunError::Journal {
                run: self.options.run_id.clone(),
                message,
            },
            Failure::NeedsResolution(step) => RunError::NeedsResolution {
                run: self.options.run_id.clone(),
                step,
            },
            Failure::Run(e) => *e,
        })?;
        let values = self.check_outputs(lane, *stmt, *action, values)?;
        self.finish_act(task, *stmt, outputs, values);
        self.tasks[task as usize].wait = Wait::Ready;
        self.ready.push_back(task);
        Ok(())
    }
}

/// Fills a template's `{param}` holes with the arguments.
pub(super) fn render(t: &Template, args: &[Value], types: &TypeTable) -> String {
    let mut out = String::new();
    for part in &t.parts {
        match part {
            TemplatePart::Text(s) => out.push_str(s),
            TemplatePart::Param(i) => {
                if let Some(v) = args.get(*i as usize) {
                    out.push_str(&display(v, types));
                }
            }
        }
    }
    out
}
