package whatif

import (
	"encoding/binary"
	"hash/maphash"
	"math"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/rollouts"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nemo-gym/gymtrace/model"
)

// unknownService stands for a caller the capture cannot name.
const unknownService = "?"

// rollCheck is the snapshot-independent part of one rollout's join check,
// cached by rollout version. Rollouts alike in it (the same calls, hops and
// processes, as most of a run's are) share one, interned in Engine.shapes:
// a copy a rollout was most of what the live tally held between checks.
// The times it needs of each rollout stay with the rollout
// (rollState.times).
type rollCheck struct {
	hops       []BrokenHop
	unanswered []clientCall // CLIENT spans with an answer but no callee span
	hosts      []hostRes    // host:port served, from SERVER spans
	resources  []model.ResourceID
	joined     []model.ResourceID // resources on a cross-process edge
	// newTrace holds the processes whose spans start new traces inside the
	// rollout: the likely callee of an unanswered call to an unknown host.
	newTrace []model.ResourceID
	// strays are the non-SERVER tops of those new traces. Check reports
	// one only when no unanswered call of the rollout names its process:
	// otherwise it is the same broken hop seen from the callee's side.
	strays []strayRoot
	// entry is the top of the rollout's entry fragment when that is a true
	// root: with a run's gym.job captured, the driver's call to /run did
	// not join it.
	entry    strayRoot
	entryTop bool
	entryKnd model.Kind

	next *rollCheck // another shape of the same hash
	gen  uint64     // the last Check that used it
	// While a check runs, memo is the hops it finds in the shape's
	// rollouts before each one's own (suspects, leaks): the same for all
	// of them. judged counts the rollouts it judged with no hops of their
	// own, summed into the report at once.
	memo   []BrokenHop
	judged int
}

type clientCall struct {
	res  model.ResourceID
	host string
	// method and path are the request as the callee would name it
	// (clientRoute).
	method, path string
	scoped       bool // a rollout-scoped Gym route (/ng-rollout/)
}

// strayRoot is a span, not a SERVER span, that starts a new trace inside a
// rollout: its process did not extract the caller's traceparent.
type strayRoot struct {
	res  model.ResourceID
	name string
}

type hostRes struct {
	host string
	res  model.ResourceID
}

// serverRoot is a SERVER span topping a fragment that is not the entry.
type serverRoot struct {
	res  model.ResourceID
	host string
	path string
	name string
}

// checkScratch is one rollout's check while it is built, reused: most
// rollouts find their shape interned and keep nothing of it.
type checkScratch struct {
	c      rollCheck
	paths  []string // each unanswered call's path
	calls  []int64  // each unanswered call's start and end
	strays []int64  // each stray's start
	roots  []serverRoot
}

// rollCheck returns the cached per-rollout check of r: each fragment's
// spans walked for processes, hops and hosts (walkSpans), its unanswered
// calls listed (unanswered), its top placed (placeTop), then the SERVER
// roots paired with those calls (pairServerRoots).
func (e *Engine) rollCheck(snap *model.Snapshot, r *model.Rollout, rs *rollState) *rollCheck {
	if rs.check != nil {
		return rs.check
	}
	sc := &e.ck
	c := &sc.c
	*c = rollCheck{hops: c.hops[:0], unanswered: c.unanswered[:0], hosts: c.hosts[:0], resources: c.resources[:0],
		joined: c.joined[:0], newTrace: c.newTrace[:0], strays: c.strays[:0]}
	sc.paths, sc.calls, sc.strays, sc.roots = sc.paths[:0], sc.calls[:0], sc.strays[:0], sc.roots[:0]
	entry := entryFragment(r)
	if entry >= 0 && r.Fragments[entry].TopParent.IsZero() {
		top := &r.Fragments[entry].Spans[0]
		c.entry, c.entryTop, c.entryKnd = strayRoot{res: top.Resource, name: rollouts.DisplayName(e.in, top)}, true, top.Kind
	}
	w := spanWalk{}
	for fi, f := range r.Fragments {
		// Per span: a child reached through a hop; a CLIENT child in-process.
		hasChildFrom, hasClientChild := e.sc.flags(len(f.Spans))
		e.walkSpans(snap, f, &w, hasChildFrom, hasClientChild)
		if !f.Job().IsZero() {
			if j, ok := e.jobs[f.Job()]; ok && j.res != f.Spans[0].Resource {
				addRes(&c.joined, j.res)
				addRes(&c.joined, f.Spans[0].Resource)
			}
		}
		e.unanswered(f, hasChildFrom, hasClientChild)
		e.placeTop(snap, f, fi == entry || len(r.Fragments) < 2)
	}
	e.pairServerRoots(snap, r, rs)
	// Only learnHosts reads times, and only of a rollout with both calls
	// and strays.
	rs.times = nil
	if len(c.unanswered) > 0 && len(c.strays) > 0 {
		times := append(append(make([]int64, 0, len(sc.calls)+len(sc.strays)), sc.calls...), sc.strays...)
		rs.times = &times
	}
	rs.check = e.intern(c)
	return rs.check
}

