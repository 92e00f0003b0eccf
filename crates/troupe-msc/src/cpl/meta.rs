//! The metadata a message carries when its workflow has causal guards: the
//! sender's [`Knowledge`] after the send, shared with the sender until
//! either changes. It travels beside the payload, never in it, and adds no
//! message.

use super::Knowledge;
use std::sync::Arc;

/// What the receiver of a message merges into its view (see
/// [`super::View::receive`]). Its size is bounded by the workflow's
/// lifelines, `at` and `once` subformulas and `seen` terms.
#[derive(Debug, Clone, PartialEq)]
pub struct Meta(pub(super) Arc<Knowledge>);

impl Meta {
    pub fn new(known: Knowledge) -> Meta {
        Meta(Arc::new(known))
    }

    /// Its size in the store's encoding of one varint per clock entry and
    /// one bit per flag, without the `seen` values (the program's own
    /// values, as large as they are): what the benchmark reports.
    pub fn clock_and_flag_bytes(&self) -> usize {
        let varint = |x: u64| (64 - x.leading_zeros()).div_ceil(7).max(1) as usize;
        self.0.clock.iter().map(|&c| varint(c)).sum::<usize>()
            + (self.0.at.len() + self.0.once.len()).div_ceil(8)
    }
}

impl std::ops::Deref for Meta {
    type Target = Knowledge;

    fn deref(&self) -> &Knowledge {
        &self.0
    }
}
