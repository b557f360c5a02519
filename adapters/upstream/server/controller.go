//go:build hpaadapter

package server

// Wiring of upstream's HorizontalController to fake clients, the way upstream's own unit tests
// (pkg/controller/podautoscaler/horizontal_test.go) do it: client-go's fake clientset for HPA
// status writes, client-go's fake scale client, the k8s.io/metrics fakes behind the real
// metrics.NewRESTMetricsClient, informers from a SharedInformerFactory over the fake clientset.
// The "world" each fake answers from is the current tick's message; the scale GET and the custom
// and external metrics answers are the Go kit's (kit.React*), so every Go implementation the
// harness drives sees the same answers.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	scalefake "k8s.io/client-go/scale/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/controller/podautoscaler"
	"k8s.io/kubernetes/pkg/controller/podautoscaler/metrics"
	metricsapi "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsfake "k8s.io/metrics/pkg/client/clientset/versioned/fake"
	resourceclient "k8s.io/metrics/pkg/client/clientset/versioned/typed/metrics/v1beta1"
	cmfake "k8s.io/metrics/pkg/client/custom_metrics/fake"
	emfake "k8s.io/metrics/pkg/client/external_metrics/fake"

	kit "hpa-conformance/kits/go"
	"hpa-conformance/kits/go/protocol"
)

// controllerSettings are kube-controller-manager's --horizontal-pod-autoscaler-* flags.
type controllerSettings struct {
	resyncPeriod                  float64 // seconds
	tolerance                     float64
	cpuInitializationPeriod       float64 // seconds
	delayOfInitialReadinessStatus float64 // seconds
	downscaleStabilisationWindow  float64 // seconds
	scaleUpLimitFactor            float64
	scaleUpLimitMinimum           float64
}

// harness is upstream's controller plus the fakes it talks to.
type harness struct {
	ctrl        *podautoscaler.HorizontalController
	podIndexer  cache.Indexer
	mapper      *tickMapper
	kubeClient  *fake.Clientset
	scaleClient *scalefake.FakeScaleClient
	resClient   *metricsfake.Clientset
	cmClient    *cmfake.FakeCustomMetricsClient
	emClient    *emfake.FakeExternalMetricsClient

	// Other HPAs registered in the selector tracker (tick.otherHpasSelectingPods).
	otherHPAs []string

	// The world of the current tick and what the controller wrote during it.
	tick     *protocol.Tick
	fault    scaleUpdateFault
	attempts int // UPDATE scale attempts this tick
	scaledTo *int32
	status   *autoscalingv2.HorizontalPodAutoscalerStatus
	events   kit.Recorder // the events the controller recorded
}

func newHarness(ctx context.Context, s controllerSettings) *harness {
	h := &harness{mapper: &tickMapper{RESTMapper: meta.NewDefaultRESTMapper(nil)}}

	// HPAs, pods and events (the pod informer's store is filled directly each tick).
	h.kubeClient = &fake.Clientset{}
	h.kubeClient.AddReactor("update", "horizontalpodautoscalers", h.reactHPAUpdate)
	eventClient := &fake.Clientset{}
	eventClient.AddReactor("create", "events", func(action core.Action) (bool, runtime.Object, error) {
		// Not reached: the controller's recorder is replaced by h (see below).
		return true, action.(core.CreateAction).GetObject(), nil
	})

	// The scale subresource.
	h.scaleClient = &scalefake.FakeScaleClient{}
	h.scaleClient.AddReactor("get", "*", func(a core.Action) (bool, runtime.Object, error) { return kit.ReactGetScale(h.tick, a) })
	h.scaleClient.AddReactor("update", "*", h.reactUpdateScale)

	// The metrics APIs.
	h.resClient = &metricsfake.Clientset{}
	h.resClient.AddReactor("list", "pods", h.reactListPodMetrics)
	h.cmClient = &cmfake.FakeCustomMetricsClient{}
	h.cmClient.AddReactor("get", "*", func(a core.Action) (bool, runtime.Object, error) { return kit.ReactCustomMetric(h.tick, a) })
	h.emClient = &emfake.FakeExternalMetricsClient{}
	h.emClient.AddReactor("list", "*", func(a core.Action) (bool, runtime.Object, error) { return kit.ReactExternalMetric(h.tick, a) })
	metricsClient := metrics.NewRESTMetricsClient(
		unfilteredPodMetrics{fake: h.resClient},
		h.cmClient,
		h.emClient,
	)

	informerFactory := informers.NewSharedInformerFactory(h.kubeClient, seconds(s.resyncPeriod))
	hpaInformer := informerFactory.Autoscaling().V2().HorizontalPodAutoscalers()
	podInformer := informerFactory.Core().V1().Pods()

	h.ctrl = podautoscaler.NewHorizontalController(
		ctx,
		eventClient.CoreV1(),
		h.scaleClient,
		h.kubeClient.AutoscalingV2(),
		h.mapper,
		metricsClient,
		hpaInformer,
		podInformer,
		seconds(s.resyncPeriod),
		seconds(s.downscaleStabilisationWindow),
		s.tolerance,
		seconds(s.cpuInitializationPeriod),
		seconds(s.delayOfInitialReadinessStatus),
	)
	// Record events synchronously, exactly as the controller emits them. (The real broadcaster
	// would deliver them asynchronously and its correlator merges repeated events into PATCHes
	// and aggregates; the protocol asks for the events the controller recorded.)
	h.ctrl.HPAAdapterSetEventRecorder(&h.events)
	podautoscaler.HPAAdapterSetScaleUpLimit(s.scaleUpLimitFactor, s.scaleUpLimitMinimum)
	h.podIndexer = podInformer.Informer().GetIndexer()
	return h
}

