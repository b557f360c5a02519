//! hpa-harness: runs the HPA conformance corpus against a target and reports the results.
//!
//! Data flow: case files ([`case`]) are loaded and checked; the [`runner`] advances virtual time
//! tick by tick over a simulated cluster ([`world`]), asks a [`target`] for its decision, applies
//! it, records a [`trace`] and checks the expectations; [`report`] renders the results.
//! [`whatif`] runs a user's own HPA and load as a case.

pub mod case;
pub mod cli;
pub mod cluster;

pub mod expected;
pub mod fuzz;
pub mod kept;
pub mod profile;
pub mod protocol;
pub mod report;
pub mod run;
pub mod targets;
pub mod util;
pub mod whatif;
pub mod world;
