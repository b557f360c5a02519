//go:build hpaadapter

package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime/debug"
	"strings"
	"testing/synctest"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	"k8s.io/kubernetes/pkg/controller/podautoscaler"

	"hpa-conformance/kits/go/protocol"
)

// Epoch is the protocol's t = 0, which is also where a synctest bubble's clock starts.
var Epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Line is one line read from the harness, or the read error that ended the input.
type Line struct {
	Data []byte
	Err  error
}

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
// the previous tick's; `--full-ticks` turns it off (`just bench` compares both).
var DeltaTicks = true

// ManyCases is what hello declares: one process serves cases until `stop` (`end` → `ended`
// between them). `--one-case-per-process` turns it off (the harness then starts a process per
// case, as before `end` existed; `just bench` compares both).
var ManyCases = true

// Outcome is how a case's session ended.
type Outcome struct {
	// Stopped: `stop` (or the end of input between cases): the process exits with status 0.
	Stopped bool
	// Ended names the case `end` ended: the controller's context is cancelled and its work
	// queue shut down, so the bubble's goroutines end; the caller answers `ended` once the bubble
	// is gone and serves the next case in a fresh one.
	Ended string
}

// Serve runs one case's protocol session: it reads messages from lines (fed by a goroutine
// outside the bubble), writes replies to out, and returns after `stop` or `end`. It must run
// inside a synctest bubble whose clock has not advanced yet (the bubble's clock is the protocol's
// virtual clock). afterCase says a case has ended before in this process: the end of input
// before `start` is then no error (the harness is done with the process).
func Serve(lines <-chan Line, out io.Writer, logw io.Writer, afterCase bool) (Outcome, error) {
	if !time.Now().Equal(Epoch) {
		return Outcome{}, fatalf("internal error: Serve must start in a fresh synctest bubble (clock at %s, not %s)", time.Now().UTC().Format(time.RFC3339Nano), Epoch.Format(time.RFC3339))
	}
	next := func() ([]byte, bool, error) {
		for {
			l, ok := <-lines
			if !ok {
				return nil, false, nil
			}
			if l.Err != nil {
				if errors.Is(l.Err, io.EOF) {
					return nil, false, nil
				}
				return nil, false, fatalf("reading stdin: %v", l.Err)
			}
			if len(strings.TrimSpace(string(l.Data))) == 0 {
				continue
			}
			return l.Data, true, nil
		}
	}

	// start → hello
	data, ok, err := next()
	if err != nil {
		return Outcome{}, err
	}
	if !ok {
		if afterCase {
			return Outcome{Stopped: true}, nil
		}
		return Outcome{}, fatalf("stdin closed before `start`")
	}
	var env protocol.Envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return Outcome{}, fatalf("first message is not valid JSON: %v", err)
	}
	if env.Kind == "stop" && afterCase {
		return Outcome{Stopped: true}, nil
	}
	if env.Kind != "start" {
		return Outcome{}, fatalf("expected `start`, got kind %q", env.Kind)
	}
	var start protocol.Start
	if err := json.Unmarshal(data, &start); err != nil {
		return Outcome{}, fatalf("bad `start` message: %v", err)
	}
	if start.Protocol != ProtocolVersion {
		return Outcome{}, fatalf("unsupported protocol version %d (this adapter speaks %d)", start.Protocol, ProtocolVersion)
	}
	gates, h, ctx, cancel, err := begin(start, logw)
	if err != nil {
		return Outcome{}, err
	}
	defer cancel()

	if err := WriteMessage(out, protocol.Hello{
		Kind:           "hello",
		Protocol:       ProtocolVersion,
		Implementation: protocol.Implementation{Name: ImplementationName, Version: KubernetesVersion()},
		FeatureGates:   gates,
		MemorySeeding:  true,
		Levels:         []string{"replicas", "status", "full"},
		Features:       []string{"behavior", "containerResource", "memorySeeding", "memoryReport", "severalHpas", "externalMetrics"},
		ManyCases:      ManyCases,
		DeltaTicks:     DeltaTicks,
		// The release this binary was built from (v1.37.2): the harness judges it as that.
		KubernetesVersion: KubernetesVersion(),
	}); err != nil {
		return Outcome{}, err
	}

	seeded := false
	// The case's previous tick, complete: what a delta tick leaves out comes from it.
	var prev *protocol.Tick
	for {
		data, ok, err := next()
		if err != nil {
			return Outcome{}, err
		}
		if !ok {
			return Outcome{}, fatalf("stdin closed before `stop`")
		}
		// One decoding of each message: a tick (by far the largest and most frequent message)
		// decodes straight into its type, whose `kind` says what the message is; the small
		// others are decoded again into theirs.
		var tick protocol.Tick
		if err := protocol.Decode(data, &tick); err != nil {
			var env protocol.Envelope
			if json.Unmarshal(data, &env) != nil {
				return Outcome{}, fatalf("message is not valid JSON: %v", err)
			}
			if env.Kind == "tick" {
				return Outcome{}, fatalf("bad `tick` message: %v", err)
			}
			tick.Kind = env.Kind
		}
		switch tick.Kind {
		case "stop":
			return Outcome{Stopped: true}, nil
		case "end":
			var end protocol.End
			if err := json.Unmarshal(data, &end); err != nil {
				return Outcome{}, fatalf("bad `end` message: %v", err)
			}
			// Everything of this case ends with the bubble: the controller's event broadcaster
			// (on its context) and its work queue.
			cancel()
			h.ctrl.HPAAdapterShutdown()
			// Before client-go v0.35 (Kubernetes 1.32–1.34) the work queue's goroutine notices
			// the shutdown only at its next tick (every 500 ms): let a virtual second pass, or
			// the bubble would end with that goroutine durably blocked (synctest panics).
			time.Sleep(time.Second)
			return Outcome{Ended: end.Case}, nil
		case "tick":
		default:
			return Outcome{}, fatalf("unknown message kind %q", tick.Kind)
		}

		if err := tick.Complete(prev); err != nil {
			return Outcome{}, fatalf("%v", err)
		}
		// Complete refuses a listed field without a previous tick.
		samePods := tick.Lists(protocol.UnchangedPods)
		prev = &tick
		at, err := instant(&tick)
		if err != nil {
			return Outcome{}, err
		}
		// Advance the bubble's clock to the tick's instant. Every goroutine of the bubble (the
		// controller's work queue and event broadcaster) runs the timers due on the way.
		if now := time.Now(); at.Before(now) {
			return Outcome{}, fatalf("tick %s at %s goes back in virtual time (already at %s)", string(tick.T), at.Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339Nano))
		}
		time.Sleep(at.Sub(time.Now()))
		synctest.Wait()
		if !time.Now().Equal(at) {
			return Outcome{}, fatalf("internal error: virtual clock at %s, wanted %s", time.Now().UTC().Format(time.RFC3339Nano), at.Format(time.RFC3339Nano))
		}

		hpa := tick.HPA.DeepCopy()
		if hpa.Namespace == "" {
			hpa.Namespace = "default"
		}
		key := hpa.Namespace + "/" + hpa.Name
		fault, err := readScaleUpdateFault(data, &tick)
		if err != nil {
			return Outcome{}, fatalf("tick %s: %v", string(tick.T), err)
		}
		if err := h.load(&tick, fault, hpa.Namespace, samePods); err != nil {
			return Outcome{}, fatalf("tick %s: %v", string(tick.T), err)
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
		if !seeded {
			seeded = true
			if start.Memory != nil {
				h.ctrl.HPAAdapterSeedMemory(key, toController(start.Memory))
			}
		}

		if err := reconcile(ctx, h, hpa, key); err != nil {
			var fe fatalError
			if errors.As(err, &fe) {
				return Outcome{}, fmt.Errorf("tick %s: %w", string(tick.T), err)
			}
			// An error of the reconciliation itself: the real controller logs it and requeues.
			fmt.Fprintf(logw, "t=%s: reconcile %s: %s\n", string(tick.T), key, oneLine(err.Error()))
		}
		synctest.Wait()

		res := protocol.Result{Kind: "result", T: tick.T, ScaledTo: h.scaledTo, Events: h.events}
		if h.status != nil {
			res.Status = protocol.Status(*h.status)
		} else {
			res.Status = protocol.Status(tick.HPA.Status)
		}
		if res.Events == nil {
			res.Events = []protocol.Event{}
		}
		if start.ReportMemory {
			res.Memory = fromController(h.ctrl.HPAAdapterReadMemory(key))
		}
		if err := WriteMessage(out, res); err != nil {
			return Outcome{}, err
		}
	}
}

// WriteMessage writes one protocol message as a JSON line.
func WriteMessage(out io.Writer, v interface{}) error {
	b, err := protocol.Encode(v)
	if err != nil {
		return fatalf("encoding %T: %v", v, err)
	}
	b = append(b, '\n')
	if _, err := out.Write(b); err != nil {
		return fatalf("writing stdout: %v", err)
	}
	return nil
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

// instant is the tick's virtual instant: `now` when given, else t = 0 + `t` seconds.
func instant(t *protocol.Tick) (time.Time, error) {
	if !t.Now.IsZero() {
		return t.Now.UTC(), nil
	}
	var secs float64
	if err := json.Unmarshal(t.T, &secs); err != nil {
		return time.Time{}, fatalf("tick without `now` and with a bad `t` %q: %v", string(t.T), err)
	}
	return Epoch.Add(seconds(secs)), nil
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
func applyFeatureGates(requested map[string]bool, logw io.Writer) map[string]bool {
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
	if err := gate.SetFromMap(all); err != nil {
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
	return inEffect
}

func seconds(s float64) time.Duration {
	return time.Duration(math.Round(s * float64(time.Second)))
}
