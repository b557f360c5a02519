//go:build hpaadapter

package server

// The adapter binary is this package's test binary (`go test -c`, see ../build.sh): synctest
// bubbles need a *testing.T. Started without -test.* flags (as the harness does, e.g.
// `hpa-upstream-adapter --step-protocol`), TestMain turns it into the protocol server: the real
// stdout is kept for protocol messages only and fd 1 is pointed at stderr, so nothing the testing
// framework (or anything else) prints can reach the protocol stream.

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"

	"hpa-conformance/kits/go/protocol"
)

var (
	serveMode   bool
	protocolOut *os.File
	// stopProfile ends `--cpuprofile`'s CPU profile (a no-op without it); called before exiting.
	stopProfile = func() {}
)

func TestMain(m *testing.M) {
	serveMode = true
	for _, a := range os.Args[1:] {
		if strings.HasPrefix(a, "-test.") || strings.HasPrefix(a, "--test.") {
			serveMode = false
		}
	}
	if !serveMode {
		os.Exit(m.Run())
	}
	benchN := 0
	for _, a := range os.Args[1:] {
		if v, ok := strings.CutPrefix(a, "--bench-reconcile="); ok {
			if _, err := fmt.Sscanf(v, "%d", &benchN); err != nil || benchN <= 0 {
				fmt.Fprintf(os.Stderr, "hpa-upstream-adapter: --bench-reconcile wants a positive count, not %q\n", v)
				os.Exit(2)
			}
			continue
		}
		if file, ok := strings.CutPrefix(a, "--cpuprofile="); ok {
			// A CPU profile of the whole session (`go tool pprof <adapter> FILE`), written when
			// the harness sends `stop`: where a tick's time goes.
			f, err := os.Create(file)
			if err == nil {
				err = pprof.StartCPUProfile(f)
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "hpa-upstream-adapter: --cpuprofile: %v\n", err)
				os.Exit(2)
			}
			stopProfile = func() { pprof.StopCPUProfile(); _ = f.Close() }
			continue
		}
		switch a {
		case "--step-protocol", "-step-protocol":
		case "--one-case-per-process":
			ManyCases = false
		case "--full-ticks":
			DeltaTicks = false
		case "-h", "-help", "--help":
			fmt.Fprintln(os.Stderr, "usage: hpa-upstream-adapter [--step-protocol] [--one-case-per-process] [--full-ticks] [--cpuprofile=FILE] | --bench-reconcile=N\n\nSpeaks hpa-conformance's step protocol (harness/PROTOCOL.md) on stdin/stdout,\ndriving upstream Kubernetes' HPA controller", KubernetesVersion())
			os.Exit(0)
		default:
			fmt.Fprintf(os.Stderr, "hpa-upstream-adapter: ignoring unknown argument %q\n", a)
		}
	}
	fd, err := syscall.Dup(1)
	if err != nil {
		fmt.Fprintf(os.Stderr, "hpa-upstream-adapter: dup(stdout): %v\n", err)
		os.Exit(2)
	}
	if err := syscall.Dup3(2, 1, 0); err != nil {
		fmt.Fprintf(os.Stderr, "hpa-upstream-adapter: dup3(stderr, stdout): %v\n", err)
		os.Exit(2)
	}
	syscall.CloseOnExec(fd)
	protocolOut = os.NewFile(uintptr(fd), "protocol-stdout")
	if benchN > 0 {
		// Timing mode (`just bench`): real time, no bubble, no *testing.T needed.
		if err := BenchReconcile(os.Stdin, protocolOut, os.Stderr, benchN); err != nil {
			fmt.Fprintf(os.Stderr, "hpa-upstream-adapter: %v\n", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	// A protocol server's heap is small and short-lived (a tick's objects): collect it less
	// often, and run on one P (the harness runs one process per core; the controller's own
	// goroutines only run between ticks) — both cut the runtime's overhead per tick, which is
	// most of what a tick costs. GOGC / GOMAXPROCS in the environment still win.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	os.Args = []string{os.Args[0], "-test.run=^TestServeStepProtocol$", "-test.count=1", "-test.v=false", "-test.timeout=0"}
	m.Run()
	// Only reached when the test did not exit by itself (it always does).
	fmt.Fprintln(os.Stderr, "hpa-upstream-adapter: protocol session ended unexpectedly")
	os.Exit(3)
}

// TestServeStepProtocol is the protocol server; it only runs in serve mode (see TestMain).
func TestServeStepProtocol(t *testing.T) {
	if !serveMode {
		t.Skip("protocol server; runs only when the binary is started without -test.* flags")
	}
	// The stdin reader lives outside the bubble; the channel is created outside it too, so the
	// bubble's goroutine may receive from it (blocking on it is not "durable": the virtual clock
	// never moves while the adapter waits for the harness).
	lines := make(chan Line)
	// Through the poller when stdin is a pipe (protocol.Stdin: far fewer wake-ups per tick).
	in := protocol.Stdin()
	go func() {
		r := bufio.NewReaderSize(in, 1<<20)
		for {
			b, err := r.ReadBytes('\n')
			if len(b) > 0 {
				lines <- Line{Data: b}
			}
			if err != nil {
				lines <- Line{Err: err}
				close(lines)
				return
			}
		}
	}()
	// One case per bubble: each starts at the protocol's t = 0 with nothing left of the one
	// before (the bubble ends only when all its goroutines have).
	for afterCase := false; ; afterCase = true {
		var outcome Outcome
		synctest.Test(t, func(t *testing.T) {
			var err error
			outcome, err = Serve(lines, protocolOut, os.Stderr, afterCase)
			if err != nil {
				fmt.Fprintf(os.Stderr, "hpa-upstream-adapter: %v\n", err)
				os.Exit(2)
			}
			if outcome.Stopped {
				// `stop`: exit at once, before the testing framework prints anything and
				// without waiting for the controller's goroutines in the bubble.
				stopProfile()
				os.Exit(0)
			}
		})
		// `end`: the case's bubble is gone; the process is ready for the next `start`.
		if err := WriteMessage(protocolOut, protocol.Ended{Kind: "ended", Case: outcome.Ended}); err != nil {
			fmt.Fprintf(os.Stderr, "hpa-upstream-adapter: %v\n", err)
			os.Exit(2)
		}
	}
}
