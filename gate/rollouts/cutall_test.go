package rollouts

import (
	"reflect"
	"runtime"
	"testing"
	"unsafe"

	"github.com/nemo-gym/gymtrace/model"
)

// TestUnitInfoSize pins the cache's record of a one-unit fragment, most
// fragments: one 48-byte allocation, a size class.
func TestUnitInfoSize(t *testing.T) {
	if n := unsafe.Sizeof(unitInfo{}); n != 48 {
		t.Errorf("unitInfo is %d bytes, want 48", n)
	}
	if n := unsafe.Sizeof(gunit{}); n != 32 {
		t.Errorf("gunit is %d bytes, want 32: a structure lists one per unit", n)
	}
	if n := unsafe.Sizeof(unitMore{}); n > 96 {
		t.Errorf("unitMore is %d bytes, want at most 96 (a 96-byte allocation)", n)
	}
}

// TestCutAllMatchesSequential cuts a capture large enough for the
// two-core pass and checks its units and structure against the sequential
// pass's.
func TestCutAllMatchesSequential(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*fleet)
	}{
		{"joined", nil},
		{"cut to model", func(f *fleet) { f.Cut = func(_, callee string) bool { return callee == "model" } }},
		{"no server in resources", func(f *fleet) { f.NoServer = map[string]bool{"resources": true} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := gymCapture(t, 2*minParallelUnits, 2, 2, true, tc.mod)
			par := NewFinder()
			parSt := par.Structure(snap)
			prev := runtime.GOMAXPROCS(1)
			seq := NewFinder()
			seqSt := seq.Structure(snap)
			runtime.GOMAXPROCS(prev)
			if par.nunits != seq.nunits || par.nunits < minParallelUnits {
				t.Fatalf("units cached: %d on two cores, %d on one", par.nunits, seq.nunits)
			}
			for _, r := range snap.Rollouts {
				for _, f := range r.Fragments {
					if f.Slot == 0 || !reflect.DeepEqual(par.cachedUnits(f), seq.cachedUnits(f)) {
						t.Fatalf("fragment %x (slot %d) cut differently on two cores", f.Version, f.Slot)
					}
				}
			}
			if !reflect.DeepEqual(parSt.Rollouts, seqSt.Rollouts) || !reflect.DeepEqual(parSt.Run, seqSt.Run) ||
				!reflect.DeepEqual(parSt.Unattributed, seqSt.Unattributed) || !reflect.DeepEqual(parSt.Leaks, seqSt.Leaks) ||
				!reflect.DeepEqual(parSt.Suspect, seqSt.Suspect) || parSt.Attributed != seqSt.Attributed {
				t.Fatalf("structure differs: %d rollouts %d attributed on two cores, %d %d on one",
					len(parSt.Rollouts), parSt.Attributed, len(seqSt.Rollouts), seqSt.Attributed)
			}
		})
	}
}

// TestCachedRollSize pins the record a structure keeps for each rollout
// between structures: 32 bytes, a size class.
func TestCachedRollSize(t *testing.T) {
	if n := unsafe.Sizeof(cachedRoll{}); n != 32 {
		t.Errorf("cachedRoll is %d bytes, want 32", n)
	}
}

// TestRolloutWithOneFragmentSize: a rollout of one fragment, most of them,
// is one 112-byte allocation with its array.
func TestRolloutWithOneFragmentSize(t *testing.T) {
	if n := unsafe.Sizeof(model.Rollout{}) + unsafe.Sizeof([1]*model.Fragment{}); n != 112 {
		t.Errorf("a Rollout with a one-fragment array is %d bytes, want 112", n)
	}
}
