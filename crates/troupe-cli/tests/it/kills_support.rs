//! What the tests that kill `troupe` processes share: killing a process
//! group, a seeded generator for when and whom to kill, and settling the
//! effects a kill cut short from an external ledger, as a careful person
//! would.

#![allow(dead_code)] // each test binary uses its own share of it

use std::collections::BTreeMap;
use std::process::{Child, Command};
use std::time::{Duration, Instant};
use troupe_host::{Host, HostError, Resolution};
use troupe_store::{RunStatus, RunSummary, Store, StoreError};

/// SIGKILLs `c`'s whole process group (its effect commands too) and reaps it.
pub fn kill_group(c: &mut Child) {
    let ok = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", c.id())])
        .status()
        .unwrap()
        .success();
    assert!(ok);
    c.wait().unwrap();
}

/// xorshift64: whom to kill and when, repeatably.
pub struct Rng(pub u64);

impl Rng {
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// Settles the effects of runs waiting for `resolve`, from a ledger.
pub struct Settler {
    /// How long a run must have waited before it is settled.
    pub after: Duration,
    first_seen: BTreeMap<i64, Instant>,
    /// Steps settled so far.
    pub resolutions: usize,
}

impl Settler {
    pub fn new(after: Duration) -> Settler {
        Settler {
            after,
            first_seen: BTreeMap::new(),
            resolutions: 0,
        }
    }

    /// Settles each run of `runs` that has waited for `resolve` for at
    /// least [`Settler::after`]: a step the ledger shows applied (by its
    /// idempotency key, `UID/Lifeline/action#k`) is done with the first
    /// amount it was applied with, one it does not show is to be retried.
    /// Only once the run's last owner is surely gone: a worker merely
    /// stalled past its lease stops its run, and kills the effect's
    /// command, at its next renewal; until then its effect may still land
    /// in the ledger.
    pub fn settle(
        &mut self,
        store: &Store,
        host: &Host,
        runs: &[RunSummary],
        applied: impl Fn(&str) -> Option<i64>,
    ) {
        let now = Instant::now();
        self.first_seen.retain(|id, _| {
            runs.iter()
                .any(|r| r.id == *id && r.status == RunStatus::NeedsResolution)
        });
        for r in runs
            .iter()
            .filter(|r| r.status == RunStatus::NeedsResolution)
        {
            let since = *self.first_seen.entry(r.id).or_insert(now);
            if now.duration_since(since) < self.after {
                continue;
            }
            let started: Vec<_> = store
                .steps(r.id)
                .unwrap()
                .into_iter()
                .filter(|s| s.status == troupe_store::StepStatus::Started)
                .collect();
            // A stalled owner may have recorded the step's end after all:
            // nothing to settle, the run just goes on.
            if started.is_empty() {
                store.reopen(r.id, &[RunStatus::NeedsResolution]).unwrap();
            }
            // Keys are the run's identity (never reused), then the step.
            let uid = store.run(r.id).unwrap().uid;
            for step in started {
                let how = match applied(&format!("{uid}/{}", step.key)) {
                    Some(amount) => Resolution::Done(serde_json::json!(amount)),
                    None => Resolution::Retry,
                };
                match host.resolve(r.id, &step.key, how) {
                    Ok(()) => self.resolutions += 1,
                    // Claimed again meanwhile (a part of it still ran):
                    // settled later, if it still needs to be.
                    Err(HostError::Store(StoreError::Running { .. })) => {}
                    Err(e) => panic!("{}: {e}", r.name),
                }
            }
            // Settled: should the run wait for `resolve` again, that is a
            // new wait, timed from when it is first seen.
            self.first_seen.remove(&r.id);
        }
    }
}
