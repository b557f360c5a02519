package kit

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"hpa-conformance/kits/go/protocol"
)

const start = `{"kind":"start","protocol":1,"case":"c","featureGates":{"HPAScaleToZero":false},
 "settings":{"syncPeriodSeconds":15,"tolerance":0.1,"cpuInitializationPeriodSeconds":300,
 "initialReadinessDelaySeconds":30,"downscaleStabilizationSeconds":300,"scaleUpLimitFactor":2,
 "scaleUpLimitMinimum":4},"memory":{"recommendations":[],"scaleUpEvents":[],"scaleDownEvents":[]}}`

const tick = `{"kind":"tick","t":15,"now":"2000-01-01T00:00:15Z",
 "hpa":{"apiVersion":"autoscaling/v2","kind":"HorizontalPodAutoscaler","metadata":{"name":"web","namespace":"default"},
  "spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"},"minReplicas":1,"maxReplicas":10,
   "metrics":[{"type":"Object","object":{"describedObject":{"kind":"Service","name":"front"},"metric":{"name":"rps"},"target":{"type":"Value","value":"10"}}}]},
  "status":{"desiredReplicas":2,"currentReplicas":2}},
 "scale":{"spec":{"replicas":2},"status":{"replicas":2,"selector":"app=web"}},
 "scaleError":null,"scaleUpdateError":null,
 "pods":[{"metadata":{"name":"web-0","labels":{"app":"web"}},"status":{"phase":"Running"}},
         {"metadata":{"name":"web-1","labels":{"app":"web"}},"status":{"phase":"Running"}},
         {"metadata":{"name":"other","labels":{"app":"other"}},"status":{"phase":"Running"}}],
 "metrics":{"resource":{"items":[{"metadata":{"name":"web-0"},"timestamp":"2000-01-01T00:00:10Z","window":"30s","containers":[{"name":"app","usage":{"cpu":"900m"}}]},
                                 {"metadata":{"name":"web-1"},"timestamp":"2000-01-01T00:00:10Z","window":"30s","containers":[{"name":"app","usage":{"cpu":"700m"}}]},
                                 {"metadata":{"name":"an-older-pod"},"timestamp":"2000-01-01T00:00:10Z","window":"30s","containers":[{"name":"app","usage":{"cpu":"100m"}}]},
                                 {"metadata":{"name":"other"},"timestamp":"2000-01-01T00:00:10Z","window":"30s","containers":[{"name":"app","usage":{"cpu":"300m"}}]}]},
  "pods":{"qps":{"items":[{"pod":"web-0","value":"1500m","timestamp":"2000-01-01T00:00:10Z","windowSeconds":30}]}},
  "object":{"rps":{"value":{"value":"20","timestamp":"2000-01-01T00:00:10Z"}}},
  "external":{"queue":{"items":[{"value":"30","timestamp":"2000-01-01T00:00:10Z"}]},"broken":{"error":"boom"}}},
 "otherHpasSelectingPods":[]}`

// probe reads everything through the fakes and writes a scale, a status and an event.
type probe struct {
	t    *testing.T
	seen map[string]string
}

func (p *probe) Start(s *protocol.Start) (Session, Info, error) {
	p.seen["memory"] = map[bool]string{true: "records", false: "empty"}[s.Memory.RecordsSomething()]
	return p, Info{Name: "probe", Version: "0.1", Levels: []string{protocol.LevelReplicas}, Features: []string{protocol.FeatureBehavior}}, nil
}

