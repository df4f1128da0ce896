package whatif

import (
	"encoding/binary"
	"runtime"
	"slices"
	"sync"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/model"
)

// Traces returns, for each rollout of snap's structure in order, the
// traces its kept spans form under spec: Preview(snap, spec).PerRollout's
// Traces (1 joined, more split, 0 nothing kept), without the rest of the
// report. Rollouts alike in what the count reads (their spans' groups,
// parents, kinds and processes as equal or not, the gym.job spans they
// hang under) share one count per masked spec, every spec asked kept: a
// search that asks a hundred specs simulates one rollout of each shape a
// masked spec, and a later snapshot only rollouts of a shape not seen.
// out is reused when large enough. Like rolloutsJoined, it neither moves
// the engine's generation nor evicts.
func (e *Engine) Traces(snap *model.Snapshot, spec groups.Set, out []int32) []int32 {
	st := e.Structure(snap)
	snap = st.Snap
	e.sync(snap)
	tc := &e.tr
	tc.of(e, snap)
	var todo []*traceShape
	for _, sh := range tc.list {
		mask := spec & sh.relevant
		n, ok := sh.traces[mask]
		if !ok {
			todo = append(todo, sh)
			continue
		}
		sh.cur = n
	}
	e.simShapes(snap, spec, todo)
	out = out[:0]
	for _, sh := range tc.shapeOf {
		out = append(out, sh.cur)
	}
	return out
}

// traceCache is the shapes Traces counted, and those of one structure.
type traceCache struct {
	in     *model.Interner
	shapes map[string]*traceShape
	snap   *model.Snapshot
	// shapeOf is the shape of each rollout of snap; list the distinct ones,
	// each with the rollout of snap that stands for it.
	shapeOf []*traceShape
	list    []*traceShape
	gen     uint64
	buf     []byte
	res     []model.ResourceID
	jobs    []model.SpanID
}

// traceShape is the traces of the rollouts of one shape under each masked
// spec asked.
type traceShape struct {
	relevant groups.Set
	traces   map[groups.Set]int32
	// rep is a rollout of the structure of this shape, with its state;
	// cur the count under the spec asked last.
	rep *model.Rollout
	rs  *rollState
	cur int32
	gen uint64
}

// of finds the shapes of snap's rollouts, once a structure.
func (tc *traceCache) of(e *Engine, snap *model.Snapshot) {
	if tc.in != snap.Interner() || tc.shapes == nil {
		*tc = traceCache{in: snap.Interner(), shapes: map[string]*traceShape{}}
	}
	if tc.snap == snap {
		return
	}
	tc.snap, tc.gen = snap, tc.gen+1
	tc.shapeOf, tc.list = tc.shapeOf[:0], tc.list[:0]
	for _, r := range snap.Rollouts {
		rs := e.rollState(r)
		if rs.shape == nil {
			key := tc.key(e, r, rs)
			sh := tc.shapes[string(key)]
			if sh == nil {
				sh = &traceShape{relevant: rs.relevant, traces: map[groups.Set]int32{}}
				tc.shapes[string(key)] = sh
			}
			rs.shape = sh
		}
		sh := rs.shape
		if sh.gen != tc.gen {
			sh.gen, sh.rep, sh.rs = tc.gen, r, rs
			tc.list = append(tc.list, sh)
		}
		tc.shapeOf = append(tc.shapeOf, sh)
	}
	if len(tc.shapes) > 2*len(tc.list)+256 {
		for k, sh := range tc.shapes {
			if sh.gen != tc.gen {
				delete(tc.shapes, k)
			}
		}
	}
}

// key is what simulate reads of r to count its traces, in bytes: per
// fragment the gym.job span it hangs under (its group and process), per
// span its group, parent, kind, carried flag and process. Processes and
// job spans are numbered in order of appearance, since simulate only
// tells them apart.
func (tc *traceCache) key(e *Engine, r *model.Rollout, rs *rollState) []byte {
	b := tc.buf[:0]
	tc.res, tc.jobs = tc.res[:0], tc.jobs[:0]
	res := func(id model.ResourceID) uint64 { return numberIn(&tc.res, id) }
	job := func(id model.SpanID) uint64 { return numberIn(&tc.jobs, id) }
	for fIdx, f := range r.Fragments {
		fi := rs.frags[fIdx]
		b = binary.AppendUvarint(b, uint64(len(f.Spans)))
		if j, ok := e.jobs[f.Job()]; ok && !f.Job().IsZero() {
			b = append(b, 1, byte(j.group))
			b = binary.AppendUvarint(b, job(f.Job()))
			b = binary.AppendUvarint(b, res(j.res))
		} else {
			b = append(b, 0)
		}
		for i := range f.Spans {
			sp := &f.Spans[i]
			p := int64(sp.Parent)
			if i == 0 || p < 0 || p >= int64(i) {
				p = -1
			}
			carried := byte(0)
			if sp.Flags()&model.FlagCarried != 0 {
				carried = 1
			}
			b = append(b, byte(fi.groups[i]), byte(sp.Kind), carried)
			b = binary.AppendVarint(b, p)
			b = binary.AppendUvarint(b, res(sp.Resource))
		}
	}
	tc.buf = b
	return b
}

// simShapes counts the traces of each shape of todo under spec, from its
// rollout, on two cores when there are many (as sims does).
func (e *Engine) simShapes(snap *model.Snapshot, spec groups.Set, todo []*traceShape) {
	run := func(sc *scratch, shapes []*traceShape) {
		for _, sh := range shapes {
			s := &rollSim{mask: spec & sh.relevant}
			e.simulate(sc, snap, sh.rep, sh.rs, spec, s, nil)
			sh.cur = int32(s.res.Traces)
		}
	}
	if len(todo) < minParallelSims || runtime.GOMAXPROCS(0) < 2 {
		run(&e.sc, todo)
	} else {
		half := len(todo) / 2
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			run(&scratch{}, todo[half:])
		}()
		run(&e.sc, todo[:half])
		wg.Wait()
	}
	for _, sh := range todo {
		sh.traces[spec&sh.relevant] = sh.cur
	}
}

// numberIn numbers x by its first appearance in *seen, adding it when new;
// the lists are a rollout's few processes and job spans.
func numberIn[T comparable](seen *[]T, x T) uint64 {
	if i := slices.Index(*seen, x); i >= 0 {
		return uint64(i)
	}
	*seen = append(*seen, x)
	return uint64(len(*seen) - 1)
}
