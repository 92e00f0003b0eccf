//! Repository hygiene, checked by `tests/tidy.rs` (after rust-analyzer's
//! tidy tests): the checks read the repository's files and fail with the
//! list of what is wrong. This library is empty; it exists so that the
//! checks run with `cargo test --workspace` like every other test.