// addRes adds id to list unless it is there.
func addRes(list *[]model.ResourceID, id model.ResourceID) {
	for _, x := range *list {
		if x == id {
			return
		}
	}
	*list = append(*list, id)
}

// addHop adds a hop to the scratch's own list, counted in place. Its hops
// get their sentence once interned.
func (c *rollCheck) addHop(from, to, span string, cause Cause, args ...string) {
	h := BrokenHop{FromService: from, ToService: to, SpanName: span, Cause: cause, Count: 1}
	copy(h.Args[:], args)
	for i := range c.hops {
		if sameHop(c.hops[i], h) {
			c.hops[i].Count++
			return
		}
	}
	c.hops = append(c.hops, h)
}

// entryFragment returns the index of r's entry fragment (earliest true
// root, or one under the job), where the rollout starts; other roots are
// pieces that failed to join it. -1 when every fragment is an orphan.
func entryFragment(r *model.Rollout) int {
	entry := -1
	for i, f := range r.Fragments {
		if f.Orphan() {
			continue
		}
		if entry < 0 || f.Spans[0].Start < r.Fragments[entry].Spans[0].Start {
			entry = i
		}
	}
	return entry
}

// spanWalk is what walkSpans carries from one fragment of a rollout to
// the next: spans of one process come in runs, and a repeat of the last
// resource added is not looked for again.
type spanWalk struct {
	lastRes  model.ResourceID
	haveLast bool
}

// walkSpans adds f's processes, and those on a cross-process edge, to the
// check in the scratch, with the hops whose SERVER span's parent is no
// CLIENT span and the host each process serves; it marks in hasChildFrom
// the spans with a child through a hop, in hasClientChild those with a
// CLIENT child in-process.
func (e *Engine) walkSpans(snap *model.Snapshot, f *model.Fragment, w *spanWalk, hasChildFrom, hasClientChild []bool) {
	k, c := &e.keys, &e.ck.c
	for i := range f.Spans {
		sp := &f.Spans[i]
		if !w.haveLast || sp.Resource != w.lastRes {
			addRes(&c.resources, sp.Resource)
			w.lastRes, w.haveLast = sp.Resource, true
		}
		if p := sp.Parent; p >= 0 && int(p) < i {
			ps := &f.Spans[p]
			if isHop(sp, ps) {
				hasChildFrom[p] = true
			}
			if ps.Resource != sp.Resource {
				addRes(&c.joined, ps.Resource)
				addRes(&c.joined, sp.Resource)
				if sp.Kind == model.KindServer && ps.Kind != model.KindClient {
					c.addHop(snap.ServiceName(ps.Resource), snap.ServiceName(sp.Resource), rollouts.DisplayName(e.in, sp), CauseParentNotClient, ps.Kind.String())
				}
			} else if sp.Kind == model.KindClient {
				hasClientChild[p] = true
			}
		}
		// One host per process is enough: read it from its first SERVER
		// span in the rollout, not from every one.
		if sp.Kind == model.KindServer && !slices.ContainsFunc(c.hosts, func(h hostRes) bool { return h.res == sp.Resource }) {
			if u, ok := k.URL(sp.Attrs); ok {
				if h, _ := rollouts.SplitURL(u); h != "" {
					c.hosts = append(c.hosts, hostRes{h, sp.Resource})
				}
			} else if h, ok := k.HostAttr(sp.Attrs); ok {
				c.hosts = append(c.hosts, hostRes{h, sp.Resource})
			}
		}
	}
}

