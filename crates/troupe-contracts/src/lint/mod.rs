//! Lint (todo).