func (p *probe) Tick(w *World) error {
	ctx := context.Background()
	scale, err := w.Scales.Scales(w.Namespace).Get(ctx, schema.GroupResource{Group: "apps", Resource: "deployments"}, "web", metav1.GetOptions{})
	if err != nil {
		return err
	}
	sel, err := labels.Parse(scale.Status.Selector)
	if err != nil {
		return err
	}
	pods, err := w.Kube.CoreV1().Pods(w.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return err
	}
	pm, err := w.ResourceMetrics.MetricsV1beta1().PodMetricses(w.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return err
	}
	custom, err := w.CustomMetrics.NamespacedMetrics(w.Namespace).GetForObjects(schema.GroupKind{Kind: "Pod"}, sel, "qps", labels.Everything())
	if err != nil {
		return err
	}
	object, err := w.CustomMetrics.NamespacedMetrics(w.Namespace).GetForObject(schema.GroupKind{Kind: "Service"}, "front", "rps", labels.Everything())
	if err != nil {
		return err
	}
	external, err := w.ExternalMetrics.NamespacedMetrics(w.Namespace).List("queue", labels.Everything())
	if err != nil {
		return err
	}
	_, brokenErr := w.ExternalMetrics.NamespacedMetrics(w.Namespace).List("broken", labels.Everything())
	p.seen["pods"] = itoa(len(pods.Items))
	p.seen["podmetrics"] = itoa(len(pm.Items))
	p.seen["custom"] = custom.Items[0].Value.String()
	p.seen["object"] = object.Value.String()
	p.seen["external"] = external.Items[0].Value.String()
	p.seen["broken"] = brokenErr.Error()
	p.seen["now"] = w.Clock.Now().Format(time.RFC3339)

	up := &autoscalingv1.Scale{ObjectMeta: scale.ObjectMeta, Spec: autoscalingv1.ScaleSpec{Replicas: 4}}
	if _, err := w.Scales.Scales(w.Namespace).Update(ctx, schema.GroupResource{Group: "apps", Resource: "deployments"}, up, metav1.UpdateOptions{}); err != nil {
		return err
	}
	hpa := w.HPA.DeepCopy()
	hpa.Status = autoscalingv2.HorizontalPodAutoscalerStatus{DesiredReplicas: 4, CurrentReplicas: 0, LastScaleTime: &metav1.Time{Time: w.Now}}
	if _, err := w.Kube.AutoscalingV2().HorizontalPodAutoscalers(w.Namespace).UpdateStatus(ctx, hpa, metav1.UpdateOptions{}); err != nil {
		return err
	}
	w.Recorder.Eventf(hpa, "Normal", "SuccessfulRescale", "New size: %d; reason: %s", 4, "test")
	return nil
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestASessionSeesTheTickThroughTheFakesAndAnswersWhatWasWritten(t *testing.T) {
	p := &probe{t: t, seen: map[string]string{}}
	in := strings.NewReader(strings.ReplaceAll(start, "\n", "") + "\n" + strings.ReplaceAll(tick, "\n", "") + "\n" + `{"kind":"stop"}` + "\n")
	var out bytes.Buffer
	if err := Serve(in, &out, p); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want hello and one result, got %q", out.String())
	}
	var hello map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &hello); err != nil {
		t.Fatal(err)
	}
	if hello["kind"] != "hello" || hello["memorySeeding"] != false || hello["featureGates"].(map[string]any)["HPAScaleToZero"] != false {
		t.Errorf("hello: %s", lines[0])
	}
	if got := hello["levels"].([]any); len(got) != 1 || got[0] != "replicas" {
		t.Errorf("levels: %s", lines[0])
	}
	want := map[string]string{
		"memory": "empty", "pods": "2", "podmetrics": "4", "custom": "1500m", "object": "20",
		"external": "30", "broken": "boom", "now": "2000-01-01T00:00:15Z",
	}
	for k, v := range want {
		if p.seen[k] != v {
			t.Errorf("%s: want %q, got %q", k, v, p.seen[k])
		}
	}
	var result struct {
		Kind     string          `json:"kind"`
		T        json.RawMessage `json:"t"`
		ScaledTo *int32          `json:"scaledTo"`
		Status   map[string]any  `json:"status"`
		Events   []protocol.Event
	}
	if err := json.Unmarshal([]byte(lines[1]), &result); err != nil {
		t.Fatal(err)
	}
	if result.Kind != "result" || string(result.T) != "15" || result.ScaledTo == nil || *result.ScaledTo != 4 {
		t.Errorf("result: %s", lines[1])
	}
	if result.Status["desiredReplicas"] != float64(4) || result.Status["currentReplicas"] != float64(0) || result.Status["lastScaleTime"] != "2000-01-01T00:00:15Z" {
		t.Errorf("status (currentReplicas 0 must be written): %s", lines[1])
	}
	if len(result.Events) != 1 || result.Events[0].Message != "New size: 4; reason: test" {
		t.Errorf("events: %s", lines[1])
	}
}

// idle reads nothing and writes nothing.
type idle struct{}

func (idle) Start(*protocol.Start) (Session, Info, error) { return idle{}, Info{Name: "idle"}, nil }
func (idle) Tick(*World) error                            { return nil }

