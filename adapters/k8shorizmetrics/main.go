// Command hpa-k8shorizmetrics-adapter runs github.com/jthomperoo/k8shorizmetrics (v3) — a Go
// library that gathers HPA metrics and evaluates a replica count the way the HPA does — behind
// hpa-conformance's step protocol, on the Go kit (kits/go). Around the library it adds the stage
// its author's Custom Pod Autoscaler adds: scaling off at zero replicas, the downscale
// stabilization window (the highest recommendation within it) and minReplicas/maxReplicas.
//
// It decides replica counts only (level replicas) and has no behavior, ContainerResource or
// memory seeding: cases needing those are skipped with the reason. Its known divergences from
// upstream are reviewed in expectations.yaml (`just k8shorizmetrics-corpus`).
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/jthomperoo/k8shorizmetrics/v3"
	"github.com/jthomperoo/k8shorizmetrics/v3/metricsclient"
	"github.com/jthomperoo/k8shorizmetrics/v3/podsclient"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	kit "hpa-conformance/kits/go"
	"hpa-conformance/kits/go/protocol"
)

func main() {
	if err := kit.Serve(os.Stdin, os.Stdout, adapter{}); err != nil {
		fmt.Fprintln(os.Stderr, "hpa-k8shorizmetrics-adapter:", err)
		os.Exit(1)
	}
}

type adapter struct{}

func (adapter) Start(start *protocol.Start) (kit.Session, kit.Info, error) {
	return &session{settings: start.Settings}, kit.Info{
		Name:    "k8shorizmetrics",
		Version: "v3.0.0",
		Levels:  []string{protocol.LevelReplicas},
		// The library evaluates External metrics too; nothing else of hello.features.
		Features: []string{protocol.FeatureExternalMetrics},
		// It has none of these: per-direction tolerance, scaling from zero, pod-level requests.
		FeatureGates: map[string]bool{"HPAConfigurableTolerance": false, "HPAScaleToZero": false, "PodLevelResources": false},
		// The library reads time.Now for the CPU initialization period.
		WallClock: true,
	}, nil
}

type recommendation struct {
	replicas int32
	at       time.Time
}

type session struct {
	settings        protocol.Settings
	recommendations []recommendation
}

func (s *session) Tick(w *kit.World) error {
	ctx := context.Background()
	hpa := w.HPA
	ref := hpa.Spec.ScaleTargetRef
	gv, _ := schema.ParseGroupVersion(ref.APIVersion)
	resource := schema.GroupResource{Group: gv.Group, Resource: "deployments"}
	scale, err := w.Scales.Scales(w.Namespace).Get(ctx, resource, ref.Name, metav1.GetOptions{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "t=%s: get scale: %v\n", w.Tick.T, err)
		return nil
	}
	current := scale.Spec.Replicas
	desired := current
	if current != 0 { // scaling is off at zero replicas
		desired = s.evaluate(w, scale.Status.Selector, current)
	}
	if desired != current {
		update := &autoscalingv1.Scale{ObjectMeta: scale.ObjectMeta, Spec: autoscalingv1.ScaleSpec{Replicas: desired}}
		if _, err := w.Scales.Scales(w.Namespace).Update(ctx, resource, update, metav1.UpdateOptions{}); err != nil {
			fmt.Fprintf(os.Stderr, "t=%s: update scale: %v\n", w.Tick.T, err)
		}
	}
	status := hpa.DeepCopy()
	status.Status.CurrentReplicas = scale.Status.Replicas
	status.Status.DesiredReplicas = desired
	_, err = w.Kube.AutoscalingV2().HorizontalPodAutoscalers(w.Namespace).UpdateStatus(ctx, status, metav1.UpdateOptions{})
	return err
}

// evaluate is the library's gather and evaluate, then the autoscaler's stabilization and bounds.
func (s *session) evaluate(w *kit.World, selector string, current int32) int32 {
	hpa := w.HPA
	podSelector, err := labels.Parse(selector)
	if err != nil {
		fmt.Fprintf(os.Stderr, "t=%s: selector %q: %v\n", w.Tick.T, selector, err)
		return current
	}
	client := &metricsclient.RESTClient{
		Client:                w.ResourceMetrics.MetricsV1beta1(),
		ExternalMetricsClient: w.ExternalMetrics,
		CustomMetricsClient:   w.CustomMetrics,
	}
	gatherer := k8shorizmetrics.NewGatherer(client, &podsclient.OnDemandPodLister{Clientset: w.Kube},
		protocol.Seconds(s.settings.CPUInitializationPeriodSeconds), protocol.Seconds(s.settings.InitialReadinessDelaySeconds))
	gathered, err := gatherer.Gather(hpa.Spec.Metrics, w.Namespace, podSelector)
	if err != nil {
		fmt.Fprintf(os.Stderr, "t=%s: gather: %v\n", w.Tick.T, err)
		return current
	}
	evaluator := k8shorizmetrics.NewEvaluator(s.settings.Tolerance)
	proposed, err := evaluator.Evaluate(gathered, current)
	if err != nil {
		fmt.Fprintf(os.Stderr, "t=%s: evaluate: %v\n", w.Tick.T, err)
		return current
	}
	// Downscale stabilization: the highest recommendation within the window (kept on the
	// virtual clock: the wall clock the library reads is re-aligned every tick).
	now := w.VirtualNow
	window := protocol.Seconds(s.settings.DownscaleStabilizationSeconds)
	kept := s.recommendations[:0]
	for _, r := range s.recommendations {
		if r.at.Add(window).After(now) {
			kept = append(kept, r)
		}
	}
	s.recommendations = append(kept, recommendation{replicas: proposed, at: now})
	desired := proposed
	for _, r := range s.recommendations {
		desired = max(desired, r.replicas)
	}
	lo := int32(1)
	if hpa.Spec.MinReplicas != nil {
		lo = *hpa.Spec.MinReplicas
	}
	return min(max(desired, lo), hpa.Spec.MaxReplicas)
}