// load makes tick the world the fakes answer from and clears last tick's captures.
func (h *harness) load(tick *protocol.Tick, fault scaleUpdateFault, namespace string, samePods bool) error {
	h.tick = tick
	h.fault = fault
	h.attempts = 0
	h.scaledTo = nil
	h.status = nil
	h.events = kit.Recorder{}
	h.kubeClient.ClearActions()
	h.scaleClient.ClearActions()
	h.resClient.ClearActions()
	h.cmClient.ClearActions()
	h.emClient.ClearActions()

	// Pods the tick left out as unchanged are in the store already. The store holds the tick's
	// own pods, not copies: the controller only reads the informer's objects, as it must with a
	// shared cache, and the kit never changes a tick's pods. A pod without a namespace goes in
	// as a copy that has the HPA's.
	if !samePods {
		objs := make([]interface{}, 0, len(tick.Pods))
		for i := range tick.Pods {
			p := &tick.Pods[i]
			if p.Namespace == "" {
				withNamespace := *p
				withNamespace.Namespace = namespace
				p = &withNamespace
			}
			objs = append(objs, p)
		}
		if err := h.podIndexer.Replace(objs, ""); err != nil {
			return fmt.Errorf("loading pods into the pod informer's store: %w", err)
		}
	}

	ref := tick.HPA.Spec.ScaleTargetRef
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	m := meta.NewDefaultRESTMapper(nil)
	if err == nil && ref.Kind != "" {
		m = meta.NewDefaultRESTMapper([]schema.GroupVersion{gv})
		m.Add(gv.WithKind(ref.Kind), meta.RESTScopeNamespace)
	}
	h.mapper.RESTMapper = m
	return nil
}

// tickMapper maps the current tick's scale target kind to a resource (lower-case plural of the
// kind, as a discovery-backed mapper would for the built-in workload kinds).
type tickMapper struct {
	meta.RESTMapper
}

// ---- HPA status ----

func (h *harness) reactHPAUpdate(action core.Action) (bool, runtime.Object, error) {
	update := action.(core.UpdateAction)
	hpa, ok := update.GetObject().(*autoscalingv2.HorizontalPodAutoscaler)
	if !ok {
		return true, nil, fmt.Errorf("unexpected object %T in HPA update", update.GetObject())
	}
	if update.GetSubresource() == "status" {
		h.status = hpa.Status.DeepCopy()
	}
	return true, hpa.DeepCopy(), nil
}

// ---- scale subresource ----

func (h *harness) reactUpdateScale(action core.Action) (bool, runtime.Object, error) {
	h.attempts++
	if e := h.tick.ScaleUpdateError; e != nil && (h.fault.Failures == nil || h.attempts <= *h.fault.Failures) {
		return true, nil, h.fault.err(*e)
	}
	s, ok := action.(core.UpdateAction).GetObject().(*autoscalingv1.Scale)
	if !ok {
		return true, nil, fmt.Errorf("unexpected object %T in scale update", action.(core.UpdateAction).GetObject())
	}
	replicas := s.Spec.Replicas
	h.scaledTo = &replicas
	return true, s.DeepCopy(), nil
}

// scaleUpdateFault is how UPDATE scale fails this tick when `scaleUpdateError` is set, beyond
// its text. Its fields are a proposed extension of the tick (not sent by the harness yet, see
// README.md, "Posing what a release reacts to"): absent, the UPDATE fails on every attempt with
// an untyped error carrying the text, as before.
type scaleUpdateFault struct {
	// Reason makes the error a typed API status error (metav1.StatusReason, e.g. "Conflict"),
	// with that reason, its HTTP code and `scaleUpdateError` as the message: what client-go
	// returns for a real API server's answer, so that apierrors.IsConflict & co. see it (1.34
	// retries the UPDATE on a conflict, kubernetes/kubernetes#132007).
	Reason string `json:"scaleUpdateErrorReason"`
	// Failures is how many UPDATE attempts of this tick fail before the next one succeeds
	// (1: the first attempt only); absent: every attempt of the tick fails.
	Failures *int `json:"scaleUpdateFailures"`
}

