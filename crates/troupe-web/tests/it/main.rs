//! The integration tests of `troupe-web`, as one test binary: each module
//! was a binary of its own, linking the whole dependency graph again.
//! Shared helpers live in the support modules beside them.

mod acknowledge;
mod api;
mod browser;
mod common;
mod console;
mod console_browser;
mod csrf_browser;
mod live_window;
mod notify;
mod plans;
