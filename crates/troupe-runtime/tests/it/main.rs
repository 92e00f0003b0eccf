//! The integration tests of `troupe-runtime`, as one test binary: each module
//! was a binary of its own, linking the whole dependency graph again.
//! Shared helpers live in the support modules beside them.

mod cpl;
mod failures;
mod fairness;
mod oracle;
mod par;
mod placement;
mod theorem;
mod upgrade;
mod verify;
