package advise

import (
	"sort"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/rollouts"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

// Cache keeps what recommend searches of one engine measured (see
// (*Cache).Recommend). The zero Cache is empty and ready.
type Cache struct {
	eng *whatif.Engine
	// rolls is what each rollout's groups cover, by rollout id.
	rolls map[string]*rollKept
	// structs are the last structures searched, most recent first.
	structs []*structKept
	gen     uint64
}

// maxStructs is how many structures a Cache keeps the specs of: the
// capture and a few filters of it.
const maxStructs = 4

// structKept is what searches measured of one structure, whatever the
// budget: each spec's joins and worth, and the rollouts' covers.
type structKept struct {
	snap  *model.Snapshot // the structure's
	rolls []*rollKept     // per rollout, in the structure's order
	// base is, per rollout, whether it splits under every group, as
	// captured; set by the first spec whose joins are asked.
	base   []bool
	specs  map[groups.Set]*specKept
	traces []int32
}

// specKept is one spec's joins and worth over a structure.
type specKept struct {
	worth, joins             bool // which of the two are set
	share                    float64
	errs                     int
	joined, split, newSplits int
}

// rollKept is what one rollout version's spans cover, per group: the
// worth of a spec over the rollout reads the groups it keeps.
type rollKept struct {
	version    uint64
	start, end int64
	spans      int
	// present holds the rollout's groups but Unclassified and Ungated,
	// kept by every spec; a spec's result depends on its part of present.
	present groups.Set
	// cover is each group's spans as intervals within the rollout's wall
	// time, overlaps merged, errs their error spans; index 0 is the spans
	// every spec keeps, then one per group of groupOf.
	groupOf []groups.Group
	cover   [][][2]int64
	errs    []int
	memo    map[groups.Set]rollShare
	gen     uint64
}

// rollShare is one rollout's worth under a masked spec: the share of its
// wall time the kept spans cover (0 without a wall time) and their errors.
type rollShare struct {
	share float64
	errs  int
}

// structure returns what c keeps of st, counting the rollouts that are new
// or changed since c last saw them.
func (c *Cache) structure(eng *whatif.Engine, st *rollouts.Structure) *structKept {
	if c.eng != eng {
		*c = Cache{eng: eng, rolls: map[string]*rollKept{}}
	}
	for i, sk := range c.structs {
		if sk.snap == st.Snap {
			copy(c.structs[1:i+1], c.structs[:i])
			c.structs[0] = sk
			return sk
		}
	}
	c.gen++
	snap := st.Snap
	sk := &structKept{snap: snap, rolls: make([]*rollKept, len(snap.Rollouts)), specs: map[groups.Set]*specKept{}}
	for i, r := range snap.Rollouts {
		rk := c.rolls[r.ID]
		if rk == nil || rk.version != r.Version || rk.start != r.Start || rk.end != r.End || rk.spans != r.Spans {
			rk = newRollKept(eng.SpanGroups(snap, r), r)
			c.rolls[r.ID] = rk
		}
		rk.gen = c.gen
		sk.rolls[i] = rk
	}
	// Rollouts no recent structure holds go.
	if len(c.rolls) > 2*len(snap.Rollouts)+1024 {
		for id, rk := range c.rolls {
			if rk.gen+maxStructs <= c.gen {
				delete(c.rolls, id)
			}
		}
	}
	if len(c.structs) < maxStructs {
		c.structs = append(c.structs, nil)
	}
	copy(c.structs[1:], c.structs[:len(c.structs)-1])
	c.structs[0] = sk
	return sk
}

// newRollKept measures r, gs being its span groups per fragment.
func newRollKept(gs [][]groups.Group, r *model.Rollout) *rollKept {
	rk := &rollKept{version: r.Version, start: r.Start, end: r.End, spans: r.Spans,
		cover: [][][2]int64{nil}, errs: []int{0}, memo: map[groups.Set]rollShare{}}
	slot := func(g groups.Group) int {
		if g == groups.Unclassified || g == groups.Ungated {
			return 0
		}
		for i, h := range rk.groupOf {
			if h == g {
				return i + 1
			}
		}
		rk.groupOf = append(rk.groupOf, g)
		rk.present = rk.present.With(g)
		rk.cover, rk.errs = append(rk.cover, nil), append(rk.errs, 0)
		return len(rk.groupOf)
	}
	for fi, f := range r.Fragments {
		for i := range f.Spans {
			sp := &f.Spans[i]
			k := slot(gs[fi][i])
			if sp.Status == model.StatusError {
				rk.errs[k]++
			}
			if a, b := max(sp.Start, r.Start), min(sp.End, r.End); b > a {
				rk.cover[k] = append(rk.cover[k], [2]int64{a, b})
			}
		}
	}
	for k, ivs := range rk.cover {
		rk.cover[k] = merged(ivs)
	}
	return rk
}

// merged is ivs (each non-empty) in start order with overlaps merged:
// the same union, in fewer intervals.
func merged(ivs [][2]int64) [][2]int64 {
	sort.Slice(ivs, func(i, j int) bool { return ivs[i][0] < ivs[j][0] })
	out := ivs[:0]
	for _, iv := range ivs {
		if n := len(out); n > 0 && iv[0] <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], iv[1])
			continue
		}
		out = append(out, iv)
	}
	return out[:len(out):len(out)]
}

