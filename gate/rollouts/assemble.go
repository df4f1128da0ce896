package rollouts

import (
	"encoding/binary"
	"hash/maphash"
	"slices"
	"strings"

	"github.com/nemo-gym/gymtrace/model"
)

// assemble turns the attributed units into rollouts, run-level pieces and
// unattributed fragments, and the snapshot seen through them. Its steps
// are methods of an assembly, in order.
func (e *Finder) assemble(snap *model.Snapshot, st *Structure, us units) *Structure {
	// The groups' tables and the grafts are made here and passed to the
	// steps apart from the assembly, where the compiler keeps them on the
	// stack when small: a live view assembles a structure for every
	// snapshot, and whatever the assembly holds goes to the heap with the
	// rollouts it holds.
	n, groups := len(us), countRoots(us, us.find)
	gs := unitGroups{n: groups, gi: make([]int32, n), off: make([]int32, groups+1), mem: make([]int32, n), rollAt: make([]int32, groups)}
	gs.fill(us.find)
	grafts := map[int][]int{}
	listGrafts(us, grafts)
	a := assembly{e: e, snap: snap, st: st, us: us}
	a.markCarried()
	nroll := a.reserve(&gs)
	a.place(&gs, grafts, make([]*model.Rollout, 0, nroll))
	e.pruneRollCache()
	a.suspects(&gs)
	a.leaks(&gs)
	st.Rollouts = a.rolls
	st.Snap = snap.Derive(a.rolls)
	return st
}

// assembly is one structure's units being turned into its rollouts.
type assembly struct {
	e    *Finder
	snap *model.Snapshot
	st   *Structure
	us   units
	// rolls are the rollouts made, in order of their groups.
	rolls []*model.Rollout
	// unitAt lists, for each fragment holding a leak, its units in order.
	unitAt map[*model.Fragment][]int
}

// unitGroups are the units of each union-find root (a group), in unit
// order, and the groups in order of their first unit: slices, not maps,
// since a live view rebuilds them for every snapshot, and few of them: a
// check of a large store holds them beside it, 4 bytes a unit each.
type unitGroups struct {
	n   int     // groups
	gi  []int32 // root -> 1 + its group's index; 0: not a root
	off []int32 // group g's members: mem[off[g]:off[g+1]]
	mem []int32 // unit indexes, grouped by root
	// rollAt is group -> 1 + its rollout's index in the assembly's
	// rolls; 0: none.
	rollAt []int32
}

// countRoots returns how many sets the units' union-find holds.
func countRoots(us []gunit, find func(int) int) int {
	groups := 0
	for i := range us {
		if find(i) == i {
			groups++
		}
	}
	return groups
}

// fill lists the units of each group, the groups in order of their first
// unit, into tables made to size (len(gi) is the number of units).
func (gs *unitGroups) fill(find func(int) int) {
	gi, off, mem := gs.gi, gs.off, gs.mem
	ng := int32(0)
	for i := range gi {
		r := find(i)
		if gi[r] == 0 {
			ng++
			gi[r] = ng
		}
		off[gi[r]]++
	}
	for g := range gs.n {
		off[g+1] += off[g]
	}
	// rollAt is not used before place: meanwhile it holds the groups'
	// next free slots in mem, and is left zero.
	pos := gs.rollAt
	copy(pos, off[:gs.n])
	for i := range gi {
		g := gi[find(i)] - 1
		mem[pos[g]] = int32(i)
		pos[g]++
	}
	clear(pos)
}

// members are group g's units.
func (gs *unitGroups) members(g int) []int32 { return gs.mem[gs.off[g]:gs.off[g+1]] }

// isRoll reports whether a group holds a rollout's unit.
func (a *assembly) isRoll(members []int32) bool {
	return slices.ContainsFunc(members, func(i int32) bool { return a.us[i].info.class == classRollout })
}

// inCaller reports whether u is a leak grafted back under its caller's
// CLIENT span: it goes inside that unit's fragment, not in one of its own.
func inCaller(u *gunit) bool { return u.graft >= 0 && u.info.leak() && u.how() == attrClient }

// listGrafts lists in grafts[u] the units hung under u's CLIENT spans:
// leaked request spans go back under the call that made them.
func listGrafts(us []gunit, grafts map[int][]int) {
	for i := range us {
		if u := &us[i]; inCaller(u) {
			grafts[int(u.graft)] = append(grafts[int(u.graft)], i)
		}
	}
}

