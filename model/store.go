package model

import (
	"errors"
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
}

type item struct {
	batch Batch
	sync  chan struct{}
}

// Store holds received spans. One goroutine (the writer, started by NewStore)
// owns all mutable state; Submit, Add, Sync, Snapshot, Changed and Count are
// safe to call from any goroutine. Readers work on Snapshots.
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

// Count records metric data points or log records received; they are
// counted, not stored.
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
	publish := func() {
		s.snap.Store(s.w.publish())
		dirty = false
		last = time.Now()
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
			dirty = true
			// Publish at once when idle, at most every PublishEvery under load.
			if len(s.in) == 0 && time.Since(last) >= s.opts.PublishEvery {
				publish()
			}
		case <-tick.C:
			if dirty || s.metrics.Load() != s.w.lastMetrics || s.logs.Load() != s.w.lastLogs {
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
	spans     int
	firstSeen int64 // store clock, unix nanoseconds
	lastSeen  int64
	dirty     bool
	dead      bool
	version   uint64
	pub       *Rollout
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

	jobName, ridKey Str
	pathKeys        []Str

	lastMetrics, lastLogs int64
}

func (w *writer) init(s *Store) {
	w.s = s
	w.locs = map[SpanID]loc{}
	w.waiting = map[SpanID][]uint32{}
	w.frags = map[uint32]*frag{}
	w.rolls = map[string]*roll{}
	w.traces = map[TraceID]int32{}
	w.perTrace = map[TraceID]int32{}
	w.jobName = s.strs.Intern(JobSpanName)
	w.ridKey = s.strs.Intern(RolloutIDKey)
	for _, k := range rolloutPathKeys {
		w.pathKeys = append(w.pathKeys, s.strs.Intern(k))
	}
}

func (w *writer) apply(b Batch) {
	w.nowNS = w.s.opts.Now().UnixNano()
	clear(w.perTrace)
	for i := range b.Spans {
		w.perTrace[b.Spans[i].TraceID]++
	}
	for i := range b.Spans {
		w.place(&b.Spans[i])
	}
	if m := w.s.opts.MaxSpans; m > 0 && w.stored > m {
		w.evict(m - m/10)
	}
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

func (w *writer) place(sp *Span) {
	if _, _, dup := w.lookup(sp.TraceID, sp.SpanID); dup {
		w.dups++
		return
	}
	w.stored++
	if int(sp.Resource) >= len(w.services) {
		w.services = append(w.services, make([]int64, int(sp.Resource)+1-len(w.services))...)
	}
	w.services[sp.Resource]++

	if sp.Name == w.jobName {
		f := w.newFrag(sp.TraceID)
		f.isJob = true
		w.appendSpan(f, *sp, -1)
		w.jobs = append(w.jobs, f)
		// Fragments waiting for this span hang under the job: they stay rollouts.
		for _, id := range w.takeWaiting(sp.SpanID, sp.TraceID) {
			c := w.frags[id]
			c.job = sp.SpanID
			w.touch(c)
		}
		return
	}

	var f *frag
	parent := int32(-1)
	if !sp.ParentID.IsZero() {
		if pf, pi, ok := w.lookup(sp.TraceID, sp.ParentID); ok {
			if pf.isJob {
				f = w.newFrag(sp.TraceID)
				f.job = sp.ParentID
				parent = -1
			} else {
				f, parent = pf, int32(pi)
			}
		}
	}
	if f == nil {
		f = w.newFrag(sp.TraceID)
		if !sp.ParentID.IsZero() {
			w.waiting[sp.ParentID] = append(w.waiting[sp.ParentID], f.id)
		}
	}
	idx := w.appendSpan(f, *sp, parent)
	// Fragments that arrived before this span and wait for it join its fragment.
	for _, id := range w.takeWaiting(sp.SpanID, sp.TraceID) {
		w.merge(f, w.frags[id], idx)
	}
	w.assign(f)
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

func (w *writer) newFrag(trace TraceID) *frag {
	w.nextFrag++
	w.seq++
	f := &frag{id: w.nextFrag, seq: w.seq, trace: trace}
	if n := w.perTrace[trace]; n > 1 {
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
	delete(w.frags, c.id)
	if w.traces[c.trace]--; w.traces[c.trace] <= 0 {
		delete(w.traces, c.trace)
	}
	if r := c.roll; r != nil {
		w.detach(r, c)
	}
}

func (w *writer) detach(r *roll, c *frag) {
	for i, x := range r.frags {
		if x == c {
			r.frags = append(r.frags[:i:i], r.frags[i+1:]...)
			break
		}
	}
	r.spans -= len(c.spans)
	c.roll = nil
	r.dirty = true
	if len(r.frags) == 0 {
		r.dead = true
		delete(w.rolls, r.key)
	}
}

func (w *writer) touch(f *frag) {
	f.dirty = true
	if f.roll != nil {
		f.roll.dirty = true
		f.roll.lastSeen = w.nowNS
	}
}

// assign puts f in the rollout its id names, moving it if the id changed.
func (w *writer) assign(f *frag) {
	key, synthetic := f.rid, false
	if key == "" {
		key, synthetic = "~"+f.trace.String()[:8]+"/"+f.spans[0].SpanID.String(), true
	}
	if f.roll != nil && f.roll.key == key {
		f.roll.spans = w.fragSpans(f.roll)
		return
	}
	if f.roll != nil {
		w.detach(f.roll, f)
	}
	r := w.rolls[key]
	if r == nil {
		r = &roll{key: key, synthetic: synthetic, seq: f.seq, firstSeen: w.nowNS}
		w.rolls[key] = r
		w.order = append(w.order, r)
	}
	if f.seq < r.seq {
		r.seq = f.seq
	}
	r.frags = append(r.frags, f)
	f.roll = r
	r.spans = w.fragSpans(r)
	r.dirty = true
	r.lastSeen = w.nowNS
}

func (w *writer) fragSpans(r *roll) int {
	n := 0
	for _, f := range r.frags {
		n += len(f.spans)
	}
	return n
}

var ngRollout = "/ng-rollout/"

// rolloutID returns the rollout id a span names, or "".
func (w *writer) rolloutID(sp *Span) string {
	id := ""
	sp.Attrs.each(w.s.strs, func(k Str, v Value) bool {
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
	return id
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
	w.order = w.order[n:]
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
// fragments and rollouts are shared with the previous snapshot.
func (w *writer) publish() *Snapshot {
	w.pubSeq++
	if len(w.order) > 2*len(w.rolls)+64 {
		w.compactOrder()
	}
	snap := &Snapshot{Seq: w.pubSeq, Taken: w.s.opts.Now(), strings: w.s.strs}
	snap.Rollouts = make([]*Rollout, 0, len(w.rolls))
	sorted := sort.SliceIsSorted(w.order, func(i, j int) bool { return w.order[i].seq < w.order[j].seq })
	if !sorted {
		sort.SliceStable(w.order, func(i, j int) bool { return w.order[i].seq < w.order[j].seq })
	}
	nfrags := 0
	for _, r := range w.order {
		if r.dead {
			continue
		}
		nfrags += len(r.frags)
		if r.dirty || r.pub == nil {
			w.version++
			r.version = w.version
			pr := &Rollout{ID: r.key, Synthetic: r.synthetic, Version: r.version, FirstSeen: time.Unix(0, r.firstSeen), LastSeen: time.Unix(0, r.lastSeen)}
			traces := map[TraceID]bool{}
			for i, f := range r.frags {
				pf := w.pubFrag(f)
				pr.Fragments = append(pr.Fragments, pf)
				pr.Spans += len(pf.Spans)
				pr.Errors += f.errors
				if i == 0 || f.start < pr.Start {
					pr.Start = f.start
				}
				if f.end > pr.End {
					pr.End = f.end
				}
				traces[f.trace] = true
			}
			pr.Traces = len(traces)
			r.pub = pr
			r.dirty = false
		}
		snap.Rollouts = append(snap.Rollouts, r.pub)
	}
	for _, j := range w.jobs {
		if _, live := w.frags[j.id]; live {
			snap.Jobs = append(snap.Jobs, w.pubFrag(j))
		}
	}
	snap.Services = append([]int64(nil), w.services...)
	w.lastMetrics, w.lastLogs = w.s.metrics.Load(), w.s.logs.Load()
	snap.Stats = Stats{
		Accepted:        w.s.accepted.Load(),
		Refused:         w.s.refused.Load(),
		Stored:          w.stored,
		Duplicates:      w.dups,
		EvictedSpans:    w.evSpans,
		EvictedRollouts: w.evRolls,
		Rollouts:        len(snap.Rollouts),
		Fragments:       nfrags,
		Traces:          len(w.traces),
		MetricPoints:    w.lastMetrics,
		LogRecords:      w.lastLogs,
	}
	return snap
}

func (w *writer) pubFrag(f *frag) *Fragment {
	if f.dirty || f.pub == nil {
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
