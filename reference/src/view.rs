//! What the decision core is given at one instant: the target's scale, its pods and what the
//! metrics APIs answered. These are lean views of the Kubernetes objects (the controller converts
//! `Pod`s and API responses into them), so the core stays free of IO and fast on large pod lists.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Pod, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::quantity::milli_value;
use crate::recycle;
use crate::time::{Time, core_time};

/// The target's scale subresource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScaleView {
    /// `spec.replicas`: what the HPA treats as the current replica count.
    pub spec_replicas: i32,
    /// `status.replicas`: used by per-pod Object and External metrics.
    pub status_replicas: i32,
    /// `status.selector`, the label selector of the target's pods (`None` or empty: missing).
    pub selector: Option<String>,
}

/// A pod's phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PodPhase {
    /// Not yet running.
    Pending,
    /// Running.
    Running,
    /// All containers exited successfully.
    Succeeded,
    /// Failed.
    Failed,
    /// Unknown.
    Unknown,
}

/// A condition's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConditionStatus {
    /// `True`.
    True,
    /// `False`.
    False,
    /// `Unknown`.
    Unknown,
}

impl ConditionStatus {
    /// The Kubernetes spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ConditionStatus::True => "True",
            ConditionStatus::False => "False",
            ConditionStatus::Unknown => "Unknown",
        }
    }
}

/// A pod's `Ready` condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadyCondition {
    /// Its status.
    pub status: ConditionStatus,
    /// `lastTransitionTime`; `None` is Go's zero time.
    pub last_transition: Option<Time>,
}

/// The resource requests of one container: `(resource name, milli-value)` pairs.
#[derive(Debug, PartialEq, Eq, Default)]
pub struct ContainerRequests {
    /// The container's name.
    pub name: String,
    /// Its requests, e.g. `("cpu", 500)`.
    pub requests: Vec<(String, i64)>,
}

impl Clone for ContainerRequests {
    fn clone(&self) -> Self {
        ContainerRequests {
            name: self.name.clone(),
            requests: self.requests.clone(),
        }
    }

    /// The same, in `self`'s buffers.
    fn clone_from(&mut self, source: &Self) {
        set_text(&mut self.name, &source.name);
        set_requests(
            &mut self.requests,
            source.requests.iter().map(|(r, v)| (r.as_str(), *v)),
        );
    }
}

impl ContainerRequests {
    /// The request for `resource`, if set.
    pub fn get(&self, resource: &str) -> Option<i64> {
        self.requests
            .iter()
            .find(|(r, _)| same_name(r, resource))
            .map(|(_, v)| *v)
    }
}

/// The byte-wise order of two names, as `str::cmp` gives it, compared eight bytes at a time in
/// line: pod, container and resource names are short, and a `memcmp` call per pod and metric was
/// an eighth of a decision's instructions.
#[inline]
pub fn name_order(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() == b.len() {
        return same_length_order(a, b);
    }
    let n = a.len().min(b.len());
    let mut i = match whole_words(a, b, n) {
        Ok(i) => i,
        Err(order) => return order,
    };
    while i < n {
        if a[i] != b[i] {
            return a[i].cmp(&b[i]);
        }
        i += 1;
    }
    a.len().cmp(&b.len())
}

/// The first `n` bytes of `a` and `b` compared a word at a time: the order of the first word that
/// differs, else where the whole words end.
#[inline]
fn whole_words(a: &[u8], b: &[u8], n: usize) -> Result<usize, Ordering> {
    let mut i = 0;
    while i + 8 <= n {
        let (p, q) = (word(&a[i..i + 8]), word(&b[i..i + 8]));
        if p != q {
            return Err(p.cmp(&q));
        }
        i += 8;
    }
    Ok(i)
}

