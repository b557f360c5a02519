package protocol

import "testing"

// KindOf answers what decoding the whole message into an Envelope answers, on the fast path
// (the harness's spelling: "kind" first) and off it.
func TestKindOf(t *testing.T) {
	for _, c := range []struct {
		line, kind string
		bad        bool
	}{
		{line: `{"kind":"tick","t":"15s","hpa":{"kind":"HorizontalPodAutoscaler"}}`, kind: "tick"},
		{line: "  \t{\"kind\":\"start\",\"protocol\":1}\n", kind: "start"},
		{line: `{"t":"15s","kind":"end"}`, kind: "end"},
		{line: `{ "kind" : "stop" }`, kind: "stop"},
		{line: `{"kind":"ti\u0063k"}`, kind: "tick"},
		{line: `{"Kind":"tick"}`, kind: "tick"},
		{line: `{"kind":""}`, kind: ""},
		{line: `{"t":"15s"}`, kind: ""},
		{line: `not json`, bad: true},
		{line: `{"kind":1}`, bad: true},
	} {
		got, err := KindOf([]byte(c.line))
		if c.bad {
			if err == nil {
				t.Errorf("KindOf(%s) = %q, want an error", c.line, got)
			}
			continue
		}
		if err != nil || got != c.kind {
			t.Errorf("KindOf(%s) = %q, %v; want %q", c.line, got, err, c.kind)
		}
	}
}
