//go:build hpaadapter

package server

// The adapter as a session of the Go kit (upstreamHPA, session), and what a case's `start` sets
// up: the feature gates (applyFeatureGates), kube-controller-manager's settings (resolve) and the
// controller's memory in and out (toController, fromController).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"runtime/debug"
	"testing/synctest"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	"k8s.io/kubernetes/pkg/controller/podautoscaler"

	kit "hpa-conformance/kits/go"
	"hpa-conformance/kits/go/protocol"
)

// fatalError ends the session: the adapter reports it on stderr and exits non-zero.
type fatalError struct{ msg string }

func (e fatalError) Error() string { return e.msg }

func fatalf(format string, args ...interface{}) error {
	return fatalError{msg: fmt.Sprintf(format, args...)}
}

// kubernetesVersion is set by build.sh (-ldflags -X) to the k8s.io/kubernetes version in go.mod.
var kubernetesVersion string

// KubernetesVersion is the k8s.io/kubernetes module version this binary was built against.
func KubernetesVersion() string {
	if kubernetesVersion != "" {
		return kubernetesVersion
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "k8s.io/kubernetes" {
				if dep.Replace != nil && dep.Replace.Version != "" {
					return dep.Replace.Version
				}
				return dep.Version
			}
		}
	}
	return "unknown"
}

// DeltaTicks is what hello declares: ticks may leave out the HPA and the pods when they equal
// the previous tick's, the metrics when they are its moved in time, and say the pods as changes
// to its (deltaTicks, deltaMetrics, deltaPods); `--full-ticks` turns all three off (`just bench`
// compares both).
var DeltaTicks = true

// ManyCases is what hello declares: one process serves cases until `stop` (`end` → `ended`
// between them). `--one-case-per-process` turns it off (the harness then starts a process per
// case, as before `end` existed; `just bench` compares both).
var ManyCases = true

// upstreamHPA is the adapter as an implementation on the Go kit (kits/go): the kit speaks the
// protocol and serves each case in its own testing/synctest bubble (kit.ServeBubbles, started
// by TestServeStepProtocol); each case gets a fresh upstream controller with its fakes, which
// reads every tick itself (kit.Decider) — the informers' store, the scale and metrics fakes —
// rather than through the kit's World.
type upstreamHPA struct {
	logw io.Writer
}

// Start builds the case's controller from start's gates and settings and says what it is.
func (u upstreamHPA) Start(start *protocol.Start) (kit.Session, kit.Info, error) {
	gates, h, ctx, cancel, err := begin(*start, u.logw)
	if err != nil {
		return nil, kit.Info{}, err
	}
	info := kit.Info{
		Name:    ImplementationName,
		Version: KubernetesVersion(),
		// The release this binary was built from (v1.37.2): the harness judges it as that.
		KubernetesVersion: KubernetesVersion(),
		Levels:            []string{protocol.LevelReplicas, protocol.LevelStatus, protocol.LevelFull},
		Features: []string{protocol.FeatureBehavior, protocol.FeatureContainerResource,
			protocol.FeatureMemorySeeding, protocol.FeatureMemoryReport, protocol.FeatureSeveralHPAs,
			protocol.FeatureExternalMetrics},
		FeatureGates:      gates,
		OneCasePerProcess: !ManyCases,
		FullTicks:         !DeltaTicks,
	}
	return &session{h: h, ctx: ctx, cancel: cancel, memory: start.Memory, reportMemory: start.ReportMemory, logw: u.logw}, info, nil
}

// session is one case: upstream's controller, the context its goroutines run on, and whether
// start's memory has been given to it yet.
type session struct {
	h            *harness
	ctx          context.Context
	cancel       context.CancelFunc
	memory       *protocol.Memory
	seeded       bool
	reportMemory bool
	logw         io.Writer
}

// Tick is never called: the kit hands a Decider the tick itself.
func (s *session) Tick(*kit.World) error {
	return fatalf("internal error: the kit called Tick on a Decider")
}

