//! The troupe runtime: runs the projected local programs of a workflow.
//!
//! ```
//! use troupe_runtime::{EngineBuilder, Externs, RunOptions};
//! use troupe_check::Value;
//!
//! let source = r#"
//!     pure double(n: Int) -> Int = n * 2
//!     effect log(line: Text) -> Bool extern
//!     workflow ping(x: Int @ A) {
//!       msg A(x) -> B(y)
//!       act B: z = double(y)
//!       act B: ok = log("z is {z}")
//!       msg B(z) -> A(z)
//!       return z @ A
//!     }
//! "#;
//! let mut externs = Externs::new();
//! externs.effect("log", |call| async move {
//!     println!("{:?}", call.args);
//!     Ok(vec![Value::Bool(true)])
//! });
//! let engine = EngineBuilder::from_source(source).unwrap().externs(externs).build().unwrap();
//! let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
//! let outcome = rt.block_on(engine.run(vec![Value::Int(21)], RunOptions::default())).unwrap();
//! assert_eq!(outcome.results, vec![("z".to_string(), Value::Int(42))]);
//! engine.verify("run", outcome.trace.as_ref().unwrap()).unwrap();
//! ```

pub mod actions;
mod agent;
pub mod checkpoint;
pub mod engine;
pub mod error;
pub mod genai;
mod interrupt;
pub mod journal;
pub mod remote;
pub mod trace;
pub mod watch;

pub use actions::{
    Asked, EffectCall, Externs, HumanInbox, HumanTask, ListedTools, NoContracts, NoHumans,
    ScriptedHumans, ToolCall, ToolHost, ToolInfo, ToolPolicy, ToolRecord,
};
pub use agent::DEFAULT_MAX_STEPS;
pub use checkpoint::{Channel, Checkpoint, LaneState, PartState, Queued};
pub use engine::{
    Engine, EngineBuilder, LANE_OCCURRENCES, MetadataStats, PlanVerifier, RunOptions, RunOutcome,
    Schedule, new_run_uid, parse_inputs, plan_key, plan_run_key, render_for_model,
};
pub use error::{Location, RunError};
pub use interrupt::Interrupt;
pub use journal::{LlmCall, Recorded, RunJournal, StepKey, StepKind};
pub use remote::{Elsewhere, Remote, RemoteChannel};
pub use trace::{Trace, TraceEntry};
pub use watch::{EventSink, Watched};
