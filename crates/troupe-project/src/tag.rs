//! Control tags κ: the identity of an `if`/`while` construct on the wire.
//!
//! A tag is a 64-bit FNV-1a hash of the workflow name, the construct's position
//! (the path of `StmtId`s from the root) and its canonical text. FNV with its
//! fixed offset basis is used instead of std's `RandomState` because tags must be
//! equal in every process that projects the same source, so that a recorded run
//! can be checked later and two independently started lifelines agree.

use serde::Serialize;
use std::fmt;

/// The tag of one owned construct. Control messages carry it; it is a type of its
/// own so that no user payload can ever be mistaken for a control message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ControlTag(pub u64);

impl ControlTag {
    /// The full tag as 16 hex digits, as used in JSON.
    pub fn hex(self) -> String {
        format!("{:016x}", self.0)
    }
}

/// Short form for people: `κ` and the first 8 hex digits.
impl fmt::Display for ControlTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "κ{:08x}", self.0 >> 32)
    }
}

impl Serialize for ControlTag {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.hex())
    }
}

/// The workspace's one stable hash (64-bit FNV-1a), re-exported here where
/// tags are made.
pub use troupe_check::hash::Fnv64;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_pinned() {
        // Recorded runs carry tags: the hash under them must never change.
        assert_eq!(
            Fnv64::new().bytes(b"foobar").finish(),
            0x8594_4171_f739_67e8
        );
    }

    #[test]
    fn tag_display_is_short() {
        assert_eq!(ControlTag(0x0123_4567_89ab_cdef).to_string(), "κ01234567");
        assert_eq!(ControlTag(0x0123_4567_89ab_cdef).hex(), "0123456789abcdef");
    }
}
