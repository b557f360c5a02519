package kit

// The world of one tick behind client-go and k8s.io/metrics fakes. Each tick gets fresh fakes
// that answer from the tick's message; what the implementation writes through them is captured.

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/kubernetes/fake"
	scalefake "k8s.io/client-go/scale/fake"
	core "k8s.io/client-go/testing"
	metricsapi "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsfake "k8s.io/metrics/pkg/client/clientset/versioned/fake"
	cmfake "k8s.io/metrics/pkg/client/custom_metrics/fake"
	emfake "k8s.io/metrics/pkg/client/external_metrics/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"hpa-conformance/kits/go/protocol"
)

// World is one tick, as a Go autoscaler sees a cluster.
type World struct {
	// Tick is the message as sent.
	Tick *protocol.Tick
	// Now is the tick's virtual instant; Clock is a clock stopped there. Use them for every
	// time-based decision (windows, lastScaleTime, CPU initialization), never the wall clock.
	Now   time.Time
	Clock *clocktesting.FakeClock
	// VirtualNow is the tick's instant on the harness's clock: Now, except for an implementation
	// that reads the wall clock (Info.WallClock), whose tick is shifted to the wall clock each
	// tick — memory kept across ticks (recommendations, scale events) must use VirtualNow.
	VirtualNow time.Time
	// Namespace of the HPA and its pods.
	Namespace string
	// HPA as stored, with the status the implementation last wrote.
	HPA *autoscalingv2.HorizontalPodAutoscaler
	// Kube holds the pods and the HPA: list pods by the scale's selector, UpdateStatus the HPA.
	Kube *fake.Clientset
	// Scales is the scale subresource of the HPA's target: Get (fails with the tick's scaleError)
	// and Update (fails with its scaleUpdateError).
	Scales *scalefake.FakeScaleClient
	// ResourceMetrics is metrics.k8s.io: MetricsV1beta1().PodMetricses(ns).List.
	ResourceMetrics *metricsfake.Clientset
	// CustomMetrics is custom.metrics.k8s.io (Pods metrics by selector, Object metrics by
	// described object); ExternalMetrics is external.metrics.k8s.io.
	CustomMetrics   *cmfake.FakeCustomMetricsClient
	ExternalMetrics *emfake.FakeExternalMetricsClient
	// Recorder records events on the HPA (a client-go record.EventRecorder).
	Recorder *Recorder

	scaledTo *int32
	status   *autoscalingv2.HorizontalPodAutoscalerStatus
}

// NewWorld builds the fakes for a tick.
func NewWorld(tick *protocol.Tick, namespace string) (*World, error) {
	w := &World{
		Tick:       tick,
		Now:        tick.Now,
		VirtualNow: tick.Now,
		Clock:      clocktesting.NewFakeClock(tick.Now),
		Namespace:  namespace,
		HPA:        tick.HPA.DeepCopy(),
		Recorder:   &Recorder{},
	}
	if w.HPA.Namespace == "" {
		w.HPA.Namespace = namespace
	}
	labelsByPod := map[string]map[string]string{}
	objs := []runtime.Object{w.HPA.DeepCopy()}
	for i := range tick.Pods {
		p := tick.Pods[i].DeepCopy()
		if p.Namespace == "" {
			p.Namespace = namespace
		}
		labelsByPod[p.Name] = p.Labels
		objs = append(objs, p)
	}
	w.Kube = fake.NewClientset(objs...)
	w.Kube.PrependReactor("update", "horizontalpodautoscalers", w.reactHPAUpdate)

	w.Scales = &scalefake.FakeScaleClient{}
	w.Scales.AddReactor("get", "*", func(a core.Action) (bool, runtime.Object, error) { return ReactGetScale(w.Tick, a) })
	w.Scales.AddReactor("update", "*", w.reactUpdateScale)

	w.ResourceMetrics = &metricsfake.Clientset{}
	w.ResourceMetrics.AddReactor("list", "pods", func(action core.Action) (bool, runtime.Object, error) {
		answer := tick.Metrics.Resource
		if answer.Error != nil {
			return true, nil, errors.New(*answer.Error)
		}
		selector := labels.Everything()
		if l, ok := action.(core.ListAction); ok && l.GetListRestrictions().Labels != nil {
			selector = l.GetListRestrictions().Labels
		}
		list := &metricsapi.PodMetricsList{Items: make([]metricsapi.PodMetrics, 0, len(answer.Items))}
		for _, m := range answer.Items {
			m := *m.DeepCopy()
			if m.Namespace == "" {
				m.Namespace = action.GetNamespace()
			}
			// As metrics-server does, a PodMetrics carries its pod's labels. The fake filters a
			// list by the label selector against them, but the implementation must see the list
			// the harness sent, samples of pods it does not know included (upstream skips them
			// itself: rc-disjoint-resources-metrics): each sample is labelled to match.
			if m.Labels == nil {
				m.Labels = labelsByPod[m.Name]
			}
			m.Labels = labelsMatching(selector, m.Labels)
			list.Items = append(list.Items, m)
		}
		return true, list, nil
	})
	w.CustomMetrics = &cmfake.FakeCustomMetricsClient{}
	w.CustomMetrics.AddReactor("get", "*", func(a core.Action) (bool, runtime.Object, error) { return ReactCustomMetric(w.Tick, a) })
	w.ExternalMetrics = &emfake.FakeExternalMetricsClient{}
	w.ExternalMetrics.AddReactor("list", "*", func(a core.Action) (bool, runtime.Object, error) { return ReactExternalMetric(w.Tick, a) })
	return w, nil
}