/// [`name_order`] of two names of one length (a sample looked up by its own pod's name, a label
/// or resource name found): the tail shorter than a word is read as one more word, or two half
/// words, each overlapping what was already found equal — so the first byte that differs still
/// decides — and a name of 1 to 3 bytes as one half word, instead of a byte at a time.
#[inline]
fn same_length_order(a: &[u8], b: &[u8]) -> Ordering {
    let n = a.len();
    if n >= 8 {
        let i = match whole_words(a, b, n) {
            Ok(i) => i,
            Err(order) => return order,
        };
        if i == n {
            return Ordering::Equal;
        }
        return word(&a[n - 8..]).cmp(&word(&b[n - 8..]));
    }
    if n >= 4 {
        let (p, q) = (half_word(&a[..4]), half_word(&b[..4]));
        if p != q {
            return p.cmp(&q);
        }
        return half_word(&a[n - 4..]).cmp(&half_word(&b[n - 4..]));
    }
    short_word(a).cmp(&short_word(b))
}

/// Whether two names are the same, as `==` says, read as [`name_order`] reads names of one
/// length but in line wherever it is called: a resource, container, label, window or pod name
/// looked up among a few, where those passed mostly differ in length and cost a comparison of
/// two lengths.
#[inline(always)]
pub fn same_name(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n >= 8 {
        return match whole_words(a, b, n) {
            Ok(i) => i == n || word(&a[n - 8..]) == word(&b[n - 8..]),
            Err(_) => false,
        };
    }
    if n >= 4 {
        return half_word(&a[..4]) == half_word(&b[..4])
            && half_word(&a[n - 4..]) == half_word(&b[n - 4..]);
    }
    short_word(a) == short_word(b)
}

/// A name of 0 to 3 bytes as a big-endian word, zero bytes after it: of two names of one length
/// such words order as the names do.
#[inline(always)]
fn short_word(x: &[u8]) -> u32 {
    match *x {
        [] => 0,
        [p] => u32::from(p) << 24,
        [p, q] => (u32::from(p) << 24) | (u32::from(q) << 16),
        [p, q, r, ..] => (u32::from(p) << 24) | (u32::from(q) << 16) | (u32::from(r) << 8),
    }
}

/// Four bytes as a big-endian word.
#[inline(always)]
fn half_word(chunk: &[u8]) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(chunk);
    u32::from_be_bytes(w)
}

/// Eight bytes as a big-endian word, so that words order as their bytes do.
#[inline(always)]
fn word(chunk: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(chunk);
    u64::from_be_bytes(w)
}

/// One pod of the target, as the HPA sees it.
#[derive(Debug, PartialEq, Eq)]
pub struct PodView {
    /// `metadata.name`.
    pub name: String,
    /// `status.phase`.
    pub phase: PodPhase,
    /// The `Ready` condition, if present.
    pub ready: Option<ReadyCondition>,
    /// `status.startTime`, if set.
    pub start_time: Option<Time>,
    /// `metadata.deletionTimestamp` is set.
    pub deleted: bool,
    /// `spec.containers` with their requests.
    pub containers: Vec<ContainerRequests>,
    /// `spec.initContainers` with `restartPolicy: Always` (sidecars); their requests count.
    pub sidecars: Vec<ContainerRequests>,
    /// Pod-level `spec.resources.requests`, if set (used with the PodLevelResources gate).
    pub pod_requests: Option<Vec<(String, i64)>>,
}

/// One pod's sample from a metrics API (upstream's `metricsclient.PodMetric`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PodMetric {
    /// The value, in milli-units.
    pub value: i64,
    /// When it was sampled.
    pub timestamp: Time,
    /// The sampling window.
    pub window: Duration,
}

/// One metric's per-pod samples, one per name, in ascending byte order of the names (upstream's
/// `PodMetricsInfo`, a map by pod name). A sorted vector rather than a map: the decision walks it
/// in step with the pods, and a slice step costs a few instructions where a `BTreeMap` step cost
/// about forty, per pod and metric. Built from pairs in any order; of several samples of one name,
/// the last wins, as with a map's inserts. [`Samples::refill`] writes new samples over the old in
/// place (and keeps the names of those it drops), so a list given back ([`crate::recycle`]) takes
/// a response's samples without allocating.
#[derive(Default)]
pub struct Samples {
    /// The samples, in ascending name order.
    entries: Vec<(String, PodMetric)>,
    /// Names of samples a refill dropped, to be written over by a later one's.
    spare: Vec<String>,
}

impl Samples {
    /// No samples.
    pub const fn new() -> Self {
        Samples {
            entries: Vec::new(),
            spare: Vec::new(),
        }
    }

