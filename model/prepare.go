package model

// Preparing a batch: everything the writer needs to know about a batch that
// the batch alone tells (which span is whose parent, the order to place
// them in, how big each new fragment will be, the rollout id each span
// names). Receivers prepare on their own goroutines before they queue a
// batch, so this work runs on every core instead of on the one writer.

import (
	"encoding/binary"
	"slices"
	"strings"
	"sync"
	"unsafe"
)

// batchPrep is a prepared batch. prepare lays the batch's spans out anew,
// grouped: each group is a span whose parent is not in the batch (or is a
// gym.job span) with its in-batch descendants, parents first, so that a
// group of a trace the store has not seen becomes a fragment as it lies,
// without a copy. Its slices are indexed by position in that layout.
type batchPrep struct {
	// order places every in-batch parent before its children, keeping
	// batch order otherwise (SDKs export children first: placed as they
	// come, each child would start a fragment and a rollout of its own).
	order []int32
	// parent is the position of the first span with the span's parent id
	// in its trace, or -1.
	parent []int32
	// size is how many batch spans a fragment started by the span would
	// gather (the span and its in-batch descendants, a gym.job span and
	// what hangs under it excepted), so the fragment's array is made once
	// at its final size.
	size []int32
	// dup marks a span whose (trace, id) came earlier in the batch.
	dup []bool
	// pid is the span's parent id, zero for a root: the layout's spans
	// hold none (see Span).
	pid []SpanID
	// tix is the index of the span's trace in traces.
	tix    []int32
	traces []TraceID
	// rid is the rollout id the span names, "" for none.
	rid []string
	// gid is each span's group; groups describe them.
	gid    []int32
	groups []group
	// simple: no span of the batch repeats another or closes a parent
	// loop, so the groups of new traces are whole fragments.
	simple bool

	// The writer's per-trace state, filled when it applies the batch:
	// the trace's record (0 while it has none), whether the store held
	// none of it before, whether fragments of it wait for a parent.
	trec        []uint32
	tNew, tWait []bool

	ids     idTable
	tr      map[TraceID]int32
	ds      depthScratch
	ridSets [ridSlots]ridSet // recent attribute sets and the rollout id they name
	// Scratch by batch index, while laying out.
	tixB, parentB, orderB, gidB, posB []int32
	dupB                              []bool
}

// group is a run of the layout that would be one fragment: its first span
// is the top, and each span's Parent indexes its parent within the run.
type group struct {
	start, n    int32
	errors      int32
	job         bool // the top is a gym.job span
	rid         string
	first, last int64 // earliest start, latest end (0 at least), as a fragment keeps them
	bytes       int64 // spanBytes of the run
}

// storeKeys are the interned names the store reads spans by.
type storeKeys struct {
	job, rid Str
	paths    []Str
}

func newStoreKeys(t *Interner) storeKeys {
	k := storeKeys{job: t.Intern(JobSpanName), rid: t.Intern(RolloutIDKey)}
	for _, p := range rolloutPathKeys {
		k.paths = append(k.paths, t.Intern(p))
	}
	return k
}

var prepPool = sync.Pool{New: func() any { return &batchPrep{tr: map[TraceID]int32{}} }}

