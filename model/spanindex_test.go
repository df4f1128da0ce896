package model

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/nemo-gym/gymtrace/internal/cputime"
)

// The index agrees with a Go map through random puts, replacements and
// deletions. Locations name a slot of a side table holding the id, as a
// fragment's span holds its id; ids are drawn from a small space so that
// replacements and deletions of present ids are frequent, and some are
// chosen to share a tag's line.
func TestSpanIndexAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := &spanIndex{}
	const seed = 12345
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
			x.set(spanTag(seed, s), l, is(s))
			if old, ok := ref[s]; ok {
				delete(held, old)
			}
			ref[s] = l
		case op < 9:
			got := x.del(spanTag(seed, s), is(s))
			if _, want := ref[s]; got != want {
				t.Fatalf("step %d: del(%v) = %v, want %v", step, s, got, want)
			}
			if old, ok := ref[s]; ok {
				delete(held, old)
			}
			delete(ref, s)
		default:
			got, ok := x.get(spanTag(seed, s), is(s))
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
		if got, ok := x.get(spanTag(seed, s), is(s)); !ok || got != want {
			t.Fatalf("get(%v) = %v,%v want %v", s, got, ok, want)
		}
	}
	for s := range ref {
		x.del(spanTag(seed, s), is(s))
	}
	if x.Len() != 0 || x.tags != nil {
		t.Fatalf("Len %d after deleting all, %d slots kept", x.Len(), len(x.tags))
	}
}

// Ids whose tags are equal are told apart by the location test, and runs
// that wrap past the end of the slots survive deletion.
func TestSpanIndexSameTagAndWrap(t *testing.T) {
	x := &spanIndex{}
	const seed = 7
	var ids []SpanID
	// Ids whose line is the last of the 64 slots that 40 entries take.
	for k := uint64(1); len(ids) < 40; k++ {
		var s SpanID
		binary.LittleEndian.PutUint64(s[:], k)
		if home(spanTag(seed, s), 64) == 64-idxLine {
			ids = append(ids, s)
		}
	}
	held := map[loc]SpanID{}
	is := func(id SpanID) func(loc) bool { return func(l loc) bool { return held[l] == id } }
	for i, s := range ids {
		l := loc{idx: uint32(i)}
		held[l] = s
		x.set(spanTag(seed, s), l, is(s))
	}
	if len(x.tags) != 64 {
		t.Fatalf("%d slots, want 64", len(x.tags))
	}
	// Every tag matches: only the location test tells them apart.
	same := func(SpanID) func(loc) bool { return func(loc) bool { return true } }
	if _, ok := x.get(spanTag(seed, ids[0]), same(ids[0])); !ok {
		t.Fatal("no entry at all")
	}
	for i := 0; i < len(ids); i += 2 {
		if !x.del(spanTag(seed, ids[i]), is(ids[i])) {
			t.Fatalf("del %d: not found", i)
		}
	}
	for i, s := range ids {
		l, ok := x.get(spanTag(seed, s), is(s))
		if ok != (i%2 == 1) || (ok && l.idx != uint32(i)) {
			t.Fatalf("id %d: %v %v", i, l, ok)
		}
	}
}

func BenchmarkSpanIndex(b *testing.B) {
	const n = 1 << 21
	const seed = 99
	tags := make([]uint32, n)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range tags {
		var s SpanID
		binary.LittleEndian.PutUint64(s[:], rng.Uint64()|1)
		tags[i] = spanTag(seed, s)
	}
	// Tags of random ids rarely collide; the benchmark takes every match.
	yes := func(loc) bool { return true }
	b.Run("index", func(b *testing.B) {
		c0 := cputime.Now()
		for b.Loop() {
			x := &spanIndex{}
			for i, tag := range tags {
				x.set(tag, loc{idx: uint32(i)}, yes)
				if i >= n/2 {
					x.del(tags[i-n/2], yes)
				}
			}
		}
		b.ReportMetric(float64(cputime.Now()-c0)/float64(b.N)/n, "cpu-ns/span")
	})
	b.Run("map", func(b *testing.B) {
		c0 := cputime.Now()
		for b.Loop() {
			m := map[uint32]loc{}
			for i, tag := range tags {
				if _, ok := m[tag]; !ok {
					m[tag] = loc{idx: uint32(i)}
				}
				if i >= n/2 {
					if _, ok := m[tags[i-n/2]]; ok {
						delete(m, tags[i-n/2])
					}
				}
			}
		}
		b.ReportMetric(float64(cputime.Now()-c0)/float64(b.N)/n, "cpu-ns/span")
	})
}
