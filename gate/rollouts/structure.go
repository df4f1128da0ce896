package rollouts

import (
	"encoding/hex"
	"hash/maphash"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unique"
	"unsafe"

	"github.com/nemo-gym/gymtrace/model"
)

// A rollout, in Gym, is the agent's POST /run request and everything it causes
// across processes. By default no span names its rollout, so rollouts are
// found by structure: the store's fragments (connected pieces of one trace)
// are cut into units at request spans that a context carry-over parented to
// an unrelated span, each unit is classified (a rollout's, run-level traffic,
// or an orphan cut off by a broken hop), and orphans are attributed to the
// rollout whose CLIENT span called them.

// RunKind says what run-level traffic a piece is.
type RunKind uint8

// Run-level traffic: spans of the run that are no rollout's.
const (
	RunProbe     RunKind = iota + 1 // a health probe: a root GET on a liveness path
	RunAggregate                    // the /aggregate_metrics calls at the end of a run
	RunJob                          // gym.job, around the whole run
	RunStartup                      // start-up trees (gym.startup*, gym.server.startup*)
	RunDriver                       // another call of the driver's, outside every rollout
	RunCaller                       // spans above the rollouts of a client that is not Gym's driver (NeMo-RL's training loop)
)

// String names the kind as the TUI and the JSON output show it.
func (k RunKind) String() string {
	switch k {
	case RunProbe:
		return "health_probe"
	case RunAggregate:
		return "aggregate_metrics"
	case RunJob:
		return "job"
	case RunStartup:
		return "startup"
	case RunDriver:
		return "driver_call"
	case RunCaller:
		return "caller"
	}
	return "other"
}

// RunPiece is one unit of run-level traffic.
type RunPiece struct {
	Kind RunKind
	Frag *model.Fragment
}

// Leak is a request span that a reused keep-alive connection created
// INTERNAL under another request's span.
type Leak struct {
	Service string // the process that served the request
	Name    string // the request span's name
	// Rollout is the rollout the request belongs to ("" when it could not be
	// attributed); Host the rollout whose span it was parented to.
	Rollout, Host string
}

// Suspect is an unattributed fragment a rollout may own: its process and
// its top span's name.
type Suspect struct {
	Service, Span string
}

// Structure is a snapshot seen as Gym makes it: its rollouts, its run-level
// traffic and what could not be attributed. Snap is the snapshot with its
// Rollouts replaced by the structural ones (every other field shared), so
// everything that reads rollouts from a snapshot reads these.
type Structure struct {
	// Rollouts are the capture's rollouts, found by structure, oldest
	// first: the one list every face counts.
	Rollouts []*model.Rollout
	// Snap is the snapshot seen through Rollouts (its rollouts swapped,
	// everything else shared), for code that walks a snapshot.
	Snap         *model.Snapshot
	Run          []RunPiece
	Unattributed []*model.Fragment
	Leaks        []Leak
	// Attributed counts fragments joined to a rollout across a broken hop.
	Attributed int
	// Suspect holds the rollouts an unattributed fragment may belong to:
	// split, as far as the capture can tell.
	Suspect map[string][]Suspect // rollout id -> those fragments
	// RunSpans and RunTraces count run-level traffic.
	RunSpans, RunTraces int
	// RolloutTraces counts the distinct trace ids of rollout spans.
	RolloutTraces int

	src          *model.Snapshot
	others       []*model.Rollout // run-level pieces and unattributed, for ForOthers
	apart        []*model.Rollout // the same, grouped for views
	suspectUnits [][2]int         // (union-find root of a rollout, unattributed unit)
}

// runKinds returns the run-level spans per kind.
func (s *Structure) runKinds() map[RunKind]int {
	out := map[RunKind]int{}
	for _, p := range s.Run {
		out[p.Kind] += len(p.Frag.Spans)
	}
	return out
}

// RunKindSpans returns the spans of run-level traffic per kind name.
func (s *Structure) RunKindSpans() map[string]int {
	out := map[string]int{}
	for k, n := range s.runKinds() {
		out[k.String()] = n
	}
	return out
}

type unitClass uint8

const (
	classOrphan unitClass = iota
	classRollout
	classRun
)

// unitBuild is what one fragment's walk learns about one of its units, as
// cutUnits gathers it; the cache keeps it as a unitInfo.
type unitBuild struct {
	root  int32   // index of the unit's top span in the fragment
	idx   []int32 // the unit's spans in index order; nil: the whole fragment
	class unitClass
	run   RunKind
	leak  bool // the top is a request span carried over onto another's context
	// cut: the top is a call to /run made under another client's own spans
	// (NeMo-RL's run_rollouts): a rollout starts there, whatever is above.
	// caller: units were cut out of this one that way.
	cut, caller bool
	idSpan      int32 // the span that names a synthetic rollout id, -1 if none
	idRank      int8  // how good idSpan is: 3 SERVER /run, 2 gym.rollout, 1 CLIENT /run
	rid         string
	path        string // the top's request path, when it is a request span
	host        string // host:port the top served, when it says
	start       int64
	end         int64
	clients     []danglingClient // kept only with Finder.keepCalls
	ncalls      int32            // dangling CLIENT spans, kept or not
	runCall     bool             // one of them calls /run
	servers     []hostRes        // host:port served, from request spans
	errors      int32
	spans       int32
	calls       bool // has CLIENT spans other than calls to /run
	// hostUnit is, for a leaked top, the unit of the span it was parented to.
	hostUnit int32
}

// unitInfo is a unit as the cache keeps it, one per unit of every fragment
// held: what every unit has inline, the rest (an id, dangling calls, hosts
// served, the cut-out span lists) behind more, nil for many units.
type unitInfo struct {
	start, end int64
	// top is where the unit was served (see unitTop): a handle, as a
	// fleet's units repeat a few, and most units then need no more.
	top    unique.Handle[unitTop]
	more   *unitMore
	idSpan int32 // the span that names a synthetic rollout id, -1 if none
	spans  int32
	// ncalls counts the unit's dangling CLIENT spans, up to 65535 (it sizes
	// a list, and says whether there is any). The calls themselves
	// (more.clients) are kept only once a structure of the Finder matched
	// one (Finder.keepCalls): a capture of orphans holds hundreds of
	// thousands, and nothing there needs them.
	ncalls uint16
	class  unitClass
	run    RunKind
	idRank int8 // how good idSpan is: 3 SERVER /run, 2 gym.rollout, 1 CLIENT /run
	flags  unitFlags
	// The cache's own, in the first unit of a fragment (see fragUnits): the
	// low byte of the last structure's gen that used it.
	mark uint8
}

// unitFlags are a unitInfo's booleans, one bit each: the record is 48
// bytes, a size class, with its top span and error count in more when not
// 0 (units past a fragment's first, which have more anyway, and units with
// errors).
type unitFlags uint8

