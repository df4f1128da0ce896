package whatif

import (
	"slices"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/model"
)

// worthState is what worthBase counted of the last structure, by piece
// (rollout, run-level traffic, unattributed fragment) and gym.job span:
// the next structure takes out the pieces that left or changed and puts
// in those new, so its figures are those counted from nothing
// (TestWorthGrownIsFresh).
type worthState struct {
	in     *model.Interner
	pieces map[string]worthPiece
	jobs   map[model.SpanID]worthJob
	slots  []worthSlot
	gen    uint64
	// The structure's gym.job spans by id; scratch for a piece's covers
	// and error groups.
	jobSpans  map[model.SpanID]*model.Span
	cover     [][]interval
	errGroups []int
}

// worthSlot is one group's sums, durations sorted, and durations queued
// to take out and put in.
type worthSlot struct {
	spans, errs int
	bytes       int64
	durs        []int64
	gone, come  []int64
}

// worthPiece is a piece counted: the rollout it was, its groups' shares of
// its wall time and the one group of all its errors (-1: none or several).
type worthPiece struct {
	r      *model.Rollout
	gen    uint64
	shares []slotShare
	errs   int32
	wall   bool
}

type slotShare struct {
	k     int32
	share float64
}

// worthJob is a gym.job span counted.
type worthJob struct {
	slot  int32
	err   bool
	dur   int64
	bytes int64
	gen   uint64
}

// worthBase returns the part of Worth no spec changes over snap's
// structure, counted once, from the last structure's counts.
func (e *Engine) worthBase(snap *model.Snapshot) *worthCache {
	if st := e.Structure(snap); e.worth != nil && e.worth.snap == st.Snap {
		return e.worth
	}
	pieces := e.Pieces(snap)
	nRolls := len(e.Structure(snap).Rollouts)
	e.sync(snap)
	n := len(e.reg.Table())
	ws := e.ws
	if ws == nil || ws.in != e.in || len(ws.slots) != n+2 {
		ws = &worthState{in: e.in, pieces: map[string]worthPiece{}, jobs: map[model.SpanID]worthJob{},
			slots: make([]worthSlot, n+2), cover: make([][]interval, n+2)}
		e.ws = ws
	}
	ws.gen++
	jobs := make(map[model.SpanID]*model.Span, len(snap.Jobs))
	for _, j := range snap.Jobs {
		sp := &j.Spans[0]
		jobs[sp.SpanID] = sp
		if x, ok := ws.jobs[sp.SpanID]; ok {
			x.gen = ws.gen
			ws.jobs[sp.SpanID] = x
			continue
		}
		x := worthJob{slot: int32(e.worthSlot(e.jobs[sp.SpanID].group)), err: sp.Status == model.StatusError,
			dur: sp.Duration(), bytes: int64(wireSize(sp)), gen: ws.gen}
		ws.jobs[sp.SpanID] = x
		ws.countJob(x, 1)
	}
	for id, x := range ws.jobs {
		if x.gen != ws.gen {
			ws.countJob(x, -1)
			delete(ws.jobs, id)
		}
	}
	ws.jobSpans = jobs
	twice := false
	for _, r := range pieces {
		x, ok := ws.pieces[r.ID]
		if ok && x.gen == ws.gen {
			// A piece twice (never in a structure): counted twice, as
			// from nothing, and the counts not kept.
			twice = true
		} else if ok && x.r.Version == r.Version {
			x.gen = ws.gen
			ws.pieces[r.ID] = x
			continue
		} else if ok {
			e.countPiece(ws, x.r, -1)
		}
		ws.pieces[r.ID] = e.countPiece(ws, r, 1)
	}
	if twice {
		e.ws = nil
	}
	ws.jobSpans = nil
	for id, x := range ws.pieces {
		if x.gen != ws.gen {
			e.countPiece(ws, x.r, -1)
			delete(ws.pieces, id)
		}
	}
	out := make([]GroupWorth, n+2)
	for i := range out {
		out[i].Group = groups.Group(i)
	}
	out[n].Group, out[n+1].Group = groups.Unclassified, groups.Ungated
	for k := range ws.slots {
		sl := &ws.slots[k]
		if len(sl.gone) > 0 || len(sl.come) > 0 {
			sl.durs = mergeDurs(sl.durs, sl.gone, sl.come)
			sl.gone, sl.come = nil, nil // the first load's are all durations: not kept
		}
		w := &out[k]
		w.Spans, w.Bytes, w.ErrorSpans = sl.spans, sl.bytes, sl.errs
		if d := sl.durs; len(d) > 0 {
			w.P50, w.P99 = percentile64(d, 50), percentile64(d, 99)
		}
	}
	// Wall shares and error rollouts are the rollouts', summed in their
	// order.
	rolls := 0
	for _, r := range pieces[:nRolls] {
		x := ws.pieces[r.ID]
		if x.errs >= 0 {
			out[x.errs].ErrorRollouts++
		}
		if !x.wall {
			continue
		}
		rolls++
		for _, s := range x.shares {
			out[s.k].WallShare += s.share
		}
	}
	e.worth = &worthCache{snap: e.Structure(snap).Snap, out: out, rolls: rolls}
	return e.worth
}

