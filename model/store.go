package model

import (
	"encoding/hex"
	"errors"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Errors returned by Submit.
var (
	// ErrFull means the queue to the writer is full; the sender should retry.
	ErrFull = errors.New("store queue is full")
	// ErrClosed means the store no longer accepts batches.
	ErrClosed = errors.New("store is closed")
)

// JobSpanName is the span that wraps a whole rollout-collection run. Its
// children start rollouts, so the store cuts the tree below it.
const JobSpanName = "gym.job"

// RolloutIDKey is the attribute that names a span's rollout.
const RolloutIDKey = "nemo.gym.rollout.id"

// rolloutPathKeys are the attributes whose value may hold /ng-rollout/{id}/.
var rolloutPathKeys = []string{"http.target", "http.url", "url.full", "url.path", "http.route"}

// Options configure a Store.
type Options struct {
	// MaxSpans bounds the spans held; past it the oldest rollouts are evicted
	// whole. 0 means no bound.
	MaxSpans int
	// QueueLen is the number of batches that may wait for the writer.
	QueueLen int
	// Now is the store clock; time.Now when nil.
	Now func() time.Time
	// PublishEvery bounds how often snapshots are published under load.
	PublishEvery time.Duration
	// LeanGC lets the store lower the garbage collector's target (GOGC, a
	// process-wide setting) once the live heap passes 64 MB, so a large
	// store peaks at about 1.25x its live size instead of 2x; it restores
	// the setting on Close. Meant for the one long-lived store of a
	// receiving process. Ignored when GOGC or GOMEMLIMIT is set.
	LeanGC bool
}

type item struct {
	batch Batch
	sync  chan struct{}
}

// Store holds received spans. One goroutine (the writer, started by NewStore)
// owns all mutable state; Submit, Add, Sync, Snapshot, Changed, Count and
// CountMetric are safe to call from any goroutine. Readers work on Snapshots.
type Store struct {
	opts    Options
	strs    *Interner
	in      chan item
	mu      sync.RWMutex // guards closed against sends on a closed channel
	closed  bool
	done    chan struct{}
	snap    atomic.Pointer[Snapshot]
	changed chan struct{}

	accepted, refused, metrics, logs atomic.Int64
	attrsCapped, valuesCapped        atomic.Int64
	reqRefused                       atomic.Int64
	lastRefusal                      atomic.Pointer[string]
	notRecorded                      atomic.Int64
	recordMu                         sync.Mutex
	recordCause                      string // first reason spans were not recorded
	metricNames                      metricCounts

	w writer
}

// NewStore starts a store and its writer goroutine. Call Close to stop it.
func NewStore(opts Options) *Store {
	if opts.QueueLen <= 0 {
		opts.QueueLen = 256
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.PublishEvery <= 0 {
		opts.PublishEvery = 50 * time.Millisecond
	}
	s := &Store{
		opts:    opts,
		strs:    NewInterner(),
		in:      make(chan item, opts.QueueLen),
		done:    make(chan struct{}),
		changed: make(chan struct{}, 1),
	}
	s.w.init(s)
	s.snap.Store(s.w.publish())
	go s.run()
	return s
}

// Interner returns the table decoders intern into.
func (s *Store) Interner() *Interner { return s.strs }

// Submit queues a batch without blocking. It returns ErrFull when the queue is
// full (the caller answers retryable) and ErrClosed after Close. The store
// owns b.Spans afterwards.
func (s *Store) Submit(b Batch) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	select {
	case s.in <- item{batch: b}:
		s.accepted.Add(int64(len(b.Spans)))
		return nil
	default:
		s.refused.Add(int64(len(b.Spans)))
		return ErrFull
	}
}

// Add queues a batch, waiting for room. File readers use it: they can wait.
func (s *Store) Add(b Batch) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	s.in <- item{batch: b}
	s.accepted.Add(int64(len(b.Spans)))
	return nil
}

