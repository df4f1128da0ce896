package main

import (
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/internal/cputime"
	"github.com/nemo-gym/gymtrace/internal/testfile"
	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

var peakChecked = flag.Int("peak-checked", 80, "BenchmarkCheckPeak: the percent of the 1M spans the engine checked before the check it measures (0: a first check)")

var yardstickHeap = flag.String("yardstick-heap", "", "BenchmarkCheckYardstick/*/retained writes a heap profile of the store and the engine it keeps to FILE-<request>")

// BenchmarkCheckYardstick is what the live tally's check costs over a store
// of 1M spans of each yardstick request (fresh ids per copy, decoded as the
// receivers decode them): finding the rollouts by structure, and the whole
// check, each with a fresh engine as a first check pays. B/op is what the
// check allocates beside the store.
func BenchmarkCheckYardstick(b *testing.B) {
	for _, in := range []struct{ name, file string }{
		{"realgym-run", "req-realgym-run-5072.bin.gz"},
		{"realgym-agent", "req-realgym-agent-512.bin.gz"},
		{"telemetrygen", "req-telemetrygen-512.bin"},
	} {
		base := liveHeap()
		st := model.NewStore(model.Options{})
		add := storeAdder(b, st)
		copies := 0
		yardstickCopies(b, in.file, 1_000_000, func(req *coltrace.ExportTraceServiceRequest) {
			body, err := proto.Marshal(req)
			if err != nil {
				b.Fatal(err)
			}
			add(body)
			copies++
		})
		st.Sync()
		snap := st.Snapshot()
		reg := groups.Default()
		// What the live tally keeps between its checks: the heap after a
		// check with its engine held, beside the store's own.
		b.Run(in.name+"/retained", func(b *testing.B) {
			stored := liveHeap()
			var eng *whatif.Engine
			for b.Loop() {
				eng = whatif.NewEngine(reg)
				eng.Check(snap, time.Now(), whatif.LiveGrace).Tally(time.Now(), whatif.JobQuiet)
			}
			held := liveHeap()
			if *yardstickHeap != "" {
				testfile.HeapProfile(b, *yardstickHeap+"-"+in.name)
			}
			runtime.KeepAlive(eng)
			n := float64(snap.Stats.Stored)
			b.ReportMetric(float64(stored-base)/n, "store-B/span")
			b.ReportMetric(float64(held-stored)/n, "engine-B/span")
		})
		// What a check costs the live tally, whose engine is its own and
		// kept: over a store that did not change, and after one request
		// more arrived (the store keeps them).
		b.Run(in.name+"/recheck", func(b *testing.B) {
			eng := whatif.NewEngine(reg)
			eng.Check(snap, time.Now(), whatif.LiveGrace)
			b.ReportAllocs()
			defer cputime.Timer(b)()
			for b.Loop() {
				eng.Check(snap, time.Now(), whatif.LiveGrace).Tally(time.Now(), whatif.JobQuiet)
			}
		})
		b.Run(in.name+"/recheck-grown", func(b *testing.B) {
			// The copies after the first 1M spans: up to 40, and 50k spans.
			per := (1_000_000 + copies - 1) / copies
			later := min(40, 50_000/per+1)
			var more [][]byte
			n := 0
			yardstickCopies(b, in.file, (copies+later)*per, func(req *coltrace.ExportTraceServiceRequest) {
				if n++; n > copies {
					body, err := proto.Marshal(req)
					if err != nil {
						b.Fatal(err)
					}
					more = append(more, body)
				}
			})
			eng := whatif.NewEngine(reg)
			eng.Check(snap, time.Now(), whatif.LiveGrace)
			b.ReportAllocs()
			var m0, m1 runtime.MemStats
			var allocs uint64
			k := 0
			for b.Loop() {
				if k < len(more) {
					add(more[k])
					k++
				}
				st.Sync()
				s := st.Snapshot()
				runtime.ReadMemStats(&m0)
				eng.Check(s, time.Now(), whatif.LiveGrace).Tally(time.Now(), whatif.JobQuiet)
				runtime.ReadMemStats(&m1)
				allocs += m1.TotalAlloc - m0.TotalAlloc
			}
			b.ReportMetric(float64(allocs)/float64(b.N)/1e6, "check-MB/op")
		})
		b.Run(in.name+"/structure", func(b *testing.B) {
			b.ReportAllocs()
			defer cputime.Timer(b)()
			for b.Loop() {
				if st := whatif.NewEngine(reg).Structure(snap); st == nil {
					b.Fatal("no structure")
				}
			}
		})
		b.Run(in.name+"/check", func(b *testing.B) {
			b.ReportAllocs()
			defer cputime.Timer(b)()
			for b.Loop() {
				rep := whatif.NewEngine(reg).Check(snap, time.Now(), whatif.LiveGrace)
				if rep.Spans != snap.Stats.Stored {
					b.Fatal(fmt.Sprintf("checked %d spans of %d", rep.Spans, snap.Stats.Stored))
				}
			}
		})
		st.Close()
	}
}

// yardstickBodies is yardstickCopies' requests as protobuf bodies.
func yardstickBodies(tb testing.TB, name string, spans int) [][]byte {
	tb.Helper()
	var bodies [][]byte
	yardstickCopies(tb, name, spans, func(req *coltrace.ExportTraceServiceRequest) {
		body, err := proto.Marshal(req)
		if err != nil {
			tb.Fatal(err)
		}
		bodies = append(bodies, body)
	})
	return bodies
}

// storeAdder returns a function that decodes a body as the receivers do,
// with one Local for all, and adds it to st.
func storeAdder(tb testing.TB, st *model.Store) func(body []byte) {
	l := model.NewLocal(st.Interner())
	return func(body []byte) {
		tb.Helper()
		batch, _, err := receiver.DecodeProto(l, body, receiver.Limits{})
		if err != nil {
			tb.Fatal(err)
		}
		if err := st.Add(batch); err != nil {
			tb.Fatal(err)
		}
	}
}

// liveHeap is the heap in use once the collector has run.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkCheckPeak is the live tally's check of a store that grew by a
// quarter since its last check (1M spans of each request, 800k checked;
// -peak-checked=0: a first check of the 1M):
// the most the heap holds at once beside the store and the engine it
// keeps, which with the store's decides the peak RSS. The collector runs
// near continuously (GOGC=2) and the live heap is read after each of its
// cycles: peak-MB is the working set, kept-MB what the engine keeps more,
// check-MB what the check allocated.
func BenchmarkCheckPeak(b *testing.B) {
	for _, in := range []struct{ name, file string }{
		{"realgym-run", "req-realgym-run-5072.bin.gz"},
		{"realgym-agent", "req-realgym-agent-512.bin.gz"},
		{"telemetrygen", "req-telemetrygen-512.bin"},
	} {
		b.Run(in.name, func(b *testing.B) {
			bodies := yardstickBodies(b, in.file, 1_000_000)
			var peak, kept, allocated float64
			for b.Loop() {
				st := model.NewStore(model.Options{})
				add := storeAdder(b, st)
				cut := len(bodies) * *peakChecked / 100
				for _, body := range bodies[:cut] {
					add(body)
				}
				st.Sync()
				eng := whatif.NewEngine(groups.Default())
				if cut > 0 {
					eng.Tally(st.Snapshot(), time.Now(), whatif.LiveGrace, whatif.JobQuiet)
				}
				for _, body := range bodies[cut:] {
					add(body)
				}
				st.Sync()
				st.Sync() // the last fragments' arrays settle
				snap := st.Snapshot()
				before := liveHeap()
				var m0, m1 runtime.MemStats
				runtime.ReadMemStats(&m0)
				mx := peakLive(func() { eng.Tally(snap, time.Now(), whatif.LiveGrace, whatif.JobQuiet) })
				runtime.ReadMemStats(&m1)
				after := liveHeap()
				peak, kept = float64(mx)-float64(before), float64(after)-float64(before)
				allocated = float64(m1.TotalAlloc - m0.TotalAlloc)
				runtime.KeepAlive(eng)
				runtime.KeepAlive(add) // and the Local it holds
				st.Close()
			}
			b.ReportMetric(peak/1e6, "peak-MB")
			b.ReportMetric(kept/1e6, "kept-MB")
			b.ReportMetric(allocated/1e6, "check-MB")
		})
	}
}

// peakLive runs fn with the collector near continuous and returns the
// largest live heap its cycles found.
func peakLive(fn func()) uint64 {
	stop, out := make(chan struct{}), make(chan uint64)
	go func() {
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		var mx uint64
		for {
			metrics.Read(s)
			mx = max(mx, s[0].Value.Uint64())
			select {
			case <-stop:
				out <- mx
				return
			case <-time.After(100 * time.Microsecond):
			}
		}
	}()
	prev := debug.SetGCPercent(2)
	fn()
	runtime.GC()
	debug.SetGCPercent(prev)
	close(stop)
	return <-out
}