// unanswered lists f's CLIENT spans answered (a status code) without a
// callee span. An outer CLIENT whose inner CLIENT (a second
// instrumentation) carries the call is not one of them.
func (e *Engine) unanswered(f *model.Fragment, hasChildFrom, hasClientChild []bool) {
	k, sc := &e.keys, &e.ck
	c := &sc.c
	for i := range f.Spans {
		sp := &f.Spans[i]
		if sp.Kind != model.KindClient || hasChildFrom[i] || hasClientChild[i] {
			continue
		}
		if !k.HasStatus(sp.Attrs) {
			continue // no answer: a connection error creates no SERVER span
		}
		u, _ := k.URL(sp.Attrs)
		h, p := rollouts.SplitURL(u)
		cc := clientCall{res: sp.Resource, host: h, scoped: strings.Contains(p, "/ng-rollout/")}
		cc.method, cc.path = clientRoute(k, sp)
		c.unanswered = append(c.unanswered, cc)
		sc.paths = append(sc.paths, p)
		sc.calls = append(sc.calls, sp.Start, sp.End)
	}
}

// placeTop says what f's top is to the rollout: nothing under the job, under
// a span of another fragment or at its entry (entry), a hop from an unknown parent for an orphan, a
// SERVER root to pair with a call, or a stray starting a new trace.
func (e *Engine) placeTop(snap *model.Snapshot, f *model.Fragment, entry bool) {
	k, sc := &e.keys, &e.ck
	c := &sc.c
	top := &f.Spans[0]
	switch {
	case !f.Job().IsZero():
	case f.Attached:
		// Its parent is in the capture, in another fragment: what broke
		// there (a context carried over) is the structure's to say.
	case f.Orphan():
		kind := top.Kind.String()
		if top.Kind == model.KindInternal {
			kind = snap.Str(top.Name)
		}
		c.addHop(unknownService, snap.ServiceName(top.Resource), rollouts.DisplayName(e.in, top), CauseParentMissing, kind)
	case entry:
	case top.Kind == model.KindServer:
		sr := serverRoot{res: top.Resource, name: rollouts.DisplayName(e.in, top)}
		if u, ok := k.URL(top.Attrs); ok {
			sr.host, sr.path = rollouts.SplitURL(u)
		}
		if t, ok := k.TargetAttr(top.Attrs); ok {
			sr.path, _, _ = strings.Cut(t, "?")
		}
		sc.roots = append(sc.roots, sr)
	default:
		c.strays = append(c.strays, strayRoot{res: top.Resource, name: rollouts.DisplayName(e.in, top)})
		sc.strays = append(sc.strays, top.Start)
		addRes(&c.newTrace, top.Resource)
	}
}

// pairServerRoots pairs SERVER roots with unanswered CLIENT calls of the
// same rollout: the same hop seen from both sides is one problem.
func (e *Engine) pairServerRoots(snap *model.Snapshot, r *model.Rollout, rs *rollState) {
	sc := &e.ck
	c := &sc.c
	for _, sr := range sc.roots {
		paired := -1
		for i, cc := range c.unanswered {
			if sc.paths[i] == sr.path && (sr.host == "" || cc.host == "" || cc.host == sr.host) {
				paired = i
				break
			}
		}
		if paired >= 0 {
			cc := c.unanswered[paired]
			c.unanswered = slices.Delete(c.unanswered, paired, paired+1)
			sc.paths = slices.Delete(sc.paths, paired, paired+1)
			sc.calls = slices.Delete(sc.calls, 2*paired, 2*paired+2)
			c.addHop(snap.ServiceName(cc.res), snap.ServiceName(sr.res), sr.name, CauseNotInjected)
			continue
		}
		// Without the caller's CLIENT span, Gym's call graph names it: the
		// agent (the process running gym.rollout) calls every server, itself
		// included, except its own /run, which the driver calls.
		if agent, ok := e.rolloutProcess(r, rs); ok && (agent != sr.res || !strings.HasSuffix(sr.path, "/run")) {
			svc := snap.ServiceName(agent)
			c.addHop(svc, snap.ServiceName(sr.res), sr.name, CauseServerRoot, svc)
			continue
		}
		c.addHop(unknownService, snap.ServiceName(sr.res), sr.name, CauseServerRoot, "the caller")
	}
}

// intern returns the engine's rollCheck equal to c, a copy of c the first
// time.
func (e *Engine) intern(c *rollCheck) *rollCheck {
	h := c.shapeHash(e.seed)
	for x := e.shapes[h]; x != nil; x = x.next {
		if sameShape(x, c) {
			return x
		}
	}
	x := &rollCheck{hops: clip(c.hops), unanswered: clip(c.unanswered), hosts: clip(c.hosts), resources: clip(c.resources),
		joined: clip(c.joined), newTrace: clip(c.newTrace), strays: clip(c.strays),
		entry: c.entry, entryTop: c.entryTop, entryKnd: c.entryKnd, next: e.shapes[h]}
	for i := range x.hops {
		x.hops[i].Reason = x.hops[i].Cause.Sentence(x.hops[i].Args[:]...)
	}
	e.shapes[h] = x
	return x
}