// worthSlot is g's index in Worth's rows: the registry's groups, then
// unclassified and ungated.
func (e *Engine) worthSlot(g groups.Group) int {
	n := len(e.reg.Table())
	switch g {
	case groups.Unclassified:
		return n
	case groups.Ungated:
		return n + 1
	}
	return int(g)
}

func (ws *worthState) countJob(x worthJob, sign int) {
	sl := &ws.slots[x.slot]
	sl.spans += sign
	sl.bytes += int64(sign) * x.bytes
	if x.err {
		sl.errs += sign
	}
	if sign > 0 {
		sl.come = append(sl.come, x.dur)
	} else {
		sl.gone = append(sl.gone, x.dur)
	}
}

// countPiece adds r's spans to ws's sums (sign 1) or takes them out (-1),
// and, adding, measures what its groups cover of its wall time.
func (e *Engine) countPiece(ws *worthState, r *model.Rollout, sign int) worthPiece {
	for i := range ws.cover {
		ws.cover[i] = ws.cover[i][:0]
	}
	ws.errGroups = ws.errGroups[:0]
	for _, f := range r.Fragments {
		fi := e.fragInfo(f)
		if j := ws.jobSpans[f.Job()]; sign > 0 && j != nil && !f.Job().IsZero() {
			k := e.worthSlot(e.jobs[f.Job()].group)
			ws.cover[k] = append(ws.cover[k], interval{j.Start, j.End})
		}
		for i := range f.Spans {
			sp := &f.Spans[i]
			k := e.worthSlot(fi.groups[i])
			sl := &ws.slots[k]
			sl.spans += sign
			sl.bytes += int64(sign) * int64(wireSize(sp))
			err := sp.Status == model.StatusError
			if err {
				sl.errs += sign
			}
			if sign > 0 {
				sl.come = append(sl.come, sp.Duration())
				ws.cover[k] = append(ws.cover[k], interval{sp.Start, sp.End})
				if err && !slices.Contains(ws.errGroups, k) {
					ws.errGroups = append(ws.errGroups, k)
				}
			} else {
				sl.gone = append(sl.gone, sp.Duration())
			}
		}
	}
	x := worthPiece{r: r, gen: ws.gen, errs: -1}
	if sign < 0 {
		return x
	}
	if len(ws.errGroups) == 1 {
		x.errs = int32(ws.errGroups[0])
	}
	if r.End > r.Start {
		x.wall = true
		whole := model.Span{Start: r.Start, End: r.End}
		for k := range ws.cover {
			if len(ws.cover[k]) > 0 {
				x.shares = append(x.shares, slotShare{k: int32(k), share: float64(r.End-r.Start-selfTime(&whole, ws.cover[k])) / float64(r.End-r.Start)})
			}
		}
	}
	return x
}
