package kit

// Serving in testing/synctest bubbles: for an implementation that reads time.Now() — a fork of
// upstream's controller stamps its memory with it, its work queue and informers run timers — each
// case runs inside its own bubble, whose clock starts at the protocol's t = 0 and moves only when
// a tick's instant says so. Many cases are served by one process, each in a fresh bubble: nothing
// of a case's goroutines or timers outlives it. This is how adapters/upstream runs upstream's own
// controller (adapters/upstream/README.md); docs/validate-your-hpa.md shows the wiring.
//
// synctest bubbles need a *testing.T, so the implementation's binary is its package's test binary
// (`go test -c`), started by the harness without -test.* flags:
//
//	// main_test.go
//	func TestMain(m *testing.M) { kit.BubbleMain(m, "TestStepProtocol") }
//
//	func TestStepProtocol(t *testing.T) { kit.ServeBubbles(t, myHPA{}) }
//
//	// go test -c -o bin/my-hpa . && hpa-conformance run cases --target exec:bin/my-hpa

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"hpa-conformance/kits/go/protocol"
)

// Epoch is the protocol's t = 0 (2000-01-01T00:00:00Z), which is also where a synctest bubble's
// clock starts: inside a bubble, time.Now() at tick t is Epoch + t.
var Epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// protocolOut is where protocol messages go: the real stdout, kept by BubbleMain while fd 1 is
// pointed at stderr (so nothing the testing framework prints reaches the protocol stream).
var protocolOut io.Writer = os.Stdout

// serving: BubbleMain started the binary as a protocol server (not under `go test`).
var serving bool

// BubbleMain is the TestMain of an implementation served with ServeBubbles. Started with -test.*
// flags (`go test`), it runs the package's tests as usual. Started as the harness starts it
// (no -test.* flags, e.g. `my-hpa --step-protocol`), it keeps stdout for the protocol, points
// fd 1 at stderr, and runs only the test named test (which calls ServeBubbles); it exits 0 after
// `stop`, non-zero on a protocol error.
func BubbleMain(m *testing.M, test string) {
	for _, a := range os.Args[1:] {
		if strings.HasPrefix(a, "-test.") || strings.HasPrefix(a, "--test.") {
			os.Exit(m.Run())
		}
	}
	out, err := keepStdoutForProtocol()
	if err != nil {
		fmt.Fprintf(os.Stderr, "kit: %v\n", err)
		os.Exit(2)
	}
	protocolOut, serving = out, true
	os.Args = []string{os.Args[0], "-test.run=^" + test + "$", "-test.count=1", "-test.v=false", "-test.timeout=0"}
	os.Exit(m.Run())
}

// ServeBubbles serves the protocol on stdin and stdout (as BubbleMain keeps it), each case in
// its own synctest bubble; a protocol error fails t (and the process exits non-zero). Under
// `go test` (not started through BubbleMain as a server) it skips.
func ServeBubbles(t *testing.T, impl Implementation) {
	if !serving {
		t.Skip("the step-protocol server: runs when the binary is started without -test.* flags (kit.BubbleMain)")
	}
	if err := ServeBubblesIO(t, protocol.Stdin(), protocolOut, impl); err != nil {
		t.Fatal(err)
	}
}

// ServeBubblesIO is ServeBubbles on in/out: until `stop` or the end of input, each case from its
// `start` to its `end` runs in a fresh synctest bubble. In the bubble time.Now() is the tick's
// instant: before each tick the bubble's clock is moved to it (timers due on the way fire, in
// order), and after the session's Tick (or Decide) the kit waits until every goroutine of the
// bubble is blocked again before it answers. hello declares manyCases (a bubble keeps nothing of
// a case; Info.OneCasePerProcess takes it back) and never wallClock. At `end` (or `stop`) a session implementing Ender is ended; every
// goroutine it started must return then, or synctest reports the bubble's blocked goroutines.
func ServeBubblesIO(t *testing.T, in io.Reader, out io.Writer, impl Implementation) error {
	// The input is read outside the bubbles, into a channel made outside them: a bubble's
	// goroutine waiting for the harness is not durably blocked, so its clock does not move.
	lines := make(chan inputLine)
	go func() {
		r := bufio.NewReaderSize(in, 1<<20)
		for {
			line, err := readLine(r)
			if err != nil {
				lines <- inputLine{err: err}
				close(lines)
				return
			}
			if len(bytes.TrimSpace(line)) > 0 {
				lines <- inputLine{data: line}
			}
		}
	}()
	write := writer(out)
	for {
		var after next
		var failed error
		done := false
		synctest.Test(t, func(*testing.T) {
			s := &server{impl: impl, write: write, bubble: true}
			defer s.endSession()
			if !time.Now().Equal(Epoch) {
				failed = fmt.Errorf("a bubble's clock starts at %s, not the protocol's t = 0 (%s)", time.Now().UTC().Format(time.RFC3339), Epoch.Format(time.RFC3339))
				return
			}
			for l := range lines {
				if l.err != nil {
					if !errors.Is(l.err, io.EOF) {
						failed = l.err
					}
					done = true
					return
				}
				n, err := s.handle(l.data)
				if err != nil {
					failed = err
					return
				}
				if n.kind != goOn {
					after = n
					return
				}
			}
			done = true
		})
		switch {
		case failed != nil:
			return failed
		case done || after.kind == stopped:
			return nil
		}
		// `end`: the case's bubble is gone with all its goroutines; the next `start` gets a
		// fresh one.
		if err := write(protocol.Ended{Kind: "ended", Case: after.endedCase}); err != nil {
			return err
		}
	}
}

type inputLine struct {
	data []byte
	err  error
}

// advanceBubbleClock moves the bubble's clock to now (firing the timers due on the way) and
// waits until the bubble's goroutines are blocked again.
func advanceBubbleClock(now time.Time) error {
	d := now.Sub(time.Now())
	if d < 0 {
		return fmt.Errorf("the tick's instant %s is before the bubble's clock %s", now.UTC().Format(time.RFC3339Nano), time.Now().UTC().Format(time.RFC3339Nano))
	}
	if d > 0 {
		time.Sleep(d)
	}
	synctest.Wait()
	return nil
}

// settleBubble waits until every goroutine of the bubble but the caller is durably blocked.
func settleBubble() { synctest.Wait() }
