//! The states and kinds the store records, as enums: one place for the
//! strings that appear in its tables, so that no other crate spells them.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Declares a `Copy` enum stored as a snake_case string, with `as_str`,
/// `Display`, `FromStr` and serde in the same spelling.
macro_rules! stored_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The spelling in the store (and in `--json` output).
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<$name, String> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err(format!(
                        "unknown {} `{s}`; expected one of {}",
                        stringify!($name),
                        [$($text),+].join(", ")
                    )),
                }
            }
        }
    };
}

stored_enum! {
    /// Where a run stands. `Stalled` is never stored: it is an unfinished
    /// run whose owner's lease has expired (or that nobody claimed).
    RunStatus {
        /// Recorded, not yet claimed by a process (`--detach`, a worker).
        Queued = "queued",
        /// An owner is running it.
        Running = "running",
        /// Its owner waits on a person (a human task is pending).
        Waiting = "waiting",
        /// Every lifeline waited on a person (or a message) for long, and
        /// its worker gave it back: no worker claims it until one of its
        /// tasks is answered (or `troupe resume` asks for it).
        Parked = "parked",
        /// Paused by an operator (`troupe pause`): it holds no lease and
        /// no process claims it until `troupe unpause`.
        Paused = "paused",
        /// Unfinished, and no live owner: `troupe resume` continues it.
        Stalled = "stalled",
        /// An effect started before a crash and never finished: a person
        /// settles it with `troupe resolve` before it can go on.
        NeedsResolution = "needs_resolution",
        /// Finished with results.
        Done = "done",
        /// Failed; `troupe retry` continues it from its last durable step.
        Failed = "failed",
        /// Cancelled by a person (`troupe cancel`), with the reason recorded.
        Cancelled = "cancelled",
    }
}

impl RunStatus {
    /// Whether the run has ended for good (nothing resumes it without a
    /// person's explicit `retry`).
    pub fn is_final(self) -> bool {
        matches!(
            self,
            RunStatus::Done | RunStatus::Failed | RunStatus::Cancelled
        )
    }

    /// Whether a process may claim the run and go on with it.
    pub fn is_resumable(self) -> bool {
        matches!(
            self,
            RunStatus::Queued
                | RunStatus::Running
                | RunStatus::Waiting
                | RunStatus::Stalled
                | RunStatus::Parked
        )
    }
}

stored_enum! {
    /// How a person answers a human task.
    TaskKind {
        /// Yes or no.
        Confirm = "confirm",
        /// One of the task's options.
        Select = "select",
        /// A value of the task's type.
        Input = "input",
        /// A value of the task's type, starting from a prefilled one.
        Edit = "edit",
        /// Nothing to give: the person acknowledges (`{}`).
        Acknowledge = "acknowledge",
    }
}

impl From<troupe_check::ir::AnswerKind> for TaskKind {
    fn from(kind: troupe_check::ir::AnswerKind) -> TaskKind {
        use troupe_check::ir::AnswerKind as A;
        match kind {
            A::Confirm => TaskKind::Confirm,
            A::Select => TaskKind::Select,
            A::Input => TaskKind::Input,
            A::Edit => TaskKind::Edit,
            A::Acknowledge => TaskKind::Acknowledge,
        }
    }
}

stored_enum! {
    /// Whether a human task still waits.
    TaskStatus {
        Pending = "pending",
        Answered = "answered",
        /// Its run was cancelled or deleted before anyone answered.
        Cancelled = "cancelled",
    }
}

stored_enum! {
    /// A durable step's progress.
    StepStatus {
        /// An effect's start is recorded, its end is not (yet).
        Started = "started",
        Done = "done",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip() {
        for s in RunStatus::ALL {
            assert_eq!(s.as_str().parse::<RunStatus>().unwrap(), *s);
            assert_eq!(
                serde_json::to_value(s).unwrap(),
                serde_json::json!(s.as_str())
            );
        }
        for k in TaskKind::ALL {
            assert_eq!(k.as_str().parse::<TaskKind>().unwrap(), *k);
        }
        assert!("nonsense".parse::<RunStatus>().is_err());
        assert_eq!(RunStatus::NeedsResolution.as_str(), "needs_resolution");
    }
}
