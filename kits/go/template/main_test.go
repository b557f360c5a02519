package main

// The same implementation served in testing/synctest bubbles (kits/go/bubbles.go): one bubble per
// case, time.Now() at each tick's virtual instant, many cases per process. Build it as the
// package's test binary:
//
//	go test -c -o bin/my-hpa ./template
//	hpa-conformance run cases --target exec:bin/my-hpa
//
// `go test ./template` runs the package's tests as usual (TestStepProtocol then skips).

import (
	"testing"

	kit "hpa-conformance/kits/go"
)

func TestMain(m *testing.M) { kit.BubbleMain(m, "TestStepProtocol") }

// TestStepProtocol is the protocol server when the harness starts the binary.
func TestStepProtocol(t *testing.T) { kit.ServeBubbles(t, implementation{}) }
