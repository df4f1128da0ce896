package model

// Publication: immutable snapshots built from the writer's state,
// sharing what did not change.

import (
	"slices"
	"time"
	"unsafe"
)

// publish builds an immutable snapshot from the writer state. Unchanged
// fragments and rollouts are shared with the previous snapshot. In the
// common case (rollouts added or changed, none removed, order kept) it
// copies the previous rollout list and patches it, touching only what
// changed: a walk over every rollout would cost milliseconds per
// publication with a million spans stored.
func (w *writer) publish() *Snapshot {
	w.pubSeq++
	w.settle()
	snap := &Snapshot{Seq: w.pubSeq, Taken: w.s.opts.Now(), strings: w.s.strs}
	if w.nowNS != 0 {
		snap.SpansAt = time.Unix(0, w.nowNS)
	}
	if w.restructure || w.pub == nil {
		w.sortOrder()
		w.pub = make([]*Rollout, 0, len(w.order))
		w.pubAt, w.base = 0, 0
		for _, r := range w.order {
			r.pos = int64(len(w.pub))
			w.pub = append(w.pub, w.pubRoll(r))
		}
	} else {
		// Published rollouts are never changed in place (older snapshots
		// share them): the list is copied when one changed or the front
		// was evicted (so the evicted are not kept), else only extended.
		w.base += w.evicted
		moved := w.evicted > 0
		for _, r := range w.changed {
			moved = moved || r.pos >= w.base && !r.dead
		}
		if moved {
			live := w.pub[w.base-w.pubAt:]
			w.pub = append(make([]*Rollout, 0, len(live)+len(w.fresh)), live...)
			w.pubAt = w.base
			for _, r := range w.changed {
				if r.pos >= w.base && !r.dead {
					w.pub[r.pos-w.pubAt] = w.pubRoll(r)
				}
			}
		}
		for _, r := range w.fresh {
			if !r.dead {
				r.pos = w.pubAt + int64(len(w.pub))
				w.pub = append(w.pub, w.pubRoll(r))
			}
		}
	}
	w.evicted = 0
	live := w.pub[w.base-w.pubAt:]
	snap.Rollouts = live[:len(live):len(live)] // a reader's append must not reach the shared array
	for _, r := range w.changed {
		r.dirty = false
	}
	clear(w.changed)
	w.changed = w.changed[:0]
	clear(w.fresh)
	w.fresh = w.fresh[:0]
	w.restructure = false
	liveJobs := 0
	for _, j := range w.jobs {
		if w.fragAt(j.id) == j {
			snap.Jobs = append(snap.Jobs, w.pubFrag(j))
			liveJobs++
		}
	}
	snap.Services = append([]int64(nil), w.services...)
	w.lastMetrics, w.lastLogs = w.s.metrics.Load(), w.s.logs.Load()
	// Per-name counts change rarely next to spans: copy them only when they
	// did, so readers can also compare the map identity cheaply.
	if g := w.s.metricNames.gen.Load(); g != w.lastMetricGen || w.metricsPub == nil {
		w.metricsPub, w.lastMetricGen = w.s.metricNames.snapshot()
		if w.metricsPub == nil {
			w.metricsPub = map[string]int64{}
		}
	}
	snap.Metrics = w.metricsPub
	w.lastAccepted = w.s.accepted.Load()
	snap.Stats = Stats{
		Accepted:        w.lastAccepted,
		Refused:         w.s.refused.Load(),
		Stored:          w.stored,
		StoredBytes:     w.bytes,
		StringsDropped:  w.s.strs.dropped.Load(),
		StringBytes:     w.s.strs.bytes.Load(),
		Duplicates:      w.dups,
		EvictedSpans:    w.evSpans,
		EvictedRollouts: w.evRolls,
		Rollouts:        len(snap.Rollouts),
		Fragments:       w.nfrags - liveJobs, // every other fragment is in a rollout
		Traces:          w.traces.Len(),
		MetricPoints:    w.lastMetrics,
		LogRecords:      w.lastLogs,
		AttrsDropped:    w.s.attrsCapped.Load(),
		ValuesTruncated: w.s.valuesCapped.Load(),
		EventsDropped:   w.s.eventsCapped.Load(),
		LinksDropped:    w.s.linksCapped.Load(),
		NamesTruncated:  w.s.namesCapped.Load(),
	}
	snap.Stats.ValuesRepaired = w.s.repaired.Load()
	w.lastReqRefused = w.s.reqRefused.Load()
	snap.Stats.RequestsRefused = w.lastReqRefused
	if r := w.s.lastRefusal.Load(); r != nil {
		snap.Stats.LastRefusal = *r
	}
	if w.lastRecord = w.s.record.Load(); w.lastRecord != nil {
		snap.Stats.Record = *w.lastRecord
	}
	w.lastProfiles = w.s.profiles.Load()
	snap.Stats.Profiles = w.lastProfiles
	return snap
}

