//! The run's side of causal guards (`troupe_msc::cpl`): each lifeline's
//! view steps at each of its events, a send hands its snapshot to the
//! message, a receive merges the sender's, and a causal guard is decided by
//! its owner's view. A workflow without causal guards does none of this.
//! The engine also rechecks a recorded run's causal decisions from its
//! chart (`troupe run` online, `troupe verify` from the store).

use super::*;
use troupe_msc::cpl::Meta;

impl RunState {
    /// One event of lifeline `lane` other than a receive or a send, after
    /// its effect on the lifeline's variables (binding those `bound` says).
    pub(super) fn causal_event(
        &mut self,
        engine: &Inner,
        lane: u32,
        bound: &dyn Fn(troupe_check::ir::VarId) -> bool,
    ) {
        let (Some(guards), Some(view)) =
            (engine.guards.as_deref(), self.views.get_mut(lane as usize))
        else {
            return;
        };
        view.step(
            guards,
            &self.lanes[lane as usize].env,
            &engine.program.types,
            bound,
        );
    }

    /// A send of `lane`: the event, and the metadata its message carries
    /// (`None` without causal guards).
    pub(super) fn causal_send(&mut self, engine: &Inner, lane: u32) -> Option<Meta> {
        let guards = engine.guards.as_deref()?;
        let view = self.views.get_mut(lane as usize)?;
        view.step(
            guards,
            &self.lanes[lane as usize].env,
            &engine.program.types,
            &|_| false,
        );
        let meta = view.meta();
        let bytes = meta.clock_and_flag_bytes() as u64;
        let stats = &mut self.metadata;
        stats.messages += 1;
        stats.bytes += bytes;
        stats.largest = stats.largest.max(bytes);
        stats.seen_values = stats.seen_values.max(meta.seen().len() as u64);
        Some(meta)
    }

    /// A receive of `lane`, after its bindings (those `bound` says): merges
    /// what the sender had seen, then counts the event.
    pub(super) fn causal_receive(
        &mut self,
        engine: &Inner,
        lane: u32,
        meta: Option<&Meta>,
        bound: &dyn Fn(troupe_check::ir::VarId) -> bool,
    ) {
        let (Some(guards), Some(view)) =
            (engine.guards.as_deref(), self.views.get_mut(lane as usize))
        else {
            return;
        };
        if let Some(meta) = meta {
            view.receive(guards, meta);
        }
        view.step(
            guards,
            &self.lanes[lane as usize].env,
            &engine.program.types,
            bound,
        );
    }

    /// The decision of `stmt`'s causal guard at its owner `lane`: the
    /// decision is the owner's event, at which its view evaluates the guard.
    pub(super) fn causal_decide(&mut self, engine: &Inner, lane: u32, stmt: StmtId) -> bool {
        let (Some(guards), Some(view)) =
            (engine.guards.as_deref(), self.views.get_mut(lane as usize))
        else {
            return false;
        };
        view.decide(
            guards,
            stmt,
            &self.lanes[lane as usize].env,
            &engine.program.types,
        )
    }
}

impl Engine {
    /// Whether the workflow has causal guards (LANGUAGE.md §7).
    pub fn has_causal_guards(&self) -> bool {
        self.inner.guards.is_some()
    }

    /// The recomputation of a run's causal decisions from its recorded
    /// chart, fed its events as they stream by (`troupe_msc::cpl::Recheck`:
    /// memory bounded by the workflow and the messages in flight); `None`
    /// when the workflow has no causal guards. `inputs` are the run's.
    pub fn causal_recheck(
        &self,
        run_id: &str,
        inputs: &[Value],
    ) -> Option<Result<troupe_msc::cpl::Recheck, RunError>> {
        let engine = self.clone();
        let lane: troupe_msc::cpl::recheck::LaneOf = Box::new(move |s| engine.inner.lanes.of(s));
        troupe_msc::cpl::Recheck::new(self.workflow(), self.inner.types.clone(), inputs, lane)
            .map(|r| r.map_err(|e| self.causal_error(run_id, e)))
    }