const (
	flagLeak    unitFlags = 1 << iota // the top is a request span carried over onto another's context
	flagCut                           // the top is a call to /run cut out under another client's spans
	flagCalls                         // has CLIENT spans other than calls to /run
	flagRunCall                       // a dangling CLIENT span calls /run
	flagMulti                         // the cache's: the fragment has more units, kept in Finder.multi
)

func (u *unitInfo) leak() bool    { return u.flags&flagLeak != 0 }
func (u *unitInfo) cut() bool     { return u.flags&flagCut != 0 }
func (u *unitInfo) calls() bool   { return u.flags&flagCalls != 0 }
func (u *unitInfo) runCall() bool { return u.flags&flagRunCall != 0 }
func (u *unitInfo) multi() bool   { return u.flags&flagMulti != 0 }

// root returns the index of the unit's top span in the fragment.
func (u *unitInfo) root() int32 { return u.extra().root }

// errors returns the unit's spans with status ERROR.
func (u *unitInfo) errors() int32 { return u.extra().errors }

// unitTop is what a unit's top says of where it was served, and the first
// host:port its request spans served.
type unitTop struct {
	path  string // the top's request path, when it is a request span
	host  string // host:port the top served, when it says
	serve hostRes
}

// where returns u's top, zero when it says nothing.
func (u *unitInfo) where() unitTop {
	if u.top == noTop {
		return unitTop{}
	}
	return u.top.Value()
}

var noTop unique.Handle[unitTop]

// eachServer calls fn with each host:port the unit's request spans served,
// in the order they were met.
func (u *unitInfo) eachServer(fn func(hostRes)) {
	if t := u.where(); t.serve.host != "" {
		fn(t.serve)
	}
	for _, h := range u.extra().servers {
		fn(h)
	}
}

// unitMore holds the fields few units have.
type unitMore struct {
	rid string // the rollout id its spans name
	// idx is the unit's spans in index order, nil for the whole fragment:
	// a pointer, as few units have one, so that a unitMore is 96 bytes.
	idx      *[]int32
	clients  []danglingClient
	servers  []hostRes // host:port served past the first (unitTop.serve)
	hostUnit int32     // for a leaked top, the unit of the span it was parented to
	root     int32     // index of the unit's top span in the fragment
	errors   int32
	caller   bool // units were cut out of this one at calls to /run
}

// spanIdx returns the unit's spans in index order, nil for the whole
// fragment.
func (m *unitMore) spanIdx() []int32 {
	if m.idx == nil {
		return nil
	}
	return *m.idx
}

// noMore is the rare fields of a unit that has none. Read only.
var noMore = unitMore{hostUnit: -1}

// extra returns u's rare fields, noMore when it has none; never written
// through.
func (u *unitInfo) extra() *unitMore {
	if u.more == nil {
		return &noMore
	}
	return u.more
}

// pack returns b as the cache keeps it.
func (b *unitBuild) pack() unitInfo {
	u := unitInfo{start: b.start, end: b.end, idSpan: b.idSpan, spans: b.spans, ncalls: uint16(min(b.ncalls, math.MaxUint16)),
		class: b.class, run: b.run, idRank: b.idRank}
	if b.leak {
		u.flags |= flagLeak
	}
	if b.cut {
		u.flags |= flagCut
	}
	if b.calls {
		u.flags |= flagCalls
	}
	if b.runCall {
		u.flags |= flagRunCall
	}
	t := unitTop{path: b.path, host: b.host}
	var servers []hostRes
	if len(b.servers) > 0 {
		t.serve = b.servers[0]
		if len(b.servers) > 1 {
			servers = slices.Clone(b.servers[1:])
		}
	}
	if t != (unitTop{}) {
		u.top = unique.Make(t)
	}
	if b.rid != "" || b.idx != nil || len(b.clients) > 0 || len(servers) > 0 || b.hostUnit >= 0 || b.caller || b.root != 0 || b.errors != 0 {
		u.more = &unitMore{rid: b.rid, clients: b.clients, servers: servers, hostUnit: b.hostUnit, root: b.root, errors: b.errors, caller: b.caller}
		if b.idx != nil {
			idx := b.idx // b is scratch
			u.more.idx = &idx
		}
	}
	return u
}

type hostRes struct {
	host string
	res  model.ResourceID
}

// danglingClient is a CLIENT span with no callee span under it. The cache
// keeps one per such span held: its route is a handle to one copy per
// distinct host and path, 32 bytes a call and not 56 (calls repeat a few
// routes, the model's and the resources').
type danglingClient struct {
	span       int32
	route      unique.Handle[callRoute]
	start, end int64
}

// callRoute is where a call went: host:port and path, as spanRoute reads them.
type callRoute struct{ host, path string }

func (c *danglingClient) host() string { return c.route.Value().host }
func (c *danglingClient) path() string { return c.route.Value().path }

// newFragUnits packs one fragment's units in an array of their number:
// most fragments are one unit, a 48-byte allocation the cache points at
// (Finder.units), with no header of its own.
func newFragUnits(units []unitBuild, gen uint64) []unitInfo {
	all := make([]unitInfo, len(units))
	for i := range units {
		all[i] = units[i].pack()
	}
	all[0].mark = uint8(gen)
	if len(all) > 1 {
		all[0].flags |= flagMulti
	}
	return all
}

// unitSlot is the unit cache's entry for one store slot.
type unitSlot struct {
	v uint64 // the version of the fragment the units were cut from
	u *unitInfo
}

// keepUnits caches the units of f.
func (e *Finder) keepUnits(f *model.Fragment, all []unitInfo) {
	if s := int(f.Slot); s > 0 {
		if s >= len(e.units) {
			e.units = slices.Grow(e.units, s+1-len(e.units))[:s+1]
		}
		us := &e.units[s]
		if us.u != nil {
			e.nunits--
			delete(e.multi, us.v)
		}
		*us = unitSlot{v: f.Version, u: &all[0]}
	} else {
		if _, ok := e.loose[f.Version]; ok {
			e.nunits--
		}
		e.loose[f.Version] = &all[0]
	}
	e.nunits++
	if all[0].multi() {
		e.multi[f.Version] = all
	}
}

// unitsOf returns the cached first unit of f, nil when none is.
func (e *Finder) unitsOf(f *model.Fragment) *unitInfo {
	if s := int(f.Slot); s > 0 {
		if s < len(e.units) && e.units[s].v == f.Version {
			return e.units[s].u
		}
		return nil
	}
	return e.loose[f.Version]
}

// cachedUnits returns the cached units of f, nil when none are, and marks
// them used by this structure.
func (e *Finder) cachedUnits(f *model.Fragment) []unitInfo {
	u := e.unitsOf(f)
	if u == nil {
		return nil
	}
	u.mark = uint8(e.gen)
	if u.multi() {
		return e.multi[f.Version]
	}
	return unsafe.Slice(u, 1)
}

// maxAnchorDepth bounds where a rollout's anchor may sit below its unit's
// top: the driver's CLIENT call, an aiohttp CLIENT span, POST /run, gym.rollout.
const maxAnchorDepth = 3