// Sync waits until every batch queued before it is applied and published.
func (s *Store) Sync() {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		<-s.done
		return
	}
	ch := make(chan struct{})
	s.in <- item{sync: ch}
	s.mu.RUnlock()
	<-ch
}

// CountCapped records attributes dropped and values truncated by the
// receivers' bounds, so they are shown with everything else the store counts.
func (s *Store) CountCapped(attrsDropped, valuesTruncated int64) {
	s.attrsCapped.Add(attrsDropped)
	s.valuesCapped.Add(valuesTruncated)
}

// CountRefusedRequest records a request the receivers refused whole, and
// why, so a run where every request is refused does not look like silence.
func (s *Store) CountRefusedRequest(reason string) {
	s.lastRefusal.Store(&reason)
	s.reqRefused.Add(1)
}

// CountNotRecorded records n spans held here that the record (--record)
// will not hold, and why (the first cause is kept), so a failing disk is
// shown live next to the spans still arriving.
func (s *Store) CountNotRecorded(n int64, cause string) {
	s.recordMu.Lock()
	if s.recordCause == "" {
		s.recordCause = cause
	}
	s.recordMu.Unlock()
	s.notRecorded.Add(n)
}

// Count records metric data points or log records received; they are
// counted, not stored. CountMetric adds the per-name detail of metrics.
func (s *Store) Count(metricPoints, logRecords int64) {
	s.metrics.Add(metricPoints)
	s.logs.Add(logRecords)
}

// Snapshot returns the latest published snapshot. Never nil.
func (s *Store) Snapshot() *Snapshot { return s.snap.Load() }

// Changed returns a channel that receives a value after a new snapshot is
// published. Changes coalesce: one value may stand for many snapshots.
func (s *Store) Changed() <-chan struct{} { return s.changed }

// Close stops accepting batches, applies what is queued, publishes a final
// snapshot and stops the writer. Safe to call more than once.
func (s *Store) Close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.in)
	}
	s.mu.Unlock()
	<-s.done
}

func (s *Store) run() {
	defer close(s.done)
	tick := time.NewTicker(s.opts.PublishEvery)
	defer tick.Stop()
	dirty := false
	last := time.Time{}
	// every grows with the cost of a publication, so that with a very large
	// store the writer spends at most about a tenth of its time publishing,
	// and with the number of rollouts (a microsecond each), because every
	// publication copies the rollout list: at 20 per second a list of 200k
	// rollouts would make as much garbage as the spans themselves.
	every := s.opts.PublishEvery
	var gc *gcTuner
	if s.opts.LeanGC {
		if gc = newGCTuner(); gc != nil {
			defer gc.restore()
		}
	}
	publish := func() {
		if gc != nil {
			gc.update()
		}
		t0 := time.Now()
		snap := s.w.publish()
		s.snap.Store(snap)
		dirty = false
		last = time.Now()
		every = max(s.opts.PublishEvery, 10*last.Sub(t0), time.Duration(len(snap.Rollouts))*time.Microsecond)
		select {
		case s.changed <- struct{}{}:
		default:
		}
	}
	for {
		select {
		case it, ok := <-s.in:
			if !ok {
				publish()
				return
			}
			if it.sync != nil {
				publish()
				close(it.sync)
				continue
			}
			s.w.apply(it.batch)
			if it.batch.pooled {
				spanPool.put(it.batch.Spans)
			}
			dirty = true
			// Publish at once when idle, at most every PublishEvery under load.
			if len(s.in) == 0 && time.Since(last) >= every {
				publish()
			}
		case <-tick.C:
			if time.Since(last) < every {
				continue
			}
			if dirty || s.metrics.Load() != s.w.lastMetrics || s.logs.Load() != s.w.lastLogs ||
				s.notRecorded.Load() != s.w.lastNotRecorded ||
				s.metricNames.gen.Load() != s.w.lastMetricGen || s.reqRefused.Load() != s.w.lastReqRefused {
				publish()
			}
		}
	}
}