// Decide loads the tick into the fakes and the informers' store, runs one reconciliation of
// upstream's controller at the tick's instant (the bubble's clock, which the kit has advanced),
// and returns what the controller wrote.
func (s *session) Decide(tick *protocol.Tick, message []byte) (protocol.Result, error) {
	h := s.h
	hpa := tick.HPA.DeepCopy()
	if hpa.Namespace == "" {
		hpa.Namespace = "default"
	}
	key := hpa.Namespace + "/" + hpa.Name
	fault, err := readScaleUpdateFault(message, tick)
	if err != nil {
		return protocol.Result{}, err
	}
	// Pods a delta tick left out as unchanged are in the informer's store already.
	if err := h.load(tick, fault, hpa.Namespace, tick.Lists(protocol.UnchangedPods)); err != nil {
		return protocol.Result{}, err
	}
	h.ctrl.HPAAdapterTrack(hpa.Namespace, hpa.Name)
	others := []string{}
	for _, k := range tick.OtherHPAsSelectingPods {
		if k != key {
			others = append(others, k)
		}
	}
	h.ctrl.HPAAdapterSetOtherHPAs(h.otherHPAs, others)
	h.otherHPAs = others
	if !s.seeded {
		s.seeded = true
		if s.memory != nil {
			h.ctrl.HPAAdapterSeedMemory(key, toController(s.memory))
		}
	}

	if err := reconcile(s.ctx, h, hpa, key); err != nil {
		var fe fatalError
		if errors.As(err, &fe) {
			return protocol.Result{}, err
		}
		// An error of the reconciliation itself: the real controller logs it and requeues.
		fmt.Fprintf(s.logw, "t=%s: reconcile %s: %s\n", string(tick.T), key, oneLine(err.Error()))
	}
	// What the reconcile set going in the controller's goroutines settles before the answer.
	synctest.Wait()

	res := protocol.Result{Kind: "result", T: tick.T, ScaledTo: h.scaledTo, Events: h.events.Events}
	if h.status != nil {
		res.Status = protocol.Status(*h.status)
	} else {
		// Upstream wrote no status (it writes only a changed one): the HPA keeps the tick's.
		res.Status = protocol.Status(tick.HPA.Status)
		res.StatusUnwritten = true
	}
	if res.Events == nil {
		res.Events = []protocol.Event{}
	}
	if s.reportMemory {
		res.Memory = fromController(h.ctrl.HPAAdapterReadMemory(key))
	}
	return res, nil
}

// End stops the case's controller: its event broadcaster (on its context) and its work queue
// end, so the case's bubble can end.
func (s *session) End() {
	s.cancel()
	s.h.ctrl.HPAAdapterShutdown()
	// Before client-go v0.35 (Kubernetes 1.32–1.34) the work queue's goroutine notices the
	// shutdown only at its next tick (every 500 ms): let a virtual second pass, or the bubble
	// would end with that goroutine durably blocked (synctest panics).
	time.Sleep(time.Second)
}

// begin applies a `start` message: the feature gates (returning the values in effect) and the
// controller settings, and builds the controller with its fakes.
func begin(start protocol.Start, logw io.Writer) (map[string]bool, *harness, context.Context, context.CancelFunc, error) {
	gates := applyFeatureGates(start.FeatureGates, logw)
	settings, err := resolve(start.Settings)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return gates, newHarness(ctx, settings), ctx, cancel, nil
}

// reconcile runs one reconciliation, turning a panic of the controller into a fatal error.
func reconcile(ctx context.Context, h *harness, hpa *autoscalingv2.HorizontalPodAutoscaler, key string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fatalf("upstream controller panicked: %v\n%s", r, debug.Stack())
		}
	}()
	return h.ctrl.HPAAdapterReconcile(ctx, hpa, key)
}

// resolve checks start's settings (absent ones took kube-controller-manager's defaults when
// decoded, see protocol.Settings).
func resolve(s protocol.Settings) (controllerSettings, error) {
	check := func(name string, v float64) (float64, error) {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return 0, fatalf("bad setting %s = %v", name, v)
		}
		return v, nil
	}
	var c controllerSettings
	var err error
	if c.resyncPeriod, err = check("syncPeriodSeconds", s.SyncPeriodSeconds); err != nil {
		return c, err
	}
	if c.tolerance, err = check("tolerance", s.Tolerance); err != nil {
		return c, err
	}
	if c.cpuInitializationPeriod, err = check("cpuInitializationPeriodSeconds", s.CPUInitializationPeriodSeconds); err != nil {
		return c, err
	}
	if c.delayOfInitialReadinessStatus, err = check("initialReadinessDelaySeconds", s.InitialReadinessDelaySeconds); err != nil {
		return c, err
	}
	if c.downscaleStabilisationWindow, err = check("downscaleStabilizationSeconds", s.DownscaleStabilizationSeconds); err != nil {
		return c, err
	}
	if c.scaleUpLimitFactor, err = check("scaleUpLimitFactor", s.ScaleUpLimitFactor); err != nil {
		return c, err
	}
	if c.scaleUpLimitMinimum, err = check("scaleUpLimitMinimum", s.ScaleUpLimitMinimum); err != nil {
		return c, err
	}
	return c, nil
}