// clip is a copy of s at its length, nil when empty.
func clip[S ~[]E, E any](s S) S {
	if len(s) == 0 {
		return nil
	}
	return append(make(S, 0, len(s)), s...)
}

// shapeHash hashes what sameShape compares.
func (c *rollCheck) shapeHash(seed maphash.Seed) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	var b [8]byte
	num := func(v uint64) {
		binary.LittleEndian.PutUint64(b[:], v)
		h.Write(b[:])
	}
	str := func(s string) {
		h.WriteString(s)
		h.WriteByte(0)
	}
	for i := range c.hops {
		x := &c.hops[i]
		str(x.FromService)
		str(x.ToService)
		str(x.SpanName)
		str(x.Args[0])
		str(x.Args[1])
		num(uint64(x.Cause)<<56 | uint64(x.Count))
	}
	h.WriteByte(1)
	for _, x := range c.unanswered {
		str(x.host)
		str(x.method)
		str(x.path)
		num(uint64(x.res)<<1 | b2u(x.scoped))
	}
	h.WriteByte(2)
	for _, x := range c.hosts {
		str(x.host)
		num(uint64(x.res))
	}
	for _, list := range [...][]model.ResourceID{c.resources, c.joined, c.newTrace} {
		h.WriteByte(3)
		for _, id := range list {
			num(uint64(id))
		}
	}
	h.WriteByte(4)
	for _, x := range c.strays {
		str(x.name)
		num(uint64(x.res))
	}
	str(c.entry.name)
	num(uint64(c.entry.res)<<16 | uint64(c.entryKnd)<<1 | b2u(c.entryTop))
	return h.Sum64()
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// sameShape reports whether a and b hold the same check, reasons aside: a
// hop's reason is its cause's sentence with its arguments.
func sameShape(a, b *rollCheck) bool {
	return slices.EqualFunc(a.hops, b.hops, func(x, y BrokenHop) bool {
		return x.FromService == y.FromService && x.ToService == y.ToService && x.SpanName == y.SpanName &&
			x.Cause == y.Cause && x.Args == y.Args && x.Count == y.Count
	}) && slices.Equal(a.unanswered, b.unanswered) && slices.Equal(a.hosts, b.hosts) &&
		slices.Equal(a.resources, b.resources) && slices.Equal(a.joined, b.joined) && slices.Equal(a.newTrace, b.newTrace) &&
		slices.Equal(a.strays, b.strays) && a.entry == b.entry && a.entryTop == b.entryTop && a.entryKnd == b.entryKnd
}

// evictShapes forgets the shapes no rollout of the last check had.
func (e *Engine) evictShapes() {
	for h, x := range e.shapes {
		var keep *rollCheck
		for x != nil {
			next := x.next
			if x.gen == e.gen {
				x.next, keep = keep, x
			}
			x = next
		}
		if keep == nil {
			delete(e.shapes, h)
		} else {
			e.shapes[h] = keep
		}
	}
}

// Check finds broken joins in snap. Rollouts whose spans last arrived less
// than grace before now are pending, not broken (exporters batch for ~5 s).
func (e *Engine) Check(snap *model.Snapshot, now time.Time, grace time.Duration) *CheckReport {
	return e.check(snap, now, grace, true)
}

// Tally is Check(snap, now, grace).Tally(now, quiet) without the report's
// verdict of each rollout (CheckReport.ByRollout), which a count does not
// read: a live status line checks a large store again and again.
func (e *Engine) Tally(snap *model.Snapshot, now time.Time, grace, quiet time.Duration) Tally {
	return e.check(snap, now, grace, false).Tally(now, quiet)
}

