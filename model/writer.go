package model

// The writer's state and how it places spans: fragments, parents found
// in the batch or the index, merges, waiting lists and rollout assignment.

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"slices"
	"unsafe"
)

// loc is where a span lives: fragment id and index within it.
type loc struct {
	frag uint32
	idx  uint32
}

// frag is the writer's mutable fragment. There is one per connected piece
// of a trace; fields are ordered by size.
type frag struct {
	seq   uint64 // creation order
	spans []Span // append-only: published Fragments share the backing array
	// up is the top span's parent id (spans hold none): zero for a root,
	// the id it waits for (link upWaits), or its gym.job span's (upJob).
	up    SpanID
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
	// waitPrev and waitNext link the fragments waiting for one parent id
	// (see waitList), in the order they began to wait.
	waitPrev, waitNext uint32
	// trec is the fragment's trace record; tPrev and tNext link the
	// fragments of the trace.
	trec, tPrev, tNext uint32
	rpos               int32 // index in the rollout's slots (roll.slots)
	errors             int32
	ordered            bool
	dirty              bool
	link               upLink // what up is to the store
	// named: the rollout id its spans name is its rollout's key (see rid).
	named bool
}

// upLink says what a fragment's up is to the store.
type upLink uint8

const (
	upNone  upLink = iota // a root, or a parent that waits for nobody
	upWaits               // listed in waiting under up
	upJob                 // up is a gym.job span: the fragment hangs under it
)

// waits reports whether f is listed as waiting for its top's parent.
func (f *frag) waits() bool { return f.link == upWaits }

// rid is the rollout id f's spans name, "" for none: a fragment's first
// id stays its id, and assign puts it in the rollout of that key.
func (f *frag) rid() string {
	if f.named && f.roll != nil {
		return f.roll.key()
	}
	return ""
}

// gone reports whether f was merged into another fragment or evicted.
func (w *writer) gone(f *frag) bool { return w.fragAt(f.id) != f }

// roll is the writer's rollout; fields ordered by size, 48 bytes. Most
// rollouts are one fragment: frags is that fragment (a *frag) or, when
// many is set, a *[]*frag of them all (see slots). One field for both,
// and Synthetic and waiting read from pub, keep the roll in a 48-byte
// allocation.
type roll struct {
	seq      uint64
	frags    unsafe.Pointer
	lastSeen int64 // store clock, unix nanoseconds
	// pub is the rollout as last published or, while draft is set, the
	// Rollout its first publication fills in, made with the roll. Either
	// holds what never changes: the key (ID), Synthetic and FirstSeen.
	pub *Rollout
	// pos is the rollout's place in the published list (see writer.pub),
	// or -1 when it is not in it.
	pos   int64
	live  int32 // non-nil entries of slots
	dirty bool
	dead  bool
	draft bool
	many  bool // frags is a *[]*frag
}

// key is the rollout's id, or its synthetic key as text.
func (r *roll) key() string { return r.pub.ID }

// synthetic reports whether the rollout's key is a synthetic one.
func (r *roll) synthetic() bool { return r.pub.Synthetic }

// waiting reports whether r is a trace's waiting rollout: the fragments
// without a rollout id whose top waits for a parent (see assign).
func (r *roll) waiting() bool { return r.pub.waiting }

// more returns the list of r's fragments when it has many, else nil.
func (r *roll) more() *[]*frag {
	if r.many {
		return (*[]*frag)(r.frags)
	}
	return nil
}

// slots returns r's fragments, nil where one left (compacted when half
// are); an element set through it is set in r.
func (r *roll) slots() []*frag {
	if r.many {
		return *(*[]*frag)(r.frags)
	}
	if r.frags != nil {
		// The one fragment, as a slice over the field that holds it.
		return (*[1]*frag)(unsafe.Pointer(&r.frags))[:]
	}
	return nil
}

// waitSlots is a waiting rollout's list of fragments (see roll.waiting)
// with when each got spans first and last: they are of many rollouts, and
// each is seen as its own. The list comes first, so that slots and more
// read it as they read the many form's.
type waitSlots struct {
	frags []*frag
	seen  []seenPair
}

// seenPair is when a fragment first and last got spans: milliseconds of
// the store clock after its waiting rollout's FirstSeen (49 days fit), 8
// bytes and not 16 for each of the many fragments such a rollout holds.
type seenPair struct{ first, last uint32 }

