//! The one stable hash of the workspace: 64-bit FNV-1a.
//!
//! Control tags, input fingerprints and the mock model's choices must be the
//! same in every process and every release, so they cannot use std's
//! `RandomState`. This crate is the lowest that every user of the hash
//! depends on (projection, the store, the model backends), so it lives here.

/// 64-bit FNV-1a. Fields are written with a length or a terminator (see
/// [`Fnv64::str`]) so that different field sequences never produce the same
/// byte stream.
#[derive(Debug, Clone, Copy)]
pub struct Fnv64(u64);

/// The FNV-1a 64-bit offset basis.
pub const FNV64_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// The FNV-1a 64-bit prime.
pub const FNV64_PRIME: u64 = 0x0000_0100_0000_01b3;

impl Default for Fnv64 {
    fn default() -> Self {
        Fnv64(FNV64_OFFSET)
    }
}

impl Fnv64 {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn bytes(&mut self, bytes: &[u8]) -> &mut Self {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(FNV64_PRIME);
        }
        self
    }

    pub fn u64(&mut self, n: u64) -> &mut Self {
        self.bytes(&n.to_le_bytes())
    }

    /// The length, then the bytes: `("ab", "c")` and `("a", "bc")` differ.
    pub fn str(&mut self, s: &str) -> &mut Self {
        self.u64(s.len() as u64).bytes(s.as_bytes())
    }

    pub fn finish(&self) -> u64 {
        self.0
    }
}

/// FNV-1a of `bytes`.
pub fn fnv64(bytes: &[u8]) -> u64 {
    Fnv64::new().bytes(bytes).finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_matches_reference_vectors() {
        assert_eq!(Fnv64::new().finish(), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv64(b"foobar"), 0x8594_4171_f739_67e8);
        assert_ne!(
            Fnv64::new().str("ab").str("c").finish(),
            Fnv64::new().str("a").str("bc").finish()
        );
    }
}
