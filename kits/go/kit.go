// Package kit runs a Go HPA implementation under hpa-conformance's step protocol
// (harness/PROTOCOL.md): it speaks the protocol on stdin/stdout, and shows the implementation each
// tick as what Go autoscalers already consume — client-go fake clientsets (pods and the HPA, the
// scale subresource), the k8s.io/metrics fake clients (resource, custom and external metrics), an
// event recorder and a clock set to the tick's virtual instant. What the implementation writes
// through them (a scale update, an HPA status update, events) becomes the tick's result.
//
//	func main() {
//		if err := kit.Serve(os.Stdin, os.Stdout, myHPA{}); err != nil {
//			fmt.Fprintln(os.Stderr, err)
//			os.Exit(1)
//		}
//	}
package kit

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"hpa-conformance/kits/go/protocol"
)

// Info is what an implementation says about itself in hello.
type Info struct {
	// Name and Version identify it in reports and conformance statements.
	Name, Version string
	// KubernetesVersion is the Kubernetes release whose HPA behaviour it implements ("1.37";
	// a patch such as "1.37.2" is fine): the harness judges it against that release's
	// expectations and refuses a run for another (hello's `kubernetesVersion`). Empty: not
	// declared (the harness then judges whatever --kubernetes-version says).
	KubernetesVersion string
	// Levels it supports (protocol.LevelReplicas, …); nil: all. Its highest level is the profile
	// it is judged at by default.
	Levels []string
	// Features it has (protocol.FeatureBehavior, …); nil: none.
	Features []string
	// FeatureGates it runs with; nil: exactly the gates start asked for.
	FeatureGates map[string]bool
	// WallClock: the implementation reads time.Now instead of World.Clock. Each tick's
	// timestamps are then shifted so that its instant is the wall clock's when it arrives, and
	// the times written back are shifted back (see ShiftTick).
	WallClock bool
	// ManyCases: one process may serve many cases in sequence (hello's `manyCases`): after a
	// case the harness sends `end` (the kit answers `ended` and drops the Session) and the next
	// case's `start` calls Start again. Declare it only when nothing of a case outlives its
	// Session (no package-level state), so every case starts as in a fresh process. The harness
	// then starts far fewer processes (differential fuzzing runs many times faster).
	ManyCases bool
	// OneCasePerProcess: under ServeBubbles, do not declare manyCases (which ServeBubbles
	// otherwise declares for every implementation, a bubble keeping nothing of a case), so the
	// harness starts a process per case — only to compare the two (adapters/upstream's
	// `--one-case-per-process`).
	OneCasePerProcess bool
	// FullTicks: hello declares none of deltaTicks, deltaMetrics and deltaPods, so every tick
	// carries the HPA, the whole pods list and the metrics even when they did not change — only
	// to compare the two (adapters/upstream's `--full-ticks`); the kit fills in a delta tick's
	// fields either way.
	FullTicks bool
}

// Implementation starts one session per case.
type Implementation interface {
	// Start begins a case with start's settings, gates and memory (when it declares
	// protocol.FeatureMemorySeeding), and says who it is.
	Start(start *protocol.Start) (Session, Info, error)
}

// Session decides the ticks of one case, keeping its memory between them. A case with HPAs
// alongside its own (only to an implementation declaring protocol.FeatureSeveralHPAs) ticks
// several HPAs in one Session: keep each one's memory under its namespace/name.
type Session interface {
	// Tick decides one tick: read the world through w's clients, write through them.
	Tick(w *World) error
}

// Decider is a Session that reads each tick itself instead of through a World: an
// implementation that brings its own fakes and informers, such as a fork of upstream's
// controller wired the way upstream's unit tests wire it (adapters/upstream is one). The kit
// still does the protocol — hello, delta ticks completed from the previous tick, a bubble's
// clock advanced to the tick's instant and settled after it, `end`, `stop` — and sends the
// result Decide returns as it is (Result.Memory included, when start.reportMemory asked).
// tick is complete; its HPA, pods and metrics' contents are shared with the previous tick's and
// the next's, so copy what you change. message is the line as it came, for fields the kit's
// types leave out. A Decider's Tick(*World) is never called, and it cannot declare WallClock
// (the kit shifts no tick for it).
type Decider interface {
	Decide(tick *protocol.Tick, message []byte) (protocol.Result, error)
}

// MemoryReporter is a Session that can show its memory of the HPA (stored recommendations and
// scale events, in its own order) for cases that expect it. A session that implements it should
// declare protocol.FeatureMemoryReport; the kit then adds the memory to every result when
// start.reportMemory asks.
type MemoryReporter interface {
	Memory() protocol.Memory
}

// maxLine is the longest message line read (a tick of thousands of pods is several MiB).
const maxLine = 64 << 20

// Ender is a Session that holds something to release when its case ends (`end`, or `stop`):
// goroutines, contexts, informers. Under ServeBubbles every goroutine a session started must
// have returned once End does, or the case's bubble cannot end (testing/synctest reports them).
type Ender interface {
	End()
}

