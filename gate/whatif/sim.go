package whatif

import (
	"github.com/nemo-gym/gymtrace/gate/groups"
	"hash/maphash"
	"math"
	"runtime"
	"sort"
	"sync"

	"github.com/nemo-gym/gymtrace/gate/rollouts"
	"github.com/nemo-gym/gymtrace/model"
)

// Engine computes what-if previews and join checks over snapshots. It caches
// per-fragment classification by fragment version and per-rollout results
// keyed by (rollout ID, version, the part of the spec the rollout can see),
// so after a toggle only rollouts that contain the toggled group are redone,
// and a new snapshot only costs the rollouts that changed. Not safe for
// concurrent use: one goroutine (the TUI's compute command, or a subcommand)
// owns an Engine. Reports it returns share cached slices: read-only.
type Engine struct {
	reg *groups.Registry

	in    *model.Interner // the store the caches belong to
	cls   *groups.Classifier
	gen   uint64 // bumped per Preview/Check, marks cache entries in use
	frags map[uint64]*fragInfo
	rolls map[string]*rollState
	// seenBase is the store time rollState.seen counts from, set at the
	// first check.
	seenBase int64
	jobs     map[model.SpanID]jobInfo
	jobSq    uint64 // snapshot Seq jobs was built from
	resSz    map[model.ResourceID]int

	// shapes interns the rollouts' checks (rollCheck) by hash.
	shapes map[uint64]*rollCheck
	seed   maphash.Seed

	// rf finds the rollouts by structure, with its own caches.
	rf *rollouts.Finder

	keys rollouts.Keys
	sc   scratch
	ck   checkScratch

	// cost is the last structure's cost table (Estimate), worth its
	// Worth's counts, joined the rollouts joined under each spec
	// previewed of joinedSnap (rolloutsJoined).
	cost       *costTable
	worth      *worthCache
	joined     map[groups.Set]int
	joinedSnap *model.Snapshot
	// tr is what Traces keeps; lat the last latency profiles, most
	// recent first, and latSnap the snapshot Latency reads.
	tr      traceCache
	lat     []*latState
	latSnap *model.Snapshot
	// ws is what worthBase counted of the last structure; spread each
	// fragment's requests TimingSpread read, by version.
	ws        *worthState
	spread    map[uint64]*spreadFrag
	spreadIn  *model.Interner
	spreadGen uint64
}

// NewEngine returns an engine classifying with reg.
func NewEngine(reg *groups.Registry) *Engine {
	e := &Engine{reg: reg, rf: rollouts.NewFinder(), seed: maphash.MakeSeed()}
	e.rf.Jobs = jobSpans{e}
	return e
}

// Registry returns the registry the engine classifies with.
func (e *Engine) Registry() *groups.Registry { return e.reg }

// simCacheLen is how many specs a rollout remembers results for: enough to
// toggle a group off and on again without recomputing.
const simCacheLen = 4

// fragInfo is a fragment's classification, valid for one Fragment.Version.
type fragInfo struct {
	groups  []groups.Group
	present groups.Set // groups with a span here (not Unclassified)
	gen     uint64
}

// rollState is the engine's cache for one rollout ID. The live tally
// keeps one for every rollout between its checks, and its check classifies
// rollouts but rarely: what classifying fills sits behind a pointer, nil
// until then.
type rollState struct {
	version uint64
	gen     uint64
	check   *rollCheck // shared with the rollouts of the same shape
	// times is what check reads of the rollout's times (timedCheck), nil
	// for most: behind a pointer, it keeps the state of every other
	// rollout a size class smaller.
	times *[]int64
	*rollClass
	// seen is when the rollout's spans last changed, as its check reads it
	// (Engine.lastSeen): kept across versions, 8 bytes so the state stays
	// in its size class.
	seen seenMark
}

// seenMark is a rollout's span count and, in milliseconds after the
// engine's seenBase, the store time it last changed; ms 0 is unset.
type seenMark struct {
	spans uint32
	ms    uint32
}

// rollClass is a rollout's span groups and its preview results.
type rollClass struct {
	frags    []*fragInfo
	relevant groups.Set // groups the rollout's result can depend on
	captured []GroupCount
	sims     []*rollSim // most recent first
	// shape is what the rollout's traces under a spec depend on, shared
	// by the rollouts alike in it (Engine.Traces); nil until asked.
	shape *traceShape
}