    /// Adds or replaces the sample of `name`; returns the one it replaced.
    pub fn insert(&mut self, name: String, sample: PodMetric) -> Option<PodMetric> {
        match self.position(&name) {
            Ok(at) => Some(std::mem::replace(&mut self.entries[at].1, sample)),
            Err(at) => {
                self.entries.insert(at, (name, sample));
                None
            }
        }
    }

    /// The sample of `name`.
    pub fn get(&self, name: &str) -> Option<&PodMetric> {
        self.position(name).ok().map(|at| &self.entries[at].1)
    }

    /// How many names have a sample.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No sample at all.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// `(name, sample)` in ascending name order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&str, &PodMetric)> + ExactSizeIterator {
        self.entries.iter().map(|(n, s)| (n.as_str(), s))
    }

    /// The names, in ascending order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &str> + ExactSizeIterator {
        self.entries.iter().map(|(n, _)| n.as_str())
    }

    /// The samples, in ascending name order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &PodMetric> + ExactSizeIterator {
        self.entries.iter().map(|(_, s)| s)
    }

    /// Replaces the samples with `pairs`, in any order (the last of a name wins), writing each
    /// name over an old one: once the list has held as many names as long, nothing is allocated.
    pub fn refill<'a>(&mut self, pairs: impl IntoIterator<Item = (&'a str, PodMetric)>) {
        let mut n = 0;
        for (name, sample) in pairs {
            match self.entries.get_mut(n) {
                Some(entry) => {
                    set_text(&mut entry.0, name);
                    entry.1 = sample;
                }
                None => {
                    let mut text = self.spare.pop().unwrap_or_default();
                    set_text(&mut text, name);
                    self.entries.push((text, sample));
                }
            }
            n += 1;
        }
        self.spare_from(n);
        self.settle();
    }

    /// Keeps the names of the entries from `at` on as spare, and drops those entries.
    fn spare_from(&mut self, at: usize) {
        if at < self.entries.len() {
            self.spare
                .extend(self.entries.drain(at..).map(|(name, _)| name));
        }
    }

    fn position(&self, name: &str) -> Result<usize, usize> {
        self.entries.binary_search_by(|(n, _)| name_order(n, name))
    }

    /// Puts the samples in name order and keeps one per name, the last given.
    fn settle(&mut self) {
        let entries = &mut self.entries;
        if entries
            .windows(2)
            .all(|w| name_order(&w[0].0, &w[1].0) == Ordering::Less)
        {
            return;
        }
        // Stable, so equal names keep their order; the first of each run stays and takes the
        // sample of each later one in turn, so it ends with the last given. The entries dropped
        // move past the kept ones, their names spare.
        entries.sort_by(|a, b| name_order(&a.0, &b.0));
        let mut kept = 0;
        for at in 1..entries.len() {
            if entries[at].0 == entries[kept].0 {
                entries[kept].1 = entries[at].1;
            } else {
                kept += 1;
                entries.swap(kept, at);
            }
        }
        self.spare_from(kept + 1);
    }
}

impl Clone for Samples {
    fn clone(&self) -> Self {
        Samples {
            entries: self.entries.clone(),
            spare: Vec::new(),
        }
    }
}

impl PartialEq for Samples {
    /// The same names with the same samples.
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for Samples {}

impl fmt::Debug for Samples {
    /// As the list of `(name, sample)` pairs it is.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Pairs<'a>(&'a Samples);
        impl fmt::Debug for Pairs<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_list().entries(self.0.iter()).finish()
            }
        }
        f.debug_tuple("Samples").field(&Pairs(self)).finish()
    }
}

impl FromIterator<(String, PodMetric)> for Samples {
    fn from_iter<I: IntoIterator<Item = (String, PodMetric)>>(pairs: I) -> Self {
        let mut samples = Samples {
            entries: pairs.into_iter().collect(),
            spare: Vec::new(),
        };
        samples.settle();
        samples
    }
}

impl<const N: usize> From<[(String, PodMetric); N]> for Samples {
    fn from(pairs: [(String, PodMetric); N]) -> Self {
        pairs.into_iter().collect()
    }
}

impl std::ops::Index<&str> for Samples {
    type Output = PodMetric;