// Serve runs the protocol on in/out until stop (nil) or an error. One process serves one case,
// as the harness starts one per case — or many in sequence when Info.ManyCases is declared
// (`end` → `ended`, then the next `start`). An implementation that reads time.Now() is better
// served by ServeBubbles (bubbles.go).
func Serve(in io.Reader, out io.Writer, impl Implementation) error {
	if f, ok := in.(*os.File); ok && f == os.Stdin {
		// A pipe's reads go through the poller (protocol.Stdin): far fewer wake-ups per tick.
		in = protocol.Stdin()
	}
	r := bufio.NewReaderSize(in, 1<<20)
	s := &server{impl: impl, write: writer(out)}
	for {
		line, err := readLine(r)
		if errors.Is(err, io.EOF) {
			s.endSession()
			return nil // stdin closed: the harness is done with us.
		}
		if err != nil {
			return err
		}
		next, err := s.handle(line)
		if err != nil {
			return err
		}
		switch next.kind {
		case stopped:
			s.endSession()
			return nil
		case ended:
			s.endSession()
			if err := s.write(protocol.Ended{Kind: "ended", Case: next.endedCase}); err != nil {
				return err
			}
		}
	}
}

// writer writes protocol messages to out, one line each, flushed.
func writer(out io.Writer) func(any) error {
	w := bufio.NewWriter(out)
	return func(v any) error {
		b, err := protocol.Encode(v)
		if err != nil {
			return err
		}
		if _, err := w.Write(append(b, '\n')); err != nil {
			return err
		}
		return w.Flush()
	}
}

// server is the protocol's state between messages, shared by Serve and ServeBubbles.
type server struct {
	impl  Implementation
	write func(any) error
	// bubble: the process clock is a testing/synctest bubble's, advanced to each tick's instant
	// before the tick (ServeBubbles).
	bubble       bool
	session      Session
	info         Info
	reportMemory bool
	// The case's start allows a result without status when none was written.
	unwrittenStatus bool
	// The case's previous tick as it came (complete, before any shift): what a delta tick
	// leaves out comes from it.
	prev *protocol.Tick
}

type nextKind int

const (
	goOn nextKind = iota
	stopped
	ended
)

// next is what a message leaves the caller to do: go on, stop, or end the case (then answer
// `ended` with endedCase once the session is released).
type next struct {
	kind      nextKind
	endedCase string
}

// endSession releases the case's session (Ender) and forgets it.
func (s *server) endSession() {
	if e, ok := s.session.(Ender); ok {
		e.End()
	}
	s.session, s.info, s.prev, s.reportMemory, s.unwrittenStatus = nil, Info{}, nil, false, false
}

// handle answers one message.
func (s *server) handle(line []byte) (next, error) {
	kind, err := protocol.KindOf(line)
	if err != nil {
		return next{}, fmt.Errorf("not a protocol message: %w", err)
	}
	switch kind {
	case "start":
		var start protocol.Start
		if err := json.Unmarshal(line, &start); err != nil {
			return next{}, fmt.Errorf("start: %w", err)
		}
		if start.Protocol != protocol.Version {
			return next{}, fmt.Errorf("start: protocol %d, this kit speaks %d", start.Protocol, protocol.Version)
		}
		if s.session != nil {
			return next{}, errors.New("start while a case is running (no `end` before it)")
		}
		session, info, err := s.impl.Start(&start)
		if err != nil {
			return next{}, fmt.Errorf("start: %w", err)
		}
		if s.bubble {
			// Each case has its own bubble: the process may always serve the next one.
			info.ManyCases = !info.OneCasePerProcess
			info.WallClock = false
		}
		if _, ok := session.(Decider); ok && info.WallClock {
			return next{}, errors.New("start: a Decider session cannot declare WallClock (the kit shifts no tick for it)")
		}
		s.session, s.info = session, info
		s.reportMemory = start.ReportMemory
		s.unwrittenStatus = start.UnwrittenStatus
		s.prev = nil
		return next{}, s.write(hello(&start, info))
	case "tick":
		if s.session == nil {
			return next{}, errors.New("tick before start")
		}
		result, err := s.tick(line)
		if err != nil {
			return next{}, err
		}
		return next{}, s.write(result.Message(s.unwrittenStatus))
	case "end":
		if s.session == nil {
			return next{}, errors.New("end before start")
		}
		if !s.info.ManyCases {
			return next{}, errors.New("end to an implementation that does not declare ManyCases")
		}
		var end protocol.End
		if err := json.Unmarshal(line, &end); err != nil {
			return next{}, fmt.Errorf("end: %w", err)
		}
		return next{kind: ended, endedCase: end.Case}, nil
	case "stop":
		return next{kind: stopped}, nil
	default:
		return next{}, fmt.Errorf("unknown message kind %q", kind)
	}
}