// labelsMatching returns have when the selector matches it, else labels made to match: each
// requirement that needs a label (=, ==, in, exists, >, <) gets one; those that need its absence
// are met by leaving it out.
func labelsMatching(selector labels.Selector, have map[string]string) map[string]string {
	if selector.Matches(labels.Set(have)) {
		return have
	}
	requirements, _ := selector.Requirements()
	out := map[string]string{}
	for _, r := range requirements {
		values := r.ValuesUnsorted()
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			if len(values) > 0 {
				out[r.Key()] = values[0]
			}
		case selection.Exists:
			out[r.Key()] = "sample"
		case selection.GreaterThan, selection.LessThan:
			if len(values) > 0 {
				if n, err := strconv.ParseInt(values[0], 10, 64); err == nil {
					if r.Operator() == selection.GreaterThan {
						n++
					} else {
						n--
					}
					out[r.Key()] = strconv.FormatInt(n, 10)
				}
			}
		}
	}
	return out
}

// Result is what the implementation did this tick: the successful scale write, the status it
// wrote (else the HPA's status as it was), the events it recorded.
func (w *World) Result() protocol.Result {
	status := w.HPA.Status
	if w.status != nil {
		status = *w.status
	}
	events := w.Recorder.Events
	if events == nil {
		events = []protocol.Event{}
	}
	return protocol.Result{
		Kind:            "result",
		T:               w.Tick.T,
		ScaledTo:        w.scaledTo,
		Status:          protocol.Status(status),
		Events:          events,
		StatusUnwritten: w.status == nil,
	}
}

// ScaledTo is the count of this tick's successful scale write, if any.
func (w *World) ScaledTo() *int32 { return w.scaledTo }

func (w *World) reactHPAUpdate(action core.Action) (bool, runtime.Object, error) {
	update := action.(core.UpdateAction)
	hpa, ok := update.GetObject().(*autoscalingv2.HorizontalPodAutoscaler)
	if !ok {
		return true, nil, fmt.Errorf("unexpected object %T in an HPA update", update.GetObject())
	}
	if update.GetSubresource() == "status" {
		w.status = hpa.Status.DeepCopy()
	}
	return false, nil, nil // the tracker stores it too
}

func (w *World) reactUpdateScale(action core.Action) (bool, runtime.Object, error) {
	if e := w.Tick.ScaleUpdateError; e != nil {
		return true, nil, errors.New(*e)
	}
	s, ok := action.(core.UpdateAction).GetObject().(*autoscalingv1.Scale)
	if !ok {
		return true, nil, fmt.Errorf("unexpected object %T in a scale update", action.(core.UpdateAction).GetObject())
	}
	replicas := s.Spec.Replicas
	w.scaledTo = &replicas
	return true, s.DeepCopy(), nil
}

// Recorder is a client-go record.EventRecorder that keeps the events of one tick, in order.
type Recorder struct {
	Events []protocol.Event
}

// Event records an event.
func (r *Recorder) Event(_ runtime.Object, eventtype, reason, message string) {
	r.Events = append(r.Events, protocol.Event{Type: eventtype, Reason: reason, Message: message})
}

// Eventf records an event with a formatted message.
func (r *Recorder) Eventf(o runtime.Object, eventtype, reason, messageFmt string, args ...interface{}) {
	r.Event(o, eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

// AnnotatedEventf records an event (annotations are not part of the protocol).
func (r *Recorder) AnnotatedEventf(o runtime.Object, _ map[string]string, eventtype, reason, messageFmt string, args ...interface{}) {
	r.Eventf(o, eventtype, reason, messageFmt, args...)
}