// seenMS is now as a seenPair time after base.
func seenMS(base, now int64) uint32 {
	return uint32(min(max((now-base)/1e6, 0), math.MaxUint32))
}

// at returns the pair as store clock times, unix nanoseconds.
func (s seenPair) at(base int64) (first, last int64) {
	return base + int64(s.first)*1e6, base + int64(s.last)*1e6
}

// waits returns r's list with seen times when r is a waiting rollout.
func (r *roll) waits() *waitSlots {
	if r.frags != nil && r.waiting() {
		return (*waitSlots)(r.frags)
	}
	return nil
}

// add appends f, seen now, to r's slots.
func (r *roll) add(f *frag, now int64) {
	switch {
	case r.waiting():
		ws := r.waits()
		if ws == nil {
			ws = &waitSlots{}
			r.frags, r.many = unsafe.Pointer(ws), true
		}
		f.rpos = int32(len(ws.frags))
		ws.frags = append(ws.frags, f)
		ms := seenMS(r.pub.FirstSeen, now)
		ws.seen = append(ws.seen, seenPair{ms, ms})
	case r.many:
		more := r.more()
		f.rpos = int32(len(*more))
		*more = append(*more, f)
	case r.frags == nil:
		f.rpos = 0
		r.frags = unsafe.Pointer(f)
	default:
		s := make([]*frag, 2, 4)
		s[0], s[1] = (*frag)(r.frags), f
		r.frags, r.many = unsafe.Pointer(&s), true
		f.rpos = 1
	}
}

// isJob reports whether f is a gym.job span's fragment: such a span is
// always the one span of its own fragment.
func (w *writer) isJob(f *frag) bool { return f.spans[0].Name == w.keys.job }

// waitList is the first and last fragment waiting for one parent span id;
// the fragments between are linked through waitNext.
type waitList struct{ head, tail uint32 }

// traceRec is what the writer keeps per trace id: its live fragments,
// how many of them wait for a parent, and the index of its spans once one
// had to be looked up.
type traceRec struct {
	id      TraceID // the trace: a stored span keeps none of its own
	idx     *spanIndex
	frags   int32
	waiting int32
	head    uint32 // a fragment of the trace; the others link from it
	// wgen numbers the trace's waiting rollout that takes new waiting
	// fragments (see waitKeyOf).
	wgen uint32
}

// writer is the state owned by the writer goroutine.
type writer struct {
	s *Store
	// seed keys the span indexes' hash (see spanTag).
	seed uint64
	// waiting lists the fragments whose top waits for a missing parent, by
	// the parent's span id (each fragment's trace tells which are meant).
	waiting map[SpanID]waitList
	// tab holds the live fragments by id (nil where none); ids of gone
	// fragments are reused from free, so the table stays as long as the
	// most fragments ever held at once.
	tab    []*frag
	free   []uint32
	nfrags int
	jobs   []*frag
	// rolls holds the rollouts by key: those named like synthetic keys
	// in synth by the parsed key (no string to make or hash), the rest
	// in rolls.
	rolls map[string]*roll
	synth synthTable
	order []*roll // creation order; dead entries are skipped and compacted
	// deadInOrder counts dead rollouts still in order; unsorted is set
	// when a rollout entered order out of seq order or its seq fell.
	deadInOrder int
	unsorted    bool
	// traces maps trace ids to records in recs (0: none); recFree holds
	// unused record numbers.
	traces   traceTab
	recs     []traceRec
	recFree  []uint32
	services []int64
	seq      uint64
	sink     uint64 // keeps apply's prefetching loads
	version  uint64
	pubSeq   uint64
	stored   int
	bytes    int64 // spanBytes of the stored spans
	dups     int64
	evSpans  int64
	evRolls  int64
	nowNS    int64
	keys     storeKeys
	// prep is the batch being applied; own is the writer's own, for
	// batches queued unprepared.
	prep *batchPrep
	own  *batchPrep
	ds   depthScratch
	// placedF and placedI record where each batch span went, so children
	// find parents of the same batch without a lookup.
	placedF []*frag
	placedI []uint32
	// takenScratch backs takeWaiting's result.
	takenScratch []*frag
	pos32        []int32
	// settling holds the fragments published as changed last time; those
	// that did not change since get their arrays trimmed (see settle).
	settling []*frag
	// slab holds small fragments' arrays, laid the spans of batches whose
	// fragments keep them as laid out (see apply).
	slab, laid spanSlab

	lastMetrics, lastLogs int64
	lastReqRefused        int64
	lastRecord            *RecordState
	lastProfiles          int64
	// lastAccepted is the accepted count the last snapshot shows: a
	// receiver counts a batch once the writer may have applied and
	// published it, so the count can change with nothing else.
	lastAccepted int64
	// lastMetricGen is the per-name metric generation metricsPub reflects;
	// metricsPub is shared by snapshots until the counts change.
	lastMetricGen uint64
	metricsPub    map[string]int64

	// Incremental publication: pub holds the published rollouts, pub[i]
	// at place pubAt+i, those from place base on in the last snapshot;
	// evicted counts the rollouts evicted from its front since.
	// changed and fresh list the rollouts marked dirty and created since.
	// Only when a rollout died in place or the order changed
	// (restructure) does publish walk every rollout.
	pub         []*Rollout
	pubAt, base int64
	evicted     int64
	changed     []*roll
	fresh       []*roll
	restructure bool
}