// loc is where a span lives: fragment id and index within it.
type loc struct {
	frag uint32
	idx  uint32
}

// frag is the writer's mutable fragment.
type frag struct {
	id     uint32
	seq    uint64 // creation order
	trace  TraceID
	spans  []Span // append-only: published Fragments share the backing array
	job    SpanID
	isJob  bool
	rid    string
	synth  string // synthetic rollout key, built once when first needed
	gone   bool   // merged into another fragment or evicted
	roll   *roll
	dirty  bool
	pub    *Fragment
	errors int
	start  int64
	end    int64
}

type roll struct {
	key       string
	synthetic bool
	seq       uint64
	frags     []*frag
	firstSeen int64 // store clock, unix nanoseconds
	lastSeen  int64
	dirty     bool
	dead      bool
	version   uint64
	pub       *Rollout
	// idx is the rollout's index in the last published Snapshot.Rollouts,
	// or -1 when it was not in it.
	idx int
}

// writer is the state owned by the writer goroutine.
type writer struct {
	s        *Store
	locs     map[SpanID]loc
	waiting  map[SpanID][]uint32 // missing parent id -> fragments whose top waits for it
	frags    map[uint32]*frag
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
	// Scratch for parentsFirst, reused across batches.
	inBatch                     map[SpanID]int32
	depth, path, count, order32 []int32
	parentIdx                   []int32 // batch index of each span's parent, or -1
	// placedF and placedI record where each batch span went, so children
	// find parents of the same batch without a lookup.
	placedF []*frag
	placedI []uint32
	// settling holds the fragments published as changed last time; those
	// that did not change since get their arrays trimmed (see settle).
	settling []*frag

	jobName, ridKey Str
	pathKeys        []Str

	lastMetrics, lastLogs int64
	lastReqRefused        int64
	lastNotRecorded       int64
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
	w.locs = map[SpanID]loc{}
	w.waiting = map[SpanID][]uint32{}
	w.frags = map[uint32]*frag{}
	w.rolls = map[string]*roll{}
	w.traces = map[TraceID]int32{}
	w.perTrace = map[TraceID]int32{}
	w.newTrace = map[TraceID]bool{}
	w.inBatch = map[SpanID]int32{}
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
	w.placedF = slices.Grow(w.placedF[:0], len(b.Spans))[:len(b.Spans)]
	w.placedI = slices.Grow(w.placedI[:0], len(b.Spans))[:len(b.Spans)]
	clear(w.placedF)
	for _, i := range order {
		sp := &b.Spans[i]
		hint, hintIdx := w.parentAt(i)
		// A span of a new trace is the first of its id unless an earlier
		// batch span has the same id, and its parent is either in the
		// batch or not stored at all.
		fresh := w.newTrace[sp.TraceID] && w.inBatch[sp.SpanID] == i
		noParent := false
		if fresh {
			_, inBatch := w.inBatch[sp.ParentID] // any trace: ids may collide
			noParent = !inBatch
		}
		w.placedF[i], w.placedI[i] = w.place(sp, fresh, noParent, hint, hintIdx)
	}
	clear(w.placedF) // no pointers kept past the batch
	if m := w.s.opts.MaxSpans; m > 0 && w.stored > m {
		w.evict(m - m/10)
	}
}

