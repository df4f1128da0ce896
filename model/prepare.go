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
)

// batchPrep is a prepared batch. Its slices are indexed by batch position.
type batchPrep struct {
	// order places every in-batch parent before its children, keeping
	// batch order otherwise (SDKs export children first: placed as they
	// come, each child would start a fragment and a rollout of its own).
	order []int32
	// parent is the batch index of the first span with the span's parent
	// id in its trace, or -1.
	parent []int32
	// size is how many batch spans a fragment started by the span would
	// gather (the span and its in-batch descendants, a gym.job span and
	// what hangs under it excepted), so the fragment's array is made once
	// at its final size.
	size []int32
	// dup marks a span whose (trace, id) came earlier in the batch.
	dup []bool
	// tix is the index of the span's trace in traces.
	tix    []int32
	traces []TraceID
	// rid is the rollout id the span names, "" for none.
	rid []string

	// The writer's per-trace flags, filled when it applies the batch.
	tNew, tWait []bool

	ids    idTable
	tr     map[TraceID]int32
	ds     depthScratch
	noRID  Attrs // the last attribute set found to name no rollout
	hasRID bool  // some span names a rollout id
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

// prepare computes p for spans.
func (p *batchPrep) prepare(spans []Span, t *Interner, keys *storeKeys) {
	n := len(spans)
	p.ids.reset(n)
	clear(p.tr)
	p.traces = p.traces[:0]
	p.tix = grow32(p.tix, n)
	p.dup = growBool(p.dup, n)
	p.rid = slices.Grow(p.rid[:0], n)[:n]
	p.hasRID = false
	for i := range spans {
		sp := &spans[i]
		k, ok := p.tr[sp.TraceID]
		if !ok {
			k = int32(len(p.traces))
			p.tr[sp.TraceID] = k
			p.traces = append(p.traces, sp.TraceID)
		}
		p.tix[i] = k
		p.dup[i] = !p.ids.add(sp.SpanID, k, int32(i))
		p.rid[i] = ""
		if sp.Name != keys.job {
			if p.rid[i] = p.rolloutID(sp, t, keys); p.rid[i] != "" {
				p.hasRID = true
			}
		}
	}
	p.parent = grow32(p.parent, n)
	for i := range spans {
		p.parent[i] = -1
		if sp := &spans[i]; !sp.ParentID.IsZero() {
			p.parent[i] = p.ids.get(sp.ParentID, p.tix[i])
		}
	}
	depth, start := p.ds.depthStarts(p.parent, -1)
	p.order = grow32(p.order, n)
	for i, d := range depth {
		p.order[start[d]] = int32(i)
		start[d]++
	}
	p.size = grow32(p.size, n)
	for i := range p.size {
		p.size[i] = 1
	}
	for k := n - 1; k >= 0; k-- {
		i := p.order[k]
		if q := p.parent[i]; q >= 0 && spans[i].Name != keys.job && spans[q].Name != keys.job {
			p.size[q] += p.size[i]
		}
	}
	p.tNew = growBool(p.tNew, len(p.traces))
	p.tWait = growBool(p.tWait, len(p.traces))
}

// release gives p back for another batch; it keeps no span's strings.
func (p *batchPrep) release() {
	clear(p.rid)
	p.noRID = ""
	prepPool.Put(p)
}

func grow32(s []int32, n int) []int32 { return slices.Grow(s[:0], n)[:n] }

func growBool(s []bool, n int) []bool {
	s = slices.Grow(s[:0], n)[:n]
	clear(s)
	return s
}

var ngRollout = "/ng-rollout/"

// rolloutID returns the rollout id a span names, or "".
func (p *batchPrep) rolloutID(sp *Span, t *Interner, keys *storeKeys) string {
	if sp.Attrs == "" || sameAttrs(sp.Attrs, p.noRID) {
		return ""
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
	if id == "" {
		p.noRID = sp.Attrs
		return ""
	}
	// The value may point into a span's packed attributes; the rollout key
	// must not keep those alive.
	return strings.Clone(id)
}

// idTable finds a batch span by (trace index, span id): open addressing
// over the batch, cleared by a generation stamp instead of a sweep.
type idTable struct {
	slots []idSlot
	gen   uint32
	mask  uint32
}

type idSlot struct {
	id  uint64
	gen uint32
	tix int32
	at  int32
}

func (t *idTable) reset(n int) {
	size := 16
	for size < 2*n {
		size <<= 1
	}
	if len(t.slots) < size || len(t.slots) > 8*size {
		t.slots = make([]idSlot, size)
		t.gen = 0
	}
	t.mask = uint32(len(t.slots) - 1)
	if t.gen++; t.gen == 0 {
		clear(t.slots)
		t.gen = 1
	}
}

func idHash(id uint64, tix int32) uint32 {
	k := id ^ uint64(tix)*0x9e3779b97f4a7c15
	k = (k ^ (k >> 31)) * 0xbf58476d1ce4e5b9
	return uint32(k >> 32)
}

// add records span at under (id, tix) unless one is there: false for a
// duplicate.
func (t *idTable) add(sid SpanID, tix, at int32) bool {
	id := binary.LittleEndian.Uint64(sid[:])
	for i := idHash(id, tix) & t.mask; ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if s.gen != t.gen {
			*s = idSlot{id: id, gen: t.gen, tix: tix, at: at}
			return true
		}
		if s.id == id && s.tix == tix {
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
		if s.id == id && s.tix == tix {
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
