package model

// The writer's state and how it places spans: fragments, parents found
// in the batch or the index, merges, waiting lists and rollout assignment.

import (
	"encoding/hex"
	"slices"
	"strings"
	"unsafe"
)

// loc is where a span lives: fragment id and index within it.
type loc struct {
	frag uint32
	idx  uint32
}

// spanKey is a span's identity: span ids are unique only within a trace.
type spanKey struct {
	trace TraceID
	id    SpanID
}

// frag is the writer's mutable fragment. There is one per trace and
// process, so its fields are ordered by size: 144 bytes, not 176.
type frag struct {
	seq   uint64 // creation order
	trace TraceID
	spans []Span // append-only: published Fragments share the backing array
	job   SpanID
	rid   string
	synth string // synthetic rollout key, built once when first needed
	roll  *roll
	pub   *Fragment
	start int64
	end   int64
	id    uint32
	// top is the index of the top span. It is 0, and every span comes
	// after its parent, unless ordered is false: a big fragment whose
	// parent arrived later kept its array (see merge) and is put in order
	// when published.
	top int32
	// waitID is the id under which the fragment is listed in waiting (its
	// own, or that of a fragment merged into it), 0 when not listed.
	waitID  uint32
	rpos    int32 // index in roll.frags
	errors  int32
	ordered bool
	isJob   bool
	gone    bool // merged into another fragment or evicted
	dirty   bool
}

// roll is the writer's rollout; fields ordered by size: 96 bytes, not 112.
type roll struct {
	key       string
	seq       uint64
	frags     []*frag // nil where a fragment left; compacted when half are
	firstSeen int64   // store clock, unix nanoseconds
	lastSeen  int64
	version   uint64
	pub       *Rollout
	live      int32 // non-nil entries of frags
	// idx is the rollout's index in the last published Snapshot.Rollouts,
	// or -1 when it was not in it.
	idx       int32
	synthetic bool
	dirty     bool
	dead      bool
}

// writer is the state owned by the writer goroutine.
type writer struct {
	s *Store
	// locs holds every stored span by span id. An id already held by a
	// span of another trace goes to shared instead: ids collide rarely,
	// and keying every span by its trace too would cost 16 bytes each.
	locs   *spanIndex
	shared map[spanKey]loc
	// waiting lists the fragments whose top waits for a missing parent, by
	// the parent's span id (each fragment's trace tells which are meant).
	waiting map[SpanID][]uint32
	// frags maps fragment ids, and the waitIDs of fragments merged away,
	// to live fragments; nfrags counts the live ones.
	frags    map[uint32]*frag
	nfrags   int
	jobs     []*frag
	rolls    map[string]*roll
	order    []*roll // creation order; dead entries are skipped and compacted
	traces   map[TraceID]int32
	services []int64
	nextFrag uint32
	seq      uint64
	version  uint64
	pubSeq   uint64
	stored   int
	bytes    int64 // spanBytes of the stored spans
	dups     int64
	evSpans  int64
	evRolls  int64
	nowNS    int64
	// perTrace counts the current batch's spans per trace, so a fragment
	// born from the batch gets its final capacity at once instead of
	// doubling (which would leave a third of the memory unused).
	perTrace map[TraceID]int32
	// newTrace holds the batch's traces that had no span stored before it:
	// their spans can only duplicate or have parents within the batch, so
	// the lookups in maps holding every span are skipped.
	newTrace map[TraceID]bool
	// Scratch for parentsFirst, reused across batches: the batch index of
	// the first span of each span id (keyed by the id alone, the cheaper
	// hash; inBatchX holds the rare same id of another trace).
	inBatch                     map[SpanID]int32
	inBatchX                    map[spanKey]int32
	batch                       []Span
	depth, path, count, order32 []int32
	parentIdx                   []int32 // batch index of each span's parent, or -1
	// placedF and placedI record where each batch span went, so children
	// find parents of the same batch without a lookup.
	placedF []*frag
	placedI []uint32
	// takenScratch backs takeWaiting's result.
	takenScratch []*frag
	// settling holds the fragments published as changed last time; those
	// that did not change since get their arrays trimmed (see settle).
	settling []*frag
	slab     spanSlab

	jobName, ridKey Str
	pathKeys        []Str
	// noRID is the last attribute set found to name no rollout: spans of one
	// operation share one packed set, so most sets are read once in a row.
	noRID Attrs

	lastMetrics, lastLogs int64
	lastReqRefused        int64
	lastRecord            *RecordState
	lastProfiles          int64
	// lastMetricGen is the per-name metric generation metricsPub reflects;
	// metricsPub is shared by snapshots until the counts change.
	lastMetricGen uint64
	metricsPub    map[string]int64

	// Incremental publication: prev is the last published Rollouts slice;
	// changed and fresh list the rollouts marked dirty and created since.
	// Only when a rollout died or the order changed (restructure) does
	// publish walk every rollout.
	prev        []*Rollout
	changed     []*roll
	fresh       []*roll
	restructure bool
}

