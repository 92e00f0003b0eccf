//! Test oracles that share no code with what they check.
//!
//! Property tests of the projection, the MSC semantics and the runtime used
//! to compare those crates with themselves (the bystander rule against the
//! projection's own recipient lists, membership against an enumeration that
//! lives in the same module). The oracles here are written from
//! LANGUAGE.md §5 directly, as naively as possible, over the global workflow:
//!
//! - [`generate`]: random well-typed IR workflows of up to a few hundred
//!   statements, with asynchronous actions (LLM, effect, human, tool) whose
//!   results are known functions of their argument;
//! - [`reference`]: lifelines(P) and R by a plain recursive walk, and the
//!   local programs that follow from them, in a tree of their own;
//! - [`global`]: a global interpreter (the one execution of a deterministic
//!   workflow, with values and control events) and a brute-force
//!   enumeration of bounded ⟦P⟧;
//! - [`explore`]: every schedule and every decision of the projected
//!   programs, explored systematically (not sampled), every interleaving
//!   of a lifeline's parts of a `par` included, bounded by loop unrolling,
//!   with deadlocks and protocol errors reported;
//! - [`edit`] and [`upgrade`]: random edits of a workflow between two
//!   versions, and which recorded runs may move to the new one, by
//!   brute-force prefix membership in bounded ⟦P′⟧;
//! - [`cpl`]: causal guards (LANGUAGE.md §7) evaluated on a recorded
//!   execution by the logic's definitions over an explicit causal order,
//!   and random workflows with causal guards, as source;
//! - [`seeds`]: seeds that vary per run, printed, reproducible with
//!   `TROUPE_TEST_SEED`.

pub mod cpl;
pub mod edit;
pub mod explore;
pub mod generate;
pub mod global;
pub mod reference;
pub mod seeds;
pub mod upgrade;
