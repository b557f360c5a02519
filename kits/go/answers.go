package kit

// What the scale subresource and the custom and external metrics APIs answer from one tick: the
// one home of those answers, shaped as client-go fake reactors. World's fakes use them (fresh
// fakes each tick), and so does an adapter that keeps its fakes across ticks
// (adapters/upstream), so every Go implementation the harness drives sees the same answers.

import (
	"errors"
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	core "k8s.io/client-go/testing"
	cmapi "k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
	emapi "k8s.io/metrics/pkg/apis/external_metrics/v1beta1"
	cmfake "k8s.io/metrics/pkg/client/custom_metrics/fake"

	"hpa-conformance/kits/go/protocol"
)

// ReactGetScale answers GET scale: the tick's scale under the name and namespace asked for, or
// the tick's scaleError.
func ReactGetScale(tick *protocol.Tick, action core.Action) (bool, runtime.Object, error) {
	if tick.ScaleError != nil {
		return true, nil, errors.New(*tick.ScaleError)
	}
	if tick.Scale == nil {
		return true, nil, errors.New("the harness sent no scale")
	}
	get, ok := action.(core.GetAction)
	if !ok {
		return true, nil, fmt.Errorf("unexpected scale action %T", action)
	}
	s := tick.Scale.DeepCopy()
	s.Name = get.GetName()
	s.Namespace = action.GetNamespace()
	return true, s, nil
}

// ReactCustomMetric answers custom.metrics.k8s.io. For the pods of a selector (a Pods metric,
// object name "*"): the tick's per-pod values, an empty list for a metric it does not have, or its
// error. For one described object (an Object metric): its value, its error, or — absent — a 404
// NotFound worded as the API answers it, "the server could not find the metric M for Kind name",
// the kind and name being those the HPA describes (the reference core and the harness's mocked
// API word it the same).
func ReactCustomMetric(tick *protocol.Tick, action core.Action) (bool, runtime.Object, error) {
	get, ok := action.(cmfake.GetForAction)
	if !ok {
		return true, nil, fmt.Errorf("unexpected custom metrics action %T", action)
	}
	name := get.GetMetricName()
	if get.GetName() == "*" {
		answer, found := tick.Metrics.Pods[name]
		list := &cmapi.MetricValueList{}
		if !found {
			return true, list, nil
		}
		if answer.Error != nil {
			return true, nil, errors.New(*answer.Error)
		}
		for _, v := range answer.Items {
			list.Items = append(list.Items, cmapi.MetricValue{
				DescribedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Name: v.Pod, Namespace: action.GetNamespace()},
				Metric:          cmapi.MetricIdentifier{Name: name},
				Timestamp:       v.Timestamp,
				WindowSeconds:   v.WindowSeconds,
				Value:           v.Value,
			})
		}
		return true, list, nil
	}

	answer, found := tick.Metrics.Object[name]
	if found && answer.Error != nil {
		return true, nil, errors.New(*answer.Error)
	}
	kind, objName := describedObject(tick.HPA, name, get.GetName())
	if !found || answer.Value == nil {
		return true, nil, &apierrors.StatusError{ErrStatus: metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    404,
			Reason:  metav1.StatusReasonNotFound,
			Message: fmt.Sprintf("the server could not find the metric %s for %s %s", name, kind, objName),
		}}
	}
	v := answer.Value
	return true, &cmapi.MetricValueList{Items: []cmapi.MetricValue{{
		DescribedObject: corev1.ObjectReference{Kind: kind, Name: objName, Namespace: action.GetNamespace()},
		Metric:          cmapi.MetricIdentifier{Name: name},
		Timestamp:       v.Timestamp,
		WindowSeconds:   v.WindowSeconds,
		Value:           v.Value,
	}}}, nil
}

// describedObject is the kind and name of the object an Object metric of the HPA describes
// ("object" and the name asked for when no metric of the HPA has that name).
func describedObject(hpa *autoscalingv2.HorizontalPodAutoscaler, metric, asked string) (string, string) {
	if hpa != nil {
		for _, m := range hpa.Spec.Metrics {
			if m.Type == autoscalingv2.ObjectMetricSourceType && m.Object != nil && m.Object.Metric.Name == metric {
				return m.Object.DescribedObject.Kind, m.Object.DescribedObject.Name
			}
		}
	}
	return "object", asked
}

// ReactExternalMetric answers external.metrics.k8s.io: the tick's values of the metric, an empty
// list for a metric it does not have, or its error.
func ReactExternalMetric(tick *protocol.Tick, action core.Action) (bool, runtime.Object, error) {
	name := action.GetResource().Resource
	list := &emapi.ExternalMetricValueList{}
	answer, found := tick.Metrics.External[name]
	if !found {
		return true, list, nil
	}
	if answer.Error != nil {
		return true, nil, errors.New(*answer.Error)
	}
	for _, v := range answer.Items {
		list.Items = append(list.Items, emapi.ExternalMetricValue{
			MetricName:    name,
			Timestamp:     v.Timestamp,
			WindowSeconds: v.WindowSeconds,
			Value:         v.Value,
		})
	}
	return true, list, nil
}