// fragUnits cuts f into units and classifies each; cached by version.
func (e *Finder) fragUnits(f *model.Fragment, job bool) []unitInfo {
	if all := e.cachedUnits(f); all != nil {
		return all
	}
	all := cutUnits(&e.keys, &e.sc, f, job, e.gen, e.keepCalls)
	e.keepUnits(f, all)
	return all
}

// keepAllCalls makes the cache keep dangling calls from now on, and cuts
// again the fragments of us whose units have calls not kept, pointing us
// at the new units: a structure is about to match calls.
func (e *Finder) keepAllCalls(us []gunit) {
	if e.keepCalls {
		return
	}
	e.keepCalls = true
	for i := 0; i < len(us); {
		f, n, calls := us[i].f, 1, us[i].info.ncalls > 0
		for i+n < len(us) && us[i+n].f == f && e.unitIndex(&us[i+n]) > 0 {
			calls = calls || us[i+n].info.ncalls > 0
			n++
		}
		if calls {
			all := cutUnits(&e.keys, &e.sc, f, us[i].roll() < 0, e.gen, true)
			e.keepUnits(f, all)
			for k := range n {
				us[i+k].info = &all[k]
			}
		}
		i += n
	}
}

// cutUnits is fragUnits' work: a function of the fragment alone (k and sc
// are caches and scratch), so fragments may be cut on several cores. The
// units are gathered in scratch and packed at their final size: a cache of
// every fragment's units holds no slack. Dangling calls are counted, and
// kept only with keepCalls.
func cutUnits(k *Keys, sc *scratch, f *model.Fragment, job bool, gen uint64, keepCalls bool) []unitInfo {
	in := k.in
	n := len(f.Spans)
	// Per-span walk state, reused across fragments: only units are kept.
	unitOf, depth, called := sc.unitWalk(n) // called: has a CLIENT, SERVER or request child
	served := sc.served
	// Units and dangling calls are gathered in scratch and copied out at
	// their final size: a cache of every fragment's units holds no slack.
	units := sc.units[:0]
	calls := sc.calls[:0]
	leaked := sc.leaked[:0]
	for i := 0; i < n; i++ {
		sp := &f.Spans[i]
		p := sp.Parent
		var parent *model.Span
		if i > 0 && p >= 0 && int(p) < i {
			parent = &f.Spans[p]
		}
		lk, cut := false, false
		if sp.Kind == model.KindInternal {
			lk = k.isLeaked(sp, parent)
		}
		if parent != nil {
			served[i] = served[p] || sp.Kind == model.KindServer
			cut = !lk && k.callerCut(sp, parent, served[p])
		} else {
			served[i] = sp.Kind == model.KindServer || lk
		}
		if parent == nil || lk || cut {
			unitOf[i] = int32(len(units))
			hu := int32(-1)
			if parent != nil {
				hu = unitOf[p]
			}
			if cut {
				units[hu].caller = true
			}
			units = append(units, unitBuild{root: int32(i), idSpan: -1, start: sp.Start, end: sp.End, leak: lk && parent != nil, cut: cut, hostUnit: hu})
			leaked = append(leaked, lk)
		} else {
			unitOf[i] = unitOf[p]
			if depth[p] < 255 {
				depth[i] = depth[p] + 1
			}
			if sp.Kind == model.KindClient || sp.Kind == model.KindServer {
				called[p] = true
			}
		}
		if lk && parent != nil {
			called[p] = true
		}
		u := &units[unitOf[i]]
		u.start, u.end = min(u.start, sp.Start), max(u.end, sp.End)
		u.spans++
		if sp.Status == model.StatusError {
			u.errors++
		}
	}
	if len(units) > 1 {
		for i := range units {
			units[i].idx = make([]int32, 0, units[i].spans)
		}
		for i := 0; i < n; i++ {
			u := &units[unitOf[i]]
			u.idx = append(u.idx, int32(i))
		}
	}
	for i := 0; i < n; i++ {
		sp := &f.Spans[i]
		u := &units[unitOf[i]]
		d := depth[i]
		switch sp.Kind {
		case model.KindClient:
			if called[i] && (d > maxAnchorDepth || (u.idRank >= 1 && u.calls)) {
				// Answered, and nothing its attributes could change: too
				// deep to start a rollout, or in a unit already anchored
				// and known to call out.
				u.calls = true
				break
			}
			// spanRoute's path of a CLIENT span, with the host from the
			// same URL: one walk of the attributes instead of three.
			url, ok := k.url(sp.Attrs)
			host, path := SplitURL(url)
			if path = stripRolloutPrefix(path); !ok {
				path = ""
			}
			if !called[i] {
				u.ncalls++
				u.runCall = u.runCall || path == "/run"
				if keepCalls {
					calls = append(calls, unitCall{unit: unitOf[i], c: danglingClient{span: int32(i), route: unique.Make(callRoute{host, path}), start: sp.Start, end: sp.End}})
				}
			}
			if path == "/run" {
				if d <= maxAnchorDepth && u.idRank < 1 {
					u.idSpan, u.idRank = int32(i), 1
				}
			} else {
				u.calls = true
			}
		case model.KindServer, model.KindInternal:
			if sp.Kind == model.KindServer || (int32(i) == u.root && u.leak) || (sp.Kind == model.KindInternal && d == 0 && k.isRequestSpan(sp)) {
				// One host per process is enough: read it once per unit.
				if !slices.ContainsFunc(u.servers, func(h hostRes) bool { return h.res == sp.Resource }) {
					if h := k.hostOf(sp); h != "" {
						u.servers = append(u.servers, hostRes{host: h, res: sp.Resource})
					}
				}
				if d <= maxAnchorDepth && u.idRank < 3 {
					if _, path := k.spanRoute(sp); path == "/run" {
						u.idSpan, u.idRank = int32(i), 3
					}
				}
			} else if d <= maxAnchorDepth && u.idRank < 2 && k.name(sp.Name)&nameRollout != 0 {
				u.idSpan, u.idRank = int32(i), 2
			}
		}
		// Rollout ids sit on CLIENT and semantic spans (and in a top's
		// path): the request spans' long attribute lists are skipped.
		if u.rid == "" && d <= maxAnchorDepth+1 && !sp.Attrs.Empty() &&
			(d == 0 || sp.Kind == model.KindClient || k.name(sp.Name)&nameGym != 0) {
			u.rid = k.rolloutIDOf(sp)
		}
	}
	for ui := range units {
		u := &units[ui]
		top := &f.Spans[u.root]
		name := in.Str(top.Name)
		if top.Kind == model.KindServer || leaked[ui] || (top.Kind == model.KindInternal && k.isRequestSpan(top)) {
			_, u.path = k.spanRoute(top)
			u.host = k.hostOf(top)
		} else if top.Kind == model.KindClient {
			_, u.path = k.spanRoute(top)
		} else {
			u.path = semanticRoute[name]
		}
		switch {
		case job || name == model.JobSpanName:
			u.class, u.run = classRun, RunJob
		case strings.HasPrefix(name, "gym.startup") || strings.HasPrefix(name, "gym.server.startup"):
			u.class, u.run = classRun, RunStartup
		case u.caller && u.idRank == 0:
			u.class, u.run = classRun, RunCaller
		case u.idRank > 0:
			u.class = classRollout
		case u.path == "/aggregate_metrics" || strings.HasSuffix(u.path, "/aggregate_metrics"):
			u.class, u.run = classRun, RunAggregate
		case f.ParentID(int(u.root)).IsZero() && isLiveness(u.path) && (top.Kind == model.KindServer || k.isRequestSpan(top)) && strings.HasPrefix(name, "GET"):
			u.class, u.run = classRun, RunProbe
		case u.root == 0 && f.UnderJob:
			// A call of the driver's directly under gym.job that starts no
			// rollout: run-level.
			u.class, u.run = classRun, RunDriver
		}
	}
	sc.leaked = leaked
	if len(calls) > 0 {
		// One array for the fragment's calls, each unit's in walk order.
		per := sc.perUnit(len(units))
		for _, c := range calls {
			per[c.unit]++
		}
		all, at := make([]danglingClient, len(calls)), 0
		for ui, n := range per {
			units[ui].clients = all[at : at : at+n]
			at += n
		}
		for _, c := range calls {
			units[c.unit].clients = append(units[c.unit].clients, c.c)
		}
	}
	fu := newFragUnits(units, gen)
	clear(units) // the scratch keeps no strings or slices alive
	sc.units, sc.calls = units[:0], calls[:0]
	return fu
}

