// This file is NOT part of upstream Kubernetes. It belongs to hpa-conformance's upstream adapter
// (adapters/upstream) and is added to package podautoscaler at build time with `go build -overlay`
// (see adapters/upstream/build.sh). It only exposes a thin, adapter-only surface over the
// controller's unexported reconcile entry point and its in-memory state; it contains no HPA logic.
// It compiles against every release the adapter builds for (versions/*); what differs between
// releases is in the zz_hpa_adapter_selectors_*.go file that versions/<release>/overlay names.

package podautoscaler

import (
	"context"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/client-go/tools/record"
)

// HPAAdapterReconcile runs one reconciliation of the given HPA, as a worker would after taking
// key ("namespace/name") off the queue and finding hpa in the lister.
func (a *HorizontalController) HPAAdapterReconcile(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, key string) error {
	return a.reconcileAutoscaler(ctx, hpa, key)
}

// HPAAdapterSetEventRecorder replaces the controller's event recorder.
func (a *HorizontalController) HPAAdapterSetEventRecorder(r record.EventRecorder) {
	a.eventRecorder = r
}

// HPAAdapterRecommendation is one stored (unstabilized) recommendation.
type HPAAdapterRecommendation struct {
	Replicas int32
	Time     time.Time
}

// HPAAdapterScaleEvent is one stored scale event (absolute replica change).
type HPAAdapterScaleEvent struct {
	Change   int32
	Time     time.Time
	Outdated bool
}

// HPAAdapterMemory is the controller's in-memory state for one HPA key. A nil slice means
// "no entry for this key"; an empty non-nil slice means "an entry with nothing recorded".
type HPAAdapterMemory struct {
	Recommendations []HPAAdapterRecommendation
	ScaleUpEvents   []HPAAdapterScaleEvent
	ScaleDownEvents []HPAAdapterScaleEvent
}

// HPAAdapterSeedMemory replaces the controller's in-memory state for key.
func (a *HorizontalController) HPAAdapterSeedMemory(key string, m HPAAdapterMemory) {
	a.recommendationsLock.Lock()
	if m.Recommendations == nil {
		delete(a.recommendations, key)
	} else {
		recs := make([]timestampedRecommendation, 0, len(m.Recommendations))
		for _, r := range m.Recommendations {
			recs = append(recs, timestampedRecommendation{recommendation: r.Replicas, timestamp: r.Time})
		}
		a.recommendations[key] = recs
	}
	a.recommendationsLock.Unlock()

	toEvents := func(in []HPAAdapterScaleEvent) []timestampedScaleEvent {
		out := make([]timestampedScaleEvent, 0, len(in))
		for _, e := range in {
			out = append(out, timestampedScaleEvent{replicaChange: e.Change, timestamp: e.Time, outdated: e.Outdated})
		}
		return out
	}
	a.scaleUpEventsLock.Lock()
	if m.ScaleUpEvents == nil {
		delete(a.scaleUpEvents, key)
	} else {
		a.scaleUpEvents[key] = toEvents(m.ScaleUpEvents)
	}
	a.scaleUpEventsLock.Unlock()
	a.scaleDownEventsLock.Lock()
	if m.ScaleDownEvents == nil {
		delete(a.scaleDownEvents, key)
	} else {
		a.scaleDownEvents[key] = toEvents(m.ScaleDownEvents)
	}
	a.scaleDownEventsLock.Unlock()
}

// HPAAdapterReadMemory returns a copy of the controller's in-memory state for key.
func (a *HorizontalController) HPAAdapterReadMemory(key string) HPAAdapterMemory {
	var m HPAAdapterMemory
	a.recommendationsLock.Lock()
	if recs, ok := a.recommendations[key]; ok {
		m.Recommendations = make([]HPAAdapterRecommendation, 0, len(recs))
		for _, r := range recs {
			m.Recommendations = append(m.Recommendations, HPAAdapterRecommendation{Replicas: r.recommendation, Time: r.timestamp})
		}
	}
	a.recommendationsLock.Unlock()
	fromEvents := func(in []timestampedScaleEvent, ok bool) []HPAAdapterScaleEvent {
		if !ok {
			return nil
		}
		out := make([]HPAAdapterScaleEvent, 0, len(in))
		for _, e := range in {
			out = append(out, HPAAdapterScaleEvent{Change: e.replicaChange, Time: e.timestamp, Outdated: e.outdated})
		}
		return out
	}
	a.scaleUpEventsLock.RLock()
	up, ok := a.scaleUpEvents[key]
	m.ScaleUpEvents = fromEvents(up, ok)
	a.scaleUpEventsLock.RUnlock()
	a.scaleDownEventsLock.RLock()
	down, ok := a.scaleDownEvents[key]
	m.ScaleDownEvents = fromEvents(down, ok)
	a.scaleDownEventsLock.RUnlock()
	return m
}

// HPAAdapterSetScaleUpLimit sets the package's no-behavior scale-up limit, max(factor × current,
// minimum) (upstream hard-codes 2 and 4; its unit tests set the factor to 8 the same way).
func HPAAdapterSetScaleUpLimit(factor, minimum float64) {
	scaleUpLimitFactor = factor
	scaleUpLimitMinimum = minimum
}

// HPAAdapterShutdown shuts the controller's work queue down (as Run does when it returns), so
// that the queue's goroutines end with the case.
func (a *HorizontalController) HPAAdapterShutdown() {
	a.queue.ShutDown()
}
