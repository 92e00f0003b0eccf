//! `troupe verify`'s recheck of causal decisions (LANGUAGE.md §7): the
//! recorded events streamed from the store through the engine's recheck.

use troupe_runtime::Engine;
use troupe_store::{RunDetail, Store};

/// Recomputes each decision of a causal guard from the recorded chart,
/// streaming the events from the store (see [`Engine::causal_recheck`]:
/// memory bounded by the workflow and the messages in flight), from the
/// run's inputs — or, for a history that retention pruned, from the
/// checkpoint it starts at (the decisions before were taken by the same
/// monitor as the run went). A placed run's parts recorded their lifelines
/// apart (`placed`): its events are put in an order first.
pub(crate) fn verify(
    store: &Store,
    detail: &RunDetail,
    engine: &Engine,
    placed: bool,
) -> Result<(), String> {
    if !engine.has_causal_guards() {
        return Ok(());
    }
    let run = detail.summary.id;
    let name = Store::run_name(run);
    if detail.pruned > 0 {
        let Some((checkpoint, chunk)) = store.history_start(run).map_err(|e| e.to_string())? else {
            return Err(format!(
                "{name}: its retained history starts at no checkpoint"
            ));
        };
        let Some(recheck) = engine.causal_recheck_from(&name, &detail.input_values, &checkpoint)
        else {
            return Ok(());
        };
        let recheck = recheck.map_err(|e| e.to_string())?;
        return stream_recheck(store, run, chunk, engine, recheck);
    }
    if placed {
        let mut exec = troupe_msc::Execution::new(engine.workflow().lifelines.len());
        store
            .for_each_event_from(run, 0, |l, e| {
                if let Some(word) = exec.words.get_mut(l.0 as usize) {
                    word.push(e.clone());
                }
            })
            .map_err(|e| e.to_string())?;
        return engine
            .verify_causal(&name, &exec, &detail.input_values)
            .map(|_| ())
            .map_err(|e| e.to_string());
    }
    let Some(recheck) = engine.causal_recheck(&name, &detail.input_values) else {
        return Ok(());
    };
    let recheck = recheck.map_err(|e| e.to_string())?;
    stream_recheck(store, run, 0, engine, recheck)
}

/// Feeds `recheck` the run's recorded events from chunk `chunk` on.
fn stream_recheck(
    store: &Store,
    run: i64,
    chunk: i64,
    engine: &Engine,
    mut recheck: troupe_msc::cpl::Recheck,
) -> Result<(), String> {
    let mut first = None;
    store
        .for_each_event_from(run, chunk, |l, e| {
            if first.is_none()
                && let Err(m) = recheck.event(l, e)
            {
                first = Some(m);
            }
        })
        .map_err(|e| e.to_string())?;
    match first {
        Some(m) => Err(engine.causal_error(&Store::run_name(run), m).to_string()),
        None => Ok(()),
    }
}
