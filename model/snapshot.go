package model

import (
	"slices"
	"time"
	"unsafe"
)

// Snapshot is an immutable view of the store, published by the writer after
// it applies batches. Readers on any goroutine may use a Snapshot and
// everything reachable from it without locks; nobody may modify it.
type Snapshot struct {
	Seq   uint64    // increases with every publication
	Taken time.Time // the store clock when published
	// SpansAt is the store clock when spans last arrived (zero before the
	// first): a publication for metric points or logs alone keeps it.
	SpansAt time.Time
	// Rollouts in the order they were first seen, oldest first.
	Rollouts []*Rollout
	// Jobs holds the gym.job spans, each as its own one-span fragment.
	Jobs  []*Fragment
	Stats Stats
	// Services counts stored spans per resource, indexed by ResourceID.
	Services []int64
	// Metrics counts received metric data points per metric name (at most
	// MaxMetricNames names, the rest under OtherMetrics). Never nil; shared
	// between snapshots while unchanged; nobody may modify it.
	Metrics map[string]int64

	strings *Interner
}

// Interner returns the table that resolves the snapshot's Str, Attrs and
// ResourceID values.
func (s *Snapshot) Interner() *Interner { return s.strings }

// Str resolves an interned string.
func (s *Snapshot) Str(id Str) string { return s.strings.Str(id) }

// Resource resolves a resource id.
func (s *Snapshot) Resource(id ResourceID) Resource { return s.strings.Resource(id) }

// ServiceName returns the service.name of a resource.
func (s *Snapshot) ServiceName(id ResourceID) string {
	return s.strings.Str(s.strings.Resource(id).Service)
}

// Stats are the store's counters at publication time.
type Stats struct {
	Accepted        int64 // spans accepted into the queue, cumulative
	Refused         int64 // spans refused because the queue was full
	Stored          int   // spans held now
	StoredBytes     int64 // bytes the held spans take, as --max-bytes counts them
	StringBytes     int64 // bytes of interned strings
	StringsDropped  int64 // names and values not interned: the string table was full
	Duplicates      int64 // spans dropped because their id was already stored
	EvictedSpans    int64 // spans dropped by the --max-spans or --max-bytes bound
	EvictedRollouts int64 // whole rollouts dropped by the --max-spans or --max-bytes bound
	Rollouts        int
	Fragments       int
	Traces          int    // distinct trace ids held
	MetricPoints    int64  // metric data points received (counted, not stored)
	LogRecords      int64  // log records received (counted, not stored)
	AttrsDropped    int64  // attributes dropped by the per-span attribute cap
	ValuesTruncated int64  // attribute values cut by the value length cap
	ValuesRepaired  int64  // strings kept with U+FFFD for bytes that were not UTF-8
	RequestsRefused int64  // requests the receivers refused whole
	LastRefusal     string // the latest refusal's reason
	EventsDropped   int64  // span events dropped by the per-span event cap
	LinksDropped    int64  // span links dropped by the per-span link cap
	NamesTruncated  int64  // span, event and attribute key names cut by the name length cap
	Profiles        int64  // OTLP profiles received (counted, not stored)
	// Record is how the record (--record) fares; zero when not recording
	// or nothing went wrong.
	Record RecordState
}

// Rollout is one rollout as captured: the fragments (connected pieces of
// trace) that carry its id. A healthy rollout has one fragment; several mean
// the rollout was split across traces, or a parent has not arrived yet.
// Immutable; a changed rollout is published as a new *Rollout with a higher
// Version, so readers may cache work per (ID, Version).
type Rollout struct {
	// A Rollout is shared by pointer, never copied (go vet tells): the
	// store's waiting ones are part of a larger value (see Seen).
	_         noCopy
	ID        string // nemo.gym.rollout.id, the /ng-rollout/{id}/ path, or synthetic
	Version   uint64
	Fragments []*Fragment
	Spans     int
	Errors    int   // spans with status ERROR
	Start     int64 // earliest span start, unix nanoseconds
	End       int64 // latest span end, unix nanoseconds
	// Traces is the number of distinct trace ids among the fragments: an
	// int32 beside Synthetic, so that a Rollout with its one-fragment
	// array fits a 112-byte allocation.
	Traces    int32
	Synthetic bool // no id was found; ID is derived from the root span
	// waiting marks a trace's waiting rollout: its fragments, without a
	// rollout id, wait for parents, and are of as many rollouts. It is a
	// rolloutW, which keeps when each was seen (see Seen).
	waiting bool
	// FirstSeen and LastSeen are the store clock, unix nanoseconds, when
	// spans of the rollout first and last arrived; LastSeen drives the
	// "pending" grace window. Integers, as Start and End, and not
	// time.Time: a snapshot holds one Rollout per rollout, and two Times
	// would be a fifth of it.
	FirstSeen int64
	LastSeen  int64
}

