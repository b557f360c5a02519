package upstream_test

// End-to-end tests of the adapter: build bin/hpa-upstream-adapter with build.sh (once), then pipe
// step-protocol sessions through it exactly as the harness does and check its answers.
//
//	cd adapters/upstream && go test ./...
//
// Set HPA_UPSTREAM_VERSION=1.34.4 (or 1.34) to build and test that release's adapter (default:
// build.sh's), HPA_UPSTREAM_ADAPTER=/path/to/binary to test an already built adapter instead (of
// HPA_UPSTREAM_VERSION, else the default release).

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

var adapterBin string

// kubeVersion is the Kubernetes release under test ("1.36.4"), kubeMinor its minor (36).
var (
	kubeVersion string
	kubeMinor   int
)

// resolveVersion is the release folder of versions/ that v names (a release or its minor; empty:
// build.sh's default).
func resolveVersion(v string) (string, error) {
	if v == "" {
		b, err := os.ReadFile("build.sh")
		if err != nil {
			return "", err
		}
		m := regexp.MustCompile(`(?m)^default_version=(\S+)$`).FindSubmatch(b)
		if m == nil {
			return "", fmt.Errorf("build.sh names no default_version")
		}
		v = string(m[1])
	}
	v = strings.TrimPrefix(v, "v")
	if _, err := os.Stat(filepath.Join("versions", v, "go.mod")); err == nil {
		return v, nil
	}
	found, _ := filepath.Glob(filepath.Join("versions", v+".*", "go.mod"))
	if len(found) != 1 {
		return "", fmt.Errorf("no release %s in versions/", v)
	}
	return filepath.Base(filepath.Dir(found[0])), nil
}

func TestMain(m *testing.M) {
	var err error
	if kubeVersion, err = resolveVersion(os.Getenv("HPA_UPSTREAM_VERSION")); err != nil {
		fmt.Fprintf(os.Stderr, "HPA_UPSTREAM_VERSION: %v\n", err)
		os.Exit(1)
	}
	fmt.Sscanf(kubeVersion, "1.%d.", &kubeMinor)
	adapterBin = os.Getenv("HPA_UPSTREAM_ADAPTER")
	if adapterBin == "" {
		cmd := exec.Command("bash", "build.sh", kubeVersion)
		cmd.Env = append(os.Environ(), "GO="+filepath.Join(runtime.GOROOT(), "bin", "go"))
		cmd.Stdout = os.Stderr
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "build.sh failed: %v\n", err)
			os.Exit(1)
		}
		adapterBin = filepath.Join("bin", kubeVersion, "hpa-upstream-adapter")
	}
	os.Exit(m.Run())
}

// ---- messages ----

type obj = map[string]any

func start(gates obj, memory any) obj {
	return obj{
		"kind": "start", "protocol": 1, "case": "smoke", "featureGates": gates,
		"settings": obj{
			"syncPeriodSeconds": 15, "tolerance": 0.1, "cpuInitializationPeriodSeconds": 300,
			"initialReadinessDelaySeconds": 30, "downscaleStabilizationSeconds": 300,
		},
		"memory": memory,
	}
}

var defaultGates = obj{"HPAConfigurableTolerance": true, "HPAScaleToZero": false, "PodLevelResources": true}

func at(t int) string {
	return time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(t) * time.Second).Format(time.RFC3339)
}