// unitCall is a dangling CLIENT span met in the walk, with its unit.
type unitCall struct {
	unit int32
	c    danglingClient
}

// minParallelUnits is how many uncut fragments make cutting them on more
// than one core worth a goroutine.
const minParallelUnits = 512

// cutAll cuts the snapshot's fragments missing from the unit cache on up to
// two cores and caches them: each fragment's units depend on it alone, so
// the structure is the same as from the sequential pass. They are cut a
// chunk at a time: a first check of a large store cuts every fragment, and
// a list of them all, with a set to find repeats, would be a fifth of its
// working set.
func (e *Finder) cutAll(snap *model.Snapshot) {
	if runtime.GOMAXPROCS(0) < 2 {
		return
	}
	if e.nunits == 0 {
		// A first check caches every fragment: the slots are made at the
		// highest one, not grown to it.
		most := uint32(0)
		for _, j := range snap.Jobs {
			most = max(most, j.Slot)
		}
		for _, r := range snap.Rollouts {
			for _, f := range r.Fragments {
				most = max(most, f.Slot)
			}
		}
		e.units = slices.Grow(e.units[:0], int(most)+1)
	}
	var c cutter
	for _, j := range snap.Jobs {
		if e.unitsOf(j) == nil {
			c.add(e, j, true)
		}
	}
	for _, r := range snap.Rollouts {
		for _, f := range r.Fragments {
			if e.unitsOf(f) == nil {
				c.add(e, f, false)
			}
		}
	}
	if len(c.todo) >= minParallelUnits {
		c.cut(e) // fewer are left to the sequential pass
	}
}

// cutChunk is how many fragments cutAll cuts at a time.
const cutChunk = 4096

// cutter is cutAll's chunk of fragments to cut.
type cutter struct {
	todo []cutFrag
	k2   Keys // the second core's name cache
	sc2  scratch
	init bool
}

type cutFrag struct {
	f     *model.Fragment
	job   bool
	units []unitInfo
}

func (c *cutter) add(e *Finder, f *model.Fragment, job bool) {
	if c.todo == nil {
		c.todo = make([]cutFrag, 0, cutChunk)
	}
	c.todo = append(c.todo, cutFrag{f: f, job: job})
	if len(c.todo) == cutChunk {
		c.cut(e)
	}
}

// cut cuts the chunk on two cores and caches it. A fragment listed twice
// (a job that is also a rollout's) keeps its first cut, as the sequential
// pass would.
func (c *cutter) cut(e *Finder) {
	if !c.init {
		c.k2, c.init = e.keys, true
	}
	todo := c.todo
	half := len(todo) / 2
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := half; i < len(todo); i++ {
			todo[i].units = cutUnits(&c.k2, &c.sc2, todo[i].f, todo[i].job, e.gen, e.keepCalls)
		}
	}()
	for i := 0; i < half; i++ {
		todo[i].units = cutUnits(&e.keys, &e.sc, todo[i].f, todo[i].job, e.gen, e.keepCalls)
	}
	wg.Wait()
	for i := range todo {
		if e.unitsOf(todo[i].f) == nil {
			e.keepUnits(todo[i].f, todo[i].units)
		}
	}
	clear(todo)
	c.todo = todo[:0]
}

// semanticRoute is the route whose handler opens each of Gym's semantic
// spans: with server off in a process, the span a call produces there.
var semanticRoute = map[string]string{
	"gym.rollout":                "/run",
	"gym.agent.responses":        "/v1/responses",
	"gym.model.responses":        "/v1/responses",
	"gym.model.chat_completions": "/v1/chat/completions",
	"gym.model.messages":         "/v1/messages",
	"gym.verify":                 "/verify",
}

// cref is a dangling CLIENT span of a unit.
type cref struct {
	c    *danglingClient
	unit int32
	used bool
}

// need is a unit looking for the call that caused it.
type need struct {
	unit int // -1 once attributed
	// cands indexes the candidate calls in the clients, nil for none: a
	// pointer, as most needs of a capture of rootless traces have none, so
	// that a need is 16 bytes of a check's working set, not 32.
	cands *[]int
}

// cand returns the candidate calls.
func (n *need) cand() []int {
	if n.cands == nil {
		return nil
	}
	return *n.cands
}

// maxLeakMatch bounds the leaks matched as a whole (an augmenting-path
// matching, quadratic at worst); past it they are matched closest first.
const maxLeakMatch = 4096

// matchLeaks pairs carried-over request spans with the calls that made
// them. A carry-over always leaves its caller's CLIENT span without a child,
// so every leak has a free call on its route and host: the pairing is a
// matching, found whole (augmenting paths, cheapest candidates tried first),
// with no time window beyond the call starting first (under load a
// handler's span may open long after the call).
func matchLeaks(us []gunit, needs []need, clients []cref, union func(child, parent int)) {
	var leaks []int
	for n := range needs {
		if needs[n].unit >= 0 && us[needs[n].unit].info.leak() {
			leaks = append(leaks, n)
		}
	}
	if len(leaks) == 0 {
		return
	}
	adj := make(map[int][]int, len(leaks))
	for _, n := range leaks {
		info := us[needs[n].unit].info
		type cand struct {
			k    int
			cost int64
		}
		var cs []cand
		for k := range clients {
			c := clients[k].c
			if clients[k].used || int(clients[k].unit) == needs[n].unit || c.start > info.start+callSlack {
				continue
			}
			if t := info.where(); (t.host != "" && c.host() != t.host) || (t.path != "" && c.path() != "" && c.path() != t.path) {
				continue
			}
			cs = append(cs, cand{k, matchCost(info.start, info.end, c.start, c.end)})
		}
		sort.Slice(cs, func(a, b int) bool { return cs[a].cost < cs[b].cost })
		for _, c := range cs {
			adj[n] = append(adj[n], c.k)
		}
	}
	attachMatched(us, needs, clients, union, augment(leaks, adj, len(leaks) <= maxLeakMatch))
}