// check is Check; perRollout false leaves ByRollout nil. It gathers each
// rollout's check (gather), finds what each shape shows (shapeHops),
// judges each rollout (judge), then sums the hops into the report with the
// processes that join no one (total).
func (e *Engine) check(snap *model.Snapshot, now time.Time, grace time.Duration, perRollout bool) *CheckReport {
	st := e.Structure(snap)
	snap = st.Snap
	e.gen++
	e.sync(snap)
	if len(e.rolls) == 0 {
		// A first check: the map at its size at once, not grown through
		// every size on the way.
		e.rolls = make(map[string]*rollState, len(snap.Rollouts))
	}
	// The tables are made here, where the compiler keeps them on the
	// stack when small: a live tally checks again and again.
	t := checkTables{
		leaksIn: map[string][]leakCount{},
		hosts:   map[string]model.ResourceID{}, joined: map[model.ResourceID]bool{}, seen: map[model.ResourceID]bool{},
		agg: map[BrokenHop]int{}, aggRollouts: map[BrokenHop]int{},
	}
	t.leaksByRollout(st)
	p := checkPass{
		snap: snap, st: st,
		rep: &CheckReport{
			Structure: st,
			Awaiting:  awaiting(st, now, grace),
			Spans:     snap.Stats.Stored,
			Rollouts:  len(snap.Rollouts),
			Traces:    snap.Stats.Traces,
		},
	}
	if perRollout {
		p.rep.ByRollout = make(map[string]RolloutCheck, len(snap.Rollouts))
	}
	e.gather(&p, &t, grace)
	learned := learnHosts(p.timed, t.hosts)
	driver, hasDriver := jobDriver(snap)
	for _, c := range p.shapes {
		c.memo, c.judged = e.shapeHops(snap, c, t.hosts, learned, driver, hasDriver), 0
	}
	p.judge(&t, now, grace)
	p.total(&t)
	e.evict()
	e.evictShapes()
	return p.rep
}

// checkPass is one check under way: the report it fills and what its
// steps hand on, with its tables in checkTables.
type checkPass struct {
	snap   *model.Snapshot
	st     *rollouts.Structure
	rep    *CheckReport
	checks []*rollCheck // each rollout's
	// lastSeen is each rollout's, when a grace window reads it.
	lastSeen []int64
	shapes   []*rollCheck // the distinct checks among them
	timed    []timedCheck
}

// checkTables are a check's maps.
type checkTables struct {
	// leaksIn is each rollout's leaked request spans, looseLeaks those of
	// no rollout (leaksByRollout).
	leaksIn    map[string][]leakCount
	looseLeaks []leakCount
	hosts      map[string]model.ResourceID // host:port -> the process serving it
	joined     map[model.ResourceID]bool   // processes on a cross-process edge
	seen       map[model.ResourceID]bool   // processes of the judged rollouts, jobs and strays
	// agg is each hop, counts aside, with its spans; aggRollouts the
	// judged rollouts showing it.
	agg, aggRollouts map[BrokenHop]int
}

// leakCount is the request spans of one process and name leaked into a
// rollout.
type leakCount struct {
	svc, name string
	n         int
}

// leaksByRollout fills leaksIn with each rollout's leaked request spans,
// by process and span, in the structure's order: every leak of the
// structure once, so the hops' counts add up to its context leaks. A leak
// is its owner's (rollouts.Leak.Owner); one owned by no rollout is loose,
// counted without a rollout.
func (t *checkTables) leaksByRollout(st *rollouts.Structure) {
	add := func(ls []leakCount, l rollouts.Leak) []leakCount {
		i := slices.IndexFunc(ls, func(x leakCount) bool { return x.svc == l.Service && x.name == l.Name })
		if i < 0 {
			ls = append(ls, leakCount{svc: l.Service, name: l.Name})
			i = len(ls) - 1
		}
		ls[i].n++
		return ls
	}
	for _, l := range st.Leaks {
		id := l.Owner()
		if id == "" {
			t.looseLeaks = add(t.looseLeaks, l)
			continue
		}
		t.leaksIn[id] = add(t.leaksIn[id], l)
	}
}

// gather takes each rollout's check, when it was last seen, the hosts the
// rollouts name and the distinct shapes with the processes they join.
func (e *Engine) gather(p *checkPass, t *checkTables, grace time.Duration) {
	snap := p.snap
	p.checks = make([]*rollCheck, len(snap.Rollouts))
	if grace > 0 {
		p.lastSeen = make([]int64, len(snap.Rollouts))
	}
	for i, r := range snap.Rollouts {
		rs := e.rollEntry(r)
		c := e.rollCheck(snap, r, rs)
		p.checks[i] = c
		if p.lastSeen != nil {
			p.lastSeen[i] = e.lastSeen(r, rs)
		}
		if rs.times != nil {
			p.timed = append(p.timed, timedCheck{c, *rs.times})
		}
		// The last rollout to name a host names its process.
		for _, h := range c.hosts {
			t.hosts[h.host] = h.res
		}
		if c.gen != e.gen {
			c.gen = e.gen
			p.shapes = append(p.shapes, c)
			for _, id := range c.joined {
				t.joined[id] = true
			}
		}
	}
}

