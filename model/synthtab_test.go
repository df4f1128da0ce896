package model

import (
	"math/rand/v2"
	"testing"
)

// The table agrees with a Go map through random puts and deletions of keys
// drawn from a small space (so deletions of present keys are frequent and
// runs wrap past the end), growing and shrinking.
func TestSynthTableAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var tab synthTable
	tab.seed = 77
	ref := map[synthKey]*roll{}
	key := func() synthKey {
		k := rng.Uint64N(3000)
		return synthKey{t: [4]byte{byte(k), byte(k >> 8)}, s: numID(k % 7)}
	}
	for step := 0; step < 200_000; step++ {
		k := key()
		switch op := rng.IntN(10); {
		case op < 5 || step < 20_000 && op < 8:
			r := &roll{}
			tab.put(k, r)
			ref[k] = r
		case op < 9:
			tab.del(k)
			delete(ref, k)
		default:
			if got := tab.get(k); got != ref[k] {
				t.Fatalf("step %d: get(%v) = %p, want %p", step, k, got, ref[k])
			}
		}
		if tab.Len() != len(ref) {
			t.Fatalf("step %d: Len %d, want %d", step, tab.Len(), len(ref))
		}
	}
	for k, r := range ref {
		if tab.get(k) != r {
			t.Fatalf("get(%v) lost", k)
		}
		tab.del(k)
	}
	if tab.Len() != 0 || len(tab.slots) > 64 {
		t.Fatalf("Len %d and %d slots after deleting all", tab.Len(), len(tab.slots))
	}
}
