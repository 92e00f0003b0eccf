//! `troupe verify`: a recorded run checked again against ⟦P⟧, streamed from
//! the store through the online monitor (from the checkpoint a pruned
//! history starts at), a placed run's parts gathered first, then its causal
//! decisions (`causal.rs`), its plans (`plans.rs`) and the versions it left.

use crate::{Compiled, Host, HostError, causal, plans};
use std::sync::Arc;
use troupe_llm::MockBackend;
use troupe_runtime::{Engine, EngineBuilder};
use troupe_store::{RunStatus, Store};

impl Host {
    /// Checks a recorded run against ⟦P⟧: `Ok` when it is a run (a prefix
    /// of one when it is unfinished). A run whose history was pruned is
    /// checked from the checkpoint its retained window starts at. Each of
    /// its `planner` calls is checked against its recorded plan: the plan
    /// checks, and its nested run's recorded trace is a run of it (see
    /// `plans.rs`).
    pub fn verify(&self, run: i64) -> Result<Result<Verified, String>, HostError> {
        let compiled = self.recorded(run)?;
        let engine = EngineBuilder::from_program((*compiled.program).clone())
            .workflow(&compiled.workflow().name)
            .mock_unbound_externs(Arc::new(MockBackend::new()))
            .build()?;
        let detail = self.store.run(run)?;
        let done = detail.summary.status == RunStatus::Done;
        let mut calls = plans::PlannerCalls::new(&compiled.program, compiled.workflow());
        let placed = !self.store.parts(run)?.is_empty();
        let outer = if placed {
            verify_placed(&self.store, run, &engine, !done, calls.as_mut())
        } else {
            verify_recorded(&self.store, run, &engine, !done, calls.as_mut())
        };
        let mut verified = match outer
            .and_then(|v| causal::verify(&self.store, &detail, &engine, placed).map(|()| v))
        {
            Ok(v) => v,
            Err(e) => return Ok(Err(e)),
        };
        verified.plans = match plans::verify(
            &self.store,
            run,
            &compiled.program,
            compiled.workflow(),
            &compiled.file,
            calls.as_ref(),
        )? {
            Ok(n) => n,
            Err(e) => return Ok(Err(e)),
        };
        if placed {
            // A placed run keeps one version (it cannot be upgraded).
            return Ok(Ok(verified));
        }
        // A run that moved to other versions: what it recorded under each
        // version it left is checked against that version, as the prefix
        // of a run it was when it moved.
        let versions = self.store.versions(run)?;
        let name = Store::run_name(run);
        for (past, next) in versions.iter().zip(versions.iter().skip(1)) {
            let compiled = Compiled::recorded_source(
                &name,
                past.source.clone(),
                past.file.as_deref(),
                &past.workflow,
            )?;
            let mut monitor = troupe_msc::Monitor::new(&compiled.program, compiled.workflow())
                .map_err(|e| HostError::Recorded {
                    run: name.clone(),
                    message: e.to_string(),
                })?;
            let events = self.store.version_events(run, past.version)?;
            let checked = events
                .iter()
                .try_for_each(|(l, e)| monitor.event(*l, e))
                .and_then(|()| monitor.finish(true));
            if let Err(e) = checked {
                return Ok(Err(format!(
                    "{name}: what it recorded under version {} (before it moved to version {}) is not a prefix of a run of that version: {e}",
                    past.version, next.version
                )));
            }
        }
        Ok(Ok(Verified {
            versions: versions.len() as u32,
            ..verified
        }))
    }
}

/// Checks a recorded run's events against ⟦P⟧ (as a prefix of a run with
/// `prefix`, for a run that has not finished), streaming them from the
/// store through the online monitor: one chunk in memory at a time.
fn verify_recorded(
    store: &Store,
    run: i64,
    engine: &Engine,
    prefix: bool,
    mut calls: Option<&mut plans::PlannerCalls>,
) -> Result<Verified, String> {
    let name = Store::run_name(run);
    // A pruned history starts at a checkpoint: the monitor continues from
    // the state it had there (the events before were checked online, as
    // the run made them, and are gone).
    let (mut monitor, from, chunk) = match store.history_start(run).map_err(|e| e.to_string())? {
        None => (engine.monitor(), 0, 0),
        Some((checkpoint, chunk)) => {
            let state = checkpoint.monitor.as_ref().ok_or_else(|| {
                format!(
                    "{name}: its retained history starts at a checkpoint taken without verification"
                )
            })?;
            let monitor = engine
                .monitor()
                .restore(state)
                .map_err(|e| format!("{name}: its retained history's checkpoint: {e}"))?;
            (monitor, checkpoint.events, chunk)
        }
    };
    let mut first: Option<String> = None;
    store
        .for_each_event_from(run, chunk, |l, e| {
            if first.is_none()
                && let Err(e) = monitor.event(l, e)
            {
                first = Some(e.to_string());
            }
            if let Some(c) = calls.as_deref_mut() {
                c.see(l, e);
            }
        })
        .map_err(|e| e.to_string())?;
    if let Some(e) = first {
        return Err(format!(
            "{}: the execution is not in ⟦P⟧: {e}",
            Store::run_name(run)
        ));
    }
    monitor
        .finish(prefix)
        .map_err(|e| format!("{}: the execution is not in ⟦P⟧: {e}", Store::run_name(run)))?;
    Ok(Verified {
        events: monitor.events(),
        from,
        versions: 1,
        plans: 0,
    })
}

/// [`verify_recorded`] for a placed run: its parts recorded their
/// lifelines' events apart, so the events are gathered per lifeline and
/// put in an order in which they could have happened before the monitor
/// checks them. A placed run keeps its whole history (no checkpoints).
fn verify_placed(
    store: &Store,
    run: i64,
    engine: &Engine,
    prefix: bool,
    mut calls: Option<&mut plans::PlannerCalls>,
) -> Result<Verified, String> {
    let name = Store::run_name(run);
    let mut exec = troupe_msc::Execution::new(engine.workflow().lifelines.len());
    let events = store
        .for_each_event_from(run, 0, |l, e| {
            if let Some(word) = exec.words.get_mut(l.0 as usize) {
                word.push(e.clone());
            }
            if let Some(c) = calls.as_deref_mut() {
                c.see(l, e);
            }
        })
        .map_err(|e| e.to_string())?;
    engine
        .verify_execution(&name, &exec, prefix)
        .map_err(|e| e.to_string())?;
    Ok(Verified {
        events,
        from: 0,
        versions: 1,
        plans: 0,
    })
}

/// What a verification of a recorded run covered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verified {
    /// Events of the run up to its last recorded one.
    pub events: u64,
    /// Events before the checked window: retention pruned them, and they
    /// were checked online as the run made them (0: the whole history).
    pub from: u64,
    /// The workflow versions the run ran under, each checked (1: it never
    /// moved, `troupe upgrade`).
    pub versions: u32,
    /// The `planner` calls whose recorded plan was checked again and whose
    /// nested run's recorded trace is a run of it.
    pub plans: u32,
}