// markCarried marks in e.carried each leak whose carried context came from
// another rollout (or from run-level traffic): it sits in that one's trace
// in the capture, grafted back or attributed otherwise, so without a job
// span over both it splits its own rollout under any spec, and adds no
// trace. Only the fragments holding a leak are looked up by fragment.
func (a *assembly) markCarried() {
	us, e := a.us, a.e
	for i := range us {
		if us[i].info.leak() {
			if a.unitAt == nil {
				a.unitAt = map[*model.Fragment][]int{}
			}
			a.unitAt[us[i].f] = nil
		}
	}
	if a.unitAt != nil {
		for i := range us {
			if l, ok := a.unitAt[us[i].f]; ok {
				a.unitAt[us[i].f] = append(l, i)
			}
		}
	}
	n := len(us)
	if cap(e.carried) < n {
		e.carried = make([]bool, n)
	}
	e.carried = e.carried[:n]
	clear(e.carried)
	for i := range us {
		u := &us[i]
		if !u.info.leak() || u.info.extra().hostUnit < 0 {
			continue
		}
		for k, j := range a.unitAt[u.f] { // every unit of the fragment, in order
			if int32(k) == u.info.extra().hostUnit && us.find(j) != us.find(i) {
				e.carried[i] = true
			}
		}
	}
}

// reserve counts the rollouts, run-level pieces and unattributed
// fragments, grows the structure's lists to hold them and returns the
// rollouts': the lists are kept until the next structure, and most groups
// of a capture of many small traces may be no rollout's.
func (a *assembly) reserve(gs *unitGroups) int {
	nroll, nrun, nun := 0, 0, 0
	for g := range gs.n {
		members := gs.members(g)
		if a.isRoll(members) {
			nroll++
			continue
		}
		for _, i := range members {
			switch u := &a.us[i]; {
			case inCaller(u):
			case u.info.class == classRun:
				nrun++
			default:
				nun++
			}
		}
	}
	a.st.Run = slices.Grow(a.st.Run, nrun)
	a.st.Unattributed = slices.Grow(a.st.Unattributed, nun)
	return nroll
}

// place makes each group a rollout, appended to rolls and cached, or its
// units run-level pieces and unattributed fragments, and counts the
// traces of each kind.
func (a *assembly) place(gs *unitGroups, grafts map[int][]int, rolls []*model.Rollout) {
	e, st, us := a.e, a.st, a.us
	runTraces := map[model.TraceID]bool{}
	rollTraces := map[model.TraceID]bool{}
	for g := range gs.n {
		members := gs.members(g)
		if !a.isRoll(members) {
			for _, i := range members {
				u := &us[i]
				if inCaller(u) {
					continue // inside its caller's fragment
				}
				f := e.unitFragment(a.snap, us, int(i), grafts)
				if u.info.class == classRun {
					st.Run = append(st.Run, RunPiece{Kind: u.info.run, Frag: f})
					st.RunSpans += len(f.Spans)
					runTraces[f.TraceID] = true
				} else {
					st.Unattributed = append(st.Unattributed, f)
				}
			}
			continue
		}
		c := e.rollout(a.snap, us, members, grafts)
		c.gen = uint32(e.gen)
		e.rollCache[c.r.ID] = c
		rolls = append(rolls, c.r)
		gs.rollAt[g] = int32(len(rolls))
		for _, i := range members {
			rollTraces[us[i].f.TraceID] = true
			if us[i].how() != attrNone && !us[i].info.leak() && us[i].info.class == classOrphan {
				st.Attributed++
			}
		}
	}
	a.rolls = rolls
	st.RunTraces = len(runTraces)
	st.RolloutTraces = len(rollTraces)
}

// pruneRollCache drops the rollouts this structure did not use from the
// cache, kept in place: a second map each check was a map of every
// rollout more.
func (e *Finder) pruneRollCache() {
	for id, c := range e.rollCache {
		if c.gen != uint32(e.gen) {
			delete(e.rollCache, id)
		}
	}
}

// rollOf returns the id of the rollout of a union-find root, "" for none.
func (a *assembly) rollOf(gs *unitGroups, root int) string {
	if k := gs.rollAt[gs.gi[root]-1]; k > 0 {
		return a.rolls[k-1].ID
	}
	return ""
}

