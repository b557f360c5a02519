package kit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"hpa-conformance/kits/go/protocol"
)

// wallClockHPA reads only time.Now(), as a fork of upstream's controller does: it stamps its
// memory with it, and a goroutine of its own counts the seconds on a timer until End.
type wallClockHPA struct {
	ended   *atomic.Int32
	seconds *atomic.Int64
}

type wallClockSession struct {
	hpa     wallClockHPA
	stamps  []time.Time
	stop    chan struct{}
	started time.Time
}

func (h wallClockHPA) Start(*protocol.Start) (Session, Info, error) {
	s := &wallClockSession{hpa: h, stop: make(chan struct{}), started: time.Now()}
	h.seconds.Store(0)
	go func() {
		for {
			select {
			case <-time.After(time.Second):
				h.seconds.Add(1)
			case <-s.stop:
				return
			}
		}
	}()
	return s, Info{Name: "wall-clock", Version: "0", Levels: []string{protocol.LevelReplicas},
		Features: []string{protocol.FeatureMemoryReport}, WallClock: true}, nil
}

func (s *wallClockSession) Tick(w *World) error {
	s.stamps = append(s.stamps, time.Now())
	return nil
}

func (s *wallClockSession) Memory() protocol.Memory {
	var m protocol.Memory
	for _, t := range s.stamps {
		m.Recommendations = append(m.Recommendations, protocol.Recommendation{Replicas: 2, Time: t})
	}
	return m
}

func (s *wallClockSession) End() {
	close(s.stop)
	s.hpa.ended.Add(1)
}

func atT(t int) string {
	at := Epoch.Add(time.Duration(t) * time.Second).Format(time.RFC3339)
	msg := strings.ReplaceAll(tick, "\n", "")
	msg = strings.Replace(msg, `"t":15,"now":"2000-01-01T00:00:15Z"`, `"t":`+itoa(t)+`,"now":"`+at+`"`, 1)
	return msg
}

