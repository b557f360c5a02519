//! The correlator's three steps on hand-made events.

use k8s_openapi::api::core::v1::{EventSource, ObjectReference};

use super::*;

const T0: Time = Time::from_secs(1_700_000_000);

fn at(secs: i64) -> Time {
    Time::from_micros(T0.as_micros() + secs * 1_000_000)
}

/// A new Event about HPA `object`, as the recorder makes it.
fn event(object: &str, reason: &str, message: &str, now: Time) -> KubeEvent {
    KubeEvent {
        metadata: ObjectMeta {
            name: Some(format!("{object}.{:x}", now.as_micros() * 1000)),
            namespace: Some("default".into()),
            ..ObjectMeta::default()
        },
        involved_object: ObjectReference {
            api_version: Some("autoscaling/v2".into()),
            kind: Some("HorizontalPodAutoscaler".into()),
            name: Some(object.into()),
            namespace: Some("default".into()),
            uid: Some(format!("uid-{object}")),
            ..ObjectReference::default()
        },
        reason: Some(reason.into()),
        message: Some(message.into()),
        type_: Some("Normal".into()),
        source: Some(EventSource {
            component: Some("horizontal-pod-autoscaler".into()),
            host: None,
        }),
        first_timestamp: Some(kube_time(now)),
        last_timestamp: Some(kube_time(now)),
        count: Some(1),
        reporting_component: Some("horizontal-pod-autoscaler".into()),
        reporting_instance: Some(String::new()),
        ..KubeEvent::default()
    }
}

fn correlate(c: &mut Correlator, e: KubeEvent, now: Time) -> Correlated {
    c.correlate(e, now, |t| format!("combined.{:x}", t.as_micros() * 1000))
}

fn name(e: &KubeEvent) -> &str {
    e.metadata.name.as_deref().unwrap_or_default()
}

#[test]
fn a_repeat_patches_the_first_events_count_and_last_timestamp() {
    let mut c = Correlator::default();
    let first = event(
        "web",
        "SuccessfulRescale",
        "New size: 4; reason: cpu",
        at(0),
    );
    let Correlated::Create(created) = correlate(&mut c, first.clone(), at(0)) else {
        panic!("the first occurrence is created");
    };
    assert_eq!(created, first);
    let again = event(
        "web",
        "SuccessfulRescale",
        "New size: 4; reason: cpu",
        at(30),
    );
    let Correlated::Patch { event, patch } = correlate(&mut c, again, at(30)) else {
        panic!("a repeat is a patch");
    };
    assert_eq!(name(&event), name(&first), "the same Event");
    assert_eq!(event.count, Some(2));
    assert_eq!(event.first_timestamp, first.first_timestamp);
    assert_eq!(event.last_timestamp, Some(kube_time(at(30))));
    assert_eq!(
        patch,
        json!({
            "count": 2,
            "lastTimestamp": kube_time(at(30)),
            "message": "New size: 4; reason: cpu",
        })
    );
    let Correlated::Patch { event, .. } = correlate(
        &mut c,
        event_at("web", "SuccessfulRescale", "New size: 4; reason: cpu", 45),
        at(45),
    ) else {
        panic!("a third occurrence is a patch too");
    };
    assert_eq!(event.count, Some(3));
}

fn event_at(object: &str, reason: &str, message: &str, secs: i64) -> KubeEvent {
    event(object, reason, message, at(secs))
}

#[test]
fn another_message_type_reason_or_object_is_another_event() {
    let mut c = Correlator::default();
    let base = event_at("web", "SuccessfulRescale", "New size: 4", 0);
    assert!(matches!(
        correlate(&mut c, base, at(0)),
        Correlated::Create(_)
    ));
    let others = [
        event_at("web", "SuccessfulRescale", "New size: 6", 1),
        event_at("web", "FailedRescale", "New size: 4", 2),
        event_at("api", "SuccessfulRescale", "New size: 4", 3),
        {
            let mut e = event_at("web", "SuccessfulRescale", "New size: 4", 4);
            e.type_ = Some("Warning".into());
            e
        },
    ];
    for (i, e) in others.into_iter().enumerate() {
        let now = at(i as i64 + 1);
        assert!(
            matches!(correlate(&mut c, e, now), Correlated::Create(_)),
            "event {i}"
        );
    }
}