// suspects lists, under each rollout's id, the suspect units attributed
// to it.
func (a *assembly) suspects(gs *unitGroups) {
	for _, p := range a.st.suspectUnits {
		id := a.rollOf(gs, a.us.find(p[0]))
		if id == "" {
			continue
		}
		u := &a.us[p[1]]
		top := &u.f.Spans[u.info.root()]
		a.st.Suspect[id] = append(a.st.Suspect[id], Suspect{Service: a.snap.ServiceName(top.Resource), Span: DisplayName(a.e.in, top)})
	}
}

// leaks lists the leaks, with the rollout they belong to and the one they
// were put under.
func (a *assembly) leaks(gs *unitGroups) {
	for i := range a.us {
		u := &a.us[i]
		if !u.info.leak() {
			continue
		}
		top := &u.f.Spans[u.info.root()]
		l := Leak{Service: a.snap.ServiceName(top.Resource), Name: DisplayName(a.e.in, top), Rollout: a.rollOf(gs, a.us.find(i)), Span: top.SpanID}
		if hu := u.info.extra().hostUnit; hu >= 0 {
			for k, j := range a.unitAt[u.f] {
				if int32(k) == hu {
					l.Host = a.rollOf(gs, a.us.find(j))
				}
			}
		}
		a.st.Leaks = append(a.st.Leaks, l)
	}
}

// cachedRoll is a rollout built for an earlier structure, with what it was
// built from and the job spans its building told of.
type cachedRoll struct {
	r   *model.Rollout
	key uint64 // hash of the units it was built from (rolloutKey)
	// jobs is nil for most: few rollouts tell of job spans, and a list
	// inline would take the record from 32 bytes to 48, one a rollout.
	jobs *[]jobCall
	gen  uint32 // low bits of the last structure's gen that used it
}

// jobCall is one call of the JobSpans interface, replayed when a rollout
// is reused.
type jobCall struct {
	virtual bool
	id      model.SpanID
	res     model.ResourceID
	f       *model.Fragment
	span    int32
}

// rollout returns the rollout of members: the one built for an earlier
// structure when it was built from the same units (same fragment versions,
// cut, grafted and carried the same way), else a new one. A rollout is a
// function of its units, so a live view pays only for those that changed.
func (e *Finder) rollout(snap *model.Snapshot, us []gunit, members []int32, grafts map[int][]int) *cachedRoll {
	named, synth, key := e.rolloutKey(us, members)
	var old *cachedRoll
	if named != "" {
		old = e.rollCache[named]
	} else {
		old = e.rollCache[string(synth[:])] // looked up without making the string
	}
	if old != nil && old.key == key {
		if old.jobs != nil {
			for _, j := range *old.jobs {
				e.callJobs(j)
			}
		}
		return old
	}
	var calls []jobCall
	e.rec = &calls
	r := e.buildRollout(snap, us, members, grafts)
	e.rec = nil
	if old, ok := e.rollCache[r.ID]; ok && old.r.Version == r.Version {
		r = old.r
	}
	c := &cachedRoll{r: r, key: key}
	if len(calls) > 0 {
		c.jobs = &calls
	}
	return c
}

// rolloutKey returns the id buildRollout gives members, the rollout id its
// spans name or else the text of its synthetic id, and a hash of every
// input it reads but the stored rollouts' arrival times (which a reused
// rollout of the same version never took either). The synthetic id is
// text in an array: a live view looks up every rollout on every snapshot,
// and a string each would be garbage.
func (e *Finder) rolloutKey(us []gunit, members []int32) (string, [syntheticIDLen]byte, uint64) {
	var h maphash.Hash
	h.SetSeed(seed)
	bestRank := int8(0)
	idFrom := ""
	best := -1 // the unit whose span names a synthetic id, read only if needed
	var b [8 + 4 + 1 + 8 + 4 + 4 + 8 + 8]byte
	for _, i := range members {
		u := &us[i]
		if idFrom == "" && u.info.extra().rid != "" {
			idFrom = u.info.extra().rid
		}
		if u.info.class == classRollout && u.info.idRank > bestRank {
			bestRank = u.info.idRank
			best = int(i)
		}
		binary.LittleEndian.PutUint64(b[0:], u.f.Version)
		binary.LittleEndian.PutUint32(b[8:], uint32(e.unitIndex(u)))
		b[12] = byte(u.how())
		if e.carried[i] {
			b[12] |= 0x80
		}
		gv, gu := uint64(0), int32(-1)
		if u.graft >= 0 {
			gv, gu = us[u.graft].f.Version, e.unitIndex(&us[u.graft])
		}
		binary.LittleEndian.PutUint64(b[13:], gv)
		binary.LittleEndian.PutUint32(b[21:], uint32(gu))
		binary.LittleEndian.PutUint32(b[25:], uint32(u.at))
		b[29] = 0 // the job's id is TopParent's, hashed next
		if u.f.UnderJob {
			b[29] = 1
		}
		copy(b[37:], u.f.TopParent[:])
		h.Write(b[:])
	}
	var synth [syntheticIDLen]byte
	if idFrom != "" {
		return idFrom, synth, h.Sum64()
	}
	var idTrace model.TraceID
	var idSpan model.SpanID
	if best >= 0 {
		u := &us[best]
		idTrace, idSpan = u.f.TraceID, u.f.Spans[u.info.idSpan].SpanID
	}
	putSyntheticID(&synth, idTrace, idSpan)
	return "", synth, h.Sum64()
}