// rollSim is one rollout's preview under one masked spec.
type rollSim struct {
	mask    groups.Set
	res     RolloutResult
	roots   int        // traces of the rollout's own (not under a job)
	maxComp int        // largest of those, in spans
	jobs    []jobCount // spans hanging under each kept job span
	perRes  []resCount // kept spans per resource, for the batch overhead
}

type jobCount struct {
	job   model.SpanID
	spans int
}

type resCount struct {
	res   model.ResourceID
	spans int
}

// jobInfo is a captured gym.job span.
type jobInfo struct {
	res   model.ResourceID
	group groups.Group
	// virtual marks a job span that has not arrived yet: the missing parent
	// of the driver's calls while the run goes on.
	virtual bool
	// caller marks a span of another client's (NeMo-RL's run_rollouts) that
	// the rollouts hang under: it is in a run-level piece, which counts its
	// trace.
	caller bool
}

// scratch holds per-fragment walk state, reused across fragments.
type scratch struct {
	nk    []int32 // nearest kept ancestor-or-self, or noKept / viaJob
	cross []bool  // the path from the span up to nk crosses processes
	aio   []bool  // that crossing's caller is an aiohttp span (it injects anyway)
	from  []model.ResourceID
	comp  []int32 // kept spans: component (>= 0 own root, < 0 a job)
	sizes []int
	// carriedComps counts the components that live in another rollout's
	// trace: they split this rollout but add no trace of their own.
	carriedComps int
	pct          []int
	fa           []bool
	fb           []bool
}

// flags returns two cleared bool slices of length n, reused across calls.
func (sc *scratch) flags(n int) ([]bool, []bool) {
	if cap(sc.fa) < n {
		sc.fa, sc.fb = make([]bool, n), make([]bool, n)
	}
	sc.fa, sc.fb = sc.fa[:n], sc.fb[:n]
	clear(sc.fa)
	clear(sc.fb)
	return sc.fa, sc.fb
}

const (
	noKept int32 = -1 // no kept ancestor: a kept descendant becomes a root
	viaJob int32 = -2 // the nearest kept ancestor is the fragment's job span
	// viaCarried: the span hangs, through a carried-over context, in
	// another rollout's trace; its kept descendants are in that trace.
	viaCarried int32 = -3
)

// sync resets the caches when snap comes from another store, and refreshes
// the job index.
func (e *Engine) sync(snap *model.Snapshot) {
	if e.in != snap.Interner() || e.cls == nil {
		e.in = snap.Interner()
		e.cls = groups.NewClassifier(e.reg, e.in)
		e.frags = map[uint64]*fragInfo{}
		e.rolls = map[string]*rollState{}
		e.seenBase = 0
		e.shapes = map[uint64]*rollCheck{}
		e.resSz = map[model.ResourceID]int{}
		e.jobs = nil
		e.rf.Reset()
	}
	e.keys.Resolve(e.in)
	e.cls.Resolve()
	if e.jobs == nil || e.jobSq != snap.Seq {
		e.jobs = make(map[model.SpanID]jobInfo, len(snap.Jobs))
		for _, j := range snap.Jobs {
			fi := e.fragInfo(j)
			e.jobs[j.Spans[0].SpanID] = jobInfo{res: j.Spans[0].Resource, group: fi.groups[0]}
		}
		e.jobSq = snap.Seq
	}
}

// jobSpans records in the engine's job index the spans the structure puts
// in gym.job's place (rollouts.JobSpans).
type jobSpans struct{ e *Engine }

func (j jobSpans) VirtualJob(id model.SpanID, res model.ResourceID) {
	if _, ok := j.e.jobs[id]; !ok {
		j.e.jobs[id] = jobInfo{res: res, group: groups.Job, virtual: true}
	}
}

func (j jobSpans) CallerJob(id model.SpanID, f *model.Fragment, span int32) {
	if _, ok := j.e.jobs[id]; !ok {
		j.e.jobs[id] = jobInfo{res: f.Spans[span].Resource, group: j.e.fragInfo(f).groups[span], caller: true}
	}
}

// Structure returns snap seen as Gym makes it (rollouts.Finder), cached for
// the last snapshot. snap may be a snapshot Structure made: it is returned
// as is.
func (e *Engine) Structure(snap *model.Snapshot) *rollouts.Structure {
	if st := e.rf.Cached(snap); st != nil {
		return st
	}
	e.gen++
	e.sync(snap)
	return e.rf.Structure(snap)
}

// fragInfo returns the cached classification of f.
func (e *Engine) fragInfo(f *model.Fragment) *fragInfo {
	fi := e.frags[f.Version]
	if fi == nil || len(fi.groups) != len(f.Spans) {
		fi = &fragInfo{groups: make([]groups.Group, len(f.Spans))}
		for i := range f.Spans {
			sp := &f.Spans[i]
			var parent *model.Span
			if sp.Parent >= 0 && int(sp.Parent) < i {
				parent = &f.Spans[sp.Parent]
			}
			g := e.cls.Classify(sp, parent)
			fi.groups[i] = g
			if g != groups.Unclassified && g != groups.Ungated {
				fi.present = fi.present.With(g)
			}
		}
		e.frags[f.Version] = fi
	}
	fi.gen = e.gen
	return fi
}

// rollEntry returns the up-to-date cache entry of r, classified only when
// it already was: the join check needs no span groups but rarely, and
// classifying a million spans was a third of its cost.
func (e *Engine) rollEntry(r *model.Rollout) *rollState {
	rs := e.rolls[r.ID]
	if rs == nil || rs.version != r.Version {
		var seen seenMark
		if rs != nil {
			seen = rs.seen
		}
		rs = &rollState{version: r.Version, seen: seen}
		e.rolls[r.ID] = rs
	} else if rs.rollClass != nil {
		for i, f := range r.Fragments {
			rs.frags[i] = e.fragInfo(f)
		}
	}
	rs.gen = e.gen
	return rs
}

// rollState returns the up-to-date, classified cache entry of r.
func (e *Engine) rollState(r *model.Rollout) *rollState {
	if rs := e.rolls[r.ID]; rs == nil || rs.version != r.Version {
		// Classified at once: the state and its classification in one
		// allocation.
		x := &classedState{rollState: rollState{version: r.Version, gen: e.gen}}
		if rs != nil {
			x.seen = rs.seen
		}
		e.rolls[r.ID] = &x.rollState
		e.classifyRoll(r, &x.rollState, &x.cls)
		return &x.rollState
	}
	rs := e.rollEntry(r)
	if rs.rollClass == nil {
		e.classifyRoll(r, rs, &rollClass{})
	}
	return rs
}

// classedState is a rollout's state with room for its classification.
type classedState struct {
	rollState
	cls rollClass
}

// classifyRoll fills cls with the span groups of r's fragments, as rs's.
func (e *Engine) classifyRoll(r *model.Rollout, rs *rollState, cls *rollClass) {
	*cls = rollClass{frags: make([]*fragInfo, 0, len(r.Fragments))}
	rs.rollClass = cls
	rs.relevant = groups.Set(0).With(groups.Server).With(groups.HTTPClient)
	var counts [64]int
	for _, f := range r.Fragments {
		fi := e.fragInfo(f)
		rs.frags = append(rs.frags, fi)
		rs.relevant |= fi.present
		for _, g := range fi.groups {
			counts[g]++
		}
		if !f.Job().IsZero() {
			if j, ok := e.jobs[f.Job()]; ok {
				rs.relevant = rs.relevant.With(j.group)
			}
		}
	}
	for g, n := range counts {
		if n > 0 {
			rs.captured = append(rs.captured, GroupCount{Group: groups.Group(g), Captured: n})
		}
	}
}

// sim returns r's result under spec, from the cache when the part of spec
// the rollout can see is unchanged.
func (e *Engine) sim(snap *model.Snapshot, r *model.Rollout, rs *rollState, spec groups.Set) *rollSim {
	s, hit := rs.simFor(spec)
	if !hit {
		e.simulate(&e.sc, snap, r, rs, spec, s, nil)
	}
	return s
}

// simFor returns the cached result of the rollout under spec, most recent
// first, or, with false, a new entry in its place for simulate to fill.
func (rs *rollState) simFor(spec groups.Set) (*rollSim, bool) {
	mask := spec & rs.relevant
	for i, s := range rs.sims {
		if s.mask == mask {
			copy(rs.sims[1:i+1], rs.sims[:i])
			rs.sims[0] = s
			return s, true
		}
	}
	s := &rollSim{mask: mask}
	if len(rs.sims) < simCacheLen {
		rs.sims = append(rs.sims, nil)
	}
	copy(rs.sims[1:], rs.sims[:len(rs.sims)-1])
	rs.sims[0] = s
	return s, false
}