func cpuHPA(status obj) obj {
	h := obj{
		"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
		"metadata": obj{"name": "web", "namespace": "default"},
		"spec": obj{
			"scaleTargetRef": obj{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
			"minReplicas":    1, "maxReplicas": 10,
			"metrics": []obj{{"type": "Resource", "resource": obj{"name": "cpu",
				"target": obj{"type": "Utilization", "averageUtilization": 50}}}},
		},
	}
	if status != nil {
		h["status"] = status
	}
	return h
}

func pod(i int) obj {
	return obj{
		"metadata": obj{"name": fmt.Sprintf("web-%04d", i), "namespace": "default", "labels": obj{"app": "web"}},
		"spec":     obj{"containers": []obj{{"name": "app", "resources": obj{"requests": obj{"cpu": "1"}}}}},
		"status": obj{"phase": "Running", "startTime": "1999-12-31T23:00:00Z",
			"conditions": []obj{{"type": "Ready", "status": "True", "lastTransitionTime": "1999-12-31T23:00:00Z"}}},
	}
}

// tick builds a tick of `replicas` ready pods, each using `cpu` of its 1-CPU request.
func tick(t, replicas int, cpu string, hpa obj) obj {
	pods := []obj{}
	items := []obj{}
	for i := 0; i < replicas; i++ {
		pods = append(pods, pod(i))
		items = append(items, obj{
			"metadata":  obj{"name": fmt.Sprintf("web-%04d", i), "namespace": "default"},
			"timestamp": at(t), "window": "30s",
			"containers": []obj{{"name": "app", "usage": obj{"cpu": cpu}}},
		})
	}
	return obj{
		"kind": "tick", "t": t, "now": at(t), "hpa": hpa,
		"scale":      obj{"spec": obj{"replicas": replicas}, "status": obj{"replicas": replicas, "selector": "app=web"}},
		"scaleError": nil, "scaleUpdateError": nil,
		"pods":    pods,
		"metrics": obj{"resource": obj{"items": items}, "pods": obj{}, "object": obj{}, "external": obj{}},
	}
}

type event struct{ Type, Reason, Message string }

type result struct {
	Kind     string          `json:"kind"`
	T        json.RawMessage `json:"t"`
	ScaledTo *int32          `json:"scaledTo"`
	Status   struct {
		LastScaleTime   *string `json:"lastScaleTime"`
		CurrentReplicas int32   `json:"currentReplicas"`
		DesiredReplicas int32   `json:"desiredReplicas"`
		Conditions      []struct {
			Type, Status, Reason, Message string
		} `json:"conditions"`
	} `json:"status"`
	Events []event `json:"events"`
	raw    obj
}

func (r result) condition(typ string) string {
	for _, c := range r.Status.Conditions {
		if c.Type == typ {
			return c.Status + "/" + c.Reason
		}
	}
	return "<none>"
}

func (r result) reasons() []string {
	out := []string{}
	for _, e := range r.Events {
		out = append(out, e.Type+" "+e.Reason)
	}
	return out
}

// session pipes start, the ticks and stop through a fresh adapter process; it returns the hello
// and one result per tick, and fails the test on anything but a clean protocol stream and exit 0.
func session(t *testing.T, startMsg obj, ticks ...obj) (obj, []result) {
	t.Helper()
	lines := pipe(t, append(append([]obj{startMsg}, ticks...), obj{"kind": "stop"})...)
	if len(lines) != 1+len(ticks) {
		t.Fatalf("stdout has %d lines, want hello + %d results:\n%s", len(lines), len(ticks), bytes.Join(lines, []byte("\n")))
	}
	var hello obj
	if err := json.Unmarshal(lines[0], &hello); err != nil || hello["kind"] != "hello" {
		t.Fatalf("first line is not a hello (%v): %s", err, lines[0])
	}
	var results []result
	for i, l := range lines[1:] {
		var r result
		if err := json.Unmarshal(l, &r); err != nil || r.Kind != "result" {
			t.Fatalf("line %d is not a result (%v): %s", i+2, err, l)
		}
		_ = json.Unmarshal(l, &r.raw)
		if want, _ := json.Marshal(ticks[i]["t"]); string(r.T) != string(want) {
			t.Fatalf("result %d echoes t=%s, want %s", i, r.T, want)
		}
		results = append(results, r)
	}
	return hello, results
}

// ---- tests ----

// --cpuprofile=FILE writes a CPU profile of the session (gzip-compressed pprof) when `stop` comes.
func TestCPUProfile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cpu.prof")
	lines := pipeArgs(t, []string{"--cpuprofile=" + file},
		start(defaultGates, nil), tick(0, 3, "900m", cpuHPA(nil)), obj{"kind": "stop"})
	if len(lines) != 2 {
		t.Fatalf("stdout has %d lines, want hello + 1 result", len(lines))
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("%s is not a gzip-compressed profile (%d bytes)", file, len(b))
	}
}