// parentsFirst returns the indices of spans in an order where a span whose
// parent is in the same batch comes after that parent, keeping batch order
// otherwise. SDKs export spans as they end, children before parents; placed
// in that order every child would start a fragment (and a rollout) of its
// own, only to be merged when the parent arrives.
func (w *writer) parentsFirst(spans []Span) []int32 {
	n := len(spans)
	clear(w.inBatch)
	for i := range spans {
		if _, dup := w.inBatch[spans[i].SpanID]; !dup {
			w.inBatch[spans[i].SpanID] = int32(i)
		}
	}
	w.parentIdx = slices.Grow(w.parentIdx[:0], n)[:n]
	for i := range spans {
		w.parentIdx[i] = -1
		if sp := &spans[i]; !sp.ParentID.IsZero() {
			if p, ok := w.inBatch[sp.ParentID]; ok && spans[p].TraceID == sp.TraceID {
				w.parentIdx[i] = p
			}
		}
	}
	depth := slices.Grow(w.depth[:0], n)[:n]
	for i := range depth {
		depth[i] = -1 // unknown
	}
	maxDepth := int32(0)
	for i := range spans {
		// Walk up to a span of known depth or one whose parent is not in the
		// batch, then number the path on the way down. A parent loop (bad
		// input) is cut where it closes.
		path := w.path[:0]
		j := int32(i)
		top := false // the walk reached a span whose parent is not in the batch
		for depth[j] == -1 {
			depth[j] = -2 // on the path
			path = append(path, j)
			p := w.parentIdx[j]
			if p < 0 {
				top = true
				break
			}
			j = p
		}
		base := int32(-1)
		if !top {
			base = max(depth[j], -1) // -2: the walk closed a loop; start at 0
		}
		for k := len(path) - 1; k >= 0; k-- {
			base++
			depth[path[k]] = base
		}
		maxDepth = max(maxDepth, base)
		w.path = path
	}
	// Counting sort by depth keeps batch order within a depth.
	count := slices.Grow(w.count[:0], int(maxDepth)+2)[:maxDepth+2]
	clear(count)
	for _, d := range depth {
		count[d+1]++
	}
	for d := 1; d < len(count); d++ {
		count[d] += count[d-1]
	}
	order := slices.Grow(w.order32[:0], n)[:n]
	for i, d := range depth {
		order[count[d]] = int32(i)
		count[d]++
	}
	w.depth, w.count, w.order32 = depth, count, order
	return order
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
	l, ok := w.locs[id]
	if !ok {
		return nil, 0, false
	}
	f := w.frags[l.frag]
	if f == nil || f.trace != trace {
		return nil, 0, false
	}
	return f, l.idx, true
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
		for _, id := range w.takeWaiting(sp.SpanID, sp.TraceID) {
			c := w.frags[id]
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
		}
	}
	idx := w.appendSpan(f, *sp, parent)
	// Fragments that arrived before this span and wait for it join its fragment.
	for _, id := range w.takeWaiting(sp.SpanID, sp.TraceID) {
		if id != f.id { // a span that names itself as parent waits for nobody
			w.merge(f, w.frags[id], idx)
		}
	}
	w.assign(f)
	return f, idx
}

// takeWaiting removes and returns the fragments of trace waiting for id.
func (w *writer) takeWaiting(id SpanID, trace TraceID) []uint32 {
	ws, ok := w.waiting[id]
	if !ok {
		return nil
	}
	var mine, rest []uint32
	for _, fid := range ws {
		if c := w.frags[fid]; c != nil && c.trace == trace {
			mine = append(mine, fid)
		} else if c != nil {
			rest = append(rest, fid)
		}
	}
	if len(rest) == 0 {
		delete(w.waiting, id)
	} else {
		w.waiting[id] = rest
	}
	return mine
}

func (w *writer) newFrag(trace TraceID, root bool) *frag {
	w.nextFrag++
	w.seq++
	f := &frag{id: w.nextFrag, seq: w.seq, trace: trace}
	if n := w.perTrace[trace]; root && n > 1 {
		f.spans = make([]Span, 0, n)
	}
	w.frags[f.id] = f
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
	w.locs[sp.SpanID] = loc{frag: f.id, idx: idx}
	if f.rid == "" && !f.isJob {
		f.rid = w.rolloutID(&sp)
	}
	w.touch(f)
	return idx
}

