package rollouts

import "github.com/nemo-gym/gymtrace/model"

// Finder finds the rollouts of snapshots by structure. It caches units per
// fragment version (a new snapshot only cuts the fragments that changed),
// the last structure, and its rollouts by id (reused while unchanged). Not
// safe for concurrent use: one goroutine owns a Finder.
type Finder struct {
	in  *model.Interner // the store the caches belong to
	gen uint64          // bumped per structure built, marks units in use

	// units caches each fragment's units, by their first, at the
	// fragment's store slot (Fragment.Slot) with the version they were
	// cut from: 16 bytes a fragment where a map took ~35. Fragments of no
	// slot (made outside a store) are cached in loose. multi holds all the
	// units of fragments of more than one (flagMulti), by version.
	units     []unitSlot
	loose     map[uint64]*unitInfo
	nunits    int // entries in units and loose
	multi     map[uint64][]unitInfo
	st        *Structure
	rollCache map[string]*cachedRoll
	driver    map[model.ResourceID]bool
	// keepCalls: the unit cache keeps dangling calls, since a structure
	// matched some (see unitInfo.ncalls).
	keepCalls bool

	keys Keys
	sc   scratch
	// carried marks, while a structure is assembled, the leaked units whose
	// carried context came from another rollout.
	carried []bool
	// rec, while a rollout is built, collects the JobSpans calls made.
	rec *[]jobCall

	// Jobs, when set, is told of the spans a structure puts in gym.job's
	// place.
	Jobs JobSpans
}

// JobSpans is told of the spans a structure puts in gym.job's place: the
// parent of every rollout it holds in one trace.
type JobSpans interface {
	// VirtualJob is a gym.job span assumed before it arrived: the missing
	// parent id of a driver's call at the top of a fragment, and the
	// driver's process.
	VirtualJob(id model.SpanID, res model.ResourceID)
	// CallerJob is the span f.Spans[span] (id) of a client that is not Gym's
	// driver (NeMo-RL's run_rollouts), which the rollouts cut out under it
	// hang under.
	CallerJob(id model.SpanID, f *model.Fragment, span int32)
}

// NewFinder returns a finder with empty caches.
func NewFinder() *Finder { return &Finder{} }

// Reset forgets every cache: the next snapshot comes from another store.
func (e *Finder) Reset() {
	e.in = nil
	e.units, e.nunits = nil, 0
	e.loose = map[uint64]*unitInfo{}
	e.multi = map[uint64][]unitInfo{}
	e.rollCache = map[string]*cachedRoll{}
	e.driver = map[model.ResourceID]bool{}
	e.st = nil
	e.keepCalls = false
}

// Cached returns the structure of snap when it is the last one built (snap
// may be its source or the snapshot it made), else nil.
func (e *Finder) Cached(snap *model.Snapshot) *Structure {
	if e.st != nil && (e.st.src == snap || e.st.Snap == snap) {
		return e.st
	}
	return nil
}

// sync resets the caches when snap comes from another store.
func (e *Finder) sync(snap *model.Snapshot) {
	if e.in != snap.Interner() || e.loose == nil {
		e.Reset()
		e.in = snap.Interner()
	}
	e.keys.Resolve(e.in)
}

// scratch holds per-fragment walk state, reused across fragments.
type scratch struct {
	unitOf []int32
	depth  []uint8
	called []bool
	served []bool // the span or an ancestor is a request span: inside a server
	leaked []bool
	units  []unitBuild // cutUnits' units before they are copied out
	calls  []unitCall  // and its dangling calls
	per    []int
}

// perUnit returns n cleared counters.
func (sc *scratch) perUnit(n int) []int {
	if cap(sc.per) < n {
		sc.per = make([]int, n)
	}
	sc.per = sc.per[:n]
	clear(sc.per)
	return sc.per
}

// unitWalk returns fragUnits' per-span slices for n spans, depth and called
// cleared (the walk sets every unitOf).
func (sc *scratch) unitWalk(n int) ([]int32, []uint8, []bool) {
	if cap(sc.unitOf) < n {
		sc.unitOf, sc.depth, sc.called, sc.served = make([]int32, n), make([]uint8, n), make([]bool, n), make([]bool, n)
	}
	sc.unitOf, sc.depth, sc.called, sc.served = sc.unitOf[:n], sc.depth[:n], sc.called[:n], sc.served[:n]
	clear(sc.depth)
	clear(sc.called)
	clear(sc.served)
	return sc.unitOf, sc.depth, sc.called
}
