package whatif

import (
	"github.com/nemo-gym/gymtrace/gate/groups"
	"slices"
	"time"

	"github.com/nemo-gym/gymtrace/model"
)

// DefaultSpanCost is the CPU one enabled span costs the emitting process:
// the OpenTelemetry Python SDK 1.44.0 (the SDK Gym uses) starting and ending
// a CLIENT span with Gym's attributes under a parent, through the
// BatchSpanProcessor and the OTLP protobuf encoder, measured at 73 µs
// (median of 5 runs of 20000 spans; scripts/spancost.py, BENCHMARKS.md).
// A group that is off costs nothing: Gym then creates no span at all.
const DefaultSpanCost = 73 * time.Microsecond

// GroupWorth is what one group costs and what it buys over a capture, the
// two sides of switching it on. Costs are for the group's captured spans
// (run-level traffic included), whatever the spec; per rollout is over
// every rollout gate finds in the capture, per second over its wall time.
type GroupWorth struct {
	Group groups.Group

	Spans           int
	Bytes           int64 // encoded span sizes, without batch overhead
	SpansPerRollout float64
	BytesPerRollout float64
	CPUMSPerRollout float64 // Spans per rollout × the per-span cost
	SpansPerSecond  float64
	BytesPerSecond  float64
	CPUMSPerSecond  float64

	// WallShare is the mean over rollouts of the share of the rollout's
	// wall time (first start to last end) that the group's spans cover.
	WallShare float64
	// P50, P99 are the group's span durations (nearest rank), nanoseconds.
	P50, P99 int64
	// ErrorSpans counts the group's error spans; ErrorRollouts the
	// rollouts whose every error span is in this group, whose failure
	// nothing else would show.
	ErrorSpans, ErrorRollouts int
	// JoinedWith and JoinedWithout are the rollouts that join under the
	// spec with the group added and with it removed; KeepsJoins is true
	// when the group joins more rollouts than its absence does.
	JoinedWith, JoinedWithout int
	KeepsJoins                bool
}

// Worth returns the cost and worth of every group of the registry (then
// unclassified, when a span is) over snap, judged against spec: the spec
// with and without each group is previewed to tell whether it keeps joins.
// spanCost is the CPU per enabled span (DefaultSpanCost when zero).
func (e *Engine) Worth(snap *model.Snapshot, spec groups.Set, spanCost time.Duration) []GroupWorth {
	if spanCost <= 0 {
		spanCost = DefaultSpanCost
	}
	wb := e.worthBase(snap)
	out, rolls, n := slices.Clone(wb.out), wb.rolls, len(e.reg.Table())
	base := e.Preview(snap, spec)
	rollouts, wall := float64(base.Input.Rollouts), base.WallSeconds
	joined := map[groups.Set]int{spec: base.Result.RolloutsJoined}
	joinedUnder := func(s groups.Set) int {
		if v, ok := joined[s]; ok {
			return v
		}
		v := e.rolloutsJoined(snap, s)
		joined[s] = v
		return v
	}
	cost := float64(spanCost) / float64(time.Millisecond)
	for k := range out {
		w := &out[k]
		if rolls > 0 {
			w.WallShare /= float64(rolls)
		}
		if rollouts > 0 {
			w.SpansPerRollout = float64(w.Spans) / rollouts
			w.BytesPerRollout = float64(w.Bytes) / rollouts
			w.CPUMSPerRollout = w.SpansPerRollout * cost
		}
		if wall > 0 {
			w.SpansPerSecond = float64(w.Spans) / wall
			w.BytesPerSecond = float64(w.Bytes) / wall
			w.CPUMSPerSecond = w.SpansPerSecond * cost
		}
		if w.Group == groups.Unclassified || w.Group == groups.Ungated || w.Spans == 0 && !e.reg.Table()[k].EmitsSpans {
			// Always kept, or nothing to gate: with and without are one spec.
			w.JoinedWith, w.JoinedWithout = base.Result.RolloutsJoined, base.Result.RolloutsJoined
			continue
		}
		w.JoinedWith, w.JoinedWithout = joinedUnder(spec.With(w.Group)), joinedUnder(spec.Without(w.Group))
		w.KeepsJoins = w.JoinedWith > w.JoinedWithout
	}
	kept := out[:n]
	for _, w := range out[n:] {
		if w.Spans > 0 {
			kept = append(kept, w)
		}
	}
	out = kept
	return out
}

// worthCache is what Worth counts of a structure whatever the spec: each
// group's spans, bytes, errors, durations and summed wall shares (out,
// before the division by rolls, the rollouts with a wall time).
type worthCache struct {
	snap  *model.Snapshot
	out   []GroupWorth
	rolls int
}

// rolloutsJoined is Preview(snap, spec).Result.RolloutsJoined without the
// rest of the report: Worth asks it of two specs a group, and the report's
// lists, maps and percentiles were most of its time. It reads the caches
// the last Preview of snap filled, so it neither moves the engine's
// generation nor evicts.
func (e *Engine) rolloutsJoined(snap *model.Snapshot, spec groups.Set) int {
	st := e.Structure(snap)
	snap = st.Snap
	if n, ok := e.joinedOf(snap)[spec]; ok {
		return n
	}
	n := 0
	for _, t := range e.Traces(snap, spec, nil) {
		if t == 1 {
			n++
		}
	}
	e.joined[spec] = n
	return n
}

// joinedOf is the rollouts joined under each spec previewed of snap, a
// structure's snapshot: Worth asks two specs a group, and a preview of
// another spec, or the recommend search, asked most of them already.
func (e *Engine) joinedOf(snap *model.Snapshot) map[groups.Set]int {
	if e.joinedSnap != snap {
		e.joinedSnap, e.joined = snap, map[groups.Set]int{}
	}
	return e.joined
}