// simJob is one rollout simulate has to fill in.
type simJob struct {
	r  *model.Rollout
	rs *rollState
	s  *rollSim
}

// minParallelSims is how many rollouts to simulate make a second core
// worth a goroutine.
const minParallelSims = 256

// sims returns the results of rolls under spec: cached ones as they are,
// the others simulated, on two cores when there are many. A rollout's
// simulation reads only its own fragments, their classification and the
// job index (filled before), so the results are those of one core.
func (e *Engine) sims(snap *model.Snapshot, rolls []*model.Rollout, spec groups.Set) []simJob {
	out := make([]simJob, len(rolls))
	var todo []simJob
	for i, r := range rolls {
		rs := e.rollState(r)
		s, hit := rs.simFor(spec)
		out[i] = simJob{r, rs, s}
		if !hit {
			todo = append(todo, simJob{r, rs, s})
		}
	}
	if len(todo) < minParallelSims || runtime.GOMAXPROCS(0) < 2 {
		for _, j := range todo {
			e.simulate(&e.sc, snap, j.r, j.rs, spec, j.s, nil)
		}
		return out
	}
	half := len(todo) / 2
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var sc scratch
		for _, j := range todo[half:] {
			e.simulate(&sc, snap, j.r, j.rs, spec, j.s, nil)
		}
	}()
	for _, j := range todo[:half] {
		e.simulate(&e.sc, snap, j.r, j.rs, spec, j.s, nil)
	}
	wg.Wait()
	return out
}

// simulate walks every fragment of r once, in index order (a parent always
// precedes its children within a fragment), carrying for each span its
// nearest kept ancestor and whether the path to it crosses processes. When
// out is not nil it also fills the per-span view for the TUI. The walk of
// each fragment and the rollout's totals are steps of a simWalk.
func (e *Engine) simulate(sc *scratch, snap *model.Snapshot, r *model.Rollout, rs *rollState, spec groups.Set, s *rollSim, out *RolloutSim) {
	w := simWalk{e: e, snap: snap, spec: spec, s: s, hopCause: SpecCause(spec)}
	sc.sizes = sc.sizes[:0]
	sc.carriedComps = 0
	res := &s.res
	res.ID = r.ID
	res.Captured = r.Spans
	res.Fragments = len(r.Fragments)
	for fIdx, f := range r.Fragments {
		fi := rs.frags[fIdx]
		var fs *FragSim
		if out != nil {
			n := len(f.Spans)
			fs = &out.Frags[fIdx]
			*fs = FragSim{Group: fi.groups, Kept: make([]bool, n), Parent: make([]int32, n), Cut: make([]Cause, n)}
		}
		w.fragment(sc, f, fi, fs)
	}
	w.finish(sc, rs, out)
}

// simWalk is one rollout being simulated under one spec. The scratch is
// passed to each step apart: a goroutine's own stays on its stack.
type simWalk struct {
	e        *Engine
	snap     *model.Snapshot
	spec     groups.Set
	hopCause Cause // why a hop breaks, CauseNone when none does
	s        *rollSim
	// carriedComp marks the components (by index in sc.sizes) that live in
	// another rollout's trace, nil while there is none.
	carriedComp []bool
}

// fragment walks one fragment of the rollout, fi its classification,
// keeping the spans spec keeps, linking each to its nearest kept ancestor
// and cutting a new trace where the link breaks; fs, when not nil, gets
// the per-span view.
func (w *simWalk) fragment(sc *scratch, f *model.Fragment, fi *fragInfo, fs *FragSim) {
	e, snap, spec, hopCause, s := w.e, w.snap, w.spec, w.hopCause, w.s
	res := &s.res
	n := len(f.Spans)
	sc.grow(n)
	// The job span, when kept, is the top's parent in the same trace.
	jobIdx := int32(-1)
	var jobRes model.ResourceID
	if !f.Job().IsZero() {
		if j, ok := e.jobs[f.Job()]; ok && groups.Kept(j.group, spec) {
			jobRes = j.res
			jobIdx = int32(s.jobIndex(f.Job()))
		}
	}
	for i := 0; i < n; i++ {
		sp := &f.Spans[i]
		g := fi.groups[i]
		kept := groups.Kept(g, spec)
		// a: nearest kept ancestor; x: the path to it crosses processes;
		// from: the caller's process at the lowest crossing.
		var a int32
		var x, aio bool // aio: the crossing's caller is an aiohttp span
		var from model.ResourceID
		p := sp.Parent
		switch {
		case i == 0 || p < 0 || int(p) >= i:
			if i == 0 && jobIdx >= 0 {
				a, x, from = viaJob, sp.Resource != jobRes, jobRes
			} else {
				a = noKept
			}
		case sc.nk[p] == p: // the parent is kept
			a, x, from = p, isHop(sp, &f.Spans[p]), f.Spans[p].Resource
			aio = x && fi.groups[p] == groups.Ungated
		default:
			a = sc.nk[p]
			if isHop(sp, &f.Spans[p]) {
				x, from, aio = true, f.Spans[p].Resource, fi.groups[p] == groups.Ungated
			} else {
				x, from, aio = sc.cross[p], sc.from[p], sc.aio[p]
			}
		}
		if sp.Flags()&model.FlagCarried != 0 && jobIdx < 0 {
			// Grafted under the call that made it, but in the capture
			// it is in the trace its context came from; only a kept
			// job span over both keeps them one trace.
			a, x = viaCarried, false
			from = sp.Resource
			if p >= 0 && int(p) < i {
				from = f.Spans[p].Resource // the call it was grafted under
			}
		}
		if !kept {
			sc.nk[i], sc.cross[i], sc.from[i], sc.aio[i] = a, x, from, aio
			if fs != nil {
				fs.Parent[i] = -1
			}
			continue
		}
		sc.nk[i], sc.cross[i] = int32(i), false
		res.Spans++
		res.Bytes += int64(wireSize(sp))
		s.addRes(sp.Resource)
		parentIdx := int32(-1)
		switch {
		case a == noKept:
			sc.comp[i] = s.newRoot(sc)
		case a == viaCarried:
			sc.comp[i] = s.newRoot(sc)
			s.addBreakCause(snap, from, sp, CauseCarried)
			w.carriedComp = append(w.carriedComp, make([]bool, len(sc.sizes)-len(w.carriedComp))...)
			w.carriedComp[sc.comp[i]] = true
			sc.carriedComps++
			if fs != nil {
				fs.Cut[i] = CauseCarried
			}
		case x && hopCause != CauseNone && !(aio && spec.Has(groups.Server)):
			sc.comp[i] = s.newRoot(sc)
			s.addBreakCause(snap, from, sp, hopCause)
			if fs != nil {
				fs.Cut[i] = hopCause
			}
		case a == viaJob:
			sc.comp[i] = -1 - jobIdx
			s.jobs[jobIdx].spans++
		default:
			sc.comp[i] = sc.comp[a]
			parentIdx = a
		}
		if c := sc.comp[i]; c >= 0 {
			sc.sizes[c]++
		} else if a != viaJob {
			s.jobs[-1-c].spans++
		}
		if fs != nil {
			fs.Kept[i] = true
			fs.Parent[i] = parentIdx
		}
	}
}

// finish sets the rollout's totals once every fragment is walked: its
// largest trace and traces (its own and the job spans' it adds to), and
// its groups' spans kept.
func (w *simWalk) finish(sc *scratch, rs *rollState, out *RolloutSim) {
	s, spec := w.s, w.spec
	res := &s.res
	for c, n := range sc.sizes {
		if n > s.maxComp && (c >= len(w.carriedComp) || !w.carriedComp[c]) {
			s.maxComp = n
		}
	}
	s.roots = len(sc.sizes) - sc.carriedComps
	res.Traces = len(sc.sizes)
	for _, j := range s.jobs {
		if j.spans > 0 {
			res.Traces++
		}
	}
	res.Joined = res.Traces == 1
	for _, c := range rs.captured {
		k := 0
		if groups.Kept(c.Group, spec) {
			k = c.Captured
		}
		res.Groups = append(res.Groups, GroupCount{Group: c.Group, Captured: c.Captured, Kept: k})
	}
	if out != nil {
		out.Traces, out.Joined, out.Breaks = res.Traces, res.Joined, res.Breaks
	}
}

// isHop reports whether the edge from child up to parent is carried by a
// traceparent header: the processes differ, or it is an HTTP call even within
// one process (the agent calls its own /v1/responses), where the SERVER span
// has only the header to find its parent.
func isHop(child, parent *model.Span) bool {
	return child.Resource != parent.Resource || (child.Kind == model.KindServer && parent.Kind == model.KindClient)
}

