package receiver

import (
	"bytes"
	"context"
	"encoding/binary"
	"sync/atomic"
	"testing"

	"github.com/nemo-gym/gymtrace/model"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// idPatcher gives every copy of a request fresh trace and span ids, the way
// the bench load does: it XORs a per-copy key into every occurrence of every
// id, so parent links inside the request stay intact.
type idPatcher struct{ offs []int }

func newIDPatcher(tb testing.TB, b []byte) idPatcher {
	tb.Helper()
	var req coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		tb.Fatal(err)
	}
	ids := map[string]bool{}
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				ids[string(sp.TraceId)] = true
				ids[string(sp.SpanId)] = true
			}
		}
	}
	var p idPatcher
	for id := range ids {
		for i := 0; ; {
			j := bytes.Index(b[i:], []byte(id))
			if j < 0 {
				break
			}
			p.offs = append(p.offs, i+j)
			i += j + len(id)
		}
	}
	if len(p.offs) == 0 {
		tb.Fatal("no ids found in the request")
	}
	return p
}

// apply writes src with ids keyed by k into dst (same length as src).
func (p idPatcher) apply(dst, src []byte, k uint64) {
	copy(dst, src)
	k = k*0x9E3779B97F4A7C15 + 1
	for _, o := range p.offs {
		binary.LittleEndian.PutUint64(dst[o:], binary.LittleEndian.Uint64(src[o:])^k)
	}
}

// BenchmarkIngestGRPCFresh is BenchmarkIngestGRPC with fresh ids in every
// request, as a live job sends them: every span is new to the store, so
// the writer builds trees and the heap grows as in `gymtrace serve`.
// The store is bounded (-short: 200k spans, else 1M) so long runs stay
// within memory; eviction is part of what is measured.
func BenchmarkIngestGRPCFresh(b *testing.B) {
	body, spans := benchRequest(b)
	patch := newIDPatcher(b, body)
	maxSpans := 1_000_000
	if testing.Short() {
		maxSpans = 200_000
	}
	srv, st := startServer(b, Config{}, model.Options{MaxSpans: maxSpans})
	ga, _ := srv.Addrs()
	cc := dialRaw(b, ga)
	var seq atomic.Uint64
	var refused atomic.Int64
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	b.SetParallelism(2) // 2×GOMAXPROCS requests in flight, like the bench load's 4
	b.RunParallel(func(pb *testing.PB) {
		var resp coltrace.ExportTraceServiceResponse
		buf := make([]byte, len(body))
		for pb.Next() {
			patch.apply(buf, body, seq.Add(1))
			if err := cc.Invoke(context.Background(), traceExport, &rawRequest{b: buf}, &resp); err != nil {
				refused.Add(1)
			}
		}
	})
	st.Sync()
	b.StopTimer()
	if n := refused.Load(); n > 0 {
		b.Logf("%d of %d requests refused (queue full)", n, b.N)
	}
	b.ReportMetric(float64(spans*(b.N-int(refused.Load())))/b.Elapsed().Seconds(), "spans/s")
}