// matchRuns pairs each rollout whose agent side is a root of its own (server
// off in the agent: no extraction) with the driver's call to /run that
// started it. Every such rollout has exactly one call, so the pairing is a
// matching, found whole (augmenting paths, closest candidates first): a
// greedy pick of the closest pair can leave a rollout whose only candidate
// another took, which then counts as a rollout of its own beside its call.
func matchRuns(us []gunit, needs []need, clients []cref, union func(child, parent int)) {
	var runs []int
	for n := range needs {
		if needs[n].unit >= 0 && us[needs[n].unit].info.class == classRollout && len(needs[n].cand()) > 0 {
			runs = append(runs, n)
		}
	}
	if len(runs) == 0 {
		return
	}
	adj := make(map[int][]int, len(runs))
	for _, n := range runs {
		info := us[needs[n].unit].info
		cs := make([]int, 0, len(needs[n].cand()))
		for _, k := range needs[n].cand() {
			if !clients[k].used {
				cs = append(cs, k)
			}
		}
		sort.SliceStable(cs, func(a, b int) bool {
			ca, cb := clients[cs[a]].c, clients[cs[b]].c
			return matchCost(info.start, info.end, ca.start, ca.end) < matchCost(info.start, info.end, cb.start, cb.end)
		})
		adj[n] = cs
	}
	// Closest pairs first, so that the matching keeps the greedy answer
	// wherever the greedy answer is whole.
	sort.SliceStable(runs, func(a, b int) bool {
		ia, ib := us[needs[runs[a]].unit].info, us[needs[runs[b]].unit].info
		ga, gb := int64(math.MaxInt64), int64(math.MaxInt64)
		if c := adj[runs[a]]; len(c) > 0 {
			ga = matchCost(ia.start, ia.end, clients[c[0]].c.start, clients[c[0]].c.end)
		}
		if c := adj[runs[b]]; len(c) > 0 {
			gb = matchCost(ib.start, ib.end, clients[c[0]].c.start, clients[c[0]].c.end)
		}
		return ga < gb
	})
	attachMatched(us, needs, clients, union, augment(runs, adj, true))
}

// augment matches needs (in order, each trying its candidates in adj's
// order) to clients one to one by augmenting paths: a need whose
// candidates are taken re-routes an earlier one when that one has another.
// Without reroute a taken candidate is skipped (closest first, greedy).
func augment(order []int, adj map[int][]int, reroute bool) map[int]int {
	matched := map[int]int{} // client -> need
	var try func(n int, seen map[int]bool) bool
	try = func(n int, seen map[int]bool) bool {
		for _, k := range adj[n] {
			if seen[k] {
				continue
			}
			seen[k] = true
			if m, ok := matched[k]; !ok || (reroute && try(m, seen)) {
				matched[k] = n
				return true
			}
		}
		return false
	}
	for _, n := range order {
		try(n, map[int]bool{})
	}
	return matched
}

// attachMatched hangs each matched need's unit under the CLIENT span that
// called it.
func attachMatched(us []gunit, needs []need, clients []cref, union func(child, parent int), matched map[int]int) {
	for k, n := range matched {
		clients[k].used = true
		u := &us[needs[n].unit]
		u.graft, u.at = clients[k].unit, clients[k].c.span
		u.setHow(attrClient)
		union(needs[n].unit, int(clients[k].unit))
		needs[n].unit = -1
	}
}

// gunit is one unit in the structure being built: 32 bytes, since a
// structure lists one per unit of the store. The unit's index among its
// fragment's is where info sits in the cache's array (Finder.unitIndex).
type gunit struct {
	f    *model.Fragment
	info *unitInfo
	// rh holds, past its low 3 bits, 1 + the index of the model rollout the
	// fragment was stored under in the snapshot's (0 for a job), and in
	// them how the unit was attributed, for the check's findings.
	rh    uint32
	up    int32 // union-find parent
	graft int32 // unit whose CLIENT span this unit hangs under, -1
	at    int32 // that CLIENT span's index in its fragment
}

const howBits = 3

// newGunit is unit k of f, stored under the snapshot's rollout roll (-1:
// a job). A snapshot holds far fewer than 2^29 rollouts.
func newGunit(f *model.Fragment, info *unitInfo, roll int) gunit {
	return gunit{f: f, info: info, rh: uint32(roll+1) << howBits, graft: -1}
}

// roll is the index of the model rollout the fragment was stored under in
// the snapshot's, -1 for a job.
func (u *gunit) roll() int { return int(u.rh>>howBits) - 1 }

// how is how the unit was attributed.
func (u *gunit) how() attribution { return attribution(u.rh & (1<<howBits - 1)) }

func (u *gunit) setHow(a attribution) { u.rh = u.rh&^(1<<howBits-1) | uint32(a) }

// unitIndex is u's index among its fragment's units: its place in the
// cache's array of them, which every gunit's info points into.
func (e *Finder) unitIndex(u *gunit) int32 {
	first := e.unitsOf(u.f)
	return int32((uintptr(unsafe.Pointer(u.info)) - uintptr(unsafe.Pointer(first))) / unsafe.Sizeof(unitInfo{}))
}

type attribution uint8

const (
	attrNone    attribution = iota
	attrClient              // matched to the CLIENT span that called it
	attrRollout             // every candidate CLIENT span is the same rollout's
	attrID                  // it names the rollout's id
	attrTrace               // its parent has not arrived; its trace is one rollout's
	attrWindow              // only one rollout was running when it started
	attrCount
)

// Every attribution fits gunit.rh's low bits: this fails to compile if not.
const _ = uint(1<<howBits - attrCount)

// callSlack is how much earlier than its CLIENT span a callee's span may
// appear to start: the processes share one clock, but timestamps are taken
// at slightly different points.
const callSlack = int64(2 * time.Millisecond)

// Structure returns snap seen as Gym makes it, cached for the last snapshot.
// snap may be a snapshot Structure made: it is returned as is.
func (e *Finder) Structure(snap *model.Snapshot) *Structure {
	if st := e.Cached(snap); st != nil {
		return st
	}
	e.gen++
	e.sync(snap)
	e.st = nil // the last structure's lists go before the next one's are made
	st := e.buildStructure(snap)
	e.st = st
	e.evictUnits()
	return st
}

