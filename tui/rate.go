package tui

import "time"

// rateWindow is the span of the live spans/s figure. Exporters batch for
// about five seconds: a window that long holds at least one batch while
// spans flow, so the figure never reads 0 in a frame where spans came, and
// falls to 0 once they have stopped for that long.
const rateWindow = 5 * time.Second

// rateMeter measures spans accepted per second over the last rateWindow,
// from samples of the accepted count: one per snapshot and one per clock
// tick, so the figure moves with each batch and decays when none comes.
type rateMeter struct {
	samples []rateSample // in time order; the first at or before the window's start
}

type rateSample struct {
	at time.Time
	n  int64
}

// add records n spans accepted in all by at. A sample older than the last
// (clocks of snapshot and tick differ slightly) is taken as of the last.
func (r *rateMeter) add(at time.Time, n int64) {
	if k := len(r.samples); k > 0 && at.Before(r.samples[k-1].at) {
		at = r.samples[k-1].at
	}
	r.samples = append(r.samples, rateSample{at, n})
	// Keep one sample at or before the window's start as the base.
	from := at.Add(-rateWindow)
	i := 0
	for i+1 < len(r.samples) && !r.samples[i+1].at.After(from) {
		i++
	}
	r.samples = r.samples[i:]
}

// rate is the spans per second over the window (or over what has been
// seen of it, at least a second, so a first batch is not read as a burst
// of thousands a second).
func (r *rateMeter) rate() float64 {
	if len(r.samples) < 2 {
		return 0
	}
	base, last := r.samples[0], r.samples[len(r.samples)-1]
	from := last.at.Add(-rateWindow)
	dt := last.at.Sub(base.at)
	if base.at.Before(from) {
		dt = rateWindow // the base stands for the window's start
	}
	if dt < time.Second {
		dt = time.Second
	}
	return float64(last.n-base.n) / dt.Seconds()
}
