//! The integration tests of `train-booking-server`, as one test binary: each module
//! was a binary of its own, linking the whole dependency graph again.
//! Shared helpers live in the support modules beside them.

mod contracts;
mod example;
