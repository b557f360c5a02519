//go:build hpaadapter

package server

// The step protocol's messages (harness/PROTOCOL.md), as this adapter reads and writes them.
// Unknown fields are ignored (encoding/json does that by default).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricsapi "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// ProtocolVersion is the step-protocol version this adapter speaks.
const ProtocolVersion = 1

// ImplementationName is what the adapter calls itself in `hello`.
const ImplementationName = "upstream-kube-controller-manager"

type envelope struct {
	Kind string `json:"kind"`
}

type startMsg struct {
	Kind         string          `json:"kind"`
	Protocol     int             `json:"protocol"`
	Case         string          `json:"case"`
	FeatureGates map[string]bool `json:"featureGates"`
	Settings     settingsMsg     `json:"settings"`
	Memory       *memoryMsg      `json:"memory"`
}

// settingsMsg mirrors kube-controller-manager's --horizontal-pod-autoscaler-* flags. Absent
// fields take kube-controller-manager's defaults.
type settingsMsg struct {
	SyncPeriodSeconds              *float64 `json:"syncPeriodSeconds"`
	Tolerance                      *float64 `json:"tolerance"`
	CPUInitializationPeriodSeconds *float64 `json:"cpuInitializationPeriodSeconds"`
	InitialReadinessDelaySeconds   *float64 `json:"initialReadinessDelaySeconds"`
	DownscaleStabilizationSeconds  *float64 `json:"downscaleStabilizationSeconds"`
	// Not kube-controller-manager flags: upstream's package variables for the no-behavior
	// scale-up limit max(factor × current, minimum), 2 and 4 (its unit tests use factor 8).
	ScaleUpLimitFactor  *float64 `json:"scaleUpLimitFactor"`
	ScaleUpLimitMinimum *float64 `json:"scaleUpLimitMinimum"`
}

type memoryMsg struct {
	Recommendations []recommendationMsg `json:"recommendations"`
	ScaleUpEvents   []scaleEventMsg     `json:"scaleUpEvents"`
	ScaleDownEvents []scaleEventMsg     `json:"scaleDownEvents"`
}

type recommendationMsg struct {
	Replicas int32     `json:"replicas"`
	Time     time.Time `json:"time"`
}

type scaleEventMsg struct {
	Change   int32     `json:"change"`
	Time     time.Time `json:"time"`
	Outdated bool      `json:"outdated,omitempty"`
}

type implementationMsg struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

type helloMsg struct {
	Kind           string            `json:"kind"`
	Protocol       int               `json:"protocol"`
	Implementation implementationMsg `json:"implementation"`
	FeatureGates   map[string]bool   `json:"featureGates"`
	MemorySeeding  bool              `json:"memorySeeding"`
	// The conformance levels and features it supports (harness/PROTOCOL.md): all of them.
	Levels   []string `json:"levels"`
	Features []string `json:"features"`
}

type tickMsg struct {
	Kind             string                                 `json:"kind"`
	T                json.RawMessage                        `json:"t"`
	Now              string                                 `json:"now"`
	HPA              *autoscalingv2.HorizontalPodAutoscaler `json:"hpa"`
	Scale            *autoscalingv1.Scale                   `json:"scale"`
	ScaleError       *string                                `json:"scaleError"`
	ScaleUpdateError *string                                `json:"scaleUpdateError"`
	Pods             []corev1.Pod                           `json:"pods"`
	Metrics          metricsMsg                             `json:"metrics"`
	// Keys ("namespace/name") of other HPAs whose selectors match these pods.
	OtherHPAsSelectingPods []string `json:"otherHpasSelectingPods"`
}

// metricsMsg is what each metrics API answers this tick.
type metricsMsg struct {
	Resource listAnswer[metricsapi.PodMetrics]  `json:"resource"`
	Pods     map[string]listAnswer[podValue]    `json:"pods"`
	Object   map[string]objectAnswer            `json:"object"`
	External map[string]listAnswer[sampleValue] `json:"external"`
}

// listAnswer is a list answer of a metrics API: its items, or the request's error.
type listAnswer[T any] struct {
	Items []T     `json:"items"`
	Error *string `json:"error"`
}

// podValue is one pod's custom.metrics.k8s.io value.
type podValue struct {
	Pod           string            `json:"pod"`
	Value         resource.Quantity `json:"value"`
	Timestamp     metav1.Time       `json:"timestamp"`
	WindowSeconds *int64            `json:"windowSeconds"`
}

// sampleValue is an Object metric's value or one External series.
type sampleValue struct {
	Value         resource.Quantity `json:"value"`
	Timestamp     metav1.Time       `json:"timestamp"`
	WindowSeconds *int64            `json:"windowSeconds,omitempty"`
}

// objectAnswer is an Object metric's answer. Both spellings are accepted:
// {"value": "20", "timestamp": "…"} and {"value": {"value": "20", "timestamp": "…"}};
// {"error": "…"} makes the request fail with that text.
type objectAnswer struct {
	Value *sampleValue
	Error *string
}

func (o *objectAnswer) UnmarshalJSON(data []byte) error {
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
		var s sampleValue
		if err := json.Unmarshal(v, &s); err != nil {
			return fmt.Errorf("object metric value: %w", err)
		}
		o.Value = &s
	default:
		var q resource.Quantity
		if err := json.Unmarshal(v, &q); err != nil {
			return fmt.Errorf("object metric value: %w", err)
		}
		o.Value = &sampleValue{Value: q, Timestamp: raw.Timestamp, WindowSeconds: raw.WindowSeconds}
	}
	return nil
}

type eventMsg struct {
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

type resultMsg struct {
	Kind     string          `json:"kind"`
	T        json.RawMessage `json:"t"`
	ScaledTo *int32          `json:"scaledTo"`
	Status   statusJSON      `json:"status"`
	Events   []eventMsg      `json:"events"`
}

// statusJSON is an HPA status as written, with `currentReplicas` always present: the Go type
// omits it when 0 (`omitempty`), which a reader could take for "unknown" rather than 0.
type statusJSON autoscalingv2.HorizontalPodAutoscalerStatus

func (s statusJSON) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(autoscalingv2.HorizontalPodAutoscalerStatus(s))
	if err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, err
	}
	if _, ok := fields["currentReplicas"]; !ok {
		fields["currentReplicas"] = json.RawMessage(fmt.Sprint(s.CurrentReplicas))
	}
	return json.Marshal(fields)
}
