//! One step of a lifeline's task: the next operation of its flat local
//! program (a message, a decision, a statement, an action started).

use super::*;

impl RunState {
    /// Runs `task` until it waits, ends, or (random schedule) for one op.
    /// `engine` is `self.engine`, lent by the caller: cloning the `Arc` here
    /// cost two atomic operations per step, a fifth of a step's time in the
    /// counter loop (docs/performance.md).
    pub(super) fn step(&mut self, engine: &Inner, task: u32) -> Result<(), RunError> {
        if let Some(result) = self.tasks[task as usize].deferred.take() {
            return self.complete(task, result);
        }
        let lane = self.tasks[task as usize].lane;
        let ops = &engine.flat[lane as usize].ops;
        let types = &engine.program.types;
        let one_op = matches!(self.options.schedule, Schedule::Random(_));
        let gated = !self.lanes[lane as usize].replay.is_empty();
        loop {
            // Between two operations the state is consistent: a checkpoint
            // taken here is one a resumed run can continue from.
            if self.events >= self.next_checkpoint {
                self.checkpoint();
            }
            let pc = self.tasks[task as usize].pc;
            let Some(op) = ops.get(pc as usize) else {
                self.tasks[task as usize].wait = Wait::Done;
                self.done += 1;
                return Ok(());
            };
            if gated {
                let stmt = match op {
                    Op::Send { stmt, .. }
                    | Op::Recv { stmt, .. }
                    | Op::Decide { stmt, .. }
                    | Op::Await { stmt, .. } => Some(*stmt),
                    Op::Act {
                        stmt,
                        call: Call::Expr(_),
                        ..
                    } => Some(*stmt),
                    Op::Act {
                        stmt,
                        call: Call::Action { action, .. },
                        ..
                    } => matches!(
                        engine.performers[action.0 as usize],
                        Performer::PureExpr | Performer::PureHost(_)
                    )
                    .then_some(*stmt),
                    _ => None,
                };
                if let Some(stmt) = stmt
                    && !self.my_turn(lane, stmt)
                {
                    self.tasks[task as usize].wait = Wait::Turn;
                    return Ok(());
                }
            }
            self.steps += 1;
            match op {
                Op::Send { stmt, to, items } => {
                    let env = &self.lanes[lane as usize].env;
                    let mut values = Vec::with_capacity(items.len());
                    for item in items {
                        values.push(
                            eval(item, env, types).map_err(|e| self.eval_error(lane, *stmt, e))?,
                        );
                    }
                    if self.recording() {
                        let msg = Message::Data {
                            stmt: *stmt,
                            values: Some(values.clone()),
                        };
                        self.record(lane, Event::Send { to: *to, msg });
                    }
                    let meta = self.causal_send(engine, lane);
                    self.push(
                        task,
                        to.0,
                        engine.lanes.of(*stmt),
                        Msg::Data {
                            stmt: *stmt,
                            values,
                            meta,
                        },
                    );
                    self.tasks[task as usize].pc += 1;
                }
                Op::Recv { stmt, from, binds } => {
                    match self.pop(task, from.0, engine.lanes.of(*stmt)) {
                        None => {
                            self.tasks[task as usize].wait =
                                Wait::Recv(from.0, engine.lanes.of(*stmt));
                            return Ok(());
                        }
                        Some(Msg::Data {
                            stmt: got,
                            values,
                            meta,
                        }) if got == *stmt && values.len() == binds.len() => {
                            let env = &mut self.lanes[lane as usize].env;
                            for (bind, value) in binds.iter().zip(&values) {
                                if let Recv::Bind(var) = bind {
                                    env.set(*var, value.clone());
                                }
                            }
                            let bound = |v: VarId| binds.contains(&Recv::Bind(v));
                            self.causal_receive(engine, lane, meta.as_ref(), &bound);
                            // The values move into the event: no copy of
                            // the message per receive.
                            if self.recording() {
                                let msg = Message::Data {
                                    stmt: *stmt,
                                    values: Some(values),
                                };
                                self.record(lane, Event::Recv { from: *from, msg });
                            }
                            self.tasks[task as usize].pc += 1;
                        }
                        Some(other) => {
                            return Err(self.protocol(
                                lane,
                                format!("expected the message of s{}, got {other:?}", stmt.0),
                            ));
                        }
                    }
                }
                Op::Act {
                    stmt,
                    outputs,
                    call,
                } => match call {
                    Call::Expr(e) => {
                        let value = eval(e, &self.lanes[lane as usize].env, types)
                            .map_err(|e| self.eval_error(lane, *stmt, e))?;
                        self.finish_act(task, *stmt, outputs, vec![value]);
                    }
                    Call::Action { action, args } => {
                        let env = &self.lanes[lane as usize].env;
                        let mut argv = Vec::with_capacity(args.len());
                        for a in args {
                            argv.push(
                                eval(a, env, types).map_err(|e| self.eval_error(lane, *stmt, e))?,
                            );
                        }
                        match &engine.performers[action.0 as usize] {
                            Performer::PureExpr => {
                                let ActionKind::Pure { body: Some(body) } =
                                    &engine.program.action(*action).kind
                                else {
                                    unreachable!(
                                        "PureExpr is only built for pure actions with a body"
                                    )
                                };
                                let value = eval(body, argv.as_slice(), types)
                                    .map_err(|e| self.eval_error(lane, *stmt, e))?;
                                self.finish_act(task, *stmt, outputs, vec![value]);
                            }
                            Performer::PureHost(f) => {
                                let values = f(&argv)
                                    .map_err(|m| self.action_error(lane, *stmt, *action, m))?;
                                let values = self.check_outputs(lane, *stmt, *action, values)?;
                                self.finish_act(task, *stmt, outputs, values);
                            }
                            performer => {
                                let performer = performer.clone();
                                self.start(task, *action, argv, performer)?;
                                self.tasks[task as usize].wait = Wait::Action;
                                return Ok(());
                            }
                        }
                    }
                },
                Op::Decide {
                    stmt,
                    guard,
                    tag,
                    notify,
                    on_false,
                } => {
                    let decision = if let troupe_check::ir::ExprKind::Cpl(_) = guard.kind {
                        self.causal_decide(engine, lane, *stmt)
                    } else {
                        let decision = match eval(guard, &self.lanes[lane as usize].env, types) {
                            Ok(Value::Bool(b)) => b,
                            Ok(other) => {
                                return Err(self.protocol(lane, format!("guard gave {other:?}")));
                            }
                            Err(e) => return Err(self.eval_error(lane, *stmt, e)),
                        };
                        self.causal_event(engine, lane, &|_| false);
                        decision
                    };
                    if self.recording() {
                        self.record(
                            lane,
                            Event::Decide {
                                stmt: *stmt,
                                tag: *tag,
                                decision,
                            },
                        );
                    }
                    for r in notify {
                        if self.recording() {
                            let msg = Message::Control {
                                stmt: *stmt,
                                tag: *tag,
                                decision,
                            };
                            self.record(lane, Event::Send { to: *r, msg });
                        }
                        let meta = self.causal_send(engine, lane);
                        self.push(
                            task,
                            r.0,
                            engine.lanes.of(*stmt),
                            Msg::Control {
                                tag: *tag,
                                decision,
                                meta,
                            },
                        );
                    }
                    self.tasks[task as usize].pc = if decision { pc + 1 } else { *on_false };
                }
                Op::Await {
                    stmt,
                    from,
                    tag,
                    on_false,
                } => match self.pop(task, from.0, engine.lanes.of(*stmt)) {
                    None => {
                        self.tasks[task as usize].wait = Wait::Recv(from.0, engine.lanes.of(*stmt));
                        return Ok(());
                    }
                    Some(Msg::Control {
                        tag: got,
                        decision,
                        meta,
                    }) if got == *tag => {
                        self.causal_receive(engine, lane, meta.as_ref(), &|_| false);
                        if self.recording() {
                            let msg = Message::Control {
                                stmt: *stmt,
                                tag: *tag,
                                decision,
                            };
                            self.record(lane, Event::Recv { from: *from, msg });
                        }
                        self.tasks[task as usize].pc = if decision { pc + 1 } else { *on_false };
                    }
                    Some(other) => {
                        return Err(self.protocol(
                            lane,
                            format!("expected decision {tag} of s{}, got {other:?}", stmt.0),
                        ));
                    }
                },
                Op::Jump { target } => self.tasks[task as usize].pc = *target,
                Op::Fork { parts, .. } => {
                    for &start in parts {
                        self.spawn(lane, start, task);
                    }
                    self.tasks[task as usize].pc += 1;
                }
                Op::EndPart { fork, part, .. } => {
                    if *part != 0 {
                        self.end_part(task);
                        return Ok(());
                    }
                    if self.tasks[task as usize].children > 0 {
                        self.tasks[task as usize].wait = Wait::Join;
                        return Ok(());
                    }
                    let Some(Op::Fork { join, .. }) = ops.get(*fork as usize) else {
                        return Err(self.protocol(lane, "a part ends outside a `par`".into()));
                    };
                    self.tasks[task as usize].pc = *join;
                }
            }
            if one_op {
                self.ready.push_back(task);
                return Ok(());
            }
        }
    }

