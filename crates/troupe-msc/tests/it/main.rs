//! The integration tests of `troupe-msc`, as one test binary: each module
//! was a binary of its own, linking the whole dependency graph again.
//! Shared helpers live in the support modules beside them.

mod charts;
mod cpl;
mod fuzz_front_end;
mod mermaid_render;
mod monitor;
mod monitor_snapshot;
mod new_form_charts;
mod new_forms;
mod oracle;
mod par;
mod plan_charts;
mod properties;
mod semantics;
mod upgrade;