// jobDriver returns the process that emits gym.job spans, the driver: the
// caller of every rollout's /run. None when no job, or several processes,
// emit them.
func jobDriver(snap *model.Snapshot) (model.ResourceID, bool) {
	driver, hasDriver := model.ResourceID(0), false
	for i, j := range snap.Jobs {
		if i == 0 || j.Spans[0].Resource == driver {
			driver, hasDriver = j.Spans[0].Resource, true
			continue
		}
		hasDriver = false
		break
	}
	return driver, hasDriver
}

// count adds hops, each seen in n judged rollouts, to the pass's sums.
func (t *checkTables) count(hops []BrokenHop, n int) {
	for _, h := range hops {
		key := h
		key.Count, key.Rollouts = 0, 0
		t.agg[key] += h.Count * n
		t.aggRollouts[key] += n
	}
}

// judge gives each rollout its status and hops: its shape's, then its
// suspects and leaks. A rollout is joined when all its spans carry one
// trace id; an unattributed fragment that may be its own makes it split
// too.
func (p *checkPass) judge(t *checkTables, now time.Time, grace time.Duration) {
	rep := p.rep
	for i, r := range p.snap.Rollouts {
		c := p.checks[i]
		hops := c.memo
		suspects := p.st.Suspect[r.ID]
		for _, su := range suspects {
			hops = addCount(hops, newHop(unknownService, su.Service, su.Span, CauseUnattributed, su.Service))
		}
		leaks := t.leaksIn[r.ID]
		for _, l := range leaks {
			lh := newHop(l.svc, l.svc, l.name, CauseLeak)
			lh.Count = l.n
			hops = addCount(hops, lh)
		}
		split := r.Traces > 1 || len(suspects) > 0
		flying := grace > 0 && inFlight(r)
		rc := RolloutCheck{Hops: hops, InFlight: flying}
		if flying {
			rep.InFlight++
		}
		switch {
		case flying || (grace > 0 && now.Sub(time.Unix(0, p.lastSeen[i])) < grace):
			rc.Status = JoinPending
			rep.Pending++
		case split:
			rc.Status = Split
			rep.Split++
		default:
			rc.Status = Joined
			rep.Joined++
		}
		if rep.ByRollout != nil {
			rep.ByRollout[r.ID] = rc
		}
		// A joined rollout (all its spans carry one trace id) can still
		// show a hop gone wrong: a callee that read no traceparent and
		// emitted nothing, a span that was never exported. Only judged
		// rollouts show which processes never join: within the grace a
		// healthy process may still wait for its callers' spans. A rollout
		// with no hops of its own counts with its shape, once.
		switch {
		case rc.Status == JoinPending:
		case len(suspects) > 0 || len(leaks) > 0:
			t.count(hops, 1)
			for _, id := range c.resources {
				t.seen[id] = true
			}
		default:
			c.judged++
		}
	}
	p.checks, p.lastSeen = nil, nil // read no more: let go before the sums
}