func toController(m *protocol.Memory) podautoscaler.HPAAdapterMemory {
	out := podautoscaler.HPAAdapterMemory{
		// A non-null memory means the controller has seen the HPA: no recommendations is
		// "seen, nothing recorded", never "never seen".
		Recommendations: []podautoscaler.HPAAdapterRecommendation{},
	}
	for _, r := range m.Recommendations {
		out.Recommendations = append(out.Recommendations, podautoscaler.HPAAdapterRecommendation{Replicas: r.Replicas, Time: r.Time})
	}
	events := func(in []protocol.ScaleEvent) []podautoscaler.HPAAdapterScaleEvent {
		if in == nil {
			return nil
		}
		out := make([]podautoscaler.HPAAdapterScaleEvent, 0, len(in))
		for _, e := range in {
			out = append(out, podautoscaler.HPAAdapterScaleEvent{Change: e.Change, Time: e.Time, Outdated: e.Outdated})
		}
		return out
	}
	out.ScaleUpEvents = events(m.ScaleUpEvents)
	out.ScaleDownEvents = events(m.ScaleDownEvents)
	return out
}

// fromController is the controller's memory of an HPA as the protocol reports it: lists in the
// controller's order, an absent entry as an empty list.
func fromController(m podautoscaler.HPAAdapterMemory) *protocol.Memory {
	out := &protocol.Memory{
		Recommendations: []protocol.Recommendation{},
		ScaleUpEvents:   []protocol.ScaleEvent{},
		ScaleDownEvents: []protocol.ScaleEvent{},
	}
	for _, r := range m.Recommendations {
		out.Recommendations = append(out.Recommendations, protocol.Recommendation{Replicas: r.Replicas, Time: r.Time.UTC()})
	}
	for _, e := range m.ScaleUpEvents {
		out.ScaleUpEvents = append(out.ScaleUpEvents, protocol.ScaleEvent{Change: e.Change, Time: e.Time.UTC(), Outdated: e.Outdated})
	}
	for _, e := range m.ScaleDownEvents {
		out.ScaleDownEvents = append(out.ScaleDownEvents, protocol.ScaleEvent{Change: e.Change, Time: e.Time.UTC(), Outdated: e.Outdated})
	}
	return out
}

// gatesAtStart holds the value each gate had before a case of this process first changed it.
var gatesAtStart = map[string]bool{}

// applyFeatureGates sets the requested gates that this Kubernetes knows and returns the values
// actually in effect for them. Disabling a gate also disables the gates that depend on it unless
// they were requested too (kube-controller-manager refuses a dependent gate left enabled, e.g.
// PodLevelResources=false with InPlacePodLevelResourcesVerticalScaling on by default). A request
// this release refuses (a gate locked to its default) leaves that gate as it is. Gates unknown to
// this release are left out of the answer, so the harness sees the difference and skips the case.
//
// A case asking for exactly the gates the previous call set (every fuzzed case of a batch does)
// finds them in effect already — nothing else in the process sets gates — and gets that call's
// answer and log lines again without every gate being put back and set anew, which was a
// twentieth of the adapter's CPU in fuzzing. Only a call whose gates were taken as a whole is
// remembered; after one refused, the next call goes through the whole procedure again.
func applyFeatureGates(requested map[string]bool, logw io.Writer) map[string]bool {
	if last := lastGates; last != nil && maps.Equal(last.requested, requested) {
		_, _ = logw.Write(last.log)
		return maps.Clone(last.inEffect)
	}
	var log bytes.Buffer
	inEffect, whole := setFeatureGates(requested, io.MultiWriter(logw, &log))
	lastGates = nil
	if whole {
		lastGates = &gatesCall{requested: maps.Clone(requested), inEffect: maps.Clone(inEffect), log: log.Bytes()}
	}
	return inEffect
}