func (w *writer) init(s *Store) {
	w.s = s
	w.locs = newSpanIndex()
	w.shared = map[spanKey]loc{}
	w.waiting = map[SpanID][]uint32{}
	w.frags = map[uint32]*frag{}
	w.rolls = map[string]*roll{}
	w.traces = map[TraceID]int32{}
	w.perTrace = map[TraceID]int32{}
	w.newTrace = map[TraceID]bool{}
	w.inBatch = map[SpanID]int32{}
	w.inBatchX = map[spanKey]int32{}
	w.jobName = s.strs.Intern(JobSpanName)
	w.ridKey = s.strs.Intern(RolloutIDKey)
	for _, k := range rolloutPathKeys {
		w.pathKeys = append(w.pathKeys, s.strs.Intern(k))
	}
}

func (w *writer) apply(b Batch) {
	w.nowNS = w.s.opts.Now().UnixNano()
	clear(w.perTrace)
	clear(w.newTrace)
	for i := range b.Spans {
		t := b.Spans[i].TraceID
		if w.perTrace[t]++; w.perTrace[t] == 1 {
			if _, known := w.traces[t]; !known {
				w.newTrace[t] = true
			}
		}
	}
	order := w.parentsFirst(b.Spans)
	// Every span goes into the index: start its cache misses together.
	w.locs.prefetch(func(i int) SpanID { return b.Spans[i].SpanID }, len(b.Spans))
	w.placedF = slices.Grow(w.placedF[:0], len(b.Spans))[:len(b.Spans)]
	w.placedI = slices.Grow(w.placedI[:0], len(b.Spans))[:len(b.Spans)]
	clear(w.placedF)
	for _, i := range order {
		sp := &b.Spans[i]
		hint, hintIdx := w.parentAt(i)
		// A span of a new trace is the first of its id unless an earlier
		// batch span has the same id, and its parent is either in the
		// batch or not stored at all.
		fresh := false
		if w.newTrace[sp.TraceID] {
			first, _ := w.batchIndex(sp.TraceID, sp.SpanID)
			fresh = first == i
		}
		noParent := false
		if fresh {
			_, inBatch := w.batchIndex(sp.TraceID, sp.ParentID)
			noParent = !inBatch
		}
		w.placedF[i], w.placedI[i] = w.place(sp, fresh, noParent, hint, hintIdx)
	}
	clear(w.placedF) // no pointers kept past the batch
	w.batch = nil
	ms, mb := w.s.opts.MaxSpans, w.s.opts.MaxBytes
	if (ms > 0 && w.stored > ms) || (mb > 0 && w.bytes > mb) {
		// Evict a tenth more than needed, so eviction runs once per tenth
		// of the bound and not for every batch.
		ts, tb := w.stored, w.bytes
		if ms > 0 {
			ts = min(ts, ms-ms/10)
		}
		if mb > 0 {
			tb = min(tb, mb-mb/10)
		}
		w.evict(ts, tb)
	}
}

// batchIndex returns the batch index of the first span (trace, id) of the
// batch parentsFirst indexed last.
func (w *writer) batchIndex(trace TraceID, id SpanID) (int32, bool) {
	i, ok := w.inBatch[id]
	if !ok {
		return -1, false
	}
	if w.batch[i].TraceID == trace {
		return i, true
	}
	if len(w.inBatchX) == 0 {
		return -1, false
	}
	i, ok = w.inBatchX[spanKey{trace, id}]
	if !ok {
		return -1, false
	}
	return i, true
}