    /// [`Engine::causal_recheck`] from `checkpoint` instead of the run's
    /// start: for a history that retention pruned, which starts there.
    pub fn causal_recheck_from(
        &self,
        run_id: &str,
        inputs: &[Value],
        checkpoint: &Checkpoint,
    ) -> Option<Result<troupe_msc::cpl::Recheck, RunError>> {
        let recheck = match self.causal_recheck(run_id, inputs)? {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        let wf = self.workflow();
        let unfit = |message: String| RunError::NotMember {
            run: run_id.to_owned(),
            message,
        };
        // Each lifeline's variables are at their slots at their lifeline.
        let mut env = vec![None; wf.vars.len()];
        let mut slots = vec![0usize; wf.lifelines.len()];
        for (i, var) in wf.vars.iter().enumerate() {
            let l = var.lifeline.0 as usize;
            env[i] = checkpoint
                .lanes
                .get(l)
                .and_then(|lane| lane.values.get(slots[l]))
                .cloned()
                .flatten();
            slots[l] += 1;
        }
        let Some(views) = checkpoint
            .lanes
            .iter()
            .map(|lane| lane.view.clone())
            .collect::<Option<Vec<_>>>()
        else {
            return Some(Err(unfit(
                "its retained history starts at a checkpoint without causal views".into(),
            )));
        };
        let counts = views
            .iter()
            .map(|v| {
                v.snapshot()
                    .clock
                    .get(v.lifeline.0 as usize)
                    .copied()
                    .unwrap_or(0)
            })
            .collect();
        let mut in_flight = Vec::new();
        for channel in &checkpoint.channels {
            for m in &channel.messages {
                let lane = match m {
                    Queued::Data { stmt, .. } => self.inner.lanes.of(*stmt),
                    Queued::Control { tag, .. } => {
                        self.inner.tag_lane.get(tag).copied().unwrap_or(0)
                    }
                };
                if let Some(meta) = m.meta() {
                    in_flight.push(((channel.from.0, channel.to.0, lane), meta.clone()));
                }
            }
        }
        Some(recheck.resume(env, views, counts, in_flight).map_err(unfit))
    }

    /// A recheck's finding, for people: the decision, its guard, and what
    /// the recorded chart says instead.
    pub fn causal_error(&self, run_id: &str, m: troupe_msc::cpl::Mismatch) -> RunError {
        let wf = self.workflow();
        let message = match m {
            troupe_msc::cpl::Mismatch::Decision {
                lifeline,
                event,
                stmt,
                recorded,
                value,
            } => {
                let names = troupe_project::canon::Names::new(&self.inner.program, wf);
                let guard = match wf.stmts_by_id().get(stmt.0 as usize).copied().flatten() {
                    Some(troupe_check::ir::Stmt {
                        kind:
                            StmtKind::If { guard, owner, .. } | StmtKind::While { guard, owner, .. },
                        ..
                    }) => format!("`{} @ {}`", names.expr(guard), names.lifeline(*owner)),
                    _ => format!("statement {}", stmt.0),
                };
                format!(
                    "{}'s decision at its event {event} ({guard}) was {recorded}, but on the recorded chart the guard is {value} there: a decision must follow from what its owner had causally seen",
                    wf.lifelines[lifeline.0 as usize].name,
                )
            }
            other => other.to_string(),
        };
        RunError::NotMember {
            run: run_id.to_owned(),
            message,
        }
    }

    /// Recomputes every decision of a causal guard in `exec` (whose
    /// lifelines may have been recorded apart: its events are put in an
    /// order in which they could have happened) and checks it against the
    /// decision recorded: `Ok(n)` with the number checked.
    pub fn verify_causal(
        &self,
        run_id: &str,
        exec: &troupe_msc::Execution,
        inputs: &[Value],
    ) -> Result<u64, RunError> {
        let Some(recheck) = self.causal_recheck(run_id, inputs) else {
            return Ok(0);
        };
        let mut recheck = recheck?;
        let lanes = &self.inner.lanes;
        let events = exec
            .linearize_lanes(&|s| lanes.of(s))
            .ok_or_else(|| RunError::NotMember {
                run: run_id.to_owned(),
                message:
                    "its lifelines' events fit no order: a message is received that was never sent"
                        .into(),
            })?;
        for (l, e) in &events {
            recheck
                .event(*l, e)
                .map_err(|m| self.causal_error(run_id, m))?;
        }
        Ok(recheck.decisions())
    }
}