    /// The sample of `name`; panics when there is none (like a map's index).
    fn index(&self, name: &str) -> &PodMetric {
        self.get(name)
            .unwrap_or_else(|| panic!("no sample for pod {name:?}"))
    }
}

/// What a metrics API returned for one metric of the HPA's spec, after the metrics client's
/// conversion (upstream's `metrics.MetricsClient`).
#[derive(Debug, Clone, PartialEq)]
pub enum MetricValues {
    /// Per-pod samples by pod name (Resource, ContainerResource and Pods metrics), with the
    /// timestamp of the first item of the response.
    PerPod {
        /// Samples by pod name.
        samples: Samples,
        /// The timestamp of the response's first item.
        timestamp: Time,
    },
    /// The single value of an Object metric.
    Object {
        /// Milli-value.
        value: i64,
        /// Sample time.
        timestamp: Time,
    },
    /// The series of an External metric.
    External {
        /// Milli-values, one per series.
        values: Vec<i64>,
        /// Sample time.
        timestamp: Time,
    },
}

/// One metric's reading: the values, or the metrics client's error text (for example
/// `no metrics returned from resource metrics API`).
pub type MetricReading = Result<MetricValues, String>;

/// Everything the core looks at for one reconcile of one HPA.
#[derive(Debug, Clone)]
pub struct Observation<'a> {
    /// The instant of this reconcile.
    pub now: Time,
    /// The HPA as stored by the API server (defaults applied), with the status last written.
    pub hpa: &'a k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler,
    /// The target's scale, or the error getting it (e.g.
    /// `deployments.apps "web" not found`).
    pub scale: Result<ScaleView, String>,
    /// The pods matching the scale's selector.
    pub pods: &'a [PodView],
    /// One reading per entry of `spec.metrics`, in order.
    pub metrics: &'a [MetricReading],
    /// Keys (`namespace/name`) of every HPA, this one included, whose selector matches any of the
    /// pods; more than one makes the selector ambiguous. Empty means "only this HPA".
    pub hpas_selecting_pods: &'a [String],
}

impl PodView {
    /// The view of a `v1.Pod`.
    pub fn from_pod(pod: &Pod) -> PodView {
        let mut view = PodView::blank();
        view.assign_pod(pod);
        view
    }

    /// Makes this the view of `pod`, in this view's buffers: its strings and lists are reused,
    /// so converting a pod into a view of an earlier pod allocates nothing when its names are no
    /// longer and its containers no more numerous.
    pub fn assign_pod(&mut self, pod: &Pod) {
        self.assign_pod_parsing(pod, &mut ParsedRequests::default());
    }

    /// [`PodView::assign_pod`], with the requests' quantities parsed through `parsed`, which a
    /// conversion of many pods shares.
    fn assign_pod_parsing<'a>(&mut self, pod: &'a Pod, parsed: &mut ParsedRequests<'a>) {
        let status = pod.status.as_ref();
        set_text(
            &mut self.name,
            pod.metadata.name.as_deref().unwrap_or_default(),
        );
        // Compared in line: a `match` on strings calls `memcmp` per pod.
        self.phase = match status.and_then(|s| s.phase.as_deref()) {
            Some(p) if same_name(p, "Running") => PodPhase::Running,
            Some(p) if same_name(p, "Pending") => PodPhase::Pending,
            Some(p) if same_name(p, "Succeeded") => PodPhase::Succeeded,
            Some(p) if same_name(p, "Failed") => PodPhase::Failed,
            _ => PodPhase::Unknown,
        };
        self.ready = status
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| same_name(&c.type_, "Ready")))
            .map(|c| ReadyCondition {
                status: if same_name(&c.status, "True") {
                    ConditionStatus::True
                } else if same_name(&c.status, "False") {
                    ConditionStatus::False
                } else {
                    ConditionStatus::Unknown
                },
                last_transition: c.last_transition_time.as_ref().map(core_time),
            });
        self.start_time = status.and_then(|s| s.start_time.as_ref()).map(core_time);
        self.deleted = pod.metadata.deletion_timestamp.is_some();
        let spec = pod.spec.as_ref();
        let containers = spec.map_or(&[][..], |s| s.containers.as_slice());
        refill(
            &mut self.containers,
            containers,
            ContainerRequests::default,
            |dst, c| assign_container(dst, c, parsed),
        );
        let sidecars = spec
            .and_then(|s| s.init_containers.as_deref())
            .unwrap_or_default()
            .iter()
            .filter(|c| {
                c.restart_policy
                    .as_deref()
                    .is_some_and(|p| same_name(p, "Always"))
            });
        refill(
            &mut self.sidecars,
            sidecars,
            ContainerRequests::default,
            |dst, c| assign_container(dst, c, parsed),
        );
        match spec.and_then(|s| requests_of(s.resources.as_ref())) {
            Some(requests) => set_requests(
                self.pod_requests.get_or_insert_with(Vec::new),
                parsed.all(requests),
            ),
            None => self.pod_requests = None,
        }
    }

    /// A view to assign a pod to.
    fn blank() -> PodView {
        PodView {
            name: String::new(),
            phase: PodPhase::Unknown,
            ready: None,
            start_time: None,
            deleted: false,
            containers: Vec::new(),
            sidecars: Vec::new(),
            pod_requests: None,
        }
    }
}

