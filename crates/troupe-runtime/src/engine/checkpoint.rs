//! Taking a run's checkpoint and restoring a run from one (see
//! [`crate::checkpoint`] for what a checkpoint holds and why).

use super::*;

impl RunState {
    /// Hands the journal a checkpoint of the run as it is now (see
    /// [`crate::checkpoint`]).
    pub(super) fn checkpoint(&mut self) {
        let Some(journal) = self.journal() else {
            self.next_checkpoint = u64::MAX;
            return;
        };
        let engine = self.engine.clone();
        let wf = &engine.program.workflows[engine.workflow];
        let mut pending = Vec::new();
        let lanes = self
            .lanes
            .iter()
            .enumerate()
            .map(|(i, lane)| {
                let mut occurrences = lane.occurrences.clone();
                let mut keyed = lane.keyed.clone();
                // A task waiting for an action is recorded before it: the
                // resumed run starts it again under the same key.
                for &t in &lane.tasks {
                    let task = &self.tasks[t as usize];
                    let waiting = task.wait == Wait::Action || task.deferred.is_some();
                    if waiting
                        && let Some(Op::Act {
                            call: Call::Action { action, .. },
                            ..
                        }) = engine.flat[i].ops.get(task.pc as usize)
                    {
                        let key = engine.key_lane_at(i, task.pc);
                        let n = if key == 0 {
                            &mut occurrences[action.0 as usize]
                        } else {
                            keyed.entry((key, action.0)).or_default()
                        };
                        *n = n.saturating_sub(1);
                        pending.push(StepKey {
                            lifeline: wf.lifelines[i].name.clone(),
                            action: engine.program.action(*action).name.clone(),
                            occurrence: occurrence_key(key, *n),
                        });
                    }
                }
                let root = &self.tasks[i];
                let parts = lane.tasks[1..]
                    .iter()
                    .map(|&t| {
                        let task = &self.tasks[t as usize];
                        PartState {
                            pc: task.pc,
                            parent: lane
                                .tasks
                                .iter()
                                .position(|&p| p == task.parent)
                                .unwrap_or(0) as u32,
                        }
                    })
                    .collect();
                LaneState {
                    pc: root.pc,
                    done: root.wait == Wait::Done,
                    values: lane.env.values.clone(),
                    occurrences: occurrences
                        .iter()
                        .enumerate()
                        .filter(|(_, n)| **n > 0)
                        .map(|(a, n)| (a as u32, *n))
                        .collect(),
                    parts,
                    keyed: keyed
                        .into_iter()
                        .filter(|(_, n)| *n > 0)
                        .map(|((l, a), n)| (l, a, n))
                        .collect(),
                    view: self.views.get(i).cloned(),
                }
            })
            .collect();
        let channels = self
            .queues
            .iter()
            .enumerate()
            .flat_map(|(to, inbox)| {
                inbox
                    .iter()
                    .filter(|i| !i.queue.is_empty())
                    .map(move |i| Channel {
                        from: LifelineId(i.key.0),
                        to: LifelineId(to as u32),
                        messages: i.queue.iter().cloned().collect(),
                    })
            })
            .collect();
        // A part's place on the channels that cross to other parts.
        let mut crossed: Vec<(RemoteChannel, u64)> = self
            .sent
            .iter()
            .map(|(&(to, from, lane), &n)| {
                let channel = RemoteChannel {
                    from: LifelineId(from),
                    to: LifelineId(to),
                    lane,
                };
                (channel, n)
            })
            .collect();
        for (to, inbox) in self.queues.iter().enumerate() {
            for i in inbox.iter().filter(|i| i.fetched > 0) {
                let channel = RemoteChannel {
                    from: LifelineId(i.key.0),
                    to: LifelineId(to as u32),
                    lane: i.key.1,
                };
                crossed.push((channel, i.fetched));
            }
        }
        let checkpoint = Checkpoint {
            lanes,
            channels,
            steps: self.steps,
            events: self.events,
            pending,
            monitor: None,
            crossed,
            tools: self.tool_log.lock().map(|l| l.clone()).unwrap_or_default(),
        };
        self.next_checkpoint = match journal.checkpoint(checkpoint) {
            Some(every) => self.events.saturating_add(every.max(1)),
            None => u64::MAX,
        };
    }

