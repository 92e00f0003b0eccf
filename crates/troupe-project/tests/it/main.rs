//! The integration tests of `troupe-project`, as one test binary: each module
//! was a binary of its own, linking the whole dependency graph again.
//! Shared helpers live in the support modules beside them.

mod examples;
mod oracle;
mod projection;
mod properties;
mod step_keys;
mod zippergen;
