//! The sections of a case file, each checked on its own, in the order the file reads: header,
//! spec (gates and API validation), workload, settings, memory, timeline, the HPA's patches,
//! expectations, and the run's length. The first problem found is the case's error.

use hpa_reference::settings::{FeatureGates, GATE_NAMES};
use hpa_reference::validation::{ValidationOptions, validate_hpa};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;

use super::check::{Checker, check_load, check_requests, strict};
use super::check::{metric_key, metric_keys};
use super::loaded::LoadError;
use crate::case::apiserver::try_patch;
use crate::case::bounds::{MAX_POD_TICKS, MAX_TICKS, MAX_VIRTUAL_SECONDS, pods_bound};
use crate::case::model::{CaseFile, IntOrPercent};

/// The latest time a case names, and where: the run lasts at least until then.
#[derive(Debug, Default)]
pub(super) struct Latest {
    t: i64,
    at: String,
}

impl Latest {
    /// Notes a time named at `at`.
    fn note(&mut self, t: i64, at: String) {
        if t > self.t {
            *self = Latest { t, at };
        }
    }
}

/// The case's own fields: a name, a title and a source.
pub(super) fn header(c: &Checker<'_>, file: &CaseFile) -> Result<(), LoadError> {
    if file.name.trim().is_empty() {
        return Err(c.err("name", "name must not be empty"));
    }
    if file.title.trim().is_empty() {
        return Err(c.err("title", "title must not be empty"));
    }
    let src = &file.source;
    let has_reason = src.reason.as_deref().is_some_and(|r| !r.trim().is_empty());
    if src.seed.is_none() && src.upstream.is_none() && !has_reason {
        return Err(c.err(
            "source",
            "source needs a seed document, an upstream test, or a reason why neither applies",
        ));
    }
    if (src.seed.is_some() || src.upstream.is_some()) && src.reason.is_some() {
        return Err(c.err(
            "source.reason",
            "source.reason is for a case with neither a seed nor an upstream source: drop it",
        ));
    }
    Ok(())
}

/// The feature gates the case sets, and the HPA as the API server admits it (or the rejection the
/// case expects instead of ticks).
pub(super) fn spec(c: &Checker<'_>, file: &CaseFile) -> Result<FeatureGates, LoadError> {
    let mut gates = hpa_reference::KubernetesVersion::DEFAULT.default_gates();
    for (name, value) in &file.feature_gates {
        gates.set(name, *value).map_err(|_| {
            c.err(
                &format!("featureGates.{name}"),
                format!(
                    "unknown feature gate {name:?} (known: {})",
                    GATE_NAMES.join(", ")
                ),
            )
        })?;
    }

    let errors = validate_hpa(
        &file.hpa,
        ValidationOptions::of(
            hpa_reference::KubernetesVersion::DEFAULT,
            gates.hpa_scale_to_zero,
        ),
    );
    if file.expect.rejected.is_some() {
        // Whether (and how) it is rejected is what the case checks, on each target.
        let x = &file.expect;
        if !x.at.is_empty() || x.trajectory.is_some() || x.final_replicas.is_some() {
            return Err(c.err(
                "expect.rejected",
                "expect.rejected is the whole expectation: a rejected HPA has no ticks (drop at, trajectory, finalReplicas)",
            ));
        }
    } else if let Some(e) = errors.first() {
        let more = if errors.len() > 1 {
            format!(" (and {} more)", errors.len() - 1)
        } else {
            String::new()
        };
        return Err(c.err(
            &format!("hpa.{}", e.path),
            format!("HPA rejected by API validation: {e}{more}"),
        ));
    }
    Ok(gates)
}

