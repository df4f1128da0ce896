package whatif

import (
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/rollouts"
	"sort"

	"github.com/nemo-gym/gymtrace/model"
)

// DiffSide is one rollout being compared: its spans (as captured, or as
// ExportSpans shapes them under a spec) with their trace and parent ids,
// and the snapshot resolving them. Two sides may come from different
// snapshots (two captures).
type DiffSide struct {
	Snap    *model.Snapshot
	Rollout string
	model.Batch
}

// RolloutSide returns the side of rollout r as captured.
func RolloutSide(snap *model.Snapshot, r *model.Rollout) DiffSide {
	var b model.Batch
	for _, f := range r.Fragments {
		for i := range f.Spans {
			b.Append(f.Trace(i), f.ParentID(i), f.Spans[i])
		}
	}
	return DiffSide{Snap: snap, Rollout: r.ID, Batch: b}
}

// SpecSide returns the side of rollout r as it would be under spec: the
// spans ExportSpans keeps, reparented as it does, without the run's
// gym.job span.
func (e *Engine) SpecSide(snap *model.Snapshot, r *model.Rollout, spec groups.Set) DiffSide {
	jobs := map[model.SpanID]bool{}
	for _, j := range snap.Jobs {
		jobs[j.Spans[0].SpanID] = true
	}
	var b model.Batch
	ex := e.ExportSpans(snap, []*model.Rollout{r}, &spec)
	for i, sp := range ex.Spans {
		if !jobs[sp.SpanID] {
			b.Append(ex.Traces[i], ex.ParentOf(i), sp)
		}
	}
	return DiffSide{Snap: snap, Rollout: r.ID, Batch: b}
}

// Diff is the comparison of two rollouts. Sides that share span ids (a
// rollout against itself, under two specs or read twice) are matched by
// span id: a span on both sides is never "only" on one, and one whose
// parent differs is listed in Moved. Otherwise spans are matched by tree
// position: the tops of both trees, then under each matched pair its
// children, pairing the i-th child of one (service, name, kind) on one side
// with the i-th on the other in start order; a CLIENT span is told apart by
// the span it calls. Durations never make spans
// differ, so every list is empty for a rollout against itself.
type Diff struct {
	A, B       DiffSummary
	Operations []OpDiff   // every (service, name) of either side, by service then name
	OnlyA      []DiffSpan // spans of A with no counterpart in B (a subtree is listed span by span)
	OnlyB      []DiffSpan
	// Moved lists the spans on both sides whose parent differs (a spec
	// that adds or drops a span between them), in A's depth-first order;
	// only when matched by span id.
	Moved   []DiffMove
	Changed []OpDiff   // operations whose span or error counts differ
	ErrorsA []DiffSpan // error spans of A whose counterpart in B is no error, or that have none
	ErrorsB []DiffSpan
	// First is where the trees first part, in depth-first start order; nil
	// when their structure is the same.
	First *Divergence
}

// DiffSummary describes one side.
type DiffSummary struct {
	Rollout    string
	Spans      int
	Errors     int
	Traces     int
	DurationNS int64 // first start to last end
}

// OpDiff is one operation side by side.
type OpDiff struct {
	Service, Name      string
	CountA, CountB     int
	ErrorsA, ErrorsB   int
	TotalNSA, TotalNSB int64
	MaxNSA, MaxNSB     int64
	SelfNSA, SelfNSB   int64 // total time not covered by children
}

// DiffSpan is one span named in a diff list.
type DiffSpan struct {
	Service, Name string
	SpanID        model.SpanID
	Path          []string // names from the tree's top down to the span's parent
	Status        model.StatusCode
	Message       string
}

// DiffMove is a span on both sides under a different parent: Path is its
// path in A, PathB in B.
type DiffMove struct {
	DiffSpan
	PathB []string
}

// Divergence is the first place the trees part: under Path, A has the
// span A (or nothing, "") where B has B.
type Divergence struct {
	Path []string
	A, B string
}

