//! Projection of troupe global workflows to local programs (LANGUAGE.md §5).
//!
//! [`project`] turns one checked workflow into one [`LocalProgram`] per lifeline
//! (tree form, [`Instr`]); [`FlatProgram::from_local`] lowers each to flat
//! bytecode ([`Op`]) with jump targets for a fast runtime. The owner of every
//! `if`/`while` evaluates the guard and sends `(decision, κ)` to the lifelines
//! R of the construct in ⊏ order; those lifelines receive it and follow. κ is a
//! [`ControlTag`], derived from the construct's position and canonical text
//! ([`canon`]). [`render_text`] and [`to_json`] show local programs.

pub mod canon;
pub mod flat;
pub mod lanes;
pub mod local;
pub mod project;
pub mod render;
pub mod tag;
#[cfg(feature = "testing")]
pub mod testing;

pub use canon::Names;
pub use flat::{FlatProgram, Op};
pub use lanes::Lanes;
pub use local::{
    Branch, ConstructKind, ControlInfo, DecideIf, DecideWhile, Instr, LocalPar, LocalProgram, Loop,
    Part,
};
pub use project::{MAX_NESTING, ProjectError, Projection, project};
pub use render::{render_flat_text, render_text, render_text_with, to_json};
pub use tag::ControlTag;

impl Projection {
    /// The flat bytecode form of every local program, indexed by `LifelineId`.
    pub fn flatten(&self) -> Vec<FlatProgram> {
        self.programs.iter().map(FlatProgram::from_local).collect()
    }

    /// Like [`Projection::flatten`], consuming the tree form (no cloning).
    pub fn into_flat(self) -> Vec<FlatProgram> {
        self.programs
            .into_iter()
            .map(FlatProgram::from_local_owned)
            .collect()
    }
}
