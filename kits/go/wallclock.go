package kit

// For implementations that read the wall clock (time.Now) instead of an injected clock: the
// tick's timestamps are shifted so that its instant is the wall clock's when the tick arrives,
// and the times the implementation writes are shifted back. Relative times are kept to the
// nanosecond; the wall clock moves on while the implementation decides (microseconds), which
// matters only for decisions exactly at a boundary (e.g. a pod exactly at the end of its CPU
// initialization period).

import (
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hpa-conformance/kits/go/protocol"
)

func shiftTime(t *metav1.Time, d time.Duration) {
	if t != nil && !t.IsZero() {
		t.Time = t.Add(d)
	}
}

// ShiftTick moves every timestamp of the tick by d.
func ShiftTick(tick *protocol.Tick, d time.Duration) {
	tick.Now = tick.Now.Add(d)
	if tick.HPA != nil {
		ShiftStatus(&tick.HPA.Status, d)
		shiftTime(&tick.HPA.CreationTimestamp, d)
	}
	for i := range tick.Pods {
		p := &tick.Pods[i]
		shiftTime(&p.CreationTimestamp, d)
		shiftTime(p.DeletionTimestamp, d)
		shiftTime(p.Status.StartTime, d)
		for j := range p.Status.Conditions {
			shiftTime(&p.Status.Conditions[j].LastTransitionTime, d)
			shiftTime(&p.Status.Conditions[j].LastProbeTime, d)
		}
	}
	for i := range tick.Metrics.Resource.Items {
		shiftTime(&tick.Metrics.Resource.Items[i].Timestamp, d)
	}
	for _, a := range tick.Metrics.Pods {
		for i := range a.Items {
			shiftTime(&a.Items[i].Timestamp, d)
		}
	}
	for _, a := range tick.Metrics.Object {
		if a.Value != nil {
			shiftTime(&a.Value.Timestamp, d)
		}
	}
	for _, a := range tick.Metrics.External {
		for i := range a.Items {
			shiftTime(&a.Items[i].Timestamp, d)
		}
	}
}

// ShiftStatus moves the times of an HPA status by d.
func ShiftStatus(s *autoscalingv2.HorizontalPodAutoscalerStatus, d time.Duration) {
	shiftTime(s.LastScaleTime, d)
	for i := range s.Conditions {
		shiftTime(&s.Conditions[i].LastTransitionTime, d)
	}
}
