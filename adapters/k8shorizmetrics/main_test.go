package main

// The same adapter served in testing/synctest bubbles (kits/go/bubbles.go): the library's
// time.Now() is each tick's virtual instant (no wall-clock shift), each case has a bubble of its
// own, and one process serves the whole corpus. Built as this package's test binary:
//
//	go test -c -o bin/hpa-k8shorizmetrics-bubbles .
//
// `just k8shorizmetrics-corpus` runs the corpus on both builds against the same expectations.

import (
	"testing"

	kit "hpa-conformance/kits/go"
)

func TestMain(m *testing.M) { kit.BubbleMain(m, "TestStepProtocol") }

// TestStepProtocol is the protocol server when the harness starts the binary.
func TestStepProtocol(t *testing.T) { kit.ServeBubbles(t, adapter{}) }
