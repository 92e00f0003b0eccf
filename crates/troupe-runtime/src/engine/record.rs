//! Events as a run makes them: into the trace, and to the journal in
//! batches, always ahead of any other call to the journal so it sees events
//! and records in the order the run made them; and, for a resumed run, the
//! recorded order of each lifeline's parts replayed before new events.

use super::*;

impl RunState {
    /// Whether events are wanted at all (a trace, or a journal that wants
    /// them).
    pub(super) fn recording(&self) -> bool {
        self.trace.is_some() || self.journaling
    }

    /// Hands the journal the events recorded since the last call.
    pub(super) fn send_events(&mut self) {
        if self.unsent.is_empty() {
            return;
        }
        if let Some(journal) = &self.options.journal {
            journal.events(&self.unsent);
        }
        self.unsent.clear();
    }

    /// The run's journal, after the events recorded so far: every call to
    /// the journal goes through here, so it sees events and records in the
    /// order the run made them.
    pub(super) fn journal(&mut self) -> Option<Arc<dyn RunJournal>> {
        self.send_events();
        self.options.journal.clone()
    }

    pub(super) fn record(&mut self, lane: u32, event: Event) {
        self.events += 1;
        let l = &mut self.lanes[lane as usize];
        if l.replay.pop_front().is_some() {
            // Another part may hold the next recorded event.
            for &t in &l.tasks {
                let task = &mut self.tasks[t as usize];
                if task.wait == Wait::Turn {
                    task.wait = Wait::Ready;
                    self.ready.push_back(t);
                }
            }
        }
        match (&mut self.trace, self.journaling) {
            (Some(trace), journaling) => {
                if journaling {
                    self.unsent.push((LifelineId(lane), event.clone()));
                }
                trace.push(TraceEntry {
                    time: self.clock,
                    lifeline: LifelineId(lane),
                    event,
                });
                self.clock += 1;
            }
            (None, true) => self.unsent.push((LifelineId(lane), event)),
            (None, false) => {}
        }
        // A step that loops on one lifeline still hands events over often.
        if self.unsent.len() >= 1024 {
            self.send_events();
        }
    }

    /// Whether `lane` may record an event of statement `stmt` now: not
    /// while a resumed run replays another part's recorded event first.
    pub(super) fn my_turn(&self, lane: u32, stmt: StmtId) -> bool {
        self.lanes[lane as usize]
            .replay
            .front()
            .is_none_or(|&l| l == self.engine.lanes.of(stmt))
    }
}
