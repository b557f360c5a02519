package protocol

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// metricsAt decodes a tick's metrics whose timestamps are 2000-01-01T00:01:00Z + shift plus
// the offset in seconds each {0}, {-5}, … of the text names.
func metricsAt(t *testing.T, shift time.Duration) Metrics {
	t.Helper()
	base := time.Date(2000, 1, 1, 0, 1, 0, 0, time.UTC).Add(shift)
	text := `{
	  "resource": {"items": [
	    {"metadata": {"name": "web-0", "namespace": "default", "labels": {"app": "web"}}, "timestamp": {0}, "window": "30s",
	     "containers": [{"name": "app", "usage": {"cpu": "250m", "memory": "64Mi"}}, {"name": "side", "usage": {"cpu": "10m"}}]},
	    {"metadata": {"name": "web-1", "namespace": "default"}, "timestamp": {-20}, "window": "1m0s", "containers": []}
	  ]},
	  "pods": {"qps": {"items": [{"pod": "web-0", "value": "3", "timestamp": {-5}, "windowSeconds": 60},
	                             {"pod": "web-1", "value": "4500m", "timestamp": {0}}]},
	           "latency": {"items": [], "error": "the server could not find the metric latency for pods"},
	           "none": {"error": "unavailable"}},
	  "object": {"queue": {"value": {"value": "20", "timestamp": {-1}, "windowSeconds": 30}},
	             "flat": {"value": "7", "timestamp": {0}},
	             "gone": {"error": "not found"}},
	  "external": {"lag": {"items": [{"value": "100", "timestamp": {0}}, {"value": "200", "timestamp": {-60}, "windowSeconds": 15}]},
	               "empty": {"items": []}}
	}`
	for _, off := range []int{0, -1, -5, -20, -60} {
		stamp := `"` + base.Add(time.Duration(off)*time.Second).Format(time.RFC3339) + `"`
		text = strings.ReplaceAll(text, "{"+strconv.Itoa(off)+"}", stamp)
	}
	var m Metrics
	if err := Decode([]byte(text), &m); err != nil {
		t.Fatalf("decode: %v\n%s", err, text)
	}
	return m
}

// A tick's metrics moved by d are exactly what decoding the same answers with every timestamp d
// later gives (values, nil and empty lists, local times), and the original is left as it was.
func TestMovedMetricsAreTheAnswersDecodedThatMuchLater(t *testing.T) {
	for _, d := range []time.Duration{15 * time.Second, 0, 90 * time.Second, -30 * time.Second} {
		m := metricsAt(t, 0)
		before := metricsAt(t, 0)
		got := m.Moved(d)
		if want := metricsAt(t, d); !reflect.DeepEqual(got, want) {
			t.Errorf("moved by %s:\n got %+v\nwant %+v", d, got, want)
		}
		if !reflect.DeepEqual(m, before) {
			t.Errorf("moving by %s changed the original", d)
		}
	}
	if got, want := metricsAt(t, 0).Moved(time.Second), metricsAt(t, 0); reflect.DeepEqual(got, want) {
		t.Errorf("moved by 1s is still the original: the check cannot fail")
	}
	if got := (Metrics{}).Moved(time.Minute); !reflect.DeepEqual(got, Metrics{}) {
		t.Errorf("empty metrics moved: %+v", got)
	}
}

func TestATickListingMetricsHasThePreviousTicksMovedByTheTimeBetween(t *testing.T) {
	decodeTick := func(text string) *Tick {
		var tick Tick
		if err := Decode([]byte(text), &tick); err != nil {
			t.Fatalf("decode: %v", err)
		}
		return &tick
	}
	prev := decodeTick(`{"kind":"tick","t":60,"now":"2000-01-01T00:01:00Z","hpa":{"metadata":{"name":"web"}},"metrics":{}}`)
	prev.Metrics = metricsAt(t, 0)
	next := decodeTick(`{"kind":"tick","t":75,"now":"2000-01-01T00:01:15Z","unchanged":["hpa","pods","metrics"]}`)
	if err := next.Complete(prev); err != nil {
		t.Fatal(err)
	}
	if want := metricsAt(t, 15*time.Second); !reflect.DeepEqual(next.Metrics, want) {
		t.Errorf("completed metrics:\n got %+v\nwant %+v", next.Metrics, want)
	}
	first := decodeTick(`{"kind":"tick","t":0,"now":"2000-01-01T00:00:00Z","hpa":{},"unchanged":["metrics"]}`)
	if err := first.Complete(nil); err == nil || !strings.Contains(err.Error(), "first tick") {
		t.Errorf("metrics listed on a first tick: %v", err)
	}
}

// podsOf decodes "a b* c" as pods a, b (Pending) and c (Running).
func podsOf(t *testing.T, spec string) []corev1.Pod {
	t.Helper()
	pods := []corev1.Pod{}
	for _, s := range strings.Fields(spec) {
		phase := corev1.PodRunning
		if strings.HasSuffix(s, "*") {
			phase = corev1.PodPending
		}
		pods = append(pods, corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: strings.TrimSuffix(s, "*"), Labels: map[string]string{"app": "web"}},
			Status:     corev1.PodStatus{Phase: phase},
		})
	}
	return pods
}