func (e *Finder) evictUnits() {
	top := 0
	for s := range e.units {
		us := &e.units[s]
		if us.u == nil {
			continue
		}
		if us.u.mark != uint8(e.gen) {
			delete(e.multi, us.v)
			*us = unitSlot{}
			e.nunits--
			continue
		}
		top = s + 1
	}
	// Slots past the highest in use (all zero by now) go, and their room
	// with them when the store has shrunk to under half.
	e.units = e.units[:top]
	if cap(e.units) > 1024 && top < cap(e.units)/2 {
		e.units = slices.Clone(e.units)
	}
	for v, u := range e.loose {
		if u.mark != uint8(e.gen) {
			delete(e.loose, v)
			delete(e.multi, v)
			e.nunits--
		}
	}
}

func (e *Finder) buildStructure(snap *model.Snapshot) *Structure {
	st := &Structure{src: snap, Suspect: map[string][]Suspect{}}
	e.cutAll(snap)
	// The units and the dangling calls, counted first so that each list is
	// made at its final size: they are rebuilt on every snapshot.
	nu, nc := 0, 0
	count := func(units []unitInfo) {
		nu += len(units)
		for k := range units {
			nc += int(units[k].ncalls)
		}
	}
	for _, j := range snap.Jobs {
		count(e.fragUnits(j, true))
	}
	for _, r := range snap.Rollouts {
		for _, f := range r.Fragments {
			count(e.fragUnits(f, false))
		}
	}
	us := make([]gunit, 0, nu)
	for _, j := range snap.Jobs {
		units := e.fragUnits(j, true)
		for k := range units {
			us = append(us, newGunit(j, &units[k], -1))
		}
	}
	for ri, r := range snap.Rollouts {
		for _, f := range r.Fragments {
			units := e.fragUnits(f, false)
			for k := range units {
				us = append(us, newGunit(f, &units[k], ri))
			}
		}
	}
	for i := range us {
		us[i].up = int32(i)
	}
	find := func(i int) int {
		for int(us[i].up) != i {
			us[i].up = us[us[i].up].up
			i = int(us[i].up)
		}
		return i
	}
	union := func(child, parent int) {
		a, b := find(child), find(parent)
		if a != b {
			us[a].up = int32(b)
		}
	}
	// Hosts each process serves, from its request spans.
	// A fleet serves few hosts, each unit repeating them: the maps' current
	// entries are mirrored in short slices, so a repeat costs no hashing.
	var hostNow []hostRes
	hostOf := map[string]model.ResourceID{}
	resHost := map[model.ResourceID]string{}
	var resSeen []model.ResourceID
	const mirrored = 32
	for i := range us {
		us[i].info.eachServer(func(h hostRes) {
			k := 0
			for k < len(hostNow) && hostNow[k].host != h.host {
				k++
			}
			if k < len(hostNow) {
				if hostNow[k].res != h.res {
					hostNow[k].res = h.res
					hostOf[h.host] = h.res
				}
			} else {
				if len(hostNow) < mirrored {
					hostNow = append(hostNow, h)
				}
				hostOf[h.host] = h.res
			}
			if slices.Contains(resSeen, h.res) {
				return
			}
			if _, ok := resHost[h.res]; !ok {
				resHost[h.res] = h.host
			}
			if len(resSeen) < mirrored {
				resSeen = append(resSeen, h.res)
			}
		})
	}
	// Rollout ids and traces of the anchored units.
	byID := map[string]int{}
	traceRoll := map[model.TraceID]int{} // trace -> anchored unit, -1 when several
	anyRollout := false
	for i := range us {
		u := &us[i]
		if u.info.class != classRollout {
			continue
		}
		anyRollout = true
		if u.info.extra().rid != "" {
			if j, ok := byID[u.info.extra().rid]; ok {
				union(i, j)
			} else {
				byID[u.info.extra().rid] = i
			}
		}
		if j, ok := traceRoll[u.f.TraceID]; !ok {
			traceRoll[u.f.TraceID] = i
		} else if j != i {
			traceRoll[u.f.TraceID] = -1
		}
	}
	// Whether any dangling CLIENT span calls /run, from the units' own
	// lists: the list of them all by start time is made only when a unit
	// needs a caller.
	runCalls := false
	for i := 0; i < len(us) && !runCalls; i++ {
		runCalls = us[i].info.runCall()
	}
	// Units that need a caller: orphans, leaked request spans, and rollout
	// units whose top is the agent's side of a /run call. Marked first and
	// listed at their number: where spans name their parents few units
	// need one, and a list made for every unit would be most of a check's
	// working set.
	// Where there is no call to match and no rollout to be in, a unit that
	// needs a caller ends unattributed, as it is now: none is listed.
	canMatch := nc > 0 || anyRollout
	needing := make([]bool, len(us))
	nneed := 0
	for i := range us {
		u := &us[i]
		info := u.info
		top := &u.f.Spans[info.root()]
		switch {
		case info.class == classRun && !info.leak():
			continue
		case info.cut():
			continue // its caller is the span above it
		case info.class == classRollout && top.Kind == model.KindClient:
			continue // the driver's own call to /run: it has no caller
		case info.class == classRollout && !info.leak() && u.f.ParentID(int(info.root())).IsZero() && info.root() == 0 && !u.f.UnderJob && !runCalls:
			continue // a rollout started without a driver span (standalone)
		}
		if info.class == classOrphan && info.extra().rid != "" {
			if j, ok := byID[info.extra().rid]; ok {
				union(i, j)
				u.setHow(attrID)
				continue
			}
		}
		if !info.leak() && !u.f.ParentID(int(info.root())).IsZero() {
			// The parent's id is known but it is not here: not exported, or
			// not yet. Only its trace can tell whose it is.
			if j, ok := traceRoll[u.f.TraceID]; ok && j >= 0 && info.class == classOrphan {
				union(i, j)
				u.setHow(attrTrace)
			}
			continue
		}
		if canMatch {
			needing[i] = true
			nneed++
		}
	}
	// Dangling CLIENT spans, by start time, where some unit needs one: the
	// orphan agent batch holds 300k, and none of its units needs a caller.
	var clients []cref
	maxDur := int64(0)
	if nneed > 0 {
		e.keepAllCalls(us)
		clients = make([]cref, 0, nc)
		for i := range us {
			cl := us[i].info.extra().clients
			for k := range cl {
				c := &cl[k]
				clients = append(clients, cref{unit: int32(i), c: c})
				maxDur = max(maxDur, c.end-c.start)
			}
		}
		sort.Slice(clients, func(a, b int) bool { return clients[a].c.start < clients[b].c.start })
	}
	needs := make([]need, 0, nneed)
	for i := range us {
		if !needing[i] {
			continue
		}
		u := &us[i]
		info := u.info
		top := &u.f.Spans[info.root()]
		where := info.where()
		host := where.host
		if host == "" {
			host = resHost[top.Resource]
		}
		nd := need{unit: i}
		var cands []int
		lo := sort.Search(len(clients), func(k int) bool { return clients[k].c.start >= info.start-maxDur-callSlack })
		for k := lo; k < len(clients) && clients[k].c.start <= info.start+callSlack; k++ {
			c := clients[k].c
			if int(clients[k].unit) == i || info.start > c.end+callSlack || info.end > c.end+endSlack(c) {
				continue
			}
			route := c.route.Value()
			if host != "" {
				if route.host != host {
					continue
				}
			} else if r, ok := hostOf[route.host]; ok && r != top.Resource {
				continue
			}
			if where.path != "" && route.path != "" && route.path != where.path {
				continue
			}
			if info.class == classRollout && route.path != "/run" {
				continue
			}
			cands = append(cands, k)
		}
		if len(cands) > 0 {
			nd.cands = new([]int) // made here only: &cands would be made for every need
			*nd.cands = cands
		}
		needs = append(needs, nd)
	}
	// Learn which routes open which root spans from the calls that have one
	// candidate only, and keep, for the others, the candidates on those
	// routes (a sandbox's spans come from the tool route that uses it).
	routes := map[model.Str]map[string]bool{}
	for n := range needs {
		if len(needs[n].cand()) == 1 {
			u := &us[needs[n].unit]
			name := u.f.Spans[u.info.root()].Name
			if routes[name] == nil {
				routes[name] = map[string]bool{}
			}
			routes[name][clients[needs[n].cand()[0]].c.path()] = true
		}
	}
	for n := range needs {
		u := &us[needs[n].unit]
		known := routes[u.f.Spans[u.info.root()].Name]
		if len(needs[n].cand()) < 2 || known == nil {
			continue
		}
		var keep []int
		for _, k := range needs[n].cand() {
			if known[clients[k].c.path()] {
				keep = append(keep, k)
			}
		}
		if len(keep) > 0 {
			*needs[n].cands = keep
		}
	}
	// One to one, closest first. A CLIENT span ends when the response
	// headers arrive, right after the callee's handler returns, so ends
	// align tightly; starts less so (a handler may wait before its span
	// opens). The pair with the smallest gap is matched first, and each
	// CLIENT span calls one callee.
	type edge struct {
		need, client int
		gap          int64
	}
	matchLeaks(us, needs, clients, union)
	matchRuns(us, needs, clients, union)
	var edges []edge
	for n := range needs {
		if needs[n].unit < 0 {
			continue
		}
		info := us[needs[n].unit].info
		for _, k := range needs[n].cand() {
			c := clients[k].c
			gap := matchCost(info.start, info.end, c.start, c.end)
			edges = append(edges, edge{n, k, gap})
		}
	}
	sort.Slice(edges, func(a, b int) bool { return edges[a].gap < edges[b].gap })
	// One handler may open several spans that become roots (a sandbox's
	// start and exec), but never two of the same name.
	type taken struct {
		client int
		name   model.Str
	}
	took := map[taken]bool{}
	for _, ed := range edges {
		nd := &needs[ed.need]
		if nd.unit < 0 {
			continue
		}
		u := &us[nd.unit]
		key := taken{ed.client, u.f.Spans[u.info.root()].Name}
		if took[key] {
			continue
		}
		took[key] = true
		clients[ed.client].used = true
		u.graft, u.at = clients[ed.client].unit, clients[ed.client].c.span
		u.setHow(attrClient)
		union(nd.unit, int(clients[ed.client].unit))
		nd.unit = -1
	}
	// Several candidates, all of one rollout: the rollout is certain even if
	// the call is not. Rounds, because a candidate's unit may itself be
	// attributed in a later pass.
	rolloutOf := func(i int) int {
		r := find(i)
		return r
	}
	for round := 0; round < 3; round++ {
		for n := range needs {
			nd := &needs[n]
			if nd.unit < 0 || len(nd.cand()) == 0 {
				continue
			}
			r := -1
			same := true
			for _, k := range nd.cand() {
				if clients[k].used {
					continue
				}
				x := rolloutOf(int(clients[k].unit))
				if r == -1 {
					r = x
				} else if r != x {
					same = false
				}
			}
			if r >= 0 && same {
				us[nd.unit].setHow(attrRollout)
				union(nd.unit, r)
				nd.unit = -1
			}
		}
	}
	// Which union-find roots hold a rollout.
	hasRollout := make([]bool, len(us))
	rollUnits := 0
	for i := range us {
		if us[i].info.class == classRollout {
			hasRollout[find(i)] = true
			rollUnits++
		}
	}
	// A call on a route that was seen to open a span in a new trace did so
	// in its own rollout too, even where that span could not be told apart
	// from another's: the rollout is split, as far as the capture can tell.
	emits := map[unique.Handle[callRoute]]int{} // a unit that route produced
	for i := range us {
		if u := &us[i]; u.how() == attrClient && !u.info.leak() {
			for k := range clients {
				if clients[k].unit == u.graft && clients[k].c.span == u.at {
					emits[clients[k].c.route] = i
					break
				}
			}
		}
	}
	for k := range clients {
		c := &clients[k]
		if c.used {
			continue
		}
		if j, ok := emits[c.c.route]; ok {
			st.suspectUnits = append(st.suspectUnits, [2]int{int(c.unit), j})
		}
	}
	// Without any candidate call (no CLIENT spans were captured for the
	// hop), the only rollout running when the unit started is its own.
	// Only rollouts that show no outbound CLIENT span at all qualify: where
	// the caller records its calls, a fragment no call matches is no
	// rollout's (a server called from outside the fleet).
	type window struct {
		start, end int64
		root       int32
		calls      bool
	}
	var wins []window
	{
		// At most a window a rollout unit: made at that size, not grown.
		wins = make([]window, 0, rollUnits)
		seen := make([]int32, len(us)) // root -> 1 + its window's index; 0: none
		for i := range us {
			if us[i].info.class != classRollout {
				continue
			}
			r := find(i)
			if k := seen[r] - 1; k >= 0 {
				wins[k].start, wins[k].end = min(wins[k].start, us[i].info.start), max(wins[k].end, us[i].info.end)
				wins[k].calls = wins[k].calls || us[i].info.calls()
				continue
			}
			seen[r] = int32(len(wins)) + 1
			wins = append(wins, window{root: int32(r), start: us[i].info.start, end: us[i].info.end, calls: us[i].info.calls()})
		}
		k := 0
		for _, w := range wins {
			if !w.calls {
				wins[k] = w
				k++
			}
		}
		wins = wins[:k]
	}
	for n := range needs {
		nd := &needs[n]
		if nd.unit < 0 {
			continue
		}
		u := &us[nd.unit]
		if hasRollout[find(nd.unit)] {
			continue
		}
		if u.info.class == classRollout {
			continue // a rollout of its own whose caller was not found
		}
		var cand []int
		if len(nd.cand()) > 0 {
			for _, k := range nd.cand() {
				cand = appendUnique(cand, find(int(clients[k].unit)))
			}
		} else {
			for _, w := range wins {
				if w.start <= u.info.start+callSlack && u.info.start <= w.end {
					cand = appendUnique(cand, find(int(w.root)))
				}
			}
			if len(cand) == 1 {
				u.setHow(attrWindow)
				union(nd.unit, cand[0])
				continue
			}
		}
		u.setHow(attrNone)
		// The fragment may be any of these rollouts': each is split as far
		// as the capture can tell.
		for _, c := range cand {
			if hasRollout[find(c)] {
				st.suspectUnits = append(st.suspectUnits, [2]int{c, nd.unit})
			}
		}
	}
	return e.assemble(snap, st, us, find)
}