// gatesCall is a call of applyFeatureGates whose gates were all taken: what it was asked, what
// it answered and what it logged.
type gatesCall struct {
	requested, inEffect map[string]bool
	log                 []byte
}

// lastGates is the last call of applyFeatureGates, when it can be answered again.
var lastGates *gatesCall

// setFeatureGates does applyFeatureGates' work, and says whether the gates were taken as a whole
// (no refusal, so no gate-by-gate retry).
func setFeatureGates(requested map[string]bool, logw io.Writer) (map[string]bool, bool) {
	gate := utilfeature.DefaultMutableFeatureGate
	// A process serving many cases starts each from the gates it started with: put back every
	// gate an earlier case changed.
	if len(gatesAtStart) > 0 {
		if err := gate.SetFromMap(gatesAtStart); err != nil {
			fmt.Fprintf(logw, "restoring feature gates: %s\n", oneLine(err.Error()))
		}
	}
	known := gate.GetAll()
	// Gate dependencies (component-base's Dependencies) exist from 1.35 on; before, none.
	var deps map[featuregate.Feature][]featuregate.Feature
	if g, ok := any(gate).(interface {
		Dependencies() map[featuregate.Feature][]featuregate.Feature
	}); ok {
		deps = g.Dependencies()
	}
	var names []string
	for _, name := range sortedKeys(requested) {
		if _, ok := known[featuregate.Feature(name)]; ok {
			names = append(names, name)
		} else {
			fmt.Fprintf(logw, "feature gate %s is unknown to Kubernetes %s; left out of hello\n", name, KubernetesVersion())
		}
	}

	// withDependents is {name: value}, plus {dependent: false} for every gate that transitively
	// depends on name when name is disabled, unless the dependent was requested explicitly.
	withDependents := func(name string, value bool) map[string]bool {
		m := map[string]bool{name: value}
		if value {
			return m
		}
		queue := []featuregate.Feature{featuregate.Feature(name)}
		for len(queue) > 0 {
			off := queue[0]
			queue = queue[1:]
			for dependent, on := range deps {
				if _, explicit := requested[string(dependent)]; explicit {
					continue
				}
				if _, done := m[string(dependent)]; done {
					continue
				}
				for _, d := range on {
					if d == off {
						m[string(dependent)] = false
						queue = append(queue, dependent)
						break
					}
				}
			}
		}
		return m
	}
	current := func(m map[string]bool) map[string]bool {
		out := map[string]bool{}
		for k := range m {
			out[k] = gate.Enabled(featuregate.Feature(k))
		}
		return out
	}

	all := map[string]bool{}
	for _, name := range names {
		for k, v := range withDependents(name, requested[name]) {
			if _, set := all[k]; !set || k == name {
				all[k] = v
			}
		}
	}
	before := current(all)
	for k, v := range before {
		if _, kept := gatesAtStart[k]; !kept {
			gatesAtStart[k] = v
		}
	}
	whole := true
	if err := gate.SetFromMap(all); err != nil {
		whole = false
		// SetFromMap remembers refused values and would re-apply them on every later call:
		// put back the values in effect, then set the gates one at a time.
		fmt.Fprintf(logw, "feature gates %v refused as a whole (%s); setting them one by one\n", all, oneLine(err.Error()))
		if err := gate.SetFromMap(before); err != nil {
			fmt.Fprintf(logw, "restoring feature gates: %s\n", oneLine(err.Error()))
		}
		for _, name := range names {
			m := withDependents(name, requested[name])
			was := current(m)
			if err := gate.SetFromMap(m); err != nil {
				fmt.Fprintf(logw, "feature gate %s=%v refused: %s\n", name, requested[name], oneLine(err.Error()))
				if err := gate.SetFromMap(was); err != nil {
					fmt.Fprintf(logw, "restoring feature gates: %s\n", oneLine(err.Error()))
				}
			}
		}
	}
	for k, v := range all {
		if _, explicit := requested[k]; !explicit && gate.Enabled(featuregate.Feature(k)) == v && before[k] != v {
			fmt.Fprintf(logw, "feature gate %s=%v (depends on a disabled requested gate)\n", k, v)
		}
	}

	inEffect := map[string]bool{}
	for _, name := range names {
		inEffect[name] = gate.Enabled(featuregate.Feature(name))
	}
	return inEffect, whole
}

func seconds(s float64) time.Duration {
	return time.Duration(math.Round(s * float64(time.Second)))
}
