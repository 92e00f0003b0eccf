//! The integration tests of `troupe-lsp`, as one test binary: each module
//! was a binary of its own, linking the whole dependency graph again.
//! Shared helpers live in the support modules beside them.

mod features;
mod robustness;
mod textmate;
mod tree_sitter;