// endSlack is how long after its CLIENT span a callee's span may end: the
// CLIENT span ends when the headers arrive, the callee's SERVER span once the
// body is sent.
func endSlack(c *danglingClient) int64 {
	return int64(20*time.Millisecond) + (c.end-c.start)/10
}

// matchCost weighs how well a callee's span (os..oe) fits a CLIENT span
// (cs..ce): ends weigh most, since the response follows the handler.
func matchCost(os, oe, cs, ce int64) int64 {
	return absDiff(oe, ce) + absDiff(os, cs)/8
}

func absDiff(a, b int64) int64 {
	if a > b {
		return a - b
	}
	return b - a
}

func appendUnique(xs []int, x int) []int {
	for _, y := range xs {
		if y == x {
			return xs
		}
	}
	return append(xs, x)
}

var seed = maphash.MakeSeed()

// syntheticID names a rollout without an id by one of its spans.
func syntheticID(t model.TraceID, s model.SpanID) string {
	var b [syntheticIDLen]byte
	putSyntheticID(&b, t, s)
	return string(b[:])
}

// syntheticIDLen is the length of a synthetic id: ~, 8 hex digits of the
// trace id, /, 16 of the span id.
const syntheticIDLen = 1 + 8 + 1 + 16

// putSyntheticID writes syntheticID(t, s) into b.
func putSyntheticID(b *[syntheticIDLen]byte, t model.TraceID, s model.SpanID) {
	b[0] = '~'
	hex.Encode(b[1:9], t[:4])
	b[9] = '/'
	hex.Encode(b[10:], s[:])
}