// rollout1 is a published rollout of one fragment with its Fragments array.
type rollout1 struct {
	r Rollout
	f [1]*Fragment
}

// rolloutW is a published waiting rollout (Rollout.waiting) with when each
// of its fragments got spans first and last (see Rollout.Seen).
type rolloutW struct {
	r    Rollout
	seen []seenPair
}

// pubRoll returns the published form of r, building it anew when r changed.
func (w *writer) pubRoll(r *roll) *Rollout {
	if !r.dirty && !r.draft {
		return r.pub
	}
	w.version++
	version := w.version
	frags := r.slots()
	if int(r.live) < len(frags) {
		frags = make([]*frag, 0, r.live)
		for _, f := range r.slots() {
			if f != nil {
				frags = append(frags, f)
			}
		}
	}
	var pr *Rollout
	switch {
	case r.waiting():
		pw := &rolloutW{}
		if r.draft {
			pw = (*rolloutW)(unsafe.Pointer(r.pub))
			r.draft = false
		}
		pr = &pw.r
		pr.waiting = true
		pr.Fragments = make([]*Fragment, len(frags))
		pw.seen = make([]seenPair, len(frags))
		if ws := r.waits(); ws != nil {
			for i, f := range frags {
				pw.seen[i] = ws.seen[f.rpos]
			}
		}
	case r.draft:
		// The first publication fills in the Rollout made with the roll
		// (see assign), which no reader has seen yet.
		pr = r.pub
		r.draft = false
		if len(frags) != 1 {
			pr.Fragments = make([]*Fragment, len(frags))
		}
	case len(frags) == 1:
		// Most rollouts are one fragment: one allocation for both.
		one := &rollout1{}
		pr = &one.r
		pr.Fragments = one.f[:]
	default:
		pr = &Rollout{Fragments: make([]*Fragment, len(frags))}
	}
	if pr != r.pub {
		pr.ID, pr.Synthetic, pr.FirstSeen = r.pub.ID, r.pub.Synthetic, r.pub.FirstSeen
	}
	pr.Version, pr.LastSeen = version, r.lastSeen
	var traces map[uint32]bool // by trace record; only for rollouts split into many fragments
	if len(frags) > 16 {
		traces = make(map[uint32]bool, len(frags))
		for _, f := range frags {
			traces[f.trec] = true
		}
		pr.Traces = int32(len(traces))
	}
	for i, f := range frags {
		pf := w.pubFrag(f)
		pr.Fragments[i] = pf
		pr.Spans += len(pf.Spans)
		pr.Errors += int(f.errors)
		if i == 0 || f.start < pr.Start {
			pr.Start = f.start
		}
		if f.end > pr.End {
			pr.End = f.end
		}
		if traces != nil {
			continue
		}
		// Distinct traces: rollouts have few fragments, so a scan beats a map.
		seen := false
		for _, g := range frags[:i] {
			if g.trec == f.trec {
				seen = true
				break
			}
		}
		if !seen {
			pr.Traces++
		}
	}
	r.pub = pr
	r.dirty = false
	return pr
}

func (w *writer) pubFrag(f *frag) *Fragment {
	if f.dirty || f.pub == nil {
		if !f.ordered {
			w.reorder(f)
		}
		w.settling = append(w.settling, f)
		w.version++
		f.pub = &Fragment{
			TraceID:   w.traceID(f),
			Spans:     f.spans[:len(f.spans):len(f.spans)],
			TopParent: f.up,
			Version:   w.version,
			Slot:      f.id,
			UnderJob:  f.link == upJob,
		}
		f.dirty = false
	}
	return f.pub
}

// reorder puts f's spans in the order Fragment promises (the top first,
// every span after its parent), keeping their relative order otherwise,
// in a new array: published snapshots keep the old one.
func (w *writer) reorder(f *frag) {
	n := len(f.spans)
	parent := make([]int32, n) // beside the new span array below, 1/24 of its size
	for i := range f.spans {
		parent[i] = f.spans[i].Parent
	}
	depth, start := w.ds.depthStarts(parent, f.top)
	pos := slices.Grow(w.pos32[:0], n)[:n] // old index -> new
	for i, d := range depth {
		pos[i] = start[d]
		start[d]++
	}
	spans := make([]Span, n)
	for i := range f.spans {
		sp := f.spans[i]
		if sp.Parent >= 0 {
			sp.Parent = pos[sp.Parent]
		}
		spans[pos[i]] = sp
	}
	for i := range f.spans {
		sp := &f.spans[i]
		w.moveLoc(f, sp.SpanID, loc{frag: f.id, idx: uint32(i)}, loc{frag: f.id, idx: uint32(pos[i])})
	}
	f.spans, f.top, f.ordered = spans, 0, true
	w.pos32 = pos
}