#[test]
fn ten_messages_of_one_reason_are_combined() {
    let mut c = Correlator::default();
    for i in 0..9 {
        let e = event_at("web", "SuccessfulRescale", &format!("New size: {i}"), i);
        assert!(
            matches!(correlate(&mut c, e, at(i)), Correlated::Create(_)),
            "{i}"
        );
    }
    // The tenth distinct message within ten minutes: a new, combined Event.
    let Correlated::Create(combined) = correlate(
        &mut c,
        event_at("web", "SuccessfulRescale", "New size: 9", 9),
        at(9),
    ) else {
        panic!("the tenth is a new combined event");
    };
    assert_eq!(
        combined.message.as_deref(),
        Some("(combined from similar events): New size: 9")
    );
    assert_eq!(
        name(&combined),
        format!("combined.{:x}", at(9).as_micros() * 1000)
    );
    assert_eq!(combined.count, Some(1));
    assert_eq!(combined.reason.as_deref(), Some("SuccessfulRescale"));
    // The next one updates the combined Event, whatever its message.
    let Correlated::Patch { event, patch } = correlate(
        &mut c,
        event_at("web", "SuccessfulRescale", "New size: 10", 20),
        at(20),
    ) else {
        panic!("the eleventh updates the combined event");
    };
    assert_eq!(name(&event), name(&combined));
    assert_eq!(patch["count"], json!(2));
    assert_eq!(
        patch["message"],
        json!("(combined from similar events): New size: 10")
    );
}

#[test]
fn a_gap_of_more_than_ten_minutes_starts_a_new_group() {
    let mut c = Correlator::default();
    for i in 0..9 {
        let e = event_at("web", "SuccessfulRescale", &format!("New size: {i}"), i);
        correlate(&mut c, e, at(i));
    }
    let late = event_at("web", "SuccessfulRescale", "New size: 9", 8 + 601);
    let Correlated::Create(e) = correlate(&mut c, late, at(8 + 601)) else {
        panic!("created");
    };
    assert_eq!(e.message.as_deref(), Some("New size: 9"), "not combined");
}

#[test]
fn an_object_gets_25_events_then_one_per_five_minutes() {
    let mut c = Correlator::default();
    let mut written = 0;
    for i in 0..40 {
        // Alternate two messages so aggregation does not kick in: every one is a repeat.
        let e = event_at("web", "FailedGetResourceMetric", &format!("m{}", i % 2), 0);
        if !matches!(correlate(&mut c, e, at(0)), Correlated::Skip) {
            written += 1;
        }
    }
    assert_eq!(written, 25);
    let e = event_at("web", "FailedGetResourceMetric", "m0", 299);
    assert_eq!(correlate(&mut c, e, at(299)), Correlated::Skip);
    let e = event_at("web", "FailedGetResourceMetric", "m0", 300);
    let Correlated::Patch { event, .. } = correlate(&mut c, e, at(300)) else {
        panic!("a token came back after five minutes");
    };
    // Dropped repeats were still counted (client-go counts before it filters).
    assert_eq!(event.count, Some(22));
    // Another object has its own bucket.
    let e = event_at("api", "FailedGetResourceMetric", "m0", 300);
    assert!(matches!(
        correlate(&mut c, e, at(300)),
        Correlated::Create(_)
    ));
}

#[test]
fn the_caches_are_bounded() {
    let mut c = Correlator::new(CorrelatorOptions {
        cache_size: 3,
        ..CorrelatorOptions::default()
    });
    for i in 0..10 {
        let e = event_at(&format!("hpa-{i}"), "SuccessfulRescale", "New size: 2", i);
        correlate(&mut c, e, at(i));
    }
    assert_eq!(c.remembered(), 3);
    // The oldest was forgotten: its repeat is a new Event.
    let e = event_at("hpa-0", "SuccessfulRescale", "New size: 2", 20);
    assert!(matches!(
        correlate(&mut c, e, at(20)),
        Correlated::Create(_)
    ));
    // The most recent was kept.
    let e = event_at("hpa-9", "SuccessfulRescale", "New size: 2", 21);
    assert!(matches!(
        correlate(&mut c, e, at(21)),
        Correlated::Patch { .. }
    ));
}

#[test]
fn what_the_server_returned_is_remembered() {
    let mut c = Correlator::default();
    let e = event_at("web", "SuccessfulRescale", "New size: 4", 0);
    correlate(&mut c, e.clone(), at(0));
    // The server says the Event already counts 7 (another writer, or a lost response).
    let mut server = e;
    server.count = Some(7);
    c.written(&server);
    let Correlated::Patch { event, .. } = correlate(
        &mut c,
        event_at("web", "SuccessfulRescale", "New size: 4", 10),
        at(10),
    ) else {
        panic!("a patch");
    };
    assert_eq!(event.count, Some(8));
}

#[test]
fn every_event_options_patch_repeats_but_neither_combine_nor_drop() {
    let mut c = Correlator::new(CorrelatorOptions::every_event());
    for i in 0..40 {
        let e = event_at("web", "SuccessfulRescale", &format!("New size: {i}"), 0);
        let Correlated::Create(e) = correlate(&mut c, e, at(0)) else {
            panic!("event {i} is created as it is");
        };
        assert_eq!(e.message, Some(format!("New size: {i}")));
    }
    let e = event_at("web", "SuccessfulRescale", "New size: 0", 1);
    assert!(matches!(
        correlate(&mut c, e, at(1)),
        Correlated::Patch { .. }
    ));
}
