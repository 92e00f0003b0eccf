//! The integration tests of `troupe-llm`, as one test binary: each module
//! was a binary of its own, linking the whole dependency graph again.
//! Shared helpers live in the support modules beside them.

mod anthropic;
mod common;
mod mock_plans;
mod openai;
mod router;
mod tool_calls;