// Clone returns a copy of r to change (a new Version, other Fragments),
// seen as r is: a copy made with * would lose a waiting rollout's times.
func (r *Rollout) Clone() *Rollout {
	c := &Rollout{}
	if r.waiting {
		w := &rolloutW{seen: (*rolloutW)(unsafe.Pointer(r)).seen}
		c = &w.r
	}
	// Every field but noCopy.
	c.ID, c.Version, c.Fragments, c.Spans, c.Errors = r.ID, r.Version, r.Fragments, r.Spans, r.Errors
	c.Start, c.End, c.Traces, c.Synthetic, c.waiting = r.Start, r.End, r.Traces, r.Synthetic, r.waiting
	c.FirstSeen, c.LastSeen = r.FirstSeen, r.LastSeen
	return c
}

// noCopy makes go vet's copylocks check report a copied Rollout.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}

// Seen returns when fragment i of r got spans first and last, store
// clock, unix nanoseconds: the rollout's FirstSeen and LastSeen, unless r
// is the one the store keeps a trace's waiting fragments in (they lack a
// rollout id, and their tops wait for parents). Each of those is seen as
// a rollout of its own, to the millisecond.
func (r *Rollout) Seen(i int) (first, last int64) {
	if r.waiting {
		return (*rolloutW)(unsafe.Pointer(r)).seen[i].at(r.FirstSeen)
	}
	return r.FirstSeen, r.LastSeen
}

// SeenOf is Seen of fragment f of r: a waiting rollout holds few
// fragments (waitMax), so it is found by a scan.
func (r *Rollout) SeenOf(f *Fragment) (first, last int64) {
	if r.waiting {
		if i := slices.Index(r.Fragments, f); i >= 0 {
			return r.Seen(i)
		}
	}
	return r.FirstSeen, r.LastSeen
}

// Fragment is a connected piece of one trace: Spans[0] is its top span and
// every other span's Parent indexes its parent within Spans.
type Fragment struct {
	TraceID TraceID
	Spans   []Span
	// TopParent is the parent id of Spans[0], the top: zero for a true root,
	// else the id of a parent that has not arrived or, when UnderJob, of
	// the gym.job span, or, when Attached, of a span in another fragment.
	TopParent SpanID
	Version   uint64
	// Slot is the store's index of the fragment: unique among a snapshot's
	// fragments, reused once the fragment leaves, 0 for one made elsewhere.
	// With Version it keys an analysis's cache kept in a slice, not a map.
	Slot uint32
	// UnderJob: the fragment hangs under the gym.job span (TopParent), which
	// has arrived. A flag, not the id again, keeps a Fragment 64 bytes.
	UnderJob bool
	// Attached: an analysis's copy cut out of a stored fragment below its
	// top (a request span carried over onto the request before it): the
	// parent, TopParent, has arrived and is in another fragment.
	Attached bool
}

// Job returns the id of the gym.job span the fragment hangs under, zero
// until that span has arrived.
func (f *Fragment) Job() SpanID {
	if f.UnderJob {
		return f.TopParent
	}
	return SpanID{}
}

// Trace returns the trace of span i: the fragment's, unless the span names
// its own (Extra.Trace, on an analysis's copy of a span carried over from
// another trace).
func (f *Fragment) Trace(i int) TraceID {
	if x := f.Spans[i].Extra; x != nil && !x.Trace.IsZero() {
		return x.Trace
	}
	return f.TraceID
}

// ParentID returns span i's parent id: the id of Spans[Parent], the top's
// TopParent, or, on an analysis's copy put under another span, the parent
// it was captured under (Extra.Parent).
func (f *Fragment) ParentID(i int) SpanID {
	sp := &f.Spans[i]
	if x := sp.Extra; x != nil && !x.Parent.IsZero() {
		return x.Parent
	}
	if sp.Parent >= 0 {
		return f.Spans[sp.Parent].SpanID
	}
	if i == 0 {
		return f.TopParent
	}
	return SpanID{}
}

// Orphan reports whether the fragment waits for a parent that has not arrived.
func (f *Fragment) Orphan() bool { return !f.TopParent.IsZero() && !f.UnderJob && !f.Attached }

// Derive returns a copy of s whose Rollouts are rolls: the same spans seen
// through another grouping (gate finds Gym's rollouts by structure). Every
// other field is shared with s.
func (s *Snapshot) Derive(rolls []*Rollout) *Snapshot {
	d := *s
	d.Rollouts = rolls
	d.Stats.Rollouts = len(rolls)
	return &d
}