// statusCodes are the HTTP codes the API server answers with each reason.
var statusCodes = map[metav1.StatusReason]int32{
	metav1.StatusReasonConflict:           409,
	metav1.StatusReasonNotFound:           404,
	metav1.StatusReasonForbidden:          403,
	metav1.StatusReasonUnauthorized:       401,
	metav1.StatusReasonInvalid:            422,
	metav1.StatusReasonBadRequest:         400,
	metav1.StatusReasonTooManyRequests:    429,
	metav1.StatusReasonServerTimeout:      500,
	metav1.StatusReasonTimeout:            504,
	metav1.StatusReasonInternalError:      500,
	metav1.StatusReasonServiceUnavailable: 503,
}

// readScaleUpdateFault reads the fault fields of a tick (only looked for when the tick has a
// `scaleUpdateError`, so other ticks cost nothing).
func readScaleUpdateFault(data []byte, tick *protocol.Tick) (scaleUpdateFault, error) {
	var f scaleUpdateFault
	if tick.ScaleUpdateError == nil || !bytes.Contains(data, []byte(`"scaleUpdateErrorReason"`)) && !bytes.Contains(data, []byte(`"scaleUpdateFailures"`)) {
		return f, nil
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return f, err
	}
	if f.Reason != "" {
		if _, ok := statusCodes[metav1.StatusReason(f.Reason)]; !ok {
			return f, fmt.Errorf("scaleUpdateErrorReason %q is not one of %v", f.Reason, sortedReasons())
		}
	}
	if f.Failures != nil && *f.Failures < 1 {
		return f, fmt.Errorf("scaleUpdateFailures %d: want at least 1 (absent: every attempt fails)", *f.Failures)
	}
	return f, nil
}

func sortedReasons() []string {
	out := make([]string, 0, len(statusCodes))
	for r := range statusCodes {
		out = append(out, string(r))
	}
	sort.Strings(out)
	return out
}

// err is the error an UPDATE scale attempt fails with.
func (f scaleUpdateFault) err(text string) error {
	if f.Reason == "" {
		return errors.New(text)
	}
	reason := metav1.StatusReason(f.Reason)
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    statusCodes[reason],
		Reason:  reason,
		Message: text,
	}}
}

// ---- metrics.k8s.io ----

func (h *harness) reactListPodMetrics(action core.Action) (bool, runtime.Object, error) {
	answer := h.tick.Metrics.Resource
	if answer.Error != nil {
		return true, nil, errors.New(*answer.Error)
	}
	// The items are the tick's, copied shallowly: the metrics client only reads them, and
	// nothing reads a tick's metrics after the tick.
	list := &metricsapi.PodMetricsList{Items: make([]metricsapi.PodMetrics, 0, len(answer.Items))}
	for _, m := range answer.Items {
		if m.Namespace == "" {
			m.Namespace = action.GetNamespace()
		}
		list.Items = append(list.Items, m)
	}
	return true, list, nil
}

// unfilteredPodMetrics is the metrics fake's PodMetricses getter, except that List returns the
// reactor's answer as is. (The generated fake filters list items by the label selector against
// the items' own labels; the harness sends the metrics API's answer, which is already the answer
// for the HPA's selector, and PodMetrics items need not carry the pods' labels.)
type unfilteredPodMetrics struct {
	fake *metricsfake.Clientset
}

func (u unfilteredPodMetrics) PodMetricses(namespace string) resourceclient.PodMetricsInterface {
	return unfilteredPodMetricsList{PodMetricsInterface: u.fake.MetricsV1beta1().PodMetricses(namespace), fake: u.fake, ns: namespace}
}

type unfilteredPodMetricsList struct {
	resourceclient.PodMetricsInterface
	fake *metricsfake.Clientset
	ns   string
}

func (u unfilteredPodMetricsList) List(ctx context.Context, opts metav1.ListOptions) (*metricsapi.PodMetricsList, error) {
	obj, err := u.fake.Invokes(core.NewListActionWithOptions(
		metricsapi.SchemeGroupVersion.WithResource("pods"),
		metricsapi.SchemeGroupVersion.WithKind("PodMetrics"),
		u.ns, opts), &metricsapi.PodMetricsList{})
	if err != nil {
		return nil, err
	}
	list, ok := obj.(*metricsapi.PodMetricsList)
	if !ok {
		return nil, fmt.Errorf("unexpected object %T in pod metrics list", obj)
	}
	return list, nil
}

// ---- helpers ----

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }
