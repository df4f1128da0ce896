package model

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
)

// The collector's target while the store is small and once it is large.
// GOGC=100 lets the heap reach twice the live data before a collection; a
// store of a million spans (~200 MB live) would then peak near 400 MB.
// Above leanAbove the target drops to leanPercent: the heap peaks 25%
// above the live data, for some more collector work, while small stores
// keep the default. 15% cost ingest of orphan batches a tenth more CPU a
// span than 25% for 2-3 B a span less at 1M spans (BENCHMARKS.md).
const (
	leanAbove   = 64 << 20
	leanPercent = 25
	fullPercent = 100
)

// gcTuner applies Options.LeanGC. Writer goroutine only.
type gcTuner struct {
	cur    int // percent last set, 0 before the first update
	before int // percent to restore on Close
	sample []metrics.Sample
}

// newGCTuner returns nil when the user chose GOGC or GOMEMLIMIT: their
// setting wins.
func newGCTuner() *gcTuner {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return nil
	}
	return &gcTuner{sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
}

// update reads the live heap (as of the last collection) and sets the
// target for it.
func (g *gcTuner) update() {
	metrics.Read(g.sample)
	if g.sample[0].Value.Kind() == metrics.KindUint64 {
		g.apply(g.sample[0].Value.Uint64())
	}
}

func (g *gcTuner) apply(live uint64) {
	want := fullPercent
	if live >= leanAbove {
		want = leanPercent
	}
	if want != g.cur {
		prev := debug.SetGCPercent(want)
		if g.cur == 0 {
			g.before = prev
		}
		g.cur = want
	}
}

// restore puts back the target that was in force before the store.
func (g *gcTuner) restore() {
	if g.cur != 0 {
		debug.SetGCPercent(g.before)
		g.cur = 0
	}
}
