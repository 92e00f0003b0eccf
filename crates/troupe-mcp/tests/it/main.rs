//! The integration tests of `troupe-mcp`, as one test binary: each module
//! was a binary of its own, linking the whole dependency graph again.
//! Shared helpers live in the support modules beside them.

mod import;
mod serve;
mod servers;
mod support;
