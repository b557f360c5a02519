// Package protocol holds the step protocol's messages (harness/PROTOCOL.md in hpa-conformance)
// as Go types: what the harness sends (Start, Tick, End, Stop) and what an implementation answers
// (Hello, Result, Ended). Unknown fields are ignored when decoding, as the protocol asks.
package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	jsoniter "github.com/json-iterator/go"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricsapi "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// codec is encoding/json's behaviour (field names, Marshaler and Unmarshaler methods, the same
// output) at json-iterator's speed: decoding ticks was the largest cost of serving one. It is
// json-iterator's ConfigCompatibleWithStandardLibrary, built apart so that it alone reads
// apimachinery's times and durations without encoding/json (times.go).
var codec = newCodec()

func newCodec() jsoniter.API {
	api := jsoniter.Config{EscapeHTML: true, SortMapKeys: true, ValidateJsonRawMessage: true}.Froze()
	api.RegisterExtension(&apimachineryTimes{})
	return api
}

// Decode reads a message (most often a tick) into v, as encoding/json.Unmarshal would.
func Decode(data []byte, v any) error { return codec.Unmarshal(data, v) }

// Encode writes a message (most often a result), as encoding/json.Marshal would.
func Encode(v any) ([]byte, error) { return codec.Marshal(v) }

// KindOf is a message's kind, as decoding it into an Envelope would say, without reading the
// whole message: when its first key is "kind" (as the harness writes every message) the string
// after it is the answer; otherwise the whole message is decoded as before. Every tick used to
// be read twice — once through encoding/json (validating and skipping all of it, ~12 KB) only to
// find "tick", then again as a Tick: the first read was 14 % of the upstream adapter's CPU.
func KindOf(line []byte) (string, error) {
	rest := bytes.TrimLeft(line, " \t\r\n")
	if after, ok := bytes.CutPrefix(rest, []byte(`{"kind":"`)); ok {
		if end := bytes.IndexByte(after, '"'); end > 0 && bytes.IndexByte(after[:end], '\\') < 0 {
			return string(after[:end]), nil
		}
	}
	var env Envelope
	if err := json.Unmarshal(line, &env); err != nil {
		return "", err
	}
	return env.Kind, nil
}

// Version is the step-protocol version this package speaks.
const Version = 1

// Conformance levels (hello.levels).
const (
	LevelReplicas = "replicas"
	LevelStatus   = "status"
	LevelFull     = "full"
)

// Features (hello.features).
const (
	FeatureBehavior          = "behavior"
	FeatureContainerResource = "containerResource"
	FeatureMemorySeeding     = "memorySeeding"
	// FeatureMemoryReport: the implementation answers each result with its memory of the HPA
	// when start.reportMemory asks (cases with expect.at[].memory). Only declared, never assumed.
	FeatureMemoryReport = "memoryReport"
	// FeatureSeveralHPAs: one session carries ticks of several HPAs (told apart by their
	// namespace/name), each with every pod of the namespace; the implementation keeps each HPA's
	// memory apart and selects its pods by the scale's selector. Only ever declared.
	FeatureSeveralHPAs = "severalHpas"
	// FeatureExternalMetrics: the implementation reads External metrics
	// (external.metrics.k8s.io). An implementation that lists features and not this one gets no
	// case with an External metric (skipped with the reason) and no fuzzed External metric.
	FeatureExternalMetrics = "externalMetrics"
)

// Envelope is any message's kind.
type Envelope struct {
	Kind string `json:"kind"`
}

// Start begins a case.
type Start struct {
	Kind         string          `json:"kind"`
	Protocol     int             `json:"protocol"`
	Case         string          `json:"case"`
	FeatureGates map[string]bool `json:"featureGates"`
	Settings     Settings        `json:"settings"`
	// Memory is nil when the controller never saw the HPA. A memory whose lists are all empty
	// means "seen before, nothing recorded" (no first-sight recommendation).
	Memory *Memory `json:"memory"`
	// ReportMemory: the case expects the memory after ticks; answer every Result with Memory
	// (sent only to an implementation that declares FeatureMemoryReport).
	ReportMemory bool `json:"reportMemory,omitempty"`
	// UnwrittenStatus: the harness takes a Result without status as "no status written this
	// tick" — the HPA's status stays the tick's (Result.StatusUnwritten, Result.Message).
	UnwrittenStatus bool `json:"unwrittenStatus,omitempty"`
}

