package gate

import (
	"reflect"
	"runtime"
	"testing"
	"time"
)

// TestCutAllMatchesSequential cuts a capture large enough for the
// two-core pass and checks its units, structure and check against the
// sequential pass's.
func TestCutAllMatchesSequential(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*fleet)
	}{
		{"joined", nil},
		{"cut to model", func(f *fleet) { f.cut = func(_, callee string) bool { return callee == "model" } }},
		{"no server in resources", func(f *fleet) { f.noServer = map[string]bool{"resources": true} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := gymCapture(t, 2*minParallelUnits, 2, 2, true, tc.mod)
			par := NewEngine(g1c())
			parRep := par.Check(snap, time.Unix(0, 0), 0)
			prev := runtime.GOMAXPROCS(1)
			seq := NewEngine(g1c())
			seqRep := seq.Check(snap, time.Unix(0, 0), 0)
			runtime.GOMAXPROCS(prev)
			if len(par.units) != len(seq.units) || len(par.units) < minParallelUnits {
				t.Fatalf("units cached: %d on two cores, %d on one", len(par.units), len(seq.units))
			}
			for v, fu := range seq.units {
				if !reflect.DeepEqual(par.units[v].units, fu.units) {
					t.Fatalf("fragment %x cut differently on two cores", v)
				}
			}
			if !reflect.DeepEqual(parRep.Hops, seqRep.Hops) || !reflect.DeepEqual(parRep.ByRollout, seqRep.ByRollout) ||
				parRep.Joined != seqRep.Joined || parRep.Split != seqRep.Split ||
				len(parRep.Structure.Snap.Rollouts) != len(seqRep.Structure.Snap.Rollouts) {
				t.Fatalf("check differs: %d joined %d split on two cores, %d %d on one", parRep.Joined, parRep.Split, seqRep.Joined, seqRep.Split)
			}
		})
	}
}