// callJobs passes one call on to Jobs, recording it while a rollout is
// built.
func (e *Finder) callJobs(j jobCall) {
	if e.rec != nil {
		*e.rec = append(*e.rec, j)
	}
	if e.Jobs == nil {
		return
	}
	if j.virtual {
		e.Jobs.VirtualJob(j.id, j.res)
	} else {
		e.Jobs.CallerJob(j.id, j.f, j.span)
	}
}

// buildRollout makes one rollout of its units.
func (e *Finder) buildRollout(snap *model.Snapshot, us []gunit, members []int32, grafts map[int][]int) *model.Rollout {
	// Most rollouts are one fragment: its array comes in the Rollout's own
	// 112-byte allocation.
	x := &struct {
		r   model.Rollout
		one [1]*model.Fragment
	}{}
	r := &x.r
	r.Fragments = x.one[:0]
	var h maphash.Hash
	h.SetSeed(seed)
	bestRank := int8(0)
	idFrom := ""
	var idTrace model.TraceID
	var idSpan model.SpanID
	traces := map[model.TraceID]bool{}
	first := true
	for _, i := range members {
		u := &us[i]
		traces[u.f.TraceID] = true
		if idFrom == "" && u.info.extra().rid != "" {
			idFrom = u.info.extra().rid
		}
		if u.info.class == classRollout && u.info.idRank > bestRank {
			bestRank = u.info.idRank
			idTrace, idSpan = u.f.TraceID, u.f.Spans[u.info.idSpan].SpanID
		}
		if u.roll() >= 0 {
			// The fragment's, not its stored rollout's: a trace's waiting
			// fragments are stored as one, and are of many rollouts.
			fs, ls := snap.Rollouts[u.roll()].SeenOf(u.f)
			if first || fs < r.FirstSeen {
				r.FirstSeen = fs
			}
			if first || ls > r.LastSeen {
				r.LastSeen = ls
			}
		}
		r.Errors += int(u.info.errors())
		if first || u.info.start < r.Start {
			r.Start = u.info.start
		}
		if first || u.info.end > r.End {
			r.End = u.info.end
		}
		first = false
		if u.graft >= 0 && u.info.leak() && u.how() == attrClient {
			continue // inside its caller's fragment
		}
		f := e.unitFragment(snap, us, int(i), grafts)
		r.Fragments = append(r.Fragments, f)
		r.Spans += len(f.Spans)
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], f.Version)
		h.Write(b[:])
	}
	if idFrom != "" {
		r.ID = idFrom
	} else {
		r.ID, r.Synthetic = syntheticID(idTrace, idSpan), true
	}
	r.Traces = int32(len(traces))
	r.Version = h.Sum64()
	return r
}