// Settings are kube-controller-manager's --horizontal-pod-autoscaler-* flags, plus the
// no-behavior scale-up limit max(factor × current, minimum). A field absent from the message
// takes kube-controller-manager's default (DefaultSettings).
type Settings struct {
	SyncPeriodSeconds              float64 `json:"syncPeriodSeconds"`
	Tolerance                      float64 `json:"tolerance"`
	CPUInitializationPeriodSeconds float64 `json:"cpuInitializationPeriodSeconds"`
	InitialReadinessDelaySeconds   float64 `json:"initialReadinessDelaySeconds"`
	DownscaleStabilizationSeconds  float64 `json:"downscaleStabilizationSeconds"`
	ScaleUpLimitFactor             float64 `json:"scaleUpLimitFactor"`
	ScaleUpLimitMinimum            float64 `json:"scaleUpLimitMinimum"`
}

// DefaultSettings are kube-controller-manager's defaults, and upstream's package variables for
// the scale-up limit (factor 2, minimum 4).
var DefaultSettings = Settings{
	SyncPeriodSeconds:              15,
	Tolerance:                      0.1,
	CPUInitializationPeriodSeconds: 300,
	InitialReadinessDelaySeconds:   30,
	DownscaleStabilizationSeconds:  300,
	ScaleUpLimitFactor:             2,
	ScaleUpLimitMinimum:            4,
}

// UnmarshalJSON reads the settings, absent fields taking DefaultSettings' values.
func (s *Settings) UnmarshalJSON(data []byte) error {
	type plain Settings
	v := plain(DefaultSettings)
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*s = Settings(v)
	return nil
}

// Seconds turns a settings value into a duration.
func Seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// Memory is the controller's memory to start with.
type Memory struct {
	Recommendations []Recommendation `json:"recommendations"`
	ScaleUpEvents   []ScaleEvent     `json:"scaleUpEvents"`
	ScaleDownEvents []ScaleEvent     `json:"scaleDownEvents"`
}

// RecordsSomething says whether the memory holds an entry (and so needs memorySeeding).
func (m *Memory) RecordsSomething() bool {
	return m != nil && (len(m.Recommendations) > 0 || len(m.ScaleUpEvents) > 0 || len(m.ScaleDownEvents) > 0)
}

// Recommendation is a recorded recommendation.
type Recommendation struct {
	Replicas int32     `json:"replicas"`
	Time     time.Time `json:"time"`
}

// ScaleEvent is a recorded scale-up or scale-down.
type ScaleEvent struct {
	Change int32     `json:"change"`
	Time   time.Time `json:"time"`
	// Outdated marks an event upstream's controller has marked outdated (only in memories that
	// reproduce its unit tests).
	Outdated bool `json:"outdated,omitempty"`
}

// Implementation says who answers.
type Implementation struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Hello answers Start.
type Hello struct {
	Kind           string          `json:"kind"`
	Protocol       int             `json:"protocol"`
	Implementation Implementation  `json:"implementation"`
	FeatureGates   map[string]bool `json:"featureGates"`
	MemorySeeding  bool            `json:"memorySeeding"`
	Levels         []string        `json:"levels,omitempty"`
	Features       []string        `json:"features"`
	// ManyCases: the process serves cases in sequence until stop, answering End with Ended.
	ManyCases bool `json:"manyCases,omitempty"`
	// DeltaTicks: ticks may leave out what equals the case's previous tick (Tick.Unchanged).
	DeltaTicks bool `json:"deltaTicks,omitempty"`
	// DeltaMetrics: ticks may leave out their metrics when they are the case's previous
	// tick's moved in time (Tick.Unchanged lists UnchangedMetrics).
	DeltaMetrics bool `json:"deltaMetrics,omitempty"`
	// DeltaPods: a tick's pods may come as changes to the case's previous tick's
	// (Tick.PodChanges) instead of the whole list.
	DeltaPods bool `json:"deltaPods,omitempty"`
	// KubernetesVersion: the Kubernetes release whose HPA behaviour it implements ("1.37");
	// a run judging another release skips every case with the reason. Empty: not declared.
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
}

// End ends a case on a process that declared ManyCases; the next case's Start may follow.
type End struct {
	Kind string `json:"kind"`
	Case string `json:"case"`
}

// Ended answers End: nothing of the case is left.
type Ended struct {
	Kind string `json:"kind"`
	Case string `json:"case,omitempty"`
}

