//! hpa-harness: runs the HPA conformance corpus against a target and reports the results.
//!
//! Data flow: case files ([`case`]) are loaded and checked; the runner ([`run`]) advances virtual
//! time tick by tick over a simulated cluster ([`world`]), asks a target ([`targets`]) for its
//! decision, applies it, records a trace ([`run::trace`]) and checks the expectations; [`report`]
//! renders the results. [`cluster`] runs cases on a real cluster in real time instead,
//! [`fuzz`] compares two targets on random scenarios, [`whatif`] runs a user's own HPA and load as
//! a case, and [`cli`] is the command line over all of them.
//!
//! Layers, each depending only on those below it: [`util`] → [`case`] → [`world`] → [`profile`],
//! [`kept`], [`protocol`] → [`targets`] → [`run`] → [`report`], [`expected`] → [`cluster`],
//! [`whatif`], [`fuzz`] → [`cli`].

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