func (w *writer) init(s *Store) {
	w.s = s
	w.seed = rand.Uint64()
	w.waiting = map[SpanID]waitList{}
	w.tab = []*frag{nil} // id 0 is no fragment
	w.rolls = map[string]*roll{}
	w.synth.seed = rand.Uint64()
	w.traces.seed = rand.Uint64()
	w.recs = []traceRec{{}} // record 0 is no trace
	w.keys = s.keys
	w.own = &batchPrep{tr: map[TraceID]int32{}}
	w.slab = spanSlab{chunk: slabSpans, most: slabMaxCarve}
	w.laid = spanSlab{chunk: laidSpans, most: laidMaxCarve}
}

// traceID is the trace of f's spans.
func (w *writer) traceID(f *frag) TraceID { return w.recs[f.trec].id }

// fragAt returns the live fragment with id, or nil.
func (w *writer) fragAt(id uint32) *frag {
	if int(id) < len(w.tab) {
		return w.tab[id]
	}
	return nil
}

// dropFrag forgets f's id, for reuse, and takes it from its trace, which
// is forgotten with its last fragment.
func (w *writer) dropFrag(f *frag) {
	if w.tab[f.id] == f {
		w.tab[f.id] = nil
		w.free = append(w.free, f.id)
	}
	w.nfrags--
	tr := &w.recs[f.trec]
	if f.tPrev != 0 {
		w.tab[f.tPrev].tNext = f.tNext
	} else {
		tr.head = f.tNext
	}
	if f.tNext != 0 {
		w.tab[f.tNext].tPrev = f.tPrev
	}
	f.tPrev, f.tNext = 0, 0
	if tr.frags--; tr.frags <= 0 {
		w.traces.del(w.recs, tr.id)
		*tr = traceRec{}
		w.recFree = append(w.recFree, f.trec)
	}
}

// traceRecOf returns the record of trace, made if new.
func (w *writer) traceRecOf(trace TraceID) uint32 {
	if r := w.traces.get(w.recs, trace); r != 0 {
		return r
	}
	var r uint32
	if k := len(w.recFree); k > 0 {
		r = w.recFree[k-1]
		w.recFree = w.recFree[:k-1]
	} else {
		r = uint32(len(w.recs))
		w.recs = append(w.recs, traceRec{})
	}
	w.recs[r] = traceRec{id: trace}
	w.traces.put(w.recs, trace, r)
	return r
}