impl Clone for PodView {
    fn clone(&self) -> Self {
        PodView {
            name: self.name.clone(),
            phase: self.phase,
            ready: self.ready,
            start_time: self.start_time,
            deleted: self.deleted,
            containers: self.containers.clone(),
            sidecars: self.sidecars.clone(),
            pod_requests: self.pod_requests.clone(),
        }
    }

    /// The same, in `self`'s buffers.
    fn clone_from(&mut self, source: &Self) {
        set_text(&mut self.name, &source.name);
        self.phase = source.phase;
        self.ready = source.ready;
        self.start_time = source.start_time;
        self.deleted = source.deleted;
        self.containers.clone_from(&source.containers);
        self.sidecars.clone_from(&source.sidecars);
        match &source.pod_requests {
            Some(requests) => set_requests(
                self.pod_requests.get_or_insert_with(Vec::new),
                requests.iter().map(|(r, v)| (r.as_str(), *v)),
            ),
            None => self.pod_requests = None,
        }
    }
}

/// The views of `pods`, in order, in a list and views given back by earlier reconciles on this
/// thread ([`recycle::give_views`]): once warm, converting a steady set of pods allocates
/// nothing.
pub fn pod_views<'a>(pods: impl IntoIterator<Item = &'a Pod>) -> Vec<PodView> {
    let mut parsed = ParsedRequests::default();
    fill_views(pods, |view, pod| view.assign_pod_parsing(pod, &mut parsed))
}

/// Copies of `views` (views kept from an earlier conversion, as the controller's pod cache keeps
/// them), in reused buffers as [`pod_views`].
pub fn copied_views<'a>(views: impl IntoIterator<Item = &'a PodView>) -> Vec<PodView> {
    fill_views(views, PodView::clone_from)
}

/// A list given back refilled with one view per item of `from`, each set by `set` in the view
/// at its place (so that its buffers are reused), else in a spare one.
fn fill_views<S>(
    from: impl IntoIterator<Item = S>,
    mut set: impl FnMut(&mut PodView, S),
) -> Vec<PodView> {
    let mut list = recycle::view_list();
    let mut n = 0;
    for item in from {
        if n == list.len() {
            list.push(recycle::spare_view().unwrap_or_else(PodView::blank));
        }
        set(&mut list[n], item);
        n += 1;
    }
    if n < list.len() {
        recycle::spare_views(list.drain(n..));
    }
    list
}

/// Sets `dst` to `src`, in `dst`'s buffer.
fn set_text(dst: &mut String, src: &str) {
    dst.clear();
    dst.push_str(src);
}

/// Refills `dst` with one element per item of `src`, each set by `set` in the element the last
/// fill left at its place (so that its buffers are reused), else in a `fresh` one; elements
/// beyond the new length are dropped.
fn refill<T, S>(
    dst: &mut Vec<T>,
    src: impl IntoIterator<Item = S>,
    fresh: impl Fn() -> T,
    mut set: impl FnMut(&mut T, S),
) {
    let mut n = 0;
    for item in src {
        if n == dst.len() {
            dst.push(fresh());
        }
        set(&mut dst[n], item);
        n += 1;
    }
    dst.truncate(n);
}

