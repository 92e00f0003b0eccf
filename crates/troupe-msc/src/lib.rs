//! The MSC semantics of troupe workflows, and sequence charts.
//!
//! - [`event`]: events (send/receive of data or control messages, local
//!   actions, decisions) and executions (tuples of local words).
//! - [`validity`]: FIFO matching, validity (payloads agree, causal order
//!   acyclic) and completeness.
//! - [`semantics`]: ⟦P⟧ of a global workflow: bounded enumeration and an
//!   efficient membership check that names the first event that does not fit.
//! - [`monitor`]: online verification of a run as its events arrive, in
//!   bounded memory and linear time.
//! - [`sim`]: a reference interpreter of projected programs under a seeded
//!   random scheduler, recording executions.
//! - [`cpl`]: causal guards — the online monitor an owner decides with,
//!   and the logic's semantics on a recorded execution.
//! - [`upgrade`]: moving a recorded run to another version of its
//!   workflow, or the event that stands in the way.
//! - [`chart`]: one chart model for workflows and executions, drawn as SVG or
//!   Mermaid.

pub mod chart;
pub mod cpl;
pub mod eval;
pub mod event;
pub mod monitor;
pub mod semantics;
pub mod sim;
pub mod upgrade;
pub mod validity;

pub use chart::{
    Chart, ChartOptions, FrameKind, Item, chart_mermaid, chart_svg, execution_chart,
    execution_chart_moves, workflow_chart,
};
pub use event::{Event, EventKey, Execution, Message};
pub use monitor::{CursorState, InFlight, Monitor, MonitorState};
pub use semantics::{EnumOptions, Enumeration, MemberOptions, NotMember, Semantics};
pub use sim::{Decisions, SimError, SimOptions, SimRun, simulate};
pub use validity::{
    Invalid, LaneOf, validate, validate_complete, validate_complete_lanes, validate_lanes,
};