// total sums the shapes' hops into the report, adds a row for each process
// that never joins anyone, and sorts the rows.
func (p *checkPass) total(t *checkTables) {
	snap, st, rep, seen, agg := p.snap, p.st, p.rep, t.seen, t.agg
	for _, c := range p.shapes {
		if c.judged > 0 {
			t.count(c.memo, c.judged)
			for _, id := range c.resources {
				seen[id] = true
			}
		}
		c.memo = nil // the report holds it; the engine need not
	}
	if len(snap.Rollouts) == 0 || rep.Pending < len(snap.Rollouts) {
		for _, j := range snap.Jobs {
			seen[j.Spans[0].Resource] = true
		}
		if rep.Awaiting == 0 {
			for _, f := range st.Unattributed {
				seen[f.Spans[0].Resource] = true
			}
		}
	}
	for _, l := range t.looseLeaks {
		lh := newHop(l.svc, l.svc, l.name, CauseLeak)
		lh.Count = 0
		agg[lh] += l.n
	}
	// A process that never joins anyone is worth a row of its own only when
	// no hop above already names it.
	named := map[string]bool{}
	for h := range agg {
		named[h.FromService], named[h.ToService] = true, true
	}
	if len(seen) > 1 {
		for id := range seen {
			if !t.joined[id] && !named[snap.ServiceName(id)] {
				ph := newHop(snap.ServiceName(id), "", "", CauseProcessNoJoins)
				ph.Count = 0
				agg[ph] += int(serviceSpans(snap, id))
			}
		}
	}
	for h, n := range agg {
		h.Count, h.Rollouts = n, t.aggRollouts[h]
		rep.Hops = append(rep.Hops, h)
	}
	sort.Slice(rep.Hops, func(i, j int) bool {
		a, b := rep.Hops[i], rep.Hops[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		if a.FromService != b.FromService {
			return a.FromService < b.FromService
		}
		if a.ToService != b.ToService {
			return a.ToService < b.ToService
		}
		if a.SpanName != b.SpanName {
			return a.SpanName < b.SpanName
		}
		return a.Reason < b.Reason
	})
	// Intact means no rollout is split: a finding about a process that
	// joins no one, or a lost span, is reported without breaking a rollout.
	rep.Intact = rep.Split == 0
}

// lastSeen is when r's own spans last changed, which its grace window
// counts from. The store's LastSeen is its fragments', and a fragment is
// seen again when a parent arrives and links it: gym.job, exported at the
// run's end, links every rollout of the run into one fragment, and a call
// under the job after it moves them all again. A rollout whose span count
// did not change since a check keeps the time that check read, so one
// judged stays judged unless its own spans change.
func (e *Engine) lastSeen(r *model.Rollout, rs *rollState) int64 {
	if e.seenBase == 0 {
		// A week before the first rollout seen: the marks' 49 days in
		// milliseconds reach six weeks past it.
		e.seenBase = r.LastSeen - int64(7*24*time.Hour)
	}
	if rs.seen.ms != 0 && rs.seen.spans == uint32(r.Spans) {
		return min(r.LastSeen, e.seenBase+int64(rs.seen.ms)*int64(time.Millisecond))
	}
	rs.seen = seenMark{}
	if ms := (r.LastSeen - e.seenBase) / int64(time.Millisecond); ms > 0 && ms <= math.MaxUint32 {
		rs.seen = seenMark{spans: uint32(r.Spans), ms: uint32(ms)}
	}
	return r.LastSeen
}

// clientRoute is a CLIENT span's request as the callee would name it, in
// parts (clientCall.route joins them): method and path, any
// /ng-rollout/{id} prefix stripped so one hop reads the same in every
// rollout; the span's own name and no path when it carries no URL.
func clientRoute(k *rollouts.Keys, sp *model.Span) (method, path string) {
	if m, p := k.SpanRoute(sp); p != "" {
		return m, p
	}
	return k.Interner().Str(sp.Name), ""
}

// route is the call's request as the callee would name it
// ("POST /v1/responses"): said when a hop names it, not per rollout.
func (cc *clientCall) route() string {
	if cc.path == "" {
		return cc.method
	}
	return cc.method + " " + cc.path
}

// shapeHops is what a check finds in the rollouts of shape c before each
// one's own hops: the hops c holds, then its unanswered calls to a Gym
// server, the driver's call to an entry it did not join, and its strays.
// Every input is the snapshot's (hosts, learned, the driver), so the
// rollouts of a shape share the list.
func (e *Engine) shapeHops(snap *model.Snapshot, c *rollCheck, hosts, learned map[string]model.ResourceID, driver model.ResourceID, hasDriver bool) []BrokenHop {
	hops := c.hops
	var callees []string // services the rollout's unanswered calls name
	for _, cc := range c.unanswered {
		res, known := hosts[cc.host]
		lres, learnt := learned[cc.host]
		to := ""
		switch {
		case known && res != cc.res:
			to = snap.ServiceName(res)
		case known:
			continue
		case learnt:
			to = snap.ServiceName(lres)
		case cc.scoped:
			// A rollout-scoped Gym route on a host with no SERVER spans
			// at all: name the process that started new traces instead.
			to = cc.host
			if len(c.newTrace) == 1 {
				to = snap.ServiceName(c.newTrace[0])
			}
		default:
			continue // not a Gym server this capture has seen: an external call
		}
		hops = addCount(hops, newHop(snap.ServiceName(cc.res), to, cc.route(), CauseNoServerChild, to))
		callees = append(callees, to)
	}
	if hasDriver && c.entryTop && c.entry.res != driver {
		from, to := snap.ServiceName(driver), snap.ServiceName(c.entry.res)
		h := newHop(from, to, c.entry.name, CauseServerRoot, from)
		if c.entryKnd != model.KindServer {
			h = newHop(from, to, c.entry.name, CauseNewTrace, c.entry.name, to)
		}
		hops = addCount(hops, h)
	}
	for _, sr := range c.strays {
		svc := snap.ServiceName(sr.res)
		if slices.Contains(callees, svc) {
			continue
		}
		hops = addCount(hops, newHop(unknownService, svc, sr.name, CauseNewTrace, sr.name, svc))
	}
	return hops
}

// timedCheck is a rollout's check with the times learnHosts reads: each
// unanswered call's start and end, then each stray's start.
type timedCheck struct {
	c     *rollCheck
	times []int64
}

// learnHosts names the process behind hosts no SERVER span reveals (a
// process with server off): an unanswered call to such a host, during which
// a stray root of the same rollout starts, was answered by the stray's
// process (the first to start, when several do). Learned over the whole snapshot, the name also serves rollouts
// where that process emitted nothing. A host seen answered by two processes
// stays unnamed. Only rollouts with calls and strays have a say: checks
// holds them in the snapshot's order.
func learnHosts(checks []timedCheck, hosts map[string]model.ResourceID) map[string]model.ResourceID {
	learned := map[string]model.ResourceID{}
	ambiguous := map[string]bool{}
	for _, tc := range checks {
		c, calls, strays := tc.c, tc.times[:2*len(tc.c.unanswered)], tc.times[2*len(tc.c.unanswered):]
		for i, cc := range c.unanswered {
			if _, ok := hosts[cc.host]; ok || cc.host == "" || ambiguous[cc.host] {
				continue
			}
			// The callee's first span starts first: a later one inside the
			// call may belong to a process the callee called in turn.
			first := -1
			for j, start := range strays {
				if start >= calls[2*i] && start <= calls[2*i+1] && (first < 0 || start < strays[first]) {
					first = j
				}
			}
			if first < 0 {
				continue
			}
			res := c.strays[first].res
			if prev, ok := learned[cc.host]; ok && prev != res {
				delete(learned, cc.host)
				ambiguous[cc.host] = true
				continue
			}
			learned[cc.host] = res
		}
	}
	return learned
}

// pieces counts the connected pieces of a rollout as captured: fragments
// under the same gym.job span are one piece (a retried /run call hangs under
// the job twice), any other fragment is a piece of its own.
func pieces(r *model.Rollout) int {
	n := 0
	var jobs []model.SpanID
	for _, f := range r.Fragments {
		if f.Job().IsZero() {
			n++
			continue
		}
		seen := false
		for _, j := range jobs {
			seen = seen || j == f.Job()
		}
		if !seen {
			jobs = append(jobs, f.Job())
		}
	}
	return n + len(jobs)
}

// rolloutProcess returns the process of the rollout's gym.rollout span.
func (e *Engine) rolloutProcess(r *model.Rollout, rs *rollState) (model.ResourceID, bool) {
	if rs.rollClass == nil {
		e.classifyRoll(r, rs, &rollClass{})
	}
	for i, f := range r.Fragments {
		for j, g := range rs.frags[i].groups {
			if g == groups.Rollout {
				return f.Spans[j].Resource, true
			}
		}
	}
	return 0, false
}

func serviceSpans(snap *model.Snapshot, id model.ResourceID) int64 {
	if int(id) < len(snap.Services) {
		return snap.Services[id]
	}
	return 0
}

func addCount(hops []BrokenHop, h BrokenHop) []BrokenHop {
	for i := range hops {
		if sameHop(hops[i], h) {
			out := append([]BrokenHop(nil), hops...)
			out[i].Count += h.Count
			return out
		}
	}
	return append(hops[:len(hops):len(hops)], h)
}

// awaiting counts the spans of unattributed fragments whose top waits for a
// parent that may still arrive: the grace window has not passed.
func awaiting(st *rollouts.Structure, now time.Time, grace time.Duration) int {
	// The grace runs from when spans last arrived, as the run's end does:
	// a store publishing metric points alone brings no parent.
	last := st.Snap.SpansAt
	if last.IsZero() {
		last = st.Snap.Taken
	}
	if grace <= 0 || now.Sub(last) >= grace {
		return 0
	}
	n := 0
	for _, f := range st.Unattributed {
		if f.Orphan() {
			n += len(f.Spans)
		}
	}
	return n
}