// parentsFirst returns the indices of spans in an order where a span whose
// parent is in the same batch comes after that parent, keeping batch order
// otherwise. SDKs export spans as they end, children before parents; placed
// in that order every child would start a fragment (and a rollout) of its
// own, only to be merged when the parent arrives.
func (w *writer) parentsFirst(spans []Span) []int32 {
	n := len(spans)
	clear(w.inBatch)
	clear(w.inBatchX)
	w.batch = spans
	for i := range spans {
		sp := &spans[i]
		first, seen := w.inBatch[sp.SpanID]
		switch {
		case !seen:
			w.inBatch[sp.SpanID] = int32(i)
		case spans[first].TraceID != sp.TraceID:
			k := spanKey{sp.TraceID, sp.SpanID}
			if _, dup := w.inBatchX[k]; !dup {
				w.inBatchX[k] = int32(i)
			}
		}
	}
	w.parentIdx = slices.Grow(w.parentIdx[:0], n)[:n]
	for i := range spans {
		w.parentIdx[i] = -1
		if sp := &spans[i]; !sp.ParentID.IsZero() {
			if p, ok := w.batchIndex(sp.TraceID, sp.ParentID); ok {
				w.parentIdx[i] = p
			}
		}
	}
	depth, start := w.depthStarts(w.parentIdx, -1)
	order := slices.Grow(w.order32[:0], n)[:n]
	for i, d := range depth {
		order[start[d]] = int32(i)
		start[d]++
	}
	w.order32 = order
	return order
}

// depthStarts gives each span, by its parent index (-1: none), its depth
// and, per depth, the first position of a stable counting sort by depth.
// A span without a parent is at depth 0; with top >= 0 only top is, and
// every other such span (a second root, a parent loop cut where it closes)
// goes below it at depth 1. Scratch is the writer's; the slices are valid
// until the next call.
func (w *writer) depthStarts(parent []int32, top int32) (depth, start []int32) {
	n := len(parent)
	depth = slices.Grow(w.depth[:0], n)[:n]
	for i := range depth {
		depth[i] = -1 // unknown
	}
	maxDepth := int32(0)
	for i := range parent {
		// Walk up to a span of known depth or one without a parent, then
		// number the path on the way down.
		path := w.path[:0]
		j := int32(i)
		for depth[j] == -1 {
			depth[j] = -2 // on the path
			path = append(path, j)
			p := parent[j]
			if p < 0 {
				break
			}
			j = p
		}
		base := depth[j] // known, or -2: j starts the path (a root, or a loop closing)
		if base < 0 {
			base = -1
			if top >= 0 && j != top {
				base = 0
			}
		}
		for k := len(path) - 1; k >= 0; k-- {
			base++
			depth[path[k]] = base
		}
		maxDepth = max(maxDepth, base)
		w.path = path
	}
	start = slices.Grow(w.count[:0], int(maxDepth)+2)[:maxDepth+2]
	clear(start)
	for _, d := range depth {
		start[d+1]++
	}
	for d := 1; d < len(start); d++ {
		start[d] += start[d-1]
	}
	w.depth, w.count = depth, start
	return depth, start
}

// parentAt returns where the parent of batch span i was placed, when it is
// in the batch and still where it was put: most parents arrive in the
// same batch as their children, and this saves two lookups in maps holding
// every span.
func (w *writer) parentAt(i int32) (*frag, uint32) {
	p := w.parentIdx[i]
	if p < 0 {
		return nil, 0
	}
	f, idx := w.placedF[p], w.placedI[p]
	if f == nil || f.gone {
		return nil, 0
	}
	return f, idx
}

// lookup finds a stored span of the given trace.
func (w *writer) lookup(trace TraceID, id SpanID) (*frag, uint32, bool) {
	if l, ok := w.locs.get(id, w.holds(id)); ok {
		if f := w.frags[l.frag]; f != nil && f.trace == trace {
			return f, l.idx, true
		}
	}
	if len(w.shared) > 0 {
		if l, ok := w.shared[spanKey{trace, id}]; ok {
			if f := w.frags[l.frag]; f != nil {
				return f, l.idx, true
			}
		}
	}
	return nil, 0, false
}

// setLoc records where the span (trace, id) now lives.
func (w *writer) setLoc(trace TraceID, id SpanID, l loc) {
	is := w.holds(id)
	if old, ok := w.locs.get(id, is); ok {
		if f := w.frags[old.frag]; f != nil && f.trace != trace {
			w.shared[spanKey{trace, id}] = l
			return
		}
	} else if len(w.shared) > 0 {
		delete(w.shared, spanKey{trace, id})
	}
	w.locs.set(id, l, is)
}

// moveLoc records that the span (trace, id) moved from one place to
// another within its fragment; the index entry is found by where it was,
// since the span there may already be another.
func (w *writer) moveLoc(trace TraceID, id SpanID, from, to loc) {
	at := func(l loc) bool {
		return l.idx == from.idx && (l.frag == from.frag || w.frags[l.frag] == w.frags[from.frag])
	}
	if _, ok := w.locs.get(id, at); ok {
		w.locs.set(id, to, at)
		return
	}
	w.shared[spanKey{trace, id}] = to
}

// holds returns a test of whether a location holds the span id: the
// index keeps a tag of the id, not the id.
func (w *writer) holds(id SpanID) func(loc) bool {
	return func(l loc) bool {
		f := w.frags[l.frag]
		return f != nil && int(l.idx) < len(f.spans) && f.spans[l.idx].SpanID == id
	}
}

// delLoc forgets the span (trace, id) of fragment f.
func (w *writer) delLoc(trace TraceID, id SpanID, f *frag) {
	mine := func(l loc) bool {
		return (l.frag == f.id || w.frags[l.frag] == f) && int(l.idx) < len(f.spans) && f.spans[l.idx].SpanID == id
	}
	if w.locs.del(id, mine) {
		return
	}
	if len(w.shared) > 0 {
		delete(w.shared, spanKey{trace, id})
	}
}

// place stores one span and returns where it went (nil for a duplicate).
// hint, when not nil, is where the span's parent was placed in this batch.
// fresh means the span cannot be a duplicate, and noParent that its parent
// is not stored: the caller knows from the batch, and the lookups are saved.
func (w *writer) place(sp *Span, fresh, noParent bool, hint *frag, hintIdx uint32) (*frag, uint32) {
	if !fresh {
		if _, _, dup := w.lookup(sp.TraceID, sp.SpanID); dup {
			w.dups++
			return nil, 0
		}
	}
	w.stored++
	w.bytes += spanBytes(sp)
	if int(sp.Resource) >= len(w.services) {
		w.services = append(w.services, make([]int64, int(sp.Resource)+1-len(w.services))...)
	}
	w.services[sp.Resource]++

	if sp.Name == w.jobName {
		f := w.newFrag(sp.TraceID, false)
		f.isJob = true
		w.appendSpan(f, *sp, -1)
		w.jobs = append(w.jobs, f)
		// Fragments waiting for this span hang under the job: they stay rollouts.
		for _, c := range w.takeWaiting(sp.TraceID, sp.SpanID) {
			c.job = sp.SpanID
			w.touch(c)
		}
		return f, 0
	}

	var f *frag
	parent := int32(-1)
	if !sp.ParentID.IsZero() {
		pf, pi, ok := hint, hintIdx, hint != nil
		if !ok && !noParent {
			pf, pi, ok = w.lookup(sp.TraceID, sp.ParentID)
		}
		if ok {
			if pf.isJob {
				f = w.newFrag(sp.TraceID, false)
				f.job = sp.ParentID
				parent = -1
			} else {
				f, parent = pf, int32(pi)
			}
		}
	}
	if f == nil {
		// A true root will gather the whole trace: size it from the batch.
		f = w.newFrag(sp.TraceID, sp.ParentID.IsZero())
		if !sp.ParentID.IsZero() {
			w.waiting[sp.ParentID] = append(w.waiting[sp.ParentID], f.id)
			f.waitID = f.id
		}
	}
	idx := w.appendSpan(f, *sp, parent)
	// Fragments that arrived before this span and wait for it join its fragment.
	for _, c := range w.takeWaiting(sp.TraceID, sp.SpanID) {
		if c != f { // a span that names itself as parent waits for nobody
			f, idx = w.merge(f, c, idx)
		}
	}
	w.assign(f)
	return f, idx
}

// takeWaiting removes and returns the fragments waiting for span id of
// trace.
func (w *writer) takeWaiting(trace TraceID, id SpanID) []*frag {
	ws, ok := w.waiting[id]
	if !ok {
		return nil
	}
	out := w.takenScratch[:0]
	rest := ws[:0] // those of other traces stay listed
	for _, wid := range ws {
		c := w.frags[wid]
		if c == nil || c.waitID != wid {
			continue // evicted
		}
		if c.trace != trace {
			rest = append(rest, wid)
			continue
		}
		c.waitID = 0
		if wid != c.id {
			delete(w.frags, wid) // the alias served only this list
		}
		out = append(out, c)
	}
	if len(rest) == 0 {
		delete(w.waiting, id)
	} else {
		w.waiting[id] = rest
	}
	w.takenScratch = out[:0]
	return out
}

