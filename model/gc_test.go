package model

import (
	"runtime/debug"
	"testing"
)

// gcPercent returns the current GOGC setting.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func TestGCTuner(t *testing.T) {
	orig := gcPercent()
	defer debug.SetGCPercent(orig)
	debug.SetGCPercent(80) // what the process ran with before the store
	g := &gcTuner{}
	steps := []struct {
		name string
		live uint64
		want int
	}{
		{"small heap keeps the default target", 10 << 20, fullPercent},
		{"large heap gets the lean target", 200 << 20, leanPercent},
		{"still large", 500 << 20, leanPercent},
		{"shrunk again", 1 << 20, fullPercent},
		{"large again", leanAbove, leanPercent},
	}
	for _, st := range steps {
		g.apply(st.live)
		if got := gcPercent(); got != st.want {
			t.Fatalf("%s: live %d MB gives GOGC=%d, want %d", st.name, st.live>>20, got, st.want)
		}
	}
	g.restore()
	if got := gcPercent(); got != 80 {
		t.Fatalf("after restore GOGC=%d, want the 80 in force before", got)
	}
}

// TestGCTunerTight: an analysis beside a large store gets the tight target
// while it holds it, a small store keeps the default, and a store that
// has closed leaves the setting alone.
func TestGCTunerTight(t *testing.T) {
	orig := gcPercent()
	defer debug.SetGCPercent(orig)
	debug.SetGCPercent(80)
	g := &gcTuner{}
	for _, st := range []struct {
		name  string
		live  uint64
		tight int
		want  int
	}{
		{"small heap, held", 10 << 20, 1, fullPercent},
		{"large heap, held", 200 << 20, 0, tightPercent},
		{"held twice", 200 << 20, 1, tightPercent},
		{"one released", 200 << 20, -1, tightPercent},
		{"both released", 200 << 20, -1, leanPercent},
	} {
		g.apply(st.live)
		if st.tight != 0 {
			g.tighten(st.tight)
		}
		if got := gcPercent(); got != st.want {
			t.Fatalf("%s: GOGC=%d, want %d", st.name, got, st.want)
		}
	}
	g.restore()
	g.tighten(1)
	if got := gcPercent(); got != 80 {
		t.Fatalf("a hold after the store closed set GOGC=%d, want the 80 in force before", got)
	}
}

// memLimit returns the current soft memory limit.
func memLimit() int64 { return debug.SetMemoryLimit(-1) }

// TestGCTunerHold: a hold caps the memory at what the process holds from
// the system when the first holder comes, the last release puts back the
// limit in force before, and a store that has closed leaves it alone.
func TestGCTunerHold(t *testing.T) {
	orig := memLimit()
	defer debug.SetMemoryLimit(orig)
	const before = 1 << 40
	debug.SetMemoryLimit(before)
	g := &gcTuner{}
	// The footprint moves on its own (other tests allocate, the scavenger
	// returns pages), so the cap is judged against it read on both sides.
	fp0 := footprint()
	g.hold(1)
	capped := memLimit()
	fp1 := footprint()
	lo, hi := min(fp0, fp1), max(fp0, fp1)
	if capped == before || capped > hi+hi/4 || capped < lo/2 {
		t.Fatalf("held: limit %d, want the footprint (%d before, %d after)", capped, fp0, fp1)
	}
	g.hold(1)
	if got := memLimit(); got != capped {
		t.Fatalf("held twice: limit %d, want the first holder's %d", got, capped)
	}
	g.hold(-1)
	if got := memLimit(); got != capped {
		t.Fatalf("one of two released: limit %d, want %d", got, capped)
	}
	g.hold(-1)
	if got := memLimit(); got != before {
		t.Fatalf("both released: limit %d, want the %d in force before", got, before)
	}
	g.hold(1)
	g.restore()
	if got := memLimit(); got != before {
		t.Fatalf("closed while held: limit %d, want %d", got, before)
	}
	g.hold(1)
	if got := memLimit(); got != before {
		t.Fatalf("a hold after the store closed set the limit to %d, want %d", got, before)
	}
}

func TestGCTunerDefersToEnvironment(t *testing.T) {
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, "50")
			if g := newGCTuner(); g != nil {
				t.Fatalf("with %s set the store must leave the collector alone", env)
			}
		})
	}
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	if newGCTuner() == nil {
		t.Fatal("without GOGC or GOMEMLIMIT the tuner must run")
	}
}
