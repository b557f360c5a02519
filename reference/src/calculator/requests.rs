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
    /// The named container is not in the pod.
    #[error("container {container} not found in Pod {pod}")]
    ContainerNotFound {
        /// Container name.
        container: String,
        /// Pod name.
        pod: String,
    },
}

/// The request for `resource` of one pod (upstream's `calculateRequests` checks every pod, ignored
/// ones included). With `container`, only that container's request counts; otherwise pod-level
/// requests when `pod_level_resources` is on and they are set, else the sum over containers and
/// restartable init containers (sidecars).
pub fn pod_request(
    pod: &PodView,
    container: Option<&str>,
    resource: &str,
    pod_level_resources: bool,
) -> Result<i64, RequestError> {
    let missing = |c: &str| RequestError::MissingRequest {
        resource: resource.to_string(),
        container: c.to_string(),
        pod: pod.name.clone(),
    };
    match container {
        Some(name) => {
            let c = pod
                .containers
                .iter()
                .find(|c| c.name == name)
                .ok_or_else(|| RequestError::ContainerNotFound {
                    container: name.to_string(),
                    pod: pod.name.clone(),
                })?;
            c.get(resource).ok_or_else(|| missing(&c.name))
        }
        None => {
            let pod_level = pod
                .pod_requests
                .as_ref()
                .filter(|_| pod_level_resources)
                .and_then(|reqs| reqs.iter().find(|(r, _)| r == resource).map(|(_, v)| *v));
            if let Some(v) = pod_level {
                return Ok(v);
            }
            let mut sum = 0i64;
            for c in pod.containers.iter().chain(pod.sidecars.iter()) {
                sum = sum.saturating_add(c.get(resource).ok_or_else(|| missing(&c.name))?);
            }
            Ok(sum)
        }
    }
}