// kept is the rollout's worth under spec, the intervals merged in
// scratch (one for every rollout: a rollout keeps only its covers).
func (rk *rollKept) kept(spec groups.Set, scratch *[][2]int64) rollShare {
	mask := spec & rk.present
	if r, ok := rk.memo[mask]; ok {
		return r
	}
	ivs := append((*scratch)[:0], rk.cover[0]...)
	r := rollShare{errs: rk.errs[0]}
	for i, g := range rk.groupOf {
		if mask.Has(g) {
			ivs = append(ivs, rk.cover[i+1]...)
			r.errs += rk.errs[i+1]
		}
	}
	if rk.end > rk.start {
		r.share = float64(union(ivs)) / float64(rk.end-rk.start)
	}
	*scratch = ivs[:0]
	rk.memo[mask] = r
	return r
}

// spec returns the entry of set.
func (sk *structKept) spec(set groups.Set) *specKept {
	k := sk.specs[set]
	if k == nil {
		k = &specKept{}
		sk.specs[set] = k
	}
	return k
}

// worth is the mean over rollouts with a wall time of the share that
// set's spans cover, and the error spans set keeps.
func (sk *structKept) worth(set groups.Set) (float64, int) {
	k := sk.spec(set)
	if !k.worth {
		sk.worths([]groups.Set{set})
	}
	return k.share, k.errs
}

// worths measures the worth of each of sets not measured yet, in one pass
// over the rollouts: each rollout's covers are read for every spec at
// once. Each spec's shares are summed in the structure's rollout order.
func (sk *structKept) worths(sets []groups.Set) {
	var todo []*specKept
	var specs []groups.Set
	for _, set := range sets {
		if k := sk.spec(set); !k.worth {
			todo, specs = append(todo, k), append(specs, set)
		}
	}
	if len(todo) == 0 {
		return
	}
	n := 0
	var scratch [][2]int64
	for _, rk := range sk.rolls {
		wall := rk.end > rk.start
		if wall {
			n++
		}
		for j, k := range todo {
			r := rk.kept(specs[j], &scratch)
			k.errs += r.errs
			if wall {
				k.share += r.share
			}
		}
	}
	for _, k := range todo {
		if n > 0 {
			k.share /= float64(n)
		}
		k.worth = true
	}
}

// joins is set's rollouts joined and split, and those it splits that the
// capture joins, under every group.
func (sk *structKept) joins(eng *whatif.Engine, set groups.Set) *specKept {
	k := sk.spec(set)
	if k.joins {
		return k
	}
	if sk.base == nil {
		sk.base = make([]bool, len(sk.rolls))
		sk.traces = eng.Traces(sk.snap, eng.Registry().All(), sk.traces)
		for i, n := range sk.traces {
			sk.base[i] = n > 1
		}
	}
	sk.traces = eng.Traces(sk.snap, set, sk.traces)
	for i, n := range sk.traces {
		switch {
		case n == 1:
			k.joined++
		case n > 1:
			k.split++
			if !sk.base[i] {
				k.newSplits++
			}
		}
	}
	k.joins = true
	return k
}
