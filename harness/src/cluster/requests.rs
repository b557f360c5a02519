//! The API server's request counters (`apiserver_request_total` on its `/metrics`), read before
//! and after a window: what the cluster's clients cost the API server, per second, by verb and
//! resource. The scale benchmark reads them around each controller's window (the load is steady
//! and the same in both, so the difference between the two windows is the controllers').

use std::collections::BTreeMap;

use kube::Client;

/// Requests by `"VERB resource[/subresource][.group]"` (all response codes together).
pub type Counts = BTreeMap<String, f64>;

/// The counters now.
pub async fn read(client: &Client) -> Result<Counts, String> {
    let req = http::Request::get("/metrics")
        .body(Vec::new())
        .map_err(|e| e.to_string())?;
    let text = client
        .request_text(req)
        .await
        .map_err(|e| format!("the API server's /metrics: {e}"))?;
    Ok(parse(&text))
}

/// `apiserver_request_total` samples of a Prometheus text exposition, summed over the labels
/// other than verb, group, resource and subresource.
pub fn parse(text: &str) -> Counts {
    let mut counts = Counts::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("apiserver_request_total{") else {
            continue;
        };
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let Ok(value) = value.trim().parse::<f64>() else {
            continue;
        };
        let labels = labels_of(labels);
        let get = |k: &str| labels.get(k).map(String::as_str).unwrap_or("");
        let mut key = format!("{} {}", get("verb"), get("resource"));
        if !get("subresource").is_empty() {
            key.push('/');
            key.push_str(get("subresource"));
        }
        if !get("group").is_empty() {
            key.push('.');
            key.push_str(get("group"));
        }
        *counts.entry(key).or_default() += value;
    }
    counts
}

/// `k="v",k2="v2"` with Prometheus's escapes (`\\`, `\"`, `\n`) in the values.
fn labels_of(text: &str) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    let mut chars = text.chars().peekable();
    loop {
        let name: String = chars
            .by_ref()
            .skip_while(|c| *c == ',' || c.is_whitespace())
            .take_while(|c| *c != '=')
            .collect();
        if name.is_empty() || chars.next() != Some('"') {
            return labels;
        }
        let mut value = String::new();
        while let Some(c) = chars.next() {
            match c {
                '"' => break,
                '\\' => match chars.next() {
                    Some('n') => value.push('\n'),
                    Some(other) => value.push(other),
                    None => break,
                },
                c => value.push(c),
            }
        }
        labels.insert(name, value);
    }
}

/// Requests per second between two readings `seconds` apart (keys that did not grow are left
/// out; a counter that went down — the API server restarted — counts from zero).
pub fn rates(before: &Counts, after: &Counts, seconds: f64) -> Counts {
    after
        .iter()
        .filter_map(|(k, a)| {
            let b = before.get(k).copied().unwrap_or(0.0);
            let grew = if *a >= b { a - b } else { *a };
            (grew > 0.0 && seconds > 0.0).then(|| (k.clone(), grew / seconds))
        })
        .collect()
}

/// Per-second totals by verb.
pub fn by_verb(rates: &Counts) -> Counts {
    let mut verbs = Counts::new();
    for (k, r) in rates {
        let verb = k.split(' ').next().unwrap_or("");
        *verbs.entry(verb.to_string()).or_default() += r;
    }
    verbs
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXPOSITION: &str = r#"# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="scale",verb="GET",version="v1"} 40
apiserver_request_total{code="404",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="scale",verb="GET",version="v1"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="cluster",subresource="",verb="LIST",version="v1"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="custom.metrics.k8s.io",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1beta2"} 1.5e+03
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="odd \"name\", with comma",scope="cluster",subresource="",verb="WATCH",version="v1"} 1
apiserver_request_total_other{verb="GET"} 99
apiserver_request_duration_seconds_bucket{verb="GET",le="0.1"} 7
"#;

    #[test]
    fn counters_are_summed_by_verb_resource_and_group() {
        let c = parse(EXPOSITION);
        assert_eq!(c.get("GET deployments/scale.apps"), Some(&42.0));
        assert_eq!(c.get("LIST pods"), Some(&3.0));
        assert_eq!(c.get("LIST pods.custom.metrics.k8s.io"), Some(&1500.0));
        assert_eq!(c.get("WATCH odd \"name\", with comma"), Some(&1.0));
        assert_eq!(c.len(), 4, "{c:?}");
    }

    #[test]
    fn rates_are_the_growth_per_second() {
        let before = parse(EXPOSITION);
        let mut after = before.clone();
        *after.get_mut("GET deployments/scale.apps").unwrap() += 120.0;
        *after.get_mut("LIST pods").unwrap() = 6.0;
        after.insert(
            "UPDATE horizontalpodautoscalers/status.autoscaling".into(),
            12.0,
        );
        let r = rates(&before, &after, 120.0);
        assert_eq!(r.get("GET deployments/scale.apps"), Some(&1.0));
        assert_eq!(r.get("LIST pods"), Some(&0.025));
        assert_eq!(
            r.get("UPDATE horizontalpodautoscalers/status.autoscaling"),
            Some(&0.1)
        );
        assert!(!r.contains_key("WATCH odd \"name\", with comma"));
        // A restarted API server's counters start again from zero.
        let restarted: Counts = [("LIST pods".to_string(), 2.0)].into();
        assert_eq!(rates(&before, &restarted, 2.0).get("LIST pods"), Some(&1.0));
        let verbs = by_verb(&r);
        assert_eq!(verbs.get("GET"), Some(&1.0));
        assert_eq!(verbs.get("UPDATE"), Some(&0.1));
    }
}