// Traffic sums up what a structure holds besides rollouts, the same way for
// every report (the check, the preview, the TUI).
type Traffic struct {
	RunSpans, RunTraces int
	RunKinds            map[string]int // run-level spans per kind (health_probe, job, …)
	Unattributed        int            // fragments no rollout could be named for
	UnattributedSpans   int
	Leaks               []LeakCount // request spans carried over, per process and span
	LeakSpans           int
}

// LeakCount is how many request spans of one process and name a keep-alive
// carry-over created INTERNAL under another request's span.
type LeakCount struct {
	Service, Name string
	Count         int
}

// LeakCause is the likely cause of a context leak, as reports say it.
const LeakCause = "request context carried over on a reused keep-alive connection: the server started the request while the previous request's span was still current"

// Traffic returns the structure's run-level traffic, unattributed fragments
// and context leaks.
func (s *Structure) Traffic() Traffic {
	t := Traffic{RunSpans: s.RunSpans, RunTraces: s.RunTraces, RunKinds: s.RunKindSpans(), Unattributed: len(s.Unattributed), Leaks: []LeakCount{}}
	for _, f := range s.Unattributed {
		t.UnattributedSpans += len(f.Spans)
	}
	idx := map[[2]string]int{}
	for _, l := range s.Leaks {
		k := [2]string{l.Service, l.Name}
		i, ok := idx[k]
		if !ok {
			i = len(t.Leaks)
			idx[k] = i
			t.Leaks = append(t.Leaks, LeakCount{Service: l.Service, Name: l.Name})
		}
		t.Leaks[i].Count++
		t.LeakSpans++
	}
	sort.Slice(t.Leaks, func(i, j int) bool {
		if t.Leaks[i].Count != t.Leaks[j].Count {
			return t.Leaks[i].Count > t.Leaks[j].Count
		}
		return t.Leaks[i].Service+t.Leaks[i].Name < t.Leaks[j].Service+t.Leaks[j].Name
	})
	return t
}

// Apart returns what is not a rollout as rows a view can list beside the
// rollouts: one per kind of run-level traffic ("run: health_probe", …) and
// one for the unattributed fragments, each holding its fragments. Built
// once per structure.
func (s *Structure) Apart() []*model.Rollout {
	if s.apart != nil {
		return s.apart
	}
	s.apart = []*model.Rollout{}
	byKind := map[RunKind]*model.Rollout{}
	var kinds []RunKind
	add := func(r *model.Rollout, f *model.Fragment) {
		r.Fragments = append(r.Fragments, f)
		r.Spans += len(f.Spans)
		r.Version = r.Version*31 + f.Version
		for i := range f.Spans {
			sp := &f.Spans[i]
			if r.Spans == len(f.Spans) && i == 0 || sp.Start < r.Start {
				r.Start = sp.Start
			}
			r.End = max(r.End, sp.End)
			if sp.Status == model.StatusError {
				r.Errors++
			}
		}
	}
	for _, p := range s.Run {
		r := byKind[p.Kind]
		if r == nil {
			r = &model.Rollout{ID: RunRowPrefix + p.Kind.String(), Synthetic: true}
			byKind[p.Kind] = r
			kinds = append(kinds, p.Kind)
		}
		add(r, p.Frag)
	}
	sort.Slice(kinds, func(i, j int) bool { return kinds[i] < kinds[j] })
	for _, k := range kinds {
		r := byKind[k]
		r.Traces = distinctTraces(r.Fragments)
		s.apart = append(s.apart, r)
	}
	if len(s.Unattributed) > 0 {
		r := &model.Rollout{ID: UnattributedRow, Synthetic: true}
		for _, f := range s.Unattributed {
			add(r, f)
		}
		r.Traces = distinctTraces(r.Fragments)
		s.apart = append(s.apart, r)
	}
	return s.apart
}

// Ids of the rows Apart returns.
const (
	RunRowPrefix    = "run: "
	UnattributedRow = "unattributed"
)

func distinctTraces(fs []*model.Fragment) int32 {
	seen := map[model.TraceID]bool{}
	for _, f := range fs {
		seen[f.TraceID] = true
	}
	return int32(len(seen))
}

// Listed returns the structured snapshot with the Apart rows after the
// rollouts (gym.job aside: snapshots list it on their own), for views that
// print everything; Stats.Rollouts still counts the rollouts only.
func (s *Structure) Listed() *model.Snapshot {
	rows := append([]*model.Rollout(nil), s.Rollouts...)
	for _, r := range s.Apart() {
		if r.ID != RunRowPrefix+RunJob.String() {
			rows = append(rows, r)
		}
	}
	d := s.Snap.Derive(rows)
	d.Stats.Rollouts = len(s.Rollouts)
	return d
}