/// Sets a list of requests to `src`'s, in its buffers.
fn set_requests<'a>(dst: &mut Vec<(String, i64)>, src: impl IntoIterator<Item = (&'a str, i64)>) {
    refill(
        dst,
        src,
        || (String::new(), 0),
        |(name, value), (r, v)| {
            set_text(name, r);
            *value = v;
        },
    );
}

/// `resources.requests`, when set.
fn requests_of(resources: Option<&ResourceRequirements>) -> Option<&BTreeMap<String, Quantity>> {
    resources?.requests.as_ref()
}

/// The milli-values of the request quantities one conversion has parsed, by their text: the pods
/// of one workload share their template's requests, so a list of them parses each distinct
/// spelling once (a look at the last few texts, compared in line, costs a fraction of a parse).
/// A quantity's milli-value is its text's alone, so what is found here is what a parse gives.
#[derive(Default)]
struct ParsedRequests<'a> {
    /// The last texts parsed and their milli-values; the first `filled` are set.
    seen: [(&'a str, i64); 4],
    filled: usize,
    /// Where the next text parsed goes (the oldest, once all are set).
    next: usize,
}

impl<'a> ParsedRequests<'a> {
    /// The milli-value of `text`, or `None` when it does not parse.
    #[inline]
    fn milli(&mut self, text: &'a str) -> Option<i64> {
        if let Some(&(_, v)) = self.seen[..self.filled]
            .iter()
            .find(|(seen, _)| same_name(seen, text))
        {
            return Some(v);
        }
        let v = milli_value(text).ok()?;
        self.seen[self.next] = (text, v);
        self.next = (self.next + 1) % self.seen.len();
        self.filled = (self.filled + 1).min(self.seen.len());
        Some(v)
    }

    /// The requests whose quantities parse, as milli-values (a request that does not parse is
    /// skipped).
    fn all<'s>(
        &'s mut self,
        requests: &'a BTreeMap<String, Quantity>,
    ) -> impl Iterator<Item = (&'a str, i64)> + 's {
        requests
            .iter()
            .filter_map(|(r, q)| self.milli(&q.0).map(|v| (r.as_str(), v)))
    }
}

/// Makes `dst` the requests of container `c`.
fn assign_container<'a>(
    dst: &mut ContainerRequests,
    c: &'a Container,
    parsed: &mut ParsedRequests<'a>,
) {
    set_text(&mut dst.name, &c.name);
    match requests_of(c.resources.as_ref()) {
        Some(requests) => set_requests(&mut dst.requests, parsed.all(requests)),
        None => dst.requests.clear(),
    }
}