func TestAnIdleTickAnswersNoScaleTheStatusAsItWasAndNoEvents(t *testing.T) {
	errTick := strings.Replace(strings.ReplaceAll(tick, "\n", ""), `"scaleUpdateError":null`, `"scaleUpdateError":"conflict"`, 1)
	in := strings.NewReader(strings.ReplaceAll(start, "\n", "") + "\n" + errTick + "\n")
	var out bytes.Buffer
	if err := Serve(in, &out, idle{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || lines[1] != `{"kind":"result","t":15,"scaledTo":null,"status":{"currentReplicas":2,"desiredReplicas":2,"currentMetrics":null},"events":[]}` {
		t.Fatalf("got %q", out.String())
	}
	if !strings.Contains(lines[0], `"features":[]`) {
		t.Errorf("hello lists no feature: %s", lines[0])
	}
}

// A tick that writes no status answers without one when start allows it (the harness keeps the
// tick's), and with the status as it was otherwise; a status written is always answered.
func TestAResultLeavesOutAnUnwrittenStatusOnlyWhenStartAllowsIt(t *testing.T) {
	allowed := strings.Replace(strings.ReplaceAll(start, "\n", ""), `"kind":"start",`, `"kind":"start","unwrittenStatus":true,`, 1)
	serve := func(st string, impl Implementation) string {
		var out bytes.Buffer
		if err := Serve(strings.NewReader(st+"\n"+strings.ReplaceAll(tick, "\n", "")+"\n"), &out, impl); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != 2 {
			t.Fatalf("got %q", out.String())
		}
		return lines[1]
	}
	if got := serve(allowed, idle{}); got != `{"kind":"result","t":15,"scaledTo":null,"events":[]}` {
		t.Errorf("idle, allowed: %s", got)
	}
	if got := serve(strings.ReplaceAll(start, "\n", ""), idle{}); !strings.Contains(got, `"status":{"currentReplicas":2,"desiredReplicas":2`) {
		t.Errorf("idle, not allowed: %s", got)
	}
	if got := serve(allowed, &probe{t: t, seen: map[string]string{}}); !strings.Contains(got, `"status":{"lastScaleTime":"2000-01-01T00:00:15Z","currentReplicas":0,"desiredReplicas":4`) {
		t.Errorf("a status written, allowed: %s", got)
	}
	// A tick whose HPA has no status yet: nothing to keep, so the (zero) status is answered.
	var full map[string]any
	if err := json.Unmarshal([]byte(strings.ReplaceAll(tick, "\n", "")), &full); err != nil {
		t.Fatal(err)
	}
	delete(full["hpa"].(map[string]any), "status")
	first, _ := json.Marshal(full)
	var out bytes.Buffer
	if err := Serve(strings.NewReader(allowed+"\n"+string(first)+"\n"), &out, idle{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"status":{"currentReplicas":0,"desiredReplicas":0,"currentMetrics":null}`) {
		t.Errorf("idle, allowed, the HPA without a status: %s", out.String())
	}
}

func TestAScaleUpdateErrorFailsTheWriteAndRecordsNoScale(t *testing.T) {
	var tk protocol.Tick
	if err := json.Unmarshal([]byte(strings.ReplaceAll(tick, "\n", "")), &tk); err != nil {
		t.Fatal(err)
	}
	msg := "conflict"
	tk.ScaleUpdateError = &msg
	w, err := NewWorld(&tk, "default")
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.Scales.Scales("default").Update(context.Background(), schema.GroupResource{Resource: "deployments"}, &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 3}}, metav1.UpdateOptions{})
	if err == nil || err.Error() != "conflict" || w.ScaledTo() != nil {
		t.Fatalf("want the update to fail with the tick's error, got %v, scaled to %v", err, w.ScaledTo())
	}
	getErr := "no scale"
	tk.ScaleError = &getErr
	w, _ = NewWorld(&tk, "default")
	if _, err := w.Scales.Scales("default").Get(context.Background(), schema.GroupResource{Resource: "deployments"}, "web", metav1.GetOptions{}); err == nil || err.Error() != "no scale" {
		t.Fatalf("want GET scale to fail with the tick's error, got %v", err)
	}
}

func TestAnObjectMetricNamesTheDescribedObjectAndIsTheAPIsNotFoundWhenTheTickLacksIt(t *testing.T) {
	var tk protocol.Tick
	if err := json.Unmarshal([]byte(strings.ReplaceAll(tick, "\n", "")), &tk); err != nil {
		t.Fatal(err)
	}
	w, err := NewWorld(&tk, "default")
	if err != nil {
		t.Fatal(err)
	}
	objects := w.CustomMetrics.NamespacedMetrics("default")
	v, err := objects.GetForObject(schema.GroupKind{Kind: "Service"}, "front", "rps", labels.Everything())
	if err != nil || v.DescribedObject.Kind != "Service" || v.DescribedObject.Name != "front" || v.Value.String() != "20" {
		t.Fatalf("want Service front's value 20, got %+v, %v", v, err)
	}
	delete(tk.Metrics.Object, "rps")
	_, err = objects.GetForObject(schema.GroupKind{Kind: "Service"}, "front", "rps", labels.Everything())
	// As the custom metrics API answers it (and the reference core and the mocked API word it).
	if !apierrors.IsNotFound(err) || err.Error() != "the server could not find the metric rps for Service front" {
		t.Fatalf("want the API's 404 naming Service front, got %v", err)
	}
}

func TestUnknownKindsAndTicksBeforeStartAreErrors(t *testing.T) {
	for _, in := range []string{`{"kind":"bogus"}`, strings.ReplaceAll(tick, "\n", ""), `not json`} {
		if err := Serve(strings.NewReader(in+"\n"), &bytes.Buffer{}, idle{}); err == nil {
			t.Errorf("%.30s…: want an error", in)
		}
	}
	if err := Serve(strings.NewReader(""), &bytes.Buffer{}, idle{}); err != nil {
		t.Errorf("a closed stdin ends the session cleanly: %v", err)
	}
}

// wallClock reads time.Now like a library that takes no clock.
type wallClock struct{ age, virtual time.Duration }

func (c *wallClock) Start(*protocol.Start) (Session, Info, error) {
	return c, Info{Name: "wall", WallClock: true}, nil
}

func (c *wallClock) Tick(w *World) error {
	pod, err := w.Kube.CoreV1().Pods(w.Namespace).Get(context.Background(), "web-0", metav1.GetOptions{})
	if err != nil {
		return err
	}
	c.age = time.Since(pod.Status.StartTime.Time)
	c.virtual = w.Now.Sub(w.VirtualNow)
	hpa := w.HPA.DeepCopy()
	hpa.Status.LastScaleTime = &metav1.Time{Time: time.Now()}
	_, err = w.Kube.AutoscalingV2().HorizontalPodAutoscalers(w.Namespace).UpdateStatus(context.Background(), hpa, metav1.UpdateOptions{})
	return err
}

func TestAWallClockImplementationSeesTheTickOnTheWallClockAndWritesVirtualTimes(t *testing.T) {
	withStart := strings.Replace(strings.ReplaceAll(tick, "\n", ""), `"name":"web-0","labels":{"app":"web"}},"status":{"phase":"Running"}`,
		`"name":"web-0","labels":{"app":"web"}},"status":{"phase":"Running","startTime":"2000-01-01T00:00:05Z"}`, 1)
	c := &wallClock{}
	var out bytes.Buffer
	in := strings.NewReader(strings.ReplaceAll(start, "\n", "") + "\n" + withStart + "\n")
	if err := Serve(in, &out, c); err != nil {
		t.Fatal(err)
	}
	// The pod started 10 s before the tick; on the wall clock it is 10 s old (plus the
	// microseconds the tick took).
	if c.age < 10*time.Second || c.age > 11*time.Second {
		t.Errorf("pod age on the wall clock: %v", c.age)
	}
	if c.virtual < 24*365*time.Hour {
		t.Errorf("the tick was not shifted to the wall clock: %v", c.virtual)
	}
	if !strings.Contains(out.String(), `"lastScaleTime":"2000-01-01T00:00:15Z"`) {
		t.Errorf("a time written on the wall clock comes back on the virtual clock: %s", out.String())
	}
}

// sampleAges reads, like a library on the wall clock, how old each tick's first metrics sample
// is.
type sampleAges struct{ ages []time.Duration }

func (c *sampleAges) Start(*protocol.Start) (Session, Info, error) {
	return c, Info{Name: "ages", WallClock: true}, nil
}

func (c *sampleAges) Tick(w *World) error {
	list, err := w.ResourceMetrics.MetricsV1beta1().PodMetricses(w.Namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err
	}
	c.ages = append(c.ages, time.Since(list.Items[0].Timestamp.Time))
	return nil
}

// A tick that leaves its metrics out gets the previous tick's moved by the time between them,
// as they came: not as the previous tick's shift onto the wall clock left them.
func TestAWallClockImplementationGetsDeltaMetricsMovedFromTheTickAsItCame(t *testing.T) {
	first := strings.ReplaceAll(tick, "\n", "")
	next := `{"kind":"tick","t":30,"now":"2000-01-01T00:00:30Z","scale":{"spec":{"replicas":2},"status":{"replicas":2,"selector":"app=web"}},"scaleError":null,"scaleUpdateError":null,"otherHpasSelectingPods":[],"unchanged":["hpa","pods","metrics"]}`
	c := &sampleAges{}
	var out bytes.Buffer
	in := strings.NewReader(strings.Join([]string{strings.ReplaceAll(start, "\n", ""), first, next, next}, "\n") + "\n")
	if err := Serve(in, &out, c); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"deltaMetrics":true`) {
		t.Errorf("hello does not declare deltaMetrics: %s", out.String())
	}
	// Each sample is 5 s older than its tick (t=15: 10 s; t=30: 25 s; t=30 again, moved by 0).
	if len(c.ages) != 3 {
		t.Fatalf("%d ticks decided: %s", len(c.ages), out.String())
	}
	for i, age := range c.ages {
		if age < 5*time.Second || age > 6*time.Second {
			t.Errorf("tick %d: the sample's age on the wall clock is %v, not 5 s", i, age)
		}
	}
}

// counting hands out sessions that remember their own ticks only, and counts its Starts.
type counting struct {
	starts int
	many   bool
}

type countingSession struct{ ticks int }

func (c *counting) Start(*protocol.Start) (Session, Info, error) {
	c.starts++
	return &countingSession{}, Info{Name: "counting", Levels: []string{protocol.LevelReplicas}, ManyCases: c.many}, nil
}

func (s *countingSession) Tick(w *World) error {
	s.ticks++
	hpa := w.HPA.DeepCopy()
	hpa.Status.DesiredReplicas = int32(s.ticks)
	_, err := w.Kube.AutoscalingV2().HorizontalPodAutoscalers(w.Namespace).UpdateStatus(context.Background(), hpa, metav1.UpdateOptions{})
	return err
}

func TestManyCasesServeEachCaseWithAFreshSession(t *testing.T) {
	st, tk := strings.ReplaceAll(start, "\n", ""), strings.ReplaceAll(tick, "\n", "")
	in := strings.Join([]string{st, tk, tk, `{"kind":"end","case":"c"}`, st, tk, `{"kind":"end","case":"c"}`, `{"kind":"stop"}`}, "\n") + "\n"
	impl := &counting{many: true}
	var out bytes.Buffer
	if err := Serve(strings.NewReader(in), &out, impl); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 7 || impl.starts != 2 {
		t.Fatalf("%d starts, lines %q", impl.starts, lines)
	}
	if !strings.Contains(lines[0], `"manyCases":true`) {
		t.Errorf("hello does not declare manyCases: %s", lines[0])
	}
	if lines[3] != `{"kind":"ended","case":"c"}` || lines[6] != lines[3] {
		t.Errorf("ended: %s, %s", lines[3], lines[6])
	}
	// The second case's first tick is its session's first: nothing carried over.
	desired := func(l string) int32 {
		var r struct {
			Status struct {
				DesiredReplicas int32 `json:"desiredReplicas"`
			} `json:"status"`
		}
		_ = json.Unmarshal([]byte(l), &r)
		return r.Status.DesiredReplicas
	}
	if desired(lines[1]) != 1 || desired(lines[2]) != 2 || desired(lines[5]) != 1 {
		t.Errorf("desired replicas per tick: %d %d %d, want 1 2 1", desired(lines[1]), desired(lines[2]), desired(lines[5]))
	}
}

func TestEndToAnImplementationWithoutManyCasesIsAnError(t *testing.T) {
	in := strings.ReplaceAll(start, "\n", "") + "\n" + `{"kind":"end","case":"c"}` + "\n"
	var out bytes.Buffer
	err := Serve(strings.NewReader(in), &out, &counting{})
	if err == nil || !strings.Contains(err.Error(), "ManyCases") {
		t.Fatalf("want an error naming ManyCases, got %v", err)
	}
	if strings.Contains(out.String(), "manyCases") {
		t.Errorf("hello declares manyCases without it: %s", out.String())
	}
}

// remembering reports a fixed memory (nil lists included) for the memoryReport feature.
type remembering struct{}

func (remembering) Start(*protocol.Start) (Session, Info, error) {
	return remembering{}, Info{Name: "remembering", Features: []string{protocol.FeatureMemoryReport}}, nil
}
func (remembering) Tick(*World) error { return nil }
func (remembering) Memory() protocol.Memory {
	at := time.Date(2000, 1, 1, 0, 0, 15, 0, time.UTC)
	return protocol.Memory{
		Recommendations: []protocol.Recommendation{{Replicas: 3, Time: at}},
		ScaleUpEvents:   []protocol.ScaleEvent{{Change: 2, Time: at, Outdated: true}},
	}
}

func TestAMemoryReporterAnswersWithItsMemoryOnlyWhenStartAsks(t *testing.T) {
	run := func(start string) []string {
		in := strings.NewReader(strings.ReplaceAll(start, "\n", "") + "\n" + strings.ReplaceAll(tick, "\n", "") + "\n")
		var out bytes.Buffer
		if err := Serve(in, &out, remembering{}); err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(out.String()), "\n")
	}
	asked := strings.Replace(start, `"memory":{`, `"reportMemory":true,"memory":{`, 1)
	lines := run(asked)
	want := `"memory":{"recommendations":[{"replicas":3,"time":"2000-01-01T00:00:15Z"}],"scaleUpEvents":[{"change":2,"time":"2000-01-01T00:00:15Z","outdated":true}],"scaleDownEvents":[]}`
	if len(lines) != 2 || !strings.Contains(lines[1], want) {
		t.Fatalf("want %s in the result, got %q", want, lines)
	}
	if !strings.Contains(lines[0], `"features":["memoryReport"]`) {
		t.Errorf("hello: %s", lines[0])
	}
	if lines := run(start); strings.Contains(lines[1], `"memory"`) {
		t.Errorf("memory reported without reportMemory: %s", lines[1])
	}
}