/// The workload: replicas, containers and their requests, start-up; the other HPAs around it.
pub(super) fn workload(c: &Checker<'_>, file: &CaseFile) -> Result<(), LoadError> {
    // Workload.
    let w = &file.workload;
    c.replicas("workload.replicas", w.replicas)?;
    if w.pod.containers.is_empty() {
        return Err(c.err(
            "workload.pod.containers",
            "a pod needs at least one container",
        ));
    }
    for (list, containers) in [
        ("containers", &w.pod.containers),
        ("sidecars", &w.pod.sidecars),
        ("initContainers", &w.pod.init_containers),
    ] {
        for (ci, container) in containers.iter().enumerate() {
            for (r, q) in &container.requests {
                c.amount(&format!("workload.pod.{list}[{ci}].requests.{r}"), q)?;
            }
        }
    }
    for (r, q) in w.pod.requests.iter().flatten() {
        c.amount(&format!("workload.pod.requests.{r}"), q)?;
    }
    if let Some(hot) = &w.startup.hot_cpu {
        c.amount("workload.startup.hotCpu.usage", &hot.usage)?;
    }

    let own = file.hpa.metadata.name.as_deref().unwrap_or_default();
    for (i, other) in file.other_hpas.iter().enumerate() {
        if other.name.is_empty() || other.name == own {
            return Err(c.err(
                &format!("otherHpas[{i}].name"),
                format!("another HPA needs a name of its own (not empty, not {own:?})"),
            ));
        }
        if file.other_hpas[..i].iter().any(|o| o.name == other.name) {
            return Err(c.err(
                &format!("otherHpas[{i}].name"),
                format!("HPA {:?} is listed twice", other.name),
            ));
        }
        if let Err(e) = hpa_reference::selector::parse(&other.selector) {
            return Err(c.err(
                &format!("otherHpas[{i}].selector"),
                format!("not a label selector (the other HPA could never register it): {e}"),
            ));
        }
    }
    Ok(())
}

/// The controller settings the case overrides; returns the sync period.
pub(super) fn settings(c: &Checker<'_>, file: &CaseFile) -> Result<u32, LoadError> {
    let sync_period = file.settings.sync_period_seconds.unwrap_or(15);
    if sync_period == 0 || i64::from(sync_period) > MAX_VIRTUAL_SECONDS {
        return Err(c.err(
            "settings.syncPeriodSeconds",
            format!(
                "settings.syncPeriodSeconds must be from 1 to {MAX_VIRTUAL_SECONDS}, not {sync_period}"
            ),
        ));
    }
    let o = &file.settings;
    c.factor("settings.tolerance", o.tolerance)?;
    c.factor("settings.scaleUpLimitFactor", o.scale_up_limit_factor)?;
    c.factor("settings.scaleUpLimitMinimum", o.scale_up_limit_minimum)?;
    Ok(sync_period)
}

/// The controller memory the case seeds.
pub(super) fn memory(c: &Checker<'_>, file: &CaseFile) -> Result<(), LoadError> {
    // Seeded memory.
    if let Some(m) = &file.memory {
        for (i, r) in m.recommendations.iter().enumerate() {
            c.time(&format!("memory.recommendations[{i}].at"), r.at)?;
            c.replicas(&format!("memory.recommendations[{i}].replicas"), r.replicas)?;
        }
        for (list, events) in [
            ("scaleUpEvents", &m.scale_up_events),
            ("scaleDownEvents", &m.scale_down_events),
        ] {
            for (i, e) in events.iter().enumerate() {
                c.time(&format!("memory.{list}[{i}].at"), e.at)?;
                c.replicas(&format!("memory.{list}[{i}].change"), e.change)?;
            }
        }
    }
    Ok(())
}

