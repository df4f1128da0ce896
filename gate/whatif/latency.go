package whatif

import (
	"cmp"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"slices"
	"sort"

	"github.com/nemo-gym/gymtrace/model"
)

// Latency is the duration profile of a selection of rollouts (one rollout,
// those a filter matches, or all), by operation: per service, per span name
// and per group, as captured.
type Latency struct {
	Rollouts  int
	Spans     int
	ByService []LatencyRow
	ByName    []LatencyRow
	ByGroup   []LatencyRow
}

// LatencyRow is one operation's spans: count, errors and durations in
// nanoseconds (percentiles by nearest rank). Self is the total time of the
// spans not covered by their children (Jaeger's self time).
type LatencyRow struct {
	Key                string       // service, span name, or group name
	Group              groups.Group // for ByGroup rows
	Count, Errors      int
	P50, P90, P99, Max int64
	Total, Self        int64
}

// latencyAcc gathers one row and its durations, in order.
type latencyAcc struct {
	row  LatencyRow
	durs []int64
	// gone and come are durations to take out and put in (latState.apply).
	gone, come []int64
}

// Latency profiles the given rollouts of snap. Rows are ordered by total
// time, longest first, then by key. The engine keeps the last profiles'
// sums and sorted durations by rollout version (latState): a profile of
// nearly the same rollouts, a snapshot later, reads only the rollouts
// that changed.
func (e *Engine) Latency(snap *model.Snapshot, rolls []*model.Rollout) *Latency {
	e.sync(snap)
	e.latSnap = snap
	st := e.latState(rolls)
	out := &Latency{Rollouts: len(rolls), Spans: st.spans}
	lists := [3]*[]LatencyRow{&out.ByService, &out.ByName, &out.ByGroup}
	for k, m := range st.keys {
		rows := make([]LatencyRow, 0, len(m))
		for _, acc := range m {
			d, row := acc.durs, acc.row
			row.P50, row.P90, row.P99, row.Max = percentile64(d, 50), percentile64(d, 90), percentile64(d, 99), d[len(d)-1]
			rows = append(rows, row)
		}
		sort.Slice(rows, func(i, j int) bool {
			if rows[i].Total != rows[j].Total {
				return rows[i].Total > rows[j].Total
			}
			return rows[i].Key < rows[j].Key
		})
		*lists[k] = rows
	}
	return out
}

// percentile64 returns the nearest-rank p-th percentile of sorted xs.
func percentile64(xs []int64, p int) int64 {
	if len(xs) == 0 {
		return 0
	}
	i := (p*len(xs)+99)/100 - 1
	return xs[max(0, min(i, len(xs)-1))]
}

// SelfTimes returns, for each span of f, its duration minus the time its
// children cover (clipped to the span, overlaps counted once), reusing buf.
func SelfTimes(f *model.Fragment, buf []int64) []int64 {
	n := len(f.Spans)
	kids := make([][]interval, n)
	for i := range f.Spans {
		if p := f.Spans[i].Parent; p >= 0 && int(p) < n {
			kids[p] = append(kids[p], interval{f.Spans[i].Start, f.Spans[i].End})
		}
	}
	self := slices.Grow(buf[:0], n)[:n]
	for i := range f.Spans {
		self[i] = selfTime(&f.Spans[i], kids[i])
	}
	return self
}

// interval is a child span's [start, end).
type interval struct{ a, b int64 }

// selfTime is sp's duration minus the union of its children's intervals
// clipped to it (children may overlap each other and outlast their parent).
// It sorts kids.
func selfTime(sp *model.Span, kids []interval) int64 {
	slices.SortFunc(kids, func(x, y interval) int { return cmp.Compare(x.a, y.a) })
	covered, curA, curB := int64(0), int64(0), int64(-1)
	for _, k := range kids {
		a, b := max(k.a, sp.Start), min(k.b, sp.End)
		if b <= a {
			continue
		}
		if a > curB {
			if curB > curA {
				covered += curB - curA
			}
			curA, curB = a, b
		} else if b > curB {
			curB = b
		}
	}
	if curB > curA {
		covered += curB - curA
	}
	return max(sp.Duration()-covered, 0)
}