func (sc *scratch) grow(n int) {
	if cap(sc.nk) < n {
		sc.nk = make([]int32, n)
		sc.cross = make([]bool, n)
		sc.aio = make([]bool, n)
		sc.from = make([]model.ResourceID, n)
		sc.comp = make([]int32, n)
	}
	sc.nk, sc.cross, sc.from, sc.comp, sc.aio = sc.nk[:n], sc.cross[:n], sc.from[:n], sc.comp[:n], sc.aio[:n]
}

func (s *rollSim) newRoot(sc *scratch) int32 {
	sc.sizes = append(sc.sizes, 0)
	return int32(len(sc.sizes) - 1)
}

func (s *rollSim) jobIndex(id model.SpanID) int {
	for i, j := range s.jobs {
		if j.job == id {
			return i
		}
	}
	s.jobs = append(s.jobs, jobCount{job: id})
	return len(s.jobs) - 1
}

func (s *rollSim) addRes(r model.ResourceID) {
	for i := range s.perRes {
		if s.perRes[i].res == r {
			s.perRes[i].spans++
			return
		}
	}
	s.perRes = append(s.perRes, resCount{res: r, spans: 1})
}

func (s *rollSim) addBreakCause(snap *model.Snapshot, from model.ResourceID, sp *model.Span, cause Cause) {
	b := Break{FromService: snap.ServiceName(from), ToService: snap.ServiceName(sp.Resource), SpanName: rollouts.DisplayName(snap.Interner(), sp), Cause: cause, Reason: bareSentence(cause)}
	for i := range s.res.Breaks {
		x := &s.res.Breaks[i]
		if x.FromService == b.FromService && x.ToService == b.ToService && x.SpanName == b.SpanName && x.Cause == b.Cause {
			x.Count++
			return
		}
	}
	b.Count = 1
	s.res.Breaks = append(s.res.Breaks, b)
}

// bareSentences holds each cause's sentence without arguments, as a
// preview's breaks say it: formatted once, not once per break.
var bareSentences = func() (out [numCauses]string) {
	for c := range out {
		out[c] = Cause(c).Sentence()
	}
	return out
}()

func bareSentence(c Cause) string {
	if c < numCauses {
		return bareSentences[c]
	}
	return c.Sentence()
}

// wireSize is the span's encoded size; when the decoder could not tell, a
// rough estimate from its name and packed attributes.
func wireSize(sp *model.Span) uint32 {
	if sp.WireSize() > 0 {
		return sp.WireSize()
	}
	return 80 + uint32(sp.Attrs.Size())
}

// SimulateRollout shows one rollout's tree under spec (for the TUI's tree).
func (e *Engine) SimulateRollout(snap *model.Snapshot, r *model.Rollout, spec groups.Set) *RolloutSim {
	e.sync(snap)
	rs := e.rollState(r)
	out := &RolloutSim{Frags: make([]FragSim, len(r.Fragments))}
	e.simulate(&e.sc, snap, r, rs, spec, &rollSim{mask: spec & rs.relevant}, out)
	return out
}

// SpanGroups returns the group of each span of r, per fragment (parallel to
// r.Fragments and their Spans): what SimulateRollout's Group lists hold,
// without simulating. The lists are the engine's cache: read them only.
func (e *Engine) SpanGroups(snap *model.Snapshot, r *model.Rollout) [][]groups.Group {
	e.sync(snap)
	rs := e.rollState(r)
	out := make([][]groups.Group, len(rs.frags))
	for i, fi := range rs.frags {
		out[i] = fi.groups
	}
	return out
}

// OTLP batching assumed by the byte estimate: the SDK's BatchSpanProcessor
// exports at most 512 spans per request and at least every 5 s.
const (
	batchSpans   = 512
	batchSeconds = 5
	// scopeOverhead is a ScopeSpans header with a short scope name and
	// version plus the ResourceSpans framing.
	scopeOverhead = 48
)

// resourceSize estimates the encoded size of a resource's attributes.
func (e *Engine) resourceSize(snap *model.Snapshot, id model.ResourceID) int {
	if n, ok := e.resSz[id]; ok {
		return n
	}
	n := 0
	snap.Resource(id).Attrs.Each(e.in, func(k string, v model.Value) bool {
		// KeyValue tag+len, key tag+len+bytes, AnyValue tag+len, value.
		n += 8 + len(k) + len(v.String())
		return true
	})
	e.resSz[id] = n
	return n
}