/// The timeline: every entry's time, load, pod changes, rollouts and faults, against the HPA as
/// stored (`hpa`) and the pod template.
pub(super) fn timeline(
    c: &Checker<'_>,
    file: &CaseFile,
    hpa: &HorizontalPodAutoscaler,
    latest: &mut Latest,
) -> Result<(), LoadError> {
    let w = &file.workload;
    // Timeline.
    let keys = metric_keys(hpa);
    // The pod template's containers, sidecars and init containers.
    let template: Vec<&crate::case::model::Container> = w
        .pod
        .containers
        .iter()
        .chain(&w.pod.sidecars)
        .chain(&w.pod.init_containers)
        .collect();
    let template_names: Vec<&str> = template.iter().map(|c| c.name.as_str()).collect();
    let container_names: Vec<&str> = w
        .pod
        .containers
        .iter()
        .chain(&w.pod.sidecars)
        .map(|c| c.name.as_str())
        .collect();
    let metric_known = |at: &str, m: &str| {
        if keys.iter().any(|k| k == m) {
            Ok(())
        } else {
            Err(c.err(
                at,
                format!(
                    "{m:?} is not a metric of the HPA (metrics: {})",
                    keys.join(", ")
                ),
            ))
        }
    };
    // The type (`Resource`, `Pods`, …) of the HPA's metric with this key.
    let metric_type = |key: &str| {
        file.hpa
            .spec
            .metrics
            .iter()
            .flatten()
            .find(|m| metric_key(m) == key)
            .map(|m| m.type_.clone())
            .unwrap_or_default()
    };
    for (i, e) in file.timeline.iter().enumerate() {
        let at = format!("timeline[{i}]");
        c.time(&format!("{at}.at"), i64::from(e.at))?;
        latest.note(i64::from(e.at), format!("{at}.at"));
        if let Some(l) = &e.load {
            check_load(
                c,
                &format!("{at}.load"),
                l,
                &keys,
                &container_names,
                &metric_type(&l.metric),
            )?;
        }
        for (j, l) in e.loads.iter().enumerate() {
            check_load(
                c,
                &format!("{at}.loads[{j}]"),
                l,
                &keys,
                &container_names,
                &metric_type(&l.metric),
            )?;
        }
        if let Some(r) = e.set_replicas {
            c.replicas(&format!("{at}.setReplicas"), r)?;
        }
        if let Some(api) = &e.scale_api
            && let Some(reason) = &api.update_error_reason
        {
            const REASONS: [&str; 11] = [
                "Conflict",
                "NotFound",
                "Forbidden",
                "Unauthorized",
                "Invalid",
                "BadRequest",
                "TooManyRequests",
                "ServerTimeout",
                "Timeout",
                "InternalError",
                "ServiceUnavailable",
            ];
            let here = format!("{at}.scaleApi.updateErrorReason");
            if api.update_error.is_none() {
                return Err(c.err(
                    &here,
                    format!("{here} is the reason of updateError: it needs updateError"),
                ));
            }
            if !REASONS.contains(&reason.as_str()) {
                return Err(c.err(
                    &here,
                    format!(
                        "{here}: {reason:?} is not an API status reason the format knows ({})",
                        REASONS.join(", ")
                    ),
                ));
            }
        }
        if let Some(api) = &e.scale_api
            && let Some(n) = api.update_failures
        {
            let here = format!("{at}.scaleApi.updateFailures");
            if n == 0 || api.update_error.is_none() {
                return Err(c.err(
                    &here,
                    format!("{here} counts failures of updateError: it needs updateError and at least 1, not {n}"),
                ));
            }
        }
        if let Some(p) = &e.pods {
            if let Some(t) = p.started_at {
                c.time(&format!("{at}.pods.startedAt"), t)?;
            }
            if let Some(t) = p.ready_since {
                c.time(&format!("{at}.pods.readySince"), t)?;
            }
            let selectors = [p.ordinals.is_some(), p.newest.is_some(), p.all]
                .iter()
                .filter(|b| **b)
                .count();
            if selectors != 1 {
                return Err(c.err(
                    &format!("{at}.pods"),
                    "pick pods with exactly one of ordinals, newest, all",
                ));
            }
            if p.ready_condition == Some(false) && (p.ready.is_some() || p.ready_since.is_some()) {
                return Err(c.err(
                    &format!("{at}.pods"),
                    "a pod without a Ready condition has no Ready status: drop `ready` or `readySince`",
                ));
            }
            if let Some(requests) = &p.requests {
                check_requests(c, &format!("{at}.pods.requests"), requests, &template_names)?;
            }
        }
        if let Some(r) = &e.rollout {
            let here = format!("{at}.rollout");
            if file.workload.fixed_pods {
                return Err(c.err(
                    &here,
                    "a rolling update creates and removes pods, which workload.fixedPods forbids",
                ));
            }
            let surge = r.max_surge.as_ref();
            let unavailable = r.max_unavailable.as_ref();
            for (field, v) in [("maxSurge", surge), ("maxUnavailable", unavailable)] {
                if let Some(IntOrPercent::Percent(p)) = v
                    && IntOrPercent::percent(p).is_none()
                {
                    return Err(c.err(
                        &format!("{here}.{field}"),
                        format!(
                            "{field} is a count or a percentage from \"0%\" to \"100%\", not {p:?}"
                        ),
                    ));
                }
            }
            let zero = |v: Option<&IntOrPercent>| match v {
                Some(IntOrPercent::Int(n)) => *n == 0,
                Some(IntOrPercent::Percent(p)) => IntOrPercent::percent(p) == Some(0),
                None => false,
            };
            if zero(surge) && zero(unavailable) {
                return Err(c.err(
                    &format!("{here}.maxUnavailable"),
                    "maxUnavailable may not be 0 when maxSurge is 0 (a Deployment refuses it: the rollout could never start)",
                ));
            }
            if let Some(requests) = &r.requests {
                let place = format!("{here}.requests");
                check_requests(c, &place, requests, &template_names)?;
                for (name, reqs) in requests {
                    let container = template.iter().find(|t| &t.name == name);
                    for res in reqs.keys() {
                        if !container.is_some_and(|t| t.requests.contains_key(res)) {
                            return Err(c.err(
                                &format!("{place}.{name}.{res}"),
                                format!("the template's container {name:?} requests no {res}; a rollout changes requests the old template has"),
                            ));
                        }
                    }
                }
            }
        }
        if let Some(m) = &e.metrics_missing {
            metric_known(&format!("{at}.metricsMissing.metric"), &m.metric)?;
            if m.ordinals.is_some() == m.newest.is_some() {
                return Err(c.err(
                    &format!("{at}.metricsMissing"),
                    "give exactly one of ordinals, newest",
                ));
            }
        }
        if let Some(m) = &e.metric_error {
            metric_known(&format!("{at}.metricError.metric"), &m.metric)?;
            if m.unregistered && m.message.is_some() {
                return Err(c.err(
                    &format!("{at}.metricError.unregistered"),
                    "an unregistered API has no error message of its own: drop `message`",
                ));
            }
            let kind = metric_type(&m.metric);
            if m.unregistered
                && !matches!(kind.as_str(), "Resource" | "ContainerResource" | "External")
            {
                return Err(c.err(
                    &format!("{at}.metricError.unregistered"),
                    format!("only the resource and external metrics APIs can be unregistered, not the one of a {kind} metric"),
                ));
            }
        }
        for (j, s) in e.stray_samples.iter().enumerate() {
            let here = format!("{at}.straySamples[{j}]");
            metric_known(&format!("{here}.metric"), &s.metric)?;
            let kind = metric_type(&s.metric);
            if !matches!(kind.as_str(), "Resource" | "ContainerResource" | "Pods") {
                return Err(c.err(
                    &format!("{here}.metric"),
                    format!("a {kind} metric has no per-pod samples; stray samples are for Resource, ContainerResource and Pods metrics"),
                ));
            }
            let target = &file.hpa.spec.scale_target_ref.name;
            let own = s
                .pod
                .strip_prefix(target.as_str())
                .and_then(|r| r.strip_prefix('-'))
                .is_some_and(|n| n.len() >= 4 && n.bytes().all(|b| b.is_ascii_digit()));
            if s.pod.is_empty() || own {
                return Err(c.err(
                    &format!("{here}.pod"),
                    format!("{:?} is a name the workload's own pods take ({target}-0000, …); a stray sample needs another", s.pod),
                ));
            }
            c.amount(&format!("{here}.value"), &s.value)?;
        }
    }
    Ok(())
}

