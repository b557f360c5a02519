//! Bad input is reported, never an abort: numbers that would make a run huge or wrap, settings
//! that make no sense, and misspelt fields anywhere (also inside `hpaPatch`) are errors with the
//! file, line and column, naming the field and its range. Each case edits a copy of a corpus case.

use std::sync::atomic::{AtomicUsize, Ordering};

use rstest::rstest;

use hpa_conformance_tests::{root, run};

#[rstest]
#[case::replicas_beyond_the_world(
    "  replicas: 80\n",
    "  replicas: 10001\n",
    "replicas: 10001",
    "workload.replicas must be from 0 to 10000 (the most pods the simulated world holds), not 10001"
)]
#[case::replicas_above_int32(
    "  replicas: 80\n",
    "  replicas: 3000000000\n",
    "replicas: 3000000000",
    "workload.replicas must be an integer from -2147483648 to 2147483647, not 3000000000"
)]
#[case::set_replicas_beyond_the_world(
    "      total: 5000m\n",
    "      total: 5000m\n    setReplicas: 1000000\n",
    "setReplicas",
    "timeline[0].setReplicas must be from 0 to 10000 (the most pods the simulated world holds), not 1000000"
)]
#[case::negative_request(
    "          cpu: \"1\"\n",
    "          cpu: \"-1\"\n",
    "cpu: \"-1\"",
    "workload.pod.containers[0].requests.cpu must not be negative (it is -1)"
)]
#[case::duration_near_two_to_the_32(
    "durationSeconds: 1200\n",
    "durationSeconds: 4294967295\n",
    "durationSeconds",
    "durationSeconds must be at most 1000000000 seconds (about 31 years of virtual time), not 4294967295"
)]
#[case::expectation_near_two_to_the_32_without_a_duration("durationSeconds: 1200\n", "", "", "")]
#[case::too_many_ticks(
    "durationSeconds: 1200\n",
    "durationSeconds: 1500000\n",
    "durationSeconds",
    "the run would have 100001 ticks (1500000 s every 15 s), more than 100000"
)]
#[case::negative_scale_up_limit_factor(
    "hpa:\n",
    "settings: {scaleUpLimitFactor: -1}\nhpa:\n",
    "settings:",
    "settings.scaleUpLimitFactor must be a non-negative number, not -1"
)]
#[case::negative_scale_up_limit_minimum(
    "hpa:\n",
    "settings: {scaleUpLimitMinimum: -4}\nhpa:\n",
    "settings:",
    "settings.scaleUpLimitMinimum must be a non-negative number, not -4"
)]
#[case::negative_load_total(
    "      total: 5000m\n",
    "      total: -5000m\n",
    "total: -5000m",
    "timeline[0].load.total must not be negative (it is -5000m)"
)]
#[case::misspelt_field_in_an_hpa_patch(
    "durationSeconds: 1200\n",
    "  - at: 600\n    hpaPatch: {spec: {minReplica: 2}}\ndurationSeconds: 1200\n",
    "hpaPatch",
    "unknown field `minReplica`"
)]
#[case::pod_start_time_that_overflows(
    "durationSeconds: 1200\n",
    "  - at: 600\n    pods: {all: true, startedAt: -9223372036854775000}\ndurationSeconds: 1200\n",
    "startedAt",
    "timeline[1].pods.startedAt must be at least -1000000000 seconds"
)]
#[case::memory_time_that_overflows(
    "hpa:\n",
    "memory: {recommendations: [{replicas: 80, at: 9223372036854775807}]}\nhpa:\n",
    "memory:",
    "memory.recommendations[0].at must be at most 1000000000 seconds"
)]
#[case::condition_both_present_and_absent(
    "    - t: 285\n      replicas: 80\n",
    "    - t: 285\n      replicas: 80\n      conditions: [{type: AbleToScale, status: \"True\"}]\n      absentConditions: [AbleToScale]\n",
    "absentConditions",
    "expect.at[1].absentConditions[0]: AbleToScale is expected both present (in conditions) and absent"
)]
#[case::exact_conditions_without_a_list(
    "    - t: 285\n      replicas: 80\n",
    "    - t: 285\n      replicas: 80\n      exactConditions: true\n",
    "exactConditions",
    "expect.at[1].exactConditions needs the list of conditions"
)]
#[case::condition_message_exact_and_contains(
    "    - t: 285\n      replicas: 80\n",
    "    - t: 285\n      replicas: 80\n      conditions: [{type: AbleToScale, status: \"True\", message: a, messageContains: b}]\n",
    "messageContains",
    "expect.at[1].conditions[0] gives message (exact) and messageContains: give one"
)]
#[case::event_message_exact_and_contains(
    "    - t: 285\n      replicas: 80\n",
    "    - t: 285\n      replicas: 80\n      events: [{reason: SuccessfulRescale, message: a, messageContains: b}]\n",
    "messageContains",
    "expect.at[1].events[0] gives message (exact) and messageContains: give one"
)]
#[case::update_failures_without_an_update_error(
    "      total: 5000m\n",
    "      total: 5000m\n    scaleApi: {updateFailures: 1}\n",
    "scaleApi",
    "timeline[0].scaleApi.updateFailures counts failures of updateError: it needs updateError and at least 1, not 1"
)]
#[case::no_source_and_no_reason(
    "source:\n  seed: 000_10971fd77cefe0ad.txt\n  section: Scaling Policies\n",
    "source: {}\n",
    "source:",
    "source needs a seed document, an upstream test, or a reason why neither applies"
)]
#[case::a_reason_beside_a_seed(
    "  section: Scaling Policies\n",
    "  section: Scaling Policies\n  reason: because\n",
    "reason:",
    "source.reason is for a case with neither a seed nor an upstream source"
)]
#[case::stray_sample_with_a_workload_pod_name(
    "      total: 5000m\n",
    "      total: 5000m\n    straySamples:\n      - {metric: cpu, pod: web-0003, value: 1}\n",
    "web-0003",
    "\"web-0003\" is a name the workload's own pods take (web-0000, …); a stray sample needs another"
)]
#[case::pods_without_ready_condition_and_ready(
    "      total: 5000m\n",
    "      total: 5000m\n    pods: {all: true, readyCondition: false, ready: true}\n",
    "readyCondition",
    "a pod without a Ready condition has no Ready status: drop `ready` or `readySince`"
)]
#[case::pod_requests_for_an_unknown_container(
    "      total: 5000m\n",
    "      total: 5000m\n    pods: {ordinals: [0], requests: {apps: {cpu: 2}}}\n",
    "requests: {apps",
    "requests for container \"apps\", which is not in the pod template (containers, sidecars and init containers: app)"
)]
#[case::pod_requests_unparsable(
    "      total: 5000m\n",
    "      total: 5000m\n    pods: {ordinals: [0], requests: {app: {cpu: 2x}}}\n",
    "requests: {app",
    "invalid quantity \"2x\""
)]
#[case::rollout_that_can_never_start(
    "      total: 5000m\n",
    "      total: 5000m\n    rollout: {maxSurge: 0, maxUnavailable: '0%'}\n",
    "rollout:",
    "maxUnavailable may not be 0 when maxSurge is 0"
)]
#[case::rollout_percentage_out_of_range(
    "      total: 5000m\n",
    "      total: 5000m\n    rollout: {maxSurge: 150%}\n",
    "rollout:",
    "maxSurge is a count or a percentage from \"0%\" to \"100%\", not \"150%\""
)]
#[case::rollout_requests_a_resource_the_template_lacks(
    "      total: 5000m\n",
    "      total: 5000m\n    rollout: {requests: {app: {memory: 1Gi}}}\n",
    "rollout:",
    "the template's container \"app\" requests no memory; a rollout changes requests the old template has"
)]
#[case::memory_expectation_out_of_range(
    "    - t: 285\n",
    "    - t: 285\n      memory: {recommendations: [{replicas: 80, at: 99999999999}]}\n",
    "memory:",
    "expect.at[1].memory.recommendations[0].at"
)]
#[case::other_hpa_with_a_selector_that_does_not_parse(
    "timeline:\n",
    "otherHpas:\n- {name: web-2, selector: 'app in (web'}\ntimeline:\n",
    "web-2",
    "not a label selector (the other HPA could never register it)"
)]
#[case::other_hpa_named_as_the_hpa(
    "timeline:\n",
    "otherHpas:\n- {name: web, selector: app=web}\ntimeline:\n",
    "{name: web, selector",
    "another HPA needs a name of its own"
)]
#[case::other_hpa_listed_twice(
    "timeline:\n",
    "otherHpas:\n- {name: web-2, selector: app=web}\n- {name: web-2, selector: app=db}\ntimeline:\n",
    "app=db",
    "HPA \"web-2\" is listed twice"
)]
#[case::as_written_on_a_resource_load(
    "      total: 5000m\n",
    "      total: 5000m\n      asWritten: true\n",
    "asWritten: true",
    "asWritten is for the value of an Object metric or the value or series of an External one, not a Resource metric's load"
)]
#[case::hpa_alongside_named_as_the_hpa(
    "timeline:\n",
    "alongside:\n- hpa: {apiVersion: autoscaling/v2, kind: HorizontalPodAutoscaler, metadata: {name: web}, spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: db}, maxReplicas: 5}}\n  workload: {replicas: 1, pod: {containers: [{name: app, requests: {cpu: 500m}}]}}\ntimeline:\n",
    "metadata: {name: web}",
    "HPA \"web\" is in the case twice"
)]
#[case::hpa_alongside_scaling_the_same_workload(
    "timeline:\n",
    "alongside:\n- hpa: {apiVersion: autoscaling/v2, kind: HorizontalPodAutoscaler, metadata: {name: db}, spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}, maxReplicas: 5}}\n  workload: {replicas: 1, pod: {containers: [{name: app, requests: {cpu: 500m}}]}}\ntimeline:\n",
    "metadata: {name: db}",
    "scale target \"web\" is in the case twice"
)]
#[case::bad_quantity_in_the_load_of_an_hpa_alongside(
    "timeline:\n",
    "alongside:\n- hpa: {apiVersion: autoscaling/v2, kind: HorizontalPodAutoscaler, metadata: {name: db}, spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: db}, maxReplicas: 5}}\n  workload: {replicas: 1, pod: {containers: [{name: app, requests: {cpu: 500m}}]}}\n  timeline:\n  - at: 0\n    load: {metric: cpu, total: 5x}\ntimeline:\n",
    "total: 5x",
    "invalid quantity \"5x\""
)]
#[case::hpa_alongside_rejected_by_validation(
    "timeline:\n",
    "alongside:\n- workload: {replicas: 1, pod: {containers: [{name: app, requests: {cpu: 500m}}]}}\n  hpa:\n    apiVersion: autoscaling/v2\n    kind: HorizontalPodAutoscaler\n    metadata: {name: db}\n    spec:\n      scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: db}\n      maxReplicas: 0\ntimeline:\n",
    "maxReplicas: 0",
    "HPA rejected by API validation"
)]
fn bad_numbers_are_bad_input_at_their_position(
    #[case] from: &str,
    #[case] to: &str,
    #[case] marker: &str,
    #[case] reason: &str,
) {
    let original =
        std::fs::read_to_string(root().join("cases/behavior/policy-walkdown.yaml")).expect("case");
    let (text, marker, reason) = if to.is_empty() {
        // An expectation at t = 2^32 − 1 (a multiple of 15) and no duration: the run's end,
        // one sync period later, would wrap a u32.
        let text =
            original
                .replacen(from, "", 1)
                .replacen("    - t: 285\n", "    - t: 4294967295\n", 1);
        (
            text,
            "t: 4294967295",
            "expect.at[1].t must be at most 1000000000 seconds (about 31 years of virtual time), not 4294967295",
        )
    } else {
        (original.replacen(from, to, 1), marker, reason)
    };
    assert_ne!(text, original, "the edit applies");
    let line = 1 + text
        .lines()
        .position(|l| l.contains(marker))
        .expect("marker line");
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "hpa-bad-input-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("case.yaml");
    std::fs::write(&file, &text).expect("write");
    let file = file.display().to_string();
    let (code, out, err) = run(&["run", &file, "--format", "json"]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, 2, "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    let prefix = format!("{file}:{line}:");
    assert!(
        lines[0].starts_with(&prefix),
        "{:?} should start with {prefix:?}",
        lines[0]
    );
    assert!(
        lines[0].contains(reason),
        "{:?} should say {reason:?}",
        lines[0]
    );
    let doc: serde_json::Value = serde_json::from_str(&out).expect("a JSON report");
    assert_eq!(doc["summary"]["bad_input"], 1);
}
