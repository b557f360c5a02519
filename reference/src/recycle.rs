//! Reused heap buffers, so that a steady stream of decisions allocates nothing (issue 15), nor
//! the conversion of a reconcile's objects into the core's views (issue 36).
//!
//! The strings and lists a decision returns — status conditions, `currentMetrics`, events, the
//! explanation — are taken from per-thread free lists when one is there, and
//! [`Decision::recycle`](crate::decide::Decision::recycle) gives a finished decision's buffers
//! back. So are the views a reconcile builds from its objects — the pods' views
//! ([`crate::view::pod_views`]) and the metrics' readings ([`crate::metrics_api::readings`]) —
//! and [`give_views`] and [`give_readings`] give them back once decided. A caller that never
//! recycles gets ordinary allocations. What a decision computes never depends on these lists,
//! only where its bytes live; the lists are bounded, so recycling more than is taken cannot grow
//! memory without limit.

use std::cell::RefCell;
use std::fmt::{self, Write};

use k8s_openapi::api::autoscaling::v2::{
    HorizontalPodAutoscalerCondition, MetricIdentifier, MetricStatus, MetricValueStatus,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::outcome::{Event, MetricExplanation};
use crate::view::{MetricReading, MetricValues, PodView, Samples};

/// Strings kept per thread at most.
const MAX_STRINGS: usize = 1024;
/// Lists of each kind kept per thread at most.
const MAX_LISTS: usize = 32;
/// Spare pod views kept per thread at most, besides those in lists of views.
const MAX_VIEWS: usize = 4096;
/// The capacity of a string the free list did not have: longer than any condition message or
/// event of a typical decision, so a recycled string rarely has to grow.
const STRING_CAPACITY: usize = 160;

thread_local! {
    static STRINGS: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// An empty string, reused when one is free.
pub(crate) fn string() -> String {
    STRINGS
        .with_borrow_mut(Vec::pop)
        .unwrap_or_else(|| String::with_capacity(STRING_CAPACITY))
}

/// A copy of `s` in a reused string.
pub(crate) fn text(s: &str) -> String {
    let mut t = string();
    t.push_str(s);
    t
}

/// `format!` into a reused string.
pub(crate) fn format(args: fmt::Arguments<'_>) -> String {
    let mut t = string();
    // Writing to a String cannot fail.
    let _ = t.write_fmt(args);
    t
}

/// Gives a string back.
pub(crate) fn give(mut s: String) {
    if s.capacity() == 0 {
        return;
    }
    s.clear();
    STRINGS.with_borrow_mut(|free| {
        if free.len() < MAX_STRINGS {
            free.push(s);
        }
    });
}

/// Gives an optional string back.
pub(crate) fn give_opt(s: Option<String>) {
    if let Some(s) = s {
        give(s);
    }
}

/// Text that can be written into an existing string: a `&str`, a `String` (given back once
/// copied) or `format_args!(…)`.
pub trait Text {
    /// Replaces `dst`'s content with this text.
    fn assign_to(self, dst: &mut String);
}

impl Text for &str {
    fn assign_to(self, dst: &mut String) {
        dst.clear();
        dst.push_str(self);
    }
}

impl Text for String {
    fn assign_to(self, dst: &mut String) {
        if dst.capacity() >= self.len() {
            dst.clear();
            dst.push_str(&self);
            give(self);
        } else {
            give(std::mem::replace(dst, self));
        }
    }
}

impl Text for fmt::Arguments<'_> {
    fn assign_to(self, dst: &mut String) {
        dst.clear();
        let _ = dst.write_fmt(self);
    }
}

/// Sets `dst` to `text`, reusing its string or a free one.
pub(crate) fn assign(dst: &mut Option<String>, text: impl Text) {
    let s = dst.get_or_insert_with(string);
    text.assign_to(s);
}

/// A free list of lists of one element type.
pub(crate) trait Pooled: Sized + 'static {
    /// Runs `f` on this type's free list.
    fn with_free<R>(f: impl FnOnce(&mut Vec<Vec<Self>>) -> R) -> R;
    /// Gives the element's own buffers back.
    fn give_parts(self);
}

/// An empty list, reused when one is free.
pub(crate) fn list<T: Pooled>() -> Vec<T> {
    T::with_free(Vec::pop).unwrap_or_else(|| Vec::with_capacity(4))
}

/// Gives a list and its elements' buffers back.
pub(crate) fn give_list<T: Pooled>(mut v: Vec<T>) {
    for item in v.drain(..) {
        item.give_parts();
    }
    if v.capacity() == 0 {
        return;
    }
    T::with_free(|free| {
        if free.len() < MAX_LISTS {
            free.push(v);
        }
    });
}

macro_rules! pooled {
    ($t:ty, $free:ident, |$item:ident| $give:block) => {
        thread_local! {
            static $free: RefCell<Vec<Vec<$t>>> = const { RefCell::new(Vec::new()) };
        }
        impl Pooled for $t {
            fn with_free<R>(f: impl FnOnce(&mut Vec<Vec<Self>>) -> R) -> R {
                $free.with_borrow_mut(f)
            }
            fn give_parts(self) {
                let $item = self;
                $give
            }
        }
    };
}

pooled!(HorizontalPodAutoscalerCondition, FREE_CONDITIONS, |c| {
    give(c.type_);
    give(c.status);
    give_opt(c.reason);
    give_opt(c.message);
});