// prepare computes p for spans, of the trace ids traces and the parent ids
// parents (one a span; parents nil: every span a root), and returns them
// laid out in groups, in an array of their exact number; a span's trace is
// then p.traces[p.tix[j]] and its parent's id p.pid[j]. spans itself is
// left as it was.
func (p *batchPrep) prepare(spans []Span, traces []TraceID, parents []SpanID, t *Interner, keys *storeKeys) []Span {
	n := len(spans)
	traces = traces[:n]
	clear(p.tr)
	p.traces = p.traces[:0]
	p.simple = true
	// First by batch index (the ...B slices), then by position.
	tixB := grow32(p.tixB, n)
	dupB := growBool(p.dupB, n)
	p.ids.reset(n, tixB)
	k := int32(-1)
	for i := range spans {
		// Spans of one trace mostly come together.
		if tid := &traces[i]; k < 0 || *tid != p.traces[k] {
			var ok bool
			if k, ok = p.tr[*tid]; !ok {
				k = int32(len(p.traces))
				p.tr[*tid] = k
				p.traces = append(p.traces, *tid)
			}
		}
		tixB[i] = k
		if dupB[i] = !p.ids.add(spans[i].SpanID, k, int32(i)); dupB[i] {
			p.simple = false
		}
	}
	parentB := grow32(p.parentB, n)
	for i := range spans {
		parentB[i] = -1
		if parents != nil && !parents[i].IsZero() {
			parentB[i] = p.ids.get(parents[i], tixB[i])
		}
	}
	depth, start := p.ds.depthStarts(parentB, -1)
	orderB := grow32(p.orderB, n)
	for i, d := range depth {
		orderB[start[d]] = int32(i)
		start[d]++
	}
	// Groups, in the order their tops are placed: a span joins its
	// parent's group unless the parent is not in the batch, either is a
	// gym.job span, or the parent comes later (a loop cut where it closes).
	gidB := grow32(p.gidB, n)
	p.groups = p.groups[:0]
	for _, i := range orderB {
		q := parentB[i]
		if q < 0 || spans[i].Name == keys.job || spans[q].Name == keys.job || depth[q] >= depth[i] {
			if q >= 0 && depth[q] >= depth[i] {
				p.simple = false
			}
			gidB[i] = int32(len(p.groups))
			p.groups = append(p.groups, group{job: spans[i].Name == keys.job})
		} else {
			gidB[i] = gidB[q]
		}
		p.groups[gidB[i]].n++
	}
	at := int32(0)
	for g := range p.groups {
		p.groups[g].start = at
		at += p.groups[g].n
		p.groups[g].n = 0
	}
	pos := grow32(p.posB, n)
	for _, i := range orderB {
		g := &p.groups[gidB[i]]
		pos[i] = g.start + g.n
		g.n++
	}
	// The layout, and every per-span slice by position. Its array is
	// pooled: the writer copies what it keeps (see apply).
	out := spanPool.get(n)[:n]
	p.order = grow32(p.order, n)
	p.parent = grow32(p.parent, n)
	p.tix = grow32(p.tix, n)
	p.pid = slices.Grow(p.pid[:0], n)[:n]
	p.dup = growBool(p.dup, n)
	p.gid = grow32(p.gid, n)
	p.rid = slices.Grow(p.rid[:0], n)[:n]
	for k, i := range orderB {
		j := pos[i]
		p.order[k] = j
		g := &p.groups[gidB[i]]
		sp := &out[j]
		*sp = spans[i]
		sp.Parent = -1
		p.parent[j] = -1
		if q := parentB[i]; q >= 0 {
			p.parent[j] = pos[q]
			if gidB[q] == gidB[i] {
				sp.Parent = pos[q] - g.start
			}
		}
		p.tix[j] = tixB[i]
		p.pid[j] = SpanID{}
		if parents != nil {
			p.pid[j] = parents[i]
		}
		p.dup[j] = dupB[i]
		p.gid[j] = gidB[i]
		p.rid[j] = ""
		if !g.job {
			if p.rid[j] = p.rolloutID(sp, t, keys); p.rid[j] != "" && g.rid == "" {
				g.rid = p.rid[j]
			}
		}
		if j == g.start || sp.Start < g.first {
			g.first = sp.Start
		}
		g.last = max(g.last, sp.End)
		if sp.Status == StatusError {
			g.errors++
		}
		g.bytes += spanBytes(sp)
	}
	// A fragment's room: the span and its descendants in its group.
	p.size = grow32(p.size, n)
	for j := range p.size {
		p.size[j] = 1
	}
	for k := n - 1; k >= 0; k-- {
		j := p.order[k]
		if q := p.parent[j]; q >= 0 && p.gid[q] == p.gid[j] {
			p.size[q] += p.size[j]
		}
	}
	p.tNew = growBool(p.tNew, len(p.traces))
	p.tWait = growBool(p.tWait, len(p.traces))
	p.tixB, p.dupB, p.parentB, p.orderB, p.gidB, p.posB = tixB, dupB, parentB, orderB, gidB, pos
	return out
}

// release gives p back for another batch; it keeps no span's strings.
func (p *batchPrep) release() {
	clear(p.rid)
	clear(p.ridSets[:])
	prepPool.Put(p)
}

// ridSet is an attribute set (shared between spans: equal sets of recent
// spans are one packed copy) and the rollout id it names.
type ridSet struct {
	attrs Attrs
	id    string
}

const ridSlots = 64

func grow32(s []int32, n int) []int32 { return slices.Grow(s[:0], n)[:n] }