// deltaOf is the tick at t with the HPA and the pods left out as unchanged.
func deltaOf(t *testing.T, full string, at int) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(full), &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "hpa")
	delete(m, "pods")
	m["unchanged"] = []string{"hpa", "pods"}
	m["t"] = at
	m["now"] = time.Date(2000, 1, 1, 0, 0, at, 0, time.UTC).Format(time.RFC3339)
	b, _ := json.Marshal(m)
	return string(b)
}

func TestADeltaTickIsServedAsTheCompleteTickWouldBe(t *testing.T) {
	st, tk := strings.ReplaceAll(start, "\n", ""), strings.ReplaceAll(tick, "\n", "")
	p := &probe{t: t, seen: map[string]string{}}
	var out bytes.Buffer
	if err := Serve(strings.NewReader(st+"\n"+tk+"\n"+deltaOf(t, tk, 30)+"\n"), &out, p); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], `"deltaTicks":true`) {
		t.Fatalf("hello should declare deltaTicks; lines %q", lines)
	}
	if p.seen["pods"] != "2" || p.seen["now"] != "2000-01-01T00:00:30Z" {
		t.Errorf("the delta tick's world: %v", p.seen)
	}
	if strings.NewReplacer(`:30Z`, `:15Z`, `"t":30`, `"t":15`).Replace(lines[2]) != lines[1] {
		t.Errorf("results differ:\n%s\n%s", lines[1], lines[2])
	}

	// A wall-clock implementation: the pods kept from the tick before are shifted once, not
	// twice (the kit keeps them as they came).
	withStart := strings.Replace(tk, `"name":"web-0","labels":{"app":"web"}},"status":{"phase":"Running"}`,
		`"name":"web-0","labels":{"app":"web"}},"status":{"phase":"Running","startTime":"2000-01-01T00:00:05Z"}`, 1)
	c := &wallClock{}
	out.Reset()
	if err := Serve(strings.NewReader(st+"\n"+withStart+"\n"+deltaOf(t, withStart, 30)+"\n"), &out, c); err != nil {
		t.Fatal(err)
	}
	if c.age < 25*time.Second || c.age > 26*time.Second {
		t.Errorf("pod age on the wall clock at t=30: %v, want 25 s", c.age)
	}

	for _, bad := range []struct{ in, want string }{
		{st + "\n" + deltaOf(t, tk, 30) + "\n", "tick 30 lists hpa as unchanged, but it is the case's first tick"},
		{st + "\n" + tk + "\n" + strings.Replace(deltaOf(t, tk, 30), `"pods"]`, `"scale"]`, 1) + "\n", `tick 30 lists "scale" as unchanged, which is no field a tick may leave out`},
	} {
		err := Serve(strings.NewReader(bad.in), &bytes.Buffer{}, &probe{t: t, seen: map[string]string{}})
		if err == nil || err.Error() != bad.want {
			t.Errorf("error %v, want %q", err, bad.want)
		}
	}
}

