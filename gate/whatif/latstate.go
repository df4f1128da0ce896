package whatif

import (
	"slices"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/rollouts"
	"github.com/nemo-gym/gymtrace/model"
)

// latState is a latency profile's sums and sorted durations per key, with
// the rollouts it counts by id: a later profile of the same rollouts but
// a few takes out those that left or changed and puts in those new, so
// its figures are those counted from nothing (TestLatencyKeptIsFresh).
type latState struct {
	in    *model.Interner
	rolls map[string]latRoll
	keys  [3]map[string]*latencyAcc
	spans int
	gen   uint64
	self  []int64
}

// latRoll is a rollout a profile counts, and the last profile that did.
type latRoll struct {
	r   *model.Rollout
	gen uint64
}

// maxLatStates is how many profiles the engine keeps: the capture's and
// a few filters'.
const maxLatStates = 3

// latState returns the profile of rolls, from the kept profile nearest to
// it, or counted from nothing when none is near.
func (e *Engine) latState(rolls []*model.Rollout) *latState {
	best, bestDiff := -1, len(rolls)/4+1
	for i, st := range e.lat {
		if st.in != e.in {
			continue
		}
		if d := st.diff(rolls, bestDiff); d < bestDiff {
			best, bestDiff = i, d
		}
	}
	var st *latState
	if best < 0 {
		st = newLatState(e.in, len(rolls))
		if len(e.lat) == maxLatStates {
			e.lat = e.lat[:maxLatStates-1]
		}
		e.lat = append([]*latState{st}, e.lat...)
	} else {
		st = e.lat[best]
		copy(e.lat[1:best+1], e.lat[:best])
		e.lat[0] = st
	}
	if !e.update(st, rolls) {
		// A rollout twice: counted twice, as from nothing, and not kept.
		e.lat = e.lat[1:]
		st = newLatState(e.in, 0)
		for _, r := range rolls {
			e.latCount(st, r, 1)
		}
		st.apply()
	}
	return st
}

func newLatState(in *model.Interner, n int) *latState {
	st := &latState{in: in, rolls: make(map[string]latRoll, n)}
	for k := range st.keys {
		st.keys[k] = map[string]*latencyAcc{}
	}
	return st
}

// diff counts the rollouts of rolls st does not count as they are, and
// those st counts that rolls lacks, stopping past limit.
func (st *latState) diff(rolls []*model.Rollout, limit int) int {
	d, same := 0, 0
	for _, r := range rolls {
		if x, ok := st.rolls[r.ID]; ok && x.r.Version == r.Version {
			same++
			continue
		}
		if d++; d >= limit {
			return d
		}
	}
	return d + len(st.rolls) - same
}

// update makes st the profile of rolls; false, st spoilt, when a
// rollout id is in rolls twice.
func (e *Engine) update(st *latState, rolls []*model.Rollout) bool {
	st.gen++
	for _, r := range rolls {
		if x, ok := st.rolls[r.ID]; ok && x.gen == st.gen {
			return false
		} else if ok && x.r.Version == r.Version {
			st.rolls[r.ID] = latRoll{r: x.r, gen: st.gen}
			continue
		} else if ok {
			e.latCount(st, x.r, -1)
		}
		st.rolls[r.ID] = latRoll{r: r, gen: st.gen}
		e.latCount(st, r, 1)
	}
	for id, x := range st.rolls {
		if x.gen != st.gen {
			e.latCount(st, x.r, -1)
			delete(st.rolls, id)
		}
	}
	st.apply()
	return true
}

// latCount adds r's spans to st's rows (sign 1) or takes them out (-1),
// their durations queued for apply.
func (e *Engine) latCount(st *latState, r *model.Rollout, sign int) {
	snap := e.latSnap
	for _, f := range r.Fragments {
		fi := e.fragInfo(f)
		st.self = SelfTimes(f, st.self)
		for i := range f.Spans {
			sp := &f.Spans[i]
			st.spans += sign
			g := fi.groups[i]
			st.add(0, snap.ServiceName(sp.Resource), 0, sp, st.self[i], sign)
			st.add(1, rollouts.DisplayName(snap.Interner(), sp), 0, sp, st.self[i], sign)
			st.add(2, e.reg.Name(g), g, sp, st.self[i], sign)
		}
	}
}

func (st *latState) add(k int, key string, g groups.Group, sp *model.Span, self int64, sign int) {
	acc := st.keys[k][key]
	if acc == nil {
		acc = &latencyAcc{row: LatencyRow{Key: key, Group: g}}
		st.keys[k][key] = acc
	}
	row, d := &acc.row, sp.Duration()
	row.Count += sign
	row.Total += int64(sign) * d
	row.Self += int64(sign) * self
	if sp.Status == model.StatusError {
		row.Errors += sign
	}
	if sign > 0 {
		acc.come = append(acc.come, d)
	} else {
		acc.gone = append(acc.gone, d)
	}
}

// apply merges each key's queued durations into its sorted ones, and
// drops the keys no span has any more.
func (st *latState) apply() {
	for _, m := range st.keys {
		for key, acc := range m {
			if acc.row.Count == 0 {
				delete(m, key)
				continue
			}
			if len(acc.gone) == 0 && len(acc.come) == 0 {
				continue
			}
			acc.durs = mergeDurs(acc.durs, acc.gone, acc.come)
			acc.gone, acc.come = nil, nil // the first load's are all durations: not kept
		}
	}
}

// mergeDurs is sorted with the durations of gone taken out (each one
// occurrence, all present) and those of come put in, sorted; gone and
// come are sorted in place.
func mergeDurs(sorted, gone, come []int64) []int64 {
	if len(sorted) == 0 && len(gone) == 0 {
		slices.Sort(come)
		return slices.Clone(come)
	}
	slices.Sort(gone)
	slices.Sort(come)
	out := make([]int64, 0, len(sorted)-len(gone)+len(come))
	i, j := 0, 0
	for _, d := range sorted {
		if i < len(gone) && gone[i] == d {
			i++
			continue
		}
		for j < len(come) && come[j] < d {
			out = append(out, come[j])
			j++
		}
		out = append(out, d)
	}
	return append(out, come[j:]...)
}
