//! The metadata a message carries when its workflow has causal guards: a
//! snapshot of the sender's [`super::View`] after the send. It travels beside
//! the payload, never in it, and adds no message.

use troupe_check::Value;

/// What the receiver of a message merges into its view (see
/// [`super::View::receive`]). Its size is bounded by the workflow's
/// lifelines, `at` and `once` subformulas and `seen` terms.
#[derive(Debug, Clone, PartialEq)]
pub struct Meta {
    pub clock: Vec<u64>,
    pub at: Vec<bool>,
    pub once: Vec<bool>,
    pub seen: Vec<Option<Value>>,
}

impl Meta {
    /// Its size in the store's encoding of one varint per clock entry and
    /// one bit per flag, without the `seen` values (the program's own
    /// values, as large as they are): what the benchmark reports.
    pub fn clock_and_flag_bytes(&self) -> usize {
        let varint = |x: u64| (64 - x.leading_zeros()).div_ceil(7).max(1) as usize;
        self.clock.iter().map(|&c| varint(c)).sum::<usize>()
            + (self.at.len() + self.once.len()).div_ceil(8)
    }
}