// Preview computes what spec would produce from snap. Its steps add the
// job spans, the rollouts and the rest of the capture to a tally, then
// count the job spans' traces, the batch overhead, the rollouts' sizes and
// the groups.
func (e *Engine) Preview(snap *model.Snapshot, spec groups.Set) *Report {
	st := e.Structure(snap)
	snap = st.Snap
	e.gen++
	e.sync(snap)
	rep := &Report{Spec: spec, Structure: st}
	rep.Input = InputSummary{Spans: snap.Stats.Stored, Rollouts: len(snap.Rollouts), Traces: snap.Stats.Traces}
	// The tally is made here and holds nothing of the report, so that the
	// compiler keeps its maps on the stack when small: a live view
	// previews every snapshot.
	t := tally{perRes: map[model.ResourceID]int{}, jobSpans: map[model.SpanID]int{}, start: math.MaxInt64, end: math.MinInt64}
	rep.PerRollout = make([]RolloutResult, 0, len(snap.Rollouts))
	t.addJobs(e, snap, spec, &rep.Result)
	var others []*model.Rollout
	st.ForOthers(func(r *model.Rollout) { others = append(others, r) })
	all := e.sims(snap, append(append(make([]*model.Rollout, 0, len(snap.Rollouts)+len(others)), snap.Rollouts...), others...), spec)
	for i, r := range snap.Rollouts {
		if r.Spans > 0 {
			t.start, t.end = min(t.start, r.Start), max(t.end, r.End)
		}
		s := all[i].s
		t.add(all[i].rs, s, &rep.Result)
		rep.PerRollout = append(rep.PerRollout, s.res)
		switch {
		case s.res.Traces == 1:
			rep.Result.RolloutsJoined++
		case s.res.Traces > 1:
			rep.Result.RolloutsSplit++
		}
	}
	// Run-level traffic and unattributed fragments count in spans, bytes and
	// traces, never in the per-rollout figures.
	for i, r := range others {
		t.start, t.end = min(t.start, r.Start), max(t.end, r.End)
		k := len(snap.Rollouts) + i
		t.add(all[k].rs, all[k].s, &rep.Result)
	}
	e.addJobTraces(st, &rep.Result, t.jobSpans)
	if t.end > t.start {
		rep.WallSeconds = float64(t.end-t.start) / 1e9
	}
	e.addBatchOverhead(snap, rep, t.perRes)
	rep.Result.Dropped = rep.Input.Spans - rep.Result.Spans
	e.addSizes(rep)
	if rep.WallSeconds > 0 {
		rep.Result.SpansPerSecond = float64(rep.Result.Spans) / rep.WallSeconds
		rep.Result.BytesPerSecond = float64(rep.Result.Bytes) / rep.WallSeconds
	}
	e.addGroups(snap, spec, rep, &t.captured)
	e.joinedOf(snap)[spec] = rep.Result.RolloutsJoined
	e.evict()
	return rep
}

// tally is what Preview adds up over the capture besides the report's own
// sums.
type tally struct {
	captured   [64]int                  // spans captured per group
	perRes     map[model.ResourceID]int // kept spans per process, for the batch overhead
	jobSpans   map[model.SpanID]int     // kept spans in each kept job span's trace
	start, end int64                    // the capture's first start and last end
}

// addJobs adds the captured job spans, those spec keeps to res.
func (t *tally) addJobs(e *Engine, snap *model.Snapshot, spec groups.Set, res *Result) {
	for _, j := range snap.Jobs {
		sp := &j.Spans[0]
		t.start, t.end = min(t.start, sp.Start), max(t.end, sp.End)
		ji := e.jobs[sp.SpanID]
		t.captured[ji.group]++
		if spec.Has(ji.group) {
			t.jobSpans[sp.SpanID] = 1
			res.Spans++
			res.Bytes += int64(wireSize(sp))
			t.perRes[sp.Resource]++
		}
	}
}

// add adds one simulated rollout (or run-level piece, or unattributed
// fragment) to the tally and to res.
func (t *tally) add(rs *rollState, s *rollSim, res *Result) {
	for _, c := range rs.captured {
		t.captured[c.Group] += c.Captured
	}
	res.Spans += s.res.Spans
	res.Bytes += s.res.Bytes
	res.Traces += s.roots
	res.LargestTrace = max(res.LargestTrace, s.maxComp)
	for _, j := range s.jobs {
		t.jobSpans[j.job] += j.spans
	}
	for _, rc := range s.perRes {
		t.perRes[rc.res] += rc.spans
	}
}

