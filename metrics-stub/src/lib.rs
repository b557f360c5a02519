//! hpa-metrics-stub: a stand-in for metrics-server, a custom metrics adapter and an external
//! metrics adapter, run in a kind cluster behind APIService objects. The harness puts one
//! [`control::ControlDocument`] per namespace (per test case) — the pods' labels, what each
//! metrics API answers (the reference's [`hpa_reference::metrics_api::MetricsApis`]) and fault
//! settings — and the stub answers the metrics APIs for that namespace exactly as the real servers
//! would, so kube-controller-manager's HPA controller reads the values the harness chose.
//!
//! Without the default `server` feature the crate is only [`control`]: the document types the
//! harness builds.

pub mod control;

#[cfg(feature = "server")]
pub mod admission;
#[cfg(feature = "server")]
pub mod answers;
#[cfg(feature = "server")]
pub mod auth;
#[cfg(feature = "server")]
pub mod discovery;
#[cfg(feature = "server")]
pub mod reply;
#[cfg(feature = "server")]
pub mod routes;
#[cfg(feature = "server")]
pub mod server;
#[cfg(feature = "server")]
pub mod state;
#[cfg(feature = "server")]
pub mod tls;
#[cfg(feature = "server")]
pub mod wire;
#[cfg(feature = "server")]
pub mod x509;

pub use control::{ApiFault, ControlDocument, FaultMode, Faults, ScaleFault};
