//! hpa-harness: runs the HPA conformance corpus against a target and reports the results.
//!
//! Data flow: case files ([`case`]) are loaded and checked; the [`runner`] advances virtual time
//! tick by tick over a simulated cluster ([`world`]), asks a [`target`] for its decision, applies
//! it, records a [`trace`] and checks the expectations; [`report`] renders the results.
//! [`whatif`] runs a user's own HPA and load as a case.

pub mod case;
pub mod cli;
pub mod cluster;
pub mod edges;
pub mod expected;
pub mod fuzz;
pub mod kept;
pub mod lint;
pub mod parallel;
pub mod podstate;
pub mod profile;
pub mod protocol;
pub mod report;
pub mod runner;
pub mod target;
pub mod text;
pub mod trace;
pub mod whatif;
pub mod world;
pub mod yaml;