// unwait takes f off the waiting list of its top's parent.
func (w *writer) unwait(f *frag) {
	if f.waitID == 0 {
		return
	}
	k := f.spans[f.top].ParentID
	if ws := remove(w.waiting[k], f.waitID); len(ws) == 0 {
		delete(w.waiting, k)
	} else {
		w.waiting[k] = ws
	}
	if f.waitID != f.id {
		delete(w.frags, f.waitID)
	}
	f.waitID = 0
}

func (w *writer) newFrag(trace TraceID, root bool) *frag {
	w.nextFrag++
	w.seq++
	f := &frag{id: w.nextFrag, seq: w.seq, trace: trace, ordered: true}
	if n := w.perTrace[trace]; root && n > 1 {
		f.spans = w.slab.make(int(n))
	}
	w.frags[f.id] = f
	w.nfrags++
	w.traces[trace]++
	return f
}

func (w *writer) appendSpan(f *frag, sp Span, parent int32) uint32 {
	sp.Parent = parent
	idx := uint32(len(f.spans))
	if idx == 0 || sp.Start < f.start {
		f.start = sp.Start
	}
	if sp.End > f.end {
		f.end = sp.End
	}
	if sp.Status == StatusError {
		f.errors++
	}
	f.spans = append(f.spans, sp)
	w.setLoc(sp.TraceID, sp.SpanID, loc{frag: f.id, idx: idx})
	if f.rid == "" && !f.isJob {
		f.rid = w.rolloutID(&sp)
	}
	w.touch(f)
	return idx
}

// swapMin is the size from which a fragment whose parent arrives keeps its
// array and takes the parent's spans in (see merge).
const swapMin = 32

// merge joins child, whose top span's parent is the span at index at of f,
// with f, and returns the fragment both are now and that parent's index in
// it. The smaller side's spans are copied: copying the child every time
// would make a chain arriving leaf first quadratic. When the child is the
// bigger one it keeps its array, and the fragment is out of order until
// published.
func (w *writer) merge(f, child *frag, at uint32) (*frag, uint32) {
	if len(child.spans) >= swapMin && len(child.spans) > len(f.spans) {
		off := w.moveSpans(child, f)
		child.spans[child.top].Parent = int32(off + at)
		child.top = int32(off) + f.top
		child.ordered = false
		child.job = f.job
		child.synth = f.synth
		if f.rid != "" {
			child.rid = f.rid
		}
		// f's place on the waiting list of its own parent passes to child.
		child.waitID = f.waitID
		if f.waitID != 0 {
			w.frags[f.waitID] = child
		}
		f.waitID = 0
		// So does f's place in its rollout and in the order of rollouts:
		// the result must not depend on which side kept its array.
		if child.roll != nil {
			w.detach(child.roll, child)
		}
		child.seq = f.seq
		if r := f.roll; r != nil {
			r.frags[f.rpos] = child
			child.roll, child.rpos = r, f.rpos
			f.roll = nil
		}
		w.retire(f)
		w.touch(child)
		return child, off + at
	}
	top := child.top
	off := w.moveSpans(f, child)
	f.spans[off+uint32(top)].Parent = int32(at)
	f.ordered = f.ordered && child.ordered
	if f.rid == "" {
		f.rid = child.rid
	}
	w.retire(child)
	w.touch(f)
	return f, at
}

// moveSpans appends src's spans to dst, re-pointing their parents and
// locations, and returns the index the first one got. The caller sets the
// parent of src's top. src keeps its array.
func (w *writer) moveSpans(dst, src *frag) uint32 {
	dst.spans = slices.Grow(dst.spans, len(src.spans))
	off := uint32(len(dst.spans))
	for i, sp := range src.spans {
		if sp.Parent >= 0 {
			sp.Parent += int32(off)
		}
		dst.spans = append(dst.spans, sp)
		w.setLoc(sp.TraceID, sp.SpanID, loc{frag: dst.id, idx: off + uint32(i)})
	}
	if src.start < dst.start {
		dst.start = src.start
	}
	if src.end > dst.end {
		dst.end = src.end
	}
	dst.errors += src.errors
	return off
}

// retire forgets a fragment merged into another (not its spans' locs,
// which point to the other).
func (w *writer) retire(c *frag) {
	c.gone = true
	if w.frags[c.id] == c {
		delete(w.frags, c.id)
	}
	w.nfrags--
	if w.traces[c.trace]--; w.traces[c.trace] <= 0 {
		delete(w.traces, c.trace)
	}
	if r := c.roll; r != nil {
		w.detach(r, c)
	}
}

