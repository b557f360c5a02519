//! Cases: the file format ([`model`]), and loading with validation ([`load`]).

pub mod load;
pub mod model;

pub use load::{Case, LoadError, discover, load_case, load_case_text};
pub use model::CaseFile;