// Tick is one tick of the world.
type Tick struct {
	Kind             string                                 `json:"kind"`
	T                json.RawMessage                        `json:"t"`
	Now              time.Time                              `json:"now"`
	HPA              *autoscalingv2.HorizontalPodAutoscaler `json:"hpa"`
	Scale            *autoscalingv1.Scale                   `json:"scale"`
	ScaleError       *string                                `json:"scaleError"`
	ScaleUpdateError *string                                `json:"scaleUpdateError"`
	Pods             []corev1.Pod                           `json:"pods"`
	// PodChanges say the pods as changes to the case's previous tick's, instead of Pods: only
	// to an implementation whose Hello declared DeltaPods, never on a case's first tick.
	// Complete applies them.
	PodChanges *PodChanges `json:"podChanges,omitempty"`
	// Metrics are absent (the zero value) only when Unchanged lists UnchangedMetrics.
	Metrics Metrics `json:"metrics"`
	// OtherHPAsSelectingPods are keys (namespace/name) of other HPAs whose selectors match
	// these pods.
	OtherHPAsSelectingPods []string `json:"otherHpasSelectingPods"`
	// Unchanged lists the fields left out because they equal the case's previous tick's
	// (UnchangedHPA, UnchangedPods: only to an implementation whose Hello declared DeltaTicks)
	// or are its metrics moved in time (UnchangedMetrics: only with DeltaMetrics); never on a
	// case's first tick. Complete fills them in.
	Unchanged []string `json:"unchanged,omitempty"`
}

// Fields a delta tick may leave out (Tick.Unchanged).
const (
	UnchangedHPA  = "hpa"
	UnchangedPods = "pods"
	// UnchangedMetrics: the previous tick's metrics, every timestamp in them moved by the time
	// between the two ticks (Metrics.Moved).
	UnchangedMetrics = "metrics"
)

// Lists reports whether the tick leaves field out as unchanged.
func (t *Tick) Lists(field string) bool {
	for _, f := range t.Unchanged {
		if f == field {
			return true
		}
	}
	return false
}

// PodChanges are a tick's pods as changes to the previous tick's of the case: those Removed are
// gone, and each pod of Set replaces the one of its name where it stands or, when there is none,
// comes after the others in the order of Set.
type PodChanges struct {
	Removed []string     `json:"removed"`
	Set     []corev1.Pod `json:"set"`
}

// Apply is the pods c makes of previous, a new slice (the pods in it are previous's and c's
// own, not copies). It fails on a pod without a name, a name twice in previous, or a name
// removed that previous does not have.
func (c *PodChanges) Apply(previous []corev1.Pod) ([]corev1.Pod, error) {
	names := make(map[string]bool, len(previous))
	for i := range previous {
		n := previous[i].Name
		if n == "" {
			return nil, fmt.Errorf("the previous tick has a pod without a name")
		}
		if names[n] {
			return nil, fmt.Errorf("the previous tick has two pods named %s", n)
		}
		names[n] = true
	}
	gone := make(map[string]bool, len(c.Removed))
	for _, n := range c.Removed {
		if !names[n] {
			return nil, fmt.Errorf("podChanges removes %s, which the previous tick does not have", n)
		}
		gone[n] = true
	}
	pods := make([]corev1.Pod, 0, len(previous)-len(gone)+len(c.Set))
	at := make(map[string]int, len(previous)+len(c.Set))
	for i := range previous {
		if !gone[previous[i].Name] {
			at[previous[i].Name] = len(pods)
			pods = append(pods, previous[i])
		}
	}
	for i := range c.Set {
		n := c.Set[i].Name
		if n == "" {
			return nil, fmt.Errorf("podChanges sets a pod without a name")
		}
		if j, ok := at[n]; ok {
			pods[j] = c.Set[i]
			continue
		}
		at[n] = len(pods)
		pods = append(pods, c.Set[i])
	}
	return pods, nil
}