/// The HPA after each `hpaPatch`, in time order: each one the API server accepts. Returns every
/// version of the manifest, the first as written.
pub(super) fn patches(
    c: &Checker<'_>,
    file: &CaseFile,
    gates: &FeatureGates,
) -> Result<Vec<HorizontalPodAutoscaler>, LoadError> {
    // Every patched manifest must be one the API server accepts (patches apply in time order),
    // and a patch is as strict as the manifest: a field the HPA does not have is an error.
    let mut manifests = vec![file.hpa.clone()];
    let mut patched = file.hpa.clone();
    let mut order: Vec<(usize, &crate::case::model::TimelineEntry)> =
        file.timeline.iter().enumerate().collect();
    order.sort_by_key(|(_, e)| e.at);
    for (i, e) in order {
        let Some(patch) = &e.hpa_patch else { continue };
        let at = format!("timeline[{i}].hpaPatch");
        patched = try_patch(&patched, patch)
            .map_err(|e| c.err(&at, format!("the patched HPA is not an HPA: {e}")))?;
        let known = serde_json::to_value(&patched).map_err(|e| c.at_start(e.to_string()))?;
        strict(c, &at, &known)?;
        let errors = validate_hpa(
            &patched,
            ValidationOptions::of(
                hpa_reference::KubernetesVersion::DEFAULT,
                gates.hpa_scale_to_zero,
            ),
        );
        if let Some(v) = errors.first() {
            return Err(c.err(
                &at,
                format!("the patched HPA is rejected by API validation: {v}"),
            ));
        }
        manifests.push(patched.clone());
    }
    Ok(manifests)
}

