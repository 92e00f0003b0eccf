//! Tool contracts (work in progress).