// node is one span in a diff tree.
type dnode struct {
	sp      *model.Span
	service string
	name    string
	key     string // name, with the callee for a CLIENT span
	kids    []*dnode
	parent  *dnode
	match   *dnode
	moved   bool // matched by span id under another parent
	path    []string
	self    int64
}

type sig struct {
	service, name string
	kind          model.Kind
}

// diffTree links spans by parent id; spans whose parent is not among them
// are tops. Children and tops are in start order.
func diffTree(s DiffSide) []*dnode {
	nodes := make([]*dnode, len(s.Spans))
	byID := make(map[model.SpanID]*dnode, len(s.Spans))
	for i := range s.Spans {
		sp := &s.Spans[i]
		n := &dnode{sp: sp, service: s.Snap.ServiceName(sp.Resource), name: rollouts.DisplayName(s.Snap.Interner(), sp)}
		nodes[i] = n
		byID[sp.SpanID] = n
	}
	var tops []*dnode
	for i, n := range nodes {
		up := s.ParentOf(i)
		if p := byID[up]; p != nil && !up.IsZero() && p != n {
			p.kids = append(p.kids, n)
			n.parent = p
		} else {
			tops = append(tops, n)
		}
	}
	byStart := func(ns []*dnode) {
		sort.SliceStable(ns, func(i, j int) bool { return ns[i].sp.Start < ns[j].sp.Start })
	}
	byStart(tops)
	for _, n := range nodes {
		byStart(n.kids)
		iv := make([]interval, len(n.kids))
		for i, k := range n.kids {
			iv[i] = interval{k.sp.Start, k.sp.End}
		}
		n.self = selfTime(n.sp, iv)
		n.key = n.name
		// Every call is a CLIENT span "HTTP POST": what it calls tells
		// calls apart, so a model call never pairs with a tool call.
		if n.sp.Kind == model.KindClient && len(n.kids) > 0 {
			n.key = n.name + " → " + n.kids[0].name
		}
	}
	return tops
}

// pair matches two sibling lists by signature and occurrence.
func pair(as, bs []*dnode) {
	next := map[sig][]*dnode{}
	for _, b := range bs {
		k := sig{b.service, b.key, b.sp.Kind}
		next[k] = append(next[k], b)
	}
	for _, a := range as {
		k := sig{a.service, a.key, a.sp.Kind}
		if q := next[k]; len(q) > 0 {
			a.match, q[0].match = q[0], a
			next[k] = q[1:]
			pair(a.kids, q[0].kids)
		}
	}
}

// pairByID matches spans with the same span id and reports whether any
// matched; a matched span whose parent is not its counterpart's is moved.
func pairByID(as, bs []*dnode) bool {
	byID := map[model.SpanID]*dnode{}
	var walk func(ns []*dnode, f func(*dnode))
	walk = func(ns []*dnode, f func(*dnode)) {
		for _, n := range ns {
			f(n)
			walk(n.kids, f)
		}
	}
	walk(bs, func(n *dnode) { byID[n.sp.SpanID] = n })
	found := false
	walk(as, func(n *dnode) {
		if m := byID[n.sp.SpanID]; m != nil && !n.sp.SpanID.IsZero() {
			n.match, m.match, found = m, n, true
		}
	})
	if !found {
		return false
	}
	moved := func(n *dnode) {
		if n.match != nil {
			same := n.parent == nil && n.match.parent == nil ||
				n.parent != nil && n.match.parent != nil && n.parent.match == n.match.parent
			n.moved = !same
		}
	}
	walk(as, moved)
	walk(bs, moved)
	return true
}