// The scenario the harness's own smoke case uses: 3 ready pods at 900m of a 1-CPU request against
// a 50% CPU utilization target → ceil(3 × 90/50) = 6.
func TestSmokeScaleUp(t *testing.T) {
	hello, results := session(t, start(defaultGates, nil), tick(0, 3, "900m", cpuHPA(nil)))

	impl := hello["implementation"].(obj)
	if impl["name"] != "upstream-kube-controller-manager" {
		t.Errorf("implementation name %v", impl["name"])
	}
	goMod, err := os.ReadFile(filepath.Join("versions", kubeVersion, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	pinned := regexp.MustCompile(`(?m)^\s*k8s\.io/kubernetes (v\S+)`).FindSubmatch(goMod)
	if pinned == nil || impl["version"] != string(pinned[1]) || impl["version"] != "v"+kubeVersion {
		t.Errorf("implementation version %v, versions/%s/go.mod pins %s", impl["version"], kubeVersion, pinned)
	}
	if hello["protocol"] != float64(1) || hello["memorySeeding"] != true {
		t.Errorf("hello %v", hello)
	}
	gates, _ := json.Marshal(hello["featureGates"])
	wantGates := obj{}
	for k, v := range defaultGates {
		// HPAConfigurableTolerance came in 1.33: unknown before, so left out of hello.
		if k != "HPAConfigurableTolerance" || kubeMinor >= 33 {
			wantGates[k] = v
		}
	}
	if want, _ := json.Marshal(wantGates); string(gates) != string(want) {
		t.Errorf("hello gates %s, want %s", gates, want)
	}

	r := results[0]
	if r.ScaledTo == nil || *r.ScaledTo != 6 {
		t.Fatalf("scaledTo %v, want 6 (%s)", r.ScaledTo, r.raw)
	}
	if r.Status.DesiredReplicas != 6 || r.Status.CurrentReplicas != 3 {
		t.Errorf("status current/desired %d/%d, want 3/6", r.Status.CurrentReplicas, r.Status.DesiredReplicas)
	}
	if r.Status.LastScaleTime == nil || *r.Status.LastScaleTime != "2000-01-01T00:00:00Z" {
		t.Errorf("lastScaleTime %v, want the virtual t=0", r.Status.LastScaleTime)
	}
	if len(r.Events) != 1 || r.Events[0].Type != "Normal" || r.Events[0].Reason != "SuccessfulRescale" ||
		r.Events[0].Message != "New size: 6; reason: cpu resource utilization (percentage of request) above target" {
		t.Errorf("events %+v", r.Events)
	}
	if got := r.condition("AbleToScale"); got != "True/SucceededRescale" {
		t.Errorf("AbleToScale %s", got)
	}
	if got := r.condition("ScalingActive"); got != "True/ValidMetricFound" {
		t.Errorf("ScalingActive %s", got)
	}
}

// Virtual time across ticks: the t=0 recommendations hold a scale-down for the 300 s downscale
// stabilization window, then the scale-down happens and lastScaleTime is the virtual instant.
func TestDownscaleStabilizationInVirtualTime(t *testing.T) {
	_, rs := session(t, start(defaultGates, nil),
		tick(0, 3, "900m", cpuHPA(nil)),
		tick(15, 6, "100m", cpuHPA(nil)),
		tick(300, 6, "100m", cpuHPA(nil)),
		tick(315, 6, "100m", cpuHPA(nil)),
	)
	if rs[0].ScaledTo == nil || *rs[0].ScaledTo != 6 {
		t.Fatalf("t=0: scaledTo %v, want 6", rs[0].ScaledTo)
	}
	for i, r := range rs[1:3] {
		if r.ScaledTo != nil {
			t.Errorf("tick %d: scaled to %d inside the stabilization window", i+1, *r.ScaledTo)
		}
		if got := r.condition("AbleToScale"); got != "True/ScaleDownStabilized" {
			t.Errorf("tick %d: AbleToScale %s, want True/ScaleDownStabilized", i+1, got)
		}
	}
	// At t=300 the t=0 recommendations are exactly at the cutoff: not Before it, still counted.
	// At t=315 they are old; the newest are 10% → ceil(6 × 10/50) = 2.
	r := rs[3]
	if r.ScaledTo == nil || *r.ScaledTo != 2 {
		t.Fatalf("t=315: scaledTo %v, want 2 (%s)", r.ScaledTo, r.raw)
	}
	if r.Status.LastScaleTime == nil || *r.Status.LastScaleTime != "2000-01-01T00:05:15Z" {
		t.Errorf("t=315: lastScaleTime %v", r.Status.LastScaleTime)
	}
	if got := r.reasons(); len(got) != 1 || got[0] != "Normal SuccessfulRescale" {
		t.Errorf("t=315: events %v", got)
	}
}

// Memory seeding: a fresh controller records the current size as a recommendation and will not
// scale down; a seeded empty recommendation list ("seen before, nothing recorded") lets it.
func TestMemorySeeding(t *testing.T) {
	_, fresh := session(t, start(defaultGates, nil), tick(0, 4, "100m", cpuHPA(nil)))
	if fresh[0].ScaledTo != nil {
		t.Errorf("fresh controller scaled to %d", *fresh[0].ScaledTo)
	}
	_, seeded := session(t, start(defaultGates, obj{"recommendations": []obj{}}), tick(0, 4, "100m", cpuHPA(nil)))
	if seeded[0].ScaledTo == nil || *seeded[0].ScaledTo != 1 {
		t.Errorf("seeded controller: scaledTo %v, want 1 (%s)", seeded[0].ScaledTo, seeded[0].raw)
	}
	_, held := session(t, start(defaultGates, obj{"recommendations": []obj{{"replicas": 3, "time": "1999-12-31T23:59:00Z"}}}),
		tick(0, 4, "100m", cpuHPA(nil)))
	if held[0].ScaledTo == nil || *held[0].ScaledTo != 3 {
		t.Errorf("seeded recommendation 3: scaledTo %v, want 3 (%s)", held[0].ScaledTo, held[0].raw)
	}
}

// Errors of the world reach the controller as API errors.
func TestErrorPaths(t *testing.T) {
	getErr := tick(0, 3, "900m", cpuHPA(nil))
	getErr["scale"] = nil
	getErr["scaleError"] = "deployments.apps \"web\" not found"
	updErr := tick(15, 3, "900m", cpuHPA(nil))
	updErr["scaleUpdateError"] = "the server is on fire"
	metErr := tick(30, 3, "900m", cpuHPA(nil))
	metErr["metrics"].(obj)["resource"] = obj{"error": "metrics-server is down"}

	_, rs := session(t, start(defaultGates, nil), getErr, updErr, metErr)

	if got := rs[0].reasons(); strings.Join(got, ",") != "Warning FailedGetScale" {
		t.Errorf("get-scale error: events %v", got)
	}
	if got := rs[0].condition("AbleToScale"); got != "False/FailedGetScale" {
		t.Errorf("get-scale error: AbleToScale %s", got)
	}
	if rs[1].ScaledTo != nil {
		t.Errorf("update error: scaledTo %d, want null", *rs[1].ScaledTo)
	}
	if got := rs[1].reasons(); strings.Join(got, ",") != "Warning FailedRescale" {
		t.Errorf("update error: events %v", got)
	} else if !strings.Contains(rs[1].Events[0].Message, "the server is on fire") {
		t.Errorf("update error: message %q", rs[1].Events[0].Message)
	}
	if got := rs[1].condition("AbleToScale"); got != "False/FailedUpdateScale" {
		t.Errorf("update error: AbleToScale %s", got)
	}
	if got := rs[2].reasons(); strings.Join(got, ",") != "Warning FailedGetResourceMetric,Warning FailedComputeMetricsReplicas" {
		t.Errorf("metrics error: events %v", got)
	}
	if got := rs[2].condition("ScalingActive"); got != "False/FailedGetResourceMetric" {
		t.Errorf("metrics error: ScalingActive %s", got)
	}
}

// A 409 Conflict on the first UPDATE of the scale only (the tick fields scaleUpdateErrorReason and
// scaleUpdateFailures, a proposed protocol extension; README.md): from 1.34 the controller retries
// the update on a conflict (kubernetes/kubernetes#132007) and rescales in the same reconcile;
// before, the rescale fails. The same text without the Conflict reason is no conflict to any
// release, and a conflict on every attempt fails on every release (1.34 gives up after
// retry.DefaultRetry's 5 attempts).
func TestConflictOnFirstScaleUpdate(t *testing.T) {
	const text = `Operation cannot be fulfilled on deployments.apps "web": the object has been modified; please apply your changes to the latest version and try again`
	conflict := func(reason string, failures any) obj {
		c := tick(0, 3, "900m", cpuHPA(nil))
		c["scaleUpdateError"] = text
		if reason != "" {
			c["scaleUpdateErrorReason"] = reason
		}
		if failures != nil {
			c["scaleUpdateFailures"] = failures
		}
		return c
	}
	for _, tc := range []struct {
		name    string
		tick    obj
		retried bool // rescaled despite the error
	}{
		{"typed 409 on the first attempt", conflict("Conflict", 1), kubeMinor >= 34},
		{"the same text untyped", conflict("", 1), false},
		{"typed 409 on every attempt", conflict("Conflict", nil), false},
		{"typed 409 on the first four attempts", conflict("Conflict", 4), kubeMinor >= 34},
		{"typed 409 on the first five attempts", conflict("Conflict", 5), false},
	} {
		_, rs := session(t, start(defaultGates, nil), tc.tick)
		r := rs[0]
		if tc.retried {
			if r.ScaledTo == nil || *r.ScaledTo != 6 || strings.Join(r.reasons(), ",") != "Normal SuccessfulRescale" || r.condition("AbleToScale") != "True/SucceededRescale" {
				t.Errorf("%s (1.%d retries on a conflict): scaledTo %v, events %v, AbleToScale %s", tc.name, kubeMinor, r.ScaledTo, r.reasons(), r.condition("AbleToScale"))
			}
		} else {
			if r.ScaledTo != nil || strings.Join(r.reasons(), ",") != "Warning FailedRescale" || r.condition("AbleToScale") != "False/FailedUpdateScale" {
				t.Errorf("%s (1.%d): scaledTo %v, events %v, AbleToScale %s; want a failed rescale", tc.name, kubeMinor, r.ScaledTo, r.reasons(), r.condition("AbleToScale"))
			} else if !strings.Contains(r.Events[0].Message, "the object has been modified") {
				t.Errorf("%s: message %q", tc.name, r.Events[0].Message)
			}
		}
	}
}

// The adapter folder's go.mod/go.sum (what `go test`, gopls and editors read) are the default
// release's, versions/<default>/.
func TestTopLevelModuleIsTheDefaultRelease(t *testing.T) {
	def, err := resolveVersion("")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"go.mod", "go.sum"} {
		top, err1 := os.ReadFile(f)
		ver, err2 := os.ReadFile(filepath.Join("versions", def, f))
		if err1 != nil || err2 != nil || !bytes.Equal(top, ver) {
			t.Errorf("%s differs from versions/%s/%s (%v, %v): copy it over, or run versions/gen.sh %s", f, def, f, err1, err2, def)
		}
	}
}

// A gate this Kubernetes does not know is left out of hello, so the harness skips the case.
func TestUnknownGateIsLeftOut(t *testing.T) {
	hello, _ := session(t, start(obj{"HPAScaleToZero": true, "NoSuchGate": true}, nil))
	gates := hello["featureGates"].(obj)
	if gates["HPAScaleToZero"] != true {
		t.Errorf("HPAScaleToZero not enabled: %v", gates)
	}
	if _, ok := gates["NoSuchGate"]; ok {
		t.Errorf("unknown gate reported: %v", gates)
	}
}

// Pods, Object and External metrics come from the custom and external metrics fakes; the largest
// proposal wins. qps: 1500m/1 → ceil(3 × 1.5) = 5; requests-per-second: 20/10 → ceil(3 × 2) = 6;
// queue_depth: 30/(10 × 3) = 1.0 → 3.
func TestCustomObjectAndExternalMetrics(t *testing.T) {
	hpa := cpuHPA(nil)
	hpa["spec"].(obj)["metrics"] = []obj{
		{"type": "Pods", "pods": obj{"metric": obj{"name": "qps"}, "target": obj{"type": "AverageValue", "averageValue": "1"}}},
		{"type": "Object", "object": obj{"metric": obj{"name": "requests-per-second"},
			"describedObject": obj{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "main"},
			"target":          obj{"type": "Value", "value": "10"}}},
		{"type": "External", "external": obj{"metric": obj{"name": "queue_depth"}, "target": obj{"type": "AverageValue", "averageValue": "10"}}},
	}
	tk := tick(0, 3, "900m", hpa)
	m := tk["metrics"].(obj)
	m["resource"] = obj{"items": []obj{}}
	m["pods"] = obj{"qps": obj{"items": []obj{
		{"pod": "web-0000", "value": "1500m", "timestamp": at(0), "windowSeconds": 30},
		{"pod": "web-0001", "value": "1500m", "timestamp": at(0), "windowSeconds": 30},
		{"pod": "web-0002", "value": "1500m", "timestamp": at(0), "windowSeconds": 30},
	}}}
	m["object"] = obj{"requests-per-second": obj{"value": "20", "timestamp": at(0)}}
	m["external"] = obj{"queue_depth": obj{"items": []obj{{"value": "30", "timestamp": at(0)}}}}

	// The same with the nested object-answer spelling, and with the object metric missing.
	nested := tick(15, 3, "900m", hpa)
	nested["metrics"] = m
	nm := obj{}
	for k, v := range m {
		nm[k] = v
	}
	nm["object"] = obj{"requests-per-second": obj{"value": obj{"value": "40", "timestamp": at(15)}}}
	nested["metrics"] = nm
	missing := tick(30, 3, "900m", hpa)
	mm := obj{}
	for k, v := range m {
		mm[k] = v
	}
	mm["object"] = obj{}
	missing["metrics"] = mm

	_, rs := session(t, start(defaultGates, obj{"recommendations": []obj{}}), tk, nested, missing)
	if rs[0].ScaledTo == nil || *rs[0].ScaledTo != 6 {
		t.Fatalf("scaledTo %v, want 6 (%s)", rs[0].ScaledTo, rs[0].raw)
	}
	if n := len(rs[0].raw["status"].(obj)["currentMetrics"].([]any)); n != 3 {
		t.Errorf("%d current metrics, want 3", n)
	}
	// 40/10 → ceil(3 × 4) = 12, capped by the scale-up limit max(2 × 3, 4) = 6.
	if rs[1].ScaledTo == nil || *rs[1].ScaledTo != 6 {
		t.Errorf("nested object answer: scaledTo %v, want 6 (%s)", rs[1].ScaledTo, rs[1].raw)
	}
	// One invalid metric, the others say scale up: scaling goes on with the valid maximum (qps → 5),
	// which the no-behavior stabilization lifts to the recent recommendations' 6.
	found := false
	for _, e := range rs[2].Events {
		if e.Reason == "FailedGetObjectMetric" && strings.Contains(e.Message, "the server could not find the metric requests-per-second for Ingress main") {
			found = true
		}
	}
	if !found {
		t.Errorf("missing object metric: events %+v", rs[2].Events)
	}
}

// tick.otherHpasSelectingPods registers other HPAs selecting the pods: upstream then refuses to
// scale with AmbiguousSelector; once they are gone it scales again.
func TestOtherHPAsMakeTheSelectorAmbiguous(t *testing.T) {
	amb := tick(0, 3, "900m", cpuHPA(nil))
	amb["otherHpasSelectingPods"] = []string{"default/other"}
	_, rs := session(t, start(defaultGates, nil), amb, tick(15, 3, "900m", cpuHPA(nil)))
	if rs[0].ScaledTo != nil {
		t.Errorf("ambiguous selector: scaled to %d", *rs[0].ScaledTo)
	}
	if got := strings.Join(rs[0].reasons(), ","); got != "Warning AmbiguousSelector,Warning FailedComputeMetricsReplicas" {
		t.Errorf("ambiguous selector: events %s", got)
	}
	if got := rs[0].condition("ScalingActive"); got != "False/AmbiguousSelector" {
		t.Errorf("ambiguous selector: ScalingActive %s", got)
	}
	if rs[1].ScaledTo == nil || *rs[1].ScaledTo != 6 {
		t.Errorf("other HPA gone: scaledTo %v, want 6 (%s)", rs[1].ScaledTo, rs[1].raw)
	}
}

// settings.scaleUpLimitFactor/Minimum set upstream's package variables: 90% against a 10% target
// proposes ceil(3 × 9) = 27; the no-behavior limit is max(2 × 3, 4) = 6 by default and
// max(8 × 3, 4) = 24 with factor 8 (what upstream's unit tests use).
func TestScaleUpLimitSettings(t *testing.T) {
	hpa := cpuHPA(nil)
	spec := hpa["spec"].(obj)
	spec["maxReplicas"] = 100
	spec["metrics"].([]obj)[0]["resource"].(obj)["target"].(obj)["averageUtilization"] = 10
	for _, tc := range []struct {
		factor any
		want   int32
	}{{nil, 6}, {8, 24}} {
		st := start(defaultGates, nil)
		if tc.factor != nil {
			st["settings"].(obj)["scaleUpLimitFactor"] = tc.factor
			st["settings"].(obj)["scaleUpLimitMinimum"] = 4
		}
		_, rs := session(t, st, tick(0, 3, "900m", hpa))
		if rs[0].ScaledTo == nil || *rs[0].ScaledTo != tc.want {
			t.Errorf("factor %v: scaledTo %v, want %d", tc.factor, rs[0].ScaledTo, tc.want)
		}
		if got := rs[0].condition("ScalingLimited"); got != "True/ScaleUpLimit" {
			t.Errorf("factor %v: ScalingLimited %s", tc.factor, got)
		}
	}
}

// pipe sends msgs through one adapter process and returns its stdout lines, failing the test on
// anything but exit 0 within 60 s (its stderr is logged).
func pipe(t *testing.T, msgs ...obj) [][]byte {
	t.Helper()
	return pipeArgs(t, nil, msgs...)
}

// pipeArgs is pipe with extra command-line arguments after --step-protocol.
func pipeArgs(t *testing.T, args []string, msgs ...obj) [][]byte {
	t.Helper()
	lines, _ := pipeStderr(t, args, msgs...)
	return lines
}

// pipeStderr is pipeArgs that also returns what the adapter wrote to stderr.
func pipeStderr(t *testing.T, args []string, msgs ...obj) ([][]byte, string) {
	t.Helper()
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for _, m := range msgs {
		if err := enc.Encode(m); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(adapterBin, append([]string{"--step-protocol"}, args...)...)
	cmd.Stdin = &in
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("adapter exited with %v; stdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
		}
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("adapter did not finish within 60s; stderr:\n%s", stderr.String())
	}
	t.Logf("stderr:\n%s", stderr.String())
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	var lines [][]byte
	for sc.Scan() {
		lines = append(lines, append([]byte(nil), sc.Bytes()...))
	}
	return lines, stderr.String()
}

func kindOf(t *testing.T, line []byte) string {
	t.Helper()
	var m obj
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatalf("not JSON: %s", line)
	}
	k, _ := m["kind"].(string)
	return k
}

