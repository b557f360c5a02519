//! Cases: the file format ([`model`]), finding case files ([`discover`]), loading with validation
//! ([`load`]), the feature gates a case uses ([`gates`]) and the implementation features it needs
//! ([`features`]), and the releases it holds for ([`versions`]).

pub mod apiserver;
pub mod bounds;
pub mod corpus;
pub mod discover;
pub mod features;
pub mod gates;
pub mod load;
pub mod model;
pub mod versions;

pub use discover::discover;
pub use load::{Case, LoadError, load_case, load_case_text};
pub use model::CaseFile;