func TestServeBubblesGivesEachCaseItsOwnVirtualClockInOneProcess(t *testing.T) {
	startCase := func(name string) string {
		s := strings.ReplaceAll(start, "\n", "")
		s = strings.Replace(s, `"case":"c"`, `"case":"`+name+`"`, 1)
		return strings.Replace(s, `"protocol":1,`, `"protocol":1,"reportMemory":true,`, 1)
	}
	in := strings.Join([]string{
		startCase("a"), atT(0), atT(15), atT(45), `{"kind":"end","case":"a"}`,
		startCase("b"), atT(0), atT(30), `{"kind":"stop"}`,
	}, "\n") + "\n"
	var ended atomic.Int32
	var seconds atomic.Int64
	var out bytes.Buffer
	if err := ServeBubblesIO(t, strings.NewReader(in), &out, wallClockHPA{ended: &ended, seconds: &seconds}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	kinds := []string{}
	var stamps [][]string
	for _, l := range lines {
		var m struct {
			Kind      string `json:"kind"`
			ManyCases bool   `json:"manyCases"`
			WallClock bool   `json:"wallClock"`
			Memory    *struct {
				Recommendations []struct {
					Time time.Time `json:"time"`
				} `json:"recommendations"`
			} `json:"memory"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		kinds = append(kinds, m.Kind)
		if m.Kind == "hello" && (!m.ManyCases || m.WallClock) {
			t.Errorf("hello in bubbles declares manyCases and never wallClock: %s", l)
		}
		if m.Memory != nil {
			var ts []string
			for _, r := range m.Memory.Recommendations {
				ts = append(ts, r.Time.UTC().Format("15:04:05"))
			}
			stamps = append(stamps, ts)
		}
	}
	if got, want := strings.Join(kinds, " "), "hello result result result ended hello result result"; got != want {
		t.Fatalf("messages: got %q, want %q\n%s", got, want, out.String())
	}
	// time.Now() in the session is each tick's virtual instant; case b starts again at t = 0.
	want := [][]string{{"00:00:00"}, {"00:00:00", "00:00:15"}, {"00:00:00", "00:00:15", "00:00:45"},
		{"00:00:00"}, {"00:00:00", "00:00:30"}}
	if got, w := strings.Join(flat(stamps), ","), strings.Join(flat(want), ","); got != w {
		t.Errorf("memory stamps: got %s, want %s", got, w)
	}
	// The session's own timer goroutine saw exactly the virtual seconds of case b (30), and
	// both sessions were ended (the bubble could end only because their goroutines did).
	if s := seconds.Load(); s != 30 {
		t.Errorf("case b's timer goroutine counted %d seconds, want 30", s)
	}
	if n := ended.Load(); n != 2 {
		t.Errorf("%d sessions ended, want 2", n)
	}
}

func TestServeBubblesRefusesATickBeforeTheBubblesClock(t *testing.T) {
	in := strings.Join([]string{strings.ReplaceAll(start, "\n", ""), atT(30), atT(15)}, "\n") + "\n"
	var ended, seconds = &atomic.Int32{}, &atomic.Int64{}
	var out bytes.Buffer
	err := ServeBubblesIO(t, strings.NewReader(in), &out, wallClockHPA{ended: ended, seconds: seconds})
	if err == nil || !strings.Contains(err.Error(), "before the bubble's clock") {
		t.Fatalf("want an error for a tick going back in time, got %v", err)
	}
	if ended.Load() != 1 {
		t.Errorf("the session was not ended after the error")
	}
}

func flat(xs [][]string) []string {
	var out []string
	for _, x := range xs {
		out = append(out, strings.Join(x, "+"))
	}
	return out
}

// deciderHPA reads each tick itself (Decider), as adapters/upstream does with its own fakes.
type deciderHPA struct{ info Info }

type deciderSession struct{ seen *[]string }

var decided []string

func (h deciderHPA) Start(*protocol.Start) (Session, Info, error) {
	return &deciderSession{seen: &decided}, h.info, nil
}

func (s *deciderSession) Tick(*World) error {
	panic("a Decider's Tick is never called")
}

func (s *deciderSession) Decide(tick *protocol.Tick, message []byte) (protocol.Result, error) {
	*s.seen = append(*s.seen, fmt.Sprintf("%s now=%s pods=%d raw-unchanged=%v",
		tick.T, time.Now().UTC().Format("15:04:05"), len(tick.Pods), bytes.Contains(message, []byte(`"unchanged":["pods"]`))))
	replicas := int32(len(tick.Pods))
	return protocol.Result{Kind: "result", T: tick.T, ScaledTo: &replicas, Events: []protocol.Event{}}, nil
}

// deltaAt is atT(t) with the pods left out as unchanged.
func deltaAt(t int) string {
	msg := atT(t)
	from := strings.Index(msg, `"pods":[`)
	to := strings.Index(msg, `], "metrics":`)
	return msg[:from] + `"unchanged":["pods"]` + msg[to+1:]
}

func TestServeBubblesHandsADeciderTheCompletedTickAndItsMessage(t *testing.T) {
	decided = nil
	in := strings.Join([]string{strings.ReplaceAll(start, "\n", ""), atT(0), deltaAt(15), `{"kind":"stop"}`}, "\n") + "\n"
	var out bytes.Buffer
	impl := deciderHPA{info: Info{Name: "decider", Version: "0", Levels: []string{protocol.LevelReplicas}}}
	if err := ServeBubblesIO(t, strings.NewReader(in), &out, impl); err != nil {
		t.Fatal(err)
	}
	want := []string{"0 now=00:00:00 pods=3 raw-unchanged=false", "15 now=00:00:15 pods=3 raw-unchanged=true"}
	if strings.Join(decided, "; ") != strings.Join(want, "; ") {
		t.Errorf("Decide saw %q, want %q", decided, want)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], `"scaledTo":3`) || !strings.Contains(lines[2], `"scaledTo":3`) {
		t.Errorf("results are not Decide's: %s", out.String())
	}
	if !strings.Contains(lines[0], `"manyCases":true`) || !strings.Contains(lines[0], `"deltaTicks":true`) ||
		!strings.Contains(lines[0], `"deltaMetrics":true`) || !strings.Contains(lines[0], `"deltaPods":true`) {
		t.Errorf("hello in bubbles declares manyCases, deltaTicks, deltaMetrics and deltaPods: %s", lines[0])
	}
}

func TestOneCasePerProcessAndFullTicksAreDeclaredAsAsked(t *testing.T) {
	decided = nil
	in := strings.Join([]string{strings.ReplaceAll(start, "\n", ""), `{"kind":"stop"}`}, "\n") + "\n"
	var out bytes.Buffer
	impl := deciderHPA{info: Info{Name: "decider", Version: "0", Levels: []string{protocol.LevelReplicas},
		OneCasePerProcess: true, FullTicks: true}}
	if err := ServeBubblesIO(t, strings.NewReader(in), &out, impl); err != nil {
		t.Fatal(err)
	}
	if hello := out.String(); strings.Contains(hello, `"manyCases":true`) || strings.Contains(hello, `"deltaTicks":true`) ||
		strings.Contains(hello, `"deltaMetrics":true`) || strings.Contains(hello, `"deltaPods":true`) {
		t.Errorf("hello declares manyCases or a delta though the implementation asked not to: %s", hello)
	}
}

func TestADeciderCannotDeclareWallClock(t *testing.T) {
	in := strings.ReplaceAll(start, "\n", "") + "\n"
	var out bytes.Buffer
	impl := deciderHPA{info: Info{Name: "decider", Version: "0", WallClock: true}}
	err := Serve(strings.NewReader(in), &out, impl)
	if err == nil || !strings.Contains(err.Error(), "cannot declare WallClock") {
		t.Fatalf("want a refusal of WallClock for a Decider, got %v", err)
	}
}