impl ScaleView {
    /// The view of an `autoscaling/v1` Scale.
    pub fn from_scale(scale: &k8s_openapi::api::autoscaling::v1::Scale) -> ScaleView {
        ScaleView {
            spec_replicas: scale.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0),
            status_replicas: scale.status.as_ref().map_or(0, |s| s.replicas),
            selector: scale.status.as_ref().and_then(|s| s.selector.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_order_and_same_name_are_str_order_and_eq() {
        let names = [
            "",
            "a",
            "b",
            "ab",
            "web-0001",
            "web-0002",
            "web-00010",
            "web-0001x",
            "web-7d4b9c8f6-x2k9p",
            "web-7d4b9c8f6-x2k9q",
            "web-7d4b9c8f6-x2k9",
            "web-7d4b9c8f6-x2k9pp",
            "Web",
            "wéb",
            "cpu",
            "memory",
            "hugepages-2Mi",
            "\u{0}",
            "\u{ff}",
        ];
        for a in names {
            for b in names {
                assert_eq!(name_order(a, b), a.cmp(b), "{a:?} vs {b:?}");
                assert_eq!(same_name(a, b), a == b, "{a:?} vs {b:?}");
            }
        }
    }

    #[test]
    fn name_order_and_same_name_of_names_of_one_length_are_str_order_and_eq() {
        // Every length to 20, each name against itself and against a copy differing in one
        // byte (lower, higher, a zero byte, 0xff), at every position.
        for len in 0..=20usize {
            let base: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            for at in 0..len {
                for b in [b'0', b'z', 0x00, 0x7f] {
                    let mut other = base.clone();
                    other[at] = b;
                    let (x, y) = (
                        std::str::from_utf8(&base).unwrap(),
                        std::str::from_utf8(&other).unwrap(),
                    );
                    assert_eq!(name_order(x, y), x.cmp(y), "{x:?} vs {y:?}");
                    assert_eq!(name_order(y, x), y.cmp(x), "{y:?} vs {x:?}");
                    assert!(!same_name(x, y) && !same_name(y, x), "{x:?} vs {y:?}");
                }
            }
            let x = std::str::from_utf8(&base).unwrap();
            assert_eq!(name_order(x, x), std::cmp::Ordering::Equal, "{x:?}");
            let copy = String::from_utf8(base.clone()).unwrap();
            assert!(same_name(x, &copy), "{x:?}");
        }
        // Two differences: the first decides.
        for len in 2..=20usize {
            for first in 0..len - 1 {
                for second in first + 1..len {
                    let mut x = vec![b'm'; len];
                    let mut y = x.clone();
                    x[first] = b'a';
                    y[second] = b'a';
                    let (x, y) = (
                        std::str::from_utf8(&x).unwrap(),
                        std::str::from_utf8(&y).unwrap(),
                    );
                    assert_eq!(name_order(x, y), x.cmp(y), "{x:?} vs {y:?}");
                    assert_eq!(name_order(y, x), y.cmp(x), "{y:?} vs {x:?}");
                }
            }
        }
    }

    fn sample(value: i64) -> PodMetric {
        PodMetric {
            value,
            timestamp: Time::from_secs(0),
            window: Duration::from_secs(30),
        }
    }

    #[test]
    fn samples_come_in_name_order_and_the_last_of_a_name_wins() {
        let pairs = [
            ("web-b", 1),
            ("web-a", 2),
            ("web-c", 3),
            ("web-a", 4),
            ("web-b", 5),
        ];
        let samples: Samples = pairs
            .iter()
            .map(|&(n, v)| (n.to_string(), sample(v)))
            .collect();
        let map: std::collections::BTreeMap<String, PodMetric> = pairs
            .iter()
            .map(|&(n, v)| (n.to_string(), sample(v)))
            .collect();
        let got: Vec<(&str, i64)> = samples.iter().map(|(n, s)| (n, s.value)).collect();
        let want: Vec<(&str, i64)> = map.iter().map(|(n, s)| (n.as_str(), s.value)).collect();
        assert_eq!(got, want);
        assert_eq!(got, [("web-a", 4), ("web-b", 5), ("web-c", 3)]);
        assert_eq!(samples.len(), 3);
        assert_eq!(samples["web-c"].value, 3);
        assert_eq!(samples.get("web-d"), None);
    }

    #[test]
    fn a_refill_is_a_collection_in_reused_buffers() {
        let runs: [&[(&str, i64)]; 5] = [
            &[
                ("web-b", 1),
                ("web-a", 2),
                ("web-c", 3),
                ("web-a", 4),
                ("web-b", 5),
            ],
            &[("x", 1)],
            &[],
            &[
                ("a", 1),
                ("b", 2),
                ("c", 3),
                ("d", 4),
                ("e", 5),
                ("f", 6),
                ("g", 7),
            ],
            &[("g", 1), ("g", 2), ("a", 3)],
        ];
        let mut reused = Samples::new();
        for pairs in runs {
            reused.refill(pairs.iter().map(|&(n, v)| (n, sample(v))));
            let collected: Samples = pairs
                .iter()
                .map(|&(n, v)| (n.to_string(), sample(v)))
                .collect();
            assert_eq!(reused, collected, "{pairs:?}");
            assert_eq!(format!("{reused:?}"), format!("{collected:?}"));
            assert_eq!(reused.len(), collected.len());
            assert_eq!(reused.clone(), collected);
        }
        // A name inserted after a shorter refill lands in order, spare names gone.
        reused.insert("b".to_string(), sample(9));
        assert_eq!(
            reused.iter().map(|(n, s)| (n, s.value)).collect::<Vec<_>>(),
            [("a", 3), ("b", 9), ("g", 2)]
        );
    }

    fn pod(json: serde_json::Value) -> Pod {
        serde_json::from_value(json).expect("a pod")
    }

    #[test]
    fn a_view_assigned_or_cloned_over_another_is_the_pods_view() {
        let pods = [
            pod(serde_json::json!({
                "metadata": {"name": "web-0001"},
                "spec": {"containers": [
                    {"name": "app", "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}}},
                    {"name": "log", "resources": {"requests": {"cpu": "50m", "bad": "x"}}}
                ]},
                "status": {"phase": "Running", "startTime": "2026-01-01T00:00:00Z",
                    "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:10Z"}]}
            })),
            pod(serde_json::json!({
                "metadata": {"name": "a-much-longer-pod-name-7d4b9c8f6-x2k9p", "deletionTimestamp": "2026-01-01T00:00:20Z"},
                "spec": {
                    "containers": [{"name": "app"}],
                    "initContainers": [
                        {"name": "init"},
                        {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "10m"}}}
                    ],
                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}
                },
                "status": {"phase": "Pending", "conditions": [{"type": "Ready", "status": "False"}]}
            })),
            pod(serde_json::json!({"metadata": {}})),
        ];
        for a in &pods {
            for b in &pods {
                let want = PodView::from_pod(b);
                let mut view = PodView::from_pod(a);
                view.assign_pod(b);
                assert_eq!(view, want);
                let mut copy = PodView::from_pod(a);
                copy.clone_from(&want);
                assert_eq!(copy, want);
            }
        }
        let views = pod_views(&pods);
        assert_eq!(
            views,
            pods.iter().map(PodView::from_pod).collect::<Vec<_>>()
        );
        recycle::give_views(views);
        let fewer = pod_views(&pods[1..]);
        assert_eq!(
            fewer,
            pods[1..].iter().map(PodView::from_pod).collect::<Vec<_>>()
        );
        let copies = copied_views(&fewer);
        assert_eq!(copies, fewer);
    }

    #[test]
    fn requests_parsed_once_per_text_in_a_conversion_are_each_pods_own() {
        // More distinct texts than the conversion keeps, alike in length and prefix, some that
        // do not parse, in an order that drops each from the kept ones and finds it again.
        let texts = [
            "500m",
            "501m",
            "1Gi",
            "1Mi",
            "x",
            "",
            "536870912",
            "536870913",
            "0.5",
            "1e3",
        ];
        let pods: Vec<Pod> = (0..60)
            .map(|i| {
                let (cpu, memory) = (
                    texts[(i * 7) % texts.len()],
                    texts[(i * 3 + 1) % texts.len()],
                );
                pod(serde_json::json!({
                    "metadata": {"name": format!("web-{i:04}")},
                    "spec": {"containers": [
                        {"name": "app", "resources": {"requests": {"cpu": cpu, "memory": memory}}},
                        {"name": "log", "resources": {"requests": {"cpu": memory}}}
                    ]}
                }))
            })
            .collect();
        let views = pod_views(&pods);
        for (view, pod) in views.iter().zip(&pods) {
            assert_eq!(*view, PodView::from_pod(pod));
            let containers = &pod.spec.as_ref().expect("spec").containers;
            for (c, requests) in containers.iter().zip(&view.containers) {
                let want: Vec<(String, i64)> = c
                    .resources
                    .as_ref()
                    .expect("resources")
                    .requests
                    .as_ref()
                    .expect("requests")
                    .iter()
                    .filter_map(|(r, q)| milli_value(&q.0).ok().map(|v| (r.clone(), v)))
                    .collect();
                assert_eq!(requests.requests, want, "{}", view.name);
            }
        }
        assert_eq!(views.len(), pods.len());
    }

    #[test]
    fn insert_keeps_the_order_and_replaces_a_name() {
        let mut samples = Samples::new();
        assert!(samples.is_empty());
        for (n, v) in [("b", 1), ("d", 2), ("a", 3), ("c", 4)] {
            assert_eq!(samples.insert(n.to_string(), sample(v)), None);
        }
        assert_eq!(
            samples.insert("b".to_string(), sample(9)).map(|s| s.value),
            Some(1)
        );
        assert_eq!(samples.keys().collect::<Vec<_>>(), ["a", "b", "c", "d"]);
        assert_eq!(
            samples.values().map(|s| s.value).collect::<Vec<_>>(),
            [3, 9, 4, 2]
        );
    }
}
