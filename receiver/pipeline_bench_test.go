package receiver

import (
	"flag"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/internal/cputime"
	"github.com/nemo-gym/gymtrace/internal/testfile"
	"github.com/nemo-gym/gymtrace/model"
)

var (
	pipelineSpans = flag.Int("pipeline-spans", 4_000_000, "spans sent per BenchmarkPipeline iteration")
	retainedHeap  = flag.String("retained-heap", "", "BenchmarkRetained writes a heap profile of the full store to FILE-<input>")
)

// benchReqFile reads a request of the yardstick, gzipped or not.
func benchReqFile(tb testing.TB, name string) []byte {
	tb.Helper()
	if strings.HasSuffix(name, ".gz") {
		return testfile.Gunzip(tb, "testdata/"+name)
	}
	raw, err := os.ReadFile("testdata/" + name)
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

// pipelineInputs are the yardstick's requests: every request of a real Gym
// run in one (children before parents), one agent batch whose parents
// never arrive (fresh ids per copy), and telemetrygen's 512 spans.
var pipelineInputs = []struct{ name, file string }{
	{"realgym-run", "req-realgym-run-5072.bin.gz"},
	{"realgym-agent", "req-realgym-agent-512.bin.gz"},
	{"telemetrygen", "req-telemetrygen-512.bin"},
}

// resourceRequests cuts a request into one request per resource_spans, in
// order: the run's request is every request its processes sent, and each
// resource_spans one of them, so sent one by one its traces arrive in
// pieces, children before parents, as from Gym's exporters.
func resourceRequests(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		_, rest, err := nextField(b)
		if err != nil {
			panic(err)
		}
		out = append(out, b[:len(b)-len(rest)])
		b = rest
	}
	return out
}

// BenchmarkPipeline is `gymtrace serve`'s trace path without the transport:
// two goroutines (one per core here) decode copies of a request with fresh
// ids and submit them to a store bounded at 2M spans with the lean
// collector target, as serve runs it. cpu-us/span is the whole process's
// CPU (decoders, writer, collector) per span; wall spans/s is what two
// cores give when nothing else runs.
func BenchmarkPipeline(b *testing.B) {
	type input struct {
		name, file string
		split      bool
	}
	var inputs []input
	for _, in := range pipelineInputs {
		inputs = append(inputs, input{in.name, in.file, false})
	}
	inputs = append(inputs, input{"realgym-run-as-sent", pipelineInputs[0].file, true})
	for _, in := range inputs {
		body := benchReqFile(b, in.file)
		b.Run(in.name, func(b *testing.B) {
			patch := newIDPatcher(b, body)
			probe, _, err := DecodeProto(model.NewLocal(model.NewInterner()), body, Limits{})
			if err != nil {
				b.Fatal(err)
			}
			per := len(probe.Spans)
			reqs := max(1, *pipelineSpans/per)
			var total, cpu int64
			var wall time.Duration
			for b.Loop() {
				runtime.GC()
				st := model.NewStore(model.Options{MaxSpans: 2_000_000, LeanGC: true})
				pool := sync.Pool{New: func() any { return model.NewLocal(st.Interner()) }}
				var next atomic.Int64
				var wg sync.WaitGroup
				t0, c0 := time.Now(), cputime.Now()
				for range runtime.GOMAXPROCS(0) {
					wg.Add(1)
					go func() {
						defer wg.Done()
						buf := make([]byte, len(body))
						for {
							k := next.Add(1)
							if k > int64(reqs) {
								return
							}
							patch.apply(buf, body, uint64(k))
							reqs := [][]byte{buf}
							if in.split {
								reqs = resourceRequests(buf)
							}
							for _, req := range reqs {
								l := pool.Get().(*model.Local)
								batch, _, err := DecodeProto(l, req, Limits{})
								pool.Put(l)
								if err != nil {
									b.Error(err)
									return
								}
								if err := st.SubmitWait(batch, time.Minute); err != nil {
									b.Error(err)
									return
								}
							}
						}
					}()
				}
				wg.Wait()
				st.Sync()
				wall += time.Since(t0)
				cpu += cputime.Now() - c0
				total += int64(reqs * per)
				s := st.Snapshot().Stats
				if int64(s.Stored)+s.EvictedSpans != int64(reqs*per) {
					b.Fatalf("stored %d + evicted %d spans, sent %d", s.Stored, s.EvictedSpans, reqs*per)
				}
				st.Close()
			}
			b.ReportMetric(float64(total)/wall.Seconds(), "spans/s")
			b.ReportMetric(float64(cpu)/float64(total)/1e3, "cpu-us/span")
		})
	}
}

// BenchmarkRetained reports the live heap per stored span after 1M spans
// of each yardstick request (fresh ids per copy), decoded and stored
// in-process: spans, trees, indexes, rollouts and the published snapshot,
// without transport or collector headroom.
func BenchmarkRetained(b *testing.B) {
	for _, in := range pipelineInputs {
		body := benchReqFile(b, in.file)
		b.Run(in.name, func(b *testing.B) {
			patch := newIDPatcher(b, body)
			n := 1_000_000
			if testing.Short() {
				n = 100_000
			}
			buf := make([]byte, len(body))
			for b.Loop() {
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				st := model.NewStore(model.Options{})
				l := model.NewLocal(st.Interner())
				stored := 0
				for k := uint64(1); stored < n; k++ {
					patch.apply(buf, body, k)
					batch, _, err := DecodeProto(l, buf, Limits{})
					if err != nil {
						b.Fatal(err)
					}
					stored += len(batch.Spans)
					if err := st.Add(batch); err != nil {
						b.Fatal(err)
					}
				}
				st.Sync()
				st.Sync() // a second publication settles the last fragments' arrays
				runtime.GC()
				runtime.ReadMemStats(&after)
				if got := st.Snapshot().Stats.Stored; got != stored {
					b.Fatalf("stored %d spans, sent %d", got, stored)
				}
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(stored), "B/span")
				// What the per-rollout and per-trace costs are spread over.
				stats := st.Snapshot().Stats
				b.ReportMetric(float64(stored)/float64(stats.Rollouts), "spans/rollout")
				b.ReportMetric(float64(stored)/float64(stats.Fragments), "spans/frag")
				b.ReportMetric(float64(stored)/float64(stats.Traces), "spans/trace")
				if *retainedHeap != "" {
					testfile.HeapProfile(b, *retainedHeap+"-"+in.name)
				}
				runtime.KeepAlive(l)
				st.Close()
			}
		})
	}
}
