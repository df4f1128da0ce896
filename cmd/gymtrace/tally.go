package main

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

// tallier counts a store's rollouts by gate's one rule for the headless
// faces (status line, JSON summary), as the TUI and check count them. The
// live count runs on a goroutine of its own, so neither the status line nor
// a stop ever waits for it, and beside a flood it takes little of the
// cores: after a check that took d, the next starts no sooner than 30d
// after it. The check's own time is not all it costs: its garbage makes
// the collector scan the whole store more often, and with a wait of 10d
// ingest of orphan batches still took a quarter more CPU a span; with 30d
// it is within the noise (BENCHMARKS.md). While a check runs the store's
// collector target is tight (model.Store.TightGC): at 1M spans of orphan
// batches that took the peak down ~10 B a span. Once nothing arrived for a
// tick the check runs at once, under a cap on the process's memory
// (model.Store.HoldFootprint): a burst is counted a second or two after
// its end, not up to 30d later, in the room its ingest left.
type tallier struct {
	reg   *groups.Registry
	share int // liveShare, or what a test sets
	cur   atomic.Pointer[whatif.Tally]
}

// liveShare is how many times its own cost the live check waits between runs.
const liveShare = 30

func newTallier(reg *groups.Registry) *tallier {
	if reg == nil {
		reg = groups.Default()
	}
	return &tallier{reg: reg, share: liveShare}
}

// watch keeps the live tally of st's newest snapshot, checked about once a
// second, until ctx ends or stop is called: rollouts still waiting for
// their root are in flight, fresh ones pending, and the run ends once quiet.
func (t *tallier) watch(ctx context.Context, st *model.Store) (stop func()) {
	ctx, stop = context.WithCancel(ctx)
	eng := whatif.NewEngine(t.reg) // the watcher's own: an engine is not shared
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		var (
			seq, ticked uint64 // the snapshot last checked, and the one at the last tick
			at          time.Time
			cost        time.Duration
			last        *whatif.Tally
		)
		for {
			snap, now := st.Snapshot(), time.Now()
			// New spans are checked when the pace allows, or at once when
			// nothing arrived since the last tick: there is no ingest then
			// to leave the cores to. A run's end, and rollouts pending in
			// their grace window (not those in flight: only new spans
			// change them), need a check of the same store again, at the
			// pace.
			quiet := last != nil && snap.Seq == ticked
			ticked = snap.Seq
			paced := last == nil || now.Sub(at) >= time.Duration(t.share)*cost
			again := last != nil && (last.Job == whatif.JobRunning || last.Pending > last.InFlight)
			if snap.Seq != seq && (quiet || paced) || last == nil || again && paced {
				untight := st.TightGC() // its working set goes at once, not on top of the peak
				uncap := func() {}
				if quiet {
					uncap = st.HoldFootprint()
				}
				tally := eng.Tally(snap, now, whatif.LiveGrace, whatif.JobQuiet)
				uncap()
				untight()
				seq, at, cost, last = snap.Seq, now, time.Since(now), &tally
				t.cur.Store(last)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return stop
}

// live is the newest live tally (zero before the first check is done).
func (t *tallier) live() whatif.Tally {
	if p := t.cur.Load(); p != nil {
		return *p
	}
	return whatif.Tally{}
}

// final is the tally once the receivers stopped: every rollout judged, as
// `check` judges the record.
func (t *tallier) final(snap *model.Snapshot) whatif.Tally {
	now := time.Now()
	return whatif.NewEngine(t.reg).Tally(snap, now, 0, 0)
}
