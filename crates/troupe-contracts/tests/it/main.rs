//! The integration tests of `troupe-contracts`, as one test binary: each module
//! was a binary of its own, linking the whole dependency graph again.
//! Shared helpers live in the support modules beside them.

mod attacks;
mod bisim;
mod common;
mod corpus;
mod lint;
mod lint_corpus;
mod props;
mod roundtrip;
mod verify;
