package rollouts

import (
	"unsafe"

	"github.com/nemo-gym/gymtrace/model"
)

// build is one structure being found: the store's units, whose up fields
// are a union-find of the rollouts they join, the dangling CLIENT spans a
// unit may hang under, and the units that need one. buildStructure runs its
// phases in order, each in the file named for it:
//
//	build_hosts.go   hosts each process serves; units anchored by id or trace
//	build_needs.go   units that need a caller, the calls, each need's candidates
//	build_match.go   one to one: leaks, server-off rollouts, closest first
//	build_guess.go   several candidates of one rollout; by route; by window
//
// and assemble (assemble.go) turns the joined units into rollouts.
type build struct {
	e  *Finder
	st *Structure
	us units
	nc int // dangling CLIENT spans of all units, kept or not
	// clients are the units' dangling CLIENT spans by start time, listed
	// only where some unit needs one (listClients).
	clients []cref
	maxDur  int64 // the longest of clients
	needs   []need
}

func (e *Finder) buildStructure(snap *model.Snapshot) *Structure {
	st := &Structure{src: snap, Suspect: map[string][]Suspect{}}
	e.cutAll(snap)
	// The build and the phases' own tables are made here, where the
	// compiler keeps them on the stack when small: a live view builds a
	// structure for every snapshot.
	b := build{e: e, st: st}
	b.listUnits(snap)
	hosts := hostIndex{hostOf: map[string]model.ResourceID{}, resHost: map[model.ResourceID]string{}}
	b.serveHosts(&hosts)
	an := anchors{byID: map[string]int{}, traceRoll: map[model.TraceID]int{}}
	b.anchor(&an)
	needing := make([]bool, len(b.us))
	nneed := b.markNeeds(&an, needing)
	if nneed > 0 {
		b.listClients()
	}
	b.findCandidates(needing, nneed, &hosts)
	b.narrowByRoute()
	b.matchLeaks()
	b.matchRuns()
	b.matchClosest()
	b.sameRollout()
	hasRollout := make([]bool, len(b.us))
	rollUnits := b.rolloutRoots(hasRollout)
	b.suspectByRoute()
	b.lastResort(hasRollout, b.windows(make([]window, 0, rollUnits)))
	// Only the units go on to assemble: the calls and needs are let go.
	return e.assemble(snap, st, b.us)
}

// listUnits lists the snapshot's units, the jobs' first, each a set of its
// own. The units and the dangling calls are counted first so that each
// list is made at its final size: they are rebuilt on every snapshot.
func (b *build) listUnits(snap *model.Snapshot) {
	e := b.e
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
	us := make(units, 0, nu)
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
	b.us, b.nc = us, nc
}

// units are a structure's units; their up fields are a union-find, each
// set a rollout (or run-level traffic, or an orphan) in the making.
type units []gunit

// find returns the root of unit i's set, halving the path to it.
func (us units) find(i int) int {
	for int(us[i].up) != i {
		us[i].up = us[us[i].up].up
		i = int(us[i].up)
	}
	return i
}

// union puts child's set under parent's root: parent's root stays a root.
func (us units) union(child, parent int) {
	a, b := us.find(child), us.find(parent)
	if a != b {
		us[a].up = int32(b)
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
