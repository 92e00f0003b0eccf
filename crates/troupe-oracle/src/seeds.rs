//! Seeds that vary from run to run, and say how to repeat a run.
//!
//! A test asks for [`Seeds::new`] with its name and a default number of
//! cases. The base seed comes from `TROUPE_TEST_SEED` when it is set (decimal
//! or `0x…` hex), else from the clock and the process id, and is printed on
//! stderr (cargo shows it for a failing test). Case `i` uses seed `base + i`,
//! so `TROUPE_TEST_SEED=<a failing case's seed> TROUPE_TEST_CASES=1` repeats
//! exactly that case. `TROUPE_TEST_CASES` scales every test's case count.

use std::time::{SystemTime, UNIX_EPOCH};

/// The seeds of one test's cases.
#[derive(Debug, Clone, Copy)]
pub struct Seeds {
    pub base: u64,
    pub cases: u64,
}

fn parse(s: &str) -> Option<u64> {
    let s = s.trim().replace('_', "");
    match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

impl Seeds {
    /// The seeds for test `name`, `default_cases` of them unless
    /// `TROUPE_TEST_CASES` says otherwise.
    pub fn new(name: &str, default_cases: u64) -> Seeds {
        let fixed = std::env::var("TROUPE_TEST_SEED")
            .ok()
            .and_then(|s| parse(&s));
        let base = fixed.unwrap_or_else(|| {
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            mix(nanos ^ u64::from(std::process::id()).rotate_left(40)) >> 16
        });
        let cases = std::env::var("TROUPE_TEST_CASES")
            .ok()
            .and_then(|s| parse(&s))
            .unwrap_or(default_cases);
        eprintln!(
            "{name}: {cases} cases from seed {base} (repeat with TROUPE_TEST_SEED={base}; one case: TROUPE_TEST_SEED=<its seed> TROUPE_TEST_CASES=1)"
        );
        Seeds { base, cases }
    }

    /// The seed of every case, in order.
    pub fn iter(&self) -> impl Iterator<Item = u64> + use<> {
        let base = self.base;
        (0..self.cases).map(move |i| base.wrapping_add(i))
    }
}

/// The message to panic with when case `seed` fails.
pub fn repeat_hint(seed: u64) -> String {
    format!("repeat with TROUPE_TEST_SEED={seed} TROUPE_TEST_CASES=1")
}

/// splitmix64's finalizer.
pub fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A small deterministic generator (splitmix64).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(mix(seed))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.0)
    }

    /// Uniform in `0..n` (0 when `n == 0`).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi.saturating_sub(lo) + 1)
    }

    pub fn chance(&mut self, num: usize, den: usize) -> bool {
        self.below(den) < num
    }
}
