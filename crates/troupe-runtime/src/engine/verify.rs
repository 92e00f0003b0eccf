//! Checking a recorded run against ⟦P⟧ after the fact: a trace or an
//! execution through the online monitor in control mode (so the owners'
//! decisions are checked against the branches the lifelines took), and an
//! offline check by membership for comparison.

use super::*;

impl Engine {
    /// Checks that a trace is a run of the workflow (⟦P⟧), in control mode:
    /// the owners' decisions are checked with the branches the lifelines
    /// took, so a run whose lifelines took another branch than their owner
    /// decided is rejected even when its erasure (without decisions) would
    /// be a run of the chart.
    pub fn verify(&self, run_id: &str, trace: &Trace) -> Result<(), RunError> {
        self.verify_with(run_id, trace, false)
    }

    /// [`Engine::verify`]; with `prefix`, an unfinished run is accepted when
    /// it is a prefix of a run. The trace is checked by the online monitor,
    /// event by event in its order: linear time, memory bounded by the
    /// workflow and the messages in flight.
    pub fn verify_with(&self, run_id: &str, trace: &Trace, prefix: bool) -> Result<(), RunError> {
        let mut monitor = self.monitor();
        let not_member = |e: Box<troupe_msc::NotMember>| RunError::NotMember {
            run: run_id.to_owned(),
            message: e.to_string(),
        };
        for e in &trace.entries {
            monitor.event(e.lifeline, &e.event).map_err(not_member)?;
        }
        monitor.finish(prefix).map_err(not_member)
    }

    /// Checks an execution whose lifelines were recorded apart (the parts
    /// of a placed run, each in its own process): its local words are put
    /// in an order in which they could have happened (every receive after
    /// its send, per channel and `par` lane), which the online monitor then
    /// checks. An execution with no such order is not a run.
    pub fn verify_execution(
        &self,
        run_id: &str,
        exec: &troupe_msc::Execution,
        prefix: bool,
    ) -> Result<(), RunError> {
        let lanes = &self.inner.lanes;
        let Some(events) = exec.linearize_lanes(&|s| lanes.of(s)) else {
            return Err(RunError::NotMember {
                run: run_id.to_owned(),
                message:
                    "its lifelines' events fit no order: a message is received that was never sent"
                        .into(),
            });
        };
        let trace = Trace::from_events(0, events);
        self.verify_with(run_id, &trace, prefix)
    }

    /// A fresh online monitor of this engine's workflow (its plans are
    /// shared, made once when the engine was built).
    pub fn monitor(&self) -> troupe_msc::Monitor {
        self.inner.monitor.fresh()
    }

    /// Checks a trace with the offline membership of the reference
    /// semantics (control mode): the monitor's oracle in tests.
    pub fn verify_offline(&self, run_id: &str, trace: &Trace) -> Result<(), RunError> {
        let semantics = self.inner.semantics.get_or_init(|| {
            Semantics::new(&self.inner.program, self.workflow()).map_err(|e| e.to_string())
        });
        let semantics = semantics.as_ref().map_err(|e| RunError::Setup(e.clone()))?;
        let exec = trace.execution(self.workflow().lifelines.len());
        semantics
            .check(
                &exec,
                &MemberOptions {
                    control: true,
                    prefix: false,
                },
            )
            .map_err(|e| RunError::NotMember {
                run: run_id.to_owned(),
                message: e.to_string(),
            })
    }
}
