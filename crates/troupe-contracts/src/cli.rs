//! CLI (todo).
