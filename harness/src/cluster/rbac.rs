//! Least privilege, proven from the API server's audit log: every request a controller's service
//! account made was allowed and is covered by a rule of its RBAC manifests, and every permission
//! those rules grant (API group × resource × verb) was used at least once. `hpa-conformance
//! rbac-audit` runs it after the smoke corpus (`just kind-rbac`).

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::api::rbac::v1::PolicyRule;
use serde::Deserialize;

/// One permission a rule grants: group, resource (`name` or `name/subresource`, `*` for every
/// resource), verb, and the namespace of the Role it comes from (`None`: a ClusterRole).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Grant {
    /// The API group (`""` for the core group).
    pub group: String,
    /// The resource, with its subresource after a slash.
    pub resource: String,
    /// The verb.
    pub verb: String,
    /// The namespace of a Role's grant; `None` for a ClusterRole's.
    pub namespace: Option<String>,
    /// The object names it is limited to (empty: any).
    pub names: Vec<String>,
}

impl fmt::Display for Grant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let group = if self.group.is_empty() {
            "core"
        } else {
            &self.group
        };
        write!(f, "{} {group}/{}", self.verb, self.resource)?;
        if !self.names.is_empty() {
            write!(f, " [{}]", self.names.join(","))?;
        }
        if let Some(ns) = &self.namespace {
            write!(f, " in {ns}")?;
        }
        Ok(())
    }
}

/// One resource request from the audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The verb the API server authorized (`get`, `list`, `watch`, `update`, ...).
    pub verb: String,
    /// The API group.
    pub group: String,
    /// The resource, with its subresource after a slash.
    pub resource: String,
    /// The namespace, if any.
    pub namespace: Option<String>,
    /// The object name, if any.
    pub name: Option<String>,
    /// The HTTP status of the answer.
    pub code: u16,
    /// The authorizer's decision (`allow`, `forbid`), from the event's annotations.
    pub decision: Option<String>,
    /// The request URI.
    pub uri: String,
}

/// The verdict.
#[derive(Debug, Default)]
pub struct Audit {
    /// Requests of the user found in the log (resource requests only).
    pub requests: usize,
    /// Requests the authorizer refused (decision `forbid`; a 403 without a recorded decision).
    /// A 403 from admission after an `allow` (e.g. an event written into a namespace that is
    /// being deleted) is not a denial of a permission.
    pub denied: Vec<Request>,
    /// Allowed requests no rule of the manifests covers (allowed by something else).
    pub uncovered: Vec<Request>,
    /// Each grant with the number of requests it covered; zero means unused.
    pub used: Vec<(Grant, usize)>,
    /// Each conditional grant (what only some runs need: a request it covers is covered, and it
    /// may go unused) with the number of requests it covered.
    pub conditional: Vec<(Grant, usize)>,
    /// Requests RBAC allowed that admission refused (403 after `allow`): counted, not failures.
    pub admission_refusals: usize,
}

impl Audit {
    /// No request denied or uncovered, no grant unused, and something ran.
    pub fn passed(&self) -> bool {
        self.requests > 0
            && self.denied.is_empty()
            && self.uncovered.is_empty()
            && self.used.iter().all(|(_, n)| *n > 0)
    }

    /// A human report: every grant with its use count, then what is wrong.
    pub fn report(&self) -> String {
        let mut out = format!("{} requests audited\n", self.requests);
        for (g, n) in &self.used {
            let mark = if *n > 0 { "used" } else { "UNUSED" };
            out.push_str(&format!("  {mark:6} {n:6}  {g}\n"));
        }
        for (g, n) in &self.conditional {
            let mark = if *n > 0 { "used" } else { "unused" };
            out.push_str(&format!("  {mark:6} {n:6}  {g} (conditional)\n"));
        }
        for r in &self.denied {
            out.push_str(&format!("  DENIED {} {}\n", r.verb, r.uri));
        }
        let admission = self.admission_refusals;
        if admission > 0 {
            out.push_str(&format!(
                "  ({admission} requests allowed by RBAC were refused by admission, e.g. into a namespace being deleted)\n"
            ));
        }
        for r in &self.uncovered {
            out.push_str(&format!(
                "  NOT IN THE MANIFESTS {} {} (code {})\n",
                r.verb, r.uri, r.code
            ));
        }
        out
    }
}

#[derive(Deserialize)]
struct Manifest {
    kind: Option<String>,
    metadata: Option<Meta>,
    rules: Option<Vec<PolicyRule>>,
}

