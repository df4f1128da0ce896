package model

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// gymBatches returns 512-span batches of Gym-shaped rollouts, as the SDK's
// batch processor would send them.
func gymBatches(st *Store, spans int) []Batch {
	g := newGymGen(st)
	var all []Span
	for n := 0; len(all) < spans; n++ {
		all = g.rollout(all, n, 1+n%7)
	}
	all = all[:spans]
	var out []Batch
	for len(all) > 0 {
		k := min(512, len(all))
		out = append(out, Batch{Spans: all[:k:k]})
		all = all[k:]
	}
	return out
}

// BenchmarkStoreInsert measures the writer: spans applied per second.
func BenchmarkStoreInsert(b *testing.B) {
	b.ReportAllocs()
	spans := 0
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		st := NewStore(Options{})
		batches := gymBatches(st, 100_000)
		b.StartTimer()
		for _, bt := range batches {
			spans += len(bt.Spans)
			st.Add(bt)
		}
		st.Sync()
		b.StopTimer()
		st.Close()
	}
	b.ReportMetric(float64(spans)/b.Elapsed().Seconds(), "spans/s")
}

// BenchmarkStoreRetainedBytes reports live heap per stored span after 1M
// spans (100k with -short): store, trees and indexes included.
func BenchmarkStoreRetainedBytes(b *testing.B) {
	n := 1_000_000
	if testing.Short() {
		n = 100_000
	}
	for i := 0; i < b.N; i++ {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		st := NewStore(Options{})
		batches := gymBatches(st, n)
		// The generator's own copies are not retained by the store: measure
		// the baseline with them alive, then drop them.
		runtime.GC()
		var withInput runtime.MemStats
		runtime.ReadMemStats(&withInput)
		for _, bt := range batches {
			st.Add(bt)
		}
		batches = nil
		st.Sync()
		runtime.GC()
		debug.FreeOSMemory()
		runtime.ReadMemStats(&after)
		_ = withInput
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n), "B/span")
		runtime.KeepAlive(st.Snapshot())
		st.Close()
	}
}