func (w *writer) apply(b Batch) {
	w.nowNS = w.s.opts.Now().UnixNano()
	p := b.prep
	if p == nil {
		p = w.own
		b.relayout(p.prepare(b.Spans, b.Traces, b.Parents, w.s.strs, &w.keys))
	}
	w.prep = p
	p.trec = grow32u(p.trec, len(p.traces))
	for t, id := range p.traces {
		r := w.traces.get(w.recs, id)
		p.trec[t] = r
		p.tNew[t] = r == 0
		p.tWait[t] = w.recs[r].waiting > 0
	}
	// A group of a trace the store has not seen is a fragment as it lies:
	// no span of it can be stored already, and its top's parent is not
	// stored (or is a gym.job span of the batch). When such groups make
	// most of the batch, fragments keep the batch's array as theirs;
	// otherwise they copy, so the array's other spans are not held.
	fast := 0
	if p.simple {
		for g := range p.groups {
			if gr := &p.groups[g]; !gr.job && p.tNew[p.tix[gr.start]] {
				fast += int(gr.n)
			}
		}
	}
	alias := 4*fast >= 3*len(b.Spans)
	if alias {
		// The fragments keep a copy carved from the writer's chunks, and
		// the laid-out array goes back to the pool for the next batch:
		// kept, a 512-span array would take whole pages of its own.
		kept := w.laid.make(len(b.Spans))[:len(b.Spans)]
		copy(kept, b.Spans)
		b.recycle()
		b.Spans = kept
	}
	// Spans of indexed traces go into their index: start the cache misses
	// together.
	var sum uint64
	for i := range b.Spans {
		if x := w.recs[p.trec[p.tix[i]]].idx; x != nil {
			sum += x.touch(spanTag(w.seed, b.Spans[i].SpanID))
		}
	}
	w.sink = sum
	w.placedF = slices.Grow(w.placedF[:0], len(b.Spans))[:len(b.Spans)]
	w.placedI = slices.Grow(w.placedI[:0], len(b.Spans))[:len(b.Spans)]
	clear(w.placedF)
	for _, i := range p.order {
		if fast > 0 {
			if gr := &p.groups[p.gid[i]]; !gr.job && p.tNew[p.tix[i]] {
				if i == gr.start {
					w.placeGroup(b.Spans, gr, alias)
				}
				continue
			}
		}
		// A span of a new trace is the first of its id unless an earlier
		// batch span has the same id, and its parent is either in the
		// batch or not stored at all.
		fresh := p.tNew[p.tix[i]] && !p.dup[i]
		w.placedF[i], w.placedI[i] = w.place(&b.Spans[i], i, fresh, fresh && p.parent[i] < 0)
	}
	clear(w.placedF) // no pointers kept past the batch
	b.recycle()      // fragments copied what they keep
	w.prep = nil
	if b.prep != nil {
		b.prep.release()
	} else {
		clear(p.rid)
		clear(p.ridSets[:])
	}
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

// parentAt returns where the parent of batch span i was placed, when it is
// in the batch and still where it was put: most parents arrive in the
// same batch as their children, and this saves two lookups in maps holding
// every span.
func (w *writer) parentAt(i int32) (*frag, uint32) {
	p := w.prep.parent[i]
	if p < 0 {
		return nil, 0
	}
	f, idx := w.placedF[p], w.placedI[p]
	if f == nil || w.gone(f) {
		return nil, 0
	}
	return f, idx
}

// lookup finds a stored span of the trace with record r (0: none),
// building the trace's index when it has none yet.
func (w *writer) lookup(r uint32, id SpanID) (*frag, uint32, bool) {
	if r == 0 {
		return nil, 0, false
	}
	x := w.index(r)
	if l, ok := x.get(spanTag(w.seed, id), w.holds(id)); ok {
		return w.tab[l.frag], l.idx, true
	}
	return nil, 0, false
}

// index returns the span index of the trace with record r, built from its
// fragments when this is the first lookup.
func (w *writer) index(r uint32) *spanIndex {
	tr := &w.recs[r]
	if tr.idx != nil {
		return tr.idx
	}
	x := &spanIndex{}
	for id := tr.head; id != 0; id = w.tab[id].tNext {
		f := w.tab[id]
		for k := range f.spans {
			sid := f.spans[k].SpanID
			x.set(spanTag(w.seed, sid), loc{frag: f.id, idx: uint32(k)}, w.holds(sid))
		}
	}
	tr.idx = x
	return x
}

// setLoc records where a span of f now lives, when its trace is indexed.
func (w *writer) setLoc(f *frag, id SpanID, l loc) {
	x := w.recs[f.trec].idx
	if x == nil {
		return
	}
	tag := spanTag(w.seed, id)
	if i, found := x.probe(tag, w.holds(id)); found {
		x.locs[i] = l
	} else {
		x.fill(i, tag, l)
	}
}

// moveLoc records that a span of f moved from one place to another within
// it; the index entry is found by where it was, since the span there may
// already be another.
func (w *writer) moveLoc(f *frag, id SpanID, from, to loc) {
	if x := w.recs[f.trec].idx; x != nil {
		x.set(spanTag(w.seed, id), to, func(l loc) bool { return l == from })
	}
}

// holds returns a test of whether a location holds the span id: an index
// keeps a tag of the id, not the id.
func (w *writer) holds(id SpanID) func(loc) bool {
	return func(l loc) bool {
		f := w.fragAt(l.frag)
		return f != nil && int(l.idx) < len(f.spans) && f.spans[l.idx].SpanID == id
	}
}

// delLoc forgets the span id of fragment f.
func (w *writer) delLoc(f *frag, id SpanID) {
	if x := w.recs[f.trec].idx; x != nil {
		x.del(spanTag(w.seed, id), func(l loc) bool {
			return l.frag == f.id && int(l.idx) < len(f.spans) && f.spans[l.idx].SpanID == id
		})
	}
}

// place stores batch span i and returns where it went (nil for a
// duplicate). fresh means the span cannot be a duplicate, and noParent
// that its parent is not stored: the caller knows from the batch, and the
// lookups are saved.
func (w *writer) place(sp *Span, i int32, fresh, noParent bool) (*frag, uint32) {
	p := w.prep
	t := p.tix[i]
	if !fresh {
		if _, _, dup := w.lookup(p.trec[t], sp.SpanID); dup {
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

	up := p.pid[i]
	if sp.Name == w.keys.job {
		f := w.newFrag(p.traces[t], up, 1)
		w.appendSpan(f, *sp, -1)
		w.jobs = append(w.jobs, f)
		// Fragments waiting for this span hang under the job: they stay
		// rollouts, and those without an id leave their trace's waiting one.
		if p.tWait[t] {
			for _, c := range w.takeWaiting(f.trec, sp.SpanID) {
				c.link = upJob // c.up is sp's id: c waited for it
				w.touch(c)
				w.assign(c, c.rid())
			}
		}
		return f, 0
	}

	var f *frag
	parent := int32(-1)
	rid := "" // the rollout id f names, as f's spans and this one tell
	if !up.IsZero() {
		pf, pi := w.parentAt(i)
		ok := pf != nil
		if !ok && !noParent {
			pf, pi, ok = w.lookup(p.trec[t], up)
		}
		if ok {
			if w.isJob(pf) {
				f = w.newFrag(p.traces[t], up, p.size[i])
				f.link = upJob
				parent = -1
			} else {
				f, parent, rid = pf, int32(pi), pf.rid()
			}
		}
	}
	if f == nil {
		f = w.newFrag(p.traces[t], up, p.size[i])
		if !up.IsZero() {
			w.wait(up, f)
			// Only a span of this batch can come for it before the
			// batch ends, and only if its parent id is in the batch.
			if p.parent[i] >= 0 {
				p.tWait[t] = true
			}
		}
	}
	idx := w.appendSpan(f, *sp, parent)
	if rid == "" {
		rid = p.rid[i]
	}
	// Fragments that arrived before this span and wait for it join its fragment.
	if p.tWait[t] {
		for _, c := range w.takeWaiting(f.trec, sp.SpanID) {
			if c != f { // a span that names itself as parent waits for nobody
				f, idx, rid = w.merge(f, c, idx, rid)
			}
		}
	}
	w.assign(f, rid)
	return f, idx
}

// placeGroup stores a group of a trace new to the store as one fragment
// (see apply): its spans go into the index, nothing else per span.
func (w *writer) placeGroup(spans []Span, g *group, alias bool) {
	run := spans[g.start : g.start+g.n : g.start+g.n]
	up := w.prep.pid[g.start]
	trace := w.prep.traces[w.prep.tix[g.start]]
	var f *frag
	if alias {
		f = w.newFrag(trace, up, 0)
		f.spans = run
	} else {
		f = w.newFrag(trace, up, g.n)
		f.spans = append(f.spans, run...)
	}
	f.start, f.end, f.errors = g.first, g.last, g.errors
	indexed := w.recs[f.trec].idx != nil
	for k := range run {
		sp := &run[k]
		if indexed {
			w.setLoc(f, sp.SpanID, loc{frag: f.id, idx: uint32(k)})
		}
		if int(sp.Resource) >= len(w.services) {
			w.services = append(w.services, make([]int64, int(sp.Resource)+1-len(w.services))...)
		}
		w.services[sp.Resource]++
		w.placedF[g.start+int32(k)], w.placedI[g.start+int32(k)] = f, uint32(k)
	}
	w.stored += int(g.n)
	w.bytes += g.bytes
	if !up.IsZero() {
		if q := w.prep.parent[g.start]; q >= 0 && w.prep.groups[w.prep.gid[q]].job {
			f.link = upJob
		} else {
			// Its parent is neither in the batch nor stored: it waits,
			// and nothing else in the batch can be what it waits for.
			w.wait(up, f)
		}
	}
	w.touch(f)
	w.assign(f, g.rid)
}

// wait lists f, whose top span's parent is id, as waiting for that span.
func (w *writer) wait(id SpanID, f *frag) {
	wl := w.waiting[id]
	f.waitPrev, f.waitNext = wl.tail, 0
	w.linkAfter(&wl, wl.tail, f.id)
	wl.tail = f.id
	w.waiting[id] = wl
	f.link = upWaits
	w.recs[f.trec].waiting++
}

// linkAfter makes id the next of fragment prev on wl, or wl's head when
// prev is 0; linkBefore makes id the previous of next, or wl's tail.
func (w *writer) linkAfter(wl *waitList, prev, id uint32) {
	if prev != 0 {
		w.tab[prev].waitNext = id
	} else {
		wl.head = id
	}
}

func (w *writer) linkBefore(wl *waitList, next, id uint32) {
	if next != 0 {
		w.tab[next].waitPrev = id
	} else {
		wl.tail = id
	}
}

// unlink takes f out of wl.
func (w *writer) unlink(wl *waitList, f *frag) {
	w.linkAfter(wl, f.waitPrev, f.waitNext)
	w.linkBefore(wl, f.waitNext, f.waitPrev)
	f.waitPrev, f.waitNext = 0, 0
	f.link = upNone
	w.recs[f.trec].waiting--
}

// takeWaiting removes and returns the fragments of the trace with record
// trec waiting for span id, in the order they began to wait.
func (w *writer) takeWaiting(trec uint32, id SpanID) []*frag {
	wl, ok := w.waiting[id]
	if !ok {
		return nil
	}
	out := w.takenScratch[:0]
	for cur := wl.head; cur != 0; {
		c := w.tab[cur]
		cur = c.waitNext
		if c.trec == trec { // those of other traces stay listed
			w.unlink(&wl, c)
			out = append(out, c)
		}
	}
	if wl.head == 0 {
		delete(w.waiting, id)
	} else {
		w.waiting[id] = wl
	}
	w.takenScratch = out[:0]
	return out
}

// unwait takes f off the waiting list of its top's parent.
func (w *writer) unwait(f *frag) {
	if !f.waits() {
		return
	}
	k := f.up
	wl := w.waiting[k]
	w.unlink(&wl, f)
	if wl.head == 0 {
		delete(w.waiting, k)
	} else {
		w.waiting[k] = wl
	}
}

// newFrag starts a fragment with room for size spans.
func (w *writer) newFrag(trace TraceID, up SpanID, size int32) *frag {
	w.seq++
	f := &frag{seq: w.seq, up: up, ordered: true}
	if k := len(w.free); k > 0 {
		f.id = w.free[k-1]
		w.free = w.free[:k-1]
		w.tab[f.id] = f
	} else {
		f.id = uint32(len(w.tab))
		w.tab = append(w.tab, f)
	}
	if size > 0 {
		f.spans = w.slab.make(int(size))
	}
	w.nfrags++
	f.trec = w.traceRecOf(trace)
	tr := &w.recs[f.trec]
	tr.frags++
	if tr.head != 0 {
		f.tNext = tr.head
		w.tab[tr.head].tPrev = f.id
	}
	tr.head = f.id
	if p := w.prep; p != nil {
		p.trec[p.tr[trace]] = f.trec
	}
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
	w.setLoc(f, sp.SpanID, loc{frag: f.id, idx: idx})
	w.touch(f)
	return idx
}

// swapMin is the size from which a fragment whose parent arrives keeps its
// array and takes the parent's spans in (see merge).
const swapMin = 32

// merge joins child, whose top span's parent is the span at index at of f,
// with f, and returns the fragment both are now, that parent's index in it
// and the rollout id it names: rid, f's as placement goes, else the
// child's. The smaller side's spans are copied: copying the child every time
// would make a chain arriving leaf first quadratic. When the child is the
// bigger one it keeps its array, and the fragment is out of order until
// published.
func (w *writer) merge(f, child *frag, at uint32, rid string) (*frag, uint32, string) {
	if rid == "" {
		rid = child.rid()
	}
	if len(child.spans) >= swapMin && len(child.spans) > len(f.spans) {
		if pf := child.pub; pf != nil && len(pf.Spans) > 0 && &pf.Spans[0] == &child.spans[0] {
			// Published snapshots share child's array, and the Parent of
			// its top span is set below: that write goes to a copy. At most
			// once per publication, as settle's copies.
			child.spans = append(make([]Span, 0, len(child.spans)+len(f.spans)), child.spans...)
		}
		off := w.moveSpans(child, f)
		child.spans[child.top].Parent = int32(off + at)
		child.top = int32(off) + f.top
		child.ordered = false
		// f's top is child's now, and with it f's place on the waiting
		// list of its parent.
		child.up, child.link = f.up, f.link
		if f.waits() {
			wl := w.waiting[f.up]
			child.waitPrev, child.waitNext = f.waitPrev, f.waitNext
			w.linkAfter(&wl, f.waitPrev, child.id)
			w.linkBefore(&wl, f.waitNext, child.id)
			w.waiting[f.up] = wl
			f.link, f.waitPrev, f.waitNext = upNone, 0, 0
		}
		// So does f's place in its rollout and in the order of rollouts:
		// the result must not depend on which side kept its array.
		if child.roll != nil {
			w.detach(child.roll, child)
		}
		child.seq = f.seq
		if r := f.roll; r != nil {
			r.slots()[f.rpos] = child
			child.roll, child.rpos = r, f.rpos
			f.roll = nil
		}
		w.retire(f)
		w.touch(child)
		return child, off + at, rid
	}
	top := child.top
	off := w.moveSpans(f, child)
	f.spans[off+uint32(top)].Parent = int32(at)
	f.ordered = f.ordered && child.ordered
	w.retire(child)
	w.touch(f)
	return f, at, rid
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
		w.setLoc(dst, sp.SpanID, loc{frag: dst.id, idx: off + uint32(i)})
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
	w.dropFrag(c)
	if r := c.roll; r != nil {
		w.detach(r, c)
	}
}

// detach takes c out of r in constant time: its entry is cleared, and the
// list compacted once half of it is holes (a rollout whose children all
// arrived first may gather thousands of fragments before their parents).
func (w *writer) detach(r *roll, c *frag) {
	// In place: published rollouts have their own Fragments slices.
	if s := r.slots(); c.rpos >= 0 && int(c.rpos) < len(s) && s[c.rpos] == c {
		s[c.rpos] = nil
		r.live--
	}
	c.roll = nil
	w.markDirty(r)
	if r.live == 0 {
		r.frags, r.many = nil, false
		r.dead = true
		w.restructure = true
		w.deadInOrder++
		w.dropRoll(r)
		return
	}
	if s := r.slots(); r.many && int(r.live) < len(s)/2 {
		ws := r.waits()
		k := 0
		for i, f := range s {
			if f != nil {
				f.rpos = int32(k)
				s[k] = f
				if ws != nil {
					ws.seen[k] = ws.seen[i]
				}
				k++
			}
		}
		clear(s[k:])
		*r.more() = s[:k]
		if ws != nil {
			ws.seen = ws.seen[:k]
		}
	}
}

func (w *writer) touch(f *frag) {
	f.dirty = true
	if r := f.roll; r != nil {
		w.markDirty(r)
		r.lastSeen = w.nowNS
		if ws := r.waits(); ws != nil {
			ws.seen[f.rpos].last = seenMS(r.pub.FirstSeen, w.nowNS)
		}
	}
}

// markDirty records that r must be published anew.
func (w *writer) markDirty(r *roll) {
	if !r.dirty {
		r.dirty = true
		w.changed = append(w.changed, r)
	}
}

// assign puts f in the rollout its id rid names (its synthetic one for
// ""), moving it if the id changed.
func (w *writer) assign(f *frag, rid string) {
	key := rid
	f.named = key != ""
	if f.roll != nil && (key == "" && f.roll.synthetic() && f.roll.waiting() == f.waits() || key != "" && f.roll.key() == key) {
		// Where it is: a fragment without an id is in its trace's waiting
		// rollout while its top waits for a parent, else in the rollout of
		// its synthetic key, which its top span fixes (a merge that keeps
		// the child's array gives the child the parent's top, rollout and
		// place on the waiting list).
		return
	}
	sk, inSynth := synthKey{}, key == ""
	if inSynth {
		if f.waits() {
			tr := &w.recs[f.trec]
			sk = waitKeyOf(tr.id, tr.wgen)
			if r := w.synth.get(sk); r != nil && r.live >= waitMax {
				tr.wgen++
				sk = waitKeyOf(tr.id, tr.wgen)
			}
		} else {
			sk = synthKeyOf(w.traceID(f), f.spans[f.top].SpanID)
		}
	} else {
		sk, inSynth = parseSynthKey(key)
	}
	var r *roll
	if inSynth {
		r = w.synth.get(sk)
	} else {
		r = w.rolls[key]
	}
	if r != nil && f.roll == r {
		return
	}
	if f.roll != nil {
		w.detach(f.roll, f)
	}
	if r == nil {
		synthetic := key == ""
		r = &roll{seq: f.seq, pos: -1, draft: true}
		if inSynth && synthetic {
			key = sk.String()
		}
		// The first publication's Rollout, with the one-fragment array
		// most rollouts need: the roll keeps no copy of what it holds.
		if synthetic && f.waits() {
			r.pub = &(&rolloutW{}).r
			r.pub.waiting = true
		} else {
			one := &rollout1{}
			r.pub = &one.r
			r.pub.Fragments = one.f[:]
		}
		r.pub.ID, r.pub.Synthetic, r.pub.FirstSeen = key, synthetic, w.nowNS
		if inSynth {
			w.synth.put(sk, r)
		} else {
			w.rolls[key] = r
		}
		if n := len(w.order); n > 0 && w.order[n-1].seq > r.seq {
			w.restructure = true // an old fragment started a rollout: re-sort
			w.unsorted = true
		}
		w.order = append(w.order, r)
		w.fresh = append(w.fresh, r)
	}
	if f.seq < r.seq {
		r.seq = f.seq
		w.restructure = true
		w.unsorted = true
	}
	r.add(f, w.nowNS)
	r.live++
	f.roll = r
	w.markDirty(r)
	r.lastSeen = w.nowNS
}

// dropRoll forgets r's key.
func (w *writer) dropRoll(r *roll) {
	if sk, ok := parseSynthKey(r.key()); ok {
		w.synth.del(sk)
	} else {
		delete(w.rolls, r.key())
	}
}

// synthKey names a rollout without an id by its trace and top span. As
// text (String) it is "~" and the hex of the trace id's first 4 bytes,
// "/", the hex of the span id; a rollout id of exactly that form shares
// the map, so both name one rollout as one text would.
type synthKey struct {
	t [4]byte
	s SpanID
}

func synthKeyOf(t TraceID, top SpanID) synthKey {
	return synthKey{t: [4]byte(t[:4]), s: top}
}

// waitKeyOf is the key of trace t's waiting rollout number gen.
// Fragments that wait for a parent are many where a process's exporter
// dropped spans (each would be a rollout of its own, hundreds of bytes for
// a few spans); a trace's share one, up to waitMax of them, then the next
// number's, so that eviction, which takes whole rollouts, takes waiting
// fragments of about one age together. Where a synthetic key has the top
// span's id, its key has the trace id's other 12 bytes folded into 8, and
// gen: trace ids that differ in one byte, wherever it is, have keys that
// differ.
func waitKeyOf(t TraceID, gen uint32) synthKey {
	s := SpanID(t[8:16])
	for i := range 4 {
		s[i] ^= t[4+i]
	}
	binary.LittleEndian.PutUint32(s[4:], binary.LittleEndian.Uint32(s[4:])^gen)
	return synthKey{t: [4]byte(t[:4]), s: s}
}

// waitMax is the most fragments a waiting rollout takes.
const waitMax = 64

// String is the key as text, built with one allocation.
func (k synthKey) String() string {
	var b [synthKeyLen]byte
	b[0] = '~'
	hex.Encode(b[1:9], k.t[:])
	b[9] = '/'
	hex.Encode(b[10:], k.s[:])
	return string(b[:])
}

const synthKeyLen = 1 + 8 + 1 + 16

// parseSynthKey reads a key of String's form (lower-case hex only, so
// that text and key match one to one).
func parseSynthKey(s string) (synthKey, bool) {
	var k synthKey
	if len(s) != synthKeyLen || s[0] != '~' || s[9] != '/' {
		return k, false
	}
	for i := 1; i < synthKeyLen; i++ {
		if c := s[i]; i != 9 && !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return k, false
		}
	}
	if _, err := hex.Decode(k.t[:], []byte(s[1:9])); err != nil {
		return k, false
	}
	if _, err := hex.Decode(k.s[:], []byte(s[10:])); err != nil {
		return k, false
	}
	return k, true
}

// sameAttrs reports whether a and b are one shared packed set (not merely
// equal: comparing bytes would cost what it saves).
func sameAttrs(a, b Attrs) bool { return a.p == b.p }