// One process serves many cases (hello declares manyCases): after `end` it answers `ended`
// and takes the next `start` in a fresh virtual clock with nothing left of the case before —
// no recommendation, no gate, no time — so a case run third gives exactly what it gave first.
func TestManyCasesInOneProcess(t *testing.T) {
	named := func(m obj, name string) obj { m["case"] = name; return m }
	noPodLevel := obj{"HPAConfigurableTolerance": true, "HPAScaleToZero": false, "PodLevelResources": false}
	caseA := []obj{named(start(noPodLevel, nil), "a"),
		tick(0, 3, "900m", cpuHPA(nil)), tick(15, 6, "100m", cpuHPA(nil))}
	// Seen before with nothing recorded: it scales down at once, which it would not with the
	// t=0 recommendation of case a still in memory.
	caseB := []obj{named(start(defaultGates, obj{"recommendations": []obj{}}), "b"),
		tick(0, 4, "100m", cpuHPA(nil))}
	caseC := []obj{named(start(defaultGates, nil), "c"),
		tick(0, 3, "900m", cpuHPA(nil)), tick(15, 6, "100m", cpuHPA(nil))}
	var msgs []obj
	for _, c := range [][]obj{caseA, caseB, caseC} {
		msgs = append(msgs, c...)
		msgs = append(msgs, obj{"kind": "end", "case": c[0]["case"]})
	}
	msgs = append(msgs, obj{"kind": "stop"})
	lines := pipe(t, msgs...)
	want := []string{"hello", "result", "result", "ended", "hello", "result", "ended", "hello", "result", "result", "ended"}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), bytes.Join(lines, []byte("\n")))
	}
	for i, k := range want {
		if got := kindOf(t, lines[i]); got != k {
			t.Fatalf("line %d is %q, want %q: %s", i+1, got, k, lines[i])
		}
	}
	var hello obj
	_ = json.Unmarshal(lines[0], &hello)
	if hello["manyCases"] != true {
		t.Errorf("hello does not declare manyCases: %s", lines[0])
	}
	if string(lines[3]) != `{"kind":"ended","case":"a"}` {
		t.Errorf("ended: %s", lines[3])
	}
	var gatesA, gatesC struct {
		FeatureGates map[string]bool `json:"featureGates"`
	}
	_ = json.Unmarshal(lines[0], &gatesA)
	_ = json.Unmarshal(lines[7], &gatesC)
	if gatesA.FeatureGates["PodLevelResources"] || !gatesC.FeatureGates["PodLevelResources"] {
		t.Errorf("gates: case a %v, case c %v", gatesA.FeatureGates, gatesC.FeatureGates)
	}
	var b result
	_ = json.Unmarshal(lines[5], &b)
	if b.ScaledTo == nil || *b.ScaledTo != 1 {
		t.Errorf("case b: scaledTo %v, want 1 (nothing of case a remembered): %s", b.ScaledTo, lines[5])
	}
	for i := 1; i <= 2; i++ {
		if !bytes.Equal(lines[i], lines[7+i]) {
			t.Errorf("case c tick %d differs from case a's:\n%s\n%s", i, lines[i], lines[7+i])
		}
	}
	var a0 result
	_ = json.Unmarshal(lines[1], &a0)
	if a0.ScaledTo == nil || *a0.ScaledTo != 6 {
		t.Errorf("case a t=0: scaledTo %v, want 6", a0.ScaledTo)
	}
}