pooled!(MetricStatus, FREE_METRIC_STATUSES, |m| {
    give(m.type_);
    if let Some(r) = m.resource {
        give(r.name);
        give_value(r.current);
    }
    if let Some(c) = m.container_resource {
        give(c.name);
        give(c.container);
        give_value(c.current);
    }
    if let Some(p) = m.pods {
        give_identifier(p.metric);
        give_value(p.current);
    }
    if let Some(o) = m.object {
        give_identifier(o.metric);
        give_value(o.current);
        give(o.described_object.kind);
        give(o.described_object.name);
        give_opt(o.described_object.api_version);
    }
    if let Some(e) = m.external {
        give_identifier(e.metric);
        give_value(e.current);
    }
});

pooled!(Event, FREE_EVENTS, |e| {
    give(e.reason);
    give(e.message);
});

pooled!(MetricExplanation, FREE_EXPLANATIONS, |m| {
    give_opt(m.name);
    give_opt(m.error);
});

pooled!(MetricReading, FREE_READINGS, |r| {
    match r {
        Ok(MetricValues::PerPod { samples, .. }) => give_samples(samples),
        Ok(MetricValues::Object { .. } | MetricValues::External { .. }) => {}
        Err(e) => give(e),
    }
});

thread_local! {
    /// Lists of views given back, views and all, to be refilled.
    static VIEW_LISTS: RefCell<Vec<Vec<PodView>>> = const { RefCell::new(Vec::new()) };
    /// Views a refilled list had no use for, to lengthen another.
    static SPARE_VIEWS: RefCell<Vec<PodView>> = const { RefCell::new(Vec::new()) };
    /// Sample lists given back, to be refilled.
    static SAMPLES: RefCell<Vec<Samples>> = const { RefCell::new(Vec::new()) };
}

/// A list of views given back, to be refilled in place (its views are an earlier reconcile's);
/// empty when none is free.
pub(crate) fn view_list() -> Vec<PodView> {
    VIEW_LISTS.with_borrow_mut(Vec::pop).unwrap_or_default()
}

/// A spare view to refill, when there is one.
pub(crate) fn spare_view() -> Option<PodView> {
    SPARE_VIEWS.with_borrow_mut(Vec::pop)
}

/// Keeps views a list no longer needs (as many as fit) for other lists.
pub(crate) fn spare_views(views: impl Iterator<Item = PodView>) {
    SPARE_VIEWS.with_borrow_mut(|spare| {
        let room = MAX_VIEWS.saturating_sub(spare.len());
        spare.extend(views.take(room));
    });
}

/// A sample list to refill ([`Samples::refill`]).
pub(crate) fn samples() -> Samples {
    SAMPLES.with_borrow_mut(Vec::pop).unwrap_or_default()
}

/// Gives a sample list back.
fn give_samples(samples: Samples) {
    SAMPLES.with_borrow_mut(|free| {
        if free.len() < MAX_LISTS {
            free.push(samples);
        }
    });
}

/// Gives the pod views of a reconcile ([`crate::view::pod_views`], [`crate::view::copied_views`])
/// back, once decided, to be refilled by the next reconcile's on this thread. Dropping them
/// instead is always correct.
pub fn give_views(views: Vec<PodView>) {
    if views.capacity() == 0 {
        return;
    }
    VIEW_LISTS.with_borrow_mut(|free| {
        if free.len() < MAX_LISTS {
            free.push(views);
        }
    });
}

/// Gives the readings of a reconcile ([`crate::metrics_api::readings`]) back, once decided, for
/// the next reconcile's readings on this thread. Dropping them instead is always correct.
pub fn give_readings(readings: Vec<MetricReading>) {
    give_list(readings);
}

fn give_value(v: MetricValueStatus) {
    give_opt(v.average_value.map(|q| q.0));
    give_opt(v.value.map(|q| q.0));
}

fn give_identifier(m: MetricIdentifier) {
    give(m.name);
}

/// A quantity in a reused string, written by `write`.
pub(crate) fn quantity(write: impl FnOnce(&mut String)) -> Quantity {
    let mut s = string();
    write(&mut s);
    Quantity(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_string_is_reused_empty() {
        let mut s = text("a long enough message");
        s.push_str(" and more");
        let at = s.as_ptr();
        give(s);
        let t = string();
        assert!(t.is_empty());
        assert_eq!(t.as_ptr(), at, "the given string comes back");
        assert_eq!(format(format_args!("{}-{}", 1, "x")), "1-x");
    }

    #[test]
    fn assign_reuses_the_destination() {
        let mut dst = Some(text("old"));
        assign(&mut dst, "new");
        assert_eq!(dst.as_deref(), Some("new"));
        assign(&mut dst, format_args!("n={}", 3));
        assert_eq!(dst.as_deref(), Some("n=3"));
        assign(&mut dst, String::from("owned"));
        assert_eq!(dst.as_deref(), Some("owned"));
        let mut none = None;
        assign(&mut none, "set");
        assert_eq!(none.as_deref(), Some("set"));
    }

    #[test]
    fn a_given_list_comes_back_empty_and_its_strings_are_freed() {
        let mut v: Vec<Event> = list();
        v.push(Event {
            type_: crate::outcome::EventType::Normal,
            reason: text("R"),
            message: text("M"),
        });
        give_list(v);
        let w: Vec<Event> = list();
        assert!(w.is_empty());
        assert!(w.capacity() > 0);
    }
}