// CompareRollouts compares rollout a with rollout b.
func CompareRollouts(a, b DiffSide) *Diff {
	ta, tb := diffTree(a), diffTree(b)
	if !pairByID(ta, tb) {
		pair(ta, tb)
	}
	d := &Diff{A: summarize(a), B: summarize(b)}
	ops := map[[2]string]*OpDiff{}
	op := func(n *dnode) *OpDiff {
		k := [2]string{n.service, n.name}
		o := ops[k]
		if o == nil {
			o = &OpDiff{Service: n.service, Name: n.name}
			ops[k] = o
		}
		return o
	}
	var walk func(ns []*dnode, path []string, sideA bool)
	walk = func(ns []*dnode, path []string, sideA bool) {
		for _, n := range ns {
			o, dur, isErr := op(n), n.sp.Duration(), n.sp.Status == model.StatusError
			n.path = path
			ds := DiffSpan{Service: n.service, Name: n.name, SpanID: n.sp.SpanID, Path: path, Status: n.sp.Status}
			if n.sp.Extra != nil {
				ds.Message = n.sp.Extra.StatusMessage
			}
			errDiff := isErr && (n.match == nil || n.match.sp.Status != model.StatusError)
			if sideA {
				o.CountA++
				o.TotalNSA += dur
				o.MaxNSA = max(o.MaxNSA, dur)
				o.SelfNSA += n.self
				if isErr {
					o.ErrorsA++
				}
				if n.match == nil {
					d.OnlyA = append(d.OnlyA, ds)
				}
				if errDiff {
					d.ErrorsA = append(d.ErrorsA, ds)
				}
			} else {
				o.CountB++
				o.TotalNSB += dur
				o.MaxNSB = max(o.MaxNSB, dur)
				o.SelfNSB += n.self
				if isErr {
					o.ErrorsB++
				}
				if n.match == nil {
					d.OnlyB = append(d.OnlyB, ds)
				}
				if errDiff {
					d.ErrorsB = append(d.ErrorsB, ds)
				}
			}
			walk(n.kids, append(path[:len(path):len(path)], n.name), sideA)
		}
	}
	walk(ta, []string{}, true)
	walk(tb, []string{}, false)
	var moves func(ns []*dnode)
	moves = func(ns []*dnode) {
		for _, n := range ns {
			if n.moved {
				ds := DiffSpan{Service: n.service, Name: n.name, SpanID: n.sp.SpanID, Path: n.path, Status: n.sp.Status}
				d.Moved = append(d.Moved, DiffMove{DiffSpan: ds, PathB: n.match.path})
			}
			moves(n.kids)
		}
	}
	moves(ta)
	for _, o := range ops {
		d.Operations = append(d.Operations, *o)
	}
	sort.Slice(d.Operations, func(i, j int) bool {
		x, y := d.Operations[i], d.Operations[j]
		if x.Service != y.Service {
			return x.Service < y.Service
		}
		return x.Name < y.Name
	})
	for _, o := range d.Operations {
		if o.CountA != o.CountB || o.ErrorsA != o.ErrorsB {
			d.Changed = append(d.Changed, o)
		}
	}
	d.First = firstDivergence(ta, tb, []string{})
	return d
}

// firstDivergence walks matched pairs depth first in A's start order and
// returns the first sibling list where either side has a span the other
// has not there: unmatched, or matched under another parent.
func firstDivergence(as, bs []*dnode, path []string) *Divergence {
	var ua, ub *dnode
	for _, a := range as {
		if a.match == nil || a.moved {
			ua = a
			break
		}
	}
	for _, b := range bs {
		if b.match == nil || b.moved {
			ub = b
			break
		}
	}
	if ua != nil || ub != nil {
		dv := &Divergence{Path: path}
		if ua != nil {
			dv.A = ua.key
		}
		if ub != nil {
			dv.B = ub.key
		}
		return dv
	}
	for _, a := range as {
		if dv := firstDivergence(a.kids, a.match.kids, append(path[:len(path):len(path)], a.name)); dv != nil {
			return dv
		}
	}
	return nil
}

func summarize(s DiffSide) DiffSummary {
	sum := DiffSummary{Rollout: s.Rollout, Spans: len(s.Spans)}
	traces := map[model.TraceID]bool{}
	start, end := int64(0), int64(0)
	for i := range s.Spans {
		sp := &s.Spans[i]
		traces[s.Traces[i]] = true
		if sp.Status == model.StatusError {
			sum.Errors++
		}
		if i == 0 || sp.Start < start {
			start = sp.Start
		}
		end = max(end, sp.End)
	}
	sum.Traces = len(traces)
	if end > start {
		sum.DurationNS = end - start
	}
	return sum
}
