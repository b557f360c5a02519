//go:build hpaadapter

package server

// The adapter binary is this package's test binary (`go test -c`, see ../build.sh): synctest
// bubbles need a *testing.T. Started without -test.* flags (as the harness does, e.g.
// `hpa-upstream-adapter --step-protocol`), TestMain reads the adapter's flags and hands the
// process to the Go kit's kit.BubbleMain: the real stdout is kept for protocol messages only and
// fd 1 is pointed at stderr, so nothing the testing framework (or anything else) prints can reach
// the protocol stream.

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"testing"

	kit "hpa-conformance/kits/go"
)

var (
	// stopProfile ends `--cpuprofile`'s CPU profile (a no-op without it); called before exiting.
	stopProfile = func() {}
)

func TestMain(m *testing.M) {
	for _, a := range os.Args[1:] {
		if strings.HasPrefix(a, "-test.") || strings.HasPrefix(a, "--test.") {
			// `go test`: the package's tests (TestServeStepProtocol skips).
			os.Exit(m.Run())
		}
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
	if benchN > 0 {
		// Timing mode (`just bench`): real time, no bubble, no *testing.T needed.
		if err := BenchReconcile(os.Stdin, os.Stdout, os.Stderr, benchN); err != nil {
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
	// The kit keeps the real stdout for protocol messages, points fd 1 at stderr and runs only
	// TestServeStepProtocol; the process exits 0 after `stop`, non-zero on a protocol error.
	kit.BubbleMain(m, "TestServeStepProtocol")
}

// TestServeStepProtocol is the protocol server (kit.ServeBubbles: one synctest bubble per case,
// many cases per process); it runs only when the binary is started as the harness starts it.
func TestServeStepProtocol(t *testing.T) {
	defer stopProfile()
	kit.ServeBubbles(t, upstreamHPA{logw: os.Stderr})
}