// changesOf is the tick at t with the HPA left out as unchanged and the pods said as changes.
func changesOf(t *testing.T, full string, at int, changes string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(deltaOf(t, full, at)), &m); err != nil {
		t.Fatal(err)
	}
	m["unchanged"] = []string{"hpa"}
	m["podChanges"] = json.RawMessage(changes)
	b, _ := json.Marshal(m)
	return string(b)
}

func TestATickWithPodChangesIsServedWithThePodsTheyMake(t *testing.T) {
	st, tk := strings.ReplaceAll(start, "\n", ""), strings.ReplaceAll(tick, "\n", "")
	p := &probe{t: t, seen: map[string]string{}}
	var out bytes.Buffer
	// web-1 gone, then web-2 new (a Running pod of the app): 1, then 2 of the HPA's pods.
	gone := changesOf(t, tk, 30, `{"removed":["web-1"],"set":[]}`)
	back := changesOf(t, tk, 45, `{"removed":[],"set":[{"metadata":{"name":"web-2","labels":{"app":"web"}},"status":{"phase":"Running"}}]}`)
	seen := []string{}
	for i, line := range []string{tk, gone, back} {
		in := st + "\n" + strings.Join([]string{tk, gone, back}[:i+1], "\n") + "\n"
		out.Reset()
		if err := Serve(strings.NewReader(in), &out, p); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		seen = append(seen, p.seen["pods"])
	}
	if !strings.Contains(out.String(), `"deltaPods":true`) {
		t.Errorf("hello does not declare deltaPods: %s", out.String())
	}
	if strings.Join(seen, " ") != "2 1 2" {
		t.Errorf("the HPA's pods at t=15, 30, 45: %v, want 2 1 2", seen)
	}
	// Pod changes on a case's first tick (the HPA sent): nothing to change.
	var first, full map[string]any
	if json.Unmarshal([]byte(gone), &first) != nil || json.Unmarshal([]byte(tk), &full) != nil {
		t.Fatal("the ticks are not JSON")
	}
	first["hpa"], first["unchanged"] = full["hpa"], []string{}
	firstLine, _ := json.Marshal(first)
	err := Serve(strings.NewReader(st+"\n"+string(firstLine)+"\n"), &bytes.Buffer{}, &probe{t: t, seen: map[string]string{}})
	if want := "tick 30 has podChanges, but it is the case's first tick"; err == nil || err.Error() != want {
		t.Errorf("pod changes on a first tick: error %v, want %q", err, want)
	}
}

func TestLabelsMatchingMeetsEverySatisfiableSelector(t *testing.T) {
	for _, sel := range []string{"app=web", "app==web,tier in (a,b)", "app,!gone", "app notin (x),n>3,m<2", "a!=b"} {
		s, err := labels.Parse(sel)
		if err != nil {
			t.Fatal(err)
		}
		if got := labelsMatching(s, map[string]string{"gone": "1", "a": "b"}); !s.Matches(labels.Set(got)) {
			t.Errorf("%q does not match %v", sel, got)
		}
	}
	// Labels that already match are kept as they are.
	s, _ := labels.Parse("app=web")
	if got := labelsMatching(s, map[string]string{"app": "web", "x": "y"}); got["x"] != "y" {
		t.Errorf("matching labels changed: %v", got)
	}
}
