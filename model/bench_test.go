package model

import (
	"encoding/binary"
	"runtime"
	"runtime/debug"
	"testing"
)

// gymBatches returns 512-span batches of Gym-shaped rollouts, as the SDK's
// batch processor would send them.
func gymBatches(st *Store, spans int) []Batch {
	g := newGymGen(st)
	var all Batch
	for n := 0; len(all.Spans) < spans; n++ {
		all = g.rollout(all, n, 1+n%7)
	}
	all = all.Slice(0, spans)
	var out []Batch
	for len(all.Spans) > 0 {
		k := min(512, len(all.Spans))
		out = append(out, all.Slice(0, k))
		all = all.Slice(k, len(all.Spans))
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
		for _, bt := range batches {
			st.Add(bt)
		}
		batches = nil
		st.Sync()
		st.Sync() // a second publication settles the last fragments' arrays
		runtime.GC()
		debug.FreeOSMemory()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n), "B/span")
		runtime.KeepAlive(st.Snapshot())
		st.Close()
	}
}

// telemetrygenBatches mimics the bench load: 10-span traces (a root and 9
// children), 10 attributes per span with repeating values, 512 per batch.
func telemetrygenBatches(st *Store, spans int) []Batch {
	l := NewLocal(st.Interner())
	var rb AttrBuilder
	rb.String(l, l.Intern([]byte("service.name")), []byte("checkout"))
	res := st.Interner().InternResource(rb.Sorted(st.Interner()), l.Intern([]byte("checkout")))
	kv := [][2]string{{"network.peer.address", "1.2.3.4"}, {"service.peer.name", "telemetrygen-client"},
		{"server.address", "shop.example.com"}, {"enduser.id", "user-4711"}, {"http.request.method", "GET"},
		{"url.full", "https://shop.example.com/api/v1/cart/items?id=12345"}, {"user_agent.original", "Mozilla/5.0 (X11; Linux x86_64)"},
		{"db.system.name", "postgresql"}, {"db.query.text", "SELECT * FROM items WHERE cart_id = $1"}}
	var b AttrBuilder
	for _, p := range kv {
		b.String(l, l.Intern([]byte(p[0])), []byte(p[1]))
	}
	b.Int(l.Intern([]byte("http.response.status_code")), 200)
	attrs := b.Attrs()
	name := l.Intern([]byte("okey-dokey-0"))
	var out []Batch
	var cur Batch
	var id uint64
	for n := 0; n < spans; n++ {
		var t TraceID
		binary.BigEndian.PutUint64(t[:], uint64(n/10)+1)
		id++
		var s SpanID
		binary.BigEndian.PutUint64(s[:], id*0x9E3779B97F4A7C15|1)
		sp := Span{SpanID: s, Name: name, Resource: res, Kind: KindServer, Start: int64(n), End: int64(n) + 100, Attrs: packAttrs([]byte(attrs.Text()))}
		sp.SetWireSize(500)
		var parent SpanID
		if n%10 != 0 {
			binary.BigEndian.PutUint64(parent[:], (id-uint64(n%10))*0x9E3779B97F4A7C15|1)
		}
		cur.Append(t, parent, sp)
		if len(cur.Spans) == 512 {
			out = append(out, cur)
			cur = Batch{}
		}
	}
	if len(cur.Spans) > 0 {
		out = append(out, cur)
	}
	return out
}

// BenchmarkStoreRetainedBytesTelemetrygen is BenchmarkStoreRetainedBytes on
// the bench load's shape (small traces: per-trace overhead shows).
func BenchmarkStoreRetainedBytesTelemetrygen(b *testing.B) {
	n := 1_000_000
	if testing.Short() {
		n = 100_000
	}
	for i := 0; i < b.N; i++ {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		st := NewStore(Options{})
		batches := telemetrygenBatches(st, n)
		for _, bt := range batches {
			st.Add(bt)
		}
		st.Sync()
		st.Sync() // a second publication settles the last fragments' arrays
		// The batches are garbage now: the store copied what it keeps.
		batches = nil
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric((float64(after.HeapAlloc)-float64(before.HeapAlloc))/float64(n), "B/span")
		runtime.KeepAlive(st.Snapshot())
		st.Close()
	}
}
