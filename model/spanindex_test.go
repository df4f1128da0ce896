package model

import (
	"encoding/binary"
	"math/rand/v2"
	"syscall"
	"testing"
)

// cpuNow is the process's CPU time in nanoseconds: on a shared machine it
// moves less than the wall clock when other work takes the cores.
func cpuNow() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// The index agrees with a Go map through random puts, replacements and
// deletions. Locations name a slot of a side table holding the id, as a
// fragment's span holds its id; ids are drawn from a small space so that
// replacements and deletions of present ids are frequent, and some are
// chosen to share a tag's line.
func TestSpanIndexAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := newSpanIndex()
	ref := map[SpanID]loc{}
	held := map[loc]SpanID{} // what each location holds
	is := func(id SpanID) func(loc) bool {
		return func(l loc) bool { return held[l] == id }
	}
	id := func(k uint64) SpanID {
		var s SpanID
		binary.LittleEndian.PutUint64(s[:], k)
		return s
	}
	for step := 0; step < 300_000; step++ {
		k := rng.Uint64N(50_000)
		if step%1000 == 0 {
			k = 0
		}
		s := id(k * 0x9e3779b97f4a7c15)
		switch op := rng.IntN(10); {
		case op < 6:
			// As in the store, the span is at its new place before the
			// index moves it, and still at the old one.
			l := loc{frag: uint32(step), idx: uint32(k)}
			held[l] = s
			x.set(s, l, is(s))
			if old, ok := ref[s]; ok {
				delete(held, old)
			}
			ref[s] = l
		case op < 9:
			got := x.del(s, is(s))
			if _, want := ref[s]; got != want {
				t.Fatalf("step %d: del(%v) = %v, want %v", step, s, got, want)
			}
			if old, ok := ref[s]; ok {
				delete(held, old)
			}
			delete(ref, s)
		default:
			got, ok := x.get(s, is(s))
			want, wok := ref[s]
			if ok != wok || got != want {
				t.Fatalf("step %d: get(%v) = %v,%v want %v,%v", step, s, got, ok, want, wok)
			}
		}
		if x.Len() != len(ref) {
			t.Fatalf("step %d: Len %d, want %d", step, x.Len(), len(ref))
		}
	}
	for s, want := range ref {
		if got, ok := x.get(s, is(s)); !ok || got != want {
			t.Fatalf("get(%v) = %v,%v want %v", s, got, ok, want)
		}
	}
	for s := range ref {
		x.del(s, is(s))
	}
	if x.Len() != 0 {
		t.Fatalf("Len %d after deleting all", x.Len())
	}
	for i := range x.shards {
		if x.shards[i].n != 0 || x.shards[i].tags != nil {
			t.Fatalf("shard %d keeps %d entries", i, x.shards[i].n)
		}
	}
}

// Ids whose tags are equal are told apart by the location test, and runs
// that wrap past the end of a shard's slots survive deletion.
func TestSpanIndexSameTagAndWrap(t *testing.T) {
	x := newSpanIndex()
	var ids []SpanID
	// Ids of shard 7 whose line is the shard's last.
	for k := uint64(1); len(ids) < 40; k++ {
		var s SpanID
		binary.LittleEndian.PutUint64(s[:], k)
		sh, tag := x.hash(s)
		if sh == 7 && home(tag, idxMinSlots) == idxMinSlots-idxLine {
			ids = append(ids, s)
		}
	}
	held := map[loc]SpanID{}
	is := func(id SpanID) func(loc) bool { return func(l loc) bool { return held[l] == id } }
	for i, s := range ids {
		l := loc{idx: uint32(i)}
		held[l] = s
		x.set(s, l, is(s))
	}
	// Every tag matches: only the location test tells them apart.
	same := func(SpanID) func(loc) bool { return func(loc) bool { return true } }
	if _, ok := x.get(ids[0], same(ids[0])); !ok {
		t.Fatal("no entry at all")
	}
	for i := 0; i < len(ids); i += 2 {
		if !x.del(ids[i], is(ids[i])) {
			t.Fatalf("del %d: not found", i)
		}
	}
	for i, s := range ids {
		l, ok := x.get(s, is(s))
		if ok != (i%2 == 1) || (ok && l.idx != uint32(i)) {
			t.Fatalf("id %d: %v %v", i, l, ok)
		}
	}
}

func BenchmarkSpanIndex(b *testing.B) {
	const n = 1 << 21
	ids := make([]SpanID, n)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range ids {
		binary.LittleEndian.PutUint64(ids[i][:], rng.Uint64()|1)
	}
	// Tags of random ids rarely collide; the benchmark takes every match.
	yes := func(loc) bool { return true }
	b.Run("index", func(b *testing.B) {
		c0 := cpuNow()
		for b.Loop() {
			x := newSpanIndex()
			for i, s := range ids {
				x.set(s, loc{idx: uint32(i)}, yes)
				if i >= n/2 {
					x.del(ids[i-n/2], yes)
				}
			}
		}
		b.ReportMetric(float64(cpuNow()-c0)/float64(b.N)/n, "cpu-ns/span")
	})
	b.Run("index-prefetch", func(b *testing.B) {
		c0 := cpuNow()
		for b.Loop() {
			x := newSpanIndex()
			for c := 0; c < n; c += 512 {
				x.prefetch(func(i int) SpanID { return ids[c+i] }, 512)
				if c >= n/2 {
					x.prefetch(func(i int) SpanID { return ids[c-n/2+i] }, 512)
				}
				for i := c; i < c+512; i++ {
					x.set(ids[i], loc{idx: uint32(i)}, yes)
					if i >= n/2 {
						x.del(ids[i-n/2], yes)
					}
				}
			}
		}
		b.ReportMetric(float64(cpuNow()-c0)/float64(b.N)/n, "cpu-ns/span")
	})
	b.Run("map", func(b *testing.B) {
		c0 := cpuNow()
		for b.Loop() {
			m := map[SpanID]loc{}
			for i, s := range ids {
				if _, ok := m[s]; !ok {
					m[s] = loc{idx: uint32(i)}
				}
				if i >= n/2 {
					if _, ok := m[ids[i-n/2]]; ok {
						delete(m, ids[i-n/2])
					}
				}
			}
		}
		b.ReportMetric(float64(cpuNow()-c0)/float64(b.N)/n, "cpu-ns/span")
	})
}
