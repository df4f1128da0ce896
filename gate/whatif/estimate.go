package whatif

import (
	"math"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/model"
)

// costTable is what a spec's spans and bytes are made of: Preview keeps
// a span when the spec keeps its group, so its spans, bytes and spans
// per process are sums over the groups kept of sums counted once per
// snapshot.
type costTable struct {
	snap *model.Snapshot // the structure's, whose spans it counts
	wall float64         // Report.WallSeconds
	// Spans and bytes per group: of the rollouts, run-level traffic and
	// unattributed pieces (kept by groups.Kept), and of the gym.job spans
	// (kept when the spec has their group, as Preview keeps them).
	spans, jobSpans [64]int
	bytes, jobBytes [64]int64
	// Spans per process and group, the same two ways, for the batch
	// overhead.
	perRes, jobRes map[model.ResourceID]*[64]int
}

// costs returns the cost table of snap's structure, counted once.
func (e *Engine) costs(snap *model.Snapshot) *costTable {
	st := e.Structure(snap)
	snap = st.Snap
	if e.cost != nil && e.cost.snap == snap {
		return e.cost
	}
	e.sync(snap)
	t := &costTable{snap: snap, perRes: map[model.ResourceID]*[64]int{}, jobRes: map[model.ResourceID]*[64]int{}}
	at := func(m map[model.ResourceID]*[64]int, r model.ResourceID) *[64]int {
		x := m[r]
		if x == nil {
			x = new([64]int)
			m[r] = x
		}
		return x
	}
	start, end := int64(math.MaxInt64), int64(math.MinInt64)
	for _, j := range snap.Jobs {
		sp := &j.Spans[0]
		start, end = min(start, sp.Start), max(end, sp.End)
		g := e.jobs[sp.SpanID].group
		t.jobSpans[g]++
		t.jobBytes[g] += int64(wireSize(sp))
		at(t.jobRes, sp.Resource)[g]++
	}
	count := func(r *model.Rollout) {
		for _, f := range r.Fragments {
			fi := e.fragInfo(f)
			for i := range f.Spans {
				sp, g := &f.Spans[i], fi.groups[i]
				t.spans[g]++
				t.bytes[g] += int64(wireSize(sp))
				at(t.perRes, sp.Resource)[g]++
			}
		}
	}
	for _, r := range snap.Rollouts {
		if r.Spans > 0 {
			start, end = min(start, r.Start), max(end, r.End)
		}
		count(r)
	}
	st.ForOthers(func(r *model.Rollout) {
		start, end = min(start, r.Start), max(end, r.End)
		count(r)
	})
	if end > start {
		t.wall = float64(end-start) / 1e9
	}
	e.cost = t
	return t
}

// Estimate is the part of Preview(snap, spec) a budget judges, without
// simulating a rollout: Input, WallSeconds, PerGroup and Result's Spans
// and Bytes, equal to Preview's (TestEstimateIsPreview); nothing else of
// the report is set. Budget.Judge reads no more.
func (e *Engine) Estimate(snap *model.Snapshot, spec groups.Set) *Report {
	t := e.costs(snap)
	rep := &Report{Spec: spec, Structure: e.Structure(snap), WallSeconds: t.wall,
		Input: InputSummary{Spans: t.snap.Stats.Stored, Rollouts: len(t.snap.Rollouts), Traces: t.snap.Stats.Traces}}
	for g := range e.reg.Table() {
		if t.spans[g]+t.jobSpans[g] > 0 {
			rep.Input.Captured = rep.Input.Captured.With(groups.Group(g))
		}
	}
	rep.Input.Unclassified = t.spans[groups.Unclassified] + t.jobSpans[groups.Unclassified]
	rep.PerGroup = make([]GroupCount, 0, len(e.reg.Table())+2)
	for g := range e.reg.Table() {
		gc := GroupCount{Group: groups.Group(g), Captured: t.spans[g] + t.jobSpans[g]}
		if spec.Has(gc.Group) {
			gc.Kept = gc.Captured
		}
		rep.PerGroup = append(rep.PerGroup, gc)
	}
	if n := t.spans[groups.Ungated] + t.jobSpans[groups.Ungated]; n > 0 {
		rep.PerGroup = append(rep.PerGroup, GroupCount{Group: groups.Ungated, Captured: n, Kept: n})
	}
	rep.PerGroup = append(rep.PerGroup, GroupCount{Group: groups.Unclassified, Captured: rep.Input.Unclassified, Kept: rep.Input.Unclassified})
	perRes := map[model.ResourceID]int{}
	for g := range t.spans {
		if groups.Kept(groups.Group(g), spec) {
			rep.Result.Spans += t.spans[g]
			rep.Result.Bytes += t.bytes[g]
		}
		if spec.Has(groups.Group(g)) {
			rep.Result.Spans += t.jobSpans[g]
			rep.Result.Bytes += t.jobBytes[g]
		}
	}
	for _, m := range []struct {
		by   map[model.ResourceID]*[64]int
		kept func(groups.Group) bool
	}{
		{t.perRes, func(g groups.Group) bool { return groups.Kept(g, spec) }},
		{t.jobRes, spec.Has},
	} {
		for r, n := range m.by {
			for g, c := range n {
				if c > 0 && m.kept(groups.Group(g)) {
					perRes[r] += c
				}
			}
		}
	}
	// The batch overhead, as Preview counts it.
	for id, n := range perRes {
		batches := (n + batchSpans - 1) / batchSpans
		if w := int(math.Ceil(rep.WallSeconds / batchSeconds)); w > batches {
			batches = min(w, n)
		}
		rep.Result.Bytes += int64(batches * (e.resourceSize(t.snap, id) + scopeOverhead))
	}
	return rep
}