// merge moves child's spans into f below the span at index at.
func (w *writer) merge(f, child *frag, at uint32) {
	f.spans = slices.Grow(f.spans, len(child.spans))
	off := int32(len(f.spans))
	for i, sp := range child.spans {
		if i == 0 {
			sp.Parent = int32(at)
		} else {
			sp.Parent += off
		}
		f.spans = append(f.spans, sp)
		w.locs[sp.SpanID] = loc{frag: f.id, idx: uint32(off) + uint32(i)}
	}
	if child.start < f.start {
		f.start = child.start
	}
	if child.end > f.end {
		f.end = child.end
	}
	f.errors += child.errors
	if f.rid == "" {
		f.rid = child.rid
	}
	w.dropFrag(child)
	w.touch(f)
}

// dropFrag forgets a fragment that was merged or evicted (not its spans' locs).
func (w *writer) dropFrag(c *frag) {
	c.gone = true
	delete(w.frags, c.id)
	if w.traces[c.trace]--; w.traces[c.trace] <= 0 {
		delete(w.traces, c.trace)
	}
	if r := c.roll; r != nil {
		w.detach(r, c)
	}
}

func (w *writer) detach(r *roll, c *frag) {
	// In place: published rollouts have their own Fragments slices.
	if i := slices.Index(r.frags, c); i >= 0 {
		r.frags = slices.Delete(r.frags, i, i+1)
	}
	c.roll = nil
	w.markDirty(r)
	if len(r.frags) == 0 {
		r.dead = true
		w.restructure = true
		delete(w.rolls, r.key)
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
			f.synth = syntheticKey(f.trace, f.spans[0].SpanID)
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
	r.frags = append(r.frags, f)
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
	// The value may point into a span's packed attributes; the rollout key
	// must not keep those alive.
	return strings.Clone(id)
}

// rolloutKey reports whether attribute k can name a rollout.
func (w *writer) rolloutKey(k Str) bool {
	return k == w.ridKey || slices.Contains(w.pathKeys, k)
}

// evict drops whole rollouts, oldest first, until at most target spans remain.
func (w *writer) evict(target int) {
	w.compactOrder()
	sort.SliceStable(w.order, func(i, j int) bool { return w.order[i].seq < w.order[j].seq })
	n := 0
	for _, r := range w.order {
		if w.stored <= target {
			break
		}
		for _, f := range r.frags {
			for _, sp := range f.spans {
				delete(w.locs, sp.SpanID)
				w.services[sp.Resource]--
			}
			w.stored -= len(f.spans)
			w.evSpans += int64(len(f.spans))
			if !f.spans[0].ParentID.IsZero() {
				w.waiting[f.spans[0].ParentID] = remove(w.waiting[f.spans[0].ParentID], f.id)
				if len(w.waiting[f.spans[0].ParentID]) == 0 {
					delete(w.waiting, f.spans[0].ParentID)
				}
			}
			delete(w.frags, f.id)
			if w.traces[f.trace]--; w.traces[f.trace] <= 0 {
				delete(w.traces, f.trace)
			}
		}
		r.dead = true
		delete(w.rolls, r.key)
		w.evRolls++
		n++
	}
	// Move the survivors to the front: slicing the evicted ones off would
	// leave them (and all their spans) reachable from the array.
	k := copy(w.order, w.order[n:])
	clear(w.order[k:])
	w.order = w.order[:k]
	w.restructure = true
}

func remove(ids []uint32, id uint32) []uint32 {
	for i, x := range ids {
		if x == id {
			return append(ids[:i:i], ids[i+1:]...)
		}
	}
	return ids
}

func (w *writer) compactOrder() {
	live := w.order[:0]
	for _, r := range w.order {
		if !r.dead {
			live = append(live, r)
		}
	}
	clear(w.order[len(live):])
	w.order = live
}

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
	if w.restructure || w.prev == nil {
		w.compactOrder()
		sort.SliceStable(w.order, func(i, j int) bool { return w.order[i].seq < w.order[j].seq })
		snap.Rollouts = make([]*Rollout, 0, len(w.order))
		for _, r := range w.order {
			r.idx = len(snap.Rollouts)
			snap.Rollouts = append(snap.Rollouts, w.pubRoll(r))
		}
	} else {
		snap.Rollouts = make([]*Rollout, len(w.prev), len(w.prev)+len(w.fresh))
		copy(snap.Rollouts, w.prev)
		for _, r := range w.changed {
			if r.idx >= 0 && !r.dead {
				snap.Rollouts[r.idx] = w.pubRoll(r)
			}
		}
		for _, r := range w.fresh {
			if !r.dead {
				r.idx = len(snap.Rollouts)
				snap.Rollouts = append(snap.Rollouts, w.pubRoll(r))
			}
		}
	}
	for _, r := range w.changed {
		r.dirty = false
	}
	clear(w.changed)
	w.changed = w.changed[:0]
	clear(w.fresh)
	w.fresh = w.fresh[:0]
	w.restructure = false
	w.prev = snap.Rollouts
	liveJobs := 0
	for _, j := range w.jobs {
		if _, live := w.frags[j.id]; live {
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
	snap.Stats = Stats{
		Accepted:        w.s.accepted.Load(),
		Refused:         w.s.refused.Load(),
		Stored:          w.stored,
		Duplicates:      w.dups,
		EvictedSpans:    w.evSpans,
		EvictedRollouts: w.evRolls,
		Rollouts:        len(snap.Rollouts),
		Fragments:       len(w.frags) - liveJobs, // every other fragment is in a rollout
		Traces:          len(w.traces),
		MetricPoints:    w.lastMetrics,
		LogRecords:      w.lastLogs,
		AttrsDropped:    w.s.attrsCapped.Load(),
		ValuesTruncated: w.s.valuesCapped.Load(),
	}
	w.lastReqRefused = w.s.reqRefused.Load()
	snap.Stats.RequestsRefused = w.lastReqRefused
	if r := w.s.lastRefusal.Load(); r != nil {
		snap.Stats.LastRefusal = *r
	}
	if w.lastNotRecorded = w.s.notRecorded.Load(); w.lastNotRecorded > 0 {
		snap.Stats.NotRecorded = w.lastNotRecorded
		w.s.recordMu.Lock()
		snap.Stats.RecordError = w.s.recordCause
		w.s.recordMu.Unlock()
	}
	return snap
}

// pubRoll returns the published form of r, building it anew when r changed.
func (w *writer) pubRoll(r *roll) *Rollout {
	if !r.dirty && r.pub != nil {
		return r.pub
	}
	w.version++
	r.version = w.version
	pr := &Rollout{ID: r.key, Synthetic: r.synthetic, Version: r.version, FirstSeen: time.Unix(0, r.firstSeen), LastSeen: time.Unix(0, r.lastSeen)}
	pr.Fragments = make([]*Fragment, len(r.frags))
	var traces map[TraceID]bool // only for rollouts split into many fragments
	if len(r.frags) > 16 {
		traces = make(map[TraceID]bool, len(r.frags))
		for _, f := range r.frags {
			traces[f.trace] = true
		}
		pr.Traces = len(traces)
	}
	for i, f := range r.frags {
		pf := w.pubFrag(f)
		pr.Fragments[i] = pf
		pr.Spans += len(pf.Spans)
		pr.Errors += f.errors
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
		for _, g := range r.frags[:i] {
			if g.trace == f.trace {
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
		w.settling = append(w.settling, f)
		w.version++
		f.pub = &Fragment{
			TraceID:   f.trace,
			Spans:     f.spans[:len(f.spans):len(f.spans)],
			TopParent: f.spans[0].ParentID,
			Job:       f.job,
			Version:   w.version,
		}
		f.dirty = false
	}
	return f.pub
}
