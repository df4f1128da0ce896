package whatif

import (
	"testing"

	"github.com/nemo-gym/gymtrace/gate/rollouts"
	"github.com/nemo-gym/gymtrace/model"
)

// addJobTraces counts a trace for each kept job span with spans under it,
// but a caller's span of a run-level piece, whose trace the piece counted:
// its rollouts' spans add to that piece's trace.
func TestAddJobTraces(t *testing.T) {
	job, caller, other := model.SpanID{1}, model.SpanID{2}, model.SpanID{3}
	e := NewEngine(g1c())
	e.jobs = map[model.SpanID]jobInfo{job: {}, caller: {caller: true}}
	piece := &model.Fragment{Spans: []model.Span{{SpanID: other}, {SpanID: caller}}}
	st := &rollouts.Structure{Run: []rollouts.RunPiece{{Kind: rollouts.RunCaller, Frag: piece}, {Kind: rollouts.RunJob, Frag: &model.Fragment{}}}}
	cases := []struct {
		name            string
		jobSpans        map[model.SpanID]int
		traces, largest int
	}{
		{"job alone", map[model.SpanID]int{job: 7}, 1, 7},
		{"caller's rollouts join its piece", map[model.SpanID]int{caller: 9}, 0, 2 + 9},
		{"both", map[model.SpanID]int{job: 20, caller: 1}, 1, 20},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var res Result
			e.addJobTraces(st, &res, tc.jobSpans)
			if res.Traces != tc.traces || res.LargestTrace != tc.largest {
				t.Errorf("addJobTraces(%v) = %d traces, largest %d; want %d, %d", tc.jobSpans, res.Traces, res.LargestTrace, tc.traces, tc.largest)
			}
		})
	}
}

// addSizes reads the rollouts' kept spans, in any order, for the
// nearest-rank median and 99th percentile and the largest.
func TestAddSizes(t *testing.T) {
	cases := []struct {
		spans         []int
		p50, p99, max int
	}{
		{nil, 0, 0, 0},
		{[]int{4}, 4, 4, 4},
		{[]int{9, 1, 5, 3}, 3, 9, 9},
		{[]int{2, 2, 8, 2, 2, 2, 2, 2, 2, 2}, 2, 8, 8},
	}
	for _, tc := range cases {
		rep := &Report{}
		for _, n := range tc.spans {
			rep.PerRollout = append(rep.PerRollout, RolloutResult{Spans: n})
		}
		NewEngine(g1c()).addSizes(rep)
		if r := rep.Result; r.P50 != tc.p50 || r.P99 != tc.p99 || r.Max != tc.max {
			t.Errorf("addSizes(%v) = p50 %d p99 %d max %d, want %d %d %d", tc.spans, r.P50, r.P99, r.Max, tc.p50, tc.p99, tc.max)
		}
	}
}

// finish counts a rollout's traces, its own and each job span's with spans
// of it, and its largest own trace, which is never one that lives in
// another rollout's trace (carried over).
func TestSimWalkFinish(t *testing.T) {
	s := &rollSim{jobs: []jobCount{{spans: 4}, {spans: 0}}}
	w := simWalk{s: s, carriedComp: []bool{false, true}}
	sc := &scratch{sizes: []int{3, 10, 2}, carriedComps: 1}
	w.finish(sc, &rollState{rollClass: &rollClass{}}, nil)
	if s.maxComp != 3 || s.roots != 2 || s.res.Traces != 4 || s.res.Joined {
		t.Errorf("sizes %v, carried %v, jobs %v: largest %d, roots %d, traces %d, joined %v; want 3, 2, 4, false",
			sc.sizes, w.carriedComp, s.jobs, s.maxComp, s.roots, s.res.Traces, s.res.Joined)
	}
}