// detach takes c out of r in constant time: its entry is cleared, and the
// list compacted once half of it is holes (a rollout whose children all
// arrived first may gather thousands of fragments before their parents).
func (w *writer) detach(r *roll, c *frag) {
	// In place: published rollouts have their own Fragments slices.
	if i := c.rpos; i >= 0 && int(i) < len(r.frags) && r.frags[i] == c {
		r.frags[i] = nil
		r.live--
	}
	c.roll = nil
	w.markDirty(r)
	if r.live == 0 {
		clear(r.frags)
		r.frags = r.frags[:0]
		r.dead = true
		w.restructure = true
		delete(w.rolls, r.key)
		return
	}
	if int(r.live) < len(r.frags)/2 {
		k := 0
		for _, f := range r.frags {
			if f != nil {
				f.rpos = int32(k)
				r.frags[k] = f
				k++
			}
		}
		clear(r.frags[k:])
		r.frags = r.frags[:k]
	}
}

func (w *writer) touch(f *frag) {
	f.dirty = true
	if f.roll != nil {
		w.markDirty(f.roll)
		f.roll.lastSeen = w.nowNS
	}
}

// markDirty records that r must be published anew.
func (w *writer) markDirty(r *roll) {
	if !r.dirty {
		r.dirty = true
		w.changed = append(w.changed, r)
	}
}

// assign puts f in the rollout its id names, moving it if the id changed.
func (w *writer) assign(f *frag) {
	key, synthetic := f.rid, false
	if key == "" {
		if f.synth == "" {
			f.synth = syntheticKey(f.trace, f.spans[f.top].SpanID)
		}
		key, synthetic = f.synth, true
	}
	if f.roll != nil && f.roll.key == key {
		return
	}
	if f.roll != nil {
		w.detach(f.roll, f)
	}
	r := w.rolls[key]
	if r == nil {
		r = &roll{key: key, synthetic: synthetic, seq: f.seq, firstSeen: w.nowNS, idx: -1}
		w.rolls[key] = r
		if n := len(w.order); n > 0 && w.order[n-1].seq > r.seq {
			w.restructure = true // an old fragment started a rollout: re-sort
		}
		w.order = append(w.order, r)
		w.fresh = append(w.fresh, r)
	}
	if f.seq < r.seq {
		r.seq = f.seq
		w.restructure = true
	}
	f.rpos = int32(len(r.frags))
	r.frags = append(r.frags, f)
	r.live++
	f.roll = r
	w.markDirty(r)
	r.lastSeen = w.nowNS
}

// syntheticKey names a rollout without an id by its trace and top span,
// built with one allocation (it is made for every such fragment).
func syntheticKey(t TraceID, top SpanID) string {
	var b [1 + 8 + 1 + 16]byte
	b[0] = '~'
	hex.Encode(b[1:9], t[:4])
	b[9] = '/'
	hex.Encode(b[10:], top[:])
	return string(b[:])
}

var ngRollout = "/ng-rollout/"

// rolloutID returns the rollout id a span names, or "".
func (w *writer) rolloutID(sp *Span) string {
	if sp.Attrs == "" || sameAttrs(sp.Attrs, w.noRID) {
		return ""
	}
	id := ""
	sp.Attrs.eachOf(w.s.strs, w.rolloutKey, func(k Str, v Value) bool {
		if k == w.ridKey {
			id = v.String()
			return false
		}
		for _, pk := range w.pathKeys {
			if k == pk {
				if i := strings.Index(v.Str, ngRollout); i >= 0 {
					rest := v.Str[i+len(ngRollout):]
					if j := strings.IndexAny(rest, "/?#"); j >= 0 {
						rest = rest[:j]
					}
					if rest != "" && id == "" {
						id = rest
					}
				}
			}
		}
		return true
	})
	if id == "" {
		w.noRID = sp.Attrs
		return ""
	}
	// The value may point into a span's packed attributes; the rollout key
	// must not keep those alive.
	return strings.Clone(id)
}

// sameAttrs reports whether a and b are one shared packed set (not merely
// equal: comparing bytes would cost what it saves).
func sameAttrs(a, b Attrs) bool {
	return len(a) == len(b) && unsafe.StringData(string(a)) == unsafe.StringData(string(b))
}

// rolloutKey reports whether attribute k can name a rollout.
func (w *writer) rolloutKey(k Str) bool {
	return k == w.ridKey || slices.Contains(w.pathKeys, k)
}
