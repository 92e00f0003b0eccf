//! Why a run failed. Every error names the run, and where it applies the
//! lifeline, the action and the source line.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// Building the engine failed (unknown workflow, missing extern, …).
    #[error("{0}")]
    Setup(String),
    /// An input is missing, unknown or of the wrong type.
    #[error("input `{name}`: {message}")]
    Input { name: String, message: String },
    /// An action failed, timed out or answered with a value of the wrong type.
    #[error("run {run}: {at}: {message}")]
    Action {
        run: String,
        at: Location,
        message: String,
    },
    /// An expression failed (overflow, division by zero).
    #[error("run {run}: {at}: {message}")]
    Eval {
        run: String,
        at: Location,
        message: String,
    },
    /// The local programs disagreed: impossible for projected programs;
    /// reported rather than trusted.
    #[error("run {run}: protocol violation at {lifeline}: {message}")]
    Protocol {
        run: String,
        lifeline: String,
        message: String,
    },
    /// An effect started before a crash and never finished, and it is not
    /// declared idempotent: a person must settle it (`troupe resolve`).
    #[error(
        "run {run}: the effect {step} started before a crash and did not finish; it is not declared idempotent, so a person must settle it (did it happen or not?)"
    )]
    NeedsResolution { run: String, step: String },
    /// The journal (the store) failed: the run stops rather than lose a record.
    #[error("run {run}: the store failed: {message}")]
    Journal { run: String, message: String },
    /// A `planner` asked for a plan `attempts` times and none checked.
    #[error(
        "run {run}: `{action}` asked the model for a plan {attempts} time(s) and none checked; the last plan's diagnostics:\n{diagnostics}"
    )]
    PlanRejected {
        run: String,
        action: String,
        attempts: u32,
        diagnostics: String,
    },
    /// One part of a placed run stopped because the run ended elsewhere
    /// (another part failed, a person cancelled it) or cannot reach the
    /// other parts: it records no end of its own.
    #[error("run {run}: {message}")]
    Stopped { run: String, message: String },
    /// Every lifeline waited on a person (or on a message) for
    /// [`crate::RunOptions::park_after`]: the run stopped with its records
    /// durable and a checkpoint taken, to go on once a person answers.
    #[error("run {run}: every lifeline waits on a person; parked until one answers")]
    Parked { run: String },
    /// Stopped at a step boundary on request ([`crate::Interrupt`]): its
    /// records are durable and it continues where it stopped.
    #[error("run {run}: interrupted; it continues where it stopped when resumed")]
    Interrupted { run: String },
    /// The recorded execution is not a run of the workflow.
    #[error("run {run}: the execution is not in ⟦P⟧: {message}")]
    NotMember { run: String, message: String },
}

impl RunError {
    /// The error's kind, one word (`error.type` of a failed run's span);
    /// `None` for a run that stopped to go on later (parked, interrupted),
    /// which did not fail.
    pub fn kind(&self) -> Option<&'static str> {
        Some(match self {
            RunError::Setup(_) => "setup",
            RunError::Input { .. } => "input",
            RunError::Action { .. } => "action",
            RunError::Eval { .. } => "eval",
            RunError::Protocol { .. } => "protocol",
            RunError::NeedsResolution { .. } => "needs_resolution",
            RunError::Journal { .. } => "journal",
            RunError::PlanRejected { .. } => "plan_rejected",
            RunError::Stopped { .. } => "stopped",
            RunError::NotMember { .. } => "not_member",
            RunError::Parked { .. } | RunError::Interrupted { .. } => return None,
        })
    }
}

/// Where in the workflow something happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub lifeline: String,
    pub action: Option<String>,
    pub line: u32,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "lifeline {}", self.lifeline)?;
        if let Some(a) = &self.action {
            write!(f, ", action `{a}`")?;
        }
        // Line 0: the engine was built without its source text.
        if self.line > 0 {
            write!(f, " (line {})", self.line)?;
        }
        Ok(())
    }
}