    pub(super) fn protocol(&self, lane: u32, message: String) -> RunError {
        RunError::Protocol {
            run: self.options.run_id.clone(),
            lifeline: self.workflow().lifelines[lane as usize].name.clone(),
            message,
        }
    }

    pub(super) fn action_error(
        &self,
        lane: u32,
        stmt: StmtId,
        action: ActionId,
        message: String,
    ) -> RunError {
        RunError::Action {
            run: self.options.run_id.clone(),
            at: self.location(lane, stmt, Some(action)),
            message,
        }
    }

    /// Checks an action's outputs against its declared types.
    pub(super) fn check_outputs(
        &self,
        lane: u32,
        stmt: StmtId,
        action: ActionId,
        values: Vec<Value>,
    ) -> Result<Vec<Value>, RunError> {
        let decl = self.engine.program.action(action);
        let types = &self.engine.program.types;
        if values.len() != decl.outputs.len() {
            let msg = format!(
                "returned {} value(s) but declares {} output(s)",
                values.len(),
                decl.outputs.len()
            );
            return Err(self.action_error(lane, stmt, action, msg));
        }
        for (v, out) in values.iter().zip(&decl.outputs) {
            if !v.conforms(&out.ty, types) {
                let msg = format!(
                    "output `{}` should be {}, but is {}",
                    out.name,
                    types.display(&out.ty),
                    v.to_json(types)
                );
                return Err(self.action_error(lane, stmt, action, msg));
            }
        }
        Ok(values)
    }

    pub(super) fn finish_act(
        &mut self,
        task: u32,
        stmt: StmtId,
        outputs: &[Option<VarId>],
        values: Vec<Value>,
    ) {
        let lane = self.tasks[task as usize].lane;
        if self.recording() {
            self.record(
                lane,
                Event::Act {
                    stmt,
                    outputs: Some(values.clone()),
                },
            );
        }
        let l = &mut self.lanes[lane as usize];
        for (out, value) in outputs.iter().zip(values) {
            if let Some(var) = out {
                l.env.set(*var, value);
            }
        }
        if !self.views.is_empty() {
            let engine = self.engine.clone();
            self.causal_event(&engine, lane, &|v| outputs.contains(&Some(v)));
        }
        self.tasks[task as usize].pc += 1;
    }
}
