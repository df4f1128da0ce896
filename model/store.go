package model

import (
	"errors"
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
	// ErrBadBatch means a batch's Traces is not one trace id per span.
	ErrBadBatch = errors.New("batch needs one trace id per span")
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
	// MaxBytes bounds the bytes the stored spans take (as spanBytes counts
	// them); past it the oldest rollouts are evicted whole, as for
	// MaxSpans. 0 means no bound.
	MaxBytes int64
	// MaxStringBytes bounds the interned strings (names, keys, short
	// values). Past it new names read as StringsFullName and new values
	// are kept inline; both are counted. 0 means MaxBytes/8 (at least
	// 16 MiB) when MaxBytes is set, else no bound.
	MaxStringBytes int64
	// QueueLen is the number of batches that may wait for the writer.
	QueueLen int
	// Now is the store clock; time.Now when nil.
	Now func() time.Time
	// PublishEvery bounds how often snapshots are published under load.
	PublishEvery time.Duration
	// LeanGC lets the store lower the garbage collector's target (GOGC, a
	// process-wide setting) once the live heap passes 64 MB, so a large
	// store peaks at about 1.2x its live size instead of 2x; it restores
	// the setting on Close. Meant for the one long-lived store of a
	// receiving process. Ignored when GOGC or GOMEMLIMIT is set.
	LeanGC bool
}

type item struct {
	batch Batch
	sync  chan struct{}
}

// maxPublishEvery bounds the interval between publications under load.
const maxPublishEvery = time.Second

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
	eventsCapped, linksCapped        atomic.Int64
	namesCapped                      atomic.Int64
	reqRefused                       atomic.Int64
	repaired                         atomic.Int64
	lastRefusal                      atomic.Pointer[string]
	record                           atomic.Pointer[RecordState]
	profiles                         atomic.Int64
	metricNames                      metricCounts
	keys                             storeKeys

	gc *gcTuner // nil without LeanGC
	w  writer
}

// TightGC lowers the collector's target further (see tightPercent) until
// release is called: for an analysis of the whole store that runs beside
// it, whose working set would otherwise sit on top of the store's peak.
// It does nothing without LeanGC, with GOGC or GOMEMLIMIT set, or while
// the heap is small. Safe from any goroutine; release once.
func (s *Store) TightGC() (release func()) {
	g := s.gc
	if g == nil {
		return func() {}
	}
	g.tighten(1)
	return func() { g.tighten(-1) }
}

// HoldFootprint caps the process's memory at what it holds from the system
// now until release is called: the runtime's soft memory limit, so that
// the collector runs and returns free pages before the process maps more.
// It is for an analysis of the whole store while no spans arrive: its
// working set then fits in the room the ingest left, instead of raising
// the peak. Beside a flood the cap would make the collector run without
// pause while the store grows; hold it only while the store is quiet. Like
// TightGC it does nothing without LeanGC or with GOGC or GOMEMLIMIT set.
func (s *Store) HoldFootprint() (release func()) {
	g := s.gc
	if g == nil {
		return func() {}
	}
	g.hold(1)
	return func() { g.hold(-1) }
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
	if opts.MaxStringBytes <= 0 && opts.MaxBytes > 0 {
		opts.MaxStringBytes = max(16<<20, opts.MaxBytes/8)
	}
	strs := NewInterner()
	strs.limit = opts.MaxStringBytes
	s := &Store{
		opts:    opts,
		strs:    strs,
		in:      make(chan item, opts.QueueLen),
		done:    make(chan struct{}),
		changed: make(chan struct{}, 1),
		keys:    newStoreKeys(strs),
	}
	if opts.LeanGC {
		s.gc = newGCTuner()
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
func (s *Store) Submit(b Batch) error { return s.SubmitWait(b, 0) }

// Add queues a batch, waiting for room. File readers use it: they can wait.
func (s *Store) Add(b Batch) error {
	if err := b.check(); err != nil {
		return err
	}
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

// Capped counts what the receivers' bounds cut: attributes dropped, values
// truncated, events and links dropped, names truncated.
type Capped struct {
	Attrs, Values, Events, Links, Names int64
}

// CountCapped records what the receivers' bounds cut, so it is shown with
// everything else the store counts.
func (s *Store) CountCapped(c Capped) {
	s.attrsCapped.Add(c.Attrs)
	s.valuesCapped.Add(c.Values)
	s.eventsCapped.Add(c.Events)
	s.linksCapped.Add(c.Links)
	s.namesCapped.Add(c.Names)
}

// CountRepaired records strings the receivers repaired into valid UTF-8.
func (s *Store) CountRepaired(n int64) {
	if n > 0 {
		s.repaired.Add(n)
	}
}

// CountRefusedRequest records a request the receivers refused whole, and
// why, so a run where every request is refused does not look like silence.
func (s *Store) CountRefusedRequest(reason string) {
	s.lastRefusal.Store(&reason)
	s.reqRefused.Add(1)
}

// RecordState is how the record (--record) fares, as the receivers report
// it: spans refused because it could not take them (senders retry them),
// failed writes, whether the latest failed, and why.
type RecordState struct {
	Refused  int64
	Failures int64
	Failing  bool
	Cause    string // the latest failure, in a few words ("no space left on device")
}

// SetRecordState records the record's state, so a full disk shows live
// next to the spans arriving.
func (s *Store) SetRecordState(st RecordState) { s.record.Store(&st) }

// CountProfiles records OTLP profiles received; they are counted, not
// stored.
func (s *Store) CountProfiles(n int64) { s.profiles.Add(n) }

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
	// and with the number of rollouts (a microsecond each), because a
	// publication may copy the rollout list: at 20 per second a list of
	// 200k rollouts would make as much garbage as the spans themselves. It
	// stays under maxPublishEvery: the cost is wall time, which a machine
	// whose cores other work holds stretches many times over, and what
	// arrived should show within a second or so.
	every := s.opts.PublishEvery
	gc := s.gc
	if gc != nil {
		defer gc.restore()
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
		every = max(s.opts.PublishEvery, min(maxPublishEvery, max(10*last.Sub(t0), time.Duration(len(snap.Rollouts))*time.Microsecond)))
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
			s.w.apply(it.batch) // gives a pooled array back once laid out
			dirty = true
			// Publish at once when idle, at most every PublishEvery under load.
			if len(s.in) == 0 && time.Since(last) >= every {
				publish()
			}
		case <-tick.C:
			if time.Since(last) < every {
				continue
			}
			if dirty || s.accepted.Load() != s.w.lastAccepted || s.metrics.Load() != s.w.lastMetrics || s.logs.Load() != s.w.lastLogs ||
				s.record.Load() != s.w.lastRecord || s.profiles.Load() != s.w.lastProfiles ||
				s.metricNames.gen.Load() != s.w.lastMetricGen || s.reqRefused.Load() != s.w.lastReqRefused {
				publish()
			}
		}
	}
}