// Cases asking for the gates the case before them set are answered as a first case with those
// gates would be (the adapter keeps the last call's answer instead of setting every gate again):
// the same gates in hello, the same results, the same log line for a gate this release does not
// know — also when other gates came in between.
func TestTheSameGatesAgainAnswerAsTheFirstTime(t *testing.T) {
	named := func(m obj, name string) obj { m["case"] = name; return m }
	noPodLevel := func() obj {
		return obj{"HPAConfigurableTolerance": true, "HPAScaleToZero": false, "PodLevelResources": false, "NoSuchGate": true}
	}
	run := func(name string, gates obj) []obj {
		return []obj{named(start(gates, nil), name),
			tick(0, 3, "900m", cpuHPA(nil)), tick(15, 6, "100m", cpuHPA(nil)),
			{"kind": "end", "case": name}}
	}
	var msgs []obj
	for _, c := range [][]obj{run("a", noPodLevel()), run("b", noPodLevel()), run("c", defaultGates), run("d", noPodLevel())} {
		msgs = append(msgs, c...)
	}
	lines, stderr := pipeStderr(t, nil, append(msgs, obj{"kind": "stop"})...)
	if len(lines) != 16 {
		t.Fatalf("%d lines, want 4 × (hello, 2 results, ended):\n%s", len(lines), bytes.Join(lines, []byte("\n")))
	}
	gates := func(i int) string {
		var h struct {
			FeatureGates map[string]bool `json:"featureGates"`
		}
		if err := json.Unmarshal(lines[i], &h); err != nil || kindOf(t, lines[i]) != "hello" {
			t.Fatalf("line %d is not a hello: %s", i+1, lines[i])
		}
		b, _ := json.Marshal(h.FeatureGates)
		return string(b)
	}
	a, c := gates(0), gates(8)
	if a == c || strings.Contains(a, "NoSuchGate") {
		t.Fatalf("case a's gates %s, case c's %s: want PodLevelResources apart and NoSuchGate left out", a, c)
	}
	for _, i := range []int{4, 12} {
		if g := gates(i); g != a {
			t.Errorf("hello of line %d has gates %s, the first case with the same request %s", i+1, g, a)
		}
		for j := 1; j <= 2; j++ {
			if !bytes.Equal(lines[i+j], lines[j]) {
				t.Errorf("line %d differs from case a's result:\n%s\n%s", i+j+1, lines[i+j], lines[j])
			}
		}
	}
	if n := strings.Count(stderr, "feature gate NoSuchGate is unknown"); n != 3 {
		t.Errorf("the unknown gate is logged %d times, want once per case that asks for it (3):\n%s", n, stderr)
	}
}