// unitFragment returns unit i as a fragment: the stored fragment itself when
// the unit is all of it, else a copy of its spans with the grafted units
// appended under their callers.
func (e *Finder) unitFragment(snap *model.Snapshot, us []gunit, i int, grafts map[int][]int) *model.Fragment {
	u := &us[i]
	f := u.f
	if u.info.extra().idx == nil && len(grafts[i]) == 0 && !e.carried[i] {
		return e.withVirtualJob(snap, f)
	}
	var h maphash.Hash
	h.SetSeed(seed)
	var spans []model.Span
	var add func(j int, parent int32)
	add = func(j int, parent int32) {
		g := &us[j]
		carried := e.carried[j]
		var b [13]byte
		binary.LittleEndian.PutUint64(b[:], g.f.Version)
		binary.LittleEndian.PutUint32(b[8:], uint32(g.info.root()))
		if carried {
			b[12] = 1
		}
		h.Write(b[:])
		pos := map[int32]int32{}
		each := func(k int32) {
			sp := g.f.Spans[k]
			var x *model.Extra // the copy's own, made on the first change
			extra := func() *model.Extra {
				if x == nil {
					x = &model.Extra{}
					if sp.Extra != nil {
						*x = *sp.Extra
					}
					sp.Extra = x
				}
				return x
			}
			if g.f.TraceID != f.TraceID {
				// A span of another trace keeps its own in the copy.
				extra().Trace = g.f.TraceID
			}
			if k == g.info.root() {
				sp.Parent = parent
				// A grafted top keeps the parent it was captured under.
				if up := g.f.ParentID(int(k)); parent >= 0 && up != spans[parent].SpanID {
					extra().Parent = up
				}
				if carried {
					sp.SetFlags(model.FlagCarried)
				}
			} else {
				sp.Parent = pos[sp.Parent]
			}
			pos[k] = int32(len(spans))
			spans = append(spans, sp)
		}
		if g.info.extra().idx == nil {
			for k := range g.f.Spans {
				each(int32(k))
			}
		} else {
			for _, k := range g.info.extra().spanIdx() {
				each(k)
			}
		}
		for _, c := range grafts[j] {
			if at, ok := pos[us[c].at]; ok {
				add(c, at)
			}
		}
	}
	add(i, -1)
	d := &model.Fragment{TraceID: f.TraceID, Spans: spans, TopParent: f.ParentID(int(u.info.root()))}
	if u.info.root() == 0 {
		d.UnderJob = f.UnderJob
	} else if u.info.cut() {
		// The caller's span above the rollout plays gym.job's part: kept,
		// it holds every rollout it called in its one trace.
		d.UnderJob = true
		e.callJobs(jobCall{id: d.TopParent, f: f, span: f.Spans[u.info.root()].Parent})
	} else {
		// Cut below the stored fragment's top (a leak no call was matched
		// to): its parent is in that fragment, so it has arrived, and the
		// rollout waits for nothing here.
		d.Attached = true
	}
	d.Version = h.Sum64() | 1<<63
	return e.withVirtualJob(snap, d)
}

// withVirtualJob treats the missing parent of a driver's span at the top of a
// fragment as the run's gym.job, still open: the job span is exported when
// the run ends, so until then every rollout of a live capture waits for it.
func (e *Finder) withVirtualJob(snap *model.Snapshot, f *model.Fragment) *model.Fragment {
	if f.UnderJob || f.Attached || f.TopParent.IsZero() || !e.isDriver(snap, f.Spans[0].Resource) {
		return f
	}
	e.callJobs(jobCall{virtual: true, id: f.TopParent, res: f.Spans[0].Resource})
	d := *f
	d.UnderJob = true
	d.Version = f.Version ^ 0x5bd1e9955bd1e995
	return &d
}

// isDriver reports whether a process is Gym's driver (rollout collection).
func (e *Finder) isDriver(snap *model.Snapshot, id model.ResourceID) bool {
	if v, ok := e.driver[id]; ok {
		return v
	}
	res := snap.Resource(id)
	v := false
	if t, ok := res.Attrs.Get(e.in, "nemo.gym.server.type"); ok && t.String() == "orchestrator" {
		v = true
	}
	svc := e.in.Str(res.Service)
	for _, s := range []string{"/orchestrator", "/supervisor", "/rollout_collection"} {
		if strings.HasSuffix(svc, s) {
			v = true
		}
	}
	e.driver[id] = v
	return v
}

// ForOthers calls fn with each run-level piece (but gym.job, which reports
// count apart) and unattributed fragment as a one-fragment rollout, built
// once per fragment version so the engine's caches hold.
func (st *Structure) ForOthers(fn func(r *model.Rollout)) {
	if st.others == nil {
		for _, p := range st.Run {
			if p.Kind != RunJob {
				st.others = append(st.others, otherRollout(p.Frag))
			}
		}
		for _, f := range st.Unattributed {
			st.others = append(st.others, otherRollout(f))
		}
	}
	for _, r := range st.others {
		fn(r)
	}
}

func otherRollout(f *model.Fragment) *model.Rollout {
	sp := &f.Spans[0]
	r := &model.Rollout{ID: "\x00" + syntheticID(f.TraceID, sp.SpanID), Version: f.Version, Fragments: []*model.Fragment{f}, Spans: len(f.Spans), Traces: 1, Start: sp.Start, End: sp.End}
	for i := range f.Spans {
		r.Start, r.End = min(r.Start, f.Spans[i].Start), max(r.End, f.Spans[i].End)
	}
	return r
}