func grow32u(s []uint32, n int) []uint32 { return slices.Grow(s[:0], n)[:n] }

func growBool(s []bool, n int) []bool {
	s = slices.Grow(s[:0], n)[:n]
	clear(s)
	return s
}

var ngRollout = "/ng-rollout/"

// rolloutID returns the rollout id a span names, or "". Spans of one
// operation share one packed attribute set, so the answer is remembered
// per set (by its address: comparing bytes would cost what it saves).
func (p *batchPrep) rolloutID(sp *Span, t *Interner, keys *storeKeys) string {
	if sp.Attrs.Empty() {
		return ""
	}
	c := &p.ridSets[uintptr(unsafe.Pointer(sp.Attrs.p))>>4%ridSlots]
	if sameAttrs(sp.Attrs, c.attrs) {
		return c.id
	}
	id := ""
	want := func(k Str) bool { return k == keys.rid || slices.Contains(keys.paths, k) }
	sp.Attrs.eachOf(t, want, func(k Str, v Value) bool {
		if k == keys.rid {
			id = v.String()
			return false
		}
		for _, pk := range keys.paths {
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
	// The value may point into a span's packed attributes; the rollout key
	// must not keep those alive.
	if id != "" {
		id = strings.Clone(id)
	}
	c.attrs, c.id = sp.Attrs, id
	return id
}

// idTable finds a batch span by (trace index, span id): open addressing
// over the batch, cleared by a generation stamp instead of a sweep. A slot
// is 16 bytes; the trace index is read from the batch's own.
type idTable struct {
	slots []idSlot
	tix   []int32 // trace index by batch index
	gen   uint32
	mask  uint32
}

type idSlot struct {
	id  uint64
	at  int32
	gen uint32
}

func (t *idTable) reset(n int, tix []int32) {
	size := 16
	for size < n+n/2 {
		size <<= 1
	}
	if len(t.slots) < size || len(t.slots) > 8*size {
		t.slots = make([]idSlot, size)
		t.gen = 0
	}
	t.tix = tix
	t.mask = uint32(len(t.slots) - 1)
	if t.gen++; t.gen == 0 {
		clear(t.slots)
		t.gen = 1
	}
}

func idHash(id uint64, tix int32) uint32 {
	return uint32(((id ^ uint64(tix)) * 0x9e3779b97f4a7c15) >> 32)
}

// add records span at under (id, tix) unless one is there: false for a
// duplicate.
func (t *idTable) add(sid SpanID, tix, at int32) bool {
	id := binary.LittleEndian.Uint64(sid[:])
	for i := idHash(id, tix) & t.mask; ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if s.gen != t.gen {
			*s = idSlot{id: id, at: at, gen: t.gen}
			return true
		}
		if s.id == id && t.tix[s.at] == tix {
			return false
		}
	}
}

// get returns the first batch index of (id, tix), or -1.
func (t *idTable) get(sid SpanID, tix int32) int32 {
	id := binary.LittleEndian.Uint64(sid[:])
	for i := idHash(id, tix) & t.mask; ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if s.gen != t.gen {
			return -1
		}
		if s.id == id && t.tix[s.at] == tix {
			return s.at
		}
	}
}

// depthScratch backs depthStarts; the slices are valid until its next
// call.
type depthScratch struct {
	depth, path, count []int32
}

// depthStarts gives each span, by its parent index (-1: none), its depth
// and, per depth, the first position of a stable counting sort by depth.
// A span without a parent is at depth 0; with top >= 0 only top is, and
// every other such span (a second root, a parent loop cut where it closes)
// goes below it at depth 1.
func (s *depthScratch) depthStarts(parent []int32, top int32) (depth, start []int32) {
	n := len(parent)
	depth = slices.Grow(s.depth[:0], n)[:n]
	for i := range depth {
		depth[i] = -1 // unknown
	}
	maxDepth := int32(0)
	for i := range parent {
		// Walk up to a span of known depth or one without a parent, then
		// number the path on the way down.
		path := s.path[:0]
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
		s.path = path
	}
	start = slices.Grow(s.count[:0], int(maxDepth)+2)[:maxDepth+2]
	clear(start)
	for _, d := range depth {
		start[d+1]++
	}
	for d := 1; d < len(start); d++ {
		start[d] += start[d-1]
	}
	s.depth, s.count = depth, start
	return depth, start
}