// tick decides one tick and returns its result.
func (s *server) tick(line []byte) (protocol.Result, error) {
	var tick protocol.Tick
	if err := protocol.Decode(line, &tick); err != nil {
		return protocol.Result{}, fmt.Errorf("tick: %w", err)
	}
	if err := tick.Complete(s.prev); err != nil {
		return protocol.Result{}, err
	}
	kept := tick
	s.prev = &kept
	if d, ok := s.session.(Decider); ok {
		if s.bubble {
			if err := advanceBubbleClock(tick.Now); err != nil {
				return protocol.Result{}, fmt.Errorf("tick %s: %w", tick.T, err)
			}
		}
		result, err := d.Decide(&tick, line)
		if err != nil {
			return protocol.Result{}, fmt.Errorf("tick %s: %w", tick.T, err)
		}
		if s.bubble {
			settleBubble()
		}
		return result, nil
	}
	// The session (and a wall-clock shift) get copies: the next tick may need these.
	tick.HPA = tick.HPA.DeepCopy()
	pods := make([]corev1.Pod, len(tick.Pods))
	for i := range tick.Pods {
		tick.Pods[i].DeepCopyInto(&pods[i])
	}
	tick.Pods = pods
	// New lists and items (a wall-clock shift moves their timestamps): the next tick may take
	// the metrics as they came (a delta tick's moved metrics).
	tick.Metrics = tick.Metrics.Moved(0)
	namespace := tick.HPA.Namespace
	if namespace == "" {
		namespace = "default"
	}
	if s.bubble {
		if err := advanceBubbleClock(tick.Now); err != nil {
			return protocol.Result{}, fmt.Errorf("tick %s: %w", tick.T, err)
		}
	}
	var shift time.Duration
	if s.info.WallClock {
		shift = time.Since(tick.Now)
		ShiftTick(&tick, shift)
	}
	world, err := NewWorld(&tick, namespace)
	if err != nil {
		return protocol.Result{}, fmt.Errorf("tick %s: %w", tick.T, err)
	}
	world.VirtualNow = tick.Now.Add(-shift)
	if err := s.session.Tick(world); err != nil {
		return protocol.Result{}, fmt.Errorf("tick %s: %w", tick.T, err)
	}
	if s.bubble {
		// What the tick set going in the session's goroutines settles before the answer.
		settleBubble()
	}
	result := world.Result()
	if reporter, ok := s.session.(MemoryReporter); ok && s.reportMemory {
		m := reporter.Memory()
		if shift != 0 {
			shiftMemory(&m, -shift)
		}
		result.Memory = nonNilLists(m)
	}
	if shift != 0 {
		status := autoscalingv2.HorizontalPodAutoscalerStatus(result.Status)
		ShiftStatus(&status, -shift)
		result.Status = protocol.Status(status)
	}
	return result, nil
}

// readLine reads one line without its newline; io.EOF when there is none.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, isPrefix, err := r.ReadLine()
		if err != nil {
			if errors.Is(err, io.EOF) && len(line) > 0 {
				return line, nil
			}
			return nil, err
		}
		line = append(line, chunk...)
		if len(line) > maxLine {
			return nil, fmt.Errorf("a message line longer than %d bytes", maxLine)
		}
		if !isPrefix {
			return line, nil
		}
	}
}

func hello(start *protocol.Start, info Info) protocol.Hello {
	gates := info.FeatureGates
	if gates == nil {
		gates = start.FeatureGates
	}
	features := append([]string{}, info.Features...)
	sort.Strings(features)
	seeding := false
	for _, f := range features {
		if f == protocol.FeatureMemorySeeding {
			seeding = true
		}
	}
	return protocol.Hello{
		Kind:           "hello",
		Protocol:       protocol.Version,
		Implementation: protocol.Implementation{Name: info.Name, Version: info.Version},
		FeatureGates:   gates,
		MemorySeeding:  seeding,
		Levels:         info.Levels,
		Features:       features,
		ManyCases:      info.ManyCases,
		// The release it implements, as declared.
		KubernetesVersion: info.KubernetesVersion,
		// The kit fills in what a delta tick leaves out: every implementation on it takes them
		// (unless it asks for complete ticks, to compare the two).
		DeltaTicks:   !info.FullTicks,
		DeltaMetrics: !info.FullTicks,
		DeltaPods:    !info.FullTicks,
	}
}

// shiftMemory moves every time in m by d (a wall-clock implementation's memory back to the
// tick's virtual time).
func shiftMemory(m *protocol.Memory, d time.Duration) {
	for i := range m.Recommendations {
		m.Recommendations[i].Time = m.Recommendations[i].Time.Add(d)
	}
	for i := range m.ScaleUpEvents {
		m.ScaleUpEvents[i].Time = m.ScaleUpEvents[i].Time.Add(d)
	}
	for i := range m.ScaleDownEvents {
		m.ScaleDownEvents[i].Time = m.ScaleDownEvents[i].Time.Add(d)
	}
}

// nonNilLists returns m with empty lists for nil ones: the protocol's memory lists are never
// null.
func nonNilLists(m protocol.Memory) *protocol.Memory {
	if m.Recommendations == nil {
		m.Recommendations = []protocol.Recommendation{}
	}
	if m.ScaleUpEvents == nil {
		m.ScaleUpEvents = []protocol.ScaleEvent{}
	}
	if m.ScaleDownEvents == nil {
		m.ScaleDownEvents = []protocol.ScaleEvent{}
	}
	return &m
}