#[derive(Deserialize)]
struct Meta {
    namespace: Option<String>,
}

/// The grants of every ClusterRole and Role in a multi-document YAML manifest.
pub fn grants(manifests: &str) -> Result<Vec<Grant>, String> {
    let docs: Vec<Manifest> =
        serde_saphyr::from_multiple(manifests).map_err(|e| format!("RBAC manifests: {e}"))?;
    let mut out = Vec::new();
    for doc in docs {
        let namespace = match doc.kind.as_deref() {
            Some("ClusterRole") => None,
            Some("Role") => Some(
                doc.metadata
                    .and_then(|m| m.namespace)
                    .ok_or("a Role without a namespace")?,
            ),
            _ => continue,
        };
        for rule in doc.rules.unwrap_or_default() {
            if rule.non_resource_urls.is_some() {
                continue;
            }
            for group in rule.api_groups.clone().unwrap_or_default() {
                for resource in rule.resources.clone().unwrap_or_default() {
                    for verb in &rule.verbs {
                        out.push(Grant {
                            group: group.clone(),
                            resource: resource.clone(),
                            verb: verb.clone(),
                            namespace: namespace.clone(),
                            names: rule.resource_names.clone().unwrap_or_default(),
                        });
                    }
                }
            }
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AuditEvent {
    #[serde(rename = "auditID")]
    audit_id: Option<String>,
    stage: Option<String>,
    verb: Option<String>,
    #[serde(rename = "requestURI")]
    request_uri: Option<String>,
    user: Option<AuditUser>,
    object_ref: Option<ObjectRef>,
    response_status: Option<ResponseStatus>,
    annotations: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize)]
struct AuditUser {
    username: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ObjectRef {
    resource: Option<String>,
    subresource: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    api_group: Option<String>,
}

#[derive(Deserialize)]
struct ResponseStatus {
    code: Option<u16>,
}

/// The resource requests `user` made, from an audit log (JSON lines, `audit.k8s.io/v1` events),
/// once each: its `ResponseComplete` (or `Panic`) event, or — for a long-running request such as a
/// watch that has not ended when the log is read — its `ResponseStarted` event. Events of one
/// request share an `auditID`; the last stage logged wins. Lines that are not events are skipped.
pub fn requests(log: &str, user: &str) -> Vec<Request> {
    let mut order: Vec<String> = Vec::new();
    let mut by_id: BTreeMap<String, AuditEvent> = BTreeMap::new();
    for (i, e) in log
        .lines()
        .filter_map(|line| serde_json::from_str::<AuditEvent>(line).ok())
        .filter(|e| {
            matches!(
                e.stage.as_deref(),
                Some("ResponseStarted" | "ResponseComplete" | "Panic")
            )
        })
        .filter(|e| e.user.as_ref().and_then(|u| u.username.as_deref()) == Some(user))
        .enumerate()
    {
        let id = e.audit_id.clone().unwrap_or_else(|| format!("line-{i}"));
        if by_id.insert(id.clone(), e).is_none() {
            order.push(id);
        }
    }
    order
        .into_iter()
        .filter_map(|id| by_id.remove(&id))
        .filter_map(|e| {
            let o = e.object_ref?;
            let resource = o.resource?;
            Some(Request {
                verb: e.verb.unwrap_or_default(),
                group: o.api_group.unwrap_or_default(),
                resource: match o.subresource {
                    Some(sub) if !sub.is_empty() => format!("{resource}/{sub}"),
                    _ => resource,
                },
                namespace: o.namespace,
                name: o.name,
                code: e.response_status.and_then(|s| s.code).unwrap_or(0),
                decision: e
                    .annotations
                    .and_then(|mut a| a.remove("authorization.k8s.io/decision")),
                uri: e.request_uri.unwrap_or_default(),
            })
        })
        .collect()
}

/// Whether `grant` covers `request`, by RBAC's matching rules (`*` matches every group, resource
/// and verb; `x/*` every subresource of x; names limit by object name).
fn covers(grant: &Grant, request: &Request) -> bool {
    let group = grant.group == "*" || grant.group == request.group;
    let verb = grant.verb == "*" || grant.verb == request.verb;
    let resource = grant.resource == "*"
        || grant.resource == request.resource
        || grant.resource.strip_suffix("/*").is_some_and(|base| {
            request
                .resource
                .split_once('/')
                .is_some_and(|(r, _)| r == base)
        });
    let namespace = match &grant.namespace {
        None => true,
        Some(ns) => request.namespace.as_deref() == Some(ns.as_str()),
    };
    let name = grant.names.is_empty()
        || request
            .name
            .as_ref()
            .is_some_and(|n| grant.names.contains(n));
    group && verb && resource && namespace && name
}

/// Checks the requests against the grants.
pub fn audit(grants: &[Grant], requests: &[Request]) -> Audit {
    audit_with(grants, &[], requests)
}

/// [`audit`], with `conditional` grants that cover requests too but need not be used.
pub fn audit_with(grants: &[Grant], conditional: &[Grant], requests: &[Request]) -> Audit {
    let mut used: BTreeMap<&Grant, usize> = grants.iter().map(|g| (g, 0)).collect();
    let mut cond: BTreeMap<&Grant, usize> = conditional.iter().map(|g| (g, 0)).collect();
    let mut out = Audit {
        requests: requests.len(),
        ..Audit::default()
    };
    for r in requests {
        let forbidden = match r.decision.as_deref() {
            Some(d) => d == "forbid",
            None => r.code == 403,
        };
        if forbidden {
            out.denied.push(r.clone());
            continue;
        }
        if r.code == 403 {
            out.admission_refusals += 1;
        }
        let mut covered = false;
        for g in grants.iter().filter(|g| covers(g, r)) {
            covered = true;
            if let Some(n) = used.get_mut(g) {
                *n += 1;
            }
        }
        if !covered {
            for g in conditional.iter().filter(|g| covers(g, r)) {
                covered = true;
                if let Some(n) = cond.get_mut(g) {
                    *n += 1;
                }
            }
        }
        if !covered {
            out.uncovered.push(r.clone());
        }
    }
    out.used = used.into_iter().map(|(g, n)| (g.clone(), n)).collect();
    out.conditional = cond.into_iter().map(|(g, n)| (g.clone(), n)).collect();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const RBAC: &str = r#"
kind: ClusterRole
metadata: {name: c}
rules:
  - apiGroups: [autoscaling]
    resources: [horizontalpodautoscalers]
    verbs: [list, watch]
  - apiGroups: [custom.metrics.k8s.io]
    resources: ["*"]
    verbs: [get]
---
kind: Role
metadata: {name: r, namespace: sys}
rules:
  - apiGroups: [coordination.k8s.io]
    resources: [leases]
    resourceNames: [lock]
    verbs: [update]
---
kind: ServiceAccount
metadata: {name: sa, namespace: sys}
"#;

    /// An audit line: `what` is `verb group resource subresource namespace name` (`-` for empty).
    fn line(user: &str, what: &str, code: u16) -> String {
        let f: Vec<&str> = what
            .split(' ')
            .map(|x| if x == "-" { "" } else { x })
            .collect();
        let [verb, group, res, sub, ns, name] = f[..] else {
            panic!("{what}")
        };
        serde_json::json!({
            "kind": "Event", "stage": "ResponseComplete", "verb": verb,
            "requestURI": format!("/x/{res}/{name}"), "user": {"username": user},
            "objectRef": {"resource": res, "subresource": sub, "namespace": ns, "name": name, "apiGroup": group},
            "responseStatus": {"code": code}
        })
        .to_string()
    }

    #[test]
    fn every_grant_used_and_nothing_denied_passes_and_each_fault_is_named() {
        let g = grants(RBAC).unwrap();
        assert_eq!(g.len(), 4, "{g:?}");
        let me = "system:serviceaccount:sys:sa";
        let mut log = [
            line(me, "list autoscaling horizontalpodautoscalers - - -", 200),
            line(me, "watch autoscaling horizontalpodautoscalers - - -", 200),
            line(me, "get custom.metrics.k8s.io pods rps ns1 *", 200),
            line(me, "update coordination.k8s.io leases - sys lock", 200),
            // Another user's requests do not count.
            line("admin", "delete - pods - ns1 p", 200),
            "not json".to_string(),
        ]
        .join("\n");
        let a = audit(&g, &requests(&log, me));
        assert!(a.passed(), "{}", a.report());
        assert_eq!(a.requests, 4);

        // A 403 from admission after RBAC allowed it (a namespace being deleted) is no denial.
        let mut admitted: serde_json::Value =
            serde_json::from_str(&line(me, "create - events - ns1 e", 403)).unwrap();
        admitted["annotations"] = serde_json::json!({"authorization.k8s.io/decision": "allow"});
        let with_admission = format!("{log}\n{admitted}");
        let a = audit(&g, &requests(&with_admission, me));
        assert!(a.denied.is_empty(), "{}", a.report());
        assert_eq!(
            a.uncovered.len(),
            1,
            "not in this test's rules: {}",
            a.report()
        );

        // A denied request fails, and so does one no rule covers (a lease under another name).
        for extra in [
            line(me, "get - pods - ns1 p", 403),
            line(me, "update coordination.k8s.io leases - sys other", 200),
        ] {
            log.push('\n');
            log.push_str(&extra);
        }
        let a = audit(&g, &requests(&log, me));
        assert!(!a.passed());
        assert_eq!(a.denied.len(), 1);
        assert_eq!(a.uncovered.len(), 1);
        assert!(
            a.report().contains("DENIED get /x/pods/p"),
            "{}",
            a.report()
        );

        // A grant never used fails.
        let one = line(me, "list autoscaling horizontalpodautoscalers - - -", 200);
        let a = audit(&g, &requests(&one, me));
        assert!(!a.passed());
        assert_eq!(a.used.iter().filter(|(_, n)| *n == 0).count(), 3);
        assert!(a.report().contains("UNUSED"), "{}", a.report());

        // Nothing audited is not a pass.
        assert!(!audit(&g, &[]).passed());

        // A conditional grant covers what it grants, used or not; what it does not grant is
        // still uncovered, and the required grants must still all be used.
        let required = grants(
            "kind: ClusterRole\nmetadata: {name: c}\nrules: [{apiGroups: [autoscaling], resources: [horizontalpodautoscalers], verbs: [list]}]",
        )
        .unwrap();
        let conditional = grants(
            "kind: ClusterRole\nmetadata: {name: c}\nrules: [{apiGroups: [\"\"], resources: [pods], verbs: [delete]}]",
        )
        .unwrap();
        let a = audit_with(&required, &conditional, &requests(&one, me));
        assert!(a.passed(), "{}", a.report());
        assert!(
            a.report()
                .contains("unused      0  delete core/pods (conditional)"),
            "{}",
            a.report()
        );
        let deleted = format!("{one}\n{}", line(me, "delete - pods - ns1 p", 200));
        let a = audit_with(&required, &conditional, &requests(&deleted, me));
        assert!(a.passed(), "{}", a.report());
        assert_eq!(a.conditional[0].1, 1);
        let got = format!("{deleted}\n{}", line(me, "get - pods - ns1 p", 200));
        let a = audit_with(&required, &conditional, &requests(&got, me));
        assert!(!a.passed() && a.uncovered.len() == 1, "{}", a.report());
    }

    #[test]
    fn a_watch_still_open_counts_once_from_its_response_started_event() {
        let me = "system:serviceaccount:sys:sa";
        let staged = |id: &str, stage: &str, what: &str| {
            let mut e: serde_json::Value = serde_json::from_str(&line(me, what, 200)).unwrap();
            e["auditID"] = serde_json::json!(id);
            e["stage"] = serde_json::json!(stage);
            e.to_string()
        };
        let watch = "watch autoscaling horizontalpodautoscalers - - -";
        let list = "list autoscaling horizontalpodautoscalers - - -";
        let log = [
            // A watch still open: only its start is logged.
            staged("w1", "ResponseStarted", watch),
            // A watch that ended: start and completion, one request.
            staged("w2", "ResponseStarted", watch),
            staged("w2", "ResponseComplete", watch),
            // An ordinary request, logged once; the stage before a response is not a request.
            staged("l1", "RequestReceived", list),
            staged("l1", "ResponseComplete", list),
        ]
        .join("\n");
        let got = requests(&log, me);
        let verbs: Vec<&str> = got.iter().map(|r| r.verb.as_str()).collect();
        assert_eq!(verbs, ["watch", "watch", "list"]);
    }

    #[test]
    fn the_shipped_manifests_parse_without_wildcard_verbs() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../kind-config/reference/base/rbac.yaml"
        ))
        .unwrap();
        let g = grants(&text).unwrap();
        assert!(g.len() > 10, "{g:?}");
        assert!(g.iter().all(|g| g.verb != "*" && g.group != "*"), "{g:?}");
        // The only resource wildcards are the metric-named APIs.
        for g in g.iter().filter(|g| g.resource.contains('*')) {
            assert!(
                g.group == "custom.metrics.k8s.io" || g.group == "external.metrics.k8s.io",
                "{g}"
            );
        }
    }
}
