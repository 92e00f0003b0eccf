//! The run's side of causal guards (`troupe_msc::cpl`): each lifeline's
//! view steps at each of its events, a send hands its snapshot to the
//! message, a receive merges the sender's, and a causal guard is decided by
//! its owner's view. A workflow without causal guards does none of this.

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
        stats.seen_values = stats.seen_values.max(meta.seen.len() as u64);
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