    /// Puts the run in the state of `checkpoint`, after checking that it
    /// fits the workflow: as many lifelines, positions inside their
    /// programs, values of their variables' types, actions that exist.
    pub(super) fn restore(&mut self, checkpoint: Checkpoint) -> Result<(), String> {
        let engine = self.engine.clone();
        let wf = &engine.program.workflows[engine.workflow];
        let types = &engine.program.types;
        let n = self.lanes.len();
        if checkpoint.lanes.len() != n {
            return Err(format!(
                "it has {} lifelines, the workflow {n}",
                checkpoint.lanes.len()
            ));
        }
        // Each lifeline's variables, by slot, to check the values' types.
        let mut vars_of: Vec<Vec<VarId>> = vec![Vec::new(); n];
        for (i, v) in wf.vars.iter().enumerate() {
            vars_of[v.lifeline.0 as usize].push(VarId(i as u32));
        }
        let actions = engine.program.actions.len();
        self.ready.clear();
        self.done = 0;
        self.tasks.truncate(n);
        self.free.clear();
        for (i, state) in checkpoint.lanes.into_iter().enumerate() {
            let name = &wf.lifelines[i].name;
            let len = engine.flat[i].ops.len();
            if state.pc as usize > len {
                return Err(format!("{name} is past the end of its program"));
            }
            if state.values.len() != vars_of[i].len() {
                return Err(format!("{name} has another number of variables"));
            }
            for (value, var) in state.values.iter().zip(&vars_of[i]) {
                if let Some(value) = value
                    && !value.conforms(&wf.var(*var).ty, types)
                {
                    return Err(format!("{name}'s {} has the wrong type", wf.var(*var).name));
                }
            }
            let lane = &mut self.lanes[i];
            lane.occurrences = vec![0; actions];
            for (action, count) in state.occurrences {
                *lane
                    .occurrences
                    .get_mut(action as usize)
                    .ok_or_else(|| format!("{name} called an action that does not exist"))? = count;
            }
            lane.keyed.clear();
            for (l, action, count) in state.keyed {
                if action as usize >= actions || l as usize >= engine.lanes.len() {
                    return Err(format!("{name} called an action that does not exist"));
                }
                lane.keyed.insert((l, action), count);
            }
            lane.env.values = state.values;
            // A run with causal guards continues from what each lifeline
            // had seen; one without has no views to restore.
            match (&engine.guards, state.view) {
                (Some(guards), Some(view)) => {
                    if view.lifeline.0 as usize != i || !view.fits(guards) {
                        return Err(format!("{name}'s causal view does not fit the workflow"));
                    }
                    self.views[i] = view;
                }
                (Some(_), None) => {
                    return Err(format!("{name} has no causal view, which its guards need"));
                }
                (None, _) => {}
            }
            lane.tasks = vec![i as u32];
            // Parts run inside a `par`: neither the first task of a
            // lifeline that ended, nor a part past the program's end.
            if state.done && !state.parts.is_empty() {
                return Err(format!("{name} ended with parts still running"));
            }
            let root = &mut self.tasks[i];
            root.pc = state.pc;
            root.children = 0;
            root.deferred = None;
            if state.done {
                root.wait = Wait::Done;
                self.done += 1;
            } else {
                root.wait = Wait::Ready;
                self.ready.push_back(i as u32);
            }
            for (k, part) in state.parts.iter().enumerate() {
                if part.pc as usize >= len || part.parent as usize > k {
                    return Err(format!("{name} has a part that no run reaches"));
                }
                let parent = self.lanes[i].tasks[part.parent as usize];
                let t = self.tasks.len() as u32;
                self.tasks.push(Task {
                    lane: i as u32,
                    pc: part.pc,
                    wait: Wait::Ready,
                    parent,
                    children: 0,
                    deferred: None,
                    hints: [0; 2],
                });
                self.tasks[parent as usize].children += 1;
                self.lanes[i].tasks.push(t);
                self.ready.push_back(t);
            }
        }
        for q in &mut self.queues {
            q.clear();
        }
        for channel in checkpoint.channels {
            let (from, to) = (channel.from.0, channel.to.0);
            if from as usize >= n || to as usize >= n {
                return Err("a channel between lifelines that do not exist".into());
            }
            let lane_of = |m: &Msg| match m {
                Msg::Data { stmt, .. } => engine.lanes.of(*stmt),
                Msg::Control { tag, .. } => engine.tag_lane.get(tag).copied().unwrap_or(0),
            };
            let Some(first) = channel.messages.first() else {
                continue;
            };
            let lane = lane_of(first);
            if channel.messages.iter().any(|m| lane_of(m) != lane) {
                return Err("a channel holds the messages of two branches".into());
            }
            self.queues[to as usize].push(Inbox {
                fetched: 0,
                fetching: false,
                key: (from, lane),
                queue: channel.messages.into(),
                waiter: NO_PARENT,
            });
        }
        self.sent.clear();
        let actions_known = checkpoint
            .tools
            .iter()
            .all(|t| (t.action.0 as usize) < actions);
        if !actions_known {
            return Err("a tool call of an action that does not exist".into());
        }
        if let Ok(mut log) = self.tool_log.lock() {
            *log = checkpoint.tools;
        }
        for (channel, count) in checkpoint.crossed {
            let (from, to) = (channel.from.0, channel.to.0);
            if from as usize >= n || to as usize >= n || channel.lane as usize >= engine.lanes.len()
            {
                return Err("a channel between lifelines that do not exist".into());
            }
            match (self.is_here(from), self.is_here(to)) {
                (true, false) => {
                    self.sent.insert((to, from, channel.lane), count);
                }
                (false, true) => {
                    let i = self.inbox(to, (from, channel.lane), 0);
                    self.queues[to as usize][i].fetched = count;
                }
                _ => return Err("a channel between parts that is not this part's".into()),
            }
        }
        self.steps = checkpoint.steps;
        self.events = checkpoint.events;
        self.clock = checkpoint.events;
        Ok(())
    }
}
