//! The run's scheduler: the loop that picks a ready task (in order, or by
//! the run's seed), steps its lifeline until it must wait, and otherwise
//! waits for an arrival or an action to finish; a run with nothing ready
//! and nothing in flight is deadlocked. Also how a run stops early: parked
//! (only people's tasks in flight) or interrupted at a step boundary.

use super::*;

impl RunState {
    /// Stops a run in which only people's tasks are in flight: a
    /// checkpoint of it as it waits (every task is at an action, so the
    /// resumed run asks the same tasks again under the same keys, and
    /// finds their answers), its records made durable.
    async fn park(&mut self) -> RunError {
        let run = self.options.run_id.clone();
        if self.next_checkpoint != u64::MAX {
            self.checkpoint();
        }
        if let Some(journal) = self.journal()
            && let Err(message) = journal.flush().await
        {
            return RunError::Journal { run, message };
        }
        RunError::Parked { run }
    }

    /// Stops an interrupted run (see [`crate::Interrupt`]): the effects and
    /// tool calls in flight get the grace to finish (their futures record
    /// their results), the rest is dropped, the records made durable.
    async fn interrupted(&mut self) -> RunError {
        let run = self.options.run_id.clone();
        let grace = self
            .options
            .interrupt
            .as_ref()
            .map_or(std::time::Duration::ZERO, |i| i.grace());
        let deadline = tokio::time::Instant::now() + grace;
        while !self.effects.is_empty() {
            match tokio::time::timeout_at(deadline, self.pending.next()).await {
                Ok(Some((task, _))) => {
                    self.effects.remove(&task);
                }
                Ok(None) | Err(_) => break,
            }
        }
        // Whatever is still in flight is abandoned here, before the flush:
        // a model call's answer is not recorded, a person's task stays open.
        self.pending = FuturesUnordered::new();
        if let Some(journal) = self.journal()
            && let Err(message) = journal.flush().await
        {
            return RunError::Journal { run, message };
        }
        tracing::info!(run = %run, "interrupted at a step boundary");
        RunError::Interrupted { run }
    }

    pub(super) async fn drive(mut self) -> Result<RunOutcome, RunError> {
        let n = self.lanes.len();
        let mut turns = 0u32;
        let engine = self.engine.clone();
        loop {
            while let Some(lane) = self.pick() {
                // Checked before each step: `lane`'s step is not started,
                // and is the first the resumed run takes.
                if self.options.interrupt.as_ref().is_some_and(|i| i.is_set()) {
                    return Err(self.interrupted().await);
                }
                let stepped = self.step(&engine, lane);
                self.send_events();
                stepped?;
                // A long computation must not hold its thread: every so
                // often it lets tokio run other tasks (a transport, a
                // lease renewal, other runs) if its budget is spent.
                turns = turns.wrapping_add(1);
                if turns.is_multiple_of(256) {
                    tokio::task::consume_budget().await;
                }
            }
            if self.done == n {
                break;
            }
            if self.arrivals.is_empty() {
                let next = match self.options.park_after {
                    // Nothing can move but people, some not asked yet: wait
                    // for their tasks to be recorded before the clock counts.
                    Some(_)
                        if !self.pending.is_empty()
                            && self.pending.len() == self.with_people.len()
                            && !self.with_people.values().all(crate::Asked::is_waiting) =>
                    {
                        let asked = self.asked.clone();
                        tokio::select! {
                            next = self.pending.next() => next,
                            () = asked.notified() => continue,
                            () = interrupt::triggered(self.options.interrupt.as_ref()) => {
                                return Err(self.interrupted().await);
                            }
                        }
                    }
                    // Nothing can move but people, all asked: wait for them
                    // so long.
                    Some(after)
                        if !self.pending.is_empty()
                            && self.pending.len() == self.with_people.len() =>
                    {
                        tokio::select! {
                            next = tokio::time::timeout(after, self.pending.next()) => match next {
                                Ok(next) => next,
                                Err(_) => return Err(self.park().await),
                            },
                            () = interrupt::triggered(self.options.interrupt.as_ref()) => {
                                return Err(self.interrupted().await);
                            }
                        }
                    }
                    _ => tokio::select! {
                        next = self.pending.next() => next,
                        () = interrupt::triggered(self.options.interrupt.as_ref()) => {
                            return Err(self.interrupted().await);
                        }
                    },
                };
                let Some((lane, result)) = next else {
                    return Err(self.deadlock());
                };
                let completed = self.complete(lane, result);
                self.send_events();
                completed?;
                continue;
            }
            // A part of a placed run also waits for other parts' messages.
            tokio::select! {
                Some((lane, result)) = self.pending.next(), if !self.pending.is_empty() => {
                    let completed = self.complete(lane, result);
                    self.send_events();
                    completed?;
                }
                Some(arrival) = self.arrivals.next() => self.arrive(arrival)?,
                () = interrupt::triggered(self.options.interrupt.as_ref()) => {
                    return Err(self.interrupted().await);
                }
            }
        }
        let engine = self.engine.clone();
        let wf = &engine.program.workflows[engine.workflow];
        let results = wf
            .results
            .iter()
            // A part of a placed run returns its own lifelines' results.
            .filter(|var| self.local.get(wf.var(**var).lifeline.0 as usize) != Some(&false))
            .map(|var| {
                let v = wf.var(*var);
                let value = self.lanes[v.lifeline.0 as usize]
                    .env
                    .lookup(*var)
                    .cloned()
                    .unwrap_or(Value::Bool(false));
                (v.name.clone(), value)
            })
            .collect();
        Ok(RunOutcome {
            results,
            trace: self.trace.map(|entries| Trace { entries }),
            steps: self.steps,
            unmade_calls: self.unmade.lock().map(|u| u.clone()).unwrap_or_default(),
            metadata: self.metadata,
        })
    }

    fn pick(&mut self) -> Option<u32> {
        match self.options.schedule {
            Schedule::RunToBlock => self.ready.pop_front(),
            Schedule::Random(_) => {
                if self.ready.is_empty() {
                    return None;
                }
                self.rng ^= self.rng << 13;
                self.rng ^= self.rng >> 7;
                self.rng ^= self.rng << 17;
                let i = (self.rng % self.ready.len() as u64) as usize;
                self.ready.swap_remove_back(i)
            }
        }
    }

    fn deadlock(&self) -> RunError {
        let wf = self.workflow();
        let waiting: Vec<String> = self
            .tasks
            .iter()
            .filter_map(|t| match t.wait {
                Wait::Recv(from, _) => Some(format!(
                    "{} waits for {}",
                    wf.lifelines[t.lane as usize].name, wf.lifelines[from as usize].name
                )),
                _ => None,
            })
            .collect();
        RunError::Protocol {
            run: self.options.run_id.clone(),
            lifeline: "(all)".into(),
            message: format!("deadlock: {}", waiting.join(", ")),
        }
    }
}