// Complete fills in what a delta tick leaves out from prev, the case's previous tick (itself
// complete; nil before the first), and applies its PodChanges. The objects are prev's own, not
// copies: a caller that changes them copies them first (metrics moved in time are new items
// around prev's containers and values; pods changed are a new slice of prev's and the tick's
// pods). It fails on a field it does not know, a field listed or PodChanges on a case's first
// tick, PodChanges beside Pods or a listed "pods", changes that do not fit prev's pods, and an
// HPA that is neither sent nor listed.
func (t *Tick) Complete(prev *Tick) error {
	for _, f := range t.Unchanged {
		if f != UnchangedHPA && f != UnchangedPods && f != UnchangedMetrics {
			return fmt.Errorf("tick %s lists %q as unchanged, which is no field a tick may leave out", t.T, f)
		}
		if prev == nil {
			return fmt.Errorf("tick %s lists %s as unchanged, but it is the case's first tick", t.T, f)
		}
	}
	if t.Lists(UnchangedHPA) {
		t.HPA = prev.HPA
	}
	if t.Lists(UnchangedPods) {
		if t.PodChanges != nil {
			return fmt.Errorf("tick %s has podChanges and lists pods as unchanged", t.T)
		}
		t.Pods = prev.Pods
	}
	if t.PodChanges != nil {
		switch {
		case prev == nil:
			return fmt.Errorf("tick %s has podChanges, but it is the case's first tick", t.T)
		case t.Pods != nil:
			return fmt.Errorf("tick %s has both pods and podChanges", t.T)
		}
		pods, err := t.PodChanges.Apply(prev.Pods)
		if err != nil {
			return fmt.Errorf("tick %s: %w", t.T, err)
		}
		t.Pods, t.PodChanges = pods, nil
	}
	if t.Lists(UnchangedMetrics) {
		t.Metrics = prev.Metrics.Moved(t.Now.Sub(prev.Now))
	}
	if t.HPA == nil {
		return fmt.Errorf("tick %s has no hpa and does not list it as unchanged", t.T)
	}
	return nil
}

// Metrics are the metrics APIs' answers this tick, by API and metric name.
type Metrics struct {
	Resource ListAnswer[metricsapi.PodMetrics]  `json:"resource"`
	Pods     map[string]ListAnswer[PodValue]    `json:"pods"`
	Object   map[string]ObjectAnswer            `json:"object"`
	External map[string]ListAnswer[SampleValue] `json:"external"`
}

// Moved is m with every timestamp in it (each PodMetrics', each per-pod value's, each Object
// and External sample's) moved by d, everything else as it was: what a tick whose Unchanged
// lists UnchangedMetrics carries. The lists, maps and items are new; what the items hold
// (containers, usages, quantities, metadata) is m's own. A nil list or map stays nil.
func (m Metrics) Moved(d time.Duration) Metrics {
	out := Metrics{
		Resource: ListAnswer[metricsapi.PodMetrics]{
			Items: movedItems(m.Resource.Items, d, func(p *metricsapi.PodMetrics) *metav1.Time { return &p.Timestamp }),
			Error: m.Resource.Error,
		},
		Pods:     movedAnswers(m.Pods, d, func(v *PodValue) *metav1.Time { return &v.Timestamp }),
		External: movedAnswers(m.External, d, func(v *SampleValue) *metav1.Time { return &v.Timestamp }),
	}
	if m.Object != nil {
		out.Object = make(map[string]ObjectAnswer, len(m.Object))
		for name, a := range m.Object {
			if a.Value != nil {
				v := *a.Value
				v.Timestamp.Time = v.Timestamp.Add(d)
				a.Value = &v
			}
			out.Object[name] = a
		}
	}
	return out
}

// movedItems is a copy of items with the timestamp stamp points at in each moved by d (nil
// stays nil).
func movedItems[T any](items []T, d time.Duration, stamp func(*T) *metav1.Time) []T {
	if items == nil {
		return nil
	}
	out := make([]T, len(items))
	copy(out, items)
	for i := range out {
		t := stamp(&out[i])
		t.Time = t.Add(d)
	}
	return out
}

// movedAnswers is movedItems for each list answer of a map (nil stays nil).
func movedAnswers[T any](m map[string]ListAnswer[T], d time.Duration, stamp func(*T) *metav1.Time) map[string]ListAnswer[T] {
	if m == nil {
		return nil
	}
	out := make(map[string]ListAnswer[T], len(m))
	for name, a := range m {
		out[name] = ListAnswer[T]{Items: movedItems(a.Items, d, stamp), Error: a.Error}
	}
	return out
}

// ListAnswer is a list answer: its items, or the request's error.
type ListAnswer[T any] struct {
	Items []T     `json:"items"`
	Error *string `json:"error"`
}

// PodValue is one pod's custom.metrics.k8s.io value.
type PodValue struct {
	Pod           string            `json:"pod"`
	Value         resource.Quantity `json:"value"`
	Timestamp     metav1.Time       `json:"timestamp"`
	WindowSeconds *int64            `json:"windowSeconds"`
}

// SampleValue is an Object metric's value or one External series.
type SampleValue struct {
	Value         resource.Quantity `json:"value"`
	Timestamp     metav1.Time       `json:"timestamp"`
	WindowSeconds *int64            `json:"windowSeconds,omitempty"`
}

