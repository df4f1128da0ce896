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
	Span          model.SpanID // the request span, for a view to mark it
}

// Owner is the rollout a leak is counted in: the one it belongs to, else
// (a run-level request, such as /aggregate_metrics) the one whose span it
// was put under; "" for neither. The check's hops, the figures and the
// views' marks all count by it.
func (l Leak) Owner() string {
	if l.Rollout != "" {
		return l.Rollout
	}
	return l.Host
}

// LeaksByRollout is how many leaks each rollout owns (Leak.Owner).
func (s *Structure) LeaksByRollout() map[string]int {
	out := map[string]int{}
	for _, l := range s.Leaks {
		if id := l.Owner(); id != "" {
			out[id]++
		}
	}
	return out
}

// LeakedSpans is the set of the leaked request spans.
func (s *Structure) LeakedSpans() map[model.SpanID]bool {
	out := make(map[model.SpanID]bool, len(s.Leaks))
	for _, l := range s.Leaks {
		out[l.Span] = true
	}
	return out
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
// kept only with keepCalls. Its steps are methods of a unitCut, in order.
func cutUnits(k *Keys, sc *scratch, f *model.Fragment, job bool, gen uint64, keepCalls bool) []unitInfo {
	// Units and dangling calls are gathered in scratch and copied out at
	// their final size: a cache of every fragment's units holds no slack.
	c := unitCut{k: k, f: f, keepCalls: keepCalls, units: sc.units[:0], calls: sc.calls[:0], leaked: sc.leaked[:0]}
	// Per-span walk state, reused across fragments: only units are kept.
	c.unitOf, c.depth, c.called = sc.unitWalk(len(f.Spans))
	c.served = sc.served
	c.walk()
	c.listSpans()
	c.scan()
	c.classify(job)
	sc.leaked = c.leaked
	c.attachCalls(sc)
	fu := newFragUnits(c.units, gen)
	clear(c.units) // the scratch keeps no strings or slices alive
	sc.units, sc.calls = c.units[:0], c.calls[:0]
	return fu
}

// unitCut is one fragment being cut into units: the per-span walk state
// and the units and dangling calls gathered, all in scratch.
type unitCut struct {
	k         *Keys
	f         *model.Fragment
	keepCalls bool
	unitOf    []int32 // span -> its unit
	depth     []uint8 // span -> its depth below its unit's top, up to 255
	called    []bool  // span -> has a CLIENT, SERVER or request child
	served    []bool  // span -> it or an ancestor is a request span: inside a server
	units     []unitBuild
	calls     []unitCall
	leaked    []bool // unit -> its top is a leaked request span, parented or not
}

// walk cuts the fragment into units, in span order: a unit starts at a
// span with no parent in the fragment, a leaked request span or a call to
// /run cut out under another client's spans, and holds the spans below it.
func (c *unitCut) walk() {
	k, f := c.k, c.f
	unitOf, depth, called, served := c.unitOf, c.depth, c.called, c.served
	units, leaked := c.units, c.leaked
	for i := range f.Spans {
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
	c.units, c.leaked = units, leaked
}

// listSpans lists each unit's spans in index order when the fragment has
// more than one unit; a lone unit is the whole fragment (idx nil).
func (c *unitCut) listSpans() {
	units, unitOf := c.units, c.unitOf
	if len(units) <= 1 {
		return
	}
	for i := range units {
		units[i].idx = make([]int32, 0, units[i].spans)
	}
	for i := range c.f.Spans {
		u := &units[unitOf[i]]
		u.idx = append(u.idx, int32(i))
	}
}

// scan reads each span into its unit: the dangling calls, the hosts
// served, the span that names the rollout (the best anchor near the top)
// and the rollout id the spans name.
func (c *unitCut) scan() {
	k, f, keepCalls := c.k, c.f, c.keepCalls
	unitOf, depth, called := c.unitOf, c.depth, c.called
	units, calls := c.units, c.calls
	for i := range f.Spans {
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
	c.calls = calls
}

// classify reads each unit's top for its route and host, and classes the
// unit: a rollout's, run-level of some kind, or an orphan.
func (c *unitCut) classify(job bool) {
	k, f, in := c.k, c.f, c.k.in
	for ui := range c.units {
		u := &c.units[ui]
		top := &f.Spans[u.root]
		name := in.Str(top.Name)
		if top.Kind == model.KindServer || c.leaked[ui] || (top.Kind == model.KindInternal && k.isRequestSpan(top)) {
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
}

// attachCalls gives each unit its kept dangling calls, in walk order, all
// in one array for the fragment.
func (c *unitCut) attachCalls(sc *scratch) {
	units, calls := c.units, c.calls
	if len(calls) == 0 {
		return
	}
	per := sc.perUnit(len(units))
	for _, uc := range calls {
		per[uc.unit]++
	}
	all, at := make([]danglingClient, len(calls)), 0
	for ui, n := range per {
		units[ui].clients = all[at : at : at+n]
		at += n
	}
	for _, uc := range calls {
		units[uc.unit].clients = append(units[uc.unit].clients, uc.c)
	}
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
	LeakRollouts        int // the rollouts owning them (Leak.Owner)
}

// LeakCount is how many request spans of one process and name a keep-alive
// carry-over created INTERNAL under another request's span.
type LeakCount struct {
	Service, Name string
	Count         int
}

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
	t.LeakRollouts = len(s.LeaksByRollout())
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
