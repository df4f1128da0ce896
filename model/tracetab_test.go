package model

import (
	"math/rand/v2"
	"testing"
)

// The trace table agrees with a Go map through random additions and
// removals of traces drawn from a small space (removals of present traces
// are frequent and runs wrap past the end), growing and shrinking, with
// records reused as the writer reuses them.
func TestTraceTabAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var tab traceTab
	tab.seed = 91
	recs := []traceRec{{}} // record 0 is no trace
	var free []uint32
	ref := map[TraceID]uint32{}
	id := func() TraceID {
		k := rng.Uint64N(3000)
		// Ids that share most bytes: the hash must mix both halves.
		return TraceID{0: byte(k), 9: byte(k >> 8), 15: byte(k % 7)}
	}
	for step := 0; step < 200_000; step++ {
		tid := id()
		switch op := rng.IntN(10); {
		case op < 5 || step < 20_000 && op < 8:
			if ref[tid] != 0 {
				continue
			}
			var r uint32
			if k := len(free); k > 0 {
				r, free = free[k-1], free[:k-1]
			} else {
				r = uint32(len(recs))
				recs = append(recs, traceRec{})
			}
			recs[r] = traceRec{id: tid}
			tab.put(recs, tid, r)
			ref[tid] = r
		case op < 9:
			if r := ref[tid]; r != 0 {
				tab.del(recs, tid)
				recs[r] = traceRec{}
				free = append(free, r)
				delete(ref, tid)
			}
		default:
			if got := tab.get(recs, tid); got != ref[tid] {
				t.Fatalf("step %d: get(%v) = %d, want %d", step, tid, got, ref[tid])
			}
		}
		if tab.Len() != len(ref) {
			t.Fatalf("step %d: Len %d, want %d", step, tab.Len(), len(ref))
		}
	}
	for tid, r := range ref {
		if tab.get(recs, tid) != r {
			t.Fatalf("get(%v) lost", tid)
		}
		tab.del(recs, tid)
	}
	if tab.Len() != 0 || len(tab.slots) > 64 {
		t.Fatalf("Len %d and %d slots after deleting all", tab.Len(), len(tab.slots))
	}
}