// Delta ticks (hello declares deltaTicks): a tick that leaves out the HPA and the pods as
// unchanged is decided exactly as the complete tick; `--full-ticks` takes the declaration back;
// a delta tick with nothing before it ends the session with the reason.
func TestDeltaTicks(t *testing.T) {
	delta := func(m obj) obj {
		delete(m, "hpa")
		delete(m, "pods")
		m["unchanged"] = []string{"hpa", "pods"}
		return m
	}
	ticks := func() []obj {
		return []obj{tick(0, 4, "900m", cpuHPA(nil)), tick(15, 4, "100m", cpuHPA(nil)), tick(30, 4, "300m", cpuHPA(nil))}
	}
	full := ticks()
	hello, complete := session(t, start(defaultGates, nil), full...)
	if hello["deltaTicks"] != true {
		t.Errorf("hello does not declare deltaTicks: %v", hello)
	}
	left := ticks()
	left[1], left[2] = delta(left[1]), delta(left[2])
	_, rebuilt := session(t, start(defaultGates, nil), left...)
	for i := range complete {
		a, _ := json.Marshal(complete[i].raw)
		b, _ := json.Marshal(rebuilt[i].raw)
		if !bytes.Equal(a, b) {
			t.Errorf("tick %d: a delta tick is decided differently:\n%s\n%s", i, a, b)
		}
	}
	if complete[1].ScaledTo == nil {
		t.Errorf("t=15 should scale (the metrics changed, the pods did not): %s", complete[1].raw)
	}

	lines := pipeArgs(t, []string{"--full-ticks"}, start(defaultGates, nil), obj{"kind": "stop"})
	var h obj
	_ = json.Unmarshal(lines[0], &h)
	if _, ok := h["deltaTicks"]; ok {
		t.Errorf("--full-ticks: hello still declares deltaTicks: %s", lines[0])
	}

	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	_ = enc.Encode(start(defaultGates, nil))
	_ = enc.Encode(delta(tick(0, 4, "900m", cpuHPA(nil))))
	cmd := exec.Command(adapterBin, "--step-protocol")
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil {
		t.Errorf("a first tick that leaves things out should end the session with an error")
	}
	if !strings.Contains(stderr.String(), "tick 0 lists hpa as unchanged, but it is the case's first tick") {
		t.Errorf("stderr: %s", stderr.String())
	}
}
