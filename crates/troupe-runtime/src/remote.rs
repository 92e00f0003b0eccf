//! Lifelines that run elsewhere: the seam through which one part of a
//! placed run reaches the lifelines of the other parts.
//!
//! A placed run is driven in parts, each by its own process, each running
//! some of the run's lifelines ([`Remote::is_local`]). The engine still
//! executes every local lifeline exactly as in a whole run; only a message
//! that crosses parts leaves it: a send to a lifeline of another part goes
//! to [`Remote::send`], a receive from one comes from [`Remote::receive`].
//!
//! Messages are numbered per channel — a channel being (sender, receiver,
//! lane) — from 0 in the order the sender sent them. A lifeline's execution
//! is deterministic given the messages it received and its recorded action
//! results, so a part that restarts (and replays) sends the same messages
//! under the same numbers again: a transport that keeps the first message
//! of each number and drops the repeats delivers each message exactly once,
//! in FIFO order per channel. A restarted receiver reads its channels again
//! from the numbers its checkpoint recorded (from 0 without one), so a
//! transport keeps a run's messages until the run ends.

use crate::checkpoint::Queued;
use crate::error::RunError;
use troupe_check::ir::LifelineId;
use troupe_llm::BoxFuture;

/// One direction of one lane between two lifelines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RemoteChannel {
    pub from: LifelineId,
    pub to: LifelineId,
    /// The `par` branch the messages belong to (0 outside any).
    pub lane: u32,
}

/// Why a part cannot go on: the run ended or was stopped by another part,
/// a person, or the store failed. The part stops without recording an end
/// of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Elsewhere(pub String);

/// The transport of a placed run's messages between its parts.
pub trait Remote: Send + Sync {
    /// Whether `lifeline` runs in this part.
    fn is_local(&self, lifeline: LifelineId) -> bool;

    /// Hands over message number `seq` of `channel`. Not awaited: the
    /// transport keeps each channel's order, keeps the first message of a
    /// number and drops repeats, and makes what it was handed durable
    /// before the part's own end is (the journal's `finish`).
    fn send(&self, channel: RemoteChannel, seq: u64, message: &Queued);

    /// The messages of `channel` from number `seq` on, at least one: waits
    /// until the first is there.
    fn receive(
        &self,
        channel: RemoteChannel,
        seq: u64,
    ) -> BoxFuture<'static, Result<Vec<Queued>, Elsewhere>>;
}

impl std::fmt::Debug for dyn Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Remote")
    }
}

impl Elsewhere {
    pub(crate) fn into_error(self, run: &str) -> RunError {
        RunError::Stopped {
            run: run.to_owned(),
            message: self.0,
        }
    }
}