// addJobTraces adds a trace for each kept job span with spans in it. A
// caller's span the rollouts hang under is in a run-level piece that
// counted the trace already: its rollouts add to that piece's trace.
func (e *Engine) addJobTraces(st *rollouts.Structure, res *Result, jobSpans map[model.SpanID]int) {
	callerTrace := map[model.SpanID]int{} // caller span -> piece
	var pieceSpans []int
	for _, p := range st.Run {
		if p.Kind != rollouts.RunCaller {
			continue
		}
		for i := range p.Frag.Spans {
			callerTrace[p.Frag.Spans[i].SpanID] = len(pieceSpans)
		}
		pieceSpans = append(pieceSpans, len(p.Frag.Spans))
	}
	for id, n := range jobSpans {
		if k, ok := callerTrace[id]; ok && e.jobs[id].caller {
			pieceSpans[k] += n
			continue
		}
		res.Traces++
		res.LargestTrace = max(res.LargestTrace, n)
	}
	for _, n := range pieceSpans {
		res.LargestTrace = max(res.LargestTrace, n)
	}
}

// addBatchOverhead adds the bytes every export request repeats, the
// resource and scope, for the batches each process's kept spans take.
func (e *Engine) addBatchOverhead(snap *model.Snapshot, rep *Report, perRes map[model.ResourceID]int) {
	for id, n := range perRes {
		batches := (n + batchSpans - 1) / batchSpans
		if t := int(math.Ceil(rep.WallSeconds / batchSeconds)); t > batches {
			batches = min(t, n)
		}
		rep.Result.Bytes += int64(batches * (e.resourceSize(snap, id) + scopeOverhead))
	}
}

// addSizes sets the median, 99th percentile and largest of the rollouts'
// kept spans.
func (e *Engine) addSizes(rep *Report) {
	pct := e.sc.pct[:0]
	for i := range rep.PerRollout {
		pct = append(pct, rep.PerRollout[i].Spans)
	}
	sort.Ints(pct)
	rep.Result.P50, rep.Result.P99 = percentile(pct, 50), percentile(pct, 99)
	if len(pct) > 0 {
		rep.Result.Max = pct[len(pct)-1]
	}
	e.sc.pct = pct
}

// addGroups lists each group's spans captured and kept, and the groups
// spec asks for that the capture lacks: those that emit spans, and those
// that emit none, with the metrics they gate.
func (e *Engine) addGroups(snap *model.Snapshot, spec groups.Set, rep *Report, captured *[64]int) {
	for i, info := range e.reg.Table() {
		g := groups.Group(i)
		gc := GroupCount{Group: g, Captured: captured[g]}
		if spec.Has(g) {
			gc.Kept = gc.Captured
		}
		rep.PerGroup = append(rep.PerGroup, gc)
		if gc.Captured > 0 {
			rep.Input.Captured = rep.Input.Captured.With(g)
		}
		if spec.Has(g) && gc.Captured == 0 {
			if info.EmitsSpans {
				rep.NotInCapture = append(rep.NotInCapture, g)
			} else {
				rep.NoSpans = append(rep.NoSpans, g)
				if n := snap.Metrics[info.Metric]; info.Metric != "" && n > 0 {
					if rep.MetricsSeen == nil {
						rep.MetricsSeen = map[groups.Group]int64{}
					}
					rep.MetricsSeen[g] = n
				}
			}
		}
	}
	if n := captured[groups.Ungated]; n > 0 {
		rep.PerGroup = append(rep.PerGroup, GroupCount{Group: groups.Ungated, Captured: n, Kept: n})
	}
	rep.Input.Unclassified = captured[groups.Unclassified]
	rep.PerGroup = append(rep.PerGroup, GroupCount{Group: groups.Unclassified, Captured: captured[groups.Unclassified], Kept: captured[groups.Unclassified]})
}

// percentile returns the nearest-rank p-th percentile of sorted xs.
func percentile(xs []int, p int) int {
	if len(xs) == 0 {
		return 0
	}
	i := (p*len(xs)+99)/100 - 1
	return xs[max(0, min(i, len(xs)-1))]
}

// evict forgets rollouts and fragments the last snapshot no longer holds.
func (e *Engine) evict() {
	for id, rs := range e.rolls {
		if rs.gen != e.gen {
			delete(e.rolls, id)
		}
	}
	for v, fi := range e.frags {
		if fi.gen != e.gen {
			delete(e.frags, v)
		}
	}
}
