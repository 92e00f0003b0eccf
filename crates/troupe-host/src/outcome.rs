//! What the host's calls answer: how `start` treats unfinished runs and what
//! it did, how a driven run ended, how `resolve` settles a step and what
//! `cancel` did. Plain data, shared by every module that starts, drives or
//! settles runs, so it lives apart from all of them.

use crate::Compiled;
use std::sync::Arc;
use troupe_check::Value;
use troupe_runtime::RunError;

/// How `start` treats unfinished runs of the same workflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StartPolicy {
    /// Resume an unfinished run with the same fingerprint and inputs;
    /// refuse over one that waits for `resolve`; else report the newest
    /// such run that is done (a rerun performs nothing twice); otherwise
    /// start a new one.
    #[default]
    ResumeSame,
    /// Always start a new run.
    New,
}

/// What `start` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Started {
    pub run: i64,
    pub name: String,
    /// An unfinished run was claimed rather than a new one created.
    pub resumed: bool,
    /// The run is done already (the same workflow and inputs ran to the
    /// end): nothing is claimed or to be driven; its results are recorded.
    pub finished: bool,
}

/// How a driven run ended.
#[derive(Debug)]
pub enum RunEnd {
    Done {
        results: Vec<(String, Value)>,
        /// `Ok(events)` when the recorded execution is a run of the
        /// workflow; the error otherwise.
        verified: Result<u64, String>,
        /// The tool calls models chose that did not happen as asked, since
        /// this process took the run up ([`troupe_runtime::RunOutcome::unmade_calls`]).
        unmade: Vec<String>,
    },
    Failed(RunError),
    /// Waits for `troupe resolve`.
    NeedsResolution {
        step: String,
        message: String,
    },
    Cancelled {
        reason: String,
    },
    /// The lease expired and another process took the run over.
    LeaseLost,
    /// Every lifeline waited on a person for [`HostConfig::park_after`]:
    /// the run was given back, to go on with any worker once a person
    /// answers (`requeued`: one had answered already, so it is queued).
    Parked {
        requeued: bool,
    },
    /// One part of a placed run ended. `run` is how the whole run ended
    /// when this part was its last (verified, as [`RunEnd::Done`]'s).
    PartDone {
        part: u32,
        run: Option<Result<u64, String>>,
    },
    /// [`HostConfig::interrupt`] was triggered: the run stopped at a step
    /// boundary, its records durable and its lease given back, to be
    /// resumed by anyone (`troupe resume`).
    Interrupted,
    /// Someone paused it (`troupe pause`): it stopped at a step boundary
    /// and holds no lease; `troupe unpause` queues it again.
    Paused,
}

/// A driven run and the workflow it ran.
#[derive(Debug)]
pub struct Finished {
    pub run: i64,
    pub name: String,
    pub compiled: Arc<Compiled>,
    pub end: RunEnd,
}

/// How `resolve` settles a step.
#[derive(Debug, Clone)]
pub enum Resolution {
    /// The effect happened: these outputs (a JSON array, one item per
    /// output, or the value of a single output).
    Done(serde_json::Value),
    /// It did not: perform it again when the run resumes.
    Retry,
}

/// What `cancel` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cancel {
    /// The run had no live owner and is cancelled now.
    Cancelled,
    /// Its owner stops it at its next lease renewal.
    Requested { owner: String },
}