// The same cases as the harness's (harness/src/protocol/pod_changes.rs): the changes the
// harness sends for previous → current, applied, give current.
func TestPodChangesAppliedGiveTheTicksPods(t *testing.T) {
	for _, c := range []struct {
		previous, current string
		changes           PodChanges
	}{
		{"a b c", "a b c", PodChanges{}},
		{"a b c", "a b* c", PodChanges{Set: podsOf(t, "b*")}},
		{"a b", "a b c d", PodChanges{Set: podsOf(t, "c d")}},
		{"a b c d", "a d", PodChanges{Removed: []string{"b", "c"}}},
		{"a b c", "b c* d", PodChanges{Removed: []string{"a"}, Set: podsOf(t, "c* d")}},
		{"a b", "", PodChanges{Removed: []string{"a", "b"}}},
		{"", "a b", PodChanges{Set: podsOf(t, "a b")}},
		{"a b", "c d", PodChanges{Removed: []string{"a", "b"}, Set: podsOf(t, "c d")}},
	} {
		previous := podsOf(t, c.previous)
		before := podsOf(t, c.previous)
		got, err := c.changes.Apply(previous)
		if err != nil {
			t.Fatalf("%q → %q: %v", c.previous, c.current, err)
		}
		if want := podsOf(t, c.current); !reflect.DeepEqual(got, want) {
			t.Errorf("%q → %q: got %+v", c.previous, c.current, got)
		}
		if !reflect.DeepEqual(previous, before) {
			t.Errorf("%q → %q: applying changed the previous pods", c.previous, c.current)
		}
	}
	nameless := podsOf(t, "c")
	nameless[0].Name = ""
	for _, bad := range []struct {
		previous string
		changes  PodChanges
		want     string
	}{
		{"a b", PodChanges{Removed: []string{"x"}}, "podChanges removes x, which the previous tick does not have"},
		{"a b", PodChanges{Set: nameless}, "podChanges sets a pod without a name"},
		{"a a", PodChanges{}, "the previous tick has two pods named a"},
		{"a a", PodChanges{Removed: []string{"a"}}, "the previous tick has two pods named a"},
	} {
		if _, err := bad.changes.Apply(podsOf(t, bad.previous)); err == nil || err.Error() != bad.want {
			t.Errorf("%q %+v: error %v, want %q", bad.previous, bad.changes, err, bad.want)
		}
	}
}

func TestATickWithPodChangesHasThePreviousTicksPodsChanged(t *testing.T) {
	decodeTick := func(text string) *Tick {
		var tick Tick
		if err := Decode([]byte(text), &tick); err != nil {
			t.Fatalf("decode: %v", err)
		}
		return &tick
	}
	prev := decodeTick(`{"kind":"tick","t":15,"now":"2000-01-01T00:00:15Z","hpa":{"metadata":{"name":"web"}},` +
		`"pods":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}},{"metadata":{"name":"c"}}]}`)
	changed := `{"kind":"tick","t":30,"now":"2000-01-01T00:00:30Z","unchanged":["hpa"],` +
		`"podChanges":{"removed":["b"],"set":[{"metadata":{"name":"c"},"status":{"phase":"Running"}},{"metadata":{"name":"d"}}]}}`
	next := decodeTick(changed)
	if err := next.Complete(prev); err != nil {
		t.Fatal(err)
	}
	want := decodeTick(`{"pods":[{"metadata":{"name":"a"}},{"metadata":{"name":"c"},"status":{"phase":"Running"}},{"metadata":{"name":"d"}}]}`).Pods
	if !reflect.DeepEqual(next.Pods, want) || next.PodChanges != nil {
		t.Errorf("completed pods %+v (changes %+v), want %+v", next.Pods, next.PodChanges, want)
	}
	if len(prev.Pods) != 3 || prev.Pods[2].Status.Phase != "" {
		t.Errorf("the previous tick's pods changed: %+v", prev.Pods)
	}
	for _, bad := range []struct{ text, want string }{
		{strings.Replace(changed, `"unchanged":["hpa"],`, `"hpa":{},`, 1), "tick 30 has podChanges, but it is the case's first tick"},
		{strings.Replace(changed, `"unchanged":["hpa"]`, `"unchanged":["hpa","pods"]`, 1), "tick 30 has podChanges and lists pods as unchanged"},
		{strings.Replace(changed, `"unchanged":["hpa"]`, `"unchanged":["hpa"],"pods":[]`, 1), "tick 30 has both pods and podChanges"},
		{strings.Replace(changed, `"removed":["b"]`, `"removed":["x"]`, 1), "tick 30: podChanges removes x, which the previous tick does not have"},
	} {
		var p *Tick
		if !strings.Contains(bad.want, "first tick") {
			p = prev
		}
		if err := decodeTick(bad.text).Complete(p); err == nil || err.Error() != bad.want {
			t.Errorf("%s: error %v, want %q", bad.text, err, bad.want)
		}
	}
}

// A result leaves out its status only when start allowed it, none was written, and there is a
// status to keep: the zero status (a tick whose HPA has none yet) is always written.
func TestAResultsMessageLeavesOutOnlyAStatusToKeep(t *testing.T) {
	status := Status{DesiredReplicas: 3, CurrentReplicas: 3}
	for _, c := range []struct {
		allowed, unwritten bool
		status             Status
		without            bool
	}{
		{true, true, status, true},
		{false, true, status, false},
		{true, false, status, false},
		{true, true, Status{}, false},
	} {
		r := Result{Kind: "result", T: []byte("15"), Status: c.status, Events: []Event{}, StatusUnwritten: c.unwritten}
		b, err := Encode(r.Message(c.allowed))
		if err != nil {
			t.Fatal(err)
		}
		if got := !strings.Contains(string(b), `"status"`); got != c.without {
			t.Errorf("allowed %v, unwritten %v, status %+v: %s", c.allowed, c.unwritten, c.status, b)
		}
	}
}