/// The expectations: each at a tick, each consistent in itself.
pub(super) fn expectations(
    c: &Checker<'_>,
    file: &CaseFile,
    sync_period: u32,
    latest: &mut Latest,
) -> Result<(), LoadError> {
    expectation_list(c, "expect", &file.expect, sync_period, latest)?;
    for (k, change) in file.changed_in.iter().enumerate() {
        let base = format!("changedIn[{k}].before");
        // A rejection's words may change between releases; whether it is rejected may not.
        if change.before.rejected.is_some() != file.expect.rejected.is_some() {
            return Err(c.err(
                &format!("{base}.rejected"),
                if file.expect.rejected.is_some() {
                    "the case expects a rejection: a change of a release gives the rejection's words before it (before.rejected), not ticks"
                } else {
                    "a change of a release expects ticks: a case rejected on some releases only is two cases"
                },
            ));
        }
        expectation_list(c, &base, &change.before, sync_period, latest)?;
    }
    Ok(())
}

/// The releases of `kubernetesVersions` and `changedIn`, each a known release written as a
/// string, the range not empty, each change inside it and after its start, no release twice.
pub(super) fn releases(
    c: &Checker<'_>,
    file: &CaseFile,
) -> Result<crate::case::versions::Releases, LoadError> {
    use hpa_reference::KubernetesVersion;
    let parse = |at: &str, text: &str| -> Result<KubernetesVersion, LoadError> {
        text.parse::<KubernetesVersion>()
            .map_err(|e| c.err(at, e.to_string()))
    };
    let mut out = crate::case::versions::Releases::default();
    if let Some(r) = &file.kubernetes_versions {
        out.from = r
            .from
            .as_deref()
            .map(|t| parse("kubernetesVersions.from", t))
            .transpose()?;
        out.through = r
            .through
            .as_deref()
            .map(|t| parse("kubernetesVersions.through", t))
            .transpose()?;
        if out.from.is_none() && out.through.is_none() {
            return Err(c.err(
                "kubernetesVersions",
                "kubernetesVersions needs `from`, `through` or both",
            ));
        }
        if let (Some(f), Some(t)) = (out.from, out.through)
            && f > t
        {
            return Err(c.err(
                "kubernetesVersions.through",
                format!("kubernetesVersions: from {f} through {t} holds for no release"),
            ));
        }
        if r.because.trim().is_empty() {
            return Err(c.err(
                "kubernetesVersions.because",
                "kubernetesVersions.because says why the case does not hold on other releases",
            ));
        }
    }
    for (k, change) in file.changed_in.iter().enumerate() {
        let at = format!("changedIn[{k}].release");
        let release = parse(&at, &change.release)?;
        if release == KubernetesVersion::ALL[0] || out.from.is_some_and(|f| release <= f) {
            return Err(c.err(
                &at,
                format!(
                    "no release this case holds for is before {release}: nothing to expect there"
                ),
            ));
        }
        if out.through.is_some_and(|t| release > t) {
            return Err(c.err(
                &at,
                format!("{release} is after kubernetesVersions.through: the case never sees it"),
            ));
        }
        if out.changed_in.contains(&release) {
            return Err(c.err(
                &at,
                format!("{release} is in changedIn twice: give one entry per release"),
            ));
        }
        if change.upstream.trim().is_empty() {
            return Err(c.err(
                &format!("changedIn[{k}].upstream"),
                "changedIn[].upstream names the upstream change (its pull request)",
            ));
        }
        out.changed_in.push(release);
    }
    Ok(out)
}

