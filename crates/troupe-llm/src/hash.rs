//! Fixed hashing for deterministic choices, and a tiny generator for jitter.
//!
//! The mock must answer a call identically in every process, so it cannot
//! use `RandomState`: the workspace's one FNV-1a (`troupe_check::hash`) over
//! the key bytes, finished with splitmix64 to spread the bits, is fixed
//! forever. Backoff jitter, on the other hand, is
//! never replayed, so a process-seeded xorshift is enough and spares a `rand`
//! dependency.

use std::sync::atomic::{AtomicU64, Ordering};
use troupe_check::hash::Fnv64;

/// FNV-1a over several byte strings, each followed by a separator so that
/// `("ab", "c")` and `("a", "bc")` differ, then a splitmix64 finalizer.
pub(crate) fn stable_hash(parts: &[&[u8]]) -> u64 {
    let mut h = Fnv64::new();
    for part in parts {
        h.bytes(part).bytes(&[0xff]);
    }
    splitmix64(h.finish())
}

pub(crate) fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

static JITTER_STATE: AtomicU64 = AtomicU64::new(0);

/// A pseudo-random number for jitter (xorshift64*, seeded from the clock, the
/// process id and an address on first use). Not for anything that must repeat.
pub(crate) fn jitter_u64() -> u64 {
    let mut s = JITTER_STATE.load(Ordering::Relaxed);
    if s == 0 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let local = 0u8;
        let addr = &local as *const u8 as usize as u64;
        s = splitmix64(nanos ^ u64::from(std::process::id()).rotate_left(32) ^ addr) | 1;
    }
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    // Races between threads only make the sequence less predictable, which is fine here.
    JITTER_STATE.store(s, Ordering::Relaxed);
    s.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_hash_is_fixed_and_separates_parts() {
        // Pinned: the mock's answers depend on these values across releases
        // (computed independently of this code, from the FNV-1a and
        // splitmix64 definitions).
        assert_eq!(stable_hash(&[b"a", b"bc"]), 0xc759_ca85_f43a_a8c1);
        assert_eq!(stable_hash(&[b"mock", b"seed"]), 0x9846_69b9_3b6e_17fd);
        assert_eq!(stable_hash(&[]), 0xc381_7c01_6ba4_ff30);
        assert_ne!(stable_hash(&[b"ab", b"c"]), stable_hash(&[b"a", b"bc"]));
    }

    #[test]
    fn jitter_varies() {
        let a = jitter_u64();
        let b = jitter_u64();
        assert_ne!(a, b);
    }
}
