// Command template is the smallest HPA implementation behind the step protocol, built on the
// Go kit: copy this folder, replace decide with a call into your autoscaler, and run the corpus
// (docs/validate-your-hpa.md):
//
//	go build -o bin/my-hpa ./template
//	hpa-conformance run cases --target exec:bin/my-hpa
//
// If your autoscaler reads time.Now() (a fork of upstream's controller does), serve it in
// synctest bubbles instead: main_test.go beside this file does, built as the package's test
// binary (`go test -c -o bin/my-hpa ./template`); see kits/go/bubbles.go.
//
// As shipped it keeps the replica count within minReplicas..maxReplicas, so most cases fail:
// that is the baseline a real implementation improves on.
package main

import (
	"context"
	"fmt"
	"os"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	kit "hpa-conformance/kits/go"
	"hpa-conformance/kits/go/protocol"
)

func main() {
	if err := kit.Serve(os.Stdin, os.Stdout, implementation{}); err != nil {
		fmt.Fprintln(os.Stderr, "template:", err)
		os.Exit(1)
	}
}

type implementation struct{}

// Start begins a case: keep what your autoscaler needs from the settings and memory.
func (implementation) Start(start *protocol.Start) (kit.Session, kit.Info, error) {
	return &session{settings: start.Settings}, kit.Info{
		Name:    "template",
		Version: "0.1.0",
		// The Kubernetes release whose HPA behaviour you implement: the harness judges you
		// against that release's expectations (run with --kubernetes-version 1.37).
		KubernetesVersion: "1.37",
		// Declare what your implementation produces and can do (harness/PROTOCOL.md):
		// levels replicas/status/full, features behavior/containerResource/memorySeeding
		// (memoryReport needs a session implementing kit.MemoryReporter; severalHpas a session
		// that keeps each HPA's memory under its namespace/name and lists pods by selector).
		Levels:   []string{protocol.LevelReplicas},
		Features: nil,
		// Everything of a case lives in its session: one process may serve many cases.
		ManyCases: true,
	}, nil
}

type session struct {
	settings protocol.Settings
	// Your autoscaler's memory between ticks goes here.
}

// Tick reads the scale, decides, writes the scale when it changes and the HPA status.
func (s *session) Tick(w *kit.World) error {
	ctx := context.Background()
	ref := w.HPA.Spec.ScaleTargetRef
	gv, _ := schema.ParseGroupVersion(ref.APIVersion)
	resource := schema.GroupResource{Group: gv.Group, Resource: "deployments"}
	scale, err := w.Scales.Scales(w.Namespace).Get(ctx, resource, ref.Name, metav1.GetOptions{})
	if err != nil {
		return nil // no scale, no decision (the harness also sends ticks where GET scale fails)
	}
	current := scale.Spec.Replicas
	desired := decide(w, current)
	if desired != current {
		update := &autoscalingv1.Scale{ObjectMeta: scale.ObjectMeta, Spec: autoscalingv1.ScaleSpec{Replicas: desired}}
		if _, err := w.Scales.Scales(w.Namespace).Update(ctx, resource, update, metav1.UpdateOptions{}); err != nil {
			desired = current // a failed write leaves the count as it was
		}
	}
	hpa := w.HPA.DeepCopy()
	hpa.Status.CurrentReplicas = scale.Status.Replicas
	hpa.Status.DesiredReplicas = desired
	_, err = w.Kube.AutoscalingV2().HorizontalPodAutoscalers(w.Namespace).UpdateStatus(ctx, hpa, metav1.UpdateOptions{})
	return err
}

// decide is where your autoscaler goes: the world's clients (w.Kube pods, w.ResourceMetrics,
// w.CustomMetrics, w.ExternalMetrics) and clock (w.Clock) are what it reads.
func decide(w *kit.World, current int32) int32 {
	lo, hi := int32(1), w.HPA.Spec.MaxReplicas
	if w.HPA.Spec.MinReplicas != nil {
		lo = *w.HPA.Spec.MinReplicas
	}
	if current == 0 {
		return 0 // scaling is off at zero replicas
	}
	return min(max(current, lo), hi)
}
