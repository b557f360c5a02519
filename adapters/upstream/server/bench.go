//go:build hpaadapter

package server

// BenchReconcile times upstream's reconcile for one tick, in real time: the harness's benchmark
// (`just bench`) sends a `start` and one `tick` line (the same scenario it times the reference core
// on) and reads back one JSON line with the time per reconcile.

import (
	"bufio"
	"encoding/json"
	"io"
	"time"

	"hpa-conformance/kits/go/protocol"
)

type benchResult struct {
	Implementation string  `json:"implementation"`
	Version        string  `json:"version"`
	Iterations     int     `json:"iterations"`
	NsPerOp        float64 `json:"nsPerOp"`
}

// BenchReconcile reads `start` and `tick` from in, reconciles the tick n times (after a warm-up)
// and writes the mean time per reconcile to out. It runs outside a synctest bubble: the clock is
// real, which is what a timing needs; the decisions themselves are not checked here.
func BenchReconcile(in io.Reader, out io.Writer, logw io.Writer, n int) error {
	r := bufio.NewReaderSize(in, 1<<22)
	readLine := func() ([]byte, error) {
		b, err := r.ReadBytes('\n')
		if err != nil && len(b) == 0 {
			return nil, err
		}
		return b, nil
	}
	data, err := readLine()
	if err != nil {
		return fatalf("bench: reading start: %v", err)
	}
	var start protocol.Start
	if err := json.Unmarshal(data, &start); err != nil {
		return fatalf("bench: bad start: %v", err)
	}
	if data, err = readLine(); err != nil {
		return fatalf("bench: reading tick: %v", err)
	}
	var tick protocol.Tick
	if err := json.Unmarshal(data, &tick); err != nil {
		return fatalf("bench: bad tick: %v", err)
	}
	if tick.HPA == nil {
		return fatalf("bench: tick without hpa")
	}
	_, h, ctx, cancel, err := begin(start, logw)
	if err != nil {
		return err
	}
	defer cancel()
	hpa := tick.HPA.DeepCopy()
	if hpa.Namespace == "" {
		hpa.Namespace = "default"
	}
	key := hpa.Namespace + "/" + hpa.Name
	h.ctrl.HPAAdapterTrack(hpa.Namespace, hpa.Name)
	once := func() error {
		// Every reconcile starts from the same memory, as the reference core's timing does.
		if start.Memory != nil {
			h.ctrl.HPAAdapterSeedMemory(key, toController(start.Memory))
		}
		if err := h.load(&tick, scaleUpdateFault{}, hpa.Namespace, false); err != nil {
			return fatalf("bench: %v", err)
		}
		return reconcile(ctx, h, hpa.DeepCopy(), key)
	}
	for i := 0; i < n/10+1; i++ {
		if err := once(); err != nil {
			return err
		}
	}
	began := time.Now()
	for i := 0; i < n; i++ {
		if err := once(); err != nil {
			return err
		}
	}
	elapsed := time.Since(began)
	b, err := json.Marshal(benchResult{
		Implementation: ImplementationName,
		Version:        KubernetesVersion(),
		Iterations:     n,
		NsPerOp:        float64(elapsed.Nanoseconds()) / float64(n),
	})
	if err != nil {
		return fatalf("bench: %v", err)
	}
	_, err = out.Write(append(b, '\n'))
	return err
}
