package protocol

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
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