// ObjectAnswer is an Object metric's answer: a value, or the request's error. Both spellings
// are read: {"value": "20", "timestamp": …} and {"value": {"value": "20", "timestamp": …}}.
type ObjectAnswer struct {
	Value *SampleValue
	Error *string
}

// UnmarshalJSON reads both spellings.
func (o *ObjectAnswer) UnmarshalJSON(data []byte) error {
	var raw struct {
		Value         json.RawMessage `json:"value"`
		Timestamp     metav1.Time     `json:"timestamp"`
		WindowSeconds *int64          `json:"windowSeconds"`
		Error         *string         `json:"error"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	o.Error = raw.Error
	v := bytes.TrimSpace(raw.Value)
	switch {
	case len(v) == 0 || bytes.Equal(v, []byte("null")):
		o.Value = nil
	case v[0] == '{':
		var s SampleValue
		if err := json.Unmarshal(v, &s); err != nil {
			return fmt.Errorf("object metric value: %w", err)
		}
		o.Value = &s
	default:
		var q resource.Quantity
		if err := json.Unmarshal(v, &q); err != nil {
			return fmt.Errorf("object metric value: %w", err)
		}
		o.Value = &SampleValue{Value: q, Timestamp: raw.Timestamp, WindowSeconds: raw.WindowSeconds}
	}
	return nil
}

// Event is an event recorded on the HPA.
type Event struct {
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Result answers a Tick.
type Result struct {
	Kind string          `json:"kind"`
	T    json.RawMessage `json:"t"`
	// ScaledTo is the count of a successful scale write this tick, or nil.
	ScaledTo *int32  `json:"scaledTo"`
	Status   Status  `json:"status"`
	Events   []Event `json:"events"`
	// Memory is the controller's memory of the HPA after the tick, when start.reportMemory
	// asked for it (lists in the controller's order; never null lists).
	Memory *Memory `json:"memory,omitempty"`
	// StatusUnwritten: no status was written this tick, so Status is the tick's HPA's; the
	// message then leaves status out when start.unwrittenStatus allows it (Message). Never
	// written itself.
	StatusUnwritten bool `json:"-"`
}

// isZero reports whether s is the zero status (no field set).
func (s Status) isZero() bool { return reflect.DeepEqual(s, Status{}) }

// resultWithoutStatus is a Result's message without its status (Message).
type resultWithoutStatus struct {
	Kind     string          `json:"kind"`
	T        json.RawMessage `json:"t"`
	ScaledTo *int32          `json:"scaledTo"`
	Events   []Event         `json:"events"`
	Memory   *Memory         `json:"memory,omitempty"`
}

// Message is what to write for r: r itself, or, when StatusUnwritten and the harness's start
// allowed it (unwrittenStatus), r without its status, which the harness reads as the tick's. A
// zero status is always written: it is what a tick whose HPA has no status yet decodes to, and
// the harness has no status of that tick to keep.
func (r Result) Message(unwrittenStatus bool) any {
	if !unwrittenStatus || !r.StatusUnwritten || r.Status.isZero() {
		return r
	}
	return resultWithoutStatus{Kind: r.Kind, T: r.T, ScaledTo: r.ScaledTo, Events: r.Events, Memory: r.Memory}
}

// Status is an HPA status as written, with currentReplicas always present (the Go type omits
// it when 0, which a reader could take for "unknown").
type Status autoscalingv2.HorizontalPodAutoscalerStatus

// statusFields mirrors autoscalingv2.HorizontalPodAutoscalerStatus field for field (the
// conversion in MarshalJSON stops compiling if upstream adds one), with currentReplicas never
// omitted.
type statusFields struct {
	ObservedGeneration *int64                                           `json:"observedGeneration,omitempty"`
	LastScaleTime      *metav1.Time                                     `json:"lastScaleTime,omitempty"`
	CurrentReplicas    int32                                            `json:"currentReplicas"`
	DesiredReplicas    int32                                            `json:"desiredReplicas"`
	CurrentMetrics     []autoscalingv2.MetricStatus                     `json:"currentMetrics"`
	Conditions         []autoscalingv2.HorizontalPodAutoscalerCondition `json:"conditions,omitempty"`
}

// MarshalJSON writes currentReplicas even when 0 (through the codec: the same bytes as
// encoding/json, a result's status being most of what it encodes).
func (s Status) MarshalJSON() ([]byte, error) {
	return codec.Marshal(statusFields(s))
}
