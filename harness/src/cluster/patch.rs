//! A spec patch on a cluster that reconciles it at once. From Kubernetes 1.37 (`HPAGeneration`,
//! #138294) kube-controller-manager's informer handler adds an HPA whose `metadata.generation`
//! changed to its work queue at once, besides the periodic reconcile its delaying queue keeps as
//! booked. The lane applies a case's `hpaPatch` half a sync period before its tick, after the
//! stub serves that tick's answers (`cluster::lane`), so the cluster's controller reconciles once
//! more, half a period early, with the tick's world and the new spec, then at the tick.
//!
//! The virtual-time runner reconciles only at ticks. [`AtOnce`] is the reference core with that
//! extra reconcile: a tick whose HPA spec differs from the HPA's last one is decided twice, first
//! at `lead` seconds before the tick (its status written, as the cluster's controller writes it),
//! then at the tick. A case with such patches runs on the cluster only where the core gives the
//! case's own trace so (`cluster::seed::same_trace_on`); an extra reconcile that scales is refused:
//! the lane times decisions by ticks, and that one falls between two.

use std::collections::HashMap;

use hpa_reference::Settings;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerSpec;

use crate::case::Case;
use crate::targets::{CoreTarget, GateSupport, Session, Target, TargetError, TickOutcome};
use crate::world::{Snapshot, instant};

/// The reference core, with an extra reconcile `lead` case seconds before each tick whose spec
/// changed.
#[derive(Debug, Clone, Copy)]
pub struct AtOnce {
    /// How long before its tick the patch is applied and reconciled (case seconds).
    pub lead: i64,
}

impl Target for AtOnce {
    fn name(&self) -> String {
        "core (spec patches reconciled at once)".into()
    }

    fn gate_support(&self) -> GateSupport {
        CoreTarget.gate_support()
    }

    fn start(&self, case: &Case, settings: &Settings) -> Result<Box<dyn Session>, TargetError> {
        Ok(Box::new(AtOnceSession {
            inner: CoreTarget.start(case, settings)?,
            lead: self.lead,
            specs: HashMap::new(),
        }))
    }
}

struct AtOnceSession {
    inner: Box<dyn Session>,
    lead: i64,
    /// Each HPA's spec at its last tick, by name.
    specs: HashMap<String, HorizontalPodAutoscalerSpec>,
}

impl Session for AtOnceSession {
    fn tick(&mut self, s: &Snapshot) -> Result<TickOutcome, TargetError> {
        let name = s.hpa.metadata.name.clone().unwrap_or_default();
        let before = self.specs.insert(name, s.hpa.spec.clone());
        if before.is_none_or(|b| b == s.hpa.spec) {
            return self.inner.tick(s);
        }
        let at = s.t - self.lead;
        let mut early = s.clone();
        early.now = instant(at);
        let first = self.inner.tick(&early)?;
        if let Some(n) = first.scaled_to {
            return Err(TargetError::failed(format!(
                "the spec patch of t={} is reconciled at once, at t={at} on the cluster (#138294), and that reconcile scales to {n} between two ticks",
                s.t
            )));
        }
        let mut then = s.clone();
        then.hpa.status = Some(first.status.clone());
        let mut second = self.inner.tick(&then)?;
        let mut events = first.events;
        events.append(&mut second.events);
        second.events = events;
        Ok(second)
    }

    fn finish(&mut self) -> Result<(), TargetError> {
        self.inner.finish()
    }
}

/// Whether `case` (or an HPA alongside) patches its HPA's spec on a cluster that reconciles that
/// at once: `version` and the run's `HPAGeneration` gate.
pub fn reconciled_at_once(
    case: &Case,
    version: hpa_reference::KubernetesVersion,
    settings: &Settings,
) -> bool {
    version.changes().new_hpa_reconciled_at_once
        && settings.gates.hpa_generation
        && std::iter::once(case)
            .chain(&case.members)
            .any(|c| c.file.timeline.iter().any(|e| e.hpa_patch.is_some()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::testing::{corpus, opts};
    use crate::run::run_case;
    use hpa_reference::KubernetesVersion;

    #[test]
    fn a_patch_that_changes_no_decision_gives_the_same_trace_with_its_extra_reconcile() {
        // minReplicas 3 while scaled to zero: still ScalingDisabled, nothing scales either way.
        let case = corpus("docs/docs-min-replicas-change-does-not-reactivate-gate-on.yaml");
        let settings =
            crate::run::resolve_settings(&case, crate::targets::GateSupport::PerCase, &opts())
                .unwrap();
        assert!(reconciled_at_once(
            &case,
            KubernetesVersion::V1_37,
            &settings
        ));
        assert!(!reconciled_at_once(
            &case,
            KubernetesVersion::V1_36,
            &settings
        ));
        crate::cluster::seed::same_trace_on(&case, &case, &AtOnce { lead: 7 }, &opts()).unwrap();
    }

    #[test]
    fn an_extra_reconcile_that_scales_is_refused_with_its_time() {
        // At 3 replicas and 50 % of a 50 % target, nothing changes; minReplicas 5 patched in at
        // t=30 scales at once: at t=23 on the cluster.
        let mut case = corpus("versions/hpa-generation-observed.yaml");
        let patch = case
            .file
            .timeline
            .iter_mut()
            .find_map(|e| e.hpa_patch.as_mut())
            .unwrap();
        *patch = serde_json::json!({"spec": {"minReplicas": 5}});
        assert_eq!(
            run_case(&case, &CoreTarget, &opts())
                .trace
                .last()
                .unwrap()
                .replicas,
            5
        );
        let r = run_case(&case, &AtOnce { lead: 7 }, &opts());
        let why = match r.outcome {
            crate::run::Outcome::Errored(e) => e,
            o => panic!("{o:?}"),
        };
        assert!(
            why.contains("at t=23") && why.contains("scales to 5"),
            "{why}"
        );
    }
}