/// The checks of one expectation list (`expect`, or a change's `before`), `base` its path.
fn expectation_list(
    c: &Checker<'_>,
    base: &str,
    expect: &crate::case::model::Expectations,
    sync_period: u32,
    latest: &mut Latest,
) -> Result<(), LoadError> {
    for (i, x) in expect.at.iter().enumerate() {
        let at = format!("{base}.at[{i}].t");
        c.time(&at, i64::from(x.t))?;
        latest.note(i64::from(x.t), at);
        if x.t % sync_period != 0 {
            return Err(c.err(
                &format!("{base}.at[{i}].t"),
                format!(
                    "t={} is not a tick: ticks are multiples of the sync period ({sync_period} s)",
                    x.t
                ),
            ));
        }
        let listed: Vec<&str> = x
            .conditions
            .iter()
            .flatten()
            .map(|c| c.type_.as_str())
            .collect();
        for (j, ty) in x.absent_conditions.iter().flatten().enumerate() {
            if listed.contains(&ty.as_str()) {
                let at = format!("{base}.at[{i}].absentConditions[{j}]");
                return Err(c.err(
                    &at,
                    format!("{at}: {ty} is expected both present (in conditions) and absent"),
                ));
            }
        }
        if let Some(m) = &x.memory {
            for (j, r) in m.recommendations.iter().flatten().enumerate() {
                let at = format!("{base}.at[{i}].memory.recommendations[{j}]");
                c.time(&format!("{at}.at"), r.at)?;
                c.replicas(&format!("{at}.replicas"), r.replicas)?;
            }
            for (list, events) in [
                ("scaleUpEvents", &m.scale_up_events),
                ("scaleDownEvents", &m.scale_down_events),
            ] {
                for (j, e) in events.iter().flatten().enumerate() {
                    let at = format!("{base}.at[{i}].memory.{list}[{j}]");
                    c.time(&format!("{at}.at"), e.at)?;
                    c.replicas(&format!("{at}.change"), e.change)?;
                }
            }
        }
        if x.exact_conditions == Some(true) && x.conditions.is_none() {
            let at = format!("{base}.at[{i}].exactConditions");
            return Err(c.err(
                &at,
                format!("{at} needs the list of conditions (`conditions: []` for none)"),
            ));
        }
        // A message is exact or a substring, never both.
        let both = x
            .conditions
            .iter()
            .flatten()
            .map(|k| (k.message.is_some(), k.message_contains.is_some()))
            .enumerate()
            .map(|(j, b)| (format!("{base}.at[{i}].conditions[{j}]"), b))
            .chain(
                x.events
                    .iter()
                    .flatten()
                    .map(|e| (e.message.is_some(), e.message_contains.is_some()))
                    .enumerate()
                    .map(|(j, b)| (format!("{base}.at[{i}].events[{j}]"), b)),
            )
            .find(|(_, (exact, contains))| *exact && *contains);
        if let Some((at, _)) = both {
            return Err(c.err(
                &at,
                format!("{at} gives message (exact) and messageContains: give one"),
            ));
        }
        for (j, m) in x.current_metrics.iter().flatten().enumerate() {
            for (field, q) in [("averageValue", &m.average_value), ("value", &m.value)] {
                if let Some(q) = q {
                    c.quantity(&format!("{base}.at[{i}].currentMetrics[{j}].{field}"), q)?;
                }
            }
        }
    }
    Ok(())
}

/// How long the case runs (its `durationSeconds`, else a tick after the latest time it names),
/// within the bounds of the format ([`crate::case::bounds`]).
pub(super) fn run_length(
    c: &Checker<'_>,
    file: &CaseFile,
    manifests: &[HorizontalPodAutoscaler],
    sync_period: u32,
    latest: Latest,
) -> Result<u32, LoadError> {
    let Latest {
        t: last,
        at: last_at,
    } = latest;
    let (duration, duration_at) = match file.duration_seconds {
        Some(d) => {
            c.time("durationSeconds", i64::from(d))?;
            if i64::from(d) < last {
                return Err(c.err("durationSeconds", format!("the run ends at {d} s, before the last timeline entry or expectation ({last} s)")));
            }
            (i64::from(d), "durationSeconds".to_string())
        }
        // At most 2 × MAX_VIRTUAL_SECONDS: fits a u32, cannot wrap.
        None => (last + i64::from(sync_period), last_at),
    };
    let ticks = duration / i64::from(sync_period) + 1;
    if ticks > MAX_TICKS as i64 {
        return Err(c.err(
            &duration_at,
            format!(
                "the run would have {ticks} ticks ({duration} s every {sync_period} s), more than {MAX_TICKS}: shorten it or lengthen settings.syncPeriodSeconds"
            ),
        ));
    }
    let pods = pods_bound(
        file.workload.replicas,
        manifests,
        file.timeline.iter().filter_map(|e| e.set_replicas),
    );
    let pod_ticks = pods * ticks.unsigned_abs();
    if pod_ticks > MAX_POD_TICKS {
        return Err(c.err(
            &duration_at,
            format!(
                "the run would simulate up to {pods} pods for {ticks} ticks, {pod_ticks} pod-ticks, more than {MAX_POD_TICKS}: shorten it, lengthen settings.syncPeriodSeconds or lower maxReplicas"
            ),
        ));
    }
    let duration = u32::try_from(duration).map_err(|_| {
        c.err(
            &duration_at,
            format!("the run would last {duration} s, more than {} s", u32::MAX),
        )
    })?;
    Ok(duration)
}
