package model

import (
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// The collector's target while the store is small and once it is large.
// GOGC=100 lets the heap reach twice the live data before a collection; a
// store of a million spans (~200 MB live) would then peak near 400 MB.
// Above leanAbove the target drops to leanPercent: the heap peaks 25%
// above the live data, for some more collector work, while small stores
// keep the default. 15% cost ingest of orphan batches a tenth more CPU a
// span than 25% for 2-3 B a span less at 1M spans (BENCHMARKS.md).
// While an analysis of the whole store runs beside it (Store.TightGC),
// the target is tightPercent: that analysis's working set is garbage
// within a second, and at 25% it would sit on top of the store's peak
// until the next collection; its runs are brief and paced, so ingest
// pays little for the tighter target.
const (
	leanAbove    = 64 << 20
	leanPercent  = 25
	tightPercent = 10
	fullPercent  = 100
)

// gcTuner applies Options.LeanGC. update and restore are the writer
// goroutine's; tighten may come from any goroutine.
type gcTuner struct {
	mu     sync.Mutex
	cur    int // percent last set, 0 before the first update
	before int // percent to restore on Close
	live   uint64
	tight  int // holders of TightGC
	// held counts the holders of HoldFootprint; limit is the memory limit
	// in force before the first of them.
	held   int
	limit  int64
	done   bool
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
	g.mu.Lock()
	defer g.mu.Unlock()
	g.live = live
	g.set()
}

// set applies the target for g.live and g.tight. g.mu held.
func (g *gcTuner) set() {
	if g.done {
		return
	}
	want := fullPercent
	if g.live >= leanAbove {
		want = leanPercent
		if g.tight > 0 {
			want = tightPercent
		}
	}
	if want != g.cur {
		prev := debug.SetGCPercent(want)
		if g.cur == 0 {
			g.before = prev
		}
		g.cur = want
	}
}

// tighten adds (+1) or takes (-1) a holder of the tight target.
func (g *gcTuner) tighten(d int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.tight += d
	g.set()
}

// hold adds a holder of the footprint cap: the first sets the runtime's
// soft memory limit at what the process holds from the system now (mapped
// and not returned), the last puts back the limit before. Under the cap the
// collector runs and returns free pages before the process takes more.
func (g *gcTuner) hold(d int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done {
		return
	}
	switch g.held += d; {
	case d > 0 && g.held == 1:
		g.limit = debug.SetMemoryLimit(footprint())
	case d < 0 && g.held == 0:
		debug.SetMemoryLimit(g.limit)
	}
}

// footprint is the memory the runtime holds from the system and has not
// returned to it: what the soft memory limit bounds.
func footprint() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return math.MaxInt64
	}
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}

// restore puts back the target that was in force before the store, for
// good: a late tighten leaves it alone.
func (g *gcTuner) restore() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.done = true
	if g.held > 0 {
		debug.SetMemoryLimit(g.limit)
		g.held = 0
	}
	if g.cur != 0 {
		debug.SetGCPercent(g.before)
		g.cur = 0
	}
}
