//! Resource requests per pod (upstream's `calculateRequests`): the denominator of utilization.

use crate::view::PodView;

/// A pod lacks the request utilization needs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// A container has no request for the resource.
    #[error("missing request for {resource} in container {container} of Pod {pod}")]
    MissingRequest {
        /// Resource name.
        resource: String,
        /// Container name.
        container: String,
        /// Pod name.
        pod: String,
    },
    /// Neither the pod level nor any container requests the resource (the pod-level path).
    #[error("missing pod-level request for {resource} in Pod {pod}")]
    MissingPodLevelRequest {
        /// Resource name.
        resource: String,
        /// Pod name.
        pod: String,
    },
    /// The named container is not in the pod.
    #[error("container {container} not found in Pod {pod}")]
    ContainerNotFound {
        /// Container name.
        container: String,
        /// Pod name.
        pod: String,
    },
}

/// Which release's rules decide a pod's request ([`crate::Changes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestRules {
    /// Pod-level requests count: the `PodLevelResources` gate is on and the release reads them
    /// (1.34+, [`crate::Changes::pod_level_requests`]).
    pub pod_level: bool,
    /// A named container the pod lacks is an error (1.35+,
    /// [`crate::Changes::named_container_must_exist`]); before, the pod's request is 0.
    pub container_must_exist: bool,
}

impl RequestRules {
    /// The rules of the current releases, with the `PodLevelResources` gate as given.
    pub fn current(pod_level_resources: bool) -> Self {
        RequestRules {
            pod_level: pod_level_resources,
            container_must_exist: true,
        }
    }
}

/// Resources a pod may request at pod level (component-helpers' `IsSupportedPodLevelResource`).
fn pod_level_supported(resource: &str) -> bool {
    matches!(resource, "cpu" | "memory") || resource.starts_with("hugepages-")
}

/// The request for `resource` of one pod (upstream's `calculateRequests` checks every pod, ignored
/// ones included). With `container`, only that container's request counts (a restartable init
/// container too; a pod without it is an error, or 0 under the rules before 1.35). Otherwise,
/// when pod-level requests count (`rules.pod_level`) and the pod requests any
/// supported resource at pod level, the pod's aggregated requests: its pod-level request for
/// `resource` if set, else the sum of the containers' (and sidecars') requests for it, a container
/// without one counting as 0, and an error only when none has one. Without pod-level requests,
/// the sum over containers and sidecars, every one of which must request `resource`. Sums wrap
/// in int64 like upstream's.
///
/// Upstream adds the containers' quantities exactly and then takes the milli-value; this adds
/// milli-values, which differs only for requests finer than a milli-unit. Plain init containers
/// and pod overhead, which the aggregate also counts, are not in [`PodView`].
pub fn pod_request(
    pod: &PodView,
    container: Option<&str>,
    resource: &str,
    rules: RequestRules,
) -> Result<i64, RequestError> {
    request_of(pod, container, resource, rules).map_err(|fault| match fault {
        Fault::ContainerNotFound => RequestError::ContainerNotFound {
            container: container.unwrap_or_default().to_string(),
            pod: pod.name.clone(),
        },
        Fault::MissingRequest(c) => RequestError::MissingRequest {
            resource: resource.to_string(),
            container: c.to_string(),
            pod: pod.name.clone(),
        },
        Fault::MissingPodLevelRequest => RequestError::MissingPodLevelRequest {
            resource: resource.to_string(),
            pod: pod.name.clone(),
        },
    })
}

/// Why a pod has no request: [`RequestError`] without its texts, so the per-pod walk carries a
/// word instead of an error of owned strings (the texts are built for the one pod reported).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault<'p> {
    ContainerNotFound,
    /// The named container lacks the request.
    MissingRequest(&'p str),
    MissingPodLevelRequest,
}

/// [`pod_request`]'s rule, with a [`Fault`] for an error.
pub(crate) fn request_of<'p>(
    pod: &'p PodView,
    container: Option<&str>,
    resource: &str,
    rules: RequestRules,
) -> Result<i64, Fault<'p>> {
    if let Some(name) = container {
        let found = pod
            .containers
            .iter()
            .chain(pod.sidecars.iter())
            .find(|c| c.name == name);
        return match found {
            Some(c) => c.get(resource).ok_or(Fault::MissingRequest(&c.name)),
            None if rules.container_must_exist => Err(Fault::ContainerNotFound),
            None => Ok(0),
        };
    }
    let pod_level = pod
        .pod_requests
        .as_ref()
        .filter(|reqs| rules.pod_level && reqs.iter().any(|(r, _)| pod_level_supported(r)));
    match pod_level {
        Some(reqs) => {
            let own = reqs
                .iter()
                .find(|(r, _)| r == resource && pod_level_supported(r))
                .map(|(_, v)| *v);
            let aggregated = || {
                pod.containers
                    .iter()
                    .chain(pod.sidecars.iter())
                    .filter_map(|c| c.get(resource))
                    .reduce(i64::wrapping_add)
            };
            own.or_else(aggregated).ok_or(Fault::MissingPodLevelRequest)
        }
        None => {
            // Two loops rather than a chained iterator: this runs per pod and metric.
            let mut sum = 0i64;
            for c in &pod.containers {
                sum = sum.wrapping_add(c.get(resource).ok_or(Fault::MissingRequest(&c.name))?);
            }
            for c in &pod.sidecars {
                sum = sum.wrapping_add(c.get(resource).ok_or(Fault::MissingRequest(&c.name))?);
            }
            Ok(sum)
        }
    }
}
