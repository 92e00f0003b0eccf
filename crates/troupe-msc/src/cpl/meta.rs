//! The metadata a message carries when its workflow has causal guards: the
//! sender's [`Knowledge`] after the send, shared with the sender until what
//! it publishes changes, and the sender's own event count beside it (the
//! one entry every send changes, so two sends in a row share one copy). It
//! travels beside the payload, never in it, and adds no message.

use super::Knowledge;
use std::sync::Arc;
use troupe_check::Value;
use troupe_check::ir::LifelineId;

/// What the receiver of a message merges into its view (see
/// [`super::View::receive`]). Its size is bounded by the workflow's
/// lifelines, `at` and `once` subformulas and `seen` terms.
#[derive(Debug, Clone)]
pub struct Meta {
    pub(super) known: Arc<Knowledge>,
    /// The sender and its count, which override the knowledge's entry.
    own: Option<(u32, u64)>,
}

impl Meta {
    /// Metadata that is exactly `known` (a decoded message's).
    pub fn new(known: Knowledge) -> Meta {
        Meta {
            known: Arc::new(known),
            own: None,
        }
    }

    /// A send's: the sender's shared knowledge, whose own entry is `count`.
    pub(super) fn shared(known: Arc<Knowledge>, sender: LifelineId, count: u64) -> Meta {
        Meta {
            known,
            own: Some((sender.0, count)),
        }
    }

    /// The sender's knowledge of lifeline `b`'s events.
    pub fn clock_at(&self, b: usize) -> u64 {
        match self.own {
            Some((s, c)) if s as usize == b => c,
            _ => self.known.clock.get(b).copied().unwrap_or(0),
        }
    }

    /// The vector clock, one entry per lifeline.
    pub fn clock(&self) -> Vec<u64> {
        (0..self.known.clock.len())
            .map(|b| self.clock_at(b))
            .collect()
    }

    /// Per `at` slot, the viewed node's value (see [`Knowledge::at`]).
    pub fn at(&self) -> &[bool] {
        &self.known.at
    }

    /// Per `once` slot, whether a visible event satisfied it.
    pub fn once(&self) -> &[bool] {
        &self.known.once
    }

    /// Per `seen` slot, the variable's latest visible value.
    pub fn seen(&self) -> &[Option<Value>] {
        &self.known.seen
    }

    /// The knowledge it carries, its own entry included.
    pub fn knowledge(&self) -> Knowledge {
        let mut k = (*self.known).clone();
        k.clock = self.clock();
        k
    }

    /// Its size in the store's encoding of one varint per clock entry and
    /// one bit per flag, without the `seen` values (the program's own
    /// values, as large as they are): what the benchmark reports.
    pub fn clock_and_flag_bytes(&self) -> usize {
        let varint = |x: u64| (64 - x.leading_zeros()).div_ceil(7).max(1) as usize;
        (0..self.known.clock.len())
            .map(|b| varint(self.clock_at(b)))
            .sum::<usize>()
            + (self.known.at.len() + self.known.once.len()).div_ceil(8)
    }
}

/// Two metadata are equal when they carry the same knowledge.
impl PartialEq for Meta {
    fn eq(&self, other: &Meta) -> bool {
        self.clock() == other.clock()
            && self.known.at == other.known.at
            && self.known.once == other.known.once
            && self.known.seen == other.known.seen
    }
}
