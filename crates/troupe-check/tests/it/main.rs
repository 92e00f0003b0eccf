//! The integration tests of `troupe-check`, as one test binary: each module
//! was a binary of its own, linking the whole dependency graph again.
//! Shared helpers live in the support modules beside them.

mod corpus;
mod new_forms;
mod plans;
mod robustness;
